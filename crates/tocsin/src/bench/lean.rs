//! The everyday-load scenarios of `tocsin bench`: what a check costs at the rates most teams
//! run, what a server costs between checks, and whether memory comes back after a storm.
//!
//! - `checks-low`: 200 monitors every 2 s (100 checks/s). Named in the same run as `checks`
//!   (2,000 checks/s), its server CPU per check is judged against that one's
//!   ([`cross_verdicts`]): the fixed cost of a check must not dominate at low rates.
//! - `everyday`: 2,000 monitors every 20 s against a target that keeps connections alive, as
//!   most real targets do: server CPU per 1,000 checks.
//! - `idle-cpu`: 2,000 monitors every 5 minutes and nobody reading: the process's share of one
//!   core over a minute.
//! - `read-storm-rss`: a storm of public status page reads (summary and HTML, alternating by
//!   connection), then a minute of quiet: resident memory before, at the end of the storm and
//!   after the quiet.

use std::time::Duration;

use serde::Serialize;

use super::measure;
use super::monitors::{MonitorPlan, MonitorSummary, Session, Verdict};
use super::scenario::Fixture;
use super::stats::Summary;

pub const CHECKS_LOW: &str = "checks-low";
pub const EVERYDAY: &str = "everyday";
pub const IDLE_CPU: &str = "idle-cpu";
pub const READ_STORM_RSS: &str = "read-storm-rss";

/// Server CPU per check at 100 checks/s, at most this many times the figure at 2,000/s.
pub const TARGET_LOW_RATE_RATIO: f64 = 1.5;
/// Server CPU per 1,000 checks at 2,000 monitors every 20 s, in seconds.
pub const TARGET_EVERYDAY_CPU_PER_1000_S: f64 = 0.6;
/// The process's share of one core with 2,000 monitors every 5 minutes.
pub const TARGET_IDLE_CORES: f64 = 0.01;
/// RSS a minute after the storm, at most this many times its level before.
pub const TARGET_RSS_RETURN: f64 = 1.25;

/// The idle window: long enough to hold several of the scheduler's and the writers' periodic
/// jobs, not just the gaps between them.
pub const IDLE_WINDOW: Duration = Duration::from_secs(60);
/// How long the storm's aftermath is watched before the RSS is read again.
const QUIET_AFTER_STORM: Duration = Duration::from_secs(60);
/// The storm's shortest length (a short `--duration` would not be a storm).
const STORM_MIN: Duration = Duration::from_secs(30);
/// Connections reading during the storm.
const STORM_CONNECTIONS: usize = 64;

/// Whether a scenario's target keeps connections alive (see [`super::loopback`]).
pub fn keeps_alive(scenario: &str) -> bool {
    scenario == EVERYDAY
}

/// The measured window of a check scenario: `idle-cpu` always watches a whole minute.
pub fn window(scenario: &str, plan: &MonitorPlan) -> MonitorPlan {
    let mut plan = plan.clone();
    if scenario == IDLE_CPU {
        plan.duration = plan.duration.max(IDLE_WINDOW);
    }
    plan
}

/// What the storm did to the resident memory.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StormFigures {
    pub reads: u64,
    pub reads_per_sec: f64,
    pub errors: u64,
    pub storm_secs: f64,
    pub rss_before_bytes: u64,
    pub rss_end_bytes: u64,
    /// After [`QUIET_AFTER_STORM`] without a read.
    pub rss_after_bytes: u64,
    pub quiet_secs: f64,
}

/// Adds the verdicts of the check scenarios measured on their own (`everyday`, `idle-cpu`).
pub fn check_verdicts(summary: &mut MonitorSummary) {
    let Some(c) = &summary.checks else {
        return;
    };
    match summary.scenario.as_str() {
        EVERYDAY => {
            let per_1000 = c.server_cpu_us_per_check.map(|us| us / 1000.0);
            summary.verdicts.push(Verdict {
                what: "server CPU per 1,000 checks at 100 checks/s".into(),
                target: format!("<= {TARGET_EVERYDAY_CPU_PER_1000_S} s"),
                measured: per_1000.map_or("not measurable here".into(), |s| {
                    format!("{s:.3} s ({:.0} checks/s)", c.checks_per_sec)
                }),
                pass: per_1000.is_some_and(|s| s <= TARGET_EVERYDAY_CPU_PER_1000_S)
                    && c.write_failures == 0,
            });
        }
        IDLE_CPU => summary.verdicts.push(Verdict {
            what: "process CPU with 2,000 monitors every 5 minutes".into(),
            target: format!("< {:.0}% of one core", TARGET_IDLE_CORES * 100.0),
            measured: c.cpu_cores.map_or("not measurable here".into(), |cores| {
                format!(
                    "{:.2}% over {:.0} s ({:.1} checks/s)",
                    cores * 100.0,
                    c.window_secs,
                    c.checks_per_sec
                )
            }),
            pass: c.cpu_cores.is_some_and(|cores| cores < TARGET_IDLE_CORES),
        }),
        _ => {}
    }
}

/// How much more server CPU per check a storm with dependencies may cost than without.
pub const TARGET_DEPS_STORM_RATIO: f64 = 1.10;

