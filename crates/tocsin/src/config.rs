//! Server configuration. Each setting comes from, in order of precedence: a command-line flag,
//! its `TOCSIN_*` environment variable (both handled by clap), the optional TOML file named by
//! `--config`, then the built-in default. Everything is validated once, at start, into
//! [`Config`]; a bad value stops the process with a message naming the setting.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use url::Url;

/// Flags shared by every subcommand that opens the database.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StoreArgs {
    /// Directory of the embedded SQLite database, used when no database URL is given
    /// (default `./tocsin-data`).
    #[arg(long, env = "TOCSIN_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// `postgres://...` to run on PostgreSQL; `sqlite://...` for another SQLite file (default:
    /// none, the embedded SQLite database under `--data-dir`).
    #[arg(long, env = "TOCSIN_DATABASE_URL")]
    pub database_url: Option<String>,
    /// A TOML file with any of the settings below; flags and environment variables win
    /// (default: none).
    #[arg(long, env = "TOCSIN_CONFIG")]
    pub config: Option<PathBuf>,
}

/// Flags of `tocsin serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Address to listen on (default `127.0.0.1:8080`).
    #[arg(long, env = "TOCSIN_LISTEN")]
    pub listen: Option<String>,
    /// The server's public root URL: links in emails, cookie `Secure`, the Origin check
    /// (default `http://` + the listen address).
    #[arg(long, env = "TOCSIN_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// `human` (default) or `json` logs.
    #[arg(long, env = "TOCSIN_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// Log level or filter, e.g. `info` or `tocsin=debug,warn` (default `info`).
    #[arg(long, env = "TOCSIN_LOG_LEVEL")]
    pub log_level: Option<String>,
    /// SMTP server for emails, e.g. `smtp://user:pass@host:587` or `smtp://host:25` (default:
    /// none, no emails are sent; needs `--smtp-from`).
    #[arg(long, env = "TOCSIN_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// Sender address of emails, e.g. `Tocsin <tocsin@example.com>` (required with
    /// `--smtp-url`).
    #[arg(long, env = "TOCSIN_SMTP_FROM")]
    pub smtp_from: Option<String>,
    /// Trust the first `X-Forwarded-For` hop as the client address (behind a reverse proxy).
    /// A plain flag (default off); `--trust-forwarded-for false` turns off what the file turned
    /// on.
    #[arg(long, env = "TOCSIN_TRUST_FORWARDED_FOR", num_args = 0..=1, default_missing_value = "true")]
    pub trust_forwarded_for: Option<bool>,
    /// Refuse to send notifications to loopback, private, link-local and shared addresses,
    /// judged on the resolved address (default off: self-hosters alert to their own network;
    /// turn it on for a server shared by untrusted workspaces). A plain flag.
    #[arg(long, env = "TOCSIN_NOTIFY_DENY_PRIVATE_ADDRESSES", num_args = 0..=1, default_missing_value = "true")]
    pub notify_deny_private_addresses: Option<bool>,
    /// Refuse checks of every type (and every redirect hop) that would connect to a loopback,
    /// private, link-local or shared address, judged on the resolved address at connect time;
    /// remote probes apply it too (default off: self-hosters monitor their own network; turn
    /// it on for a server shared by untrusted workspaces). A plain flag.
    #[arg(long, env = "TOCSIN_CHECKS_DENY_PRIVATE_ADDRESSES", num_args = 0..=1, default_missing_value = "true")]
    pub checks_deny_private_addresses: Option<bool>,
    /// The built-in probe's name; its region is always `local` (default `built-in`).
    #[arg(long, env = "TOCSIN_PROBE_NAME")]
    pub probe_name: Option<String>,
    /// A bearer token `/metrics` then requires, since it lists monitor names (default: none,
    /// `/metrics` is open).
    #[arg(long, env = "TOCSIN_METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// Seconds a client has to send a request's headers, from connecting or from its first
    /// byte after an idle keep-alive wait (default 10).
    #[arg(long, env = "TOCSIN_HEADER_READ_TIMEOUT_SECONDS")]
    pub header_read_timeout_seconds: Option<u64>,
    /// Seconds a keep-alive connection may wait idle for its next request (default 60).
    #[arg(long, env = "TOCSIN_IDLE_TIMEOUT_SECONDS")]
    pub idle_timeout_seconds: Option<u64>,
    /// Seconds a client has to send a whole request body (default 30).
    #[arg(long, env = "TOCSIN_BODY_TIMEOUT_SECONDS")]
    pub body_timeout_seconds: Option<u64>,
    /// Open client connections, at most (default 10000; lowered to fit the descriptor limit).
    #[arg(long, env = "TOCSIN_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Open connections per client IP, at most (default 1000; 0 for no per-IP share, e.g.
    /// behind a reverse proxy, where every client shares the proxy's address).
    #[arg(long, env = "TOCSIN_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Live stream (`GET /stream`) frames of its workspace a client may fall behind before it
    /// is dropped (default 256).
    #[arg(long, env = "TOCSIN_STREAM_BUFFER")]
    pub stream_buffer: Option<usize>,
    /// Open live streams per workspace, at most (default 2000).
    #[arg(long, env = "TOCSIN_MAX_STREAMS_PER_WORKSPACE")]
    pub max_streams_per_workspace: Option<usize>,
    /// Open live streams per client address, at most (default 2000; 0 for no per-address
    /// share).
    #[arg(long, env = "TOCSIN_MAX_STREAMS_PER_IP")]
    pub max_streams_per_ip: Option<usize>,
    /// Seconds in-flight requests get to finish after SIGTERM before they are cut (default 10).
    #[arg(long, env = "TOCSIN_SHUTDOWN_GRACE_SECONDS")]
    pub shutdown_grace_seconds: Option<u64>,
    /// The DNS server that custom-domain verification asks for TXT records, as `ip:port` or
    /// `ip` (port 53) (default: the system's resolvers, from /etc/resolv.conf).
    #[arg(long, env = "TOCSIN_DNS_RESOLVER")]
    pub dns_resolver: Option<String>,
}

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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimits {
    /// Sign-in attempts per client address and minute.
    #[serde(default = "d_sign_in_ip")]
    pub sign_in_per_ip: u32,
    /// Failed sign-ins for one email, from all addresses, before addresses that have failed
    /// for it back off exponentially (see `auth::sign_in_guard`).
    #[serde(default = "d_sign_in_email")]
    pub sign_in_per_email: u32,
    /// Failed sign-ins per minute for one email from one address.
    #[serde(default = "d_sign_in_email_ip")]
    pub sign_in_failures_per_email_ip: u32,
    /// The longest per-email back-off, in seconds.
    #[serde(default = "d_sign_in_backoff_max")]
    pub sign_in_email_backoff_max_seconds: u64,
    #[serde(default = "d_sign_up_ip")]
    pub sign_up_per_ip: u32,
    /// Pushes to unknown push tokens per client IP and minute.
    #[serde(default = "d_push_unknown_ip")]
    pub push_unknown_per_ip: u32,
    /// Status page subscription requests per client address and minute.
    #[serde(default = "d_subscribe_ip")]
    pub subscribe_per_ip: u32,
    /// Subscription requests per email address and hour, across pages: a confirmation email
    /// cannot be used to flood an inbox.
    #[serde(default = "d_subscribe_email")]
    pub subscribe_per_email_hour: u32,
    /// Confirmation emails one mailbox (case, plus-tag and quotes aside) is sent per day,
    /// across pages and nodes; past it a subscription is accepted but nothing is sent.
    #[serde(default = "d_subscribe_confirmations")]
    pub subscribe_confirmations_per_mailbox_day: u32,
}

