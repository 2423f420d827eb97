//! The live fan-out: ONE broadcast per node that every open `GET /stream` shares, each
//! subscriber keeping only its own workspace's frames.
//!
//! What feeds it is `domain::stream::run` (the durable logs: monitor events, alerts,
//! incidents, read from the database, so changes made on any node arrive; the feed's monitor
//! notices) and the heartbeat writer (check results committed on this node, coalesced here to
//! at most one per monitor per second, the latest winning).
//!
//! Memory stays bounded whatever the clients do: the broadcast is a ring of `buffer` frames
//! shared by every subscriber, and a subscriber that falls further behind than that (a client
//! not reading) gets `Lagged` and is dropped; its client reconnects with `Last-Event-ID`. The
//! number of open streams is capped per workspace and per client address.
//!
//! Publishing is cheap when nobody listens: every entry point first reads one atomic counter.
//!
//! Every frame carries a cursor (`id:`): a monitor event carries its own event id, any other
//! frame the id of the last monitor event the hub had published before it, so whatever frame
//! a client saw last, resuming from its id replays exactly the monitor events it missed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;

/// Frames a stream may fall behind the newest before it is dropped (default).
pub const DEFAULT_BUFFER: usize = 1024;
/// Open streams per workspace, at most (default).
pub const DEFAULT_MAX_PER_WORKSPACE: usize = 2000;
/// Open streams per client address, at most (default; 0: no per-address share).
pub const DEFAULT_MAX_PER_IP: usize = 2000;
/// The shortest time between two heartbeat frames of one monitor.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// The cursor before any monitor event: resuming from it replays the workspace's log.
pub const START: &str = "0";

/// One server-sent event, encoded once and shared by every subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub workspace_id: String,
    /// `monitor`, `heartbeat`, `alert`, `incident`, `monitor.changed`.
    pub event: &'static str,
    /// The cursor (see the module documentation).
    pub id: String,
    /// The JSON payload.
    pub data: String,
    /// For a `monitor` frame: the monitor event's id (resume deduplication).
    pub event_id: Option<String>,
}

/// A check result as the writer committed it.
#[derive(Debug, Clone)]
pub struct Beat {
    pub monitor_id: String,
    pub status: &'static str,
    pub latency_ms: f64,
    pub region: String,
    pub at_ms: i64,
}

/// The caps on open streams.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub buffer: usize,
    pub per_workspace: usize,
    /// 0: no per-address share.
    pub per_ip: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            buffer: DEFAULT_BUFFER,
            per_workspace: DEFAULT_MAX_PER_WORKSPACE,
            per_ip: DEFAULT_MAX_PER_IP,
        }
    }
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
    limits: Limits,
    tx: broadcast::Sender<Arc<Frame>>,
    /// Open streams; zero means every publisher returns at once.
    open: AtomicUsize,
    /// Wakes the feeding worker when the first stream opens.
    first: Notify,
    /// The id of the newest monitor event published (the cursor of other frames).
    cursor: Mutex<String>,
    counts: Mutex<Counts>,
    beats: Mutex<Beats>,
    closing: CancellationToken,
}

#[derive(Default)]
struct Counts {
    workspaces: HashMap<String, usize>,
    addresses: HashMap<String, usize>,
}

