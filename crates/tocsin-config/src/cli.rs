//! The `tocsin config ...` subcommands: their flags and what each prints and exits with
//! (`plan`: 0 nothing to do, 2 changes, 1 error; the others 0 or 1).

use std::io::Write;

use clap::{Args, Subcommand};

use crate::apply::{self, ApplyError};
use crate::client::Client;
use crate::load::{self, Loaded};
use crate::plan;
use crate::remote::Remote;

/// Where the server is and who acts.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// The server's root URL, e.g. `https://tocsin.example.com`.
    #[arg(long, env = "TOCSIN_SERVER")]
    pub server: String,
    /// A personal access token (`svc_...`). Prefer the environment variable.
    #[arg(long, env = "TOCSIN_TOKEN", hide_env_values = true)]
    pub token: String,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Print the workspace as a configuration file (secrets as `${...}` placeholders).
    Export {
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Show what `apply` would change; exits 0 when nothing, 2 when there are changes.
    Plan {
        /// The configuration file (YAML or JSON).
        #[arg(short = 'f', long = "file")]
        file: String,
        /// Also plan to delete what the file does not name.
        #[arg(long)]
        prune: bool,
        /// Save the plan (with the version of each item it changes) for `apply --plan`.
        #[arg(long)]
        out: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Make the workspace what the file says.
    Apply {
        /// The configuration file (YAML or JSON).
        #[arg(short = 'f', long = "file")]
        file: String,
        /// Delete what the file does not name (never without this flag).
        #[arg(long)]
        prune: bool,
        /// Apply exactly this saved plan (`plan --out`): if the workspace changed since, stop.
        #[arg(long)]
        plan: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print the file's JSON Schema (for editors).
    Schema,
    /// Print a configuration file made from another tool's configuration.
    #[command(subcommand)]
    Import(ImportCommand),
}

#[derive(Debug, Clone, Subcommand)]
pub enum ImportCommand {
    /// A Gatus `config.yaml`.
    Gatus { file: String },
    /// The JSON of Healthchecks' `GET /api/v3/checks/`.
    Healthchecks { file: String },
    /// An Uptime Kuma `kuma.db` (1.23 or 2.x), read without writing to it.
    UptimeKuma { file: String },
}

/// Runs one subcommand; the process's exit code.
pub async fn run(cmd: ConfigCommand) -> u8 {
    match cmd {
        ConfigCommand::Schema => {
            println!("{}", crate::model::schema_text());
            0
        }
        ConfigCommand::Export { server } => match export(&server).await {
            Ok(text) => {
                print!("{text}");
                0
            }
            Err(e) => fail(&e),
        },
        ConfigCommand::Plan {
            file,
            prune,
            out,
            server,
        } => match prepare(&file, prune, &server).await {
            Ok((_, _, _, p)) => {
                if let Some(out) = out {
                    let saved = serde_json::to_string_pretty(&p).unwrap_or_default();
                    if let Err(e) = std::fs::write(&out, saved) {
                        eprintln!("{out}: {e}");
                        return 1;
                    }
                }
                println!("{p}");
                if p.is_empty() {
                    0
                } else {
                    2
                }
            }
            Err(e) => fail(&e),
        },
        ConfigCommand::Apply {
            file,
            prune,
            plan: saved,
            server,
        } => {
            let (client, loaded, remote, mut p) = match prepare(&file, prune, &server).await {
                Ok(x) => x,
                Err(e) => return fail(&e),
            };
            if let Some(saved) = saved {
                if let Err(e) = follow_saved(&saved, &mut p) {
                    return fail(&e);
                }
            }
            if p.is_empty() {
                println!("{p}");
                return 0;
            }
            let report = apply::apply(&client, &loaded, &remote, &p).await;
            for d in &report.done {
                println!("{d}");
            }
            match report.failed {
                None => {
                    println!("Applied {} changes.", report.done.len());
                    0
                }
                Some((what, e)) => {
                    let _ = std::io::stdout().flush();
                    eprintln!("error: {what}: {e}");
                    eprintln!(
                        "Stopped: {} changes done, {} not done (run apply again to finish):",
                        report.done.len(),
                        report.not_done.len() + 1
                    );
                    eprintln!("  {what}");
                    for n in &report.not_done {
                        eprintln!("  {n}");
                    }
                    1
                }
            }
        }
        ConfigCommand::Import(which) => {
            let result = match &which {
                ImportCommand::Gatus { file } => {
                    read(file).and_then(|t| crate::import::gatus::import(&t).map_err(Into::into))
                }
                ImportCommand::Healthchecks { file } => read(file)
                    .and_then(|t| crate::import::healthchecks::import(&t).map_err(Into::into)),
                ImportCommand::UptimeKuma { file } => crate::import::uptime_kuma::import(file)
                    .await
                    .map_err(Into::into),
            };
            match result {
                Ok(imported) => {
                    print!("{}", crate::emit::to_yaml(&imported.file));
                    for note in &imported.notes {
                        eprintln!("{note}");
                    }
                    0
                }
                Err(e) => fail(&e),
            }
        }
    }
}

fn fail(e: &anyhow_like::Error) -> u8 {
    eprintln!("{e}");
    1
}

fn read(path: &str) -> Result<String, anyhow_like::Error> {
    std::fs::read_to_string(path).map_err(|e| anyhow_like::Error(format!("{path}: {e}")))
}

async fn export(server: &ServerArgs) -> Result<String, anyhow_like::Error> {
    let client = Client::new(&server.server, &server.token)?;
    let remote = Remote::read(&client).await?;
    Ok(crate::emit::to_yaml(&remote.export()))
}

/// Makes `fresh` the saved plan: the same changes, locked to the versions the saved plan
/// saw (so a change made since is refused by the server).
fn follow_saved(path: &str, fresh: &mut plan::Plan) -> Result<(), anyhow_like::Error> {
    let text = read(path)?;
    let saved: plan::Plan = serde_json::from_str(&text)
        .map_err(|e| anyhow_like::Error(format!("{path}: not a saved plan: {e}")))?;
    let same = saved.changes.len() == fresh.changes.len()
        && saved
            .changes
            .iter()
            .zip(&fresh.changes)
            .all(|(a, b)| (a.kind, &a.key, &a.op, &a.id) == (b.kind, &b.key, &b.op, &b.id));
    if !same {
        let what = saved
            .changes
            .iter()
            .zip(&fresh.changes)
            .find(|(a, b)| (a.kind, &a.key, &a.op) != (b.kind, &b.key, &b.op))
            .map(|(a, _)| format!("{} {:?}", a.kind.label(), a.key))
            .unwrap_or_else(|| "the workspace".into());
        return Err(ApplyError::Conflict(what).into());
    }
    for (f, s) in fresh.changes.iter_mut().zip(saved.changes) {
        f.etag = s.etag;
    }
    Ok(())
}

type Prepared = (Client, Loaded, Remote, plan::Plan);

async fn prepare(
    path: &str,
    prune: bool,
    server: &ServerArgs,
) -> Result<Prepared, anyhow_like::Error> {
    let text = read(path)?;
    let env = |k: &str| std::env::var(k).ok();
    let loaded = load::load(path, &text, &env)?;
    let client = Client::new(&server.server, &server.token)?;
    let remote = Remote::read(&client).await?;
    let secret = |p: &str| loaded.secrets.iter().any(|s| s.starts_with(p));
    let mut p = plan::plan(&loaded.file, &remote, prune, &secret);
    apply::lock_versions(&client, &remote, &mut p).await?;
    Ok((client, loaded, remote, p))
}

/// One printable error for the commands.
mod anyhow_like {
    #[derive(Debug)]
    pub struct Error(pub String);

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl From<crate::load::FileErrors> for Error {
        fn from(e: crate::load::FileErrors) -> Self {
            Error(e.to_string())
        }
    }
    impl From<crate::client::ApiError> for Error {
        fn from(e: crate::client::ApiError) -> Self {
            Error(format!("error: {e}"))
        }
    }
    impl From<super::ApplyError> for Error {
        fn from(e: super::ApplyError) -> Self {
            Error(format!("error: {e}"))
        }
    }
    impl From<crate::import::ImportError> for Error {
        fn from(e: crate::import::ImportError) -> Self {
            Error(format!("error: {e}"))
        }
    }
}
