//! The check scheduler and the built-in probe (region `local`).
//!
//! [`run`] is one task that keeps every active non-PUSH monitor in an in-memory schedule (a
//! `BTreeSet` of `(next run, monitor id)`) and sleeps until the earliest deadline, a change
//! notice, or cancellation. Each monitor runs on its grid
//! ([`tocsin_core::Grid::for_monitor`]: anchor + hashed offset + k × interval), so runs never
//! drift and monitors with the same interval do not fire together. The schedule is built from
//! [`monitors::list_active_for_scheduling`] and kept current by the change feed
//! ([`super::changes`], from every node sharing the database): create/update/resume reload
//! that monitor and reschedule it, delete/pause drop it, and a lagged feed reloads everything.
//! On PostgreSQL a reconciliation scan ([`crate::cluster::inventory`]) compares the schedule
//! with the store every few seconds and after a `Resync`, and reloads what differs, so a
//! notice lost between nodes costs at most one scan interval.
//!
//! A node runs the slots of the monitors in the partitions it holds
//! ([`crate::monitoring::partitions`]; every partition on SQLite's one node): the task waits,
//! holding nothing, until it holds some, loads their monitors (and only theirs: the loads and
//! the reconciliation scan are filtered by partition), follows the partitions it gains and
//! loses, and never starts a run of a partition it no longer holds (a run still waiting for
//! room when its partition goes is dropped; one under way keeps the partition from being
//! released until it has stored its result), so no monitor runs twice in one slot across
//! nodes.
//!
//! Each monitor is parsed once when it is loaded (start, a change notice, a scan) into a typed
//! [`Monitor`] ([`super::monitor`]); the schedule keeps its parsed settings, check spec
//! included. A due monitor's row is read again for its current state, and the settings held
//! are reused as long as the row's `version` is the one they were parsed from (an edit bumps
//! it), so a run parses no JSON. A row that does not parse is logged, counted
//! (`monitors_skipped_corrupt_total`) and left out of the schedule until it is edited. The
//! monitor is run by [`run_cycle`]: the regions of the cycle are picked with
//! [`tocsin_core::pick_regions`] (cycle index = the grid slot number; under `round_robin` and
//! `random` among the regions that can report, [`live_regions`]) and run by [`check_in`]:
//! `local` runs the check engine here, every other region is dispatched to one of its live
//! remote probes ([`crate::probes::Registry::dispatch`]). A region without a live probe, or
//! whose probe does not answer by the deadline, reports nothing (the quorum ignores it; if
//! nobody reported, the state machine is not stepped). Under `round_robin` and `random` a
//! failure is confirmed inside the slot: the other live regions are asked as soon as the
//! picked one fails or goes silent, or at the last moment that still leaves them their whole
//! check time before the deadline; after a failed cycle (or when one failed cycle pages) the
//! next live region checks beside the picked one from the start, so a failure that pages is
//! decided within one check time of its slot. The verdict is
//! [`tocsin_core::decide_timed`]'s, from the regions' results and when they came; the result
//! goes to [`super::cycle::apply`].
//!
//! [`Checks`] bounds concurrency (a semaphore of `max_in_flight_checks` permits for checks on
//! the built-in probe, and as many for whole scheduled runs, so runs waiting on the database
//! are bounded too) and guarantees one run per monitor at a time: a monitor still running when
//! its next slot comes skips that slot, and a run that waited for room until its next slot was
//! due is dropped and counted (`scheduler_runs_shed_total`). Tests with a manual clock call [`run_due`] instead of waiting. Each run's
//! start lateness (start minus slot) goes to [`super::sched_stats`].

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use futures::stream::{FuturesUnordered, StreamExt};
use tocsin_checks::Outcome;
use tocsin_core::schedule::stable_hash;
use tocsin_core::state::Verdict;
use tocsin_core::{pick_regions, CycleTiming, Grid, RegionRun, RegionStrategy};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::cycle::{self, CycleReport, RegionResult};
use super::monitor::{self as typed, Monitor, Settings};
use super::runner::Runner;
use super::staleness::{self, Silences, Silent};
use super::{MonitorType, LOCAL_REGION};
use crate::cluster::feed::{ChangeKind, Notice};
use crate::cluster::inventory::{Inventory, RELOAD_ALL_ABOVE, SCAN_EVERY};
use crate::cx::Cx;
use crate::monitoring::partitions::Share;
use crate::store::inventory::Set;
use crate::store::monitors::{self, MonitorRow};
use crate::store::Backend;