fn d_sign_in_ip() -> u32 {
    30
}
fn d_sign_in_email() -> u32 {
    10
}
fn d_sign_in_email_ip() -> u32 {
    10
}
fn d_sign_in_backoff_max() -> u64 {
    900
}
fn d_sign_up_ip() -> u32 {
    20
}
fn d_push_unknown_ip() -> u32 {
    120
}
fn d_subscribe_ip() -> u32 {
    20
}
fn d_subscribe_email() -> u32 {
    5
}
fn d_subscribe_confirmations() -> u32 {
    3
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            sign_in_per_ip: d_sign_in_ip(),
            sign_in_per_email: d_sign_in_email(),
            sign_in_failures_per_email_ip: d_sign_in_email_ip(),
            sign_in_email_backoff_max_seconds: d_sign_in_backoff_max(),
            sign_up_per_ip: d_sign_up_ip(),
            push_unknown_per_ip: d_push_unknown_ip(),
            subscribe_per_ip: d_subscribe_ip(),
            subscribe_per_email_hour: d_subscribe_email(),
            subscribe_confirmations_per_mailbox_day: d_subscribe_confirmations(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Clone)]
pub struct Smtp {
    pub url: String,
    pub from: String,
}

/// The plan settings: every workspace has a plan; the default plan is unlimited.
#[derive(Debug, Clone)]
pub struct Plans {
    pub default: String,
    pub quotas: BTreeMap<String, PlanQuota>,
}

