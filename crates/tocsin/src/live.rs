//! The live fan-out of one node: a broadcast channel per workspace that has open streams,
//! shared by every open `GET /stream` of that workspace.
//!
//! What feeds it is `domain::stream::run` (the durable logs: monitor events, alerts,
//! incidents, read from the database, so changes made on any node arrive; the feed's monitor
//! notices; a keep-alive comment every [`KEEP_ALIVE`] for every stream at once) and heartbeats:
//! check results committed by this node's writer, and on PostgreSQL those that other nodes'
//! writers relay ([`relay`]), coalesced here to at most one per monitor per second, the latest
//! winning.
//!
//! The work per frame does not grow with the streams: each frame is encoded once into the
//! server-sent-event bytes that every subscriber writes as they are ([`Frame::wire`]), the
//! heartbeats due at one tick go out as one frame per workspace (a stream wakes and writes
//! once per tick, not once per monitor), a frame reaches only its workspace's streams, and
//! the keep-alive is one tick for the node rather than a timer per stream.
//!
//! Memory stays bounded whatever the clients do: each workspace's broadcast is a ring of
//! `buffer` frames shared by its subscribers, and a subscriber that falls further behind than
//! that (a client not reading) gets `Lagged` and is dropped; its client reconnects with
//! `Last-Event-ID`. The number of open streams is capped per workspace and per client address.
//!
//! Publishing is cheap when nobody listens: every entry point first reads one atomic counter.
//!
//! Every frame carries a cursor (`id:`): a monitor event carries its own event id, any other
//! frame the id of the last monitor event the hub had published before it, so whatever frame
//! a client saw last, resuming from its id replays exactly the monitor events it missed.

pub mod relay;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

use crate::config::StreamLimits;

/// The shortest time between two heartbeat frames of one monitor.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// How often every open stream gets a `: keep-alive` comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The cursor before any monitor event: resuming from it replays the workspace's log.
pub const START: &str = "0";
/// The `event` of the keep-alive comment (it has no name on the wire).
pub const KEEP_ALIVE_EVENT: &str = "keep-alive";

/// One or more server-sent events, encoded once and shared by every subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// `monitor`, `heartbeat`, `alert`, `incident`, `monitor.changed`, [`KEEP_ALIVE_EVENT`].
    pub event: &'static str,
    /// The cursor (see the module documentation).
    pub id: String,
    /// For a `monitor` frame: the monitor event's id (resume deduplication).
    pub event_id: Option<String>,
    /// What goes on the wire: `event:`, `id:` and `data:` lines and the blank line, once per
    /// event (a heartbeat frame holds every heartbeat of its tick).
    pub wire: Bytes,
}

impl Frame {
    /// One event.
    pub fn event(event: &'static str, id: &str, data: &str, event_id: Option<String>) -> Frame {
        let mut wire = BytesMut::with_capacity(data.len() + event.len() + id.len() + 24);
        encode(&mut wire, Some(event), id, Some(data));
        Frame {
            event,
            id: id.to_string(),
            event_id,
            wire: wire.freeze(),
        }
    }

    /// The cursor alone (an `id:` line and no data): a client's resume point.
    pub fn cursor(id: &str) -> Frame {
        let mut wire = BytesMut::with_capacity(id.len() + 6);
        encode(&mut wire, None, id, None);
        Frame {
            event: "",
            id: id.to_string(),
            event_id: None,
            wire: wire.freeze(),
        }
    }

    fn keep_alive() -> Frame {
        Frame {
            event: KEEP_ALIVE_EVENT,
            id: String::new(),
            event_id: None,
            wire: Bytes::from_static(b": keep-alive\n\n"),
        }
    }
}

/// Appends one server-sent event. `id` never holds a line break (event ids and [`START`]); a
/// line break in `data` starts another `data:` line, as the format requires.
fn encode(out: &mut BytesMut, event: Option<&str>, id: &str, data: Option<&str>) {
    if let Some(e) = event {
        out.put_slice(b"event: ");
        out.put_slice(e.as_bytes());
        out.put_u8(b'\n');
    }
    out.put_slice(b"id: ");
    out.put_slice(id.as_bytes());
    out.put_u8(b'\n');
    if let Some(d) = data {
        for line in d.split(['\n', '\r']) {
            out.put_slice(b"data: ");
            out.put_slice(line.as_bytes());
            out.put_u8(b'\n');
        }
    }
    out.put_u8(b'\n');
}

