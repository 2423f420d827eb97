//! Check specifications: the typed form of a monitor's `type`, `url`, `host`, `port` and
//! `config`. Parsing happens once, at the API edge, and reports every problem with its dotted
//! path (`config.expect.statusCodes`) so the server can answer `VALIDATION_ERROR` precisely.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The monitor types the engine can run (PUSH monitors are not run by the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MonitorKind {
    Http,
    Tcp,
    Ping,
    Dns,
    DnsDiff,
    #[serde(rename = "WEBSOCKET")]
    WebSocket,
}

impl MonitorKind {
    /// The kind a monitor type spelled as the API spells it runs as (`HTTP`, `DNS_DIFF`,
    /// `WEBSOCKET` ...); `None` for a type the engine does not run (PUSH).
    pub fn from_api_name(name: &str) -> Option<MonitorKind> {
        Some(match name {
            "HTTP" => MonitorKind::Http,
            "TCP" => MonitorKind::Tcp,
            "PING" => MonitorKind::Ping,
            "DNS" => MonitorKind::Dns,
            "DNS_DIFF" => MonitorKind::DnsDiff,
            "WEBSOCKET" => MonitorKind::WebSocket,
            _ => return None,
        })
    }
}

/// One validation failure: `path` is dotted from the monitor body's root, e.g.
/// `config.assertions.0.target`, `url`, `port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub path: String,
    pub message: String,
}

impl FieldError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// The monitor fields a check specification is parsed from.
#[derive(Debug, Clone)]
pub struct SpecInput<'a> {
    pub url: Option<&'a str>,
    pub host: Option<&'a str>,
    pub port: Option<u16>,
    pub config: &'a serde_json::Map<String, serde_json::Value>,
}

/// A validated check specification.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckSpec {
    Http(crate::http::HttpSpec),
    Tcp(crate::tcp::TcpSpec),
    Ping(crate::ping::PingSpec),
    Dns(crate::dns::DnsSpec),
    DnsDiff(crate::dns::DnsSpec),
    WebSocket(crate::websocket::WsSpec),
}

impl CheckSpec {
    /// Parses and validates; on failure returns every error found, in document order.
    pub fn parse(kind: MonitorKind, input: &SpecInput<'_>) -> Result<CheckSpec, Vec<FieldError>> {
        match kind {
            MonitorKind::Http => crate::http::HttpSpec::parse(input).map(CheckSpec::Http),
            MonitorKind::Tcp => crate::tcp::TcpSpec::parse(input).map(CheckSpec::Tcp),
            MonitorKind::Ping => crate::ping::PingSpec::parse(input).map(CheckSpec::Ping),
            MonitorKind::Dns => crate::dns::DnsSpec::parse(input).map(CheckSpec::Dns),
            MonitorKind::DnsDiff => crate::dns::DnsSpec::parse(input).map(CheckSpec::DnsDiff),
            MonitorKind::WebSocket => {
                crate::websocket::WsSpec::parse(input).map(CheckSpec::WebSocket)
            }
        }
    }
}

/// Per-run settings that come from the monitor rather than from `config`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub timeout: Duration,
    pub retries: u32,
    /// DNS_DIFF: the accepted answer set; `None` until the first answer becomes the baseline.
    pub baseline: Option<Vec<String>>,
    /// The time of the run, from the caller's clock: certificate days left count from it. The
    /// engine never reads the wall clock for a decision.
    pub now: chrono::DateTime<chrono::Utc>,
    /// Which addresses the check may connect to (the operator's, never the monitor's).
    pub address_policy: crate::AddressPolicy,
}

impl Default for RunOptions {
    /// Ten seconds, no retries, no baseline, `now` from the wall clock and every address
    /// allowed: for tools and tests that run checks directly (the server always sets `now`
    /// from its own clock, and its own address policy).
    fn default() -> Self {
        RunOptions {
            timeout: Duration::from_secs(10),
            retries: 0,
            baseline: None,
            now: chrono::Utc::now(),
            address_policy: crate::AddressPolicy::default(),
        }
    }
}