impl Plans {
    pub fn quota(&self, plan: &str) -> PlanQuota {
        self.quotas.get(plan).cloned().unwrap_or_default()
    }
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub public_url: Url,
    pub log_format: LogFormat,
    pub log_level: String,
    pub smtp: Option<Smtp>,
    pub trust_forwarded_for: bool,
    /// Notifications refuse loopback, private and link-local destinations (resolved).
    pub notify_deny_private_addresses: bool,
    /// Checks refuse loopback, private and link-local targets (resolved, at connect time).
    pub checks_deny_private_addresses: bool,
    pub rate_limits: RateLimits,
    pub plans: Plans,
    /// The shortest check interval any monitor may have, in seconds (a plan may demand more).
    pub min_interval_seconds: u64,
    /// Days raw heartbeats are kept.
    pub heartbeat_retention_days: u32,
    /// Days hourly rollups are kept.
    pub rollup_retention_days: u32,
    /// Checks the built-in probe runs at once, at most: bounds sockets and memory when many
    /// monitors fall due together.
    pub max_in_flight_checks: usize,
    /// Whether the background scheduler runs. Off in [`Config::for_dir`] (tests and
    /// benchmarks drive cycles themselves with `monitoring::scheduler::run_due`, so checks
    /// never fire against test targets behind their back); on everywhere else.
    pub scheduler_enabled: bool,
    /// The built-in probe's name, shown in `GET /regions` (its region is always `local`).
    pub probe_name: String,
    /// How often the server pings each remote probe.
    pub probe_ping_interval: std::time::Duration,
    /// When set, `/metrics` answers only `Authorization: Bearer <this>`.
    pub metrics_token: Option<String>,
    /// The time a client has to send a request head (from connecting, or from the first byte
    /// after an idle keep-alive wait).
    pub header_read_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// The time a client has to send a whole request body.
    pub body_timeout: Duration,
    /// Open client connections, at most (before fitting the descriptor limit).
    pub max_connections: usize,
    /// Open connections per client address, at most; 0 for no per-address share.
    pub max_connections_per_ip: usize,
    /// The live streams' buffer and caps (see [`crate::live`]).
    pub streams: crate::live::Limits,
    /// How long in-flight requests (and on-demand checks) get to finish once shutdown begins.
    pub shutdown_grace: Duration,
    /// The DNS server custom-domain verification asks; `None` for the system's resolvers.
    pub dns_resolver: Option<SocketAddr>,
}

/// The connection settings' defaults: a request head is a few hundred bytes, so 10 s is
/// generous even on a bad mobile link; 60 s of keep-alive outlasts a dashboard's polling
/// interval; 30 s bounds a 1 MiB body at about 35 KB/s.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECONDS: u64 = 10;
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u64 = 60;
pub const DEFAULT_BODY_TIMEOUT_SECONDS: u64 = 30;
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// A tenth of the global cap: one address cannot hold the server alone (ten are needed to
/// fill it), while a browser opens about six connections and a busy office behind one NAT a
/// few hundred.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 1_000;

/// Default of `probe_name`.
pub const DEFAULT_PROBE_NAME: &str = "built-in";
/// Default of `probe_ping_seconds`.
pub const DEFAULT_PROBE_PING_SECONDS: u64 = 10;

/// Default of `shutdown_grace_seconds`.
pub const DEFAULT_SHUTDOWN_GRACE_SECONDS: u64 = 10;

/// Default of `max_in_flight_checks`.
pub const DEFAULT_MAX_IN_FLIGHT_CHECKS: usize = 2000;