/// A check result as a writer committed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Beat {
    pub monitor_id: String,
    pub status: tocsin_core::Status,
    pub latency_ms: f64,
    pub region: String,
    pub at_ms: i64,
}

/// Why a stream was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    TooManyForWorkspace,
    TooManyForAddress,
}

/// The node's fan-out. Cheap to clone.
#[derive(Clone)]
pub struct Hub(Arc<Inner>);

struct Inner {
    limits: StreamLimits,
    /// Open streams; zero means every publisher returns at once.
    open: AtomicUsize,
    /// Wakes the feeding worker when the first stream opens.
    first: Notify,
    /// The id of the newest monitor event published (the cursor of other frames).
    cursor: Mutex<String>,
    streams: Mutex<Streams>,
    beats: Mutex<Coalesce>,
    relay: relay::Relay,
    closing: CancellationToken,
}

#[derive(Default)]
struct Streams {
    workspaces: HashMap<String, Channel>,
    addresses: HashMap<String, usize>,
    /// Moves whenever a workspace gains its first stream.
    generation: u64,
}

/// One workspace's broadcast and how many streams share it.
struct Channel {
    open: usize,
    tx: broadcast::Sender<Arc<Frame>>,
}

/// Check results waiting to go out, at most one per monitor per [`HEARTBEAT_EVERY`].
#[derive(Default)]
pub(crate) struct Coalesce {
    /// The latest result per monitor not yet sent.
    pending: HashMap<String, Beat>,
    /// When each monitor's last result went out.
    sent: HashMap<String, Instant>,
}

impl Coalesce {
    pub(crate) fn insert(&mut self, beat: Beat) {
        self.pending.insert(beat.monitor_id.clone(), beat);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The pending results whose monitor has had none out for [`HEARTBEAT_EVERY`]; the others
    /// stay pending (and may be replaced by newer ones).
    pub(crate) fn due(&mut self, now: Instant) -> Vec<Beat> {
        let Coalesce { pending, sent } = self;
        let mut due = Vec::new();
        pending.retain(|monitor, beat| {
            let ready = sent
                .get(monitor)
                .is_none_or(|t| now.duration_since(*t) >= HEARTBEAT_EVERY);
            if ready {
                sent.insert(monitor.clone(), now);
                due.push(beat.clone());
            }
            !ready
        });
        // Forget monitors quiet for a while, so the map follows the active ones.
        if sent.len() > 4 * due.len() + 1024 {
            sent.retain(|_, t| now.duration_since(*t) < HEARTBEAT_EVERY * 10);
        }
        due
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.sent.clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new(StreamLimits::default())
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("open", &self.open_streams())
            .finish()
    }
}

impl Hub {
    pub fn new(limits: StreamLimits) -> Hub {
        Hub(Arc::new(Inner {
            limits,
            open: AtomicUsize::new(0),
            first: Notify::new(),
            cursor: Mutex::new(START.to_string()),
            streams: Mutex::default(),
            beats: Mutex::default(),
            relay: relay::Relay::new(),
            closing: CancellationToken::new(),
        }))
    }

    /// Whether any stream is open on this node (publishers do nothing otherwise).
    pub fn active(&self) -> bool {
        self.0.open.load(Ordering::Acquire) > 0
    }

    pub fn open_streams(&self) -> usize {
        self.0.open.load(Ordering::Acquire)
    }

    /// Whether the writer should hand committed results over: a stream is open here, or
    /// another node streams (see [`relay`]).
    pub fn wants_beats(&self) -> bool {
        self.active() || self.0.relay.wanted()
    }

    /// What this node relays to the others.
    pub fn relay(&self) -> &relay::Relay {
        &self.0.relay
    }

    /// Resolves once a stream is open (at once if one is).
    pub async fn wait_active(&self) {
        loop {
            let notified = self.0.first.notified();
            if self.active() {
                return;
            }
            notified.await;
        }
    }

