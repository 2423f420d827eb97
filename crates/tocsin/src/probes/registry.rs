//! The live probe connections of this server process, by region, and dispatching jobs to them.
//!
//! Each connection ((`http::probe_socket`)) registers a session with a job channel and stays
//! registered until its [`SessionGuard`] drops. [`Registry::dispatch`] picks the region's
//! sessions in turn, hands one a job with a reply slot, and waits for the reply until the
//! deadline. The session keeps reply slots until the probe answers; when the connection ends
//! they drop, so a waiting dispatch learns at once that no answer will come. Every path without
//! an answer returns `None`: the region reports nothing for that cycle.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tocsin_checks::Outcome;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::protocol::Job;

/// Jobs queued per connection before dispatches to it are refused.
const SESSION_QUEUE: usize = 4096;

/// A job on its way to a probe, with the slot its result goes to.
#[derive(Debug)]
pub struct Dispatched {
    pub job: Job,
    pub reply: oneshot::Sender<Option<Outcome>>,
}

#[derive(Debug)]
struct Session {
    id: u64,
    name: String,
    jobs: mpsc::Sender<Dispatched>,
}

#[derive(Debug, Default)]
struct Region {
    sessions: Vec<Session>,
    /// Which session the next job goes to.
    turn: usize,
    last_seen_ms: Option<i64>,
}

#[derive(Debug, Default)]
pub struct Registry {
    regions: Mutex<HashMap<String, Region>>,
    next_id: AtomicU64,
    closing: CancellationToken,
    /// Fires when a connection registers or leaves (the relay advertises the change).
    changes: tokio::sync::Notify,
    /// The server's `--checks-deny-private-addresses`, stamped on every job sent to a probe.
    deny_private_addresses: bool,
}

/// What one region looks like right now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegionView {
    /// Names of the connected probes (one per connection).
    pub probes: Vec<String>,
    /// When a probe of the region last connected or answered, in this process.
    pub last_seen_ms: Option<i64>,
}

/// Keeps a session registered; dropping it removes the session.
#[derive(Debug)]
pub struct SessionGuard<'a> {
    registry: &'a Registry,
    region: String,
    id: u64,
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        self.registry.with(|regions| {
            if let Some(r) = regions.get_mut(&self.region) {
                r.sessions.retain(|s| s.id != self.id);
            }
        });
        self.registry.changes.notify_waiters();
    }
}

impl Registry {
    /// A registry whose jobs carry the server's address policy.
    pub fn with_deny_private_addresses(mut self, deny: bool) -> Registry {
        self.deny_private_addresses = deny;
        self
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Region>) -> T) -> T {
        match self.regions.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// A fresh id for a job or a session.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Registers a connection of probe `name` in `region` seen at `now_ms`; returns its guard
    /// and the channel its jobs arrive on.
    pub fn register(
        &self,
        region: &str,
        name: &str,
        now_ms: i64,
    ) -> (SessionGuard<'_>, mpsc::Receiver<Dispatched>) {
        let (tx, rx) = mpsc::channel(SESSION_QUEUE);
        let id = self.next_id();
        self.with(|regions| {
            let r = regions.entry(region.to_string()).or_default();
            r.sessions.push(Session {
                id,
                name: name.to_string(),
                jobs: tx,
            });
            r.last_seen_ms = Some(now_ms);
        });
        self.changes.notify_waiters();
        let guard = SessionGuard {
            registry: self,
            region: region.to_string(),
            id,
        };
        (guard, rx)
    }

    /// Resolves at the next connection that registers or leaves.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changes.notified()
    }

    /// A probe of `region` answered at `now_ms`.
    pub fn seen(&self, region: &str, now_ms: i64) {
        self.with(|regions| {
            if let Some(r) = regions.get_mut(region) {
                r.last_seen_ms = Some(r.last_seen_ms.map_or(now_ms, |t| t.max(now_ms)));
            }
        });
    }

    /// Every region a probe has connected to since this process started.
    pub fn snapshot(&self) -> BTreeMap<String, RegionView> {
        self.with(|regions| {
            regions
                .iter()
                .map(|(name, r)| {
                    let view = RegionView {
                        probes: r.sessions.iter().map(|s| s.name.clone()).collect(),
                        last_seen_ms: r.last_seen_ms,
                    };
                    (name.clone(), view)
                })
                .collect()
        })
    }

    pub fn is_live(&self, region: &str) -> bool {
        self.with(|regions| regions.get(region).is_some_and(|r| !r.sessions.is_empty()))
    }

    /// Runs `job` once on a live probe of `region` connected here; `None` when there is
    /// no such probe, the connection drops, the probe could not run it, or `deadline` passes
    /// first. The job gets an id of this process's numbering (a relayed job was numbered by
    /// the node that built it).
    pub async fn dispatch(
        &self,
        region: &str,
        mut job: Job,
        deadline: Duration,
    ) -> Option<Outcome> {
        job.id = self.next_id();
        // The policy of the node holding the probe, which is the cluster's (one configuration).
        job.deny_private_addresses = self.deny_private_addresses;
        let jobs = self.with(|regions| {
            let r = regions.get_mut(region)?;
            if r.sessions.is_empty() {
                return None;
            }
            let i = r.turn % r.sessions.len();
            r.turn = r.turn.wrapping_add(1);
            Some(r.sessions[i].jobs.clone())
        })?;
        let (reply, answer) = oneshot::channel();
        let exchange = async move {
            jobs.send(Dispatched { job, reply }).await.ok()?;
            answer.await.ok()?
        };
        tokio::time::timeout(deadline, exchange).await.ok()?
    }

    /// Fires when the server shuts down: every connection closes.
    pub fn closing(&self) -> &CancellationToken {
        &self.closing
    }

    pub fn close_all(&self) {
        self.closing.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_register_and_leave() {
        let r = Registry::default();
        assert!(!r.is_live("eu"));
        let (g1, _rx1) = r.register("eu", "a", 10);
        let (g2, _rx2) = r.register("eu", "b", 20);
        assert!(r.is_live("eu"));
        assert_eq!(r.snapshot()["eu"].probes, vec!["a", "b"]);
        drop(g1);
        assert_eq!(r.snapshot()["eu"].probes, vec!["b"]);
        drop(g2);
        assert!(!r.is_live("eu"));
        // The region stays listed, with when it was last seen.
        assert_eq!(r.snapshot()["eu"].last_seen_ms, Some(20));
        r.seen("eu", 15);
        assert_eq!(r.snapshot()["eu"].last_seen_ms, Some(20));
    }
}
