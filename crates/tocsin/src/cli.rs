//! The command line: `serve`, `migrate`, `user create|verify`, `token create`, `probe` (a remote
//! probe), `probe-key create|list|revoke`, `bench`, `openapi` (prints the document) and
//! `config` (configuration as code, the `tocsin-config` crate: a client of the REST API). Each
//! subcommand is a thin call into the library (`tocsin::...`; this module belongs to the binary):
//! the domain layer for users and tokens (never the HTTP handlers), `server::openapi_text` for
//! the document, and the binary's `bench` module for `bench`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use tocsin::config::{Config, ServeArgs, StoreArgs};
use tocsin::domain::api_keys::{self};
use tocsin::domain::users::{self, SignUp};
use tocsin::store;

#[derive(Debug, Parser)]
#[command(
    name = "tocsin",
    version,
    about = "Uptime monitoring, alerting and status pages"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (API, scheduler and built-in probe).
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit.
    Migrate(StoreArgs),
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage personal access tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Run a remote probe for one region: connects out to the server and runs its checks.
    Probe(ProbeArgs),
    /// Manage remote probes' keys.
    #[command(subcommand)]
    ProbeKey(ProbeKeyCommand),
    /// Load-test the API and print throughput and latency.
    Bench(crate::bench::BenchArgs),
    /// Print the OpenAPI document.
    Openapi,
    /// Print the `Stripe-Signature` header Stripe would send for the body on standard input
    /// (for checking the webhook signer against Stripe's own libraries).
    #[command(hide = true)]
    StripeSign {
        /// The webhook signing secret (`whsec_...`).
        #[arg(long)]
        secret: String,
        /// The signature's time, Unix seconds (default: now).
        #[arg(long)]
        timestamp: Option<i64>,
    },
    /// Configuration as code: export, plan and apply a workspace from a file, import others'.
    #[command(subcommand)]
    Config(tocsin_config::cli::ConfigCommand),
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user and their workspace.
    Create {
        /// The user's sign-in email.
        #[arg(long)]
        email: String,
        /// At least 8 characters. Better from `TOCSIN_PASSWORD` or standard input (leave the
        /// flag out, or pass `-`): a command line is visible to other users of the machine.
        #[arg(long, env = "TOCSIN_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        /// The user's display name (default: the part of the email before `@`).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Mark a user's email address verified (for a server without SMTP, or a person whose
    /// address the operator knows): email-domain status pages and invitations to it open.
    Verify {
        /// The user's sign-in email.
        #[arg(long)]
        email: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Mint a token for a user's workspace; prints only the token.
    Create {
        /// The email of the user whose workspace the token acts in.
        #[arg(long)]
        email: String,
        /// A label to tell the token apart in `GET /api-keys`.
        #[arg(long, default_value = "cli")]
        name: String,
        /// `all`, or a comma-separated list of capabilities.
        #[arg(long, default_value = "all")]
        permissions: String,
        /// Comma-separated: `rest`, `mcp`.
        #[arg(long, default_value = "rest")]
        surfaces: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The server's root URL, e.g. `https://tocsin.example.com`.
    #[arg(long, env = "TOCSIN_SERVER")]
    pub server: String,
    /// The region this probe checks from; must be its key's region.
    #[arg(long, env = "TOCSIN_REGION")]
    pub region: String,
    /// The probe key (`prb_...`) from `tocsin probe-key create`. Prefer the environment
    /// variable: command lines are visible to other users of the machine.
    #[arg(long, env = "TOCSIN_KEY", hide_env_values = true)]
    pub key: String,
    /// Checks run at once, at most.
    #[arg(long, env = "TOCSIN_MAX_IN_FLIGHT", default_value_t = 1000)]
    pub max_in_flight: usize,
    /// Log filter, e.g. `info` or `tocsin=debug`.
    #[arg(long, env = "TOCSIN_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

#[derive(Debug, Subcommand)]
pub enum ProbeKeyCommand {
    /// Mint a key for a region's probes; prints only the key.
    Create {
        /// Lowercase letters, digits and `-`, 1 to 63 characters (not `local`).
        #[arg(long)]
        region: String,
        /// A label for the probe (default: the region).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List every key (one JSON object per line; the keys themselves are never shown).
    List {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Revoke a key: its probes are refused from then on and disconnected within a ping.
    Revoke {
        /// The key's id, as `tocsin probe-key list` shows it.
        id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        // `tocsin config` printed its own report; `plan` exits 2 when there are changes.
        Err(e) if e.downcast_ref::<ExitWith>().is_some() => {
            ExitCode::from(e.downcast_ref::<ExitWith>().map_or(1, |x| x.0))
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve(*args).await,
        Command::Migrate(args) => {
            let config = Config::for_store(&args)?;
            let db = store::Db::connect(config.database_url.as_deref(), &config.data_dir).await?;
            db.migrate().await?;
            db.close().await;
            eprintln!("migrations applied");
            Ok(())
        }
        Command::User(UserCommand::Create {
            email,
            password,
            name,
            store,
        }) => {
            let password = match password.filter(|p| p != "-") {
                Some(p) => p,
                None => read_password()?,
            };
            let state = tocsin::server::start_existing(Config::for_store(&store)?).await?;
            let input = SignUp {
                email,
                password,
                name,
            };
            let (user, ws) = users::create_user(state.cx(), &input, true)
                .await
                .map_err(tocsin::domain::error::describe)?;
            state.db().close().await;
            println!(
                "{}",
                serde_json::json!({"userId": user.id, "email": user.email, "workspaceId": ws.id})
            );
            Ok(())
        }
        Command::User(UserCommand::Verify { email, store }) => {
            let state = tocsin::server::start_existing(Config::for_store(&store)?).await?;
            let outcome =
                tocsin::domain::email_verification::verify_by_operator(state.cx(), &email)
                    .await
                    .map_err(tocsin::domain::error::describe);
            state.db().close().await;
            match outcome? {
                None => anyhow::bail!("no user with email {email}"),
                Some(newly) => println!(
                    "{}",
                    serde_json::json!({"email": email.trim().to_lowercase(), "emailVerified": true, "changed": newly})
                ),
            }
            Ok(())
        }
        Command::Token(TokenCommand::Create {
            email,
            name,
            permissions,
            surfaces,
            store,
        }) => {
            let state = tocsin::server::start_existing(Config::for_store(&store)?).await?;
            let token =
                api_keys::mint_for_user(state.cx(), &email, &name, &permissions, &surfaces).await?;
            state.db().close().await;
            println!("{token}");
            Ok(())
        }
        Command::Probe(args) => probe(args).await,
        Command::ProbeKey(cmd) => probe_key(cmd).await,
        Command::Bench(args) => crate::bench::run(args).await,
        Command::Openapi => {
            print!("{}", tocsin::server::openapi_text());
            Ok(())
        }
        Command::StripeSign { secret, timestamp } => {
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut body)?;
            let t = timestamp.unwrap_or_else(|| chrono::Utc::now().timestamp());
            println!("{}", tocsin::billing::signature::sign(&secret, t, &body));
            Ok(())
        }
        Command::Config(cmd) => match tocsin_config::cli::run(cmd).await {
            0 => Ok(()),
            code => Err(ExitWith(code).into()),
        },
    }
}

/// An exit code a subcommand chose, its message already printed.
#[derive(Debug, thiserror::Error)]
#[error("exit code {0}")]
struct ExitWith(u8);

/// The password from the first line of standard input (without its line ending).
fn read_password() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| anyhow::anyhow!("reading the password from standard input: {e}"))?;
    let password = line.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        anyhow::bail!(
            "password: pass --password, set TOCSIN_PASSWORD, or write it on standard input"
        );
    }
    Ok(password)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = Config::resolve(&args)?;
    tocsin::telemetry::init_logging(config.log_format, &config.log_level);
    // One server per embedded database: a second one would run every check again. Held until
    // the process ends. (On PostgreSQL several servers are the design.)
    let _lock = match config.database_url {
        None => {
            store::data_dir::prepare(&config.data_dir)?;
            Some(store::data_dir::ServerLock::acquire(&config.data_dir)?)
        }
        Some(_) => None,
    };
    // Handlers first: a stop sent while the server starts ends it in order, never by default.
    let shutdown = tocsin::server::shutdown_signal_or_hurry();
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| anyhow::anyhow!("binding {}: {e}", config.listen))?;
    let state = tocsin::server::start(config, None).await?;
    tocsin::server::run(listener, state, shutdown).await
}

async fn probe(args: ProbeArgs) -> anyhow::Result<()> {
    tocsin::telemetry::init_logging(tocsin::config::LogFormat::Human, &args.log_level);
    let server = url::Url::parse(&args.server)
        .map_err(|e| anyhow::anyhow!("server: {:?} is not a URL: {e}", args.server))?;
    if !tocsin::probes::keys::valid_region(&args.region) {
        anyhow::bail!("region: must be 1 to 63 lowercase letters, digits or '-'");
    }
    let opts = tocsin::probes::client::ProbeOptions {
        server,
        region: args.region,
        key: args.key,
        max_in_flight: args.max_in_flight.max(1),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tocsin::server::shutdown_signal().await;
        stop.cancel();
    });
    tocsin::probes::client::run(opts, cancel).await?;
    Ok(())
}