    /// Opens a subscription for `workspace_id` from `address`, within the caps. Frames
    /// published from now on reach it.
    pub fn subscribe(
        &self,
        workspace_id: &str,
        address: Option<&str>,
    ) -> Result<Subscription, Refused> {
        let rx = {
            let mut streams = lock(&self.0.streams);
            let in_ws = streams.workspaces.get(workspace_id).map_or(0, |c| c.open);
            if in_ws >= self.0.limits.per_workspace {
                return Err(Refused::TooManyForWorkspace);
            }
            if let Some(a) = address.filter(|_| self.0.limits.per_ip > 0) {
                let from = streams.addresses.get(a).copied().unwrap_or(0);
                if from >= self.0.limits.per_ip {
                    return Err(Refused::TooManyForAddress);
                }
                *streams.addresses.entry(a.to_string()).or_default() += 1;
            }
            if !streams.workspaces.contains_key(workspace_id) {
                streams.generation += 1;
            }
            let buffer = self.0.limits.buffer.max(1);
            let channel = streams
                .workspaces
                .entry(workspace_id.to_string())
                .or_insert_with(|| Channel {
                    open: 0,
                    tx: broadcast::channel(buffer).0,
                });
            channel.open += 1;
            channel.tx.subscribe()
        };
        if self.0.open.fetch_add(1, Ordering::AcqRel) == 0 {
            self.0.first.notify_waiters();
        }
        Ok(Subscription {
            hub: self.clone(),
            rx,
            workspace_id: workspace_id.to_string(),
            address: address
                .filter(|_| self.0.limits.per_ip > 0)
                .map(str::to_string),
        })
    }

    /// Whether a stream of `workspace_id` is open here (a frame for it would reach someone).
    pub fn watching(&self, workspace_id: &str) -> bool {
        self.active() && lock(&self.0.streams).workspaces.contains_key(workspace_id)
    }

    /// The workspaces with open streams, and a number that moves whenever one is added.
    pub fn workspaces(&self) -> (u64, Vec<String>) {
        let streams = lock(&self.0.streams);
        (
            streams.generation,
            streams.workspaces.keys().cloned().collect(),
        )
    }

    /// The cursor of the newest monitor event published.
    pub fn cursor(&self) -> String {
        lock(&self.0.cursor).clone()
    }

    /// Moves the cursor up to the newest event in the log when reading of it starts (it never
    /// moves back).
    pub fn start_at(&self, cursor: &str) {
        let mut c = lock(&self.0.cursor);
        if cursor > c.as_str() {
            *c = cursor.to_string();
        }
    }

    fn send(&self, workspace_id: &str, frame: impl FnOnce() -> Frame) {
        let streams = lock(&self.0.streams);
        if let Some(c) = streams.workspaces.get(workspace_id) {
            let _ = c.tx.send(Arc::new(frame()));
        }
    }

    /// Publishes a monitor event (its id becomes the cursor when newer).
    pub fn publish_event(&self, workspace_id: &str, event_id: &str, data: &str) {
        if !self.active() {
            return;
        }
        let mut cursor = lock(&self.0.cursor);
        if event_id > cursor.as_str() {
            *cursor = event_id.to_string();
        }
        // Sent under the cursor's lock: frames leave in cursor order.
        self.send(workspace_id, || {
            Frame::event("monitor", event_id, data, Some(event_id.to_string()))
        });
        drop(cursor);
    }

    /// Publishes any other frame, carrying the current cursor.
    pub fn publish(&self, workspace_id: &str, event: &'static str, data: &str) {
        if !self.active() {
            return;
        }
        let cursor = lock(&self.0.cursor);
        self.send(workspace_id, || Frame::event(event, &cursor, data, None));
        drop(cursor);
    }

    /// Publishes several events of one name as one frame (the heartbeats of one tick): a
    /// stream writes them at once.
    pub fn publish_all(&self, workspace_id: &str, event: &'static str, data: &[String]) {
        if !self.active() || data.is_empty() {
            return;
        }
        let cursor = lock(&self.0.cursor);
        self.send(workspace_id, || {
            let size: usize = data.iter().map(|d| d.len() + cursor.len() + 40).sum();
            let mut wire = BytesMut::with_capacity(size);
            for d in data {
                encode(&mut wire, Some(event), &cursor, Some(d));
            }
            Frame {
                event,
                id: cursor.clone(),
                event_id: None,
                wire: wire.freeze(),
            }
        });
        drop(cursor);
    }