pub const DEFAULT_HEARTBEAT_RETENTION_DAYS: u32 = 14;
pub const DEFAULT_ROLLUP_RETENTION_DAYS: u32 = 400;
/// Upper bound of both retention settings (about 100 years), so day arithmetic cannot overflow.
const MAX_RETENTION_DAYS: u32 = 36_500;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {0}: {1}")]
    Read(String, std::io::Error),
    #[error("config file {0}: {1}")]
    Parse(String, toml::de::Error),
    #[error("invalid {setting}: {message}")]
    Invalid {
        setting: &'static str,
        message: String,
    },
}

fn invalid(setting: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        setting,
        message: message.into(),
    }
}

pub const DEFAULT_PLAN: &str = "self-hosted";

/// The server-wide floor of a monitor's check interval, in seconds, unless configured.
pub const DEFAULT_MIN_INTERVAL_SECONDS: u64 = 10;

fn load_file(path: Option<&Path>) -> Result<FileConfig, ConfigError> {
    let Some(path) = path else {
        return Ok(FileConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Read(path.display().to_string(), e))?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse(path.display().to_string(), e))
}

impl Config {
    /// The live streams' buffer and caps.
    pub fn stream_limits(&self) -> crate::live::Limits {
        self.streams
    }

    /// Settings for commands that only open the database (`migrate`, `user create` ...).
    pub fn for_store(args: &StoreArgs) -> Result<Config, ConfigError> {
        Config::resolve(&ServeArgs {
            store: args.clone(),
            ..ServeArgs::default()
        })
    }

