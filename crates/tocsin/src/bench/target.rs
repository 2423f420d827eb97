//! What the bench loads: either a server it starts in-process (on a fresh SQLite data directory
//! or a fresh PostgreSQL database, both removed afterwards) or an external server named by
//! `--url`. This module owns starting, stopping and cleaning up after the in-process server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use sqlx::{Connection, Executor, PgConnection};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use url::Url;

use tocsin::config::Config;
use tocsin::server::AppState;

/// How long stopping the in-process server may take before the bench moves on.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// A running in-process server and what must be cleaned up after it.
pub struct LocalServer {
    pub addr: SocketAddr,
    pub state: AppState,
    pub backend: String,
    /// On PostgreSQL: the scratch database's URL and name.
    pub database: Option<(String, String)>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    scratch: Scratch,
}

/// The throwaway storage under the in-process server.
enum Scratch {
    /// A temporary SQLite data directory, deleted afterwards.
    Dir(PathBuf),
    /// A database created on a PostgreSQL server, dropped afterwards through `admin_url`.
    Database { admin_url: String, name: String },
}

impl LocalServer {
    /// Creates the scratch storage, opens and migrates it, binds 127.0.0.1:0 and starts
    /// serving, all on `rt` (the server's runtime) so database connections and sockets are
    /// driven by the server's threads.
    /// The configuration is adjusted by `edit` first (the monitor scenarios lower the minimum
    /// interval).
    pub fn start_with(
        rt: &Runtime,
        database_url: Option<&str>,
        edit: impl FnOnce(&mut Config),
    ) -> anyhow::Result<LocalServer> {
        let suffix = format!("{:016x}", rand::random::<u64>());
        let dir = std::env::temp_dir().join(format!("tocsin-bench-{suffix}"));
        let (scratch, url, backend) = match database_url {
            None => (Scratch::Dir(dir.clone()), None, "sqlite".to_string()),
            Some(admin_url) => {
                let name = format!("tocsin_bench_{suffix}");
                let url = rt.block_on(create_database(admin_url, &name))?;
                (
                    Scratch::Database {
                        admin_url: admin_url.to_string(),
                        name,
                    },
                    Some(url),
                    "postgres".to_string(),
                )
            }
        };
        // From here on `scratch` must be cleaned up whatever happens.
        let mut config = Config::for_dir(&dir, url);
        edit(&mut config);
        let database = match &scratch {
            Scratch::Database { name, .. } => {
                config.database_url.clone().map(|u| (u, name.clone()))
            }
            Scratch::Dir(_) => None,
        };
        let state = match rt.block_on(tocsin::server::start(config, None)) {
            Ok(s) => s,
            Err(e) => {
                scratch.clean_up(rt);
                return Err(e.context("starting the in-process server"));
            }
        };
        let mut server = LocalServer {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            state,
            database,
            backend,
            stop: None,
            served: None,
            scratch,
        };
        let listener = match rt.block_on(tokio::net::TcpListener::bind(server.addr)) {
            Ok(l) => l,
            Err(e) => {
                server.stop(rt);
                return Err(anyhow::anyhow!("binding 127.0.0.1:0: {e}"));
            }
        };
        server.addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let state = server.state.clone();
        server.served = Some(rt.spawn(tocsin::server::run(listener, state, async move {
            let _ = stop_rx.await;
        })));
        server.stop = Some(stop_tx);
        Ok(server)
    }

    /// Stops serving, waits for the database to close, and removes the scratch storage.
    /// Problems are reported on stderr rather than returned: the results are already in.
    pub fn stop(mut self, rt: &Runtime) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.served.take() {
            Some(served) => {
                match rt.block_on(async { tokio::time::timeout(STOP_TIMEOUT, served).await }) {
                    Ok(Ok(Ok(()))) => {}
                    Ok(Ok(Err(e))) => eprintln!("warning: the in-process server failed: {e:#}"),
                    Ok(Err(e)) => eprintln!("warning: the in-process server task failed: {e}"),
                    Err(_) => eprintln!("warning: the in-process server did not stop in time"),
                }
            }
            // Never served: close the database ourselves.
            None => rt.block_on(self.state.db().close()),
        }
        self.scratch.clean_up(rt);
    }
}

impl Scratch {
    fn clean_up(&self, rt: &Runtime) {
        match self {
            Scratch::Dir(dir) => {
                if let Err(e) = std::fs::remove_dir_all(dir) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        eprintln!("warning: could not remove {}: {e}", dir.display());
                    }
                }
            }
            Scratch::Database { admin_url, name } => {
                if let Err(e) = rt.block_on(drop_database(admin_url, name)) {
                    eprintln!("warning: could not drop database {name}: {e:#}");
                }
            }
        }
    }
}

/// Creates database `name` on the server of `admin_url` and returns a URL for it (the same
/// server, user and options, another database).
async fn create_database(admin_url: &str, name: &str) -> anyhow::Result<String> {
    let url = database_url_for(admin_url, name)?;
    let mut conn = PgConnection::connect(admin_url)
        .await
        .map_err(|e| anyhow::anyhow!("connecting to {}: {e}", redact(admin_url)))?;
    // `name` is generated from hex digits only, so quoting it is enough.
    conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .map_err(|e| anyhow::anyhow!("creating database {name}: {e}"))?;
    conn.close().await?;
    Ok(url)
}

async fn drop_database(admin_url: &str, name: &str) -> anyhow::Result<()> {
    let mut conn = PgConnection::connect(admin_url).await?;
    // FORCE (PostgreSQL 13+) ends sessions a slow pool shutdown may have left behind.
    conn.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
        .await?;
    conn.close().await?;
    Ok(())
}

/// `admin_url` with its database (the path) replaced by `name`.
pub fn database_url_for(admin_url: &str, name: &str) -> anyhow::Result<String> {
    let mut url = Url::parse(admin_url)
        .map_err(|e| anyhow::anyhow!("invalid --database-url {}: {e}", redact(admin_url)))?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        anyhow::bail!("--database-url must be a postgres:// URL");
    }
    url.set_path(&format!("/{name}"));
    Ok(url.to_string())
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "(unparseable URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_url_keeps_server_and_options() {
        let u = database_url_for(
            "postgres://postgres:pw@127.0.0.1:5432/test?sslmode=disable",
            "tocsin_bench_ab",
        )
        .expect("a postgres URL");
        assert_eq!(
            u,
            "postgres://postgres:pw@127.0.0.1:5432/tocsin_bench_ab?sslmode=disable"
        );
        assert!(database_url_for("sqlite://x.db", "n").is_err());
        assert!(redact("postgres://u:secret@h/db").contains("***"));
    }
}
