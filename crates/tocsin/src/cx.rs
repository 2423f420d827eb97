//! The context every operation below the HTTP edge is handed: the configuration, the
//! database, the clock, the change feed (which also names this node), the installation's
//! link-signing secret (the links made from it live with what they link to, e.g.
//! `alerting::ack_link::Links::of`) and the delivery worker's wake-up bell. Nothing else: an
//! operation that needs an engine (the heartbeat writer, the delivery queue, the probes...)
//! takes that engine's handle as a further argument. Cheap to clone (one `Arc`).

use std::sync::Arc;

use tokio::sync::Notify;

use crate::clock::SharedClock;
use crate::cluster::feed::{ChangeKind, Feed, MonitorChange, Notice};
use crate::config::Config;
use crate::store::Db;

#[derive(Clone)]
pub struct Cx(Arc<Inner>);

struct Inner {
    config: Config,
    db: Db,
    clock: SharedClock,
    feed: Feed,
    link_secret: Vec<u8>,
    deliveries_queued: Arc<Notify>,
}

impl std::fmt::Debug for Cx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx").field("feed", &self.0.feed).finish()
    }
}

impl Cx {
    /// The context over an open database; `link_secret` is the installation's secret for
    /// signed links (see [`crate::store::workspaces::server_secret`]).
    pub fn new(config: Config, db: Db, clock: SharedClock, feed: Feed, link_secret: Vec<u8>) -> Cx {
        Cx(Arc::new(Inner {
            link_secret,
            config,
            db,
            clock,
            feed,
            deliveries_queued: Arc::new(Notify::new()),
        }))
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }
    pub fn db(&self) -> &Db {
        &self.0.db
    }
    pub fn clock(&self) -> &SharedClock {
        &self.0.clock
    }
    /// The change feed (see [`crate::cluster::feed`]).
    pub fn feed(&self) -> &Feed {
        &self.0.feed
    }
    /// The installation's secret for signed links (unsubscribe, private-page grants).
    pub fn link_secret(&self) -> &[u8] {
        &self.0.link_secret
    }
    /// This process's id among the nodes sharing the database.
    pub fn node_id(&self) -> &str {
        self.0.feed.node_id()
    }

    /// Announces a committed change (call it after the commit): the appliers registered on
    /// the feed (API keys, OAuth tokens, push tokens, rendered pages) apply it at once, before
    /// the caller answers, so a revoked key or a replaced token is refused by the very next
    /// request; then the feed carries it to this process's other followers and to every
    /// other node.
    pub fn announce(&self, notice: Notice) {
        self.0.feed.announce(notice);
    }

    /// Tells this node's delivery worker that notifications were enqueued (call after the
    /// commit): they go out at once instead of at the next poll. Only this node's worker
    /// hears it: the outbox is shared through the database and every node's worker polls it
    /// anyway. The bell is a plain [`Notify`], so whatever holds the context can enqueue
    /// without a handle on the delivery engine.
    pub fn wake_deliveries(&self) {
        self.0.deliveries_queued.notify_one();
    }

    /// The bell [`Cx::wake_deliveries`] rings, for the delivery worker to wait on (and for
    /// writers that hold no context, such as the heartbeat writer's push transitions).
    pub fn deliveries_bell(&self) -> Arc<Notify> {
        Arc::clone(&self.0.deliveries_queued)
    }

    /// [`Cx::announce`] of a monitor change.
    pub fn announce_monitor(&self, monitor_id: &str, kind: ChangeKind) {
        self.announce(Notice::Monitor(MonitorChange {
            monitor_id: monitor_id.to_string(),
            kind,
        }));
    }
}
