//! Remote probes on any node. A probe's WebSocket lives in the memory of the node it reached,
//! behind whatever load balancer spreads connections, while only the node holding the scheduler
//! role runs checks. On a shared PostgreSQL database this module joins the two:
//!
//! - **Presence.** Every node advertises the regions it holds live probes of in
//!   `probe_presence` (at once when a probe connects or leaves, and every
//!   [`ADVERTISE_EVERY`] as a heartbeat), and reads what the other nodes advertise. A row not
//!   refreshed for [`PRESENCE_FRESH`] belongs to a node that died and is ignored. So every node
//!   knows which regions are live anywhere (`GET /regions`, staleness).
//! - **Relay.** When the scheduling node needs a region none of its own connections serve, it
//!   stores the job in `probe_relay_jobs` addressed to a node holding that region (in turn) and
//!   signals it with `pg_notify`; that node runs it on its probe and stores the answer, then
//!   signals back. The job row, not the notification, carries the payload (`pg_notify` payloads
//!   are capped at 8 kB; a check's config can be larger).
//!
//! Every failure ends as everywhere else for remote checks: the region reports nothing for that
//! cycle (a lost signal or a dead node costs one report, never a false DOWN), and the waiting
//! node removes the job when its deadline passes. On SQLite there is one node: no relay.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tocsin_checks::Outcome;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::protocol::{Job, WireOutcome};
use super::registry::{RegionView, Registry};
use crate::cluster::listen::{Heard, Subscription};
use crate::ids::new_id;
use crate::store::probe_relay::{self, NewJob};
use crate::store::Db;

/// The PostgreSQL notification channel of relay signals.
pub const CHANNEL: &str = "tocsin_probe_relay";
/// How often a node refreshes its presence and reads the others'.
pub const ADVERTISE_EVERY: Duration = Duration::from_secs(3);
/// How long an advertisement counts without a refresh.
pub const PRESENCE_FRESH: Duration = Duration::from_secs(15);

/// What a notification says: "job `id` is for you" or "the answer to your job `id` is in".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Signal {
    to: String,
    id: String,
    answer: bool,
}

/// This node's side of the relay.
#[derive(Debug)]
pub struct Relay {
    node_id: String,
    db: Db,
    /// Jobs this node relayed, waiting for their answers.
    waiting: Mutex<HashMap<String, oneshot::Sender<Option<Outcome>>>>,
    /// The other nodes' live probes, by region, as last read.
    others: Mutex<BTreeMap<String, Vec<Holder>>>,
    turn: AtomicUsize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    node_id: String,
    probes: Vec<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Wall-clock milliseconds: presence and deadlines are compared across machines, so they use
/// the real clock, never a test's driven one.
fn wall_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Relay {
    pub fn new(node_id: &str, db: Db) -> Relay {
        Relay {
            node_id: node_id.to_string(),
            db,
            waiting: Mutex::new(HashMap::new()),
            others: Mutex::new(BTreeMap::new()),
            turn: AtomicUsize::new(0),
        }
    }

    /// Whether another node holds a live probe of `region`.
    pub fn is_live_elsewhere(&self, region: &str) -> bool {
        lock(&self.others)
            .get(region)
            .is_some_and(|holders| !holders.is_empty())
    }

    /// The other nodes' live probes per region (names only). An advertisement's time is when
    /// the holding node wrote it, not when its probe was heard: that time reaches `GET
    /// /regions` through the probe key's stored `last_seen_at`, which the holding node sets
    /// from the probe's own frames.
    pub fn elsewhere(&self) -> BTreeMap<String, RegionView> {
        lock(&self.others)
            .iter()
            .map(|(region, holders)| {
                let view = RegionView {
                    probes: holders.iter().flat_map(|h| h.probes.clone()).collect(),
                    last_seen_ms: None,
                };
                (region.clone(), view)
            })
            .collect()
    }

    /// Runs `job` once on a probe of `region` held by another node; `None` when no node
    /// holds one, or no answer came within `wait`.
    pub async fn dispatch(&self, region: &str, job: &Job, wait: Duration) -> Option<Outcome> {
        let to = self.pick(region)?;
        // The holder gives the job an id of its own connection's numbering.
        let job = serde_json::to_string(job).ok()?;
        let id = new_id();
        let now = wall_ms();
        let (reply, answer) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), reply);
        let sent = async {
            probe_relay::insert_job(
                self.db.writer(),
                &NewJob {
                    id: &id,
                    from_node: &self.node_id,
                    to_node: &to,
                    region,
                    job: &job,
                    deadline_at: now.saturating_add(millis(wait)),
                    now,
                },
            )
            .await?;
            signal(&self.db, &to, &id, false).await
        };
        let outcome = match sent.await {
            Ok(()) => tokio::time::timeout(wait, answer)
                .await
                .ok()
                .and_then(Result::ok),
            Err(e) => {
                tracing::warn!(%region, node = %to, error = %e, "could not relay a check");
                None
            }
        };
        if lock(&self.waiting).remove(&id).is_some() {
            // No answer came: the job row is this node's to remove.
            let _ = probe_relay::take(self.db.writer(), &id, &self.node_id).await;
        }
        outcome.flatten()
    }

    /// The next node holding `region`, in turn.
    fn pick(&self, region: &str) -> Option<String> {
        let others = lock(&self.others);
        let holders = others.get(region).filter(|h| !h.is_empty())?;
        let i = self.turn.fetch_add(1, Ordering::Relaxed) % holders.len();
        Some(holders[i].node_id.clone())
    }

    /// Publishes this node's live regions and reads the other nodes'.
    async fn advertise(&self, registry: &Registry) -> Result<(), sqlx::Error> {
        let now = wall_ms();
        let mine: Vec<(String, String)> = registry
            .snapshot()
            .into_iter()
            .filter(|(_, v)| !v.probes.is_empty())
            .map(|(region, v)| {
                let names = serde_json::to_string(&v.probes).unwrap_or_else(|_| "[]".into());
                (region, names)
            })
            .collect();
        probe_relay::advertise(&self.db, &self.node_id, &mine, now).await?;
        let rows = probe_relay::others(
            self.db.reader(),
            &self.node_id,
            now - millis(PRESENCE_FRESH),
        )
        .await?;
        let mut others: BTreeMap<String, Vec<Holder>> = BTreeMap::new();
        for row in rows {
            others.entry(row.region.clone()).or_default().push(Holder {
                probes: row.names(),
                node_id: row.node_id,
            });
        }
        *lock(&self.others) = others;
        Ok(())
    }

    /// Another node's job for this one: run it on a local probe and send the answer back.
    async fn serve_job(&self, registry: &Registry, id: &str) -> Result<(), sqlx::Error> {
        let Some(row) = probe_relay::job_for(self.db.reader(), id, &self.node_id).await? else {
            return Ok(());
        };
        let left = row.deadline_at.saturating_sub(wall_ms());
        let outcome = match serde_json::from_str::<Job>(&row.job) {
            Ok(job) if left > 0 => {
                let wait = Duration::from_millis(u64::try_from(left).unwrap_or(0));
                registry.dispatch(&row.region, job, wait).await
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable relayed job ignored");
                None
            }
        };
        let result = serde_json::to_string(&outcome.map(WireOutcome::from))
            .unwrap_or_else(|_| "null".into());
        if probe_relay::answer(self.db.writer(), id, &result).await? {
            signal(&self.db, &row.from_node, id, true).await?;
        }
        Ok(())
    }

    /// The answer to a job this node relayed is in: hand it to the waiting check.
    async fn take_answer(&self, id: &str) -> Result<(), sqlx::Error> {
        let Some(reply) = lock(&self.waiting).remove(id) else {
            return Ok(());
        };
        let answer = probe_relay::take(self.db.writer(), id, &self.node_id).await?;
        let outcome = answer
            .flatten()
            .and_then(|text| serde_json::from_str::<Option<WireOutcome>>(&text).ok())
            .flatten()
            .map(Outcome::from);
        let _ = reply.send(outcome);
        Ok(())
    }
}