/// Verdicts that compare scenarios of the same run: `checks-low` against `checks`, and
/// `storm-deps` against `storm`.
pub fn cross_verdicts(results: &mut [MonitorSummary]) {
    let storm_cpu = |s: &MonitorSummary| {
        s.alerts
            .as_ref()
            .map(|a| a.server_cpu_us_per_check)
            .filter(|v| v.is_finite())
    };
    ratio_verdict(
        results,
        Ratio {
            base: super::monitors::STORM,
            measured: super::monitors::STORM_DEPS,
            cpu: &storm_cpu,
            target: TARGET_DEPS_STORM_RATIO,
            what: "server CPU per check over the outage, against `storm`'s",
        },
    );
    let checks_cpu = |s: &MonitorSummary| s.checks.as_ref().and_then(|c| c.server_cpu_us_per_check);
    ratio_verdict(
        results,
        Ratio {
            base: super::monitors::CHECKS,
            measured: CHECKS_LOW,
            cpu: &checks_cpu,
            target: TARGET_LOW_RATE_RATIO,
            what: "server CPU per check at 100 checks/s vs at 2,000 checks/s",
        },
    );
}

/// One scenario's server CPU per check held against another's of the same run.
struct Ratio<'a> {
    base: &'a str,
    measured: &'a str,
    cpu: &'a dyn Fn(&MonitorSummary) -> Option<f64>,
    target: f64,
    what: &'a str,
}

/// Adds `r`'s verdict to its measured scenario (when it ran): a miss when the base scenario
/// did not run beside it, since the ratio is the target.
fn ratio_verdict(results: &mut [MonitorSummary], r: Ratio<'_>) {
    let base = results
        .iter()
        .find(|s| s.scenario == r.base)
        .and_then(|s| (r.cpu)(s));
    let Some(summary) = results.iter_mut().find(|s| s.scenario == r.measured) else {
        return;
    };
    let (measured, pass) = match ((r.cpu)(summary), base) {
        (Some(m), Some(b)) if b > 0.0 => (
            format!("{m:.0} µs vs {b:.0} µs ({:.2}x)", m / b),
            m / b <= r.target,
        ),
        (Some(m), _) => (
            format!("{m:.0} µs (name `{}` in the same run to compare)", r.base),
            false,
        ),
        _ => ("not measurable here".into(), false),
    };
    summary.verdicts.push(Verdict {
        what: r.what.into(),
        target: format!("<= {}x", r.target),
        measured,
        pass,
    });
}

impl Session<'_> {
    /// `read-storm-rss`: seeds the bench status page, warms it, reads the RSS, storms it with
    /// reads, reads the RSS, waits a quiet minute and reads it again.
    pub(super) fn read_storm(
        &self,
        fixture: &Fixture,
        plan: &MonitorPlan,
        summary: &mut MonitorSummary,
    ) -> anyhow::Result<()> {
        let client_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (summary_spec, page_spec) = client_rt.block_on(async {
            anyhow::Ok((
                super::status_page::summary(fixture).await?,
                super::status_page::page(fixture).await?,
            ))
        })?;
        let host = self.addr.to_string();
        let templates = [
            super::load::Template::new(self.addr, &host, "", &summary_spec)?,
            super::load::Template::new(self.addr, &host, "", &page_spec)?,
        ];
        let run = |connections: usize, duration: Duration| {
            client_rt.block_on(async {
                let window = super::load::Window::starting_now(Duration::ZERO, duration);
                let half = connections.div_ceil(2);
                let (a, b) = tokio::join!(
                    super::load::drive(templates[0].clone(), half, window),
                    super::load::drive(templates[1].clone(), half, window),
                );
                let mut tally = a.0;
                tally.merge(&b.0);
                tally
            })
        };
        // Warm: the page cache, the connection buffers and the allocator's first pages are
        // what a serving process holds anyway.
        run(8, Duration::from_secs(3));
        std::thread::sleep(Duration::from_secs(2));
        let before = measure::rss_bytes()
            .ok_or_else(|| anyhow::anyhow!("VmRSS is not readable on this platform"))?;
        let storm = plan.duration.max(STORM_MIN);
        let tally = run(STORM_CONNECTIONS, storm);
        let end = measure::rss_bytes().unwrap_or(before);
        let quiet = std::time::Instant::now();
        std::thread::sleep(QUIET_AFTER_STORM);
        let after = measure::rss_bytes().unwrap_or(end);
        let reads = Summary::from_tally("storm", &tally, storm);
        let figures = StormFigures {
            reads: reads.requests,
            reads_per_sec: reads.requests_per_sec,
            errors: reads.errors,
            storm_secs: storm.as_secs_f64(),
            rss_before_bytes: before,
            rss_end_bytes: end,
            rss_after_bytes: after,
            quiet_secs: quiet.elapsed().as_secs_f64(),
        };
        let mib = |b: u64| b as f64 / 1048576.0;
        summary.verdicts.push(Verdict {
            what: "RSS a minute after a storm of status page reads".into(),
            target: format!("<= {TARGET_RSS_RETURN}x before, no errors"),
            measured: format!(
                "{:.1} MiB after vs {:.1} MiB before ({:.2}x; {:.1} MiB at the storm's end; {} reads, {:.0}/s, {} errors)",
                mib(after),
                mib(before),
                after as f64 / before.max(1) as f64,
                mib(end),
                figures.reads,
                figures.reads_per_sec,
                figures.errors
            ),
            pass: (after as f64) <= before as f64 * TARGET_RSS_RETURN
                && figures.errors == 0
                && figures.reads > 0,
        });
        summary.storm = Some(figures);
        Ok(())
    }
}