/// Concurrency limits shared by the scheduler, [`run_due`] and on-demand checks.
#[derive(Debug)]
pub struct Checks {
    /// Checks running on the built-in probe.
    permits: Arc<Semaphore>,
    /// Scheduled runs from start to stored result (load, check, state, heartbeats): bounds the
    /// runs that wait on the database as well as those that wait on a target.
    runs: Arc<Semaphore>,
    running: Mutex<HashSet<String>>,
    /// The operator's address policy (`--checks-deny-private-addresses`).
    policy: tocsin_checks::AddressPolicy,
}

impl Checks {
    /// The same limits, with checks run under `policy`.
    pub fn with_address_policy(mut self, policy: tocsin_checks::AddressPolicy) -> Checks {
        self.policy = policy;
        self
    }

    pub fn new(max_in_flight: usize) -> Checks {
        Checks {
            permits: Arc::new(Semaphore::new(max_in_flight.max(1))),
            runs: Arc::new(Semaphore::new(max_in_flight.max(1))),
            running: Mutex::new(HashSet::new()),
            policy: tocsin_checks::AddressPolicy::default(),
        }
    }

    /// Marks `id` running; false when it already is (the caller skips this slot).
    fn claim(&self, id: &str) -> bool {
        match self.running.lock() {
            Ok(mut set) => set.insert(id.to_string()),
            Err(poisoned) => poisoned.into_inner().insert(id.to_string()),
        }
    }

    fn release(&self, id: &str) {
        match self.running.lock() {
            Ok(mut set) => set.remove(id),
            Err(poisoned) => poisoned.into_inner().remove(id),
        };
    }

    /// Runs one check on the built-in probe, within the in-flight bound; certificate days
    /// left count from `now` (the server's clock).
    /// The spec is the one parsed when the monitor was loaded (`None` for PUSH).
    pub async fn probe(&self, m: &Monitor, now: DateTime<Utc>) -> Option<Outcome> {
        let spec = m.settings.check.as_ref()?;
        let _permit = self.permits.clone().acquire_owned().await.ok()?;
        let opts = tocsin_checks::RunOptions {
            address_policy: self.policy.clone(),
            ..m.run_options(now)
        };
        Some(tocsin_checks::run(spec, &opts).await)
    }
}

/// Clears the running mark however the run ends (including a panic in the check).
struct Claim<'a>(&'a Checks, String);

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.release(&self.1);
    }
}

/// Whether the row is one the scheduler runs, read without parsing it: active and not PUSH.
fn wants_schedule(m: &MonitorRow) -> bool {
    m.is_active() && m.kind_text != MonitorType::Push.as_str()
}

/// Which slot of its grid `slot_ms` is (the `k` in anchor + offset + k × interval).
fn cycle_index(grid: &Grid, slot_ms: i64) -> u64 {
    let since = i128::from(slot_ms) - i128::from(grid.anchor_ms) - i128::from(grid.offset_ms);
    let k = since.max(0) / i128::from(grid.interval_ms.max(1));
    u64::try_from(k).unwrap_or(0)
}

/// Runs one scheduled cycle of `m` for grid slot `slot_ms`, unless `m` is already running
/// (then `None`: the slot is skipped, counted in `scheduler_slots_skipped_total`). The
/// cycle's time is the clock at the start of the run.
///
/// Every region's result is taken as it comes, within the slot's deadline ([`slot_deadline`]):
/// a region that misses it (a frozen or slow probe) reports nothing for this slot only, so it
/// can never cost the other regions their next slot. Under `round_robin` and `random` the
/// region is picked among the live ones ([`live_regions`]) and a failure is confirmed from
/// the others inside the same slot ([`gather`]).
pub async fn run_cycle(
    state: &Runner,
    m: &Monitor,
    slot_ms: i64,
) -> Option<Result<CycleReport, cycle::CycleError>> {
    let checks = state.checks();
    if !checks.claim(&m.id) {
        state.scheduler_stats().record_skipped();
        tracing::debug!(monitor = %m.id, "still running: slot skipped");
        return None;
    }
    let _claim = Claim(checks, m.id.clone());
    let grid = m.settings.grid;
    let k = cycle_index(&grid, slot_ms);
    // Random picks need a number; a hash of id and slot is as good as any and reproducible.
    let rand = stable_hash(&format!("{}:{slot_ms}", m.id));
    let strategy = m.settings.strategy;
    let ran_at = state.cx().clock().now_ms();
    let (regions, first) = match strategy {
        RegionStrategy::All => (m.regions().to_vec(), m.regions().to_vec()),
        RegionStrategy::RoundRobin | RegionStrategy::Random => {
            let live = live_regions(state, m.regions());
            let mut first = pick_regions(strategy, &live, k, rand);
            let settings = &m.settings.state_settings;
            if tocsin_core::confirm_from_start(
                m.state.consecutive_failures,
                settings.confirmations_required,
                grid.interval_ms,
                millis(needed(m)),
            ) {
                first.extend(
                    tocsin_core::confirmation_order(&live, &first)
                        .into_iter()
                        .take(1),
                );
            }
            (live, first)
        }
    };
    let timing = cycle_timing(m, &grid, slot_ms, ran_at);
    let (results, verdict) = gather(state, m, &regions, &first, timing).await;
    Some(cycle::apply(state, m, ran_at, verdict, &results).await)
}

