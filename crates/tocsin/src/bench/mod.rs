//! `tocsin bench`: the project's load benchmark. It starts the server in-process (or targets an
//! external one), runs each selected [`scenario`] with a fixed number of keep-alive connections
//! for a fixed time, and prints throughput, latency percentiles, errors, and each scenario's
//! throughput relative to the `baseline` scenario measured in the same run.
//!
//! This module owns the command line, argument validation, and the orchestration of one run;
//! `scenario` defines what is requested, `load` drives the connections, `stats` turns
//! measurements into figures, `target` owns the in-process server's lifecycle.
//!
//! The monitor scenarios (`checks`, `scheduler-100k`, `idle-rss`, `reads-under-load`, in
//! [`monitors`]) run the real scheduler against the built-in [`loopback`] target instead of
//! repeating one request; they run only when named, each on a fresh in-process server.
//!
//! Threads: the server and the client run on two separate tokio runtimes. The server gets a
//! multi-thread runtime with `--server-threads` workers (default 2, one per core of the
//! reference machine), as in production. The client defaults to one current-thread runtime on
//! the calling thread: a single thread is enough to keep 64 connections busy and costs the
//! server the least CPU, and a current-thread scheduler has no work-stealing overhead. Separate
//! runtimes keep the client's tasks from being scheduled on (and measured as) server workers,
//! so the figures describe the server, with the client's cost visible as one extra busy thread.

pub mod alerting;
pub mod billing;
pub mod cluster;
pub mod connections;
pub mod cpu;
pub mod lean;
pub mod load;
pub mod loopback;
pub mod mcp;
pub mod measure;
pub mod monitors;
pub mod outbox;
pub mod push;
pub mod regions;
pub mod scenario;
pub mod seed;
pub mod stats;
pub mod status_flip;
pub mod status_page;
pub mod streams;
pub mod target;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::Serialize;
use url::Url;

use monitors::{MonitorPlan, MonitorSummary};
use scenario::{Fixture, Scenario, BASELINE};
use stats::Summary;
use target::LocalServer;

