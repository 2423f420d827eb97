//! The change feed: notices of committed writes that in-memory state must follow, delivered to
//! subscribers on every node that shares the database.
//!
//! Every API write that changes what a worker or a cache holds publishes a [`Notice`] after
//! its transaction commits: a monitor created, updated (including a DNS_DIFF baseline reset),
//! deleted, paused or resumed (the scheduler and the push watcher reload that one monitor); a
//! push token regenerated (the token map forgets the monitor's entry); an API key revoked,
//! rotated or updated (the key cache forgets it); a workspace's membership changed (the key
//! cache forgets that workspace's keys); a monitor's maintenance windows changed (the
//! maintenance engine reloads them). A node with live streams also announces which
//! workspaces it streams ([`Notice::Streaming`], not a write: a lease other nodes' heartbeat
//! relays follow). [`Notice::Resync`] means "you may have missed
//! notices": subscribers reload or clear everything.
//!
//! Locally the feed is a bounded `tokio::sync::broadcast` channel, best-effort by design: a
//! subscriber that falls behind gets `RecvError::Lagged` and treats it as a `Resync` (the
//! store, not the feed, is the source of truth). Publishing never blocks and never fails a
//! request, even with no subscriber.
//!
//! On PostgreSQL, each notice is also queued for [`run_outbox`], which sends it with
//! `pg_notify` on [`CHANNEL`] tagged with this node's id, in publishing order; each node's
//! [`run_listener`] (a subscription on the node's one listening connection,
//! [`super::listen`]) re-broadcasts what other nodes sent into its local channel and ignores
//! its own echoes (delivered locally already). Whenever that connection (re)connects it emits
//! `Resync`, since notices sent while it was away are lost. What can
//! still go missing (a `pg_notify` that fails right after its commit) is caught by the
//! reconciliation scan of the scheduler and the watcher ([`super::inventory`]), by the key
//! cache's time limit, and by the next `Resync`. On SQLite (one node) the feed stays in process.
//!
//! In-memory caches follow the feed through [`Applier`]s the composition root registers
//! ([`Feed::register`]): [`Feed::announce`] runs them before the notice goes anywhere else, so
//! this process's own writes take effect before the request answers, and [`run_appliers`]
//! runs them on every other node's notice (a lagged subscription counting as a `Resync`).
//! The feed knows no cache: it only keeps the list.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::listen::{Heard, Subscription};
use crate::store::Db;

/// How many notices a slow subscriber may fall behind before it must reload everything.
const CAPACITY: usize = 1024;

/// The PostgreSQL notification channel (per database: clusters on other databases of the same
/// server never hear each other).
pub const CHANNEL: &str = "tocsin_feed";

/// What happened to a monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    /// Settings changed (including a DNS_DIFF baseline reset): reload the row.
    Updated,
    Deleted,
    Paused,
    Resumed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorChange {
    pub monitor_id: String,
    pub kind: ChangeKind,
}

/// One committed change that in-memory state may have to follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Notice {
    Monitor(MonitorChange),
    /// A push monitor's token was replaced: forget the monitor's token entry.
    PushTokenRegenerated {
        monitor_id: String,
    },
    /// An API key was revoked, rotated or updated: forget it.
    ApiKeyChanged {
        key_id: String,
    },
    /// A member joined, left or changed role: forget the workspace's keys.
    MembershipChanged {
        workspace_id: String,
    },
    /// A maintenance window of this monitor was created, edited or deleted: the maintenance
    /// engine on the scheduling node reloads the monitor's windows.
    MaintenanceChanged {
        monitor_id: String,
    },
    /// What a status page shows changed (the page, its components, an incident, a postmortem):
    /// every node drops its rendered copy of the page.
    StatusPageChanged {
        page_id: String,
    },
    /// An OAuth grant was revoked (by its person, the revocation endpoint, or a reused
    /// refresh token): forget its access tokens.
    OAuthGrantRevoked {
        grant_id: String,
    },
    /// The sending node has live streams of these workspaces open: relay their heartbeats to
    /// it for a while (see [`crate::live::relay`]).
    Streaming {
        workspaces: Vec<String>,
    },
    /// Notices may have been missed: reload or clear everything.
    Resync,
}

/// A notice as a subscriber receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub notice: Notice,
    /// True when another node published it (or the listener emitted a `Resync`): a write this
    /// process did not answer itself.
    pub remote: bool,
}

/// The notification payload: the notice and the node that sent it.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    node: String,
    #[serde(flatten)]
    notice: Notice,
}

