//! The monitor scenarios of `tocsin bench`: the real scheduler (`monitoring::scheduler::run`
//! on the system clock) and the real heartbeat writer, in-process, over a fresh database,
//! checking HTTP monitors against the built-in [`super::loopback`] target. Unlike the request
//! scenarios they are not a request repeated in a loop: each seeds monitors in bulk
//! ([`super::seed`]), starts the scheduler, and measures what the performance targets
//! name ([`super::measure`]), then judges each figure against its target.
//!
//! - `checks`: 4,000 monitors every 2 s (the shortest interval the API accepts with a 1 s
//!   timeout); checks/s with every heartbeat stored, and on-disk bytes per UP heartbeat.
//! - `scheduler-100k`: 100,000 monitors every minute; start lateness and the busiest second.
//! - `idle-rss`: 100,000 monitors once a day (so none runs while measured); resident memory
//!   per scheduled monitor.
//! - `reads-under-load`: 10,000 monitors every 10 s in the bench user's workspace while a
//!   load client reads the monitor list, a monitor page and a monitor's heartbeats.
//! - `connections`: 1,000 monitors every 2 s, measured once quiet and once while 5,000 idle
//!   and 500 slowloris connections ([`super::connections`]) are held open: `/healthz` p99,
//!   checks/s in both windows, status changes, and how long the server let each connection be.
//! - `streams`: 1,000 monitors every 10 s while the monitor reads of `reads-under-load` run,
//!   quiet, then with 1,000 live streams (`GET /stream`) open ([`super::streams`]), then quiet
//!   again (the loaded window is compared with the mean of the quiet ones around it, since
//!   the database grows through the run):
//!   the process's RSS per stream, the reads' p99 and the server's CPU per read with and
//!   without them, and the CPU the streams' clients took from the same cores.
//! - `outbox`: 20,000 webhook notifications queued at once and delivered by the real delivery
//!   worker to the loopback target ([`super::outbox`]): deliveries/s, all delivered.
//! - `checks-low`, `everyday`, `idle-cpu`, `read-storm-rss`: everyday loads ([`super::lean`]).

use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use super::cpu::CpuSample;
use super::loopback::LoopbackTarget;
use super::measure;
use super::scenario::{Fixture, RequestSpec};
use super::seed::{self, MonitorSeed};
use super::stats::Summary;
use super::target::LocalServer;
use tocsin::server::AppState;

pub const CHECKS: &str = "checks";
pub const SCHEDULER_100K: &str = "scheduler-100k";
pub const IDLE_RSS: &str = "idle-rss";
pub const READS_UNDER_LOAD: &str = "reads-under-load";
pub const CONNECTIONS: &str = "connections";
pub const OUTBOX: &str = "outbox";
pub const ALERT_LATENCY: &str = "alert-latency";
pub const STORM: &str = "storm";
pub const STORM_RETRY: &str = "storm-retry";
pub const STORM_DEPS: &str = "storm-deps";
pub const STATUS_FLIP: &str = "status-flip";
/// How long `storm-retry`'s receiver refuses every delivery.
const STORM_REFUSE: Duration = Duration::from_secs(30);
pub const STREAMS: &str = "streams";
pub const REGIONS: &str = "regions";
pub const CLUSTER: &str = "cluster";
/// Monitors of the `regions` scenario (each checked from up to three regions).
const REGIONS_MONITORS: usize = 300;
/// The targets for 1,000 open streams: memory, and the API's figures.
pub const TARGET_STREAMS_RSS_BYTES: f64 = 50.0 * 1024.0 * 1024.0;
pub const TARGET_STREAMS_SLOWDOWN: f64 = 1.10;
/// Streams the `streams` scenario opens.
pub const STREAMS_OPEN: usize = 1_000;

/// The targets on the 2-core reference machine.
pub const TARGET_CHECKS_PER_SEC: f64 = 2_000.0;
pub const TARGET_LATENESS_P99_MS: u64 = 100;
pub const TARGET_BUSIEST_RATIO: f64 = 1.5;
pub const TARGET_RSS_PER_MONITOR: f64 = 4_096.0;
pub const TARGET_BYTES_PER_HEARTBEAT: f64 = 48.0;
pub const TARGET_READ_P99_MS: f64 = 50.0;
pub const TARGET_HEALTHZ_P99_MS: f64 = 10.0;
/// Hostile connections of `connections`.
const HOSTILE_IDLE: usize = 5_000;
const HOSTILE_SLOWLORIS: usize = 500;
/// "Every heartbeat stored": at most this share of the window's due slots may lack a stored
/// heartbeat. Not zero because a slot due just before the window's end can start just after
/// it (and one just before its start inside it): the window edges blur by the lateness.
const MAX_MISSED_SHARE: f64 = 0.01;

/// How long the scenario waits after its window for checks still running to store their
/// heartbeats before counting (a loopback check takes milliseconds; the writer then flushes).
const DRAIN: Duration = Duration::from_secs(1);
/// Longest check timeout of the bench monitors (the API wants it below the interval); the
/// loopback target answers in well under a millisecond, so only an overloaded process comes
/// near it.
const CHECK_TIMEOUT_S: i64 = 10;
/// Longest wait for the scheduler to load every monitor.
const LOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// One monitor scenario's fixed shape; `--monitors` overrides the count.
#[derive(Debug, Clone, Copy)]
pub struct MonitorScenario {
    pub name: &'static str,
    pub about: &'static str,
    pub monitors: usize,
    pub interval_s: i64,
}

