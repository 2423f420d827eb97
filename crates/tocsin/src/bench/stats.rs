//! What one load run measured: the per-connection tallies the driver fills in ([`Tally`]), and
//! the per-scenario summary derived from them ([`Summary`]: throughput, latency percentiles,
//! errors). Pure code, no I/O, so it is unit-tested directly.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::cpu::CpuUse;

/// Highest latency the histogram tracks, in microseconds (one hour). Anything slower is
/// clamped to this value rather than dropped, so it still shows up as the max.
const MAX_TRACKABLE_US: u64 = 3_600_000_000;
/// Three significant figures: 0.1% relative precision at every magnitude.
const SIGNIFICANT_FIGURES: u8 = 3;

/// An empty latency histogram in microseconds.
pub fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that satisfy hdrhistogram's preconditions (low >= 1,
    // high >= 2 * low, sigfig <= 5), so this cannot fail; the fallback keeps the type honest.
    Histogram::new_with_bounds(1, MAX_TRACKABLE_US, SIGNIFICANT_FIGURES)
        .or_else(|_| Histogram::new(SIGNIFICANT_FIGURES))
        .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
}

/// What one connection saw during the measured window. Kept per task (no shared state on the
/// hot path) and merged once at the end.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Latency of every successful (2xx) response, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Responses with a status outside 2xx.
    pub status_errors: u64,
    /// Connect, write, read or protocol failures (each one also costs a reconnect).
    pub io_errors: u64,
    /// One example of what went wrong, for the report.
    pub sample_error: Option<String>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            latency_us: new_histogram(),
            status_errors: 0,
            io_errors: 0,
            sample_error: None,
        }
    }
}

impl Tally {
    /// Records a successful request's latency.
    pub fn success(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        // `saturating_record` clamps to the trackable range, so a 0 µs reading counts as 1 µs
        // and a pathological stall as the maximum instead of being lost.
        self.latency_us.saturating_record(us.max(1));
    }

    pub fn status_error(&mut self, status: u16) {
        self.status_errors += 1;
        if self.sample_error.is_none() {
            self.sample_error = Some(format!("HTTP status {status}"));
        }
    }

    pub fn io_error(&mut self, what: impl std::fmt::Display) {
        self.io_errors += 1;
        if self.sample_error.is_none() {
            self.sample_error = Some(what.to_string());
        }
    }

    /// Folds another connection's tally into this one.
    pub fn merge(&mut self, other: &Tally) {
        // Both histograms share the same bounds, so `add` cannot fail for range reasons; if it
        // ever did, the counts would be wrong, which is worth saying rather than hiding.
        if let Err(e) = self.latency_us.add(&other.latency_us) {
            self.io_error(format!("merging latency histograms: {e:?}"));
        }
        self.status_errors += other.status_errors;
        self.io_errors += other.io_errors;
        if self.sample_error.is_none() {
            self.sample_error.clone_from(&other.sample_error);
        }
    }
}

/// One scenario's result, as printed and as serialized by `--json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub scenario: String,
    /// Successful (2xx) responses completed inside the measured window.
    pub requests: u64,
    /// Non-2xx responses plus I/O failures inside the measured window.
    pub errors: u64,
    pub status_errors: u64,
    pub io_errors: u64,
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// CPU cores the whole process (server and client) used on average during the window; well
    /// under the machine's core count means the machine was busy with something else.
    pub cpu_cores: Option<f64>,
    /// Server threads' CPU time per successful request, in microseconds: comparable across
    /// machines' load, unlike `requests_per_sec`. Absent against an external server.
    pub server_cpu_us_per_request: Option<f64>,
    /// The client's CPU time per successful request, in microseconds.
    pub client_cpu_us_per_request: Option<f64>,
    /// `requests_per_sec` divided by the baseline scenario's, from the same run.
    pub vs_baseline: Option<f64>,
    /// One example error, when there were any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_error: Option<String>,
}

fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Summary {
    /// Summarises a merged tally over a measured window of `window`.
    pub fn from_tally(scenario: &str, tally: &Tally, window: Duration) -> Summary {
        let h = &tally.latency_us;
        let requests = h.len();
        let secs = window.as_secs_f64();
        let (p50, p99, max) = if requests == 0 {
            (0, 0, 0)
        } else {
            (
                h.value_at_quantile(0.50),
                h.value_at_quantile(0.99),
                h.max(),
            )
        };
        Summary {
            scenario: scenario.to_string(),
            requests,
            errors: tally.status_errors + tally.io_errors,
            status_errors: tally.status_errors,
            io_errors: tally.io_errors,
            requests_per_sec: if secs > 0.0 {
                requests as f64 / secs
            } else {
                0.0
            },
            p50_ms: us_to_ms(p50),
            p99_ms: us_to_ms(p99),
            max_ms: us_to_ms(max),
            cpu_cores: None,
            server_cpu_us_per_request: None,
            client_cpu_us_per_request: None,
            vs_baseline: None,
            sample_error: tally.sample_error.clone(),
        }
    }

    /// Adds the CPU figures measured over the same window.
    pub fn with_cpu(mut self, cpu: Option<CpuUse>, window: Duration) -> Summary {
        let Some(cpu) = cpu else { return self };
        let secs = window.as_secs_f64();
        if secs > 0.0 {
            self.cpu_cores = Some((cpu.server + cpu.client).as_secs_f64() / secs);
        }
        if self.requests > 0 {
            let per_request = |d: Duration| d.as_secs_f64() * 1e6 / self.requests as f64;
            // No server threads in this process: the server is external.
            self.server_cpu_us_per_request =
                (!cpu.server.is_zero()).then(|| per_request(cpu.server));
            self.client_cpu_us_per_request = Some(per_request(cpu.client));
        }
        self
    }
}

