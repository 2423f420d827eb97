//! The `cluster` bench scenario: several `tocsin serve` processes of this binary on one fresh
//! PostgreSQL database, sharing the checks by partition (`monitoring::partitions`).
//!
//! It seeds the monitors through the store (an in-process state that runs nothing), then
//! starts nodes one at a time. With 1, 2 and 3 nodes it measures, over the window: the checks
//! stored per second (every node together), the nodes' CPU per check (from
//! `/proc/<pid>/stat`), PostgreSQL's transactions per check (`pg_stat_database`) and the
//! CPU of every `postgres` process on the machine per check, so that what coordination costs
//! shows against one node. While the second and third nodes join it records the start
//! lateness (the nodes' `scheduler_start_lateness_seconds` buckets) during the rebalance.
//! Then it kills a node with SIGKILL [`KILLS`] times, each time measuring how long the others
//! take to hold every partition again, and restarts it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::runtime::Runtime;

use super::loopback::LoopbackTarget;
use super::monitors::{MonitorPlan, MonitorScenario, MonitorSummary, Verdict};
use super::seed::{self, MonitorSeed};
use super::target::LocalServer;

/// Nodes the scenario grows to.
const MAX_NODES: usize = 3;
/// Kills of the takeover measurement.
pub const KILLS: usize = 20;
/// Every monitor's interval: the default 2,000 monitors offer 1,000 checks/s, well within
/// one node, so the figures compare the cost of a check rather than a saturated machine.
const INTERVAL_S: i64 = 2;
/// Longest wait for the partitions to settle.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// One node count's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeFigures {
    pub nodes: usize,
    pub checks_per_sec: f64,
    pub due_per_sec: f64,
    /// CPU of the node processes, per stored check.
    pub node_us_per_check: f64,
    /// CPU of every `postgres` process, per stored check.
    pub postgres_us_per_check: f64,
    /// Transactions committed in the database, per stored check.
    pub transactions_per_check: f64,
    /// Each node's scheduled monitors at the end of the window.
    pub shares: Vec<f64>,
    /// Start lateness while this node count's last node joined (bucket bound, ms).
    pub rebalance_lateness_p99_ms: Option<f64>,
}

/// The scenario's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFigures {
    pub monitors: usize,
    pub interval_secs: i64,
    pub by_nodes: Vec<NodeFigures>,
    /// From a node's SIGKILL until the others hold every partition, per kill (ms).
    pub takeover_ms: Vec<i64>,
    pub takeover_p50_ms: i64,
    pub takeover_p99_ms: i64,
}

/// A `tocsin serve` process, killed when dropped.
struct Node {
    child: Child,
    base: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

fn start_node(exe: &Path, config: &Path, url: &str) -> anyhow::Result<Node> {
    let port = free_port()?;
    let child = Command::new(exe)
        .args([
            "serve",
            "--database-url",
            url,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--config",
        ])
        .arg(config)
        .env("TOCSIN_LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(Node {
        child,
        base: format!("http://127.0.0.1:{port}"),
    })
}

/// A node's `/metrics` text ("" when it does not answer).
async fn metrics(http: &reqwest::Client, base: &str) -> String {
    match http.get(format!("{base}/metrics")).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

fn gauge(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

/// The cumulative `scheduler_start_lateness_seconds` buckets: (upper bound s, count).
fn lateness_buckets(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("scheduler_start_lateness_seconds_bucket{le=\"")?;
            let (le, v) = rest.split_once("\"}")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, v.trim().parse().ok()?))
        })
        .collect()
}

