//! The probe protocol: JSON text frames over the WebSocket of `GET /probe/v1/connect`.
//!
//! Server → probe: [`ServerMessage`] — a `welcome` naming the probe's region and the server's
//! ping interval once connected, then `job`s. Probe → server: [`ProbeMessage`] — `results` batches. Liveness uses WebSocket
//! pings (the server pings, the probe's WebSocket library answers). A job carries the monitor's
//! check as stored (type, url/host/port, `config`, timeout, retries, DNS_DIFF baseline), so the
//! probe validates and runs it with the same engine as the built-in probe; results carry the
//! engine's whole [`Outcome`] in [`WireOutcome`], so a remote heartbeat holds what a local one
//! does. A job also carries the server's address policy (`denyPrivateAddresses`), which the
//! probe applies to the check like the built-in probe does. The version is in the path (`v1`):
//! an incompatible change gets a new path.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{AssertionResult, CheckSpec, Outcome, RunOptions, Timings, Verdict};

use tocsin_checks::MonitorKind;
use tocsin_core::MonitorType;

/// Ping intervals a probe waits without hearing anything from the server (not even a ping)
/// before it counts the server as gone and reconnects.
pub const MISSED_PINGS: u32 = 3;

/// How long the server waits without hearing anything from a probe (a pong, results) before it
/// counts the probe as gone: two unanswered pings and half an interval of slack, so with the
/// default 10 s interval a frozen probe's region stops being live at most 25 s after the
/// probe's last answer.
pub fn silence_limit(ping_interval: Duration) -> Duration {
    ping_interval.saturating_mul(5) / 2
}

/// The path probes connect to.
pub const CONNECT_PATH: &str = "/probe/v1/connect";
/// The header a probe names its region in; it must match its key's region.
pub const REGION_HEADER: &str = "x-tocsin-probe-region";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// Sent once after the connection is accepted. The probe may count the server as gone
    /// when it has heard nothing (not even a ping) for three ping intervals.
    Welcome {
        region: String,
        name: String,
        #[serde(rename = "pingIntervalMs")]
        ping_interval_ms: u64,
    },
    /// A job, nested (its `type` is the monitor's).
    Job { job: Job },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProbeMessage {
    Results { results: Vec<JobResult> },
}

/// One check to run once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Unique per server process; the result names it.
    pub id: u64,
    pub monitor_id: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub config: Map<String, Value>,
    pub timeout_ms: u64,
    pub retries: u32,
    pub baseline: Option<Vec<String>>,
    /// The server's `--checks-deny-private-addresses`: the probe refuses private targets too
    /// (absent, hence false, from older servers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deny_private_addresses: bool,
}

impl Job {
    /// The validated check and its options for a run at `now` (the probe's clock), or why
    /// the probe cannot run it.
    pub fn spec(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(CheckSpec, RunOptions), String> {
        let kind = MonitorKind::from_api_name(self.kind.as_str())
            .ok_or_else(|| format!("{} monitors are not run by probes", self.kind.as_str()))?;
        let spec = CheckSpec::parse(
            kind,
            &SpecInput {
                url: self.url.as_deref(),
                host: self.host.as_deref(),
                port: self.port,
                config: &self.config,
            },
        )
        .map_err(|errors| {
            let fields: Vec<String> = errors
                .iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect();
            format!("the check does not validate here: {}", fields.join("; "))
        })?;
        let opts = RunOptions {
            timeout: Duration::from_millis(self.timeout_ms),
            retries: self.retries,
            baseline: self.baseline.clone(),
            now,
            address_policy: tocsin_checks::AddressPolicy::deny_private(self.deny_private_addresses),
        };
        Ok((spec, opts))
    }
}

/// A job's result: an outcome, or an error saying why the probe could not run it (which the
/// server treats like no answer — never as a failed check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobResult {
    pub id: u64,
    pub outcome: Option<WireOutcome>,
    pub error: Option<String>,
}

/// [`Outcome`] as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireOutcome {
    pub verdict: Verdict,
    /// Microseconds, so the duration survives exactly.
    pub latency_us: u64,
    pub status_code: Option<u16>,
    pub message: Option<String>,
    pub timings: Option<Timings>,
    pub response_headers: Option<BTreeMap<String, Vec<String>>>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<IpAddr>,
    pub assertion_results: Vec<AssertionResult>,
    pub retry_count: u32,
    pub dns_answers: Option<Vec<String>>,
    pub cert_days_left: Option<i64>,
    pub packets: Option<(u32, u32)>,
    /// The probe ran out of a resource of its own: the server counts the region as not
    /// reporting (absent from older probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_fault: Option<String>,
}

impl From<Outcome> for WireOutcome {
    fn from(o: Outcome) -> Self {
        WireOutcome {
            verdict: o.verdict,
            latency_us: u64::try_from(o.latency.as_micros()).unwrap_or(u64::MAX),
            status_code: o.status_code,
            message: o.message,
            timings: o.timings,
            response_headers: o.response_headers,
            response_body: o.response_body,
            resolved_ip: o.resolved_ip,
            assertion_results: o.assertion_results,
            retry_count: o.retry_count,
            dns_answers: o.dns_answers,
            cert_days_left: o.cert_days_left,
            packets: o.packets,
            probe_fault: o.probe_fault,
        }
    }
}

impl From<WireOutcome> for Outcome {
    fn from(w: WireOutcome) -> Self {
        Outcome {
            verdict: w.verdict,
            latency: Duration::from_micros(w.latency_us),
            status_code: w.status_code,
            message: w.message,
            timings: w.timings,
            response_headers: w.response_headers,
            response_body: w.response_body,
            resolved_ip: w.resolved_ip,
            assertion_results: w.assertion_results,
            retry_count: w.retry_count,
            dns_answers: w.dns_answers,
            cert_days_left: w.cert_days_left,
            packets: w.packets,
            probe_fault: w.probe_fault,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_survive_the_wire() {
        let o = Outcome {
            verdict: Verdict::Degraded,
            latency: Duration::from_millis(12),
            status_code: Some(200),
            message: Some("slow".into()),
            retry_count: 1,
            dns_answers: Some(vec!["1.2.3.4".into()]),
            packets: Some((3, 2)),
            ..Outcome::default()
        };
        let text = serde_json::to_string(&WireOutcome::from(o.clone())).unwrap_or_default();
        let back: WireOutcome = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Outcome::from(back), o);
    }

    #[test]
    fn jobs_round_trip() {
        let job = Job {
            id: 7,
            monitor_id: "m".into(),
            kind: MonitorType::Http,
            url: Some("http://127.0.0.1/".into()),
            host: None,
            port: None,
            config: Map::new(),
            timeout_ms: 5000,
            retries: 1,
            baseline: None,
            deny_private_addresses: true,
        };
        let msg = ServerMessage::Job { job };
        let text = serde_json::to_string(&msg).unwrap_or_default();
        let back: ServerMessage = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, msg);
    }

    #[test]
    fn messages_are_tagged() {
        let m = ProbeMessage::Results { results: vec![] };
        let text = serde_json::to_string(&m).unwrap_or_default();
        assert_eq!(text, r#"{"type":"results","results":[]}"#);
    }
}
