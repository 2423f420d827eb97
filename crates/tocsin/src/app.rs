//! The engines of one node, built together: the context ([`Cx`]: configuration, database,
//! clock, change feed) plus the scheduler role, the heartbeat writer, the on-demand checks in
//! flight, the probes, the rendered status pages, the live hub, the mailer, the notification
//! delivery queue. Cheap to clone (one `Arc`). It derefs to the [`Cx`] while the engines move
//! out of it; what takes only the context takes `&Cx`. What only the HTTP edge needs (rate
//! limiters, the current-workspace cache, the monitor list builds) and the credential caches
//! the composition root builds (`server.rs`) live in `http::AppState`, which wraps this.

use std::ops::Deref;
use std::sync::Arc;

use crate::clock::{SharedClock, SystemClock};
use crate::cluster::feed::Feed;
use crate::cluster::lease::Role;
use crate::config::Config;
use crate::cx::Cx;
use crate::mail::Mailer;
use crate::monitoring::heartbeats::{HeartbeatWriter, WriterOptions};
use crate::monitoring::on_demand::OnDemandChecks;
use crate::monitoring::sched_stats::SchedulerStats;
use crate::monitoring::scheduler::Checks;
use crate::probes::Registry;
use crate::store::Db;
use crate::telemetry::Metrics;

#[derive(Clone)]
pub struct Core(Arc<Inner>);

struct Inner {
    cx: Cx,
    mailer: Option<Mailer>,
    metrics: Metrics,
    scheduler_role: Role,
    heartbeats: HeartbeatWriter,
    checks: Checks,
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
        let deliveries =
            crate::alerting::deliver::DeliveryQueue::new(config.notify_deny_private_addresses);
        let live = crate::live::Hub::new(config.stream_limits());
        let writer_options = WriterOptions {
            alert_links: crate::alerting::ack_link::Links::new(
                config.public_url.as_str(),
                &link_secret,
            ),
            wake_deliveries: Some(deliveries.waker()),
            live: Some(live.clone()),
            ..WriterOptions::default()
        };
        let node_id = crate::cluster::new_node_id();
        let shared = db.backend() == crate::store::Backend::Postgres;
        let feed = Feed::new(&node_id, shared);
        let status_pages = crate::public::cache::PageCache::default();
        // The rendered pages follow committed changes (see `Feed::register`).
        let pages = status_pages.clone();
        feed.register(Arc::new(move |n: &crate::cluster::feed::Notice| {
            pages.apply(n)
        }));
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
            status_pages,
            live,
            judging: Default::default(),
            cx: Cx::new(
                config,
                db,
                clock.unwrap_or_else(|| Arc::new(SystemClock)),
                feed,
                link_secret,
            ),
            mailer,
            metrics: Metrics::global(),
            scheduler_role: Role::default(),
            heartbeats: HeartbeatWriter::start(db_for_writer, writer_options),
        })))
    }

    /// The context below the HTTP edge (see [`crate::cx`]).
    pub fn cx(&self) -> &Cx {
        &self.0.cx
    }
    /// The rendered public status pages (see [`crate::public::cache`]).
    pub fn status_pages(&self) -> &crate::public::cache::PageCache {
        &self.0.status_pages
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
    /// The live streams' fan-out on this node (see [`crate::live`]).
    pub fn live(&self) -> &crate::live::Hub {
        &self.0.live
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

impl Deref for Core {
    type Target = Cx;
    fn deref(&self) -> &Cx {
        &self.0.cx
    }
}
