//! What a producer hands the writer ([`NewHeartbeat`]), what it gets back ([`HeartbeatRef`]),
//! and the size limits a stored result is held to.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use tocsin_checks::{AssertionResult, Timings};
use tocsin_core::state::Status;

use crate::monitoring::push_record::PushEffect;
use crate::store::monitors::StateUpdate;

/// Response bodies are stored up to this many bytes (cut at a character boundary).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Messages are stored up to this many bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// Longest region name and correlation id accepted.
pub const MAX_NAME_LEN: usize = 200;

/// One check result, as a producer hands it over.
#[derive(Debug, Clone)]
pub struct NewHeartbeat {
    pub monitor_id: String,
    pub monitor_seq: i64,
    /// When the check ran, in milliseconds since the epoch.
    pub ts_ms: i64,
    pub region: String,
    pub status: Status,
    /// For a `MAINTENANCE` heartbeat: the check's own result when its window counts in uptime
    /// figures, `None` when the window is excluded from them (see [`crate::store::status`]).
    pub counted_as: Option<Status>,
    pub latency_ms: f64,
    pub status_code: Option<u16>,
    pub message: Option<String>,
    pub retry_count: u32,
    pub timings: Option<Timings>,
    pub response_headers: Option<BTreeMap<String, Vec<String>>>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<IpAddr>,
    pub assertion_results: Option<Vec<AssertionResult>>,
    pub correlation_id: Option<String>,
    /// Set by push ingestion and the push watcher: what the heartbeat means for its monitor,
    /// applied in the same transaction (see [`crate::monitoring::push_record`]).
    pub push: Option<PushEffect>,
    /// Set by a scheduled cycle that changes no status: the monitor's new counters, written in
    /// the same transaction as the heartbeat and only while the monitor is active; when it is
    /// not (paused or deleted while the check ran), the heartbeat is dropped too and the
    /// submission answers [`WriteError::MonitorGone`]. Every heartbeat of the cycle carries the
    /// same update.
    pub state: Option<Arc<StateUpdate>>,
}

impl NewHeartbeat {
    /// A bare result: everything optional empty.
    pub fn new(
        monitor_id: &str,
        monitor_seq: i64,
        ts_ms: i64,
        region: &str,
        status: Status,
        latency_ms: f64,
    ) -> NewHeartbeat {
        NewHeartbeat {
            monitor_id: monitor_id.to_string(),
            monitor_seq,
            ts_ms,
            region: region.to_string(),
            status,
            counted_as: None,
            latency_ms,
            status_code: None,
            message: None,
            retry_count: 0,
            timings: None,
            response_headers: None,
            response_body: None,
            resolved_ip: None,
            assertion_results: None,
            correlation_id: None,
            push: None,
            state: None,
        }
    }

    /// Whether this result keeps a details row (see the module documentation).
    pub fn keeps_details(&self) -> bool {
        self.status != Status::Up || self.message.is_some() || self.correlation_id.is_some()
    }
}

/// Where a written heartbeat landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRef {
    /// The API id.
    pub id: String,
    pub monitor_seq: i64,
    /// The stored time (the submitted one, or moved forward past a same-millisecond twin).
    pub ts_ms: i64,
    pub region_id: i64,
}
