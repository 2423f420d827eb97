//! The storage seam. One [`Db`] over either SQLite (embedded default, WAL) or PostgreSQL, chosen
//! by the database URL's scheme. Queries are written once in portable SQL (`$1` placeholders,
//! integer millisecond timestamps, text identifiers) and run through sqlx's `Any` driver; the
//! few places where the dialects differ ask [`Db::backend`]. Migrations are versioned per
//! backend under `migrations/`.
//!
//! SQLite allows one writer at a time, so on SQLite writes go through a single-connection pool
//! (no lock upgrades, no `SQLITE_BUSY`) while reads use a pool of their own; on PostgreSQL both
//! are the same pool, shared by every API node.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod batch;
pub mod billing;
pub mod channels;
pub mod corrupt;
pub mod data_dir;
pub mod deliveries;
pub mod dependencies;
pub mod email_needs;
pub mod email_verifications;
pub mod escalation;
pub mod events;
pub mod group_read;
pub mod heartbeat_partitions;
pub mod heartbeats;
pub mod incidents;
pub mod inventory;
pub mod invitations;
pub mod lane;
pub mod leases;
pub mod maintenance;
pub mod mcp_sessions;
pub mod members;
pub mod memberships;
pub mod monitor_channels;
pub mod monitor_list;
pub mod monitors;
pub mod monitors_flap;
pub mod oauth;
pub mod postmortems;
pub mod probe_relay;
pub mod probes;
pub mod projects;
pub mod publishable_keys;
pub mod push;
pub mod sessions;
pub mod sso;
pub mod status;
pub mod status_page_domains;
pub mod status_pages;
pub mod stream;
pub mod subscribers;
pub mod users;
pub mod versioned;
pub mod workspaces;

pub use versioned::Versioned;

/// A condition on `monitors.seq` that keeps the monitors of `partitions` (numbers below
/// [`tocsin_core::partition::COUNT`], so written inline), to `AND` onto a query's filter;
/// `None` keeps every monitor.
pub fn in_partitions(partitions: Option<&[usize]>) -> String {
    match partitions {
        None => String::new(),
        Some([]) => " AND 1 = 0".to_string(),
        Some(ps) => {
            let list: Vec<String> = ps.iter().map(usize::to_string).collect();
            format!(
                " AND (seq % {}) IN ({})",
                tocsin_core::partition::COUNT,
                list.join(", ")
            )
        }
    }
}

