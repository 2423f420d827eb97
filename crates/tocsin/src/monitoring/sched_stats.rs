//! What the scheduler measures about itself: how late each scheduled run starts (actual start
//! minus its grid slot) and how many monitors the in-memory schedule holds. The scheduler
//! records; the benchmark reads and resets the lateness histogram around its measured window,
//! and `/metrics` exposes the same figures (`scheduler_start_lateness_seconds`,
//! `scheduler_monitors`).
//!
//! Recording is one uncontended mutex and one histogram increment per run, cheap next to a
//! check; the histogram has a fixed size whatever the number of runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use hdrhistogram::Histogram;

/// Latest lateness tracked, in milliseconds (one hour); later starts are clamped to it so they
/// still show as the maximum.
const MAX_TRACKABLE_MS: u64 = 3_600_000;

/// Lateness percentiles of the runs recorded since the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatenessSnapshot {
    pub runs: u64,
    pub p50_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

/// Shared by the scheduler task and whoever reads it (see the module documentation).
#[derive(Debug)]
pub struct SchedulerStats {
    lateness: Mutex<Histogram<u64>>,
    scheduled: AtomicUsize,
    shed: AtomicU64,
    skipped: AtomicU64,
}

impl Default for SchedulerStats {
    fn default() -> Self {
        SchedulerStats::new()
    }
}

impl SchedulerStats {
    pub fn new() -> SchedulerStats {
        // Constant bounds that satisfy hdrhistogram's preconditions; the fallback keeps the
        // constructor total.
        let histogram = Histogram::new_with_bounds(1, MAX_TRACKABLE_MS, 3)
            .or_else(|_| Histogram::new(3))
            .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"));
        SchedulerStats {
            lateness: Mutex::new(histogram),
            scheduled: AtomicUsize::new(0),
            shed: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    /// A run of the slot at `slot_ms` started at `started_ms`. A start before its slot (a clock
    /// stepped back) counts as on time.
    pub fn record_start(&self, slot_ms: i64, started_ms: i64) {
        let late_ms = u64::try_from(started_ms.saturating_sub(slot_ms)).unwrap_or(0);
        self.with_histogram(|h| h.saturating_record(late_ms.min(MAX_TRACKABLE_MS)));
        metrics::histogram!("scheduler_start_lateness_seconds").record(late_ms as f64 / 1000.0);
    }

    /// A run that waited for room until its monitor's next slot was due was dropped.
    pub fn record_shed(&self) {
        self.shed.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("scheduler_runs_shed_total").increment(1);
    }

    /// A slot came while its monitor's previous run was still going: the slot was skipped.
    pub fn record_skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("scheduler_slots_skipped_total").increment(1);
    }

    /// Slots skipped so far (see [`SchedulerStats::record_skipped`]).
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Runs dropped so far (see [`SchedulerStats::record_shed`]).
    pub fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// The schedule now holds `n` monitors.
    pub fn set_scheduled(&self, n: usize) {
        if self.scheduled.swap(n, Ordering::Relaxed) != n {
            metrics::gauge!("scheduler_monitors").set(n as f64);
        }
    }

    /// How many monitors the schedule holds.
    pub fn scheduled(&self) -> usize {
        self.scheduled.load(Ordering::Relaxed)
    }

    /// The lateness of the runs recorded since the last reset.
    pub fn lateness(&self) -> LatenessSnapshot {
        self.with_histogram(|h| LatenessSnapshot {
            runs: h.len(),
            p50_ms: h.value_at_quantile(0.50),
            p99_ms: h.value_at_quantile(0.99),
            max_ms: h.max(),
        })
    }

    /// Forgets the recorded lateness (the start of a measured window).
    pub fn reset_lateness(&self) {
        self.with_histogram(Histogram::reset);
    }

    fn with_histogram<T>(&self, f: impl FnOnce(&mut Histogram<u64>) -> T) -> T {
        // A panic while holding the lock cannot leave a histogram half-updated in a way that
        // matters for statistics, so a poisoned lock is used as is.
        let mut guard = match self.lateness.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_percentiles_and_resets() {
        let s = SchedulerStats::new();
        for late in 0..100 {
            s.record_start(1_000, 1_000 + late);
        }
        // Early starts count as on time.
        s.record_start(1_000, 900);
        let l = s.lateness();
        assert_eq!(l.runs, 101);
        assert_eq!(l.max_ms, 99);
        assert!((48..=50).contains(&l.p50_ms), "{l:?}");
        assert!((97..=99).contains(&l.p99_ms), "{l:?}");
        s.reset_lateness();
        assert_eq!(s.lateness(), LatenessSnapshot::default());
        s.set_scheduled(7);
        assert_eq!(s.scheduled(), 7);
    }
}
