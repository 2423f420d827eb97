//! The application core every worker and domain operation gets: configuration, the
//! database, the clock, this node's id, the change feed, the scheduler role, the heartbeat
//! writer, the on-demand checks in flight, the probes, the push-token map and the API-key
//! cache, the mailer, the notification delivery queue. Cheap to clone (one `Arc`). What only
//! the HTTP edge needs (rate limiters, the current-workspace cache, the monitor list builds)
//! lives in `http::AppState`, which wraps this.

use std::sync::Arc;

use crate::auth::key_cache::KeyCache;
use crate::clock::{SharedClock, SystemClock};
use crate::cluster::feed::Feed;
use crate::cluster::lease::Role;
use crate::config::Config;
use crate::mail::Mailer;
use crate::monitoring::heartbeats::{HeartbeatWriter, WriterOptions};
use crate::monitoring::on_demand::OnDemandChecks;
use crate::monitoring::sched_stats::SchedulerStats;
use crate::monitoring::scheduler::Checks;
use crate::probes::Registry;
use crate::push::tokens::PushTokens;
use crate::store::Db;
use crate::telemetry::Metrics;

#[derive(Clone)]
pub struct Core(Arc<Inner>);

struct Inner {
    config: Config,
    db: Db,
    clock: SharedClock,
    keys: KeyCache,
    oauth_tokens: crate::auth::oauth::TokenCache,
    mailer: Option<Mailer>,
    metrics: Metrics,
    link_secret: Vec<u8>,
    alert_links: crate::alerting::ack_link::Links,
    node_id: String,
    feed: Feed,
    scheduler_role: Role,
    heartbeats: HeartbeatWriter,
    checks: Checks,
    push_tokens: PushTokens,
    probes: Registry,
    relay: Option<crate::probes::relay::Relay>,
    scheduler_stats: SchedulerStats,
    check_stats: crate::monitoring::check_stats::CheckStats,
    on_demand: OnDemandChecks,
    deliveries: crate::alerting::deliver::DeliveryQueue,
    status_pages: crate::public::cache::PageCache,
    live: crate::live::Hub,
    judging: tokio_util::sync::CancellationToken,
}

impl Core {
    /// Builds the state over an open, migrated database.
    pub async fn new(config: Config, db: Db, clock: Option<SharedClock>) -> anyhow::Result<Core> {
        let fresh = crate::auth::secrets::generate("");
        let link_secret =
            crate::store::workspaces::server_secret(&db, "link_signing", &fresh).await?;
        let mailer = match &config.smtp {
            Some(smtp) => Some(Mailer::new(smtp)?),
            None => None,
        };
        let db_for_writer = db.clone();
        let alert_links =
            crate::alerting::ack_link::Links::new(config.public_url.as_str(), &link_secret);
        let deliveries =
            crate::alerting::deliver::DeliveryQueue::new(config.notify_deny_private_addresses);
        let live = crate::live::Hub::new(config.stream_limits());
        let writer_options = WriterOptions {
            alert_links: alert_links.clone(),
            wake_deliveries: Some(deliveries.waker()),
            live: Some(live.clone()),
            ..WriterOptions::default()
        };
        let node_id = crate::cluster::new_node_id();
        let shared = db.backend() == crate::store::Backend::Postgres;
        Ok(Core(Arc::new(Inner {
            checks: Checks::new(config.max_in_flight_checks).with_address_policy(
                tocsin_checks::AddressPolicy::deny_private(config.checks_deny_private_addresses),
            ),
            probes: Registry::default()
                .with_deny_private_addresses(config.checks_deny_private_addresses),
            relay: shared.then(|| crate::probes::relay::Relay::new(&node_id, db.clone())),
            scheduler_stats: SchedulerStats::new(),
            check_stats: Default::default(),
            on_demand: OnDemandChecks::default(),
            deliveries,
            status_pages: Default::default(),
            live,
            judging: Default::default(),
            config,
            db,
            clock: clock.unwrap_or_else(|| Arc::new(SystemClock)),
            keys: KeyCache::default(),
            oauth_tokens: Default::default(),
            mailer,
            metrics: Metrics::global(),
            link_secret,
            alert_links,
            feed: Feed::new(&node_id, shared),
            node_id,
            scheduler_role: Role::default(),
            heartbeats: HeartbeatWriter::start(db_for_writer, writer_options),
            push_tokens: PushTokens::default(),
        })))
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
    pub fn keys(&self) -> &KeyCache {
        &self.0.keys
    }
    /// OAuth access tokens in memory (see [`crate::auth::oauth::cache`]).
    pub fn oauth_tokens(&self) -> &crate::auth::oauth::TokenCache {
        &self.0.oauth_tokens
    }
    /// The rendered public status pages (see [`crate::public::cache`]).
    pub fn status_pages(&self) -> &crate::public::cache::PageCache {
        &self.0.status_pages
    }
    pub fn push_tokens(&self) -> &PushTokens {
        &self.0.push_tokens
    }
    pub fn mailer(&self) -> Option<&Mailer> {
        self.0.mailer.as_ref()
    }
    pub fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }
    /// The group-commit writer every check result goes through.
    pub fn heartbeats(&self) -> &HeartbeatWriter {
        &self.0.heartbeats
    }
    /// The built-in probe's concurrency bound and one-run-per-monitor guard.
    pub fn checks(&self) -> &Checks {
        &self.0.checks
    }
    /// The live remote-probe connections (see [`crate::probes`]).
    pub fn probes(&self) -> &Registry {
        &self.0.probes
    }
    /// Checks relayed to probes connected to other nodes (PostgreSQL only; see
    /// [`crate::probes::relay`]).
    pub fn relay(&self) -> Option<&crate::probes::relay::Relay> {
        self.0.relay.as_ref()
    }
    /// The accepted on-demand checks still running (see [`crate::monitoring::on_demand`]).
    pub fn on_demand(&self) -> &OnDemandChecks {
        &self.0.on_demand
    }
    /// The scheduler's start lateness and schedule size.
    /// Per-monitor check figures for `/metrics`.
    pub fn check_stats(&self) -> &crate::monitoring::check_stats::CheckStats {
        &self.0.check_stats
    }

