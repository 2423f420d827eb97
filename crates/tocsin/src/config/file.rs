//! The optional TOML configuration file: its shape (unknown keys are an error) and reading it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::sso::SsoFile;
use super::{ConfigError, RateLimits};

/// The TOML file's shape. Unknown keys are an error, so typos do not pass silently.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub public_url: Option<String>,
    pub log_format: Option<String>,
    pub log_level: Option<String>,
    pub smtp_url: Option<String>,
    pub smtp_from: Option<String>,
    pub trust_forwarded_for: Option<bool>,
    /// Refuse notification destinations on private addresses (default false).
    pub notify_deny_private_addresses: Option<bool>,
    /// Refuse check targets on private addresses (default false).
    pub checks_deny_private_addresses: Option<bool>,
    #[serde(default)]
    pub rate_limits: Option<RateLimits>,
    #[serde(default)]
    pub plans: Option<PlansFile>,
    pub min_interval_seconds: Option<u64>,
    /// Days raw heartbeats are kept (default 14).
    pub heartbeat_retention_days: Option<u32>,
    /// Days hourly rollups are kept (default 400).
    pub rollup_retention_days: Option<u32>,
    /// Checks the built-in probe runs at once, at most (default 2000).
    pub max_in_flight_checks: Option<usize>,
    /// Whether this process runs the check scheduler (default true).
    pub scheduler: Option<bool>,
    /// The built-in probe's name (default `built-in`).
    pub probe_name: Option<String>,
    /// Seconds between pings to each remote probe (default 10); a probe silent for two and a
    /// half intervals is dropped.
    pub probe_ping_seconds: Option<u64>,
    /// A bearer token `/metrics` then requires.
    pub metrics_token: Option<String>,
    pub header_read_timeout_seconds: Option<u64>,
    pub idle_timeout_seconds: Option<u64>,
    pub body_timeout_seconds: Option<u64>,
    pub max_connections: Option<usize>,
    pub max_connections_per_ip: Option<usize>,
    pub stream_buffer: Option<usize>,
    pub max_streams_per_workspace: Option<usize>,
    pub max_streams_per_ip: Option<usize>,
    /// Seconds a stopping server gives accepted on-demand checks to finish (default 10).
    pub shutdown_grace_seconds: Option<u64>,
    /// The DNS server custom-domain verification asks, `ip:port` (default: the system's).
    pub dns_resolver: Option<String>,
    /// Stripe's secret API key (`sk_...`); without it billing is off.
    pub stripe_secret_key: Option<String>,
    /// Stripe's webhook signing secrets (`whsec_...`), comma-separated while one is rotated.
    pub stripe_webhook_secret: Option<String>,
    /// Stripe's API root (default `https://api.stripe.com`).
    pub stripe_api_url: Option<String>,
    /// Single sign-on: `[[sso.oidc]]` tables, one per OpenID provider.
    #[serde(default)]
    pub sso: Option<SsoFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlansFile {
    /// The plan new workspaces get.
    pub default: Option<String>,
    #[serde(default)]
    pub quotas: BTreeMap<String, PlanQuota>,
}

/// One plan's quotas; an absent value means unlimited.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanQuota {
    #[serde(default, alias = "monitors")]
    pub monitors: Option<u64>,
    #[serde(default, alias = "status_pages")]
    pub status_pages: Option<u64>,
    #[serde(default, alias = "members")]
    pub members: Option<u64>,
    #[serde(default, alias = "api_keys")]
    pub api_keys: Option<u64>,
    #[serde(default, alias = "notification_channels")]
    pub notification_channels: Option<u64>,
    /// The shortest check interval allowed, in seconds.
    #[serde(default, alias = "min_interval_seconds")]
    pub min_interval_seconds: Option<u64>,
    /// The Stripe price (`price_...`) that sells this plan; the operator's setting, never
    /// shown through the API.
    #[serde(default, alias = "stripe_price", skip_serializing)]
    #[schemars(skip)]
    pub stripe_price: Option<String>,
}

pub(super) fn load_file(path: Option<&Path>) -> Result<FileConfig, ConfigError> {
    let Some(path) = path else {
        return Ok(FileConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Read(path.display().to_string(), e))?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse(path.display().to_string(), e))
}
