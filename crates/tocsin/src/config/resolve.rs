//! Resolving the settings: each one from its flag or environment variable, else the file, else
//! its default, validated into [`Config`]. One function per setting (or per group of settings
//! checked together), called in a fixed order so that the first bad setting is the one named.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

use super::file::{load_file, FileConfig};
use super::*;

impl Config {
    pub fn resolve(args: &ServeArgs) -> Result<Config, ConfigError> {
        let file = load_file(args.store.config.as_deref())?;
        let listen = listen(args, &file)?;
        let data_dir = args
            .store
            .data_dir
            .clone()
            .or(file.data_dir.clone())
            .unwrap_or_else(|| PathBuf::from("./tocsin-data"));
        let database_url = database_url(args, &file)?;
        let public_url = public_url(args, &file, listen)?;
        let log_format = log_format(args, &file)?;
        let log_level = log_level(args, &file)?;
        let smtp = smtp(args, &file)?;
        let plans = plans(&file)?;
        let min_interval_seconds = min_interval_seconds(&file)?;
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
        let max_in_flight_checks = max_in_flight_checks(&file)?;
        let probe_name = probe_name(args, &file)?;
        let probe_ping_seconds = probe_ping_seconds(&file)?;
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
        let shutdown_grace = shutdown_grace(args, &file)?;
        let (max_connections, max_connections_per_ip) = connections(args, &file)?;
        let streams = streams(args, &file)?;
        let dns_resolver = dns_resolver(args, &file)?;
        let stripe = stripe(args, &file)?;
        let sso = super::sso::providers(file.sso.as_ref())?;
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
            stripe,
            sso,
        })
    }
}

