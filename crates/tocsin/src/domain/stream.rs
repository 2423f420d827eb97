//! The live stream of a workspace (`GET /stream`, `monitors:read`): opening one (the caps,
//! the replay of missed monitor events after a `Last-Event-ID`, then the live frames without
//! gaps or duplicates), and [`run`], the worker that feeds this node's fan-out
//! ([`crate::live::Hub`]) while any stream is open.
//!
//! The worker reads the durable logs rather than hooking each writer: monitor events by id,
//! alerts and incidents by `updated_at`, every 250 ms, one query each for the whole node. So a
//! status change the scheduling node made, or an alert acknowledged on another node, reaches
//! every node's streams the same way, and nothing runs while no stream is open. Two
//! transactions can commit in the other order than their ids were drawn; each read therefore
//! looks back a few seconds behind its cursor and skips what it already published.
//! Monitor changes (created, edited, paused, resumed, deleted) come from the change feed,
//! which carries other nodes' notices too. Heartbeats are the check results this node's writer
//! committed and, on PostgreSQL, those other nodes relay while this one has streams
//! ([`crate::live::relay`]: the worker listens and announces the workspaces it streams); they
//! go out once a second, one frame per workspace, so a stream wakes for them once a second
//! however many monitors check.
//!
//! A stream writes whatever frames are ready at once, as one chunk of their pre-encoded bytes
//! ([`Stream::next_chunk`]): a burst costs one wake-up and one write per stream.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cluster::feed::{ChangeKind, MonitorChange, Notice};
use crate::cluster::listen::Listener;
use crate::cx::Cx;
use crate::domain::DomainError;
use crate::live::{self, Frame, Hub, Next, Refused, Subscription};
use crate::store::events::EventRow;
use crate::store::stream as store;

/// How often the worker reads the logs while a stream is open.
pub const POLL: Duration = Duration::from_millis(250);
/// How far behind its cursor each read looks for late commits.
const LOOKBACK: Duration = Duration::from_secs(5);
/// Rows per read.
const PAGE: i64 = 1000;
/// The most monitor events one resume replays.
pub const MAX_REPLAY: usize = 10_000;
/// How long a resumed stream remembers what it replayed (to skip it when it arrives live).
const REPLAYED_MEMORY: Duration = Duration::from_secs(60);

/// What one chunk holds at most before it is written (more frames wait for the next).
const CHUNK: usize = 64 * 1024;

/// An open stream.
pub struct Stream {
    sub: Subscription,
    /// What goes out before the live frames: the cursor, or the replayed events.
    backlog: VecDeque<Bytes>,
    /// The subscription ended while a chunk was being gathered: that chunk is the last.
    ended: bool,
    resumed_from: Option<String>,
    replayed: HashSet<String>,
    replayed_until: Instant,
    /// Whether the caller may read incidents (`incidents:read`): their frames are skipped
    /// otherwise, as the REST reads would refuse them.
    incidents: bool,
}

impl Stream {
    /// The next bytes to write: every frame ready now (up to [`CHUNK`]), waiting for one if
    /// none is; `None` when the stream ends (the client fell too far behind, or the server is
    /// stopping).
    pub async fn next_chunk(&mut self) -> Option<Bytes> {
        if !self.backlog.is_empty() {
            return Some(self.backlog_chunk());
        }
        if self.ended {
            return None;
        }
        let first = loop {
            match self.sub.next().await {
                Next::Frame(f) if self.wanted(&f) => break f,
                Next::Frame(_) => {}
                Next::Closed => return None,
            }
        };
        // Whatever else is already there goes in the same write; a lone frame is written
        // as it is, without a copy.
        let mut chunk: Option<BytesMut> = None;
        while chunk.as_ref().map_or(first.wire.len(), BytesMut::len) < CHUNK {
            let f = match self.sub.ready() {
                None => break,
                Some(Next::Frame(f)) => f,
                Some(Next::Closed) => {
                    self.ended = true;
                    break;
                }
            };
            if !self.wanted(&f) {
                continue;
            }
            chunk
                .get_or_insert_with(|| BytesMut::from(&first.wire[..]))
                .extend_from_slice(&f.wire);
        }
        Some(chunk.map_or_else(|| first.wire.clone(), BytesMut::freeze))
    }

