//! The latency histogram behind every percentile the API reports (`p95Latency` of an hourly
//! stat, `p50`/`p95`/`p99` of a report).
//!
//! Exact percentiles cannot be merged across hours, so each hourly rollup keeps a small
//! log-linear histogram instead and any range merges the hours it covers. Latencies are
//! counted in 0.1 ms units. Values below 1.6 ms (16 units) each get their own bin; above that,
//! every power of two is split into 16 equal bins, so a bin is at most 1/16 (6.25 %) of its
//! lower bound wide. A percentile is the nearest-rank sample's bin, reported as the bin's
//! midpoint and clamped to the observed minimum and maximum: within ~3.1 % of the exact
//! nearest-rank value, and exact below 1.6 ms or when every sample of the bin is equal to the
//! range's minimum or maximum.

use std::collections::BTreeMap;

/// Bins below this value hold exactly one value each.
const LINEAR: i64 = 16;
/// Sub-bins per power of two above `LINEAR`.
const SUB_BITS: u32 = 4;

/// The bin of a latency in 0.1 ms units (negative values count as 0).
pub fn bin_of(units: i64) -> i64 {
    let v = units.max(0);
    if v < LINEAR {
        return v;
    }
    let exp = 63 - v.leading_zeros(); // >= 4
    let shift = exp - SUB_BITS;
    let mantissa = (v >> shift) & ((1 << SUB_BITS) - 1);
    LINEAR + i64::from(shift) * (1 << SUB_BITS) + mantissa
}

/// The half-open range `[low, high)` of values a bin holds.
pub fn bin_range(bin: i64) -> (i64, i64) {
    if bin < LINEAR {
        return (bin, bin + 1);
    }
    let k = bin - LINEAR;
    let shift = k >> SUB_BITS;
    let mantissa = k & ((1 << SUB_BITS) - 1);
    let low = ((1 << SUB_BITS) + mantissa) << shift;
    (low, low + (1 << shift))
}

/// A mergeable latency histogram with the exact count, sum, minimum and maximum beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub bins: BTreeMap<i64, i64>,
    pub count: i64,
    pub sum: i64,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl Histogram {
    pub fn record(&mut self, units: i64) {
        *self.bins.entry(bin_of(units)).or_default() += 1;
        self.count += 1;
        self.sum += units;
        self.min = Some(self.min.map_or(units, |m| m.min(units)));
        self.max = Some(self.max.map_or(units, |m| m.max(units)));
    }

    /// Adds a stored summary (its bins come separately, through [`Histogram::add_bin`]).
    pub fn add_summary(&mut self, count: i64, sum: i64, min: Option<i64>, max: Option<i64>) {
        self.count += count;
        self.sum += sum;
        if let Some(m) = min {
            self.min = Some(self.min.map_or(m, |x| x.min(m)));
        }
        if let Some(m) = max {
            self.max = Some(self.max.map_or(m, |x| x.max(m)));
        }
    }

    pub fn add_bin(&mut self, bin: i64, n: i64) {
        *self.bins.entry(bin).or_default() += n;
    }

    pub fn merge(&mut self, other: &Histogram) {
        self.add_summary(other.count, other.sum, other.min, other.max);
        for (b, n) in &other.bins {
            self.add_bin(*b, *n);
        }
    }

    /// The nearest-rank `q` quantile (0 < q <= 1) in 0.1 ms units, or `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: i64 = self.bins.values().sum();
        if total == 0 {
            return None;
        }
        // Nearest rank: the smallest sample with at least q of the samples at or below it.
        let rank = ((q * total as f64).ceil() as i64).clamp(1, total);
        let mut seen = 0;
        for (bin, n) in &self.bins {
            seen += n;
            if seen >= rank {
                let (low, high) = bin_range(*bin);
                let mid = (low + high - 1) as f64 / 2.0;
                let lo = self.min.unwrap_or(low) as f64;
                let hi = self.max.unwrap_or(high) as f64;
                return Some(mid.clamp(lo.min(hi), hi));
            }
        }
        None
    }

    /// The mean in 0.1 ms units, or `None` without samples.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }
}

/// Milliseconds to the stored 0.1 ms units (non-finite and negative values become 0).
pub fn to_units(ms: f64) -> i64 {
    if !ms.is_finite() || ms <= 0.0 {
        return 0;
    }
    (ms * 10.0).round().min(i32::MAX as f64) as i64
}

/// Stored 0.1 ms units back to milliseconds.
pub fn to_ms(units: f64) -> f64 {
    (units / 10.0 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_values_in_order() {
        let mut last = -1;
        for v in 0..100_000 {
            let b = bin_of(v);
            assert!(b >= last);
            last = b;
            let (lo, hi) = bin_range(b);
            assert!(lo <= v && v < hi, "{v} in bin {b} = [{lo},{hi})");
            assert!((hi - lo) as f64 <= (lo as f64 / 16.0).max(1.0));
        }
        assert!(bin_of(i32::MAX as i64) < 500);
    }

    #[test]
    fn quantiles_are_nearest_rank_within_bin_error() {
        let mut h = Histogram::default();
        for _ in 0..95 {
            h.record(100);
        }
        for _ in 0..5 {
            h.record(5000);
        }
        // 95th sample is 10 ms; 96th is 500 ms.
        let p95 = h.quantile(0.95).unwrap_or_default();
        assert!((p95 - 100.0).abs() <= 100.0 * 0.032, "{p95}");
        let p99 = h.quantile(0.99).unwrap_or_default();
        assert!((p99 - 5000.0).abs() <= 5000.0 * 0.032, "{p99}");
        let mut same = Histogram::default();
        same.record(1234);
        same.record(1234);
        assert_eq!(same.quantile(0.95), Some(1234.0)); // clamped to the observed range
        assert_eq!(h.quantile(0.5).map(|v| v.round()), Some(102.0));
        let mut small = Histogram::default();
        for v in [3, 7, 9, 12] {
            small.record(v);
        }
        assert_eq!(small.quantile(0.5), Some(7.0));
    }
}