/// The regions of a monitor that can report now: `local` (this node runs the checks) and
/// every region with a live probe on any node. `round_robin` and `random` pick among these
/// only, so a region whose probes are gone costs no cycle.
pub fn live_regions(state: &Runner, regions: &[String]) -> Vec<String> {
    regions
        .iter()
        .filter(|r| *r == LOCAL_REGION || crate::probes::is_live(state.probes(), state.relay(), r))
        .cloned()
        .collect()
}

/// Slack for a region's answer beyond its check time: the round trip to a remote probe and
/// its batching.
const CONFIRM_SLACK: Duration = Duration::from_millis(500);

/// What one region needs to answer a check of `m`.
fn needed(m: &Monitor) -> Duration {
    m.settings.check_time().saturating_add(CONFIRM_SLACK)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The time limits of a cycle of `m` for slot `slot_ms` starting at `now_ms`. Under `all` the
/// deadline is [`slot_deadline`]'s; under `round_robin` and `random` it is also never more
/// than two answers in a row need (the picked region's, then a confirmer's), so the others
/// are asked early only when the slot could not hold both.
pub fn cycle_timing(m: &Monitor, grid: &Grid, slot_ms: i64, now_ms: i64) -> CycleTiming {
    let needed = needed(m);
    let deadline = match m.settings.strategy {
        RegionStrategy::All => slot_deadline(m, grid, slot_ms, now_ms),
        RegionStrategy::RoundRobin | RegionStrategy::Random => {
            until_next_slot(grid, slot_ms, now_ms)
                .min(needed.saturating_mul(2))
                .max(needed)
        }
    };
    CycleTiming {
        deadline_ms: millis(deadline),
        needed_ms: millis(needed),
    }
}

/// One region's check of a cycle, by its index in the cycle's regions.
async fn ask<'a>(
    state: &'a Runner,
    m: &'a Monitor,
    i: usize,
    region: &'a str,
    deadline: tokio::time::Instant,
) -> (usize, Option<Outcome>) {
    (i, check_in(state, m, region, deadline).await)
}

