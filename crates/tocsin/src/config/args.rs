//! The command-line flags (each with its `TOCSIN_*` environment variable, both read by clap)
//! of the commands that open the database and of `tocsin serve`.

use std::path::PathBuf;

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
    /// Stripe's secret API key (`sk_...`) for selling plans (default: none, billing is off).
    #[arg(long, env = "TOCSIN_STRIPE_SECRET_KEY")]
    pub stripe_secret_key: Option<String>,
    /// Stripe's webhook signing secrets (`whsec_...`), comma-separated while one is rotated
    /// (default: none; the webhook path answers 404 without one).
    #[arg(long, env = "TOCSIN_STRIPE_WEBHOOK_SECRET")]
    pub stripe_webhook_secret: Option<String>,
    /// Stripe's API root (default `https://api.stripe.com`).
    #[arg(long, env = "TOCSIN_STRIPE_API_URL")]
    pub stripe_api_url: Option<String>,
}