    pub fn resolve(args: &ServeArgs) -> Result<Config, ConfigError> {
        let file = load_file(args.store.config.as_deref())?;
        let listen_text = args
            .listen
            .clone()
            .or(file.listen)
            .unwrap_or_else(|| "127.0.0.1:8080".into());
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            invalid(
                "listen",
                format!("{listen_text:?} is not an address like 127.0.0.1:8080"),
            )
        })?;
        let data_dir = args
            .store
            .data_dir
            .clone()
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from("./tocsin-data"));
        let database_url = args
            .store
            .database_url
            .clone()
            .or(file.database_url)
            .filter(|s| !s.is_empty());
        if let Some(u) = &database_url {
            if !(u.starts_with("sqlite:")
                || u.starts_with("postgres:")
                || u.starts_with("postgresql:"))
            {
                return Err(invalid(
                    "database-url",
                    "must start with sqlite:// or postgres://",
                ));
            }
        }
        let public_text = args
            .public_url
            .clone()
            .or(file.public_url)
            .unwrap_or_else(|| format!("http://{listen}"));
        let public_url =
            Url::parse(&public_text).map_err(|e| invalid("public-url", e.to_string()))?;
        if !matches!(public_url.scheme(), "http" | "https") || public_url.host().is_none() {
            return Err(invalid(
                "public-url",
                "must be an http:// or https:// URL with a host",
            ));
        }
        let log_format = match args.log_format.clone().or(file.log_format).as_deref() {
            None | Some("human") => LogFormat::Human,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(invalid(
                    "log-format",
                    format!("{other:?}: use human or json"),
                ))
            }
        };
        let log_level = args
            .log_level
            .clone()
            .or(file.log_level)
            .unwrap_or_else(|| "info".into());
        // A bare word is valid filter syntax (a target at every level), but as a setting it is
        // nearly always a mistyped level: ask for `target=level` instead.
        let levels = ["trace", "debug", "info", "warn", "error", "off"];
        if let Some(word) = log_level.split(',').map(str::trim).find(|d| {
            !d.is_empty()
                && !d.contains(['=', '['])
                && !levels.contains(&d.to_ascii_lowercase().as_str())
        }) {
            return Err(invalid(
                "log-level",
                format!("{word:?} is not a level: use trace, debug, info, warn, error or off, or target=level such as tocsin=debug"),
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&log_level) {
            return Err(invalid(
                "log-level",
                format!("{log_level:?} is not a log filter ({e}); use a level such as info, debug or warn, or a filter such as tocsin=debug"),
            ));
        }
        let smtp = match args.smtp_url.clone().or(file.smtp_url) {
            Some(url) => {
                let parsed = Url::parse(&url).map_err(|e| invalid("smtp-url", e.to_string()))?;
                if !matches!(parsed.scheme(), "smtp" | "smtps") {
                    return Err(invalid("smtp-url", "must start with smtp:// or smtps://"));
                }
                // Mail from a made-up sender is refused or binned by most servers: ask for one.
                let Some(from) = args.smtp_from.clone().or(file.smtp_from) else {
                    return Err(invalid(
                        "smtp-from",
                        "is required with --smtp-url: the address emails come from, such as \"Tocsin <tocsin@example.com>\"",
                    ));
                };
                if from.parse::<lettre::message::Mailbox>().is_err() {
                    return Err(invalid(
                        "smtp-from",
                        format!("{from:?} is not an email address"),
                    ));
                }
                Some(Smtp { url, from })
            }
            None => None,
        };
        let plans = match file.plans {
            Some(p) => {
                let default = p.default.unwrap_or_else(|| DEFAULT_PLAN.into());
                if default != DEFAULT_PLAN && !p.quotas.contains_key(&default) {
                    let defined: Vec<&str> = std::iter::once(DEFAULT_PLAN)
                        .chain(p.quotas.keys().map(String::as_str))
                        .collect();
                    return Err(invalid(
                        "plans.default",
                        format!(
                            "{default:?} is not a defined plan (defined: {}); add a [plans.quotas.{default}] table or name one of those",
                            defined.join(", ")
                        ),
                    ));
                }
                Plans {
                    default,
                    quotas: p.quotas,
                }
            }
            None => Plans {
                default: DEFAULT_PLAN.into(),
                quotas: BTreeMap::new(),
            },
        };
        let min_interval_seconds = file
            .min_interval_seconds
            .unwrap_or(DEFAULT_MIN_INTERVAL_SECONDS);
        if min_interval_seconds == 0 || min_interval_seconds > 86_400 {
            return Err(invalid(
                "min_interval_seconds",
                "must be between 1 and 86400 seconds",
            ));
        }
        let heartbeat_retention_days = retention(
            "heartbeat_retention_days",
            file.heartbeat_retention_days,
            DEFAULT_HEARTBEAT_RETENTION_DAYS,
        )?;
        let rollup_retention_days = retention(
            "rollup_retention_days",
            file.rollup_retention_days,
            DEFAULT_ROLLUP_RETENTION_DAYS,
        )?;
        let max_in_flight_checks = file
            .max_in_flight_checks
            .unwrap_or(DEFAULT_MAX_IN_FLIGHT_CHECKS);
        if max_in_flight_checks == 0 || max_in_flight_checks > 1_000_000 {
            return Err(invalid(
                "max_in_flight_checks",
                "must be between 1 and 1000000",
            ));
        }
        let probe_name = args
            .probe_name
            .clone()
            .or(file.probe_name)
            .unwrap_or_else(|| DEFAULT_PROBE_NAME.into());
        let name_chars = probe_name.trim().chars().count();
        if name_chars == 0
            || name_chars > 100
            || probe_name.chars().any(|c| !crate::text::printable(c))
        {
            return Err(invalid(
                "probe-name",
                "must be 1 to 100 printable characters",
            ));
        }
        let probe_ping_seconds = file
            .probe_ping_seconds
            .unwrap_or(DEFAULT_PROBE_PING_SECONDS);
        if !(1..=300).contains(&probe_ping_seconds) {
            return Err(invalid(
                "probe_ping_seconds",
                "must be between 1 and 300 seconds",
            ));
        }
        let header_read_timeout = seconds(
            "header-read-timeout-seconds",
            args.header_read_timeout_seconds
                .or(file.header_read_timeout_seconds),
            DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
        )?;
        let idle_timeout = seconds(
            "idle-timeout-seconds",
            args.idle_timeout_seconds.or(file.idle_timeout_seconds),
            DEFAULT_IDLE_TIMEOUT_SECONDS,
        )?;
        let body_timeout = seconds(
            "body-timeout-seconds",
            args.body_timeout_seconds.or(file.body_timeout_seconds),
            DEFAULT_BODY_TIMEOUT_SECONDS,
        )?;
        // 0 is allowed: stop at once, cancelling (and recording) what is in flight.
        let shutdown_grace = match args
            .shutdown_grace_seconds
            .or(file.shutdown_grace_seconds)
            .unwrap_or(DEFAULT_SHUTDOWN_GRACE_SECONDS)
        {
            s @ 0..=3600 => Duration::from_secs(s),
            s => {
                return Err(invalid(
                    "shutdown-grace-seconds",
                    format!("{s} seconds: must be 0 to 3600"),
                ))
            }
        };
        let max_connections = args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if !(1..=10_000_000).contains(&max_connections) {
            return Err(invalid("max-connections", "must be between 1 and 10000000"));
        }
        let max_connections_per_ip = args
            .max_connections_per_ip
            .or(file.max_connections_per_ip)
            .unwrap_or(DEFAULT_MAX_CONNECTIONS_PER_IP);
        if max_connections_per_ip > 10_000_000 {
            return Err(invalid(
                "max-connections-per-ip",
                "must be between 0 (no per-address share) and 10000000",
            ));
        }
        let default_streams = crate::live::Limits::default();
        let streams = crate::live::Limits {
            buffer: args
                .stream_buffer
                .or(file.stream_buffer)
                .unwrap_or(default_streams.buffer),
            per_workspace: args
                .max_streams_per_workspace
                .or(file.max_streams_per_workspace)
                .unwrap_or(default_streams.per_workspace),
            per_ip: args
                .max_streams_per_ip
                .or(file.max_streams_per_ip)
                .unwrap_or(default_streams.per_ip),
        };
        if !(1..=1_000_000).contains(&streams.buffer) {
            return Err(invalid("stream-buffer", "must be between 1 and 1000000"));
        }
        if streams.per_workspace > 10_000_000 || streams.per_ip > 10_000_000 {
            return Err(invalid(
                "max-streams-per-workspace",
                "the stream caps must be at most 10000000",
            ));
        }
        let dns_resolver = match args
            .dns_resolver
            .clone()
            .or(file.dns_resolver)
            .filter(|s| !s.trim().is_empty())
        {
            None => None,
            Some(text) => Some(parse_resolver(&text).ok_or_else(|| {
                invalid(
                    "dns-resolver",
                    format!("{text:?} is not an address like 127.0.0.1:53 or [::1]:53"),
                )
            })?),
        };
        Ok(Config {
            listen,
            data_dir,
            database_url,
            public_url,
            log_format,
            log_level,
            smtp,
            trust_forwarded_for: args
                .trust_forwarded_for
                .or(file.trust_forwarded_for)
                .unwrap_or(false),
            notify_deny_private_addresses: args
                .notify_deny_private_addresses
                .or(file.notify_deny_private_addresses)
                .unwrap_or(false),
            checks_deny_private_addresses: args
                .checks_deny_private_addresses
                .or(file.checks_deny_private_addresses)
                .unwrap_or(false),
            rate_limits: file.rate_limits.unwrap_or_default(),
            plans,
            min_interval_seconds,
            heartbeat_retention_days,
            rollup_retention_days,
            max_in_flight_checks,
            scheduler_enabled: file.scheduler.unwrap_or(true),
            probe_name: probe_name.trim().to_string(),
            probe_ping_interval: std::time::Duration::from_secs(probe_ping_seconds),
            metrics_token: args
                .metrics_token
                .clone()
                .or(file.metrics_token)
                .filter(|t| !t.trim().is_empty()),
            header_read_timeout,
            idle_timeout,
            body_timeout,
            max_connections,
            max_connections_per_ip,
            streams,
            shutdown_grace,
            dns_resolver,
        })
    }

    /// The configuration for tests and benchmarks: everything default, data under `dir`.
    pub fn for_dir(dir: &Path, database_url: Option<String>) -> Config {
        let mut c = Config::for_store(&StoreArgs {
            data_dir: Some(dir.to_path_buf()),
            database_url,
            config: None,
        })
        .unwrap_or_else(|_| unreachable_config());
        c.log_level = "warn".into();
        c.scheduler_enabled = false;
        c
    }

    /// True when cookies must carry `Secure`.
    pub fn secure_cookies(&self) -> bool {
        self.public_url.scheme() == "https"
    }
}

