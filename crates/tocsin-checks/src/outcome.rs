//! What one check attempt reports. These types are the engine's whole output: the server turns
//! an [`Outcome`] into a stored heartbeat and feeds its [`Verdict`] to the state machine.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The verdict of one check attempt, before the state machine applies confirmations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Up,
    #[default]
    Down,
    /// Reachable and working, but a `warn` assertion failed (or a certificate is near expiry).
    Degraded,
    /// DNS_DIFF only: the answer set differs from the accepted baseline.
    Changed,
}

/// Phase timings in milliseconds, as the heartbeat's `timings` object shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    pub dns: f64,
    pub tcp: f64,
    /// `None` for plain-text protocols.
    pub tls: Option<f64>,
    pub first_byte: f64,
    pub transfer: f64,
}

/// One assertion's result, in the shape of the heartbeat's `assertionResults` items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssertionResult {
    pub index: usize,
    pub passed: bool,
    pub actual: Option<String>,
    pub message: String,
    pub severity: crate::assertions::Severity,
}

/// Everything one check attempt observed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    pub verdict: Verdict,
    /// Total time of the attempt.
    pub latency: Duration,
    pub status_code: Option<u16>,
    /// Human-readable reason, always set when the verdict is not `Up`.
    pub message: Option<String>,
    pub timings: Option<Timings>,
    /// Kept by the engine for every attempt; the server stores them only on failed or degraded
    /// checks. Bodies are capped at 64 KiB.
    pub response_headers: Option<BTreeMap<String, Vec<String>>>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<IpAddr>,
    pub assertion_results: Vec<AssertionResult>,
    /// Retries spent in this cycle (set by [`crate::run`]).
    pub retry_count: u32,
    /// DNS and DNS_DIFF: the normalized, sorted answer set.
    pub dns_answers: Option<Vec<String>>,
    /// HTTPS and TLS-over-TCP: days until the leaf certificate expires.
    pub cert_days_left: Option<i64>,
    /// PING: packets sent and received.
    pub packets: Option<(u32, u32)>,
    /// Set when the attempt failed because this probe ran out of something of its own
    /// (descriptors, buffers, memory: see [`crate::fault`]): the run judged nothing, so the
    /// server counts it as a probe error and the region as not reporting, never as a failure.
    pub probe_fault: Option<String>,
}

impl Outcome {
    /// A failed attempt with no further detail.
    pub fn down(latency: Duration, message: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Down,
            latency,
            message: Some(message.into()),
            ..Outcome::default()
        }
    }

    /// An attempt the probe itself could not make (see [`crate::fault`]).
    pub fn probe_fault(latency: Duration, resource: &str) -> Self {
        let message = crate::fault::fault_message(resource);
        Outcome {
            probe_fault: Some(message.clone()),
            ..Outcome::down(latency, message)
        }
    }
}
