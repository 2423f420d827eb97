//! Monitoring as the server sees it, apart from the HTTP surface: the vocabulary of monitor
//! types, statuses and region strategies as the API spells them (with their OpenAPI schemas),
//! the regions a monitor may name, the change feed that tells the scheduler about edits made
//! through the API, and what happens to check results once a check has run: heartbeat storage
//! and the group-commit writer ([`heartbeats`]), hourly rollups ([`rollup`]) and their latency
//! histograms ([`histogram`]), uptime and availability reports ([`report`]), and retention
//! ([`retention`]). Running checks: the scheduler and built-in probe ([`scheduler`], with its start-lateness
//! figures in [`sched_stats`]) and
//! applying a cycle's results to the monitor's state, events and heartbeats ([`cycle`]);
//! on-demand checks in flight, waited for or cancelled at shutdown ([`on_demand`]); scheduled
//! checks finishing after shutdown began, stored unjudged ([`unjudged`]);
//! maintenance windows starting and ending on the scheduling node ([`maintenance`]); the
//! share of the monitors this node checks when several nodes share a database
//! ([`partitions`]).

pub mod check_stats;
pub mod cycle;
pub mod flapping;
pub mod heartbeats;
pub mod histogram;
pub mod maintenance;
pub mod monitor;
pub mod on_demand;
pub mod partitions;
pub mod push_record;
pub mod report;
pub mod retention;
pub mod rollup;
pub mod runner;
pub mod sched_stats;
pub mod scheduler;
pub mod staleness;
pub mod transition;
pub mod unjudged;

use crate::cx::Cx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_checks::MonitorKind;
use tocsin_core::RegionStrategy;

/// The region of the probe built into the server.
pub use crate::probes::LOCAL_REGION;

/// The regions a monitor may be checked from: the built-in probe's, then every region with an
/// unrevoked probe key (whether or not a probe of it is connected right now), by name.
pub async fn known_regions(cx: &Cx) -> Result<Vec<String>, sqlx::Error> {
    let remote = crate::store::probes::active_regions(cx.db().reader()).await?;
    Ok(std::iter::once(LOCAL_REGION.to_string())
        .chain(remote.into_iter().map(|(region, _)| region))
        .collect())
}

pub use tocsin_core::MonitorType;

/// The check engine's kind of a monitor type; `None` for PUSH, which the engine never runs.
pub fn check_kind(t: MonitorType) -> Option<MonitorKind> {
    MonitorKind::from_api_name(t.as_str())
}

/// How a monitor's regions share its cycles. `all`: every region checks every cycle and a
/// failure needs a quorum of the regions that reported. `round_robin` (one region per cycle,
/// in turn) and `random` (one region per cycle, picked at random), both among the regions that
/// can report now (`local` and regions with a live probe): a failure counts only when a second
/// live region confirms it inside the same slot (asked as soon as the picked region fails or
/// goes silent, or from the start after a failed cycle, with one confirmation, or when the
/// interval cannot hold two timeouts), or when the picked region is the only one that could
/// report. A failure no other region could confirm in time decides nothing. A region without a
/// live probe, or whose probe misses the cycle's deadline, reports nothing and never counts as
/// a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "RegionStrategy")]
pub enum ApiRegionStrategy {
    /// Every region checks every cycle; a failure needs a quorum of them.
    #[default]
    All,
    /// One live region per cycle, in turn; a failure is confirmed from a second live region
    /// within the slot.
    RoundRobin,
    /// One live region per cycle, picked at random; a failure is confirmed from a second live
    /// region within the slot.
    Random,
}

impl From<ApiRegionStrategy> for RegionStrategy {
    fn from(s: ApiRegionStrategy) -> Self {
        match s {
            ApiRegionStrategy::All => RegionStrategy::All,
            ApiRegionStrategy::RoundRobin => RegionStrategy::RoundRobin,
            ApiRegionStrategy::Random => RegionStrategy::Random,
        }
    }
}

impl From<RegionStrategy> for ApiRegionStrategy {
    fn from(s: RegionStrategy) -> Self {
        match s {
            RegionStrategy::All => ApiRegionStrategy::All,
            RegionStrategy::RoundRobin => ApiRegionStrategy::RoundRobin,
            RegionStrategy::Random => ApiRegionStrategy::Random,
        }
    }
}

pub fn strategy_str(s: RegionStrategy) -> &'static str {
    match s {
        RegionStrategy::All => "all",
        RegionStrategy::RoundRobin => "round_robin",
        RegionStrategy::Random => "random",
    }
}