    /// Sends every open stream a keep-alive comment.
    pub fn keep_alive(&self) {
        if !self.active() {
            return;
        }
        let frame = Arc::new(Frame::keep_alive());
        for c in lock(&self.0.streams).workspaces.values() {
            let _ = c.tx.send(frame.clone());
        }
    }

    /// Notes a result this node's writer committed: for the streams here (the latest per
    /// monitor wins until it goes out), and for other nodes' streams.
    pub fn heartbeat(&self, beat: Beat) {
        if self.0.relay.wanted() {
            self.0.relay.offer(&beat);
        }
        self.local_heartbeat(beat);
    }

    /// Notes a result for the streams here only (one another node's writer committed).
    pub fn local_heartbeat(&self, beat: Beat) {
        if !self.active() {
            return;
        }
        lock(&self.0.beats).insert(beat);
    }

    /// The pending results whose monitor has had no heartbeat frame for
    /// [`HEARTBEAT_EVERY`]; the others stay pending (and may be replaced by newer ones).
    pub fn due_heartbeats(&self, now: Instant) -> Vec<Beat> {
        lock(&self.0.beats).due(now)
    }

    /// Forgets pending heartbeats (when the last stream closes).
    pub fn clear(&self) {
        lock(&self.0.beats).clear();
    }

    /// Ends every stream (server shutdown): they close instead of holding the shutdown up.
    pub fn close(&self) {
        self.0.closing.cancel();
    }

    pub fn closing(&self) -> &CancellationToken {
        &self.0.closing
    }
}

/// One open stream's place in the fan-out; counted until dropped.
pub struct Subscription {
    hub: Hub,
    rx: broadcast::Receiver<Arc<Frame>>,
    workspace_id: String,
    address: Option<String>,
}

/// What a subscriber gets next.
#[derive(Debug)]
pub enum Next {
    Frame(Arc<Frame>),
    /// It fell behind by more than the buffer, or the server is closing: end the stream.
    Closed,
}

impl Subscription {
    /// The next frame of this workspace.
    pub async fn next(&mut self) -> Next {
        let received = tokio::select! {
            _ = self.hub.0.closing.cancelled() => return Next::Closed,
            r = self.rx.recv() => r,
        };
        Self::received(received)
    }

    /// The next frame if one is already there (`None`: nothing yet).
    pub fn ready(&mut self) -> Option<Next> {
        if self.hub.0.closing.is_cancelled() {
            return Some(Next::Closed);
        }
        match self.rx.try_recv() {
            Ok(f) => Some(Next::Frame(f)),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Self::lagged(n)),
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
        }
    }

    fn received(r: Result<Arc<Frame>, broadcast::error::RecvError>) -> Next {
        match r {
            Ok(f) => Next::Frame(f),
            Err(broadcast::error::RecvError::Lagged(n)) => Self::lagged(n),
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
        }
    }