/// Flags of `tocsin bench`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Scenarios:\n  baseline   GET /healthz: a trivial handler behind the full \
middleware stack\n  push       POST /push/{token} over --push-tokens distinct tokens, then a \
burst of --push-burst x its rate\n  workspace  GET /workspace with a bearer API key: the authenticated, cached \
hot path\n  mcp-get-monitor  POST /mcp tools/call get_monitor with an mcp token\n  status-summary  GET /api/v1/status-pages/bench/summary: a published page of 50 \
components with 90 days of history\n  status-summary-gzip  the same summary with Accept-Encoding: gzip, as browsers send it\n  status-page  GET /s/bench: the same page as HTML\n  status-badge  GET /api/v1/embed/badge.svg: the same page's SVG badge by publishable key\n\nThe baseline always runs (first) so every scenario can be compared with it.\n\n\
Monitor scenarios (run only when named; the real scheduler against a loopback target):\n  \
checks            4,000 HTTP monitors every 2 s: checks/s, every heartbeat stored, bytes per \
heartbeat\n  checks-low        200 monitors every 2 s (100 checks/s): server CPU per check, against \
`checks` in the same run\n  everyday          2,000 monitors every 20 s, target keeping connections: \
server CPU per 1,000 checks\n  idle-cpu          2,000 monitors every 5 minutes: the process's \
share of a core over a minute\n  read-storm-rss    a storm of status page reads, then a quiet \
minute: RSS before and after\n  scheduler-100k    100,000 monitors every 60 s: start lateness, busiest second\n  \
idle-rss          100,000 monitors every 24 h: RSS per idle monitor\n  reads-under-load  \
10,000 monitors every 10 s: list, page and heartbeat reads while checks run\n  \
connections       1,000 monitors every 2 s, quiet then with 5,000 idle + 500 slowloris \
connections held: /healthz p99, checks/s, status changes, connection lifetimes\n  \
outbox            20,000 webhook notifications queued at once to a loopback receiver: \
deliveries/s\n  \
alert-latency     500 monitors every 5 s whose target starts failing: alert opening to \
webhook arrival p99\n  \
storm             10,000 monitors every 20 s failing: every alert delivered once, latency, RSS\n  \
storm-retry       the storm with the receiver refusing for 30 s: all delivered after, retries kept\n  \
storm-deps        the storm with every monitor depending on one root: one page listing 9,999 dependents\n  \
status-flip       100,000 status page reads while a component goes DOWN: never a mix, new within 1 s\n\n\
streams           1,000 monitors every 10 s, monitor reads quiet and then with 1,000 live \
streams open: RSS of the streams, read p99 with and without them\n  \
regions           300 monitors every 4 s from local and two probe processes under each region \
strategy: checks/s, an outage's page latency and confirmation time\n  \
cluster           PostgreSQL: 2,000 monitors every 2 s on 1, 2, 3 `tocsin serve` nodes: checks/s, \
CPU and transactions per check, rebalance lateness, takeover after SIGKILL\n\n\
Examples:\n  tocsin bench --duration 10\n  tocsin bench --database-url \
postgres://postgres@127.0.0.1:5432/test\n  tocsin bench --url http://127.0.0.1:8080 --token \
svc_... --scenario workspace\n  tocsin bench checks --duration 10\n  tocsin bench \
scheduler-100k --monitors 100000 --duration 60"
)]
pub struct BenchArgs {
    /// Scenario(s) to run, comma-separated or repeated (default: the request scenarios).
    #[arg(long = "scenario", value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// Scenario names given without `--scenario`.
    #[arg(value_name = "SCENARIO")]
    pub positional: Vec<String>,
    /// Concurrent keep-alive connections, each with one request in flight (default 64; 4 for
    /// the reads of `reads-under-load`, a dashboard's load rather than a flood).
    #[arg(long)]
    pub connections: Option<usize>,
    /// Monitors of the monitor scenarios (default: each scenario's own).
    #[arg(long)]
    pub monitors: Option<usize>,
    /// Measured time per scenario: `10`, `10s`, `500ms` or `1m`.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Unmeasured warm-up per scenario before the measured time (same format).
    #[arg(long, default_value = "2s")]
    pub warmup: String,
    /// Run the in-process server on PostgreSQL: a fresh database `tocsin_bench_<random>` is
    /// created on this URL's server and dropped afterwards. Default: a temporary SQLite
    /// directory.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Load an already running server at this http:// base URL instead of starting one
    /// (requires --token).
    #[arg(long)]
    pub url: Option<String>,
    /// API token (`svc_...`) for authenticated scenarios against --url.
    #[arg(long, env = "TOCSIN_BENCH_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Worker threads of the in-process server's runtime.
    #[arg(long, default_value_t = 2)]
    pub server_threads: usize,
    /// Threads of the client's runtime (1 = a single-threaded runtime).
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Print the results as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Push monitors (distinct tokens) the push scenario seeds.
    #[arg(long, default_value_t = 100_000)]
    pub push_tokens: usize,
    /// After the push scenario, send this many times its measured rate of pushes at once
    /// (a top-of-minute burst); 0 skips the burst.
    #[arg(long, default_value_t = 5)]
    pub push_burst: usize,
}

/// Upper bound on `--connections`: far past what one machine's client can drive usefully, low
/// enough that a typo does not exhaust file descriptors.
const MAX_CONNECTIONS: usize = 10_000;
const MAX_THREADS: usize = 256;

/// Where the load goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Start the server in-process; `None`: a temporary SQLite directory.
    InProcess { database_url: Option<String> },
    /// An external server.
    External {
        addr: SocketAddr,
        /// The `Host` header: the URL's host and port as written.
        host: String,
        /// The URL's path, prefixed to every request path.
        base_path: String,
        token: String,
    },
}