#[derive(Default)]
struct Beats {
    /// The latest result per monitor not yet sent.
    pending: HashMap<String, Beat>,
    /// When each monitor's last heartbeat frame went out.
    sent: HashMap<String, Instant>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new(Limits::default())
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
    pub fn new(limits: Limits) -> Hub {
        let (tx, _) = broadcast::channel(limits.buffer.max(1));
        Hub(Arc::new(Inner {
            limits,
            tx,
            open: AtomicUsize::new(0),
            first: Notify::new(),
            cursor: Mutex::new(START.to_string()),
            counts: Mutex::default(),
            beats: Mutex::default(),
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
        {
            let mut counts = lock(&self.0.counts);
            let in_ws = counts.workspaces.get(workspace_id).copied().unwrap_or(0);
            if in_ws >= self.0.limits.per_workspace {
                return Err(Refused::TooManyForWorkspace);
            }
            if let Some(a) = address.filter(|_| self.0.limits.per_ip > 0) {
                let from = counts.addresses.get(a).copied().unwrap_or(0);
                if from >= self.0.limits.per_ip {
                    return Err(Refused::TooManyForAddress);
                }
                *counts.addresses.entry(a.to_string()).or_default() += 1;
            }
            *counts
                .workspaces
                .entry(workspace_id.to_string())
                .or_default() += 1;
        }
        let rx = self.0.tx.subscribe();
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

    /// Publishes a monitor event (its id becomes the cursor when newer).
    pub fn publish_event(&self, workspace_id: &str, event_id: &str, data: String) {
        if !self.active() {
            return;
        }
        let mut cursor = lock(&self.0.cursor);
        if event_id > cursor.as_str() {
            *cursor = event_id.to_string();
        }
        // Sent under the cursor's lock: frames leave in cursor order.
        let _ = self.0.tx.send(Arc::new(Frame {
            workspace_id: workspace_id.to_string(),
            event: "monitor",
            id: event_id.to_string(),
            data,
            event_id: Some(event_id.to_string()),
        }));
    }

    /// Publishes any other frame, carrying the current cursor.
    pub fn publish(&self, workspace_id: &str, event: &'static str, data: String) {
        if !self.active() {
            return;
        }
        let cursor = lock(&self.0.cursor);
        let _ = self.0.tx.send(Arc::new(Frame {
            workspace_id: workspace_id.to_string(),
            event,
            id: cursor.clone(),
            data,
            event_id: None,
        }));
    }

    /// Notes a committed check result (the latest per monitor wins until it goes out).
    pub fn heartbeat(&self, beat: Beat) {
        if !self.active() {
            return;
        }
        lock(&self.0.beats)
            .pending
            .insert(beat.monitor_id.clone(), beat);
    }

    /// The pending results whose monitor has had no heartbeat frame for
    /// [`HEARTBEAT_EVERY`]; the others stay pending (and may be replaced by newer ones).
    pub fn due_heartbeats(&self, now: Instant) -> Vec<Beat> {
        let mut beats = lock(&self.0.beats);
        let Beats { pending, sent } = &mut *beats;
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

    /// Forgets pending heartbeats (when the last stream closes).
    pub fn clear(&self) {
        let mut beats = lock(&self.0.beats);
        beats.pending.clear();
        beats.sent.clear();
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
        loop {
            let received = tokio::select! {
                _ = self.hub.0.closing.cancelled() => return Next::Closed,
                r = self.rx.recv() => r,
            };
            match received {
                Ok(f) if f.workspace_id == self.workspace_id => return Next::Frame(f),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    metrics::counter!("stream_dropped_total").increment(1);
                    tracing::debug!(missed = n, "a slow live stream was dropped");
                    return Next::Closed;
                }
                Err(broadcast::error::RecvError::Closed) => return Next::Closed,
            }
        }
    }

    pub fn workspace_id(&self) -> &str {
        &self.workspace_id
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut counts = lock(&self.hub.0.counts);
        if let Some(n) = counts.workspaces.get_mut(&self.workspace_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.workspaces.remove(&self.workspace_id);
            }
        }
        if let Some(a) = &self.address {
            if let Some(n) = counts.addresses.get_mut(a) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.addresses.remove(a);
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
            status: "UP",
            latency_ms: latency,
            region: "r".into(),
            at_ms: 0,
        }
    }

    #[tokio::test]
    async fn subscribers_get_their_workspace_only_and_frames_carry_the_cursor() {
        let hub = Hub::default();
        hub.publish("a", "alert", "{}".into());
        let mut a = hub.subscribe("a", None).unwrap();
        let _b = hub.subscribe("b", None).unwrap();
        hub.publish("b", "alert", "{\"b\":1}".into());
        hub.publish_event("a", "e1", "{}".into());
        hub.publish("a", "incident", "{}".into());
        let Next::Frame(f) = a.next().await else {
            panic!()
        };
        assert_eq!((f.event, f.id.as_str()), ("monitor", "e1"));
        let Next::Frame(f) = a.next().await else {
            panic!()
        };
        assert_eq!((f.event, f.id.as_str()), ("incident", "e1"));
    }

    #[tokio::test]
    async fn a_subscriber_behind_by_more_than_the_buffer_is_closed() {
        let hub = Hub::new(Limits {
            buffer: 4,
            ..Limits::default()
        });
        let mut s = hub.subscribe("a", None).unwrap();
        for _ in 0..10 {
            hub.publish("a", "alert", "{}".into());
        }
        assert!(matches!(s.next().await, Next::Closed));
    }

    #[test]
    fn caps_count_open_streams_and_release_them_on_drop() {
        let hub = Hub::new(Limits {
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