/// The p99 bucket bound (ms) of the runs counted between `before` and `after`, summed over
/// the nodes.
fn p99_between(before: &[Vec<(f64, f64)>], after: &[Vec<(f64, f64)>]) -> Option<f64> {
    let mut delta: Vec<(f64, f64)> = Vec::new();
    for (i, a) in after.iter().enumerate() {
        for (j, (le, n)) in a.iter().enumerate() {
            let was = before.get(i).and_then(|b| b.get(j)).map_or(0.0, |x| x.1);
            match delta.get_mut(j) {
                Some(d) => d.1 += n - was,
                None => delta.push((*le, n - was)),
            }
        }
    }
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    delta
        .iter()
        .find(|(_, n)| *n >= total * 0.99)
        .map(|(le, _)| le * 1000.0)
}

/// Waits until `nodes` hold every partition between them and schedule `monitors`, twice in a
/// row; the time it took.
async fn settle(
    http: &reqwest::Client,
    nodes: &[&Node],
    monitors: usize,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut seen = 0;
    while started.elapsed() < SETTLE_TIMEOUT {
        let (mut parts, mut scheduled) = (0.0, 0.0);
        for n in nodes {
            let m = metrics(http, &n.base).await;
            parts += gauge(&m, "scheduler_partitions");
            scheduled += gauge(&m, "scheduler_monitors");
        }
        if parts == 256.0 && scheduled == monitors as f64 {
            seen += 1;
            if seen >= 2 {
                return Ok(started.elapsed());
            }
        } else {
            seen = 0;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the nodes did not settle within {SETTLE_TIMEOUT:?}")
}

/// CPU time (s) of process `pid` so far.
fn process_cpu(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / TICKS_PER_SEC
}

/// CPU time (s) of every `postgres` process on the machine.
fn postgres_cpu() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim().starts_with("postgres"))
        })
        .map(process_cpu)
        .sum()
}

async fn committed(db: &tocsin::store::Db, name: &str) -> anyhow::Result<f64> {
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(xact_commit AS BIGINT) FROM pg_stat_database WHERE datname = $1",
    )
    .bind(name)
    .fetch_one(db.reader())
    .await?;
    Ok(n as f64)
}

async fn stored_between(db: &tocsin::store::Db, from: i64, to: i64) -> anyhow::Result<f64> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats WHERE ts >= $1 AND ts < $2")
        .bind(from)
        .bind(to)
        .fetch_one(db.writer())
        .await?;
    Ok(n as f64)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The targets: what coordination may add to a check's CPU (nodes and database
/// together) against one node, and the takeover bound.
pub const TARGET_OVERHEAD: f64 = 1.05;
pub const TARGET_TAKEOVER_MS: i64 = 15_000;