/// Default of `--connections` for the request scenarios.
const DEFAULT_CONNECTIONS: usize = 64;
/// Default of `--connections` for the reads of `reads-under-load`.
const DEFAULT_READ_CONNECTIONS: usize = 4;
/// Upper bound on `--monitors`.
const MAX_MONITORS: usize = 1_000_000;

/// A validated run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Request scenario names in run order, baseline first (empty when only monitor scenarios
    /// were named).
    pub scenarios: Vec<&'static str>,
    /// Monitor scenario names in run order.
    pub monitor_scenarios: Vec<&'static str>,
    pub monitors: Option<usize>,
    pub connections: usize,
    pub read_connections: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub target: Target,
    pub server_threads: usize,
    pub client_threads: usize,
    pub json: bool,
    pub push_tokens: usize,
    pub push_burst: usize,
}

/// Parses `10`, `10s`, `1.5s`, `500ms` or `2m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit_secs) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 10s, 500ms or 1m"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{text:?} must be a non-negative duration"));
    }
    Duration::try_from_secs_f64(value * unit_secs).map_err(|_| format!("{text:?} is too long"))
}

impl BenchArgs {
    /// Checks every flag and resolves them into a [`Plan`]. Resolves `--url`'s host name, the
    /// only step that touches the outside world.
    pub fn validate(&self) -> anyhow::Result<Plan> {
        if self
            .connections
            .is_some_and(|c| c == 0 || c > MAX_CONNECTIONS)
        {
            anyhow::bail!("--connections must be between 1 and {MAX_CONNECTIONS}");
        }
        if self.monitors.is_some_and(|m| m == 0 || m > MAX_MONITORS) {
            anyhow::bail!("--monitors must be between 1 and {MAX_MONITORS}");
        }
        let duration =
            parse_duration(&self.duration).map_err(|e| anyhow::anyhow!("--duration: {e}"))?;
        if duration.is_zero() {
            anyhow::bail!("--duration must be longer than zero");
        }
        let warmup = parse_duration(&self.warmup).map_err(|e| anyhow::anyhow!("--warmup: {e}"))?;
        for (flag, n) in [
            ("--server-threads", self.server_threads),
            ("--client-threads", self.client_threads),
        ] {
            if n == 0 || n > MAX_THREADS {
                anyhow::bail!("{flag} must be between 1 and {MAX_THREADS}");
            }
        }
        let requested: Vec<String> = self
            .scenarios
            .iter()
            .chain(&self.positional)
            .cloned()
            .collect();
        let (scenarios, monitor_scenarios) = select_scenarios(&requested)?;
        let target = match (&self.url, &self.database_url) {
            (Some(_), Some(_)) => {
                anyhow::bail!("--url and --database-url exclude each other: the bench only manages the database of a server it starts")
            }
            (Some(url), None) => {
                let token = self
                    .token
                    .clone()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| {
                        anyhow::anyhow!("--url needs --token (an API token of the server's user)")
                    })?;
                if !monitor_scenarios.is_empty() {
                    anyhow::bail!("the monitor scenarios need the in-process server (drop --url)");
                }
                external_target(url, token.trim().to_string())?
            }
            (None, Some(db)) => {
                target::database_url_for(db, "check")?;
                Target::InProcess {
                    database_url: Some(db.clone()),
                }
            }
            (None, None) => Target::InProcess { database_url: None },
        };
        Ok(Plan {
            scenarios,
            monitor_scenarios,
            monitors: self.monitors,
            connections: self.connections.unwrap_or(DEFAULT_CONNECTIONS),
            read_connections: self.connections.unwrap_or(DEFAULT_READ_CONNECTIONS),
            duration,
            warmup,
            target,
            server_threads: self.server_threads,
            client_threads: self.client_threads,
            json: self.json,
            push_tokens: self.push_tokens.max(1),
            push_burst: self.push_burst,
        })
    }
}