    fn lagged(missed: u64) -> Next {
        metrics::counter!("stream_dropped_total").increment(1);
        tracing::debug!(missed, "a slow live stream was dropped");
        Next::Closed
    }

    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut streams = lock(&self.hub.0.streams);
        if let Some(c) = streams.workspaces.get_mut(&self.workspace_id) {
            c.open = c.open.saturating_sub(1);
            if c.open == 0 {
                streams.workspaces.remove(&self.workspace_id);
            }
        }
        if let Some(a) = &self.address {
            if let Some(n) = streams.addresses.get_mut(a) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    streams.addresses.remove(a);
                }
            }
        }
        self.hub.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn beat(m: &str, latency: f64) -> Beat {
        Beat {
            monitor_id: m.into(),
            status: tocsin_core::Status::Up,
            latency_ms: latency,
            region: "r".into(),
            at_ms: 0,
        }
    }

    #[tokio::test]
    async fn subscribers_get_their_workspace_only_and_frames_carry_the_cursor() {
        let hub = Hub::default();
        hub.publish("a", "alert", "{}");
        let mut a = hub.subscribe("a", None).unwrap();
        let _b = hub.subscribe("b", None).unwrap();
        hub.publish("b", "alert", "{\"b\":1}");
        hub.publish_event("a", "e1", "{}");
        hub.publish("a", "incident", "{}");
        let Next::Frame(f) = a.next().await else {
            panic!()
        };
        assert_eq!((f.event, f.id.as_str()), ("monitor", "e1"));
        let Next::Frame(f) = a.next().await else {
            panic!()
        };
        assert_eq!((f.event, f.id.as_str()), ("incident", "e1"));
        assert_eq!(&f.wire[..], b"event: incident\nid: e1\ndata: {}\n\n");
        assert!(a.ready().is_none(), "b's frame never reached a");
    }

    #[tokio::test]
    async fn a_tick_of_heartbeats_is_one_frame_and_keep_alives_reach_every_stream() {
        let hub = Hub::default();
        let mut a = hub.subscribe("a", None).unwrap();
        let mut b = hub.subscribe("b", None).unwrap();
        hub.publish_all("a", "heartbeat", &["{\"m\":1}".into(), "{\"m\":2}".into()]);
        hub.keep_alive();
        let Next::Frame(f) = a.next().await else {
            panic!()
        };
        assert_eq!(
            std::str::from_utf8(&f.wire).unwrap(),
            "event: heartbeat\nid: 0\ndata: {\"m\":1}\n\nevent: heartbeat\nid: 0\ndata: {\"m\":2}\n\n"
        );
        for s in [&mut a, &mut b] {
            let Some(Next::Frame(f)) = s.ready() else {
                panic!()
            };
            assert_eq!(&f.wire[..], b": keep-alive\n\n");
        }
        assert!(b.ready().is_none());
    }

    #[test]
    fn a_line_break_in_data_starts_another_data_line() {
        let f = Frame::event("alert", "7", "a\nb", None);
        assert_eq!(&f.wire[..], b"event: alert\nid: 7\ndata: a\ndata: b\n\n");
        assert_eq!(&Frame::cursor("9").wire[..], b"id: 9\n\n");
    }

    #[tokio::test]
    async fn a_subscriber_behind_by_more_than_the_buffer_is_closed() {
        let hub = Hub::new(StreamLimits {
            buffer: 4,
            ..StreamLimits::default()
        });
        let mut s = hub.subscribe("a", None).unwrap();
        for _ in 0..10 {
            hub.publish("a", "alert", "{}");
        }
        assert!(matches!(s.next().await, Next::Closed));
    }

    #[test]
    fn caps_count_open_streams_and_release_them_on_drop() {
        let hub = Hub::new(StreamLimits {
            buffer: 4,
            per_workspace: 2,
            per_ip: 1,
        });
        let one = hub.subscribe("w", Some("1.1.1.1")).unwrap();
        assert_eq!(
            hub.subscribe("w", Some("1.1.1.1")).err(),
            Some(Refused::TooManyForAddress)
        );
        let _two = hub.subscribe("w", Some("2.2.2.2")).unwrap();
        assert_eq!(
            hub.subscribe("w", None).err(),
            Some(Refused::TooManyForWorkspace)
        );
        drop(one);
        let _again = hub
            .subscribe("w", Some("1.1.1.1"))
            .expect("the address's stream was released");
        assert_eq!(hub.open_streams(), 2);
    }

    #[test]
    fn heartbeats_are_one_per_monitor_per_second_the_latest_winning() {
        let hub = Hub::default();
        let _s = hub.subscribe("w", None).unwrap();
        let t0 = Instant::now();
        hub.heartbeat(beat("m", 1.0));
        assert_eq!(hub.due_heartbeats(t0).len(), 1);
        hub.heartbeat(beat("m", 2.0));
        hub.heartbeat(beat("m", 3.0));
        assert!(hub
            .due_heartbeats(t0 + Duration::from_millis(500))
            .is_empty());
        let due = hub.due_heartbeats(t0 + Duration::from_millis(1000));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].latency_ms, 3.0);
    }

    #[test]
    fn nothing_is_kept_when_no_stream_is_open() {
        let hub = Hub::default();
        hub.heartbeat(beat("m", 1.0));
        assert!(hub.due_heartbeats(Instant::now()).is_empty());
    }
}