/// Every monitor scenario, in the order they run when several are named. `idle-rss` comes
/// first: it reads the process's resident memory, which earlier scenarios in the same process
/// would have grown (freed heap is reused, not returned), hiding what loading costs.
pub fn all() -> Vec<MonitorScenario> {
    vec![
        MonitorScenario {
            name: IDLE_RSS,
            about: "100,000 HTTP monitors every 24 h loaded into the scheduler: RSS per idle monitor",
            monitors: 100_000,
            interval_s: 86_400,
        },
        MonitorScenario {
            name: CHECKS,
            about: "4,000 HTTP monitors every 2 s: checks/s with every heartbeat stored, bytes per heartbeat",
            monitors: 4_000,
            interval_s: 2,
        },
        MonitorScenario {
            name: super::lean::CHECKS_LOW,
            about: "200 HTTP monitors every 2 s (100 checks/s): server CPU per check, judged against `checks` when both run",
            monitors: 200,
            interval_s: 2,
        },
        MonitorScenario {
            name: super::lean::EVERYDAY,
            about: "2,000 HTTP monitors every 20 s against a target that keeps connections alive: server CPU per 1,000 checks",
            monitors: 2_000,
            interval_s: 20,
        },
        MonitorScenario {
            name: super::lean::IDLE_CPU,
            about: "2,000 HTTP monitors every 5 minutes and nobody reading: the process's share of one core over a minute",
            monitors: 2_000,
            interval_s: 300,
        },
        MonitorScenario {
            name: super::lean::READ_STORM_RSS,
            about: "a storm of public status page reads (64 connections, at least 30 s), then a quiet minute: RSS before, at the end and after",
            monitors: 1,
            interval_s: 86_400,
        },
        MonitorScenario {
            name: SCHEDULER_100K,
            about: "100,000 HTTP monitors every 60 s: start lateness p50/p99/max, busiest second vs mean",
            monitors: 100_000,
            interval_s: 60,
        },
        MonitorScenario {
            name: CONNECTIONS,
            about: "1,000 HTTP monitors every 2 s, quiet and then with 5,000 idle and 500 slowloris connections held: /healthz p99, checks/s, status changes, connection lifetimes",
            monitors: 1_000,
            interval_s: 2,
        },
        MonitorScenario {
            name: OUTBOX,
            about: "20,000 webhook notifications queued at once, delivered to a loopback receiver by the delivery worker: deliveries/s",
            monitors: 1,
            interval_s: 86_400,
        },
        MonitorScenario {
            name: ALERT_LATENCY,
            about: "500 HTTP monitors every 5 s whose target starts failing: from each alert's opening to its webhook's arrival at a loopback receiver (p50/p99/max)",
            monitors: 500,
            interval_s: 5,
        },
        MonitorScenario {
            name: STORM,
            about: "10,000 HTTP monitors every 20 s whose target starts failing: every alert.opened delivered once, latency, RSS growth",
            monitors: 10_000,
            interval_s: 20,
        },
        MonitorScenario {
            name: STORM_RETRY,
            about: "the storm with the receiver answering 500 for its first 30 s: every alert delivered once after it recovers, retries in the history",
            monitors: 10_000,
            interval_s: 20,
        },
        MonitorScenario {
            name: STORM_DEPS,
            about: "the storm with one root (2 confirmations) that the other 9,999 monitors depend on: exactly one alert.opened delivered, listing every dependent, the root's within the alert-latency budget, server CPU per check",
            monitors: 10_000,
            interval_s: 20,
        },
        MonitorScenario {
            name: STATUS_FLIP,
            about: "100,000 reads of a 51-component status page's summary while one component's monitor goes DOWN half-way: never a mix, the new state within 1 s",
            monitors: 50,
            interval_s: 86_400,
        },
        MonitorScenario {
            name: STREAMS,
            about: "1,000 HTTP monitors every 10 s, the monitor reads loaded quiet and then with 1,000 live streams open: RSS of the streams, read p99 with and without them",
            monitors: 1_000,
            interval_s: 10,
        },
        MonitorScenario {
            name: REGIONS,
            about: "300 HTTP monitors every 4 s from three regions (local and two probe processes on loopback) under all, round_robin and random: checks/s, then an outage's page latency and confirmation time",
            monitors: REGIONS_MONITORS,
            interval_s: super::regions::INTERVAL_S,
        },
        MonitorScenario {
            name: CLUSTER,
            about: "PostgreSQL only: 2,000 monitors every 2 s on 1, 2 and 3 `tocsin serve` nodes: checks/s, CPU and transactions per check, rebalance lateness, takeover after SIGKILL",
            monitors: 2_000,
            interval_s: 2,
        },
        MonitorScenario {
            name: READS_UNDER_LOAD,
            about: "10,000 HTTP monitors every 10 s while GET /monitors, /monitors/page and /monitors/{id}/heartbeats are loaded",
            monitors: 10_000,
            interval_s: 10,
        },
    ]
}

pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name).collect()
}

/// How a monitor scenario runs (from the validated command line).
#[derive(Debug, Clone)]
pub struct MonitorPlan {
    /// Overrides every scenario's monitor count.
    pub monitors: Option<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    /// Connections of the read load (`reads-under-load`).
    pub read_connections: usize,
    pub database_url: Option<String>,
    pub server_threads: usize,
}

/// Figures of a window in which the scheduler ran checks.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CheckFigures {
    pub window_secs: f64,
    /// Grid slots due in the window.
    pub due: u64,
    /// Heartbeats stored whose check started in the window.
    pub stored: u64,
    /// Due slots without a stored heartbeat (0 when more were stored than due: edge effects).
    pub missed: u64,
    pub checks_per_sec: f64,
    /// Runs whose start lateness was recorded in the window.
    pub runs: u64,
    pub lateness_p50_ms: u64,
    pub lateness_p99_ms: u64,
    pub lateness_max_ms: u64,
    /// Stored heartbeats of the busiest whole second of the window, and the mean per second.
    pub busiest_second: u64,
    pub mean_per_second: f64,
    pub busiest_ratio: f64,
    /// Heartbeat writes that failed in the window (any means a heartbeat was lost).
    pub write_failures: u64,
    /// Runs the scheduler shed in the window because they waited for room past their next slot
    /// (an overloaded machine skipping slots rather than queueing without bound).
    pub shed: u64,
    /// CPU cores the whole process used, and server-thread CPU per stored heartbeat.
    pub cpu_cores: Option<f64>,
    pub server_cpu_us_per_check: Option<f64>,
}

/// Resident memory before and after the scheduler loaded the monitors.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RssFigures {
    pub before_bytes: u64,
    pub after_bytes: u64,
    pub per_monitor_bytes: f64,
    /// Time from starting the scheduler until it held every monitor.
    pub load_secs: f64,
}

/// One figure judged against its target.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub what: String,
    pub target: String,
    pub measured: String,
    pub pass: bool,
}

/// What one monitor scenario measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MonitorSummary {
    pub scenario: String,
    pub backend: String,
    pub monitors: usize,
    pub interval_secs: i64,
    /// Inserting the monitors (and any heartbeat history).
    pub setup_secs: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rss: Option<RssFigures>,
    /// Bytes of the heartbeat table and its indexes per stored heartbeat, and how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_heartbeat: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeats_in_table: Option<u64>,
    /// Per read route (`reads-under-load`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<Summary>,
    /// Heartbeats stored per second while each read route ran (warm-up included), in the
    /// order of `reads`: which read, if any, held the checks back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stored_per_sec_during_reads: Vec<f64>,
    /// `connections`: the quiet window, and what the hostile connections saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionFigures>,
    /// `outbox`: the notifications queued and how fast they went out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbox: Option<super::outbox::OutboxFigures>,
    /// `alert-latency`, `storm`, `storm-retry`: what the outage's alerts did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alerts: Option<super::alerting::AlertFigures>,
    /// `status-flip`: what the readers of the page saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flip: Option<super::status_flip::FlipFigures>,
    /// `streams`: the streams held and the memory they took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<super::streams::StreamFigures>,
    /// `regions`: one row per region strategy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<super::regions::RegionFigures>,
    /// `read-storm-rss`: the storm and the memory around it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storm: Option<super::lean::StormFigures>,
    /// `cluster`: node counts, coordination cost and takeovers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<super::cluster::ClusterFigures>,
    pub verdicts: Vec<Verdict>,
}

impl MonitorSummary {
    /// A scenario's summary with nothing measured yet.
    pub fn new(scenario: &MonitorScenario, backend: &str, monitors: usize) -> MonitorSummary {
        MonitorSummary {
            scenario: scenario.name.to_string(),
            backend: backend.to_string(),
            monitors,
            interval_secs: scenario.interval_s,
            setup_secs: 0.0,
            checks: None,
            rss: None,
            bytes_per_heartbeat: None,
            heartbeats_in_table: None,
            reads: Vec::new(),
            stored_per_sec_during_reads: Vec::new(),
            connections: None,
            outbox: None,
            alerts: None,
            flip: None,
            streams: None,
            regions: None,
            storm: None,
            cluster: None,
            verdicts: Vec::new(),
        }
    }
}