/// The requested scenarios in registry order: the request scenarios (with the baseline always
/// first; all of them when nothing is named) and the monitor scenarios (only those named). When
/// only monitor scenarios are named, no request scenario runs.
fn select_scenarios(
    requested: &[String],
) -> anyhow::Result<(Vec<&'static str>, Vec<&'static str>)> {
    let known = scenario::names();
    let known_monitor = monitors::names();
    let requested: Vec<&str> = requested
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(bad) = requested
        .iter()
        .find(|r| !known.contains(r) && !known_monitor.contains(r))
    {
        anyhow::bail!(
            "unknown scenario {bad:?}; known: {}, {}",
            known.join(", "),
            known_monitor.join(", ")
        );
    }
    let only_monitor = !requested.is_empty() && requested.iter().all(|r| known_monitor.contains(r));
    let monitor: Vec<&'static str> = known_monitor
        .into_iter()
        .filter(|k| requested.contains(k))
        .collect();
    let request = if only_monitor {
        Vec::new()
    } else {
        known
            .into_iter()
            .filter(|k| *k == BASELINE || requested.is_empty() || requested.contains(k))
            .collect()
    };
    Ok((request, monitor))
}

fn external_target(text: &str, token: String) -> anyhow::Result<Target> {
    let url = Url::parse(text).map_err(|e| anyhow::anyhow!("--url {text:?}: {e}"))?;
    if url.scheme() != "http" {
        anyhow::bail!("--url must be http:// (the bench client speaks plain HTTP/1.1; put it beside the server, not behind TLS)");
    }
    let host = url
        .host_str()
        .ok_or_else(|| anyhow::anyhow!("--url {text:?} has no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("resolving {host}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{host} resolves to no address"))?;
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    Ok(Target::External {
        addr,
        host: host_header,
        base_path: url.path().trim_end_matches('/').to_string(),
        token,
    })
}

/// The results of one run, as printed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// When the run finished (RFC 3339, UTC).
    pub date: String,
    /// `sqlite`, `postgres`, or `external`.
    pub backend: String,
    /// `in-process` or the external base URL's address.
    pub target: String,
    pub connections: usize,
    pub duration_secs: f64,
    pub warmup_secs: f64,
    /// `None` against an external server.
    pub server_threads: Option<usize>,
    pub client_threads: usize,
    pub results: Vec<Summary>,
    /// The top-of-minute burst after the push scenario, when it ran.
    pub push_burst: Option<push::BurstReport>,
    /// The monitor scenarios' figures and verdicts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub monitor_results: Vec<MonitorSummary>,
}

/// `tocsin bench`: validates, runs, prints.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let plan = args.validate()?;
    // Logging at warn: per-request spans and events must not be part of what is measured.
    // `TOCSIN_BENCH_LOG` (a log filter such as `info`) overrides it to look inside a run, at
    // the price of representative figures.
    let level = std::env::var("TOCSIN_BENCH_LOG").unwrap_or_else(|_| "warn".into());
    tocsin::telemetry::init_logging(tocsin::config::LogFormat::Human, &level);
    let json = plan.json;
    if !json && !plan.monitor_scenarios.is_empty() {
        eprintln!(
            "note: a release build gives representative figures (cargo build --release -p tocsin)"
        );
    }
    // The bench builds and blocks on its own runtimes, which is not allowed on this runtime's
    // worker threads; a blocking thread is allowed to.
    let report = tokio::task::spawn_blocking(move || execute(&plan)).await??;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        if !report.results.is_empty() {
            print!("{}", render_table(&report));
        }
        print!("{}", monitors::render(&report.monitor_results));
    }
    Ok(())
}