/// Runs a cycle's checks in `regions` and decides its verdict ([`tocsin_core::decide_timed`]):
/// `first` are asked at once; under `round_robin` and `random` the others are asked when
/// [`tocsin_core::ask_the_others`] says (a failure or a silence nobody else can confirm yet,
/// or the last moment their whole answer still fits), and the cycle stops waiting once a
/// failure is settled ([`tocsin_core::down_is_settled`]). Nothing is awaited past the
/// deadline. Returns the results of the regions asked and the verdict.
async fn gather(
    state: &Runner,
    m: &Monitor,
    regions: &[String],
    first: &[String],
    timing: CycleTiming,
) -> (Vec<RegionResult>, Option<Verdict>) {
    let strategy = m.settings.strategy;
    let spread = strategy != RegionStrategy::All;
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_millis(timing.deadline_ms);
    let last_full_ask = started + Duration::from_millis(timing.last_full_ask_ms());
    let elapsed = || millis(started.elapsed());
    let mut runs = vec![RegionRun::NotAsked; regions.len()];
    let mut outcomes: Vec<Option<Outcome>> = vec![None; regions.len()];
    let mut pending = FuturesUnordered::new();
    for (i, region) in regions.iter().enumerate() {
        if first.contains(region) {
            runs[i] = RegionRun::Pending { asked_ms: 0 };
            pending.push(ask(state, m, i, region, deadline));
        }
    }
    let named = |runs: &[RegionRun]| -> Vec<(usize, RegionRun)> {
        runs.iter().copied().enumerate().collect()
    };
    loop {
        if spread && tocsin_core::ask_the_others(&runs, timing, elapsed()) {
            let now = elapsed();
            for (i, region) in regions.iter().enumerate() {
                if runs[i] == RegionRun::NotAsked {
                    runs[i] = RegionRun::Pending { asked_ms: now };
                    pending.push(ask(state, m, i, region, deadline));
                }
            }
        }
        if pending.is_empty()
            || (spread
                && tocsin_core::down_is_settled(strategy, &named(&runs), m.settings.quorum, timing))
        {
            break;
        }
        let hedge = spread
            && runs.contains(&RegionRun::NotAsked)
            && tokio::time::Instant::now() < last_full_ask;
        tokio::select! {
            Some((i, outcome)) = pending.next() => {
                let asked_ms = match runs[i] {
                    RegionRun::Pending { asked_ms } => asked_ms,
                    _ => 0,
                };
                runs[i] = match &outcome {
                    Some(o) => RegionRun::Reported {
                        asked_ms,
                        verdict: cycle::core_verdict(o.verdict),
                        at_ms: elapsed(),
                    },
                    None => RegionRun::Silent { asked_ms },
                };
                outcomes[i] = outcome;
            }
            _ = tokio::time::sleep_until(last_full_ask), if hedge => {}
            // Whatever is still running is this slot's silence.
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    let verdict = tocsin_core::decide_timed(strategy, &named(&runs), m.settings.quorum, timing);
    let results = regions
        .iter()
        .zip(outcomes)
        .zip(&runs)
        .filter(|(_, run)| **run != RegionRun::NotAsked)
        .map(|((region, outcome), _)| RegionResult {
            region: region.clone(),
            outcome,
        })
        .collect();
    (results, verdict)
}

/// Margin left before the next slot for storing the cycle's result.
const SLOT_MARGIN: Duration = Duration::from_millis(tocsin_core::quorum::SLOT_MARGIN_MS);

/// Time from `now_ms` until shortly before the slot after `slot_ms`.
fn until_next_slot(grid: &Grid, slot_ms: i64, now_ms: i64) -> Duration {
    let next_slot = slot_ms.saturating_add(i64::try_from(grid.interval_ms).unwrap_or(i64::MAX));
    let until_next = u64::try_from(next_slot.saturating_sub(now_ms)).unwrap_or(0);
    Duration::from_millis(until_next).saturating_sub(SLOT_MARGIN)
}

/// How long a cycle that started at `now_ms` waits for its regions: until shortly before the
/// monitor's next slot, but never less than one region needs to answer (its whole check time
/// and a round trip) and never more than a remote round trip needs ([`deadline_of`]).
pub fn slot_deadline(m: &Monitor, grid: &Grid, slot_ms: i64, now_ms: i64) -> Duration {
    deadline_of(m).min(until_next_slot(grid, slot_ms, now_ms).max(needed(m)))
}

/// Runs `m`'s check once in `region`: on the built-in probe for `local`, otherwise on a live
/// remote probe of the region, whose answer is awaited until `deadline`. `None` when the
/// region has no live probe, no answer came in time, or the probe could not run the check
/// because it ran out of something of its own (a probe fault: counted in
/// `probe_errors_total`, logged, and never a failure).
pub async fn check_in(
    state: &Runner,
    m: &Monitor,
    region: &str,
    deadline: tokio::time::Instant,
) -> Option<Outcome> {
    let outcome = if region == LOCAL_REGION {
        state.checks().probe(m, state.cx().clock().now()).await?
    } else {
        let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
        let job = probe_job(m)?;
        crate::probes::dispatch(state.probes(), state.relay(), region, job, wait).await?
    };
    if let Some(fault) = &outcome.probe_fault {
        metrics::counter!("probe_errors_total", "region" => region.to_string(), "reason" => "resource")
            .increment(1);
        tracing::warn!(monitor = %m.id, %region, %fault, "probe fault: the region did not report");
        return None;
    }
    Some(outcome)
}

/// The deadline of a check outside the schedule (on demand): a remote probe's whole round trip.
pub fn on_demand_deadline(m: &Monitor) -> tokio::time::Instant {
    tokio::time::Instant::now() + deadline_of(m)
}

/// How long the server waits for a remote result of `m`: every attempt may use the whole
/// timeout, plus slack for the round trip and the probe's batching.
pub fn deadline_of(m: &Monitor) -> Duration {
    m.settings
        .check_time()
        .saturating_add(Duration::from_secs(3))
}

/// The job running `m`'s check once on a remote probe, or `None` for a monitor the engine
/// does not run.
pub fn probe_job(m: &Monitor) -> Option<crate::probes::protocol::Job> {
    let s = &m.settings;
    // Only monitors the engine runs have a parsed check.
    s.check.as_ref()?;
    Some(crate::probes::protocol::Job {
        // The registry holding the probe numbers the job.
        id: 0,
        monitor_id: m.id.clone(),
        kind: s.kind,
        url: s.target.url.clone(),
        host: s.target.host.clone(),
        port: s.target.port,
        config: s.target.config.clone(),
        timeout_ms: u64::try_from(s.timeout.as_millis()).unwrap_or(u64::MAX),
        retries: s.retries,
        baseline: m.dns_baseline.clone(),
        // The registry holding the probe stamps the server's policy.
        deny_private_addresses: false,
    })
}

/// Runs, and waits for, every active scheduled monitor with a grid slot in
/// `(last_check_at, now_ms]` — what a scheduler waking at `now_ms` would run. Reads the store,
/// not the in-memory schedule, so tests driving a manual clock get deterministic cycles.
/// Returns the reports of the cycles that ran, by monitor id.
pub async fn run_due(
    state: &Runner,
    now_ms: i64,
) -> Result<Vec<(String, CycleReport)>, sqlx::Error> {
    let rows = monitors::list_active_for_scheduling(state.cx().db().reader()).await?;
    let due = rows.iter().filter_map(|row| {
        let m = match Monitor::from_row(row) {
            Ok(m) => m,
            Err(e) => {
                typed::skipped(&e);
                return None;
            }
        };
        let slot = m.settings.grid.last_run_at_or_before(now_ms)?;
        let ran_since = m.last_check_at.is_some_and(|at| at >= slot);
        (!ran_since).then_some((m, slot))
    });
    let runs = due.map(|(m, slot)| async move {
        let report = run_cycle(state, &m, slot).await;
        (m.id, report)
    });
    let mut out = Vec::new();
    for (id, report) in futures::future::join_all(runs).await {
        match report {
            Some(Ok(r)) => out.push((id, r)),
            Some(Err(e)) => tracing::warn!(monitor = %id, error = %e, "cycle not applied"),
            None => {}
        }
    }
    Ok(out)
}

/// The in-memory schedule: next run per monitor, ordered by time, with each monitor's grid
/// (so rescheduling needs no store read; the change feed keeps grids current).
#[derive(Default)]
struct Schedule {
    queue: BTreeSet<(i64, String)>,
    next: HashMap<String, (i64, Grid)>,
}

impl Schedule {
    /// (Re)schedules `id` at its grid's first slot after `now`.
    fn put(&mut self, id: &str, grid: Grid, now: i64) {
        self.drop_id(id);
        let at = grid.next_run_after(now);
        self.queue.insert((at, id.to_string()));
        self.next.insert(id.to_string(), (at, grid));
    }

    fn drop_id(&mut self, id: &str) {
        if let Some((at, _)) = self.next.remove(id) {
            self.queue.remove(&(at, id.to_string()));
        }
    }

    fn earliest(&self) -> Option<i64> {
        self.queue.first().map(|(at, _)| *at)
    }

    /// The monitors due at `now` (slot, id), each rescheduled at its next slot after `now`:
    /// from the grid, not from when the run ends, so there is no drift, and a run still going
    /// at its next slot simply skips it.
    fn take_due(&mut self, now: i64) -> Vec<(i64, String)> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.queue.first() {
            if *at > now {
                break;
            }
            if let Some((at, id)) = self.queue.pop_first() {
                if let Some((_, grid)) = self.next.remove(&id) {
                    self.put(&id, grid, now);
                }
                due.push((at, id));
            }
        }
        due
    }

    fn clear(&mut self) {
        self.queue.clear();
        self.next.clear();
    }
}

/// The schedule with what it was loaded from, for the reconciliation scan, each scheduled
/// monitor's parsed settings, which every run of it shares, and how long each has been silent
/// (the look for stale monitors).
#[derive(Default)]
struct Held {
    schedule: Schedule,
    inventory: Inventory,
    settings: HashMap<String, Arc<Settings>>,
    silences: Silences,
    /// The partitions whose monitors are held (see [`crate::monitoring::partitions`]).
    share: Share,
}

impl Held {
    fn put(&mut self, m: &Monitor, now: i64) {
        self.schedule.put(&m.id, m.settings.grid, now);
        self.inventory.put(&m.id, m.seq, m.settings.version);
        self.settings.insert(m.id.clone(), m.settings.clone());
    }

    /// Takes in `row`, parsed once: scheduled with its settings kept, or (a corrupt row,
    /// logged and counted) left out of the schedule but remembered at its version, so the
    /// reconciliation scan does not reload it until an edit changes it.
    fn load(&mut self, row: &MonitorRow, now: i64) {
        if !wants_schedule(row) || !self.share.contains_seq(row.seq) {
            self.drop_id(&row.id);
            return;
        }
        match Monitor::from_row(row) {
            Ok(m) => {
                self.put(&m, now);
                let since = staleness::silent_since(row.last_check_at, row.started_at);
                self.silences
                    .loaded(&row.id, since, row.stale_since.is_some());
            }
            Err(e) => {
                typed::skipped(&e);
                self.drop_id(&row.id);
                self.inventory.put(&row.id, row.seq, row.version);
            }
        }
    }

    fn drop_id(&mut self, id: &str) {
        self.schedule.drop_id(id);
        self.inventory.remove(id);
        self.settings.remove(id);
        self.silences.remove(id);
    }

    fn clear(&mut self) {
        self.schedule.clear();
        self.inventory.clear();
        self.settings.clear();
        self.silences.clear();
    }

    /// Looks for stale monitors: candidates from memory, judged by their rows.
    async fn look_for_stale(&mut self, state: &Runner, floor_ms: i64) {
        let now = state.cx().clock().now_ms();
        let settings = &self.settings;
        let candidates = self.silences.candidates(
            now,
            floor_ms,
            |id, since| {
                settings.get(id).map(|s| Silent {
                    interval_s: s.interval_s,
                    since,
                    regions: &s.regions,
                })
            },
            |r| crate::probes::is_live(state.probes(), state.relay(), r),
        );
        if candidates.is_empty() {
            return;
        }
        if let Err(e) = staleness::scan(state, &mut self.silences, &candidates, now, floor_ms).await
        {
            tracing::warn!(error = %e, "could not look for stale monitors");
        }
    }
}

async fn reload_all(cx: &Cx, held: &mut Held) {
    match monitors::list_scheduled_in(cx.db().reader(), held.share.partitions()).await {
        Ok(rows) => {
            held.clear();
            let now = cx.clock().now_ms();
            for row in &rows {
                held.load(row, now);
            }
        }
        // Keep the schedule we have; the next scan, lag or restart retries.
        Err(e) => tracing::warn!(error = %e, "could not load monitors to schedule"),
    }
}

async fn reload_one(cx: &Cx, held: &mut Held, id: &str) {
    match monitors::get_by_id(cx.db().reader(), id).await {
        Ok(Some(row)) => held.load(&row, cx.clock().now_ms()),
        Ok(None) => held.drop_id(id),
        Err(e) => tracing::warn!(monitor = %id, error = %e, "could not reload monitor"),
    }
}

/// Follows a change of the partitions held: drops the monitors of those lost and loads those
/// of those gained, leaving the rest of the schedule as it is (a monitor that stays keeps
/// its next slot).
async fn follow_share(cx: &Cx, held: &mut Held, next: Share) {
    let Some((gained, lost)) = held.share.moves(&next) else {
        held.share = next;
        reload_all(cx, held).await;
        return;
    };
    held.share = next;
    if !lost.is_empty() {
        let gone: Vec<String> = held
            .inventory
            .ids()
            .filter(|(_, seq)| !held.share.contains_seq(*seq))
            .map(|(id, _)| id.to_string())
            .collect();
        for id in &gone {
            held.drop_id(id);
        }
    }
    if gained.is_empty() {
        return;
    }
    match monitors::list_scheduled_in(cx.db().reader(), Some(&gained)).await {
        Ok(rows) => {
            let now = cx.clock().now_ms();
            for row in &rows {
                held.load(row, now);
            }
        }
        // The reconciliation scan (or the next change) loads them.
        Err(e) => tracing::warn!(error = %e, "could not load the monitors of partitions gained"),
    }
}

/// Compares the schedule with the store and reloads what differs (see
/// [`crate::cluster::inventory`]); `full` skips the digest.
async fn reconcile(cx: &Cx, held: &mut Held, full: bool) {
    let share = held.share.partitions();
    let diff = match held
        .inventory
        .scan(cx.db(), Set::Scheduled, share, full)
        .await
    {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "could not compare the schedule with the store");
            return;
        }
    };
    if diff.is_empty() {
        return;
    }
    tracing::info!(
        changed = diff.len(),
        "schedule differed from the store: reloading what changed"
    );
    if diff.len() > RELOAD_ALL_ABOVE {
        reload_all(cx, held).await;
        return;
    }
    for id in &diff.gone {
        held.drop_id(id);
    }
    for id in &diff.reload {
        reload_one(cx, held, id).await;
    }
}