/// `$start, $start+1, ...`: the placeholders of an `IN (...)` list of `n` values whose first
/// is bound as `$start`.
pub fn in_list(start: usize, n: usize) -> String {
    (start..start + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Executor};

/// Which database the service runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
pub struct Db {
    backend: Backend,
    read: AnyPool,
    write: AnyPool,
    /// The heartbeat writer's own connections: on SQLite the one writer connection, on
    /// PostgreSQL a small pool of its own, so a flood of reads and per-request writes queued on
    /// the shared pool never times the group commit out.
    batch: AnyPool,
    /// Plain connections for the read every scheduled check makes (see [`lane`]).
    lane: std::sync::Arc<lane::Lane>,
    /// The scheduler's runs' state reads, grouped (see [`group_read`]).
    run_rows: std::sync::Arc<group_read::GroupRead<monitors::MonitorRow>>,
}

/// A transaction on the write side.
pub type Tx = sqlx::Transaction<'static, sqlx::Any>;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("unsupported database URL scheme in {0:?}: use sqlite:// or postgres://")]
    Scheme(String),
    /// The embedded database's directory cannot be created or written (see [`data_dir`]).
    #[error(transparent)]
    DataDir(#[from] data_dir::DataDirError),
    #[error(transparent)]
    Sqlx(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database server did not answer (or refused us): where it was tried, and why.
    #[error("could not connect to PostgreSQL at {0}: {1}")]
    Unreachable(String, String),
    /// A command that works on an existing database found none.
    #[error("no Tocsin database at {0}; pass --data-dir or --database-url (or create one with `tocsin migrate`)")]
    NoDatabase(String),
}

impl Db {
    /// Opens the database named by `url`; `None` means the embedded SQLite file under `data_dir`.
    pub async fn connect(url: Option<&str>, data_dir: &Path) -> Result<Db, StoreError> {
        sqlx::any::install_default_drivers();
        let url = match url {
            Some(u) => u.to_string(),
            None => {
                data_dir::prepare(data_dir)?;
                format!(
                    "sqlite://{}?mode=rwc",
                    data_dir.join(data_dir::DB_FILE).display()
                )
            }
        };
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(StoreError::Scheme(url));
        };
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        match backend {
            Backend::Sqlite => {
                let write = sqlite_pool(1).connect_with(options.clone()).await?;
                let read = sqlite_pool(8).connect_with(options.clone()).await?;
                Ok(Db {
                    backend,
                    read,
                    batch: write.clone(),
                    write,
                    lane: std::sync::Arc::new(lane::Lane::new(options, true)),
                    run_rows: Default::default(),
                })
            }
            Backend::Postgres => {
                // One plain connection first: a pool that cannot connect only says it timed
                // out, while this says why (refused, unknown host, bad password ...).
                match tokio::time::timeout(
                    CONNECT_TIMEOUT,
                    <sqlx::AnyConnection as sqlx::Connection>::connect_with(&options),
                )
                .await
                {
                    Ok(Ok(conn)) => {
                        let _ = sqlx::Connection::close(conn).await;
                    }
                    Ok(Err(e)) => {
                        return Err(StoreError::Unreachable(endpoint(&url), e.to_string()))
                    }
                    Err(_) => {
                        return Err(StoreError::Unreachable(
                            endpoint(&url),
                            format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
                        ))
                    }
                }
                let pool = AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .connect_with(options.clone())
                    .await
                    .map_err(|e| StoreError::Unreachable(endpoint(&url), e.to_string()))?;
                // Two: one batch commits while the next one is being built.
                let batch = AnyPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(Duration::from_secs(30))
                    .connect_with(options.clone())
                    .await?;
                Ok(Db {
                    backend,
                    read: pool.clone(),
                    write: pool,
                    batch,
                    lane: std::sync::Arc::new(lane::Lane::new(options, false)),
                    run_rows: Default::default(),
                })
            }
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool for reads.
    pub fn reader(&self) -> &AnyPool {
        &self.read
    }

    /// The read lane, for the read every scheduled check makes (see [`lane`]).
    pub fn lane(&self) -> &lane::Lane {
        &self.lane
    }

    /// The grouped state reads of the scheduler's runs (see [`group_read`]).
    pub fn run_rows(&self) -> &group_read::GroupRead<monitors::MonitorRow> {
        &self.run_rows
    }

    /// The pool for single-statement writes.
    pub fn writer(&self) -> &AnyPool {
        &self.write
    }

    /// A write transaction. On SQLite it takes the write lock at `BEGIN` (IMMEDIATE): a
    /// deferred transaction that reads before it writes cannot wait for the lock when it
    /// upgrades (SQLite answers `SQLITE_BUSY` at once rather than risk a deadlock), while a
    /// waiting `BEGIN` honours the busy timeout. Every write goes through the one writer
    /// connection anyway, so taking the lock early costs nothing.
    pub async fn begin(&self) -> Result<Tx, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.write.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.write.begin().await,
        }
    }

    /// A write transaction of the heartbeat writer (see the `batch` field).
    pub async fn begin_batch(&self) -> Result<Tx, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.batch.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.batch.begin().await,
        }
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&self.write).await?,
            Backend::Postgres => {
                POSTGRES_MIGRATIONS.run(&self.write).await?;
                // The coming days' heartbeat partitions, before the first row of today.
                let now = chrono::Utc::now().timestamp_millis();
                heartbeat_partitions::create_ahead(self, now).await?;
            }
        }
        Ok(())
    }

    /// Opens a database that must already exist and hold Tocsin's tables: for the commands
    /// that act on a running installation (`user create`, `token create`, `probe-key`),
    /// which must never create an empty database where a path or URL was mistyped.
    pub async fn connect_existing(url: Option<&str>, data_dir: &Path) -> Result<Db, StoreError> {
        let place = match url {
            None => {
                let file = data_dir.join("tocsin.db");
                if !file.is_file() {
                    return Err(StoreError::NoDatabase(data_dir.display().to_string()));
                }
                data_dir.display().to_string()
            }
            Some(u) => redacted(u),
        };
        let db = Db::connect(url, data_dir).await?;
        let initialised = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM _sqlx_migrations")
            .fetch_one(&db.read)
            .await
            .is_ok_and(|n| n > 0);
        if !initialised {
            db.close().await;
            return Err(StoreError::NoDatabase(place));
        }
        Ok(db)
    }

    /// True when every migration this binary knows has been applied.
    pub async fn migrations_current(&self) -> Result<bool, sqlx::Error> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        let latest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success = TRUE")
                .fetch_one(&self.read)
                .await?;
        Ok(applied.unwrap_or(0) >= latest)
    }

    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .execute(&self.read)
            .await
            .map(|_| ())
    }

    /// Connections in use and idle, for `/metrics`.
    pub fn pool_stats(&self) -> (u32, usize) {
        // On SQLite the batch pool is the write pool; on PostgreSQL the write pool is the read
        // pool. Either way, count each pool once.
        let other = match self.backend {
            Backend::Sqlite => &self.write,
            Backend::Postgres => &self.batch,
        };
        (
            self.read.size() + other.size(),
            self.read.num_idle() + other.num_idle(),
        )
    }

    pub async fn close(&self) {
        self.lane.close().await;
        self.batch.close().await;
        self.write.close().await;
        self.read.close().await;
    }
}