/// Runs a validated plan to completion. Blocking: builds the server and client runtimes,
/// and tears them down before returning.
pub fn execute(plan: &Plan) -> anyhow::Result<Report> {
    let (results, backend, target, server_threads, push_burst) = if plan.scenarios.is_empty() {
        let backend = match &plan.target {
            Target::InProcess {
                database_url: Some(_),
            } => "postgres",
            _ => "sqlite",
        };
        (
            Vec::new(),
            backend.to_string(),
            "in-process".to_string(),
            Some(plan.server_threads),
            None,
        )
    } else {
        execute_requests(plan)?
    };
    let mut monitor_results = Vec::new();
    if let Target::InProcess { database_url } = &plan.target {
        let monitor_plan = MonitorPlan {
            monitors: plan.monitors,
            duration: plan.duration,
            warmup: plan.warmup,
            read_connections: plan.read_connections,
            database_url: database_url.clone(),
            server_threads: plan.server_threads,
        };
        let registry = monitors::all();
        for name in &plan.monitor_scenarios {
            let Some(s) = registry.iter().find(|s| s.name == *name) else {
                continue;
            };
            if !plan.json {
                eprintln!("running {} ({})...", s.name, s.about);
            }
            monitor_results.push(
                monitors::run(s, &monitor_plan)
                    .map_err(|e| e.context(format!("running scenario {}", s.name)))?,
            );
        }
    }
    lean::cross_verdicts(&mut monitor_results);
    Ok(Report {
        date: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        backend,
        target,
        connections: plan.connections,
        duration_secs: plan.duration.as_secs_f64(),
        warmup_secs: plan.warmup.as_secs_f64(),
        server_threads,
        client_threads: plan.client_threads,
        results,
        push_burst,
        monitor_results,
    })
}

type RequestResults = (
    Vec<Summary>,
    String,
    String,
    Option<usize>,
    Option<push::BurstReport>,
);

/// The request scenarios: results, backend, target, server threads and the push burst.
fn execute_requests(plan: &Plan) -> anyhow::Result<RequestResults> {
    let client_rt = if plan.client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(plan.client_threads)
            .thread_name("bench-client")
            .enable_all()
            .build()?
    };
    let registry = scenario::all();
    let chosen: Vec<&Scenario> = plan
        .scenarios
        .iter()
        .filter_map(|name| registry.iter().find(|s| s.name == *name))
        .collect();
    let (results, backend, target, server_threads, push_burst) = match &plan.target {
        Target::InProcess { database_url } => {
            let server_rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(plan.server_threads)
                .thread_name("bench-server")
                .enable_all()
                .build()?;
            let server =
                LocalServer::start_with(&server_rt, database_url.as_deref(), billing::configure)?;
            let mut fixture = Fixture::in_process(server.state.clone());
            fixture.push_tokens = plan.push_tokens;
            let host = server.addr.to_string();
            // Setup touches the server's database, so it runs on the server's runtime.
            let results = run_scenarios(
                plan,
                &chosen,
                &fixture,
                |s| server_rt.block_on(s),
                &client_rt,
                server.addr,
                &host,
                "",
            );
            let backend = server.backend.clone();
            drop(fixture);
            server.stop(&server_rt);
            server_rt.shutdown_timeout(Duration::from_secs(5));
            let (results, burst) = results?;
            (
                results,
                backend,
                "in-process".to_string(),
                Some(plan.server_threads),
                burst,
            )
        }
        Target::External {
            addr,
            host,
            base_path,
            token,
        } => {
            let mut fixture = Fixture::external(token.clone());
            fixture.push_tokens = plan.push_tokens;
            let (results, burst) = run_scenarios(
                plan,
                &chosen,
                &fixture,
                |s| client_rt.block_on(s),
                &client_rt,
                *addr,
                host,
                base_path,
            )?;
            (
                results,
                "external".to_string(),
                format!("http://{host}{base_path}"),
                None,
                burst,
            )
        }
    };
    Ok((results, backend, target, server_threads, push_burst))
}

type SetupFuture<'a> = futures::future::BoxFuture<'a, anyhow::Result<scenario::RequestSpec>>;