/// Runs the scenario (PostgreSQL only) and judges its figures.
pub fn run(
    scenario: &MonitorScenario,
    monitors: usize,
    plan: &MonitorPlan,
) -> anyhow::Result<MonitorSummary> {
    let Some(admin) = plan.database_url.as_deref() else {
        anyhow::bail!("`cluster` runs on PostgreSQL only: add --database-url");
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.server_threads)
        .thread_name("bench-server")
        .enable_all()
        .build()?;
    // The in-process server makes the scratch database and seeds it; it checks nothing.
    let server = LocalServer::start_with(&rt, Some(admin), |c| {
        c.scheduler_enabled = false;
        c.min_interval_seconds = 1;
    })?;
    let started = Instant::now();
    let scratch =
        std::env::temp_dir().join(format!("tocsin-cluster-{:016x}", rand::random::<u64>()));
    let outcome = (|| {
        std::fs::create_dir_all(&scratch)?;
        let (url, name) = server
            .database
            .clone()
            .ok_or_else(|| anyhow::anyhow!("no scratch database"))?;
        measure(
            &rt,
            &server,
            (&url, &name),
            &scratch,
            monitors,
            plan.duration,
        )
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    server.stop(&rt);
    rt.shutdown_timeout(Duration::from_secs(5));
    let figures = outcome?;
    let mut verdicts = Vec::new();
    let cost = |f: &NodeFigures| f.node_us_per_check + f.postgres_us_per_check;
    if let (Some(one), Some(last)) = (figures.by_nodes.first(), figures.by_nodes.last()) {
        verdicts.push(Verdict {
            what: format!("CPU per check with {} nodes against one", last.nodes),
            target: format!("<= {TARGET_OVERHEAD:.2}x"),
            measured: format!(
                "{:.0} us (nodes {:.0} + postgres {:.0}) against {:.0} us: {:.2}x",
                cost(last),
                last.node_us_per_check,
                last.postgres_us_per_check,
                cost(one),
                cost(last) / cost(one).max(1.0)
            ),
            pass: cost(last) <= cost(one) * TARGET_OVERHEAD,
        });
    }
    for f in &figures.by_nodes {
        verdicts.push(Verdict {
            what: format!("{} node(s): every slot checked", f.nodes),
            target: format!("{:.0} checks/s", f.due_per_sec),
            measured: format!("{:.0} checks/s, shares {:?}", f.checks_per_sec, f.shares),
            pass: f.checks_per_sec >= f.due_per_sec * 0.99,
        });
    }
    verdicts.push(Verdict {
        what: format!(
            "takeover after SIGKILL, p99 of {}",
            figures.takeover_ms.len()
        ),
        target: format!("<= {TARGET_TAKEOVER_MS} ms"),
        measured: format!(
            "p50 {} ms, p99 {} ms",
            figures.takeover_p50_ms, figures.takeover_p99_ms
        ),
        pass: figures.takeover_p99_ms <= TARGET_TAKEOVER_MS,
    });
    let mut summary = MonitorSummary::new(scenario, "postgres", monitors);
    summary.setup_secs = started.elapsed().as_secs_f64();
    summary.cluster = Some(figures);
    summary.verdicts = verdicts;
    Ok(summary)
}

/// Measures on the scratch database `name` at `url`, seeded through `server` (which checks
/// nothing), with `monitors` monitors and a measured `window` per node count.
fn measure(
    rt: &Runtime,
    server: &LocalServer,
    (url, name): (&str, &str),
    scratch: &Path,
    monitors: usize,
    window: Duration,
) -> anyhow::Result<ClusterFigures> {
    let exe = std::env::current_exe()?;
    let config: PathBuf = scratch.join("tocsin.toml");
    std::fs::write(&config, "min_interval_seconds = 1\n")?;
    let target = LoopbackTarget::start_with(false)?;
    let state = server.state.clone();
    let fixture = super::scenario::Fixture::in_process(state.clone());
    let workspace_id = rt.block_on(fixture.workspace_id())?;
    rt.block_on(seed::insert_monitors(
        state.cx(),
        &MonitorSeed {
            workspace_id,
            count: monitors,
            interval_s: INTERVAL_S,
            url: target.url(),
            timeout_s: 1,
        },
    ))?;
    let db = state.db().clone();
    let http = reqwest::Client::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut by_nodes = Vec::new();
    for n in 1..=MAX_NODES {
        let before: Vec<Vec<(f64, f64)>> = rt.block_on(async {
            let mut v = Vec::new();
            for node in &nodes {
                v.push(lateness_buckets(&metrics(&http, &node.base).await));
            }
            v
        });
        let node = start_node(&exe, &config, url)?;
        rt.block_on(wait_up(&http, &node.base))?;
        nodes.push(node);
        let all: Vec<&Node> = nodes.iter().collect();
        rt.block_on(settle(&http, &all, monitors))?;
        // Lateness while the newcomer took its share (the runs of the nodes already there).
        let rebalance_lateness_p99_ms = if n > 1 {
            let after: Vec<Vec<(f64, f64)>> = rt.block_on(async {
                let mut v = Vec::new();
                for node in &nodes[..n - 1] {
                    v.push(lateness_buckets(&metrics(&http, &node.base).await));
                }
                v
            });
            p99_between(&before, &after)
        } else {
            None
        };
        // Let a full interval pass after the settle, then measure.
        std::thread::sleep(Duration::from_secs(INTERVAL_S as u64 + 1));
        let cpu = |nodes: &[Node]| nodes.iter().map(|n| process_cpu(n.child.id())).sum::<f64>();
        let (cpu0, pg0, tx0) = (
            cpu(&nodes),
            postgres_cpu(),
            rt.block_on(committed(&db, name))?,
        );
        let from = now_ms();
        std::thread::sleep(window);
        let to = now_ms();
        let (cpu1, pg1, tx1) = (
            cpu(&nodes),
            postgres_cpu(),
            rt.block_on(committed(&db, name))?,
        );
        // Runs still under way store their results first.
        std::thread::sleep(Duration::from_secs(2));
        let stored = rt.block_on(stored_between(&db, from, to))?;
        let secs = (to - from) as f64 / 1000.0;
        let shares = rt.block_on(async {
            let mut v = Vec::new();
            for node in &nodes {
                v.push(gauge(
                    &metrics(&http, &node.base).await,
                    "scheduler_monitors",
                ));
            }
            v
        });
        let per = |x: f64| if stored > 0.0 { x / stored } else { 0.0 };
        by_nodes.push(NodeFigures {
            nodes: n,
            checks_per_sec: stored / secs,
            due_per_sec: monitors as f64 / INTERVAL_S as f64,
            node_us_per_check: per(cpu1 - cpu0) * 1e6,
            postgres_us_per_check: per(pg1 - pg0) * 1e6,
            transactions_per_check: per(tx1 - tx0),
            shares,
            rebalance_lateness_p99_ms,
        });
    }
    // Takeover: kill one node at a time, measure until the others hold every partition,
    // start it again and let the shares settle.
    let mut takeover_ms: Vec<i64> = Vec::new();
    for k in 0..KILLS {
        let victim = k % nodes.len();
        let killed = Instant::now();
        let mut dead = nodes.remove(victim);
        let _ = dead.child.kill();
        let _ = dead.child.wait();
        let rest: Vec<&Node> = nodes.iter().collect();
        rt.block_on(settle(&http, &rest, monitors))?;
        takeover_ms.push(i64::try_from(killed.elapsed().as_millis()).unwrap_or(i64::MAX));
        let node = start_node(&exe, &config, url)?;
        rt.block_on(wait_up(&http, &node.base))?;
        nodes.insert(victim, node);
        let all: Vec<&Node> = nodes.iter().collect();
        rt.block_on(settle(&http, &all, monitors))?;
    }
    drop(nodes);
    target.stop();
    let mut sorted = takeover_ms.clone();
    sorted.sort_unstable();
    Ok(ClusterFigures {
        monitors,
        interval_secs: INTERVAL_S,
        by_nodes,
        takeover_p50_ms: super::regions::percentile(&sorted, 0.50),
        takeover_p99_ms: super::regions::percentile(&sorted, 0.99),
        takeover_ms,
    })
}

async fn wait_up(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("a node did not start within 30 s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p99_bucket_of_what_was_counted_between_two_scrapes() {
        let before = vec![vec![(0.001, 10.0), (0.1, 10.0), (f64::INFINITY, 10.0)]];
        let after = vec![vec![(0.001, 110.0), (0.1, 209.0), (f64::INFINITY, 210.0)]];
        // 200 runs: 100 under 1 ms, 99 more under 100 ms, one later.
        assert_eq!(p99_between(&before, &after), Some(100.0));
        let text = "scheduler_start_lateness_seconds_bucket{le=\"0.005\"} 3\n\
                    scheduler_start_lateness_seconds_bucket{le=\"+Inf\"} 4\n";
        assert_eq!(
            lateness_buckets(text),
            vec![(0.005, 3.0), (f64::INFINITY, 4.0)]
        );
        assert_eq!(
            gauge("scheduler_partitions 85\n", "scheduler_partitions"),
            85.0
        );
    }
}
