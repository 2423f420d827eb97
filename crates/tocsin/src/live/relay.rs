//! Heartbeat frames between nodes sharing one PostgreSQL database: a stream on node B shows
//! the check results node A's writer stored (the scheduler runs on one node, so most results
//! are stored there).
//!
//! How: a node with open streams announces, on the change feed, the workspaces it streams
//! ([`Notice::Streaming`], at once when a workspace gains its first stream and again every
//! [`ANNOUNCE_EVERY`]); every node keeps those as leases that lapse after [`LEASE`]. While a
//! lease is held, the writer hands its committed results to [`Relay`], and [`run_sender`]
//! coalesces them (at most one per monitor per second, as the frames are) and sends the
//! results of the leased workspaces every [`TICK`] with `pg_notify` on [`CHANNEL`], in
//! compact batches under PostgreSQL's payload limit. A node listens on [`CHANNEL`] only while
//! it has streams ([`listen`], a subscription on the node's one listening connection,
//! [`crate::cluster::listen`]) and hands what other nodes sent to its own hub.
//!
//! Why this and not each streaming node polling "heartbeats since a cursor": the heartbeat
//! table is keyed by monitor and time, so such a poll is either one probe per streamed
//! monitor every tick or a time index on the hottest insert path; it would also cost every
//! streaming node reads whether or not anything happened. Here a node with no stream costs
//! nothing, the storing node's cost is one atomic read per result while nobody streams, and
//! while someone does, one statement per tick for the workspaces actually streamed. What a
//! notification can lose (a listener reconnecting, a node restarting before the next
//! announcement) is a frame the next result of the same monitor replaces within its
//! interval; the durable history stays the REST reads'.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tocsin_core::Status;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Beat, Coalesce, Hub};
use crate::cluster::feed::{Feed, Notice};
use crate::cluster::listen::{Heard, Listener};
use crate::store::Db;

/// The PostgreSQL notification channel of relayed heartbeats.
pub const CHANNEL: &str = "tocsin_live_beats";
/// How often a node with streams announces the workspaces it streams.
pub const ANNOUNCE_EVERY: Duration = Duration::from_secs(5);
/// How long an announcement holds: a node that stops announcing (its streams closed, or it
/// died) stops getting results after this.
pub const LEASE: Duration = Duration::from_secs(15);
/// How often the sender sends what is due.
pub const TICK: Duration = Duration::from_millis(250);
/// Results queued for the sender, at most (past that they are dropped: a frame, not data).
const QUEUE: usize = 8192;
/// A payload's size, at most (PostgreSQL refuses 8,000 bytes and more).
const MAX_PAYLOAD: usize = 7_000;
/// Workspace ids per announcement.
pub const WORKSPACES_PER_NOTICE: usize = 100;

