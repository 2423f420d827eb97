//! The `regions` bench scenario: monitors checked from three regions (the built-in `local` and
//! two remote probes, real `tocsin probe` processes of this binary on loopback) under each
//! region strategy in turn, on one in-process server. For each strategy it seeds the monitors
//! (every 4 s, timeout 1 s, two confirmations: room for two answers in a row), runs the real
//! scheduler for the measured window (checks/s: region checks stored per second; cycles/s;
//! checks per cycle; slots skipped or shed), then makes the loopback target fail and
//! measures, for each monitor, how long the outage took to page (from the switch to the
//! `down` event, against interval x confirmations + timeout) and how long the paging cycle
//! took from its start to its verdict, confirmation included.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

use super::monitors::MonitorPlan;
use super::seed::{self, MonitorSeed};
use tocsin::cx::Cx;
use tocsin::monitoring::LOCAL_REGION;
use tocsin::server::AppState;
use tocsin::store::monitors;

pub const INTERVAL_S: i64 = 4;
pub const TIMEOUT_S: i64 = 1;
pub const CONFIRMATIONS: i64 = 2;
const REMOTE: [&str; 2] = ["eu-west", "us-east"];
const STRATEGIES: [&str; 3] = ["all", "round_robin", "random"];
/// Longest wait for every monitor to go DOWN once the target fails.
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// One strategy's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StrategyFigures {
    pub strategy: String,
    pub window_secs: f64,
    /// Region checks stored (heartbeats) per second, and cycles with a stored result per second.
    pub checks_per_sec: f64,
    pub cycles_per_sec: f64,
    pub checks_per_cycle: f64,
    /// Grid slots due in the window, and how many got no stored result.
    pub due: u64,
    pub missed: u64,
    /// Slots skipped because the monitor's previous run was still going, and runs shed.
    pub skipped: u64,
    pub shed: u64,
    /// Monitors that paged once the target failed, of how many.
    pub paged: usize,
    pub monitors: usize,
    /// From the target failing to the `down` event.
    pub detection_p50_ms: i64,
    pub detection_p99_ms: i64,
    pub detection_max_ms: i64,
    /// From the paging cycle's start to its verdict (the confirmation included).
    pub confirmation_p50_ms: i64,
    pub confirmation_p99_ms: i64,
    pub confirmation_max_ms: i64,
}

/// The scenario's figures, one row per strategy.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RegionFigures {
    pub interval_secs: i64,
    pub timeout_secs: i64,
    pub confirmations: i64,
    pub strategies: Vec<StrategyFigures>,
}

/// A probe process of this binary, killed when dropped.
struct ProbeProcess(Child);