/// The `connections` scenario's two windows.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionFigures {
    pub quiet_checks: CheckFigures,
    pub quiet_healthz: super::connections::HealthFigures,
    pub hostile_healthz: super::connections::HealthFigures,
    pub held: super::connections::HoldFigures,
    /// Hostile connections open when the hostile window began.
    pub open_at_start: usize,
    /// Monitor events (status changes) recorded over both windows.
    pub status_changes: i64,
    pub header_read_timeout_secs: f64,
}

/// Runs one monitor scenario on a fresh in-process server and database. Blocking: builds and
/// tears down its own runtimes.
pub fn run(scenario: &MonitorScenario, plan: &MonitorPlan) -> anyhow::Result<MonitorSummary> {
    let monitors = plan.monitors.unwrap_or(scenario.monitors).max(1);
    if scenario.name == CLUSTER {
        return super::cluster::run(scenario, monitors, plan);
    }
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.server_threads)
        .thread_name("bench-server")
        .enable_all()
        .build()?;
    let target = LoopbackTarget::start_with(super::lean::keeps_alive(scenario.name))?;
    // The grid allows any interval; the configured floor only guards the API, but a server
    // that runs 1 s monitors should say it allows them.
    let server = LocalServer::start_with(&server_rt, plan.database_url.as_deref(), |c| {
        c.min_interval_seconds = 1;
    })?;
    let outcome = Session {
        rt: &server_rt,
        state: server.state.clone(),
        app: server.state.clone(),
        addr: server.addr,
        backend: server.backend.clone(),
        url: target.url(),
        failing: target.failing(),
    }
    .run(scenario, monitors, plan);
    server.stop(&server_rt);
    target.stop();
    server_rt.shutdown_timeout(Duration::from_secs(5));
    outcome
}

/// One scenario's server, target and helpers.
pub(super) struct Session<'a> {
    rt: &'a Runtime,
    state: AppState,
    /// The same server's HTTP-edge state, for the scenario fixture.
    app: tocsin::server::AppState,
    pub(super) addr: std::net::SocketAddr,
    backend: String,
    url: String,
    /// The target's switch to answering `500`.
    failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// The scheduler task the scenario started.