    fn backlog_chunk(&mut self) -> Bytes {
        let mut chunk = BytesMut::new();
        while let Some(b) = self.backlog.front() {
            if !chunk.is_empty() && chunk.len() + b.len() > CHUNK {
                break;
            }
            chunk.extend_from_slice(b);
            self.backlog.pop_front();
        }
        chunk.freeze()
    }

    /// Whether this stream shows `frame`: not an incident to a caller who may not read them,
    /// not a monitor event it replayed or was resumed past.
    fn wanted(&mut self, frame: &Frame) -> bool {
        if frame.event == "incident" && !self.incidents {
            return false;
        }
        if let (Some(eid), Some(from)) = (&frame.event_id, &self.resumed_from) {
            if eid.as_str() <= from.as_str() {
                return false;
            }
            if !self.replayed.is_empty() {
                if Instant::now() > self.replayed_until {
                    self.replayed = HashSet::new();
                } else if self.replayed.contains(eid) {
                    return false;
                }
            }
        }
        true
    }
}

/// A cursor a client may send: an event id (a UUID) or [`live::START`].
fn valid_cursor(c: &str) -> bool {
    c == live::START || uuid::Uuid::parse_str(c).is_ok()
}

/// Opens the caller's workspace stream. With `last_event_id` (a cursor this server sent), the
/// workspace's monitor events after it come first; an unknown or malformed id is ignored (the
/// stream starts live, as a first connection does).
pub async fn open(
    core: &Cx,
    hub: &Hub,
    caller: &Caller,
    last_event_id: Option<&str>,
) -> Result<Stream, DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    let sub = hub
        .subscribe(&caller.workspace_id, caller.ip.as_deref())
        .map_err(|r| {
            metrics::counter!("stream_refused_total").increment(1);
            tracing::debug!(reason = ?r, "live stream refused");
            match r {
                Refused::TooManyForWorkspace | Refused::TooManyForAddress => {
                    DomainError::RateLimited { retry_after: 10 }
                }
            }
        })?;
    // Subscribed first: anything published from here on is in the subscription, anything
    // committed before is in the database, so the two together leave no gap.
    if hub.cursor() == live::START {
        if let Some(newest) = store::newest_event_id(core.db().reader()).await? {
            hub.start_at(&newest);
        }
    }
    let mut stream = Stream {
        sub,
        backlog: VecDeque::new(),
        ended: false,
        resumed_from: None,
        replayed: HashSet::new(),
        replayed_until: Instant::now() + REPLAYED_MEMORY,
        incidents: caller.caps.contains(crate::auth::Capability::IncidentsRead),
    };
    let resume = last_event_id.map(str::trim).filter(|c| valid_cursor(c));
    let Some(from) = resume else {
        stream.backlog.push_back(Frame::cursor(&hub.cursor()).wire);
        return Ok(stream);
    };
    let mut after = from.to_string();
    let db = core.db().reader();
    loop {
        let rows = store::workspace_events_after(db, &caller.workspace_id, &after, PAGE).await?;
        let full = rows.len() as i64 == PAGE;
        for r in rows {
            // A corrupt event (reported where it was read) is skipped; the cursor moves on.
            let r = match r {
                Ok(r) => r,
                Err(corrupt) => {
                    after = corrupt.id;
                    continue;
                }
            };
            after = r.id.clone();
            stream.replayed.insert(r.id.clone());
            stream.backlog.push_back(event_frame(&r).wire);
        }
        if !full || stream.replayed.len() >= MAX_REPLAY {
            break;
        }
    }
    stream.resumed_from = Some(from.to_string());
    if stream.backlog.is_empty() {
        stream.backlog.push_back(Frame::cursor(from).wire);
    }
    Ok(stream)
}

