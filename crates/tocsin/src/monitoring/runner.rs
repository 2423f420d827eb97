//! The check runner: what running a check cycle needs, owned in one place and handed to the
//! workers that run cycles (the scheduler, the maintenance engine's checks at a window's end,
//! on-demand checks) and to the push watcher. It holds the context, the built-in probe's
//! limits ([`Checks`]), the remote probes and their relay, the heartbeat writer, the
//! scheduler's figures, the scheduler role, the partitions held and the judging token. The composition root
//! (`server.rs`) builds it; cheap to clone (one `Arc`).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::check_stats::CheckStats;
use super::heartbeats::HeartbeatWriter;
use super::sched_stats::SchedulerStats;
use super::scheduler::Checks;
use crate::cluster::lease::Role;
use crate::cx::Cx;
use crate::monitoring::partitions::Partitions;
use crate::probes::relay::Relay;
use crate::probes::Registry;

#[derive(Clone)]
pub struct Runner(Arc<Inner>);

struct Inner {
    cx: Cx,
    checks: Checks,
    probes: Arc<Registry>,
    relay: Option<Arc<Relay>>,
    heartbeats: HeartbeatWriter,
    scheduler_stats: SchedulerStats,
    check_stats: CheckStats,
    scheduler_role: Role,
    partitions: Partitions,
    judging: CancellationToken,
}

impl Runner {
    /// The runner over `cx`, storing through `heartbeats`, checking remote regions on `probes`
    /// (and, with several nodes, through `relay`); the built-in probe's limits and address
    /// policy come from the configuration.
    pub fn new(
        cx: Cx,
        heartbeats: HeartbeatWriter,
        probes: Arc<Registry>,
        relay: Option<Arc<Relay>>,
    ) -> Runner {
        let config = cx.config();
        let checks = Checks::new(config.max_in_flight_checks).with_address_policy(
            tocsin_checks::AddressPolicy::deny_private(config.checks_deny_private_addresses),
        );
        Runner(Arc::new(Inner {
            checks,
            probes,
            relay,
            heartbeats,
            scheduler_stats: SchedulerStats::new(),
            check_stats: CheckStats::default(),
            scheduler_role: Role::default(),
            partitions: Partitions::default(),
            judging: CancellationToken::new(),
            cx,
        }))
    }

    /// The context below the HTTP edge (see [`crate::cx`]).
    pub fn cx(&self) -> &Cx {
        &self.0.cx
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
    pub fn relay(&self) -> Option<&Relay> {
        self.0.relay.as_deref()
    }
    /// Owned handles on the probes and their relay, for the relay's worker
    /// ([`crate::probes::relay::run`]); `None` without a relay (SQLite).
    pub fn relay_handles(&self) -> Option<(Arc<Relay>, Arc<Registry>)> {
        let relay = self.0.relay.clone()?;
        Some((relay, self.0.probes.clone()))
    }
    /// The group-commit writer every check result goes through.
    pub fn heartbeats(&self) -> &HeartbeatWriter {
        &self.0.heartbeats
    }
    /// The scheduler's start lateness and schedule size.
    pub fn scheduler_stats(&self) -> &SchedulerStats {
        &self.0.scheduler_stats
    }
    /// Per-monitor check figures for `/metrics`.
    pub fn check_stats(&self) -> &CheckStats {
        &self.0.check_stats
    }
    /// Whether this node runs the scheduler's slots and the push watcher's judgments (see
    /// [`crate::cluster::lease`]).
    pub fn scheduler_role(&self) -> &Role {
        &self.0.scheduler_role
    }
    /// The partitions of the monitors this node checks and whose push deadlines it judges
    /// (see [`crate::monitoring::partitions`]; all of them on one node).
    pub fn partitions(&self) -> &Partitions {
        &self.0.partitions
    }
    /// Cancelled when a graceful shutdown begins: from then on nothing is judged here (no
    /// scheduled run starts, a check finishing later steps no state machine, no push deadline
    /// is judged), so a server going away pages no one.
    pub fn judging(&self) -> &CancellationToken {
        &self.0.judging
    }
}
