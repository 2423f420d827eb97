//! The state HTTP handlers get: the context ([`Cx`]) and the handles of the engines the edge
//! talks to (the check runner, the delivery queue, the live hub, the rendered pages, the
//! on-demand checks, the mailer, the metrics, billing), the credential caches the composition root
//! built and registered on the change feed (API keys, OAuth access tokens, push tokens), plus
//! what only the HTTP edge needs (rate limiters, the current-workspace cache, the builds of
//! `GET /monitors`). Each is reached by its own accessor: a handler names the engine it
//! talks to. The composition root (`server.rs`) builds every part ([`Handles`]).

use std::sync::Arc;

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::monitor_list::MonitorLists;
use crate::alerting::ack_link::Links;
use crate::alerting::deliver::DeliveryQueue;
use crate::auth::key_cache::KeyCache;
use crate::auth::oauth::TokenCache;
use crate::auth::rate_limit::Limiters;
use crate::auth::sso::Sso;
use crate::auth::TokenCaches;
use crate::billing::Billing;
use crate::cache::TtlCache;
use crate::clock::SharedClock;
use crate::cluster::feed::{Feed, Notice};
use crate::cluster::lease::Role;
use crate::config::Config;
use crate::cx::Cx;
use crate::domain::workspaces::CurrentWorkspace;
use crate::live::Hub;
use crate::mail::Mailer;
use crate::monitoring::heartbeats::HeartbeatWriter;
use crate::monitoring::on_demand::OnDemandChecks;
use crate::monitoring::runner::Runner;
use crate::monitoring::sched_stats::SchedulerStats;
use crate::probes::relay::Relay;
use crate::probes::Registry;
use crate::public::cache::PageCache;
use crate::push::tokens::PushTokens;
use crate::store::Db;
use crate::telemetry::Metrics;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The engines and caches the composition root (`server.rs`) built, as [`AppState::new`]
/// takes them.
pub struct Handles {
    pub cx: Cx,
    /// The links alert notifications carry (one-click acknowledge, the alert's address).
    pub alert_links: Links,
    /// What running a check needs (see [`crate::monitoring::runner`]).
    pub runner: Runner,
    pub tokens: TokenCaches,
    pub push_tokens: Arc<PushTokens>,
    /// The notification outbox's wake-up and outbound client (see [`crate::alerting::deliver`]).
    pub deliveries: DeliveryQueue,
    /// The SMTP relay, when one is configured.
    pub mailer: Option<Mailer>,
    /// The live streams' fan-out on this node (see [`crate::live`]).
    pub live: Hub,
    /// The rendered public status pages (see [`crate::public::cache`]).
    pub status_pages: PageCache,
    /// The accepted on-demand checks still running (see [`crate::monitoring::on_demand`]).
    pub on_demand: OnDemandChecks,
    pub metrics: Metrics,
    /// The billing engine (see [`crate::billing`]).
    pub billing: Billing,
    /// The single sign-on providers (see [`crate::auth::sso`]).
    pub sso: Arc<Sso>,
}

struct Inner {
    parts: Handles,
    limits: Limiters,
    workspaces: TtlCache<String, CurrentWorkspace>,
    monitor_lists: MonitorLists,
}

impl AppState {
    /// The edge's state over the engines and the credential caches the composition root built
    /// and registered on the change feed.
    pub fn new(parts: Handles) -> AppState {
        AppState(Arc::new(Inner {
            limits: Limiters::new(
                &parts.cx.config().rate_limits,
                crate::push::PUSH_RATE_PER_MINUTE,
            ),
            workspaces: TtlCache::new(5_000, 100_000),
            monitor_lists: MonitorLists::default(),
            parts,
        }))
    }