async fn probe_key(cmd: ProbeKeyCommand) -> anyhow::Result<()> {
    let (ProbeKeyCommand::Create { store, .. }
    | ProbeKeyCommand::List { store }
    | ProbeKeyCommand::Revoke { store, .. }) = &cmd;
    let config = Config::for_store(store)?;
    let db = store::Db::connect_existing(config.database_url.as_deref(), &config.data_dir).await?;
    db.migrate().await?;
    let now = tocsin::clock::Clock::now_ms(&tocsin::clock::SystemClock);
    let result = match cmd {
        ProbeKeyCommand::Create { region, name, .. } => {
            tocsin::probes::keys::create(&db, &region, name.as_deref(), now)
                .await
                .map(|minted| println!("{}", minted.key))
        }
        ProbeKeyCommand::List { .. } => store::probes::list(db.reader())
            .await
            .map_err(Into::into)
            .map(|rows| {
                for k in rows {
                    println!(
                        "{}",
                        serde_json::json!({
                            "id": k.id,
                            "region": k.region,
                            "name": k.name,
                            "createdAt": tocsin::clock::rfc3339(k.created_at),
                            "revokedAt": k.revoked_at.map(tocsin::clock::rfc3339),
                            "lastSeenAt": k.last_seen_at.map(tocsin::clock::rfc3339),
                        })
                    );
                }
            }),
        ProbeKeyCommand::Revoke { id, .. } => tocsin::probes::keys::revoke(&db, &id, now).await,
    };
    db.close().await;
    Ok(result?)
}
