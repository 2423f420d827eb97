//! Per-monitor check figures for `/metrics`, kept in memory by the node that runs the checks:
//! per monitor and region, the last latency, the number of checks by result and the days left
//! on the certificate. [`crate::telemetry`] joins them with every active monitor's status read
//! from the store at each scrape, so a deleted monitor's series go with it and a monitor that
//! has not been checked yet still shows its status.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use tocsin_checks::{Outcome, Verdict};

/// One region's figures for one monitor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionFigures {
    /// Milliseconds.
    pub last_latency_ms: f64,
    /// Checks by result: `up`, `down`, `degraded`, `changed`.
    pub checks: BTreeMap<&'static str, u64>,
    pub cert_days_left: Option<i64>,
}

/// Every monitor's figures, by monitor id then region.
#[derive(Debug, Default)]
pub struct CheckStats {
    by_monitor: Mutex<HashMap<String, BTreeMap<String, RegionFigures>>>,
}

fn result_label(v: Verdict) -> &'static str {
    match v {
        Verdict::Up => "up",
        Verdict::Down => "down",
        Verdict::Degraded => "degraded",
        Verdict::Changed => "changed",
    }
}

impl CheckStats {
    fn with<T>(
        &self,
        f: impl FnOnce(&mut HashMap<String, BTreeMap<String, RegionFigures>>) -> T,
    ) -> T {
        match self.by_monitor.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Notes one region's outcome of a check of `monitor_id`.
    pub fn record(&self, monitor_id: &str, region: &str, o: &Outcome) {
        self.with(|all| {
            let figures = all
                .entry(monitor_id.to_string())
                .or_default()
                .entry(region.to_string())
                .or_default();
            figures.last_latency_ms = o.latency.as_secs_f64() * 1000.0;
            *figures.checks.entry(result_label(o.verdict)).or_default() += 1;
            if o.cert_days_left.is_some() {
                figures.cert_days_left = o.cert_days_left;
            }
        });
    }

    /// The figures of the monitors in `keep`; every other monitor's are forgotten (deleted or
    /// paused since).
    pub fn snapshot_retaining(
        &self,
        keep: &std::collections::HashSet<&str>,
    ) -> HashMap<String, BTreeMap<String, RegionFigures>> {
        self.with(|all| {
            all.retain(|id, _| keep.contains(id.as_str()));
            all.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counts_by_result_and_keeps_the_last_latency() {
        let s = CheckStats::default();
        let mut o = Outcome {
            verdict: Verdict::Up,
            latency: Duration::from_millis(12),
            cert_days_left: Some(30),
            ..Outcome::default()
        };
        s.record("m", "local", &o);
        o.verdict = Verdict::Down;
        o.latency = Duration::from_millis(40);
        o.cert_days_left = None;
        s.record("m", "local", &o);
        s.record("gone", "local", &o);
        let keep = ["m"].into_iter().collect();
        let snap = s.snapshot_retaining(&keep);
        assert_eq!(snap.len(), 1);
        let f = &snap["m"]["local"];
        assert_eq!(f.checks["up"], 1);
        assert_eq!(f.checks["down"], 1);
        assert!((f.last_latency_ms - 40.0).abs() < 0.01);
        assert_eq!(f.cert_days_left, Some(30));
    }
}