    /// The context below the HTTP edge (see [`crate::cx`]).
    pub fn cx(&self) -> &Cx {
        &self.0.parts.cx
    }
    pub fn config(&self) -> &Config {
        self.cx().config()
    }
    pub fn db(&self) -> &Db {
        self.cx().db()
    }
    pub fn clock(&self) -> &SharedClock {
        self.cx().clock()
    }
    /// The change feed (see [`crate::cluster::feed`]).
    pub fn feed(&self) -> &Feed {
        self.cx().feed()
    }
    /// The links alert notifications carry.
    pub fn alert_links(&self) -> &Links {
        &self.0.parts.alert_links
    }
    /// See [`Cx::wake_deliveries`].
    pub fn wake_deliveries(&self) {
        self.cx().wake_deliveries()
    }
    /// What running a check needs (see [`crate::monitoring::runner`]).
    pub fn runner(&self) -> &Runner {
        &self.0.parts.runner
    }
    /// The group-commit writer every check result and push goes through.
    pub fn heartbeats(&self) -> &HeartbeatWriter {
        self.runner().heartbeats()
    }
    /// The live remote-probe connections (see [`crate::probes`]).
    pub fn probes(&self) -> &Registry {
        self.runner().probes()
    }
    /// Checks relayed to probes connected to other nodes (PostgreSQL only).
    pub fn relay(&self) -> Option<&Relay> {
        self.runner().relay()
    }
    /// Whether this node runs the scheduler's slots (see [`crate::cluster::lease`]).
    pub fn scheduler_role(&self) -> &Role {
        self.runner().scheduler_role()
    }
    /// The scheduler's start lateness and schedule size.
    pub fn scheduler_stats(&self) -> &SchedulerStats {
        self.runner().scheduler_stats()
    }
    /// The API keys in memory (see [`crate::auth::key_cache`]).
    pub fn keys(&self) -> &KeyCache {
        &self.0.parts.tokens.keys
    }
    /// OAuth access tokens in memory (see [`crate::auth::oauth::cache`]).
    pub fn oauth_tokens(&self) -> &TokenCache {
        &self.0.parts.tokens.oauth_tokens
    }
    /// Both bearer-token caches, as [`crate::auth::caller::authenticate_key`] takes them.
    pub fn token_caches(&self) -> &TokenCaches {
        &self.0.parts.tokens
    }
    /// The push monitors' tokens in memory (see [`crate::push::tokens`]).
    pub fn push_tokens(&self) -> &PushTokens {
        &self.0.parts.push_tokens
    }
    /// The notification outbox's wake-up and outbound client (see [`crate::alerting::deliver`]).
    pub fn delivery_queue(&self) -> &DeliveryQueue {
        &self.0.parts.deliveries
    }
    /// The SMTP relay, when one is configured.
    pub fn mailer(&self) -> Option<&Mailer> {
        self.0.parts.mailer.as_ref()
    }
    /// The live streams' fan-out on this node (see [`crate::live`]).
    pub fn live(&self) -> &Hub {
        &self.0.parts.live
    }
    /// The rendered public status pages (see [`crate::public::cache`]).
    pub fn status_pages(&self) -> &PageCache {
        &self.0.parts.status_pages
    }
    /// The accepted on-demand checks still running (see [`crate::monitoring::on_demand`]).
    pub fn on_demand(&self) -> &OnDemandChecks {
        &self.0.parts.on_demand
    }
    pub fn metrics(&self) -> &Metrics {
        &self.0.parts.metrics
    }
    /// The single sign-on providers (see [`crate::auth::sso`]).
    pub fn sso(&self) -> &Sso {
        &self.0.parts.sso
    }
    /// The billing engine (see [`crate::billing`]).
    pub fn billing(&self) -> &Billing {
        &self.0.parts.billing
    }
    pub fn limits(&self) -> &Limiters {
        &self.0.limits
    }
    /// The current-workspace view, cached for the hot read path.
    pub fn workspace_cache(&self) -> &TtlCache<String, CurrentWorkspace> {
        &self.0.workspaces
    }
    /// The cached parts of `GET /monitors` and the cap on concurrent full lists.
    pub fn monitor_lists(&self) -> &MonitorLists {
        &self.0.monitor_lists
    }

    /// Follows other nodes' writes until `cancel`: each of their notices (and every `Resync`)
    /// counts as a write for the list builds, and a membership change forgets the workspace's
    /// cached view.
    pub async fn follow_feed(self, cancel: CancellationToken) {
        let mut feed = self.feed().subscribe_all();
        loop {
            let delivery = tokio::select! {
                _ = cancel.cancelled() => return,
                d = feed.recv() => d,
            };
            match delivery {
                Ok(d) if d.remote => {
                    self.monitor_lists().note_remote_write();
                    if let Notice::MembershipChanged { workspace_id } = &d.notice {
                        self.workspace_cache().forget(workspace_id);
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => self.monitor_lists().note_remote_write(),
                Err(RecvError::Closed) => return,
            }
        }
    }
}