#[allow(clippy::too_many_arguments)]
fn run_scenarios<'f>(
    plan: &Plan,
    chosen: &[&Scenario],
    fixture: &'f Fixture,
    block_on_setup: impl Fn(SetupFuture<'f>) -> anyhow::Result<scenario::RequestSpec>,
    client_rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    host: &str,
    base_path: &str,
) -> anyhow::Result<(Vec<Summary>, Option<push::BurstReport>)> {
    let mut results = Vec::with_capacity(chosen.len());
    let mut burst = None;
    for s in chosen {
        let spec = block_on_setup((s.setup)(fixture))
            .map_err(|e| e.context(format!("setting up scenario {}", s.name)))?;
        let template = load::Template::new(addr, host, base_path, &spec)?;
        let rotating = template.rotating_uris();
        if !plan.json {
            eprintln!(
                "running {} ({:?} warm-up + {:?} measured, {} connections)...",
                s.name, plan.warmup, plan.duration, plan.connections
            );
        }
        let (tally, cpu) = client_rt.block_on(async {
            let window = load::Window::starting_now(plan.warmup, plan.duration);
            load::drive(template, plan.connections, window).await
        });
        let summary =
            Summary::from_tally(s.name, &tally, plan.duration).with_cpu(cpu, plan.duration);
        if s.name == "push" && plan.push_burst > 0 {
            if let Some(uris) = rotating {
                let requests = (summary.requests_per_sec * plan.push_burst as f64).ceil() as usize;
                if !plan.json {
                    eprintln!("push burst: {requests} pushes at once over {BURST_CONNECTIONS} connections...");
                }
                burst = Some(client_rt.block_on(push::burst(
                    addr,
                    host,
                    uris,
                    requests.max(1),
                    BURST_CONNECTIONS,
                )));
            }
        }
        results.push(summary);
    }
    stats::set_baseline_ratios(&mut results, BASELINE);
    Ok((results, burst))
}

/// Connections the push burst opens (cron fleets are many hosts, each with its own).
const BURST_CONNECTIONS: usize = 512;