/// Longest sleep between looks at the clock, so a clock that jumps (or a missed wake-up)
/// costs at most this much delay.
const MAX_SLEEP: Duration = Duration::from_secs(5);

/// Why [`lead`] returned.
#[derive(PartialEq, Eq)]
enum Led {
    /// The role was lost: wait to get it back.
    Lost,
    /// Cancelled, or the feed closed.
    Stop,
}

/// The scheduler task: runs until `cancel` fires, scheduling only while this node holds the
/// scheduler role ([`crate::cluster::lease`]; always on SQLite). Without the role it holds
/// nothing and waits; on gaining it, it loads every monitor afresh. On cancel no new run
/// starts and runs in flight get the shutdown grace (`config.shutdown_grace`) to finish and store their results.
pub async fn run(state: Runner, cancel: CancellationToken) {
    let parts = state.partitions().clone();
    let mut share_changes = parts.watch();
    let mut tasks: Runs = tokio::task::JoinSet::new();
    loop {
        if parts.held_count() > 0 {
            let led = lead(&state, &mut share_changes, &mut tasks, &cancel).await;
            state.scheduler_stats().set_scheduled(0);
            if led == Led::Stop {
                break;
            }
            continue;
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            changed = share_changes.changed() => if changed.is_err() { break },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Let in-flight checks finish so their results are stored before the writer shuts down,
    // but do not let a slow target hold shutdown hostage: what is still running after the
    // grace period is abandoned (its cycle is simply not recorded).
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(state.cx().config().shutdown_grace, drain)
        .await
        .is_err()
    {
        tracing::warn!("checks still running at shutdown were abandoned");
        tasks.abort_all();
    }
}

/// The scheduled runs in flight; each ends with its monitor's id and the start of its cycle
/// when it stored a result (the monitor is not silent), `None` otherwise.
type Runs = tokio::task::JoinSet<Option<(String, i64)>>;

/// Schedules while this node holds partitions.
async fn lead(
    state: &Runner,
    share_changes: &mut tokio::sync::watch::Receiver<u64>,
    tasks: &mut Runs,
    cancel: &CancellationToken,
) -> Led {
    let parts = state.partitions();
    // Subscribe before loading, so no change between the load and the loop is missed.
    let mut feed = state.cx().feed().subscribe_all();
    share_changes.borrow_and_update();
    let mut held = Held {
        share: parts.share(),
        ..Held::default()
    };
    reload_all(state.cx(), &mut held).await;
    // Other nodes write to the same store: compare with it now and then (PostgreSQL only).
    let scanning = state.cx().db().backend() == Backend::Postgres;
    let mut scan = tokio::time::interval_at(tokio::time::Instant::now() + SCAN_EVERY, SCAN_EVERY);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Staleness counts from now: the node that just took the role has not had a slot yet.
    let floor_ms = state.cx().clock().now_ms();
    let mut stale_scan = tokio::time::interval(STALE_SCAN_EVERY);
    // Regions that lose their last probe while this node leads are reported once each.
    let mut regions = staleness::RegionWatch::default();
    stale_scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if parts.held_count() == 0 {
            return Led::Lost;
        }
        // Shutdown may have begun while the last select chose another branch.
        if cancel.is_cancelled() {
            return Led::Stop;
        }
        let schedule = &mut held.schedule;
        state.scheduler_stats().set_scheduled(schedule.next.len());
        let now = state.cx().clock().now_ms();
        for (slot, id) in schedule.take_due(now) {
            let s = state.clone();
            let task_id = id.clone();
            // The settings parsed when the monitor was loaded: the run re-reads only the state.
            let settings = held.settings.get(&id).cloned();
            let interval_ms = schedule.next.get(&id).map_or(i64::MAX, |(_, g)| {
                i64::try_from(g.interval_ms).unwrap_or(i64::MAX)
            });
            let seq = held.inventory.seq_of(&id);
            tasks.spawn(async move {
                let id = task_id;
                let Ok(_run) = s.checks().runs.clone().acquire_owned().await else {
                    return None;
                };
                // Overloaded: a run that waited for room until its next slot is due is dropped
                // (that slot is already scheduled), so a backlog cannot grow without bound.
                if s.cx().clock().now_ms().saturating_sub(slot) >= interval_ms {
                    s.scheduler_stats().record_shed();
                    return None;
                }
                // The partition went while this run waited: the node taking over runs the
                // slots from now on. Until this run ends, its partition is not released.
                let _running = seq.and_then(|seq| s.partitions().enter(seq))?;
                let held_version = settings.as_ref().map(|h| h.version);
                let row = match monitors::get_for_run(s.cx().db(), &id, held_version).await {
                    Ok(Some(row)) if wants_schedule(&row) => row,
                    // Paused or deleted: the change feed drops it from the schedule.
                    Ok(_) => return None,
                    Err(e) => {
                        tracing::warn!(monitor = %id, error = %e, "could not load monitor");
                        return None;
                    }
                };
                let m = match Monitor::reusing(&row, settings.as_ref()) {
                    Ok(m) => m,
                    Err(e) => {
                        typed::skipped(&e);
                        return None;
                    }
                };
                let started = s.cx().clock().now_ms();
                s.scheduler_stats().record_start(slot, started);
                match run_cycle(&s, &m, slot).await {
                    Some(Ok(report)) if report.applied && report.heartbeats > 0 => {
                        Some((id, started))
                    }
                    Some(Err(e)) => {
                        tracing::warn!(monitor = %id, error = %e, "cycle not applied");
                        None
                    }
                    _ => None,
                }
            });
        }
        let wait = schedule
            .earliest()
            .map(|at| Duration::from_millis(u64::try_from(wake_at(at) - now).unwrap_or(0)))
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        tokio::select! {
            _ = cancel.cancelled() => return Led::Stop,
            _ = tokio::time::sleep(wait) => {}
            // Reap finished runs so the set does not grow; a stored result ends a silence.
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Ok(Some((id, started))) = done {
                    held.silences.heard(&id, started);
                }
            }
            changed = share_changes.changed() => {
                if changed.is_err() {
                    return Led::Stop;
                }
                let next = parts.share();
                if next != held.share {
                    follow_share(state.cx(), &mut held, next).await;
                }
            }
            _ = scan.tick(), if scanning => reconcile(state.cx(), &mut held, false).await,
            _ = stale_scan.tick() => {
                held.look_for_stale(state, floor_ms).await;
                // A region's loss is said once per cluster: by the scheduler role's holder.
                if state.scheduler_role().is_held() {
                    if let Err(e) = staleness::watch_regions(state, &mut regions, state.cx().clock().now_ms()).await {
                        tracing::warn!(error = %e, "could not report regions without probes");
                    }
                }
            }
            delivery = feed.recv() => match delivery {
                Ok(d) => match d.notice {
                    Notice::Monitor(c) => match c.kind {
                        ChangeKind::Deleted | ChangeKind::Paused => held.drop_id(&c.monitor_id),
                        ChangeKind::Created | ChangeKind::Updated | ChangeKind::Resumed => {
                            reload_one(state.cx(), &mut held, &c.monitor_id).await;
                        }
                    },
                    // Notices may have been lost between nodes.
                    Notice::Resync => reconcile(state.cx(), &mut held, true).await,
                    _ => {}
                },
                Err(RecvError::Lagged(n)) => {
                    tracing::info!(missed = n, "change feed lagged: reloading every monitor");
                    reload_all(state.cx(), &mut held).await;
                }
                Err(RecvError::Closed) => return Led::Stop,
            },
        }
    }
}