/// A monitor event as a `monitor` frame.
fn event_frame(r: &EventRow) -> Frame {
    Frame::event("monitor", &r.id, &event_data(r), Some(r.id.clone()))
}

fn event_data(r: &EventRow) -> String {
    json!({
        "monitorId": r.monitor_id,
        "status": r.to_status,
        "previousStatus": r.from_status,
        "at": rfc3339(r.created_at),
        "cause": r.message,
        "kind": r.kind,
        "seq": r.seq,
    })
    .to_string()
}

/// Ids (or versions) published recently, with a floor that trails the newest position read
/// by about [`LOOKBACK`]: reads start at the floor and skip what is in the set.
struct Window<C> {
    floor: C,
    /// Positions read since, oldest first.
    marks: VecDeque<(Instant, C)>,
    seen: HashMap<String, Instant>,
}

impl<C: Clone + PartialOrd> Window<C> {
    fn new(at: C) -> Self {
        Window {
            floor: at,
            marks: VecDeque::new(),
            seen: HashMap::new(),
        }
    }

    /// Where the next read starts.
    fn floor(&mut self, now: Instant) -> C {
        while let Some((t, c)) = self.marks.front() {
            if now.duration_since(*t) < LOOKBACK {
                break;
            }
            self.floor = c.clone();
            self.marks.pop_front();
        }
        // Older than the floor's lag plus a margin: below the floor, never read again.
        self.seen
            .retain(|_, t| now.duration_since(*t) < LOOKBACK * 2 + POLL * 4);
        self.floor.clone()
    }

    /// Whether `key` is new (then it counts as published).
    fn fresh(&mut self, key: String, now: Instant) -> bool {
        self.seen.insert(key, now).is_none()
    }

    /// Records the newest position read.
    fn mark(&mut self, now: Instant, newest: C) {
        let newer = match self.marks.back() {
            Some((_, c)) => newest > *c,
            None => newest > self.floor,
        };
        if newer {
            self.marks.push_back((now, newest));
        }
    }
}

/// The worker's state while streams are open.
struct Reader {
    events: Window<String>,
    alerts: Window<i64>,
    incidents: Window<i64>,
    /// Monitor id → workspace id (heartbeats and monitor changes carry only the monitor).
    workspaces: HashMap<String, String>,
}

impl Reader {
    async fn start(core: &Feeder) -> Result<Reader, sqlx::Error> {
        let db = core.cx.db().reader();
        let newest = store::newest_event_id(db)
            .await?
            .unwrap_or_else(|| live::START.to_string());
        core.hub.start_at(&newest);
        let (alerts_at, incidents_at) = store::newest_updates(db).await?;
        let reader = Reader {
            events: Window::new(newest),
            alerts: Window::new(alerts_at),
            incidents: Window::new(incidents_at),
            workspaces: store::all_workspaces(db).await?.into_iter().collect(),
        };
        Ok(reader)
    }

