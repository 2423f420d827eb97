//! Server configuration. Each setting comes from, in order of precedence: a command-line flag,
//! its `TOCSIN_*` environment variable (both handled by clap), the optional TOML file named by
//! `--config`, then the built-in default. Everything is validated once, at start, into
//! [`Config`]; a bad value stops the process with a message naming the setting.
//!
//! The flags are in `args`, the file's shape in `file`, the rate limits' table in
//! `rate_limits`, and how each setting is resolved and checked in `resolve`; this module
//! holds the validated [`Config`] and the defaults.

mod args;
mod file;
mod rate_limits;
mod resolve;
mod sso;
mod stream_limits;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

pub use args::{ServeArgs, StoreArgs};
pub use file::{FileConfig, PlanQuota, PlansFile};
pub use rate_limits::RateLimits;
pub use sso::{OidcProvider, SSO_ROLES};
pub use stream_limits::StreamLimits;

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

    /// The plan a Stripe price sells, if one does.
    pub fn by_price(&self, price: &str) -> Option<&str> {
        self.quotas
            .iter()
            .find(|(_, q)| q.stripe_price.as_deref() == Some(price))
            .map(|(name, _)| name.as_str())
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
    pub streams: StreamLimits,
    /// How long in-flight requests (and on-demand checks) get to finish once shutdown begins.
    pub shutdown_grace: Duration,
    /// The DNS server custom-domain verification asks; `None` for the system's resolvers.
    pub dns_resolver: Option<SocketAddr>,
    /// Selling plans through Stripe; `None` (no secret key) turns billing off.
    pub stripe: Option<Stripe>,
    /// The OpenID providers people may sign in with (`[[sso.oidc]]`), in the file's order.
    pub sso: Vec<OidcProvider>,
}

/// The Stripe settings (see `crate::billing`).
#[derive(Clone)]
pub struct Stripe {
    pub secret_key: String,
    /// Every secret a webhook signature may be made with (several while one is rotated).
    pub webhook_secrets: Vec<String>,
    pub api_url: Url,
}

// The secrets stay out of logs and panics.
impl std::fmt::Debug for Stripe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe")
            .field("api_url", &self.api_url.as_str())
            .field("webhook_secrets", &self.webhook_secrets.len())
            .finish_non_exhaustive()
    }
}

/// Default of `stripe_api_url`.
pub const DEFAULT_STRIPE_API_URL: &str = "https://api.stripe.com";

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

impl Config {
    /// The live streams' buffer and caps.
    pub fn stream_limits(&self) -> StreamLimits {
        self.streams
    }

    /// Settings for commands that only open the database (`migrate`, `user create` ...).
    pub fn for_store(args: &StoreArgs) -> Result<Config, ConfigError> {
        Config::resolve(&ServeArgs {
            store: args.clone(),
            ..ServeArgs::default()
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
        streams: StreamLimits::default(),
        shutdown_grace: Duration::from_secs(DEFAULT_SHUTDOWN_GRACE_SECONDS),
        dns_resolver: None,
        stripe: None,
        sso: Vec::new(),
    }
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

    #[test]
    fn stripe_settings_from_flags_and_file_with_prices_per_plan() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(
            &file,
            "stripe_secret_key = \"sk_test_1\"\nstripe_webhook_secret = \"whsec_a, whsec_b\"\n\
             [plans]\ndefault = \"free\"\n[plans.quotas.free]\nmonitors = 5\n\
             [plans.quotas.team]\nmonitors = 50\nstripe_price = \"price_team\"\n",
        )
        .unwrap();
        let mut args = ServeArgs::default();
        assert!(
            Config::resolve(&args).unwrap().stripe.is_none(),
            "off by default"
        );
        args.store.config = Some(file.clone());
        let c = Config::resolve(&args).unwrap();
        let s = c.stripe.clone().unwrap();
        assert_eq!(s.webhook_secrets, vec!["whsec_a", "whsec_b"]);
        assert_eq!(s.api_url.as_str(), "https://api.stripe.com/");
        assert_eq!(c.plans.by_price("price_team"), Some("team"));
        assert_eq!(c.plans.by_price("price_other"), None);
        assert!(
            !format!("{s:?}").contains("sk_test_1"),
            "the key stays out of logs"
        );
        args.stripe_api_url = Some("ftp://x".into());
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("stripe-api-url"), "{err}");
        args.stripe_api_url = None;
        std::fs::write(&file, "stripe_secret_key = \"sk_test_1\"\n").unwrap();
        let err = Config::resolve(&args).unwrap_err().to_string();
        assert!(err.contains("stripe-webhook-secret"), "{err}");
    }
}