async fn signal(db: &Db, to: &str, id: &str, answer: bool) -> Result<(), sqlx::Error> {
    let payload = serde_json::to_string(&Signal {
        to: to.to_string(),
        id: id.to_string(),
        answer,
    })
    .unwrap_or_default();
    // `pg_notify` returns `void`, which the `Any` driver cannot decode: select a number.
    sqlx::query("SELECT 1 FROM (SELECT pg_notify($1, $2)) AS sent")
        .bind(CHANNEL)
        .bind(payload)
        .execute(db.writer())
        .await?;
    Ok(())
}

/// Keeps this node's presence current and serves the relay signals `sub` hears (a
/// subscription to [`CHANNEL`] on this node's listening connection) for the probes of
/// `probes` until `cancel`; then withdraws the presence so the scheduling node stops relaying
/// here at once. Runs on PostgreSQL only (there is no relay on SQLite).
pub async fn run(
    relay: Arc<Relay>,
    probes: Arc<Registry>,
    sub: Subscription,
    cancel: CancellationToken,
) {
    let presence = {
        let (relay, probes, cancel) = (relay.clone(), probes.clone(), cancel.clone());
        tokio::spawn(async move {
            loop {
                if let Err(e) = relay.advertise(&probes).await {
                    tracing::warn!(error = %e, "could not advertise this node's probes");
                }
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(ADVERTISE_EVERY) => {}
                    _ = probes.changed() => {}
                }
            }
            let _ = probe_relay::advertise(&relay.db, &relay.node_id, &[], wall_ms()).await;
        })
    };
    serve(&relay, &probes, sub, &cancel).await;
    let _ = presence.await;
}

/// Serves the signals addressed to this node. A signal lost while the connection was down
/// costs its check one report, as any lost signal does: nothing to resynchronize.
async fn serve(
    relay: &Arc<Relay>,
    probes: &Arc<Registry>,
    mut sub: Subscription,
    cancel: &CancellationToken,
) {
    let mut purged_at = tokio::time::Instant::now();
    loop {
        let heard = tokio::select! {
            _ = cancel.cancelled() => return,
            h = sub.recv() => match h {
                Some(h) => h,
                None => return,
            },
        };
        let Heard::Payload(payload) = heard else {
            continue;
        };
        let Ok(s) = serde_json::from_str::<Signal>(&payload) else {
            continue;
        };
        if s.to != relay.node_id {
            continue;
        }
        let (job_relay, probes) = (relay.clone(), probes.clone());
        tokio::spawn(async move {
            let relay = job_relay;
            let done = if s.answer {
                relay.take_answer(&s.id).await
            } else {
                relay.serve_job(&probes, &s.id).await
            };
            if let Err(e) = done {
                tracing::warn!(error = %e, "relayed check failed");
            }
        });
        // Jobs whose sender died before removing them.
        if purged_at.elapsed() > Duration::from_secs(60) {
            purged_at = tokio::time::Instant::now();
            let _ = probe_relay::purge(relay.db.writer(), wall_ms() - 60_000).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_round_trip() {
        let s = Signal {
            to: "n1".into(),
            id: "j".into(),
            answer: true,
        };
        let text = serde_json::to_string(&s).unwrap_or_default();
        assert_eq!(serde_json::from_str::<Signal>(&text).ok(), Some(s));
    }
}