fn retention(setting: &'static str, value: Option<u32>, default: u32) -> Result<u32, ConfigError> {
    match value {
        None => Ok(default),
        Some(d) if (1..=MAX_RETENTION_DAYS).contains(&d) => Ok(d),
        Some(d) => Err(invalid(
            setting,
            format!("{d} days: must be 1 to {MAX_RETENTION_DAYS}"),
        )),
    }
}

/// A whole number of seconds from 1 to a day.
fn seconds(
    setting: &'static str,
    value: Option<u64>,
    default: u64,
) -> Result<Duration, ConfigError> {
    match value.unwrap_or(default) {
        s @ 1..=86_400 => Ok(Duration::from_secs(s)),
        s => Err(invalid(setting, format!("{s} seconds: must be 1 to 86400"))),
    }
}

fn unreachable_config() -> Config {
    // The defaults above always validate; this is only the type-level fallback.
    Config {
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
        data_dir: PathBuf::from("./tocsin-data"),
        database_url: None,
        public_url: Url::parse("http://127.0.0.1:8080").unwrap_or_else(|_| unreachable!()),
        log_format: LogFormat::Human,
        log_level: "info".into(),
        smtp: None,
        trust_forwarded_for: false,
        notify_deny_private_addresses: false,
        checks_deny_private_addresses: false,
        rate_limits: RateLimits::default(),
        plans: Plans {
            default: DEFAULT_PLAN.into(),
            quotas: BTreeMap::new(),
        },
        min_interval_seconds: DEFAULT_MIN_INTERVAL_SECONDS,
        heartbeat_retention_days: DEFAULT_HEARTBEAT_RETENTION_DAYS,
        rollup_retention_days: DEFAULT_ROLLUP_RETENTION_DAYS,
        max_in_flight_checks: DEFAULT_MAX_IN_FLIGHT_CHECKS,
        scheduler_enabled: true,
        probe_name: DEFAULT_PROBE_NAME.into(),
        probe_ping_interval: std::time::Duration::from_secs(DEFAULT_PROBE_PING_SECONDS),
        metrics_token: None,
        header_read_timeout: Duration::from_secs(DEFAULT_HEADER_READ_TIMEOUT_SECONDS),
        idle_timeout: Duration::from_secs(DEFAULT_IDLE_TIMEOUT_SECONDS),
        body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECONDS),
        max_connections: DEFAULT_MAX_CONNECTIONS,
        max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
        streams: crate::live::Limits::default(),
        shutdown_grace: Duration::from_secs(DEFAULT_SHUTDOWN_GRACE_SECONDS),
        dns_resolver: None,
    }
}