/// Fills in every summary's ratio to the scenario named `baseline`, when it was measured and
/// served anything.
pub fn set_baseline_ratios(summaries: &mut [Summary], baseline: &str) {
    let base = summaries
        .iter()
        .find(|s| s.scenario == baseline)
        .map(|s| s.requests_per_sec)
        .filter(|r| *r > 0.0);
    for s in summaries.iter_mut() {
        s.vs_baseline = base.map(|b| s.requests_per_sec / b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally_of(latencies_us: &[u64]) -> Tally {
        let mut t = Tally::default();
        for us in latencies_us {
            t.success(Duration::from_micros(*us));
        }
        t
    }

    #[test]
    fn summary_percentiles_and_rate() {
        // 100 requests: 1..=100 ms.
        let lat: Vec<u64> = (1..=100).map(|ms| ms * 1000).collect();
        let s = Summary::from_tally("x", &tally_of(&lat), Duration::from_secs(2));
        assert_eq!(s.requests, 100);
        assert_eq!(s.errors, 0);
        assert!((s.requests_per_sec - 50.0).abs() < 1e-9);
        // Three significant figures: within 0.1% of the exact value.
        assert!((s.p50_ms - 50.0).abs() <= 0.05, "{}", s.p50_ms);
        assert!((s.p99_ms - 99.0).abs() <= 0.1, "{}", s.p99_ms);
        assert!((s.max_ms - 100.0).abs() <= 0.1, "{}", s.max_ms);
    }

    #[test]
    fn empty_tally_is_all_zero_not_a_panic() {
        let s = Summary::from_tally("x", &Tally::default(), Duration::from_secs(1));
        assert_eq!(
            (s.requests, s.requests_per_sec, s.p50_ms, s.max_ms),
            (0, 0.0, 0.0, 0.0)
        );
        let s = Summary::from_tally("x", &tally_of(&[10]), Duration::ZERO);
        assert_eq!(s.requests_per_sec, 0.0);
    }

    #[test]
    fn extremes_are_clamped_not_lost() {
        let mut t = Tally::default();
        t.success(Duration::ZERO);
        t.success(Duration::from_secs(10 * 3600));
        assert_eq!(t.latency_us.len(), 2);
        assert!(t.latency_us.max() >= MAX_TRACKABLE_US / 2);
    }

    #[test]
    fn merge_adds_counts_and_keeps_first_error() {
        let mut a = tally_of(&[100, 200]);
        a.status_error(500);
        let mut b = tally_of(&[300]);
        b.io_error("connection reset");
        b.io_error("again");
        a.merge(&b);
        assert_eq!(a.latency_us.len(), 3);
        assert_eq!((a.status_errors, a.io_errors), (1, 2));
        assert_eq!(a.sample_error.as_deref(), Some("HTTP status 500"));
        let s = Summary::from_tally("x", &a, Duration::from_secs(1));
        assert_eq!(s.errors, 3);
    }

    #[test]
    fn cpu_figures() {
        let s = Summary::from_tally("x", &tally_of(&[1; 1000]), Duration::from_secs(2));
        let cpu = CpuUse {
            server: Duration::from_millis(30),
            client: Duration::from_millis(10),
        };
        let s = s.with_cpu(Some(cpu), Duration::from_secs(2));
        assert_eq!(s.cpu_cores, Some(0.02));
        assert_eq!(s.server_cpu_us_per_request, Some(30.0));
        assert_eq!(s.client_cpu_us_per_request, Some(10.0));
        let external = CpuUse {
            server: Duration::ZERO,
            client: Duration::from_millis(10),
        };
        let s = s.with_cpu(Some(external), Duration::from_secs(2));
        assert_eq!(s.server_cpu_us_per_request, None);
    }

    #[test]
    fn baseline_ratio() {
        let mut v = vec![
            Summary::from_tally("baseline", &tally_of(&[1; 100]), Duration::from_secs(1)),
            Summary::from_tally("workspace", &tally_of(&[1; 50]), Duration::from_secs(1)),
        ];
        set_baseline_ratios(&mut v, "baseline");
        assert_eq!(v[0].vs_baseline, Some(1.0));
        assert_eq!(v[1].vs_baseline, Some(0.5));
        let mut only = vec![v[1].clone()];
        set_baseline_ratios(&mut only, "baseline");
        assert_eq!(only[0].vs_baseline, None);
    }
}