    async fn poll(&mut self, core: &Feeder) -> Result<(), sqlx::Error> {
        let hub = &core.hub;
        let db = core.cx.db().reader();
        let now = Instant::now();
        // Monitor events, page by page.
        let mut after = self.events.floor(now);
        for _ in 0..20 {
            let rows = store::events_after(db, &after, PAGE).await?;
            let full = rows.len() as i64 == PAGE;
            for r in &rows {
                // A corrupt event (reported where it was read) is skipped; the cursor moves on.
                let r = match r {
                    Ok(r) => r,
                    Err(corrupt) => {
                        after = corrupt.id.clone();
                        continue;
                    }
                };
                after = r.id.clone();
                if self.events.fresh(r.id.clone(), now) {
                    self.workspaces
                        .insert(r.monitor_id.clone(), r.workspace_id.clone());
                    if hub.watching(&r.workspace_id) {
                        hub.publish_event(&r.workspace_id, &r.id, &event_data(r));
                    } else {
                        // Nobody here streams it, but it is still the newest cursor.
                        hub.start_at(&r.id);
                    }
                }
            }
            if !full {
                break;
            }
        }
        self.events.mark(now, after);
        // Alerts opened, acknowledged, escalated, resolved.
        let since = self.alerts.floor(now);
        let rows = store::alerts_since(db, since, PAGE).await?;
        let mut newest = since;
        for a in rows {
            newest = newest.max(a.updated_at);
            if self.alerts.fresh(alert_key(&a), now) && hub.watching(&a.workspace_id) {
                // A corrupt alert (reported where it was read) is not streamed.
                if let Ok(view) = crate::domain::alerts::view(&a) {
                    let data = serde_json::to_string(&view).unwrap_or_default();
                    hub.publish(&a.workspace_id, "alert", &data);
                }
            }
        }
        self.alerts.mark(now, newest);
        // Incidents created, updated, resolved, published.
        let since = self.incidents.floor(now);
        let rows = store::incidents_since(db, since, PAGE).await?;
        let mut newest = since;
        for i in rows {
            newest = newest.max(i.updated_at);
            if self.incidents.fresh(incident_key(&i), now) && hub.watching(&i.workspace_id) {
                let data = json!({
                    "id": i.id,
                    "statusPageId": i.status_page_id,
                    "status": i.status,
                    "title": i.title,
                    "updatedAt": rfc3339(i.updated_at),
                })
                .to_string();
                hub.publish(&i.workspace_id, "incident", &data);
            }
        }
        self.incidents.mark(now, newest);
        Ok(())
    }

    /// Sends the heartbeats that are due (one per monitor per second).
    async fn heartbeats(&mut self, core: &Feeder) -> Result<(), sqlx::Error> {
        let hub = &core.hub;
        let due = hub.due_heartbeats(Instant::now());
        if due.is_empty() {
            return Ok(());
        }
        let unknown: Vec<String> = due
            .iter()
            .filter(|b| !self.workspaces.contains_key(&b.monitor_id))
            .map(|b| b.monitor_id.clone())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        for chunk in unknown.chunks(500) {
            for (m, w) in store::workspaces_of(core.cx.db().reader(), chunk).await? {
                self.workspaces.insert(m, w);
            }
        }
        // One frame per workspace: its streams wake once for the whole tick.
        let mut by_workspace: HashMap<&str, Vec<String>> = HashMap::new();
        for b in due {
            let Some(ws) = self.workspaces.get(&b.monitor_id) else {
                continue;
            };
            if !hub.watching(ws) {
                continue;
            }
            let data = json!({
                "monitorId": b.monitor_id,
                "status": b.status,
                "latencyMs": b.latency_ms,
                "region": b.region,
                "at": rfc3339(b.at_ms),
            })
            .to_string();
            by_workspace.entry(ws).or_default().push(data);
        }
        for (ws, data) in by_workspace {
            hub.publish_all(ws, "heartbeat", &data);
        }
        Ok(())
    }

    async fn monitor_changed(
        &mut self,
        core: &Feeder,
        c: &MonitorChange,
    ) -> Result<(), sqlx::Error> {
        let ws = match self.workspaces.get(&c.monitor_id) {
            Some(w) => Some(w.clone()),
            None => {
                store::workspaces_of(core.cx.db().reader(), std::slice::from_ref(&c.monitor_id))
                    .await?
                    .into_iter()
                    .next()
                    .map(|(_, w)| w)
            }
        };
        let Some(ws) = ws else {
            return Ok(());
        };
        if c.kind == ChangeKind::Deleted {
            self.workspaces.remove(&c.monitor_id);
        } else {
            self.workspaces.insert(c.monitor_id.clone(), ws.clone());
        }
        let op = match c.kind {
            ChangeKind::Created => "created",
            ChangeKind::Updated => "updated",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Paused => "paused",
            ChangeKind::Resumed => "resumed",
        };
        let data = json!({ "monitorId": c.monitor_id, "op": op }).to_string();
        core.hub.publish(&ws, "monitor.changed", &data);
        Ok(())
    }
}

fn alert_key(a: &crate::store::alerts::AlertRow) -> String {
    format!(
        "{}/{}/{}/{}",
        a.id,
        a.updated_at,
        a.status,
        a.escalation_step.unwrap_or(-1)
    )
}