/// `ip:port`, `[v6]:port`, or a bare address meaning port 53.
fn parse_resolver(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return (addr.port() != 0).then_some(addr);
    }
    let ip = text
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(text);
    ip.parse::<std::net::IpAddr>()
        .ok()
        .map(|ip| SocketAddr::new(ip, 53))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_setup() {
        let c = Config::resolve(&ServeArgs::default()).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.data_dir, PathBuf::from("./tocsin-data"));
        assert!(c.database_url.is_none());
        assert_eq!(c.public_url.as_str(), "http://127.0.0.1:8080/");
        assert_eq!(c.plans.default, DEFAULT_PLAN);
        assert_eq!(
            c.plans.quota(DEFAULT_PLAN),
            PlanQuota::default(),
            "self-hosting is unlimited"
        );
    }

    #[test]
    fn probe_settings_flag_over_file_and_validated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "probe_name = \"paris\"\nprobe_ping_seconds = 3\n").unwrap();
        let mut args = ServeArgs::default();
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.probe_name, DEFAULT_PROBE_NAME);
        assert_eq!(c.probe_ping_interval, std::time::Duration::from_secs(10));
        args.store.config = Some(file.clone());
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.probe_name, "paris");
        assert_eq!(c.probe_ping_interval, std::time::Duration::from_secs(3));
        args.probe_name = Some("lyon".into());
        assert_eq!(Config::resolve(&args).unwrap().probe_name, "lyon");
        args.probe_name = Some("  ".into());
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("probe-name"), "{err}");
        args.probe_name = None;
        std::fs::write(&file, "probe_ping_seconds = 0\n").unwrap();
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("probe_ping_seconds"), "{err}");
    }

    #[test]
    fn shutdown_grace_flag_over_file_and_validated() {
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("g.toml");
        std::fs::write(&file, "shutdown_grace_seconds = 4\n").unwrap();
        let mut args = ServeArgs::default();
        assert_eq!(
            Config::resolve(&args).unwrap().shutdown_grace,
            Duration::from_secs(10)
        );
        args.store.config = Some(file.clone());
        assert_eq!(
            Config::resolve(&args).unwrap().shutdown_grace,
            Duration::from_secs(4)
        );
        args.shutdown_grace_seconds = Some(0);
        assert_eq!(
            Config::resolve(&args).unwrap().shutdown_grace,
            Duration::ZERO
        );
        args.shutdown_grace_seconds = Some(86_400);
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("shutdown-grace-seconds"), "{err}");
    }

    #[test]
    fn precedence_flag_over_file_and_validation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:9000\"\npublic_url = \"https://status.example.org\"\n[plans]\ndefault = \"free\"\n[plans.quotas.free]\nmonitors = 5\n").unwrap();
        let mut args = ServeArgs::default();
        args.store.config = Some(file.clone());
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert!(c.secure_cookies());
        assert_eq!(c.plans.quota("free").monitors, Some(5));
        args.listen = Some("127.0.0.1:9100".into());
        assert_eq!(Config::resolve(&args).unwrap().listen.port(), 9100);
        args.listen = Some("nonsense".into());
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("listen"), "{err}");
        assert_eq!(c.heartbeat_retention_days, 14);
        assert_eq!(c.rollup_retention_days, 400);
        std::fs::write(
            &file,
            "heartbeat_retention_days = 3\nrollup_retention_days = 30\n",
        )
        .unwrap();
        args.listen = None;
        let c = Config::resolve(&args).unwrap();
        assert_eq!(
            (c.heartbeat_retention_days, c.rollup_retention_days),
            (3, 30)
        );
        std::fs::write(&file, "heartbeat_retention_days = 0\n").unwrap();
        assert!(Config::resolve(&args).is_err());
        std::fs::write(&file, "lisen = \"x\"\n").unwrap();
        args.listen = None;
        assert!(Config::resolve(&args).is_err());
    }

    #[test]
    fn dns_resolver_flag_over_file_and_validated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d.toml");
        std::fs::write(&file, "dns_resolver = \"127.0.0.1:5353\"\n").unwrap();
        let mut args = ServeArgs::default();
        assert_eq!(Config::resolve(&args).unwrap().dns_resolver, None);
        args.store.config = Some(file.clone());
        assert_eq!(
            Config::resolve(&args).unwrap().dns_resolver,
            Some("127.0.0.1:5353".parse().unwrap())
        );
        args.dns_resolver = Some("::1".into());
        assert_eq!(
            Config::resolve(&args).unwrap().dns_resolver,
            Some("[::1]:53".parse().unwrap())
        );
        args.dns_resolver = Some("ns.example.com:53".into());
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("dns-resolver"), "{err}");
        args.dns_resolver = Some("127.0.0.1:0".into());
        assert!(Config::resolve(&args).is_err());
    }

    #[test]
    fn connection_settings_default_flag_over_file_and_validated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        let mut args = ServeArgs::default();
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.header_read_timeout, Duration::from_secs(10));
        assert_eq!(c.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.body_timeout, Duration::from_secs(30));
        assert_eq!(c.shutdown_grace, Duration::from_secs(10));
        assert_eq!(
            (c.max_connections, c.max_connections_per_ip),
            (10_000, 1_000)
        );
        std::fs::write(
            &file,
            "header_read_timeout_seconds = 2\nidle_timeout_seconds = 3\nbody_timeout_seconds = 4\n\
             max_connections = 50\nmax_connections_per_ip = 0\nshutdown_grace_seconds = 5\n",
        )
        .unwrap();
        args.store.config = Some(file.clone());
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.header_read_timeout, Duration::from_secs(2));
        assert_eq!(c.idle_timeout, Duration::from_secs(3));
        assert_eq!(c.body_timeout, Duration::from_secs(4));
        assert_eq!(c.shutdown_grace, Duration::from_secs(5));
        assert_eq!((c.max_connections, c.max_connections_per_ip), (50, 0));
        args.shutdown_grace_seconds = Some(1);
        args.max_connections = Some(7);
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.shutdown_grace, Duration::from_secs(1));
        assert_eq!(c.max_connections, 7);
        args.header_read_timeout_seconds = Some(0);
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("header-read-timeout-seconds"), "{err}");
        args.header_read_timeout_seconds = None;
        args.max_connections = Some(0);
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("max-connections"), "{err}");
    }
}