/// How long connecting to PostgreSQL may take before the server gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `host:port/database` of a PostgreSQL URL, for messages (never the credentials).
fn endpoint(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}:{}{}",
            u.host_str().unwrap_or("localhost"),
            u.port().unwrap_or(5432),
            u.path()
        ),
        Err(_) => "the given --database-url".to_string(),
    }
}

/// A database URL without its password, for messages.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "the given --database-url".to_string(),
    }
}

/// What every SQLite connection runs first. Incremental auto-vacuum lets pruning hand space
/// back. It must come first: switching to WAL writes the header of a fresh file, after which
/// the auto-vacuum mode can no longer change (on an existing database the pragma is a harmless
/// no-op). WAL lets readers run beside the writer; NORMAL sync is durable across process
/// crashes in WAL mode.
const SQLITE_SETUP: &str = "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; \
     PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;";

fn sqlite_pool(max: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        // An embedded connection is a handle on a local file: nothing can hang up on it while
        // it idles, so the default ping before every acquire (a round trip to the
        // connection's worker thread, a third of a simple query's cost) proves nothing. The
        // pool still pings each connection as it comes back, after its statements ran.
        .test_before_acquire(false)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute(SQLITE_SETUP).await?;
                Ok(())
            })
        })
}

/// The backend an open connection (or transaction) talks to.
pub fn backend_of(conn: &sqlx::AnyConnection) -> Backend {
    if conn.backend_name().eq_ignore_ascii_case("sqlite") {
        Backend::Sqlite
    } else {
        Backend::Postgres
    }
}

/// Encodes a list of plain tokens (capabilities, surfaces) for a text column.
pub fn join_list<I: IntoIterator<Item = S>, S: AsRef<str>>(items: I) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Anything a query can run on: a pool, a connection, or an open transaction.
pub trait Exec<'e>: Executor<'e, Database = sqlx::Any> {}
impl<'e, T: Executor<'e, Database = sqlx::Any>> Exec<'e> for T {}

/// A query over the `Any` driver, as the store builds them.
pub type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;