/// The human-readable report.
pub fn render_table(r: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let threads = match r.server_threads {
        Some(n) => format!("server {n} threads, client {} thread(s)", r.client_threads),
        None => format!("client {} thread(s)", r.client_threads),
    };
    let _ = writeln!(
        out,
        "\n{} on {} ({threads}); {} connections, {}s measured after {}s warm-up; {}\n",
        r.target, r.backend, r.connections, r.duration_secs, r.warmup_secs, r.date
    );
    let _ = writeln!(
        out,
        "{:<12} {:>9} {:>7} {:>7} {:>7} {:>6} {:>8} {:>6} {:>10} {:>10}",
        "scenario",
        "req/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "errors",
        "vs base",
        "cores",
        "srv us/req",
        "cli us/req"
    );
    let opt = |v: Option<f64>, decimals: usize| {
        v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
    };
    for s in &r.results {
        let _ = writeln!(
            out,
            "{:<12} {:>9.0} {:>7.2} {:>7.2} {:>7.2} {:>6} {:>8} {:>6} {:>10} {:>10}",
            s.scenario,
            s.requests_per_sec,
            s.p50_ms,
            s.p99_ms,
            s.max_ms,
            s.errors,
            opt(s.vs_baseline, 2),
            opt(s.cpu_cores, 2),
            opt(s.server_cpu_us_per_request, 1),
            opt(s.client_cpu_us_per_request, 1),
        );
    }
    let _ = writeln!(
        out,
        "\ncores: CPU cores the process used in the window; us/req: CPU microseconds per request \
         (server threads, client)"
    );
    if let Some(b) = &r.push_burst {
        let _ = writeln!(
            out,
            "\npush burst: {} pushes at once over {} connections, drained in {:.2} s: {} accepted, \
             {} rate-limited, {} errors; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms{}",
            b.requests,
            b.connections,
            b.drain_secs,
            b.accepted,
            b.rate_limited,
            b.errors,
            b.p50_ms,
            b.p99_ms,
            b.max_ms,
            b.sample_error
                .as_deref()
                .map(|e| format!(" (e.g. {e})"))
                .unwrap_or_default()
        );
    }
    for s in r.results.iter().filter(|s| s.errors > 0) {
        let _ = writeln!(
            out,
            "\n{}: {} errors ({} non-2xx, {} I/O), e.g. {}",
            s.scenario,
            s.errors,
            s.status_errors,
            s.io_errors,
            s.sample_error.as_deref().unwrap_or("?")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn args(cmd: &[&str]) -> BenchArgs {
        let mut v = vec!["bench"];
        v.extend_from_slice(cmd);
        Wrap::try_parse_from(v).expect("flags parse").args
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "s", "-1s", "ten", "1h", "NaN", "1e300m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn defaults_validate() {
        let p = args(&[]).validate().expect("defaults are valid");
        assert_eq!(p.connections, 64);
        assert_eq!(p.duration, Duration::from_secs(10));
        assert_eq!(p.warmup, Duration::from_secs(2));
        assert_eq!(p.scenarios, scenario::names());
        assert_eq!(p.target, Target::InProcess { database_url: None });
    }

    #[test]
    fn baseline_is_always_run_first() {
        let p = args(&["--scenario", "workspace"])
            .validate()
            .expect("valid");
        assert_eq!(p.scenarios, vec![BASELINE, "workspace"]);
        let p = args(&["--scenario", "workspace,baseline"])
            .validate()
            .expect("valid");
        assert_eq!(p.scenarios, vec![BASELINE, "workspace"]);
        let p = args(&["--scenario", "baseline"]).validate().expect("valid");
        assert_eq!(p.scenarios, vec![BASELINE]);
    }

    #[test]
    fn monitor_scenarios_run_only_when_named() {
        let p = args(&["checks"]).validate().expect("valid");
        assert!(p.scenarios.is_empty());
        assert_eq!(p.monitor_scenarios, vec![monitors::CHECKS]);
        assert_eq!(p.read_connections, 4);
        let p = args(&[
            "--scenario",
            "idle-rss,workspace",
            "checks",
            "--monitors",
            "10",
        ])
        .validate()
        .expect("valid");
        assert_eq!(p.scenarios, vec![BASELINE, "workspace"]);
        assert_eq!(
            p.monitor_scenarios,
            vec![monitors::IDLE_RSS, monitors::CHECKS]
        );
        assert_eq!(p.monitors, Some(10));
        let p = args(&["--connections", "8"]).validate().expect("valid");
        assert!(p.monitor_scenarios.is_empty());
        assert_eq!((p.connections, p.read_connections), (8, 8));
    }

    #[test]
    fn invalid_flags_are_refused_with_the_flag_named() {
        for (cmd, needle) in [
            (vec!["--connections", "0"], "--connections"),
            (vec!["--connections", "100000"], "--connections"),
            (vec!["--duration", "0s"], "--duration"),
            (vec!["--duration", "soon"], "--duration"),
            (vec!["--warmup=-2"], "--warmup"),
            (vec!["--server-threads", "0"], "--server-threads"),
            (vec!["--client-threads", "0"], "--client-threads"),
            (vec!["--scenario", "nope"], "unknown scenario"),
            (vec!["--url", "http://127.0.0.1:1"], "--token"),
            (
                vec![
                    "--url",
                    "http://127.0.0.1:1",
                    "--token",
                    "svc_x",
                    "--database-url",
                    "postgres://h/db",
                ],
                "exclude",
            ),
            (
                vec!["--url", "https://127.0.0.1:1", "--token", "svc_x"],
                "http://",
            ),
            (vec!["--database-url", "sqlite://x.db"], "postgres://"),
            (vec!["--monitors", "0"], "--monitors"),
            (vec!["checks", "nope"], "unknown scenario"),
            (
                vec!["checks", "--url", "http://127.0.0.1:1", "--token", "svc_x"],
                "in-process",
            ),
        ] {
            let err = args(&cmd)
                .validate()
                .expect_err("must be refused")
                .to_string();
            assert!(err.contains(needle), "{cmd:?}: {err}");
        }
    }

    #[test]
    fn external_target_keeps_host_and_prefix() {
        let p = args(&["--url", "http://127.0.0.1:8080/api/", "--token", " svc_x "])
            .validate()
            .expect("valid");
        assert_eq!(
            p.target,
            Target::External {
                addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
                host: "127.0.0.1:8080".into(),
                base_path: "/api".into(),
                token: "svc_x".into(),
            }
        );
    }

    /// Runs the whole bench in-process for about a second on SQLite: a smoke test that the
    /// pieces fit together (server starts, setup mints a key, requests succeed), not a timing
    /// assertion.
    #[test]
    fn smoke_in_process_sqlite() {
        let mut plan = args(&[
            "--connections",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--push-tokens",
            "500",
        ])
        .validate()
        .expect("valid");
        plan.json = true;
        let report = execute(&plan).expect("bench runs");
        // Every push of the burst is answered: accepted or, past a token's minute, limited.
        let burst = report.push_burst.clone().expect("the burst ran");
        assert!(burst.requests > 0);
        assert_eq!(burst.errors, 0, "{burst:?}");
        assert_eq!(
            burst.accepted + burst.rate_limited,
            burst.requests,
            "{burst:?}"
        );
        assert_eq!(report.backend, "sqlite");
        let names: Vec<&str> = report.results.iter().map(|s| s.scenario.as_str()).collect();
        assert_eq!(names, scenario::names());
        for s in &report.results {
            assert!(s.requests > 0, "{s:?}");
            assert_eq!(s.errors, 0, "{s:?}");
            assert!(s.vs_baseline.is_some(), "{s:?}");
        }
        let text = render_table(&report);
        assert!(text.contains("workspace"), "{text}");
    }

    /// Every monitor scenario with 50 monitors for about a second on SQLite: the scheduler
    /// runs real checks against the loopback target, heartbeats are stored, memory is read,
    /// and the reads answer. A smoke test that the scenarios keep working, not a timing
    /// assertion (the verdicts at this size are not looked at).
    #[test]
    fn smoke_monitor_scenarios() {
        let mut plan = args(&[
            "checks",
            "scheduler-100k",
            "idle-rss",
            "reads-under-load",
            "--monitors",
            "50",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ])
        .validate()
        .expect("valid");
        plan.json = true;
        let report = execute(&plan).expect("bench runs");
        assert!(report.results.is_empty());
        let by_name = |n: &str| {
            report
                .monitor_results
                .iter()
                .find(|s| s.scenario == n)
                .unwrap_or_else(|| panic!("{n} missing"))
        };
        let checks = by_name(monitors::CHECKS);
        let c = checks.checks.as_ref().expect("check figures");
        assert_eq!(checks.monitors, 50);
        assert!(c.stored >= 10 && c.runs >= 10, "{c:?}");
        assert_eq!(c.write_failures, 0, "{c:?}");
        assert!(checks.bytes_per_heartbeat.is_some_and(|b| b > 0.0));
        assert!(!checks.verdicts.is_empty());
        assert!(by_name(monitors::SCHEDULER_100K).checks.is_some());
        let rss = by_name(monitors::IDLE_RSS)
            .rss
            .as_ref()
            .expect("rss figures");
        assert!(
            rss.after_bytes > 0 && rss.per_monitor_bytes.is_finite(),
            "{rss:?}"
        );
        let reads = by_name(monitors::READS_UNDER_LOAD);
        assert_eq!(reads.reads.len(), 3);
        for r in &reads.reads {
            assert!(r.requests > 0, "{r:?}");
            assert_eq!(r.errors, 0, "{r:?}");
        }
        assert!(reads.checks.as_ref().is_some_and(|c| c.stored > 0));
        let text = monitors::render(&report.monitor_results);
        assert!(text.contains("GET /monitors/page"), "{text}");
    }
}