/// What other nodes stream, and the queue to the sender. Held by the [`Hub`].
pub struct Relay {
    /// When this process started: the origin of `wanted_until`.
    origin: Instant,
    /// Milliseconds after `origin` until which some lease is held (0: none ever).
    wanted_until: AtomicU64,
    /// The workspaces other nodes stream, and when each lease lapses.
    leases: Mutex<HashMap<String, Instant>>,
    tx: mpsc::Sender<Beat>,
    rx: Mutex<Option<mpsc::Receiver<Beat>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Relay {
    pub(super) fn new() -> Relay {
        let (tx, rx) = mpsc::channel(QUEUE);
        Relay {
            origin: Instant::now(),
            wanted_until: AtomicU64::new(0),
            leases: Mutex::new(HashMap::new()),
            tx,
            rx: Mutex::new(Some(rx)),
        }
    }

    fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether another node streams anything (one atomic read and the clock).
    pub fn wanted(&self) -> bool {
        let until = self.wanted_until.load(Ordering::Acquire);
        until > 0 && self.millis(Instant::now()) < until
    }

    /// Whether another node holds a lease on `workspace_id`.
    pub fn streamed_elsewhere(&self, workspace_id: &str) -> bool {
        lock(&self.leases)
            .get(workspace_id)
            .is_some_and(|t| *t > Instant::now())
    }

    /// Notes another node's announcement: it streams these workspaces.
    pub fn lease(&self, workspaces: &[String], now: Instant) {
        let until = now + LEASE;
        let mut leases = lock(&self.leases);
        leases.retain(|_, t| *t > now);
        for w in workspaces {
            leases.insert(w.clone(), until);
        }
        self.wanted_until
            .fetch_max(self.millis(until), Ordering::AcqRel);
    }

    /// Queues a committed result for the sender (dropped when the queue is full).
    pub(super) fn offer(&self, beat: &Beat) {
        let _ = self.tx.try_send(beat.clone());
    }

    fn take_queue(&self) -> Option<mpsc::Receiver<Beat>> {
        lock(&self.rx).take()
    }
}

/// The notification payload: the sending node and its results, each
/// `[monitor id, status, latency ms, region, at ms]`.
#[derive(Debug, Serialize, Deserialize)]
struct Wire<B> {
    n: String,
    b: Vec<B>,
}

type Sent<'a> = (&'a str, Status, f64, &'a str, i64);
type Received = (String, String, f64, String, i64);

/// Splits `beats` into payloads under [`MAX_PAYLOAD`] bytes.
fn encode(node: &str, beats: &[Beat]) -> Vec<String> {
    let mut out = Vec::new();
    let mut batch: Vec<Sent<'_>> = Vec::new();
    let mut size = node.len() + 16;
    for b in beats {
        let item: Sent<'_> = (&b.monitor_id, b.status, b.latency_ms, &b.region, b.at_ms);
        let len = serde_json::to_string(&item).map_or(0, |s| s.len()) + 1;
        if !batch.is_empty() && size + len > MAX_PAYLOAD {
            out.extend(payload(node, std::mem::take(&mut batch)));
            size = node.len() + 16;
        }
        size += len;
        batch.push(item);
    }
    if !batch.is_empty() {
        out.extend(payload(node, batch));
    }
    out
}

fn payload(node: &str, b: Vec<Sent<'_>>) -> Option<String> {
    serde_json::to_string(&Wire {
        n: node.to_string(),
        b,
    })
    .ok()
}

/// Counts relayed results dropped because this build cannot read them (a status it does not
/// know, as from another build during a rolling upgrade, or a payload that is not the wire
/// form).
pub const UNREADABLE_METRIC: &str = "tocsin_live_relay_unreadable_total";

/// The results in a payload another node sent (`None`: this node's own, or unreadable). What
/// cannot be read is logged and counted ([`UNREADABLE_METRIC`]), never given a status.
fn decode(node: &str, payload: &str) -> Option<Vec<Beat>> {
    let wire: Wire<Received> = match serde_json::from_str(payload) {
        Ok(w) => w,
        Err(e) => {
            metrics::counter!(UNREADABLE_METRIC).increment(1);
            tracing::warn!(error = %e, "unreadable relayed heartbeats ignored");
            return None;
        }
    };
    if wire.n == node {
        return None;
    }
    Some(
        wire.b
            .into_iter()
            .filter_map(|(monitor_id, status, latency_ms, region, at_ms)| {
                let status = match status.parse::<Status>() {
                    Ok(s) => s,
                    Err(e) => {
                        metrics::counter!(UNREADABLE_METRIC).increment(1);
                        tracing::warn!(from = %wire.n, monitor = %monitor_id, error = %e,
                            "relayed heartbeat dropped: its status cannot be read");
                        return None;
                    }
                };
                Some(Beat {
                    monitor_id,
                    status,
                    latency_ms,
                    region,
                    at_ms,
                })
            })
            .collect(),
    )
}

/// Follows other nodes' announcements and sends this node's committed results of the
/// workspaces they stream, until `cancel`. Idle (waiting on its queue and the feed) while no
/// other node streams. PostgreSQL only.
pub async fn run_sender(hub: Hub, feed: Feed, db: Db, cancel: CancellationToken) {
    let relay = hub.relay();
    let Some(mut queue) = relay.take_queue() else {
        return;
    };
    let mut notices = feed.subscribe_all();
    let mut pending = Coalesce::default();
    // Monitor id → workspace id; a monitor never changes workspace.
    let mut workspaces: HashMap<String, String> = HashMap::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            b = queue.recv() => match b {
                Some(b) => pending.insert(b),
                None => return,
            },
            n = notices.recv() => match n {
                Ok(d) if d.remote => {
                    if let Notice::Streaming { workspaces } = &d.notice {
                        relay.lease(workspaces, Instant::now());
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick(), if !pending.is_empty() => {
                let due = pending.due(Instant::now());
                if let Err(e) = send(relay, feed.node_id(), &db, &mut workspaces, due).await {
                    tracing::warn!(error = %e, "heartbeats not relayed to other nodes");
                }
            }
        }
    }
}

async fn send(
    relay: &Relay,
    node: &str,
    db: &Db,
    workspaces: &mut HashMap<String, String>,
    due: Vec<Beat>,
) -> Result<(), sqlx::Error> {
    let unknown: Vec<String> = due
        .iter()
        .filter(|b| !workspaces.contains_key(&b.monitor_id))
        .map(|b| b.monitor_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    for chunk in unknown.chunks(500) {
        workspaces.extend(crate::store::stream::workspaces_of(db.reader(), chunk).await?);
    }
    let wanted: Vec<Beat> = due
        .into_iter()
        .filter(|b| {
            workspaces
                .get(&b.monitor_id)
                .is_some_and(|w| relay.streamed_elsewhere(w))
        })
        .collect();
    for p in encode(node, &wanted) {
        // `pg_notify` returns `void`, which the `Any` driver cannot decode: select a number.
        sqlx::query("SELECT 1 FROM (SELECT pg_notify($1, $2)) AS sent")
            .bind(CHANNEL)
            .bind(&p)
            .execute(db.writer())
            .await?;
    }
    if workspaces.len() > 100_000 {
        // Deleted monitors linger otherwise; the live ones come back on their next result.
        workspaces.clear();
    }
    Ok(())
}

/// Starts listening for other nodes' results on this node's listening connection for `hub`'s
/// streams; returns once the `LISTEN` is in place (or the connection is down), and goes on in
/// the background until `cancel`, when the channel is no longer listened to.
pub async fn listen(hub: Hub, node: String, listener: &Listener, cancel: CancellationToken) {
    let mut sub = listener.subscribe(CHANNEL);
    tokio::select! {
        _ = cancel.cancelled() => return,
        first = sub.recv() => match first {
            Some(Heard::Payload(p)) => hand(&hub, &node, &p),
            Some(Heard::Listening | Heard::Lost) => {}
            None => return,
        },
    }
    tokio::spawn(async move {
        loop {
            let heard = tokio::select! {
                _ = cancel.cancelled() => return,
                h = sub.recv() => match h {
                    Some(h) => h,
                    None => return,
                },
            };
            // A result missed while the connection was down is replaced by its monitor's next.
            if let Heard::Payload(p) = heard {
                hand(&hub, &node, &p);
            }
        }
    });
}

fn hand(hub: &Hub, node: &str, payload: &str) {
    for beat in decode(node, payload).unwrap_or_default() {
        hub.local_heartbeat(beat);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn beat(m: &str) -> Beat {
        Beat {
            monitor_id: m.into(),
            status: Status::Down,
            latency_ms: 12.5,
            region: "eu-west".into(),
            at_ms: 1_700_000_000_000,
        }
    }

    #[test]
    fn payloads_stay_under_the_limit_and_round_trip() {
        let beats: Vec<Beat> = (0..400)
            .map(|i| beat(&format!("0190f3c4-7a2b-7c1d-9e8f-{i:012}")))
            .collect();
        let payloads = encode("node-a", &beats);
        assert!(payloads.len() > 1);
        assert!(payloads.iter().all(|p| p.len() < MAX_PAYLOAD));
        let back: Vec<Beat> = payloads
            .iter()
            .flat_map(|p| decode("node-b", p).unwrap())
            .collect();
        assert_eq!(back, beats);
        assert!(decode("node-a", &payloads[0]).is_none(), "own echo kept");
    }

    #[test]
    fn a_relayed_status_this_build_cannot_read_is_dropped_not_guessed() {
        let payload = r#"{"n":"node-a","b":[["m1","SIDEWAYS",1.0,"r",5],["m2","UP",2.0,"r",6]]}"#;
        let back = decode("node-b", payload).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(
            (back[0].monitor_id.as_str(), back[0].status),
            ("m2", Status::Up)
        );
        assert!(decode("node-b", "not json").is_none());
    }

    #[test]
    fn leases_lapse() {
        let relay = Relay::new();
        assert!(!relay.wanted());
        let now = Instant::now();
        relay.lease(&["w".to_string()], now);
        assert!(relay.wanted());
        assert!(relay.streamed_elsewhere("w"));
        assert!(!relay.streamed_elsewhere("v"));
        relay.lease(&["v".to_string()], now - LEASE);
        assert!(!relay.streamed_elsewhere("v"));
    }
}