impl Drop for ProbeProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(super) fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs the scenario on `state` (the server at `addr`) with monitors of workspace
/// `workspace_id` checking `url`, whose `failing` switch makes it answer `500`.
pub fn measure(
    rt: &Runtime,
    state: &AppState,
    addr: std::net::SocketAddr,
    (workspace_id, url): (&str, &str),
    failing: &Arc<AtomicBool>,
    monitors: usize,
    plan: &MonitorPlan,
) -> anyhow::Result<RegionFigures> {
    let exe = std::env::current_exe()?;
    let now = state.clock().now_ms();
    let mut probes = Vec::new();
    for region in REMOTE {
        let key = rt
            .block_on(tocsin::probes::keys::create(state.db(), region, None, now))
            .map_err(|e| anyhow::anyhow!("probe key for {region}: {e}"))?
            .key;
        let child = Command::new(&exe)
            .args([
                "probe",
                "--server",
                &format!("http://{addr}"),
                "--region",
                region,
            ])
            .env("TOCSIN_KEY", key)
            .env("TOCSIN_LOG_LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        probes.push(ProbeProcess(child));
    }
    let started = Instant::now();
    while !REMOTE.iter().all(|r| state.probes().is_live(r)) {
        if started.elapsed() > Duration::from_secs(20) {
            anyhow::bail!("the probes did not connect");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = Vec::new();
    for strategy in STRATEGIES {
        let seed = MonitorSeed {
            workspace_id: workspace_id.to_string(),
            count: monitors,
            interval_s: INTERVAL_S,
            url: url.to_string(),
            timeout_s: TIMEOUT_S,
        };
        let ids = rt.block_on(insert(state.cx(), &seed, strategy))?;
        failing.store(false, Ordering::SeqCst);
        let figures = one_strategy(rt, state, strategy, &ids, failing, plan);
        failing.store(false, Ordering::SeqCst);
        // The next strategy's monitors run alone.
        rt.block_on(
            sqlx::query("UPDATE monitors SET active = 0 WHERE active = 1")
                .execute(state.db().writer()),
        )?;
        out.push(figures?);
    }
    drop(probes);
    Ok(RegionFigures {
        interval_secs: INTERVAL_S,
        timeout_secs: TIMEOUT_S,
        confirmations: CONFIRMATIONS,
        strategies: out,
    })
}

/// Inserts the monitors with three regions and `strategy`.
async fn insert(cx: &Cx, seed: &MonitorSeed, strategy: &str) -> anyhow::Result<Vec<(String, i64)>> {
    let now = cx.clock().now_ms();
    let regions = serde_json::to_string(&[LOCAL_REGION, REMOTE[0], REMOTE[1]])?;
    let mut out = Vec::with_capacity(seed.count);
    let mut tx = cx.db().begin().await?;
    let first = monitors::reserve_seqs(&mut *tx, i64::try_from(seed.count)?).await?;
    for j in 0..seed.count {
        let mut m = seed::row(seed, first + i64::try_from(j)?, j, now);
        m.name = format!("regions {strategy} {j}");
        m.regions = regions.clone();
        m.region_strategy = strategy.to_string();
        m.confirmations_required = CONFIRMATIONS;
        if j == 0 {
            if let Err(e) = tocsin::monitoring::monitor::Monitor::from_row(&m) {
                anyhow::bail!("the bench monitor does not parse: {e}");
            }
        }
        monitors::insert(&mut *tx, &m, None).await?;
        out.push((m.id, m.seq));
    }
    tx.commit().await?;
    Ok(out)
}

fn one_strategy(
    rt: &Runtime,
    state: &AppState,
    strategy: &str,
    ids: &[(String, i64)],
    failing: &Arc<AtomicBool>,
    plan: &MonitorPlan,
) -> anyhow::Result<StrategyFigures> {
    let cancel = CancellationToken::new();
    let task = rt.spawn(tocsin::monitoring::scheduler::run(
        state.runner().clone(),
        cancel.clone(),
    ));
    let outcome = (|| {
        let loading = Instant::now();
        while state.scheduler_stats().scheduled() < ids.len() {
            if loading.elapsed() > Duration::from_secs(60) {
                anyhow::bail!("the scheduler did not load the monitors");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(plan.warmup);
        let stats = state.scheduler_stats();
        let (skipped0, shed0) = (stats.skipped(), stats.shed());
        let from_ms = state.clock().now_ms();
        std::thread::sleep(plan.duration);
        let secs = ((state.clock().now_ms() - from_ms) / 1000).max(1);
        let to_ms = from_ms + secs * 1000;
        std::thread::sleep(Duration::from_secs(u64::try_from(INTERVAL_S)?));
        rt.block_on(state.heartbeats().flush());
        let checks: i64 = rt.block_on(
            sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats WHERE ts >= $1 AND ts < $2")
                .bind(from_ms)
                .bind(to_ms)
                .fetch_one(state.db().reader()),
        )?;
        // A cycle's heartbeats share its start time.
        let cycles: i64 = rt.block_on(
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM (SELECT DISTINCT monitor_seq, ts FROM heartbeats \
                 WHERE ts >= $1 AND ts < $2) AS cycles",
            )
            .bind(from_ms)
            .bind(to_ms)
            .fetch_one(state.db().reader()),
        )?;
        let due = super::measure::expected_runs(
            ids.iter().map(|(id, _)| id.as_str()),
            u64::try_from(INTERVAL_S)? * 1000,
            from_ms,
            to_ms,
        );
        let (skipped, shed) = (stats.skipped() - skipped0, stats.shed() - shed0);

        // The outage.
        let flip_ms = state.clock().now_ms();
        failing.store(true, Ordering::SeqCst);
        let down = tocsin::store::status::text(tocsin_core::Status::Down);
        let waiting = Instant::now();
        loop {
            let n: i64 = rt.block_on(
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM monitors WHERE active = 1 AND status = $1",
                )
                .bind(down)
                .fetch_one(state.db().reader()),
            )?;
            if usize::try_from(n)? >= ids.len() || waiting.elapsed() > PAGE_TIMEOUT {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        rt.block_on(state.heartbeats().flush());
        let pages: Vec<(i64, Option<i64>)> = rt.block_on(
            sqlx::query_as(
                "SELECT e.created_at, (SELECT MAX(h.ts) FROM heartbeats h \
                 WHERE h.monitor_seq = m.seq AND h.ts <= e.created_at) \
                 FROM monitor_events e JOIN monitors m ON m.id = e.monitor_id \
                 WHERE m.active = 1 AND e.kind = 'down' AND e.created_at >= $1",
            )
            .bind(flip_ms)
            .fetch_all(state.db().reader()),
        )?;
        let mut detection: Vec<i64> = pages.iter().map(|(at, _)| at - flip_ms).collect();
        let mut confirmation: Vec<i64> = pages
            .iter()
            .filter_map(|(at, began)| began.map(|b| at - b))
            .collect();
        detection.sort_unstable();
        confirmation.sort_unstable();
        let window_secs = (to_ms - from_ms) as f64 / 1000.0;
        let cycles = u64::try_from(cycles)?;
        Ok(StrategyFigures {
            strategy: strategy.to_string(),
            window_secs,
            checks_per_sec: checks as f64 / window_secs,
            cycles_per_sec: cycles as f64 / window_secs,
            checks_per_cycle: checks as f64 / (cycles.max(1)) as f64,
            due,
            missed: due.saturating_sub(cycles),
            skipped,
            shed,
            paged: pages.len(),
            monitors: ids.len(),
            detection_p50_ms: percentile(&detection, 0.5),
            detection_p99_ms: percentile(&detection, 0.99),
            detection_max_ms: detection.last().copied().unwrap_or(0),
            confirmation_p50_ms: percentile(&confirmation, 0.5),
            confirmation_p99_ms: percentile(&confirmation, 0.99),
            confirmation_max_ms: confirmation.last().copied().unwrap_or(0),
        })
    })();
    cancel.cancel();
    let _ = rt.block_on(task);
    outcome
}

/// The bound a page must meet: interval x confirmations + timeout, in ms.
pub fn page_bound_ms() -> i64 {
    (INTERVAL_S * CONFIRMATIONS + TIMEOUT_S) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_sorted_figures() {
        assert_eq!(percentile(&[], 0.5), 0);
        assert_eq!(percentile(&[5], 0.99), 5);
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 51);
        assert_eq!(percentile(&v, 0.99), 99);
    }
}