/// Something in memory that follows committed changes (a cache forgetting what a notice
/// names, clearing itself on a `Resync`). Must be quick and must not block: it runs inside
/// [`Feed::announce`], on the announcing request's path.
pub trait Applier: Send + Sync {
    fn apply(&self, notice: &Notice);
}

impl<F: Fn(&Notice) + Send + Sync> Applier for F {
    fn apply(&self, notice: &Notice) {
        self(notice)
    }
}

/// The feed. Cheap to clone.
#[derive(Clone)]
pub struct Feed(Arc<Inner>);

struct Inner {
    node_id: String,
    all: broadcast::Sender<Delivery>,
    /// Monitor changes alone, from every node (what [`Feed::subscribe`] hands out).
    monitors: broadcast::Sender<MonitorChange>,
    /// Notices for other nodes, when the database is shared (PostgreSQL).
    outbox: Option<mpsc::UnboundedSender<Notice>>,
    outbox_rx: Mutex<Option<mpsc::UnboundedReceiver<Notice>>>,
    /// What follows every notice, this node's own included (see [`Applier`]).
    appliers: RwLock<Vec<Arc<dyn Applier>>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("node_id", &self.0.node_id)
            .field("shared", &self.0.outbox.is_some())
            .finish()
    }
}

impl Feed {
    /// A feed for node `node_id`; `shared` when other nodes use the same database.
    pub fn new(node_id: &str, shared: bool) -> Feed {
        let (all, _) = broadcast::channel(CAPACITY);
        let (monitors, _) = broadcast::channel(CAPACITY);
        let (outbox, outbox_rx) = if shared {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        Feed(Arc::new(Inner {
            node_id: node_id.to_string(),
            all,
            monitors,
            outbox,
            outbox_rx: Mutex::new(outbox_rx),
            appliers: RwLock::new(Vec::new()),
        }))
    }

    pub fn node_id(&self) -> &str {
        &self.0.node_id
    }

    /// Announces a committed monitor change (see [`Feed::announce`]).
    pub fn publish(&self, monitor_id: &str, kind: ChangeKind) {
        self.announce(Notice::Monitor(MonitorChange {
            monitor_id: monitor_id.to_string(),
            kind,
        }));
    }

    /// Adds `applier` to what follows every notice: this node's own at [`Feed::announce`],
    /// other nodes' in [`run_appliers`].
    pub fn register(&self, applier: Arc<dyn Applier>) {
        self.0
            .appliers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(applier);
    }

    /// Runs every registered applier on `notice`.
    pub fn apply(&self, notice: &Notice) {
        let appliers = self.0.appliers.read().unwrap_or_else(|p| p.into_inner());
        for a in appliers.iter() {
            a.apply(notice);
        }
    }

    /// Announces a committed change: the registered appliers follow it at once (before the
    /// caller answers, so a revoked key is refused by the very next request), then this
    /// process's subscribers get it and it is queued for every other node. Call it after the
    /// commit.
    pub fn announce(&self, notice: Notice) {
        self.apply(&notice);
        if let Some(outbox) = &self.0.outbox {
            let _ = outbox.send(notice.clone());
        }
        self.deliver(notice, false);
    }

    fn deliver(&self, notice: Notice, remote: bool) {
        if let Notice::Monitor(c) = &notice {
            let _ = self.0.monitors.send(c.clone());
        }
        let _ = self.0.all.send(Delivery { notice, remote });
    }

    /// Monitor changes published from now on, by any node.
    pub fn subscribe(&self) -> broadcast::Receiver<MonitorChange> {
        self.0.monitors.subscribe()
    }

    /// Every notice delivered from now on, by any node, and the listener's `Resync`s.
    pub fn subscribe_all(&self) -> broadcast::Receiver<Delivery> {
        self.0.all.subscribe()
    }

    fn take_outbox(&self) -> Option<mpsc::UnboundedReceiver<Notice>> {
        self.0
            .outbox_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// Runs the registered appliers on every notice from another node (and every `Resync`)
/// until `cancel`; a lagged subscription counts as a `Resync`. This node's own notices were
/// applied by [`Feed::announce`] before it answered.
pub async fn run_appliers(feed: Feed, cancel: CancellationToken) {
    use tokio::sync::broadcast::error::RecvError;
    let mut rx = feed.subscribe_all();
    loop {
        let notice = tokio::select! {
            _ = cancel.cancelled() => return,
            d = rx.recv() => match d {
                Ok(d) if !d.remote => continue,
                Ok(d) => d.notice,
                Err(RecvError::Lagged(_)) => Notice::Resync,
                Err(RecvError::Closed) => return,
            },
        };
        feed.apply(&notice);
    }
}

/// Sends this node's notices to the others, in order, until `cancel` (then what is queued
/// still goes out). Returns at once on an unshared feed or when already running.
pub async fn run_outbox(feed: Feed, db: Db, cancel: CancellationToken) {
    let Some(mut rx) = feed.take_outbox() else {
        return;
    };
    loop {
        let notice = tokio::select! {
            _ = cancel.cancelled() => break,
            n = rx.recv() => match n {
                Some(n) => n,
                None => return,
            },
        };
        send(&feed, &db, notice).await;
    }
    while let Ok(notice) = rx.try_recv() {
        send(&feed, &db, notice).await;
    }
}

async fn send(feed: &Feed, db: &Db, notice: Notice) {
    let wire = Wire {
        node: feed.node_id().to_string(),
        notice,
    };
    let payload = match serde_json::to_string(&wire) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "could not encode a notice");
            return;
        }
    };
    for attempt in 0..3u64 {
        // `pg_notify` returns `void`, which the `Any` driver cannot decode: select a number.
        let sent = sqlx::query("SELECT 1 FROM (SELECT pg_notify($1, $2)) AS sent")
            .bind(CHANNEL)
            .bind(&payload)
            .execute(db.writer())
            .await;
        match sent {
            Ok(_) => return,
            Err(e) if attempt < 2 => {
                tracing::debug!(error = %e, "notice not sent; retrying");
                tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
            }
            Err(e) => {
                // The other nodes' reconciliation scans and key time limits bound the damage.
                tracing::warn!(error = %e, notice = ?wire.notice, "notice not sent to other nodes");
            }
        }
    }
}