/// The scheduler's timer slack: it wakes only on multiples of this many milliseconds and
/// starts every run that fell due since together, so a run starts at most this much after
/// its slot (counted in `scheduler_start_lateness_seconds`). Why: at everyday rates each
/// wake-up is paid for in full (threads woken, caches cold) by the one or two checks it starts;
/// a few checks per wake-up share it. Measured in BENCHMARKS.md ("Everyday loads"): a check
/// costs 15-30 % less CPU at 100 checks/s, and less at 2,000/s too.
const TIMER_SLACK_MS: i64 = 50;

/// When to wake for a run due at `at`: the first multiple of [`TIMER_SLACK_MS`] at or after it.
fn wake_at(at: i64) -> i64 {
    let late = at.rem_euclid(TIMER_SLACK_MS);
    if late == 0 {
        at
    } else {
        at.saturating_add(TIMER_SLACK_MS - late)
    }
}

/// How often the scheduling node looks for monitors nobody is checking.
const STALE_SCAN_EVERY: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wake_ups_fall_on_the_slack_grid_and_never_before_the_run_is_due() {
        assert_eq!(wake_at(1_000), 1_000);
        assert_eq!(wake_at(1_001), 1_050);
        assert_eq!(wake_at(1_049), 1_050);
        assert_eq!(wake_at(1_050), 1_050);
        assert_eq!(wake_at(-1), 0);
        for at in 0..200 {
            let w = wake_at(at);
            assert!(
                w >= at && w - at < TIMER_SLACK_MS && w % TIMER_SLACK_MS == 0,
                "{at} -> {w}"
            );
        }
    }

    #[test]
    fn schedule_orders_and_replaces() {
        let grid = |offset_ms| Grid {
            anchor_ms: 0,
            offset_ms,
            interval_ms: 100,
        };
        let mut s = Schedule::default();
        s.put("a", grid(30), 0);
        s.put("b", grid(10), 0);
        s.put("a", grid(5), 0);
        assert_eq!(s.earliest(), Some(5));
        assert_eq!(s.take_due(10), vec![(5, "a".into()), (10, "b".into())]);
        // Both were rescheduled at their next slots, not dropped.
        assert_eq!(s.earliest(), Some(105));
        s.drop_id("a");
        s.drop_id("b");
        assert_eq!(s.earliest(), None);
        assert!(s.take_due(1_000).is_empty());
    }

    #[test]
    fn cycle_index_counts_slots() {
        let g = Grid {
            anchor_ms: 0,
            offset_ms: 500,
            interval_ms: 1000,
        };
        assert_eq!(cycle_index(&g, 500), 0);
        assert_eq!(cycle_index(&g, 2500), 2);
        assert_eq!(cycle_index(&g, 0), 0);
    }

    #[test]
    fn one_run_per_monitor() {
        let c = Checks::new(1);
        assert!(c.claim("m"));
        assert!(!c.claim("m"));
        c.release("m");
        assert!(c.claim("m"));
    }
}