struct RunningScheduler {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Session<'_> {
    fn run(
        &self,
        scenario: &MonitorScenario,
        monitors: usize,
        plan: &MonitorPlan,
    ) -> anyhow::Result<MonitorSummary> {
        let fixture = Fixture::in_process(self.app.clone());
        let setup_started = Instant::now();
        let workspace_id = self.rt.block_on(fixture.workspace_id())?;
        let seed = MonitorSeed {
            workspace_id,
            count: monitors,
            interval_s: scenario.interval_s,
            url: self.url.clone(),
            timeout_s: CHECK_TIMEOUT_S.min(scenario.interval_s - 1).max(1),
        };
        let ids = self
            .rt
            .block_on(seed::insert_monitors(self.state.cx(), &seed))?;
        let mut summary = MonitorSummary::new(scenario, &self.backend, monitors);
        match scenario.name {
            IDLE_RSS => {
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let rss = self.idle_rss(monitors)?;
                summary.verdicts.push(Verdict {
                    what: "RSS per idle monitor".into(),
                    target: format!("<= {TARGET_RSS_PER_MONITOR:.0} bytes"),
                    measured: format!("{:.0} bytes", rss.per_monitor_bytes),
                    pass: rss.per_monitor_bytes <= TARGET_RSS_PER_MONITOR,
                });
                summary.rss = Some(rss);
            }
            READS_UNDER_LOAD => {
                // A day of history at the monitors' interval for the monitor whose heartbeats
                // are read, so the read pages through a realistic index, not an empty one.
                let first = ids
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("no monitor was created"))?;
                let per_day = usize::try_from(86_400 / scenario.interval_s.max(1))?;
                let now = self.state.clock().now_ms();
                let every = Duration::from_secs(u64::try_from(scenario.interval_s.max(1))?);
                self.rt.block_on(seed::write_history(
                    &self.state,
                    first,
                    per_day,
                    every,
                    now - 60_000,
                ))?;
                let token = self.rt.block_on(fixture.api_token())?.to_string();
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let (reads, stored, checks) =
                    self.reads_under_load(&ids, scenario, &first.0, &token, plan)?;
                summary.stored_per_sec_during_reads = stored;
                for r in &reads {
                    summary.verdicts.push(Verdict {
                        what: format!("{} p99 while checks run", r.scenario),
                        target: format!("< {TARGET_READ_P99_MS:.0} ms"),
                        measured: format!("{:.2} ms ({} errors)", r.p99_ms, r.errors),
                        pass: r.p99_ms < TARGET_READ_P99_MS && r.errors == 0 && r.requests > 0,
                    });
                }
                summary.reads = reads;
                summary.checks = Some(checks);
            }
            STREAMS => {
                let first = ids
                    .first()
                    .ok_or_else(|| anyhow::anyhow!("no monitor was created"))?;
                let token = self.rt.block_on(fixture.api_token())?.to_string();
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let (quiet, _, _) =
                    self.reads_under_load(&ids, scenario, &first.0, &token, plan)?;
                let rss_before = measure::rss_bytes().unwrap_or(0);
                let streams = super::streams::Streams::open(self.addr, &token, STREAMS_OPEN)?;
                let rss_open = measure::rss_bytes().unwrap_or(0);
                let clients = super::cpu::threads_ns(super::streams::CLIENT_THREAD);
                let started = Instant::now();
                let (loaded, _, checks) =
                    self.reads_under_load(&ids, scenario, &first.0, &token, plan)?;
                let clients_cpu_cores = clients
                    .zip(super::cpu::threads_ns(super::streams::CLIENT_THREAD))
                    .map(|(a, b)| {
                        b.saturating_sub(a) as f64
                            / 1e9
                            / started.elapsed().as_secs_f64().max(0.001)
                    });
                let figures = super::streams::StreamFigures {
                    streams: STREAMS_OPEN,
                    open_at_end: self.state.live().open_streams(),
                    ended: streams.ended(),
                    bytes_read: streams.bytes(),
                    rss_before_bytes: rss_before,
                    rss_open_bytes: rss_open,
                    rss_per_stream_bytes: rss_open.saturating_sub(rss_before) as f64
                        / STREAMS_OPEN as f64,
                    clients_cpu_cores,
                };
                streams.stop();
                // Quiet again: the database grows through the run (heartbeats, the WAL), so
                // the loaded window is compared with the quiet windows on both sides of it,
                // not with an earlier one alone.
                let (after, _, _) =
                    self.reads_under_load(&ids, scenario, &first.0, &token, plan)?;
                let grown = figures
                    .rss_open_bytes
                    .saturating_sub(figures.rss_before_bytes);
                summary.verdicts.push(Verdict {
                    what: format!("RSS of {STREAMS_OPEN} open streams"),
                    target: format!("<= {:.0} MiB", TARGET_STREAMS_RSS_BYTES / 1048576.0),
                    measured: format!(
                        "{:.1} MiB ({:.0} bytes per stream), {} open at the end, {} ended",
                        grown as f64 / 1048576.0,
                        figures.rss_per_stream_bytes,
                        figures.open_at_end,
                        figures.ended
                    ),
                    pass: (grown as f64) <= TARGET_STREAMS_RSS_BYTES
                        && figures.open_at_end == STREAMS_OPEN
                        && figures.ended == 0,
                });
                // The p99 also pays for the streams' clients, which share the two cores here
                // (their CPU is reported apart); the server's CPU per read is the server's
                // own share.
                let clients = figures
                    .clients_cpu_cores
                    .map_or(String::new(), |c| format!(", stream clients {c:.2} cores"));
                for ((q, a), l) in quiet.iter().zip(&after).zip(&loaded) {
                    let q_p99 = (q.p99_ms + a.p99_ms) / 2.0;
                    summary.verdicts.push(Verdict {
                        what: format!("{} p99 with the streams open", l.scenario),
                        target: format!("<= {:.0}% of quiet", TARGET_STREAMS_SLOWDOWN * 100.0),
                        measured: format!(
                            "{:.2} ms vs {q_p99:.2} ms quiet ({:.2} before, {:.2} after; {} errors{clients})",
                            l.p99_ms, q.p99_ms, a.p99_ms, l.errors
                        ),
                        pass: l.p99_ms <= q_p99 * TARGET_STREAMS_SLOWDOWN
                            && l.errors == 0
                            && l.requests > 0,
                    });
                    if let (Some(qc), Some(ac), Some(lc)) = (
                        q.server_cpu_us_per_request,
                        a.server_cpu_us_per_request,
                        l.server_cpu_us_per_request,
                    ) {
                        let quiet_cpu = (qc + ac) / 2.0;
                        summary.verdicts.push(Verdict {
                            what: format!(
                                "{} server CPU per read with the streams open",
                                l.scenario
                            ),
                            target: format!("<= {:.0}% of quiet", TARGET_STREAMS_SLOWDOWN * 100.0),
                            measured: format!(
                                "{lc:.1} µs vs {quiet_cpu:.1} µs quiet ({qc:.1} before, {ac:.1} after)"
                            ),
                            pass: lc <= quiet_cpu * TARGET_STREAMS_SLOWDOWN,
                        });
                    }
                }
                summary.reads = loaded;
                summary.checks = Some(checks);
                summary.streams = Some(figures);
            }
            OUTBOX => {
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let workspace_id = self.rt.block_on(fixture.workspace_id())?;
                let figures = self.rt.block_on(super::outbox::measure(
                    &self.state,
                    &workspace_id,
                    &self.url,
                    super::outbox::DELIVERIES,
                ))?;
                summary.verdicts.push(Verdict {
                    what: "deliveries/s to a loopback receiver, all delivered".into(),
                    target: format!(
                        ">= {:.0}/s, none failed",
                        super::outbox::TARGET_DELIVERIES_PER_SEC
                    ),
                    measured: format!(
                        "{:.0}/s ({} of {} delivered in {:.2} s, {} failed attempts)",
                        figures.deliveries_per_sec,
                        figures.delivered,
                        figures.queued,
                        figures.drain_secs,
                        figures.failed_attempts
                    ),
                    pass: figures.deliveries_per_sec >= super::outbox::TARGET_DELIVERIES_PER_SEC
                        && figures.delivered == figures.queued
                        && figures.failed_attempts == 0,
                });
                summary.outbox = Some(figures);
            }
            STORM_DEPS => {
                let workspace_id = self.rt.block_on(fixture.workspace_id())?;
                let receiver = super::alerting::Receiver::start()?;
                self.rt.block_on(super::alerting::default_channel(
                    self.state.cx(),
                    &workspace_id,
                    &receiver.url(),
                ))?;
                let monitor_ids: Vec<String> = ids.iter().map(|(id, _)| id.clone()).collect();
                self.rt.block_on(super::alerting::depend_on_first(
                    self.state.cx(),
                    &monitor_ids,
                ))?;
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let scheduler = self.start_scheduler();
                let figures = self.wait_loaded(ids.len()).and_then(|_| {
                    std::thread::sleep(Duration::from_secs(
                        u64::try_from(scenario.interval_s).unwrap_or(1) + 1,
                    ));
                    super::alerting::Outage {
                        state: &self.state,
                        rt: self.rt,
                        receiver: &receiver,
                        target_failing: self.failing.clone(),
                        monitors: 1,
                        refuse_for: None,
                        timeout: Duration::from_secs(
                            u64::try_from(scenario.interval_s).unwrap_or(1) * 2 + 150,
                        ),
                    }
                    .run_deps(Duration::from_secs(
                        u64::try_from(scenario.interval_s * 3 + CHECK_TIMEOUT_S).unwrap_or(60),
                    ))
                });
                self.stop_scheduler(scheduler);
                receiver.stop();
                let f = figures?;
                summary.verdicts.push(Verdict {
                    what: "one alert.opened for the whole outage, every dependent under the root"
                        .into(),
                    target: format!(
                        "{} alerts opened, 1 delivered, {} under the root",
                        ids.len(),
                        ids.len() - 1
                    ),
                    measured: format!(
                        "{} opened, {} delivered ({} duplicates), {} under the root, \
                         {} listed in its page",
                        f.alerts.opened,
                        f.alerts.received,
                        f.alerts.duplicates,
                        f.under_root,
                        f.dependents
                    ),
                    pass: f.alerts.opened == ids.len() as u64
                        && f.alerts.received == 1
                        && f.alerts.duplicates == 0
                        && f.under_root == ids.len() as u64 - 1,
                });
                summary.verdicts.push(Verdict {
                    what: "the root's page: its opening to the receiver".into(),
                    target: format!("<= {:.0} ms", super::alerting::TARGET_LATENCY_P99_MS),
                    measured: format!(
                        "{:.0} ms ({} to its first attempt)",
                        f.alerts.latency_max_ms,
                        f.root_attempted_after_ms
                            .map_or_else(|| "none".to_string(), |ms| format!("{ms} ms"))
                    ),
                    pass: f.alerts.latency_max_ms <= super::alerting::TARGET_LATENCY_P99_MS,
                });
                // Its CPU verdict compares it with `storm` in the same run
                // (`lean::cross_verdicts`).
                summary.alerts = Some(f.alerts);
            }
            ALERT_LATENCY | STORM | STORM_RETRY => {
                let workspace_id = self.rt.block_on(fixture.workspace_id())?;
                let receiver = super::alerting::Receiver::start()?;
                self.rt.block_on(super::alerting::default_channel(
                    self.state.cx(),
                    &workspace_id,
                    &receiver.url(),
                ))?;
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let refuse_for = (scenario.name == STORM_RETRY).then_some(STORM_REFUSE);
                let scheduler = self.start_scheduler();
                let figures = self.wait_loaded(ids.len()).and_then(|_| {
                    // One whole interval of UP checks first: the outage starts from steady state.
                    std::thread::sleep(Duration::from_secs(
                        u64::try_from(scenario.interval_s).unwrap_or(1) + 1,
                    ));
                    super::alerting::Outage {
                        state: &self.state,
                        rt: self.rt,
                        receiver: &receiver,
                        target_failing: self.failing.clone(),
                        monitors: ids.len(),
                        refuse_for,
                        timeout: Duration::from_secs(
                            u64::try_from(scenario.interval_s).unwrap_or(1) * 2 + 150,
                        ),
                    }
                    .run()
                });
                self.stop_scheduler(scheduler);
                receiver.stop();
                let f = figures?;
                let all = f.opened == ids.len() as u64
                    && f.received == f.opened
                    && f.lost == 0
                    && f.duplicates == 0;
                summary.verdicts.push(Verdict {
                    what: "every alert.opened delivered exactly once".into(),
                    target: format!("{} alerts, 0 lost, 0 duplicates", ids.len()),
                    measured: format!(
                        "{} opened, {} received, {} lost, {} duplicates",
                        f.opened, f.received, f.lost, f.duplicates
                    ),
                    pass: all,
                });
                match scenario.name {
                    ALERT_LATENCY => summary.verdicts.push(Verdict {
                        what: "outage to first delivery (openedAt to the receiver), p99".into(),
                        target: format!("<= {:.0} ms", super::alerting::TARGET_LATENCY_P99_MS),
                        measured: format!(
                            "{:.0} ms (p50 {:.0} ms, max {:.0} ms)",
                            f.latency_p99_ms, f.latency_p50_ms, f.latency_max_ms
                        ),
                        pass: f.latency_p99_ms <= super::alerting::TARGET_LATENCY_P99_MS,
                    }),
                    STORM => summary.verdicts.push(Verdict {
                        what: "every alert delivered within 10 s of opening".into(),
                        target: format!(
                            "max <= {:.0} s",
                            super::alerting::TARGET_STORM_MAX_LATENCY_S
                        ),
                        measured: format!(
                            "max {:.2} s (p50 {:.0} ms, p99 {:.0} ms; first opening to last arrival {:.1} s)",
                            f.latency_max_ms / 1000.0,
                            f.latency_p50_ms,
                            f.latency_p99_ms,
                            f.span_secs
                        ),
                        pass: f.latency_max_ms / 1000.0
                            <= super::alerting::TARGET_STORM_MAX_LATENCY_S,
                    }),
                    _ => summary.verdicts.push(Verdict {
                        what: "refused attempts retried and visible in the history".into(),
                        target: "> 0 refused, each kept as a failed attempt".into(),
                        measured: format!(
                            "{} refused, {} failed attempts in the history; last arrival {:.1} s after the first opening",
                            f.refused_attempts, f.failed_attempts_in_history, f.span_secs
                        ),
                        pass: f.refused_attempts > 0
                            && f.failed_attempts_in_history >= f.refused_attempts,
                    }),
                }
                if scenario.name != ALERT_LATENCY {
                    summary.verdicts.push(Verdict {
                        what: "RSS growth over the storm".into(),
                        target: format!(
                            "<= {} MB",
                            super::alerting::TARGET_STORM_RSS_GROWTH_BYTES / (1024 * 1024)
                        ),
                        measured: format!(
                            "{:.1} MB",
                            f.rss_growth_bytes as f64 / (1024.0 * 1024.0)
                        ),
                        pass: f.rss_growth_bytes <= super::alerting::TARGET_STORM_RSS_GROWTH_BYTES,
                    });
                }
                summary.alerts = Some(f);
            }
            STATUS_FLIP => {
                let workspace_id = self.rt.block_on(fixture.workspace_id())?;
                let token = self.rt.block_on(fixture.api_token())?.to_string();
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let f = super::status_flip::run(
                    self.rt,
                    &self.state,
                    self.addr,
                    &workspace_id,
                    &token,
                    &ids,
                )?;
                summary.verdicts.push(Verdict {
                    what: "every answer one whole state (old or new), none failed".into(),
                    target: "0 mixed bodies, 0 errors".into(),
                    measured: format!(
                        "{} requests ({:.0}/s), {} distinct bodies: {} old, {} new, {} mixed; {} errors",
                        f.requests,
                        f.requests_per_sec,
                        f.distinct_bodies,
                        f.old_bodies,
                        f.new_bodies,
                        f.mixed_bodies,
                        f.errors
                    ),
                    pass: f.mixed_bodies == 0
                        && f.errors == 0
                        && f.old_bodies >= 1
                        && f.new_bodies >= 1,
                });
                summary.verdicts.push(Verdict {
                    what: "the new state served within 1 s of the change".into(),
                    target: format!("old state <= {:.0} ms after it", super::status_flip::TARGET_STALE_MS),
                    measured: format!(
                        "last old answer to a request sent {:.0} ms after the change ({} such); first new {:.0} ms after",
                        f.last_old_after_change_ms, f.old_after_change, f.first_new_after_ms
                    ),
                    pass: f.last_old_after_change_ms <= super::status_flip::TARGET_STALE_MS
                        && f.new_bodies >= 1,
                });
                summary.flip = Some(f);
            }
            super::lean::READ_STORM_RSS => {
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                self.read_storm(&fixture, plan, &mut summary)?;
            }
            REGIONS => {
                // Its monitors are its own (three regions, each strategy in turn).
                self.rt.block_on(
                    sqlx::query("UPDATE monitors SET active = 0").execute(self.state.db().writer()),
                )?;
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let figures = super::regions::measure(
                    self.rt,
                    &self.state,
                    self.addr,
                    (&seed.workspace_id, &self.url),
                    &self.failing,
                    monitors,
                    plan,
                )?;
                let bound = super::regions::page_bound_ms();
                for f in &figures.strategies {
                    summary.verdicts.push(Verdict {
                        what: format!(
                            "{}: every slot checked, an outage pages in time",
                            f.strategy
                        ),
                        target: format!("no slot skipped or missed, all paged, max <= {bound} ms"),
                        measured: format!(
                            "{} skipped, {} shed, {} of {} due missed; {} of {} paged, max {} ms",
                            f.skipped,
                            f.shed,
                            f.missed,
                            f.due,
                            f.paged,
                            f.monitors,
                            f.detection_max_ms
                        ),
                        pass: f.skipped == 0
                            && f.shed == 0
                            && (f.missed as f64) <= f.due as f64 * MAX_MISSED_SHARE
                            && f.paged == f.monitors
                            && f.detection_max_ms <= bound,
                    });
                }
                summary.regions = Some(figures);
            }
            CONNECTIONS => {
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let (hostile, figures) = self.hostile_connections(&ids, scenario, plan)?;
                let timeout = figures.header_read_timeout_secs;
                // A connection closes within its timeout; the watchdog's wake-up and the
                // client's notice of the close add a little.
                let slack = 1.0;
                summary.verdicts.push(Verdict {
                    what: "/healthz p99 with the connections held".into(),
                    target: format!("< {TARGET_HEALTHZ_P99_MS:.0} ms, no errors"),
                    measured: format!(
                        "{:.2} ms (quiet {:.2} ms), {} errors in {} requests",
                        figures.hostile_healthz.p99_ms,
                        figures.quiet_healthz.p99_ms,
                        figures.hostile_healthz.errors,
                        figures.hostile_healthz.requests
                    ),
                    pass: figures.hostile_healthz.p99_ms < TARGET_HEALTHZ_P99_MS
                        && figures.hostile_healthz.errors == 0
                        && figures.hostile_healthz.requests > 0,
                });
                let quiet_rate = figures.quiet_checks.checks_per_sec;
                summary.verdicts.push(Verdict {
                    what: "checks/s with the connections held".into(),
                    target: "no drop from the quiet window, every heartbeat stored".into(),
                    measured: format!(
                        "{:.0}/s vs {:.0}/s quiet, {} of {} due missed",
                        hostile.checks_per_sec, quiet_rate, hostile.missed, hostile.due
                    ),
                    pass: hostile.checks_per_sec >= quiet_rate * (1.0 - MAX_MISSED_SHARE)
                        && all_stored(&hostile),
                });
                summary.verdicts.push(Verdict {
                    what: "status changes".into(),
                    target: "0".into(),
                    measured: figures.status_changes.to_string(),
                    pass: figures.status_changes == 0,
                });
                let h = &figures.held;
                summary.verdicts.push(Verdict {
                    what: "every held connection closed within its timeout".into(),
                    target: format!("<= {timeout:.0} s (+{slack:.0} s)"),
                    measured: format!(
                        "{} open at start; idle: {} closed, longest {:.2} s; slowloris: {} closed, longest {:.2} s; {} refused",
                        figures.open_at_start,
                        h.idle_closed,
                        h.idle_longest_secs,
                        h.slowloris_closed,
                        h.slowloris_longest_secs,
                        h.refused
                    ),
                    pass: h.idle_closed >= h.idle as u64
                        && h.slowloris_closed >= h.slowloris as u64
                        && h.idle_longest_secs <= timeout + slack
                        && h.slowloris_longest_secs <= timeout + slack
                        && figures.open_at_start >= h.idle + h.slowloris
                        && h.refused == 0,
                });
                summary.checks = Some(hostile);
                summary.connections = Some(figures);
            }
            _ => {
                summary.setup_secs = setup_started.elapsed().as_secs_f64();
                let figures =
                    self.checks_window(&ids, scenario, &super::lean::window(scenario.name, plan))?;
                if scenario.name == CHECKS {
                    summary.verdicts.push(Verdict {
                        what: "checks/s, every heartbeat stored".into(),
                        target: format!(">= {TARGET_CHECKS_PER_SEC:.0}/s, none missed"),
                        measured: format!(
                            "{:.0}/s, {} of {} due missed, {} write failures",
                            figures.checks_per_sec,
                            figures.missed,
                            figures.due,
                            figures.write_failures
                        ),
                        pass: sustains(&figures, TARGET_CHECKS_PER_SEC),
                    });
                } else if scenario.name == SCHEDULER_100K {
                    summary.verdicts.push(Verdict {
                        what: "start lateness p99".into(),
                        target: format!("<= {TARGET_LATENESS_P99_MS} ms"),
                        measured: format!("{} ms ({} runs)", figures.lateness_p99_ms, figures.runs),
                        pass: figures.lateness_p99_ms <= TARGET_LATENESS_P99_MS && figures.runs > 0,
                    });
                    summary.verdicts.push(Verdict {
                        what: "busiest second / mean".into(),
                        target: format!("<= {TARGET_BUSIEST_RATIO}"),
                        measured: format!(
                            "{:.2} ({} vs {:.1}/s)",
                            figures.busiest_ratio, figures.busiest_second, figures.mean_per_second
                        ),
                        pass: figures.busiest_ratio <= TARGET_BUSIEST_RATIO
                            && figures.mean_per_second > 0.0,
                    });
                }
                if let Some((bytes, rows)) = self
                    .rt
                    .block_on(measure::heartbeat_table_bytes(self.state.cx()))?
                {
                    if rows > 0 {
                        let per = bytes as f64 / rows as f64;
                        summary.bytes_per_heartbeat = Some(per);
                        summary.heartbeats_in_table = Some(rows);
                        if scenario.name == CHECKS && self.backend == "sqlite" {
                            summary.verdicts.push(Verdict {
                                what: "on-disk bytes per UP heartbeat (SQLite)".into(),
                                target: format!("<= {TARGET_BYTES_PER_HEARTBEAT:.0}"),
                                measured: format!("{per:.1} ({rows} heartbeats)"),
                                pass: per <= TARGET_BYTES_PER_HEARTBEAT,
                            });
                        }
                    }
                }
                summary.checks = Some(figures);
                super::lean::check_verdicts(&mut summary);
            }
        }
        Ok(summary)
    }

    fn start_scheduler(&self) -> RunningScheduler {
        let cancel = CancellationToken::new();
        let task = self.rt.spawn(tocsin::monitoring::scheduler::run(
            self.state.runner().clone(),
            cancel.clone(),
        ));
        RunningScheduler { cancel, task }
    }

    fn stop_scheduler(&self, s: RunningScheduler) {
        s.cancel.cancel();
        let _ = self.rt.block_on(s.task);
    }

    /// Waits until the scheduler holds `n` monitors; returns how long that took.
    fn wait_loaded(&self, n: usize) -> anyhow::Result<Duration> {
        let started = Instant::now();
        while self.state.scheduler_stats().scheduled() < n {
            if started.elapsed() > LOAD_TIMEOUT {
                anyhow::bail!(
                    "the scheduler loaded {} of {n} monitors in {LOAD_TIMEOUT:?}",
                    self.state.scheduler_stats().scheduled()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(started.elapsed())
    }

    fn idle_rss(&self, monitors: usize) -> anyhow::Result<RssFigures> {
        // Let the seeding's freed memory and the writer settle before the first reading.
        std::thread::sleep(Duration::from_millis(500));
        let before = measure::rss_bytes()
            .ok_or_else(|| anyhow::anyhow!("VmRSS is not readable on this platform"))?;
        let scheduler = self.start_scheduler();
        let loaded = self.wait_loaded(monitors);
        std::thread::sleep(Duration::from_millis(500));
        let after = measure::rss_bytes().unwrap_or(before);
        self.stop_scheduler(scheduler);
        let load = loaded?;
        Ok(RssFigures {
            before_bytes: before,
            after_bytes: after,
            per_monitor_bytes: after.saturating_sub(before) as f64 / monitors as f64,
            load_secs: load.as_secs_f64(),
        })
    }

    /// Starts the scheduler, waits for the load and the warm-up, measures one window, lets
    /// runs in flight finish, stops the scheduler.
    fn checks_window(
        &self,
        ids: &[(String, i64)],
        scenario: &MonitorScenario,
        plan: &MonitorPlan,
    ) -> anyhow::Result<CheckFigures> {
        let scheduler = self.start_scheduler();
        let figures = self.wait_loaded(ids.len()).and_then(|_| {
            std::thread::sleep(plan.warmup);
            let mark = self.mark();
            std::thread::sleep(plan.duration);
            self.figures_since(mark, ids, scenario)
        });
        self.stop_scheduler(scheduler);
        figures
    }

    /// The `connections` scenario: a quiet window, then one with the hostile connections held
    /// (the window should outlast the header-read timeout, so every one is closed at least
    /// once); `/healthz` timed throughout both.
    fn hostile_connections(
        &self,
        ids: &[(String, i64)],
        scenario: &MonitorScenario,
        plan: &MonitorPlan,
    ) -> anyhow::Result<(CheckFigures, ConnectionFigures)> {
        use super::connections::{Hold, Prober};
        let scheduler = self.start_scheduler();
        let outcome = (|| {
            self.wait_loaded(ids.len())?;
            std::thread::sleep(plan.warmup);
            let events_before = self.rt.block_on(self.status_changes())?;
            let prober = Prober::start(self.addr)?;
            let mark = self.mark();
            std::thread::sleep(plan.duration);
            let quiet_checks = self.figures_since(mark, ids, scenario)?;
            let quiet_healthz = prober.stop();

            let hold = Hold::start(self.addr, HOSTILE_IDLE, HOSTILE_SLOWLORIS)?;
            let opening = Instant::now();
            while hold.open() < HOSTILE_IDLE + HOSTILE_SLOWLORIS
                && opening.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            let open_at_start = hold.open();
            let prober = Prober::start(self.addr)?;
            let mark = self.mark();
            std::thread::sleep(plan.duration);
            let hostile_checks = self.figures_since(mark, ids, scenario)?;
            let hostile_healthz = prober.stop();
            let held = hold.stop();
            let events_after = self.rt.block_on(self.status_changes())?;
            Ok((
                hostile_checks,
                ConnectionFigures {
                    quiet_checks,
                    quiet_healthz,
                    hostile_healthz,
                    held,
                    open_at_start,
                    status_changes: events_after - events_before,
                    header_read_timeout_secs: self.state.config().header_read_timeout.as_secs_f64(),
                },
            ))
        })();
        self.stop_scheduler(scheduler);
        outcome
    }

    /// Monitor events recorded so far (each status change writes one).
    async fn status_changes(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM monitor_events")
            .fetch_one(self.state.db().reader())
            .await
    }

    /// The start of a measured window.
    fn mark(&self) -> Mark {
        self.state.scheduler_stats().reset_lateness();
        Mark {
            at_ms: self.state.clock().now_ms(),
            cpu: CpuSample::now(),
            failed: self.state.heartbeats().counts().failed,
            shed: self.state.scheduler_stats().shed(),
        }
    }

    /// The figures from `mark` to now; waits [`DRAIN`] for runs in flight to be stored first.
    fn figures_since(
        &self,
        mark: Mark,
        ids: &[(String, i64)],
        scenario: &MonitorScenario,
    ) -> anyhow::Result<CheckFigures> {
        let end_ms = self.state.clock().now_ms();
        let lateness = self.state.scheduler_stats().lateness();
        let cpu = mark.cpu.zip(CpuSample::now()).map(|(a, b)| a.until(&b));
        std::thread::sleep(DRAIN);
        self.rt.block_on(self.state.heartbeats().flush());
        let failed = self.state.heartbeats().counts().failed - mark.failed;
        // Whole seconds only, so the busiest second is compared with full seconds.
        let secs = (end_ms - mark.at_ms) / 1000;
        let to_ms = mark.at_ms + secs.max(1) * 1000;
        let per_second = self.rt.block_on(measure::stored_per_second(
            self.state.cx(),
            mark.at_ms,
            to_ms,
        ))?;
        let interval_ms = u64::try_from(scenario.interval_s.max(1))? * 1000;
        let due = measure::expected_runs(
            ids.iter().map(|(id, _)| id.as_str()),
            interval_ms,
            mark.at_ms,
            to_ms,
        );
        let stored: u64 = per_second.iter().sum();
        let window_secs = (to_ms - mark.at_ms) as f64 / 1000.0;
        let busiest = per_second.iter().copied().max().unwrap_or(0);
        let mean = stored as f64 / per_second.len().max(1) as f64;
        let measured_secs = (end_ms - mark.at_ms) as f64 / 1000.0;
        Ok(CheckFigures {
            window_secs,
            due,
            stored,
            missed: due.saturating_sub(stored),
            checks_per_sec: stored as f64 / window_secs.max(0.001),
            runs: lateness.runs,
            lateness_p50_ms: lateness.p50_ms,
            lateness_p99_ms: lateness.p99_ms,
            lateness_max_ms: lateness.max_ms,
            busiest_second: busiest,
            mean_per_second: mean,
            busiest_ratio: if mean > 0.0 {
                busiest as f64 / mean
            } else {
                0.0
            },
            write_failures: failed,
            shed: self.state.scheduler_stats().shed() - mark.shed,
            cpu_cores: cpu.map(|c| (c.server + c.client).as_secs_f64() / measured_secs.max(0.001)),
            server_cpu_us_per_check: cpu
                .filter(|_| stored > 0)
                .map(|c| c.server.as_secs_f64() * 1e6 / stored as f64),
        })
    }

    /// Runs the three read routes one after another with the scheduler checking throughout;
    /// returns each route's latency and the checks' figures over the whole read phase.
    fn reads_under_load(
        &self,
        ids: &[(String, i64)],
        scenario: &MonitorScenario,
        read_monitor: &str,
        token: &str,
        plan: &MonitorPlan,
    ) -> anyhow::Result<(Vec<Summary>, Vec<f64>, CheckFigures)> {
        let client_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let routes = [
            ("GET /monitors", "/monitors".to_string()),
            ("GET /monitors/page", "/monitors/page".to_string()),
            (
                "GET /monitors/{id}/heartbeats",
                format!("/monitors/{read_monitor}/heartbeats"),
            ),
        ];
        let scheduler = self.start_scheduler();
        let outcome = (|| {
            self.wait_loaded(ids.len())?;
            let mark = self.mark();
            let host = self.addr.to_string();
            let mut reads = Vec::new();
            let mut stored = Vec::new();
            for (name, path) in &routes {
                let (written, started) = (
                    self.state.heartbeats().counts().written,
                    std::time::Instant::now(),
                );
                let spec = RequestSpec::get(path).bearer(token)?;
                let template = super::load::Template::new(self.addr, &host, "", &spec)?;
                let (tally, cpu) = client_rt.block_on(async {
                    let window = super::load::Window::starting_now(plan.warmup, plan.duration);
                    super::load::drive(template, plan.read_connections, window).await
                });
                reads.push(
                    Summary::from_tally(name, &tally, plan.duration).with_cpu(cpu, plan.duration),
                );
                let n = self.state.heartbeats().counts().written - written;
                stored.push(n as f64 / started.elapsed().as_secs_f64().max(0.001));
            }
            let mut checks = self.figures_since(mark, ids, scenario)?;
            // The server's CPU went to the reads as well: per check it would mislead.
            checks.server_cpu_us_per_check = None;
            Ok((reads, stored, checks))
        })();
        self.stop_scheduler(scheduler);
        outcome
    }
}

/// Where a measured window started.
struct Mark {
    at_ms: i64,
    cpu: Option<CpuSample>,
    failed: u64,
    shed: u64,
}

fn all_stored(f: &CheckFigures) -> bool {
    f.write_failures == 0 && (f.missed as f64) <= (f.due as f64) * MAX_MISSED_SHARE
}

/// Whether the window offered at least `rate` checks/s and stored them all, allowing the same
/// window-edge blur as [`all_stored`] (19,999 of 20,000 due is a pass, not 1,999.9/s).
fn sustains(f: &CheckFigures, rate: f64) -> bool {
    let offered = f.due as f64 / f.window_secs.max(0.001);
    offered >= rate && f.checks_per_sec >= rate * (1.0 - MAX_MISSED_SHARE) && all_stored(f)
}

/// The human-readable report of the monitor scenarios.
pub fn render(results: &[MonitorSummary]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for s in results {
        let _ = writeln!(
            out,
            "\n{} on {}: {} monitors every {} s (setup {:.1} s)",
            s.scenario, s.backend, s.monitors, s.interval_secs, s.setup_secs
        );
        if let Some(c) = &s.checks {
            let _ = writeln!(
                out,
                "  checks/s {:.0} | due {} stored {} missed {} | lateness p50 {} p99 {} max {} ms ({} runs) \
                 | busiest second {} vs mean {:.1} ({:.2}x) | write failures {} | shed {} | cores {} | server {} us/check",
                c.checks_per_sec,
                c.due,
                c.stored,
                c.missed,
                c.lateness_p50_ms,
                c.lateness_p99_ms,
                c.lateness_max_ms,
                c.runs,
                c.busiest_second,
                c.mean_per_second,
                c.busiest_ratio,
                c.write_failures,
                c.shed,
                c.cpu_cores.map_or("-".into(), |v| format!("{v:.2}")),
                c.server_cpu_us_per_check.map_or("-".into(), |v| format!("{v:.0}")),
            );
        }
        if let Some(c) = &s.cluster {
            for f in &c.by_nodes {
                let _ = writeln!(
                    out,
                    "  {} node(s): {:.0} checks/s of {:.0} due | nodes {:.0} us/check, postgres {:.0} us/check, {:.2} transactions/check | shares {:?} | rebalance lateness p99 {}",
                    f.nodes,
                    f.checks_per_sec,
                    f.due_per_sec,
                    f.node_us_per_check,
                    f.postgres_us_per_check,
                    f.transactions_per_check,
                    f.shares,
                    f.rebalance_lateness_p99_ms
                        .map_or("-".into(), |v| format!("<= {v:.0} ms")),
                );
            }
            let _ = writeln!(
                out,
                "  takeover after SIGKILL ({} kills): p50 {} ms, p99 {} ms",
                c.takeover_ms.len(),
                c.takeover_p50_ms,
                c.takeover_p99_ms
            );
        }
        if let Some(r) = &s.regions {
            let _ = writeln!(
                out,
                "  timeout {} s, {} confirmations; page latency from the failure, confirmation from the paging cycle's start",
                r.timeout_secs, r.confirmations
            );
            let _ = writeln!(
                out,
                "  {:<12} {:>8} {:>8} {:>7} {:>6} {:>8} {:>6} {:>22} {:>22}",
                "strategy",
                "checks/s",
                "cycles/s",
                "/cycle",
                "missed",
                "skipped",
                "paged",
                "page p50/p99/max ms",
                "confirm p50/p99/max ms"
            );
            for f in &r.strategies {
                let _ = writeln!(
                    out,
                    "  {:<12} {:>8.0} {:>8.0} {:>7.2} {:>6} {:>8} {:>6} {:>22} {:>22}",
                    f.strategy,
                    f.checks_per_sec,
                    f.cycles_per_sec,
                    f.checks_per_cycle,
                    f.missed,
                    f.skipped + f.shed,
                    format!("{}/{}", f.paged, f.monitors),
                    format!(
                        "{}/{}/{}",
                        f.detection_p50_ms, f.detection_p99_ms, f.detection_max_ms
                    ),
                    format!(
                        "{}/{}/{}",
                        f.confirmation_p50_ms, f.confirmation_p99_ms, f.confirmation_max_ms
                    ),
                );
            }
        }
        if let Some(o) = &s.outbox {
            let _ = writeln!(
                out,
                "  deliveries/s {:.0} | queued {} (in {:.2} s) delivered {} in {:.2} s | failed attempts {}",
                o.deliveries_per_sec,
                o.queued,
                o.enqueue_secs,
                o.delivered,
                o.drain_secs,
                o.failed_attempts
            );
        }
        if let Some(r) = &s.rss {
            let _ = writeln!(
                out,
                "  RSS {:.1} MiB -> {:.1} MiB after loading (in {:.2} s): {:.0} bytes per monitor",
                r.before_bytes as f64 / 1_048_576.0,
                r.after_bytes as f64 / 1_048_576.0,
                r.load_secs,
                r.per_monitor_bytes
            );
        }
        if let (Some(b), Some(n)) = (s.bytes_per_heartbeat, s.heartbeats_in_table) {
            let _ = writeln!(
                out,
                "  heartbeat table: {b:.1} bytes per heartbeat ({n} heartbeats, indexes included)"
            );
        }
        if !s.reads.is_empty() {
            let _ = writeln!(
                out,
                "  {:<30} {:>8} {:>8} {:>8} {:>8} {:>7} {:>10}",
                "read", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "stored/s"
            );
            for (i, r) in s.reads.iter().enumerate() {
                let stored = s
                    .stored_per_sec_during_reads
                    .get(i)
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
                let _ = writeln!(
                    out,
                    "  {:<30} {:>8.0} {:>8.2} {:>8.2} {:>8.2} {:>7} {:>10}",
                    r.scenario, r.requests_per_sec, r.p50_ms, r.p99_ms, r.max_ms, r.errors, stored
                );
                if let Some(e) = &r.sample_error {
                    let _ = writeln!(out, "    e.g. {e}");
                }
            }
        }
        for v in &s.verdicts {
            let _ = writeln!(
                out,
                "  [{}] {}: {} (target {})",
                if v.pass { "PASS" } else { "MISS" },
                v.what,
                v.measured,
                v.target
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_distinct_from_request_scenarios() {
        let n = names();
        let mut sorted = n.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n.len());
        for name in super::super::scenario::names() {
            assert!(!n.contains(&name), "{name}");
        }
    }

    #[test]
    fn missed_share_allows_only_edge_effects() {
        let mut f = CheckFigures {
            window_secs: 10.0,
            due: 20_000,
            stored: 20_000,
            missed: 0,
            checks_per_sec: 2_000.0,
            runs: 20_000,
            lateness_p50_ms: 1,
            lateness_p99_ms: 5,
            lateness_max_ms: 9,
            busiest_second: 2_000,
            mean_per_second: 2_000.0,
            busiest_ratio: 1.0,
            write_failures: 0,
            shed: 0,
            cpu_cores: None,
            server_cpu_us_per_check: None,
        };
        assert!(all_stored(&f));
        assert!(sustains(&f, 2_000.0));
        // One slot across the window's edge is not a miss; 4,000 due in 10 s is too few.
        f.missed = 1;
        f.stored = 19_999;
        f.checks_per_sec = 1_999.9;
        assert!(sustains(&f, 2_000.0));
        f.due = 4_000;
        assert!(!sustains(&f, 2_000.0));
        f.due = 20_000;
        f.missed = 1_000;
        assert!(!all_stored(&f));
        f.missed = 0;
        f.write_failures = 1;
        assert!(!all_stored(&f));
    }
}