/// Re-broadcasts here the notices other nodes send, as `sub` (a subscription to [`CHANNEL`] on
/// this node's [`Listener`](super::listen::Listener)) hears them, until `cancel`. Emits
/// [`Notice::Resync`] whenever the listening connection is (re)established.
pub async fn run_listener(feed: Feed, mut sub: Subscription, cancel: CancellationToken) {
    loop {
        let heard = tokio::select! {
            _ = cancel.cancelled() => return,
            h = sub.recv() => match h {
                Some(h) => h,
                None => return,
            },
        };
        match heard {
            // Whatever was sent while nobody listened is lost.
            Heard::Listening => feed.deliver(Notice::Resync, true),
            Heard::Lost => {}
            Heard::Payload(p) => match serde_json::from_str::<Wire>(&p) {
                Ok(w) if w.node == feed.node_id() => {}
                Ok(w) => feed.deliver(w.notice, true),
                Err(e) => tracing::warn!(error = %e, "unreadable notice ignored"),
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_on_the_wire() {
        let notices = [
            Notice::Monitor(MonitorChange {
                monitor_id: "m".into(),
                kind: ChangeKind::Paused,
            }),
            Notice::PushTokenRegenerated {
                monitor_id: "m".into(),
            },
            Notice::ApiKeyChanged { key_id: "k".into() },
            Notice::MembershipChanged {
                workspace_id: "w".into(),
            },
            Notice::Streaming {
                workspaces: vec!["w".into(), "v".into()],
            },
            Notice::Resync,
        ];
        for notice in notices {
            let text = serde_json::to_string(&Wire {
                node: "n".into(),
                notice: notice.clone(),
            })
            .unwrap();
            let back: Wire = serde_json::from_str(&text).unwrap();
            assert_eq!(back.node, "n");
            assert_eq!(back.notice, notice);
        }
    }

    #[test]
    fn registered_appliers_follow_announced_notices() {
        let feed = Feed::new("n", false);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        feed.register(Arc::new(move |n: &Notice| {
            s.lock().unwrap().push(n.clone())
        }));
        feed.announce(Notice::ApiKeyChanged { key_id: "k".into() });
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Notice::ApiKeyChanged { key_id: "k".into() }]
        );
    }

    #[tokio::test]
    async fn local_subscribers_get_notices_and_monitor_changes_alone() {
        let feed = Feed::new("n", false);
        let mut all = feed.subscribe_all();
        let mut monitors = feed.subscribe();
        feed.announce(Notice::ApiKeyChanged { key_id: "k".into() });
        feed.publish("m", ChangeKind::Created);
        assert_eq!(
            all.recv().await.unwrap().notice,
            Notice::ApiKeyChanged { key_id: "k".into() }
        );
        let d = all.recv().await.unwrap();
        assert!(!d.remote);
        assert!(matches!(d.notice, Notice::Monitor(_)));
        assert_eq!(monitors.recv().await.unwrap().kind, ChangeKind::Created);
        assert!(monitors.try_recv().is_err());
    }
}