fn listen(args: &ServeArgs, file: &FileConfig) -> Result<SocketAddr, ConfigError> {
    let listen_text = args
        .listen
        .clone()
        .or(file.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    listen_text.parse().map_err(|_| {
        invalid(
            "listen",
            format!("{listen_text:?} is not an address like 127.0.0.1:8080"),
        )
    })
}

fn database_url(args: &ServeArgs, file: &FileConfig) -> Result<Option<String>, ConfigError> {
    let database_url = args
        .store
        .database_url
        .clone()
        .or(file.database_url.clone())
        .filter(|s| !s.is_empty());
    if let Some(u) = &database_url {
        if !(u.starts_with("sqlite:") || u.starts_with("postgres:") || u.starts_with("postgresql:"))
        {
            return Err(invalid(
                "database-url",
                "must start with sqlite:// or postgres://",
            ));
        }
    }
    Ok(database_url)
}

/// The public root URL, by default `http://` + the `listen` address.
fn public_url(args: &ServeArgs, file: &FileConfig, listen: SocketAddr) -> Result<Url, ConfigError> {
    let public_text = args
        .public_url
        .clone()
        .or(file.public_url.clone())
        .unwrap_or_else(|| format!("http://{listen}"));
    let public_url = Url::parse(&public_text).map_err(|e| invalid("public-url", e.to_string()))?;
    if !matches!(public_url.scheme(), "http" | "https") || public_url.host().is_none() {
        return Err(invalid(
            "public-url",
            "must be an http:// or https:// URL with a host",
        ));
    }
    Ok(public_url)
}

fn log_format(args: &ServeArgs, file: &FileConfig) -> Result<LogFormat, ConfigError> {
    match args
        .log_format
        .clone()
        .or(file.log_format.clone())
        .as_deref()
    {
        None | Some("human") => Ok(LogFormat::Human),
        Some("json") => Ok(LogFormat::Json),
        Some(other) => Err(invalid(
            "log-format",
            format!("{other:?}: use human or json"),
        )),
    }
}

fn log_level(args: &ServeArgs, file: &FileConfig) -> Result<String, ConfigError> {
    let log_level = args
        .log_level
        .clone()
        .or(file.log_level.clone())
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
    Ok(log_level)
}

fn smtp(args: &ServeArgs, file: &FileConfig) -> Result<Option<Smtp>, ConfigError> {
    let Some(url) = args.smtp_url.clone().or(file.smtp_url.clone()) else {
        return Ok(None);
    };
    let parsed = Url::parse(&url).map_err(|e| invalid("smtp-url", e.to_string()))?;
    if !matches!(parsed.scheme(), "smtp" | "smtps") {
        return Err(invalid("smtp-url", "must start with smtp:// or smtps://"));
    }
    // Mail from a made-up sender is refused or binned by most servers: ask for one.
    let Some(from) = args.smtp_from.clone().or(file.smtp_from.clone()) else {
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
    Ok(Some(Smtp { url, from }))
}

fn plans(file: &FileConfig) -> Result<Plans, ConfigError> {
    let Some(p) = &file.plans else {
        return Ok(Plans {
            default: DEFAULT_PLAN.into(),
            quotas: BTreeMap::new(),
        });
    };
    let default = p.default.clone().unwrap_or_else(|| DEFAULT_PLAN.into());
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
    Ok(Plans {
        default,
        quotas: p.quotas.clone(),
    })
}

/// The Stripe settings: all of them need the secret key; a webhook secret is required with it
/// (an unverifiable webhook would have to be refused anyway).
fn stripe(args: &ServeArgs, file: &FileConfig) -> Result<Option<Stripe>, ConfigError> {
    let nonempty = |s: &String| !s.trim().is_empty();
    let Some(secret_key) = args
        .stripe_secret_key
        .clone()
        .or(file.stripe_secret_key.clone())
        .filter(nonempty)
    else {
        return Ok(None);
    };
    let webhook_secrets: Vec<String> = args
        .stripe_webhook_secret
        .clone()
        .or(file.stripe_webhook_secret.clone())
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if webhook_secrets.is_empty() {
        return Err(invalid(
            "stripe-webhook-secret",
            "is required with --stripe-secret-key: the endpoint's signing secret (whsec_...) from Stripe's dashboard",
        ));
    }
    let api_text = args
        .stripe_api_url
        .clone()
        .or(file.stripe_api_url.clone())
        .filter(nonempty)
        .unwrap_or_else(|| DEFAULT_STRIPE_API_URL.into());
    let api_url = Url::parse(&api_text).map_err(|e| invalid("stripe-api-url", e.to_string()))?;
    if !matches!(api_url.scheme(), "http" | "https") || api_url.host().is_none() {
        return Err(invalid(
            "stripe-api-url",
            "must be an http:// or https:// URL with a host",
        ));
    }
    Ok(Some(Stripe {
        secret_key: secret_key.trim().to_string(),
        webhook_secrets,
        api_url,
    }))
}

fn min_interval_seconds(file: &FileConfig) -> Result<u64, ConfigError> {
    let min_interval_seconds = file
        .min_interval_seconds
        .unwrap_or(DEFAULT_MIN_INTERVAL_SECONDS);
    if min_interval_seconds == 0 || min_interval_seconds > 86_400 {
        return Err(invalid(
            "min_interval_seconds",
            "must be between 1 and 86400 seconds",
        ));
    }
    Ok(min_interval_seconds)
}

fn max_in_flight_checks(file: &FileConfig) -> Result<usize, ConfigError> {
    let max_in_flight_checks = file
        .max_in_flight_checks
        .unwrap_or(DEFAULT_MAX_IN_FLIGHT_CHECKS);
    if max_in_flight_checks == 0 || max_in_flight_checks > 1_000_000 {
        return Err(invalid(
            "max_in_flight_checks",
            "must be between 1 and 1000000",
        ));
    }
    Ok(max_in_flight_checks)
}

/// The built-in probe's name, as given (the caller trims it).
fn probe_name(args: &ServeArgs, file: &FileConfig) -> Result<String, ConfigError> {
    let probe_name = args
        .probe_name
        .clone()
        .or(file.probe_name.clone())
        .unwrap_or_else(|| DEFAULT_PROBE_NAME.into());
    let name_chars = probe_name.trim().chars().count();
    if name_chars == 0 || name_chars > 100 || probe_name.chars().any(|c| !crate::text::printable(c))
    {
        return Err(invalid(
            "probe-name",
            "must be 1 to 100 printable characters",
        ));
    }
    Ok(probe_name)
}

fn probe_ping_seconds(file: &FileConfig) -> Result<u64, ConfigError> {
    let probe_ping_seconds = file
        .probe_ping_seconds
        .unwrap_or(DEFAULT_PROBE_PING_SECONDS);
    if !(1..=300).contains(&probe_ping_seconds) {
        return Err(invalid(
            "probe_ping_seconds",
            "must be between 1 and 300 seconds",
        ));
    }
    Ok(probe_ping_seconds)
}

fn shutdown_grace(args: &ServeArgs, file: &FileConfig) -> Result<Duration, ConfigError> {
    // 0 is allowed: stop at once, cancelling (and recording) what is in flight.
    match args
        .shutdown_grace_seconds
        .or(file.shutdown_grace_seconds)
        .unwrap_or(DEFAULT_SHUTDOWN_GRACE_SECONDS)
    {
        s @ 0..=3600 => Ok(Duration::from_secs(s)),
        s => Err(invalid(
            "shutdown-grace-seconds",
            format!("{s} seconds: must be 0 to 3600"),
        )),
    }
}

/// The connection caps: in all, and per client address.
fn connections(args: &ServeArgs, file: &FileConfig) -> Result<(usize, usize), ConfigError> {
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
    Ok((max_connections, max_connections_per_ip))
}

fn streams(args: &ServeArgs, file: &FileConfig) -> Result<StreamLimits, ConfigError> {
    let default_streams = StreamLimits::default();
    let streams = StreamLimits {
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
    Ok(streams)
}

fn dns_resolver(args: &ServeArgs, file: &FileConfig) -> Result<Option<SocketAddr>, ConfigError> {
    match args
        .dns_resolver
        .clone()
        .or(file.dns_resolver.clone())
        .filter(|s| !s.trim().is_empty())
    {
        None => Ok(None),
        Some(text) => Ok(Some(parse_resolver(&text).ok_or_else(|| {
            invalid(
                "dns-resolver",
                format!("{text:?} is not an address like 127.0.0.1:53 or [::1]:53"),
            )
        })?)),
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