fn incident_key(i: &store::IncidentHead) -> String {
    format!("{}/{}/{}/{}", i.id, i.updated_at, i.status, i.title)
}

/// What the worker reads with and feeds.
struct Feeder {
    cx: Cx,
    hub: Hub,
    /// This node's listening connection (PostgreSQL; `None` on SQLite, one node).
    listener: Option<Listener>,
}

/// Feeds this node's fan-out while any stream is open; idle otherwise. Until `cancel`. With
/// `listener` (PostgreSQL), it also hears the results other nodes relay while streams are open.
pub async fn run(cx: Cx, hub: Hub, listener: Option<Listener>, cancel: CancellationToken) {
    let core = Feeder { cx, hub, listener };
    let hub = &core.hub;
    let mut feed = core.cx.feed().subscribe_all();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = hub.wait_active() => {}
        }
        // Notices from while nobody listened are of no interest.
        feed = feed.resubscribe();
        let mut reader = match Reader::start(&core).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "live stream: cannot read the logs; retrying");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                continue;
            }
        };
        let streaming = cancel.child_token();
        let mut presence = Presence::start(&core, &streaming).await;
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Heartbeats go out once a second, each monitor's latest: every stream wakes and
        // writes once for them, not at every read of the logs (status changes, alerts and
        // incidents keep the shorter period).
        let mut beats = tokio::time::interval(live::HEARTBEAT_EVERY);
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut keep_alive = tokio::time::interval_at(
            tokio::time::Instant::now() + live::KEEP_ALIVE,
            live::KEEP_ALIVE,
        );
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while hub.active() {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = keep_alive.tick() => hub.keep_alive(),
                _ = tick.tick() => {
                    if let Some(p) = presence.as_mut() {
                        p.announce(&core);
                    }
                    if let Err(e) = reader.poll(&core).await {
                        tracing::warn!(error = %e, "live stream: reading the logs failed");
                    }
                }
                _ = beats.tick() => {
                    if let Err(e) = reader.heartbeats(&core).await {
                        tracing::warn!(error = %e, "live stream: heartbeats not sent");
                    }
                }
                n = feed.recv() => match n {
                    Ok(d) => {
                        if let Notice::Monitor(c) = &d.notice {
                            if let Err(e) = reader.monitor_changed(&core, c).await {
                                tracing::warn!(error = %e, "live stream: monitor change not sent");
                            }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
            }
        }
        streaming.cancel();
        hub.clear();
    }
}

/// This node's part in relaying heartbeats between nodes while it has streams (PostgreSQL):
/// it listens for the results other nodes send, and tells them which workspaces it streams.
struct Presence {
    /// The hub's workspace generation last announced, and when.
    announced: Option<(u64, Instant)>,
}

impl Presence {
    /// Listens first (so nothing sent after the announcement is missed); `None` on SQLite.
    async fn start(core: &Feeder, cancel: &CancellationToken) -> Option<Presence> {
        let listener = core.listener.as_ref()?;
        live::relay::listen(
            core.hub.clone(),
            core.cx.feed().node_id().to_string(),
            listener,
            cancel.clone(),
        )
        .await;
        let mut p = Presence { announced: None };
        p.announce(core);
        Some(p)
    }

    /// Announces the streamed workspaces when one was added, and every
    /// [`live::relay::ANNOUNCE_EVERY`] (the leases lapse otherwise).
    fn announce(&mut self, core: &Feeder) {
        let (generation, workspaces) = core.hub.workspaces();
        let now = Instant::now();
        let due = self.announced.is_none_or(|(g, at)| {
            g != generation || now.duration_since(at) >= live::relay::ANNOUNCE_EVERY
        });
        if !due {
            return;
        }
        self.announced = Some((generation, now));
        for chunk in workspaces.chunks(live::relay::WORKSPACES_PER_NOTICE) {
            core.cx.announce(Notice::Streaming {
                workspaces: chunk.to_vec(),
            });
        }
    }
}