    pub fn scheduler_stats(&self) -> &SchedulerStats {
        &self.0.scheduler_stats
    }
    pub fn link_secret(&self) -> &[u8] {
        &self.0.link_secret
    }
    /// The links alert notifications carry (one-click acknowledge, the alert's address).
    pub fn alert_links(&self) -> &crate::alerting::ack_link::Links {
        &self.0.alert_links
    }
    /// The live streams' fan-out on this node (see [`crate::live`]).
    pub fn live(&self) -> &crate::live::Hub {
        &self.0.live
    }
    /// The change feed (see [`crate::cluster::feed`]).
    pub fn feed(&self) -> &Feed {
        &self.0.feed
    }

    /// Announces a committed change (call it after the commit): this process's caches (API
    /// keys, push tokens) apply it at once, before the caller answers, so a revoked key or a
    /// replaced token is refused by the very next request; then the feed carries it to this
    /// process's other followers and to every other node.
    pub fn announce(&self, notice: crate::cluster::feed::Notice) {
        self.keys().apply(&notice);
        self.oauth_tokens().apply(&notice);
        self.push_tokens().apply(&notice);
        self.status_pages().apply(&notice);
        self.0.feed.announce(notice);
    }

    /// [`Core::announce`] of a monitor change.
    pub fn announce_monitor(&self, monitor_id: &str, kind: crate::cluster::feed::ChangeKind) {
        self.announce(crate::cluster::feed::Notice::Monitor(
            crate::cluster::feed::MonitorChange {
                monitor_id: monitor_id.to_string(),
                kind,
            },
        ));
    }
    /// The notification outbox's wake-up and outbound client (see [`crate::alerting::deliver`]).
    pub fn delivery_queue(&self) -> &crate::alerting::deliver::DeliveryQueue {
        &self.0.deliveries
    }

    /// Tells this node's delivery worker that notifications were enqueued (call after the
    /// commit): they go out at once instead of at the next poll.
    pub fn wake_deliveries(&self) {
        self.0.deliveries.wake();
    }

    /// This process's id among the nodes sharing the database.
    pub fn node_id(&self) -> &str {
        &self.0.node_id
    }
    /// Cancelled when a graceful shutdown begins: from then on nothing is judged here (no
    /// scheduled run starts, a check finishing later steps no state machine, no push deadline
    /// is judged), so a server going away pages no one.
    pub fn judging(&self) -> &tokio_util::sync::CancellationToken {
        &self.0.judging
    }
    /// Whether this node runs the scheduler's slots and the push watcher's judgments (see
    /// [`crate::cluster::lease`]).
    pub fn scheduler_role(&self) -> &Role {
        &self.0.scheduler_role
    }
}
