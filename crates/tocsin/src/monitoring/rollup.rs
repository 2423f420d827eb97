//! Hourly rollups: one row per monitor and UTC hour (over every region) with check counts and
//! latency figures, plus that hour's latency histogram ([`super::histogram`]). The writer
//! updates them in the same transaction as the heartbeats ([`deltas`]), so a rollup always
//! agrees with the raw rows it summarizes; they outlive the raw rows (400 days against 14 by
//! default) and answer every long-range read.
//!
//! Counting rules, shared by hourly stats, uptime and reports:
//! - A PENDING heartbeat (a check that gave no verdict: an on-demand check cancelled by a
//!   shutdown) counts in nothing: it measured nothing, so it is neither a check in `total` nor
//!   up time nor a latency. It is stored and listed like any other heartbeat.
//! - `total` counts every other heartbeat; `up`, `down`, `degraded` count the statuses UP,
//!   DOWN and DEGRADED (CHANGED counts only in `total`).
//! - A MAINTENANCE heartbeat counts as the check's own result when its window does not
//!   exclude itself from uptime, and in nothing (like PENDING) when it does
//!   ([`crate::store::status::tally`]): the choice is made when the check is stored, so
//!   editing or deleting a window later does not rewrite history.
//! - Latency figures (average, minimum, maximum, percentiles) cover the counted heartbeats
//!   that are not DOWN: a failed check's latency measures the timeout, not the service.
//!
//! Reading a range `[from, to)` ([`summarize`]) combines whole hours from the rollups with the
//! partial hours at either edge from raw heartbeats, so counts are exact to the millisecond
//! while raw heartbeats are retained. An edge older than the raw retention reads its whole
//! hour from the rollup instead (the range is widened to the hour there).

use std::collections::BTreeMap;

use tocsin_core::uptime_percent;

use super::histogram::{bin_of, Histogram};
use crate::store::heartbeats::{self as hb_store, HeartbeatRow, HourlyDelta};
use crate::store::status::{tally, Tally, DEGRADED, DOWN, UP};
use crate::store::Db;

pub const HOUR_MS: i64 = 3_600_000;

/// A histogram increment: `(monitor_seq, bucket_start, bin, n)`.
pub type BinCount = (i64, i64, i64, i64);

pub fn floor_hour(ms: i64) -> i64 {
    ms.div_euclid(HOUR_MS) * HOUR_MS
}

pub fn ceil_hour(ms: i64) -> i64 {
    floor_hour(ms + HOUR_MS - 1)
}

/// The rollup increments of a set of freshly inserted heartbeats: one delta per
/// (monitor, hour) and one histogram count per (monitor, hour, bin), keys unique.
pub fn deltas<'a>(
    rows: impl Iterator<Item = &'a HeartbeatRow>,
) -> (Vec<HourlyDelta>, Vec<BinCount>) {
    let mut hours: BTreeMap<(i64, i64), HourlyDelta> = BTreeMap::new();
    let mut bins: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    for r in rows {
        let Tally::Counted(status) = tally(r.status) else {
            continue;
        };
        let bucket = floor_hour(r.ts);
        let d = hours
            .entry((r.monitor_seq, bucket))
            .or_insert_with(|| HourlyDelta {
                monitor_seq: r.monitor_seq,
                bucket_start: bucket,
                ..HourlyDelta::default()
            });
        d.total += 1;
        match status {
            UP => d.up += 1,
            DOWN => d.down += 1,
            DEGRADED => d.degraded += 1,
            _ => {}
        }
        if status != DOWN {
            d.latency_sum += r.latency;
            d.latency_min = Some(d.latency_min.map_or(r.latency, |m| m.min(r.latency)));
            d.latency_max = Some(d.latency_max.map_or(r.latency, |m| m.max(r.latency)));
            *bins
                .entry((r.monitor_seq, bucket, bin_of(r.latency)))
                .or_default() += 1;
        }
    }
    (
        hours.into_values().collect(),
        bins.into_iter()
            .map(|((s, b, bin), n)| (s, b, bin, n))
            .collect(),
    )
}

/// Check counts and the latency histogram of a range.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub total: i64,
    pub up: i64,
    pub down: i64,
    pub degraded: i64,
    /// Latencies of the non-DOWN checks, in 0.1 ms units.
    pub latency: Histogram,
}

impl Summary {
    pub fn merge(&mut self, o: &Summary) {
        self.total += o.total;
        self.up += o.up;
        self.down += o.down;
        self.degraded += o.degraded;
        self.latency.merge(&o.latency);
    }

    fn record(&mut self, code: i64, latency: i64) {
        let Tally::Counted(status) = tally(code) else {
            return;
        };
        self.total += 1;
        match status {
            UP => self.up += 1,
            DOWN => self.down += 1,
            DEGRADED => self.degraded += 1,
            _ => {}
        }
        if status != DOWN {
            self.latency.record(latency);
        }
    }

    /// Percentage of counted checks that were not DOWN (DEGRADED and CHANGED count as up;
    /// PENDING and excluded maintenance are not counted at all), or `None` when the range holds no counted
    /// checks. Rounded to 4 decimals.
    pub fn uptime(&self) -> Option<f64> {
        uptime_percent(self.total, self.down)
    }
}

/// How a range is read: raw heartbeats or whole rollup hours, each half-open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Raw(i64, i64),
    Hours(i64, i64),
}

/// Splits `[from, to)` into raw edges and whole rollup hours; raw data is trusted from
/// `raw_from` on (see the module documentation).
pub fn plan(from: i64, to: i64, raw_from: i64) -> Vec<Part> {
    let mut parts = Vec::new();
    if from >= to {
        return parts;
    }
    let (h0, h1) = (ceil_hour(from), floor_hour(to));
    if h0 >= h1 {
        parts.push(if from >= raw_from {
            Part::Raw(from, to)
        } else {
            Part::Hours(floor_hour(from), ceil_hour(to))
        });
        return parts;
    }
    if from < h0 {
        parts.push(if from >= raw_from {
            Part::Raw(from, h0)
        } else {
            Part::Hours(floor_hour(from), h0)
        });
    }
    parts.push(Part::Hours(h0, h1));
    if h1 < to {
        parts.push(if h1 >= raw_from {
            Part::Raw(h1, to)
        } else {
            Part::Hours(h1, ceil_hour(to))
        });
    }
    parts
}

/// The summary of whole hours `[from, to)` from the rollups.
pub async fn hours_summary(db: &Db, seq: i64, from: i64, to: i64) -> Result<Summary, sqlx::Error> {
    let mut s = Summary::default();
    for r in hb_store::hourly(db.reader(), seq, from, to).await? {
        s.total += r.total;
        s.up += r.up;
        s.down += r.down;
        s.degraded += r.degraded;
        s.latency.add_summary(
            r.total - r.down,
            r.latency_sum,
            r.latency_min,
            r.latency_max,
        );
    }
    for (_, bin, n) in hb_store::bins(db.reader(), seq, from, to).await? {
        s.latency.add_bin(bin, n);
    }
    Ok(s)
}

/// The summary of `[from, to)` from raw heartbeats.
pub async fn raw_summary(db: &Db, seq: i64, from: i64, to: i64) -> Result<Summary, sqlx::Error> {
    let mut s = Summary::default();
    for (_, status, latency) in hb_store::points(db.reader(), seq, from, to).await? {
        s.record(status, latency);
    }
    Ok(s)
}

/// The summary of `[from, to)`, minus the `excluded` intervals (maintenance windows that are
/// excluded from uptime; half-open, any order, may overlap).
pub async fn summarize(
    db: &Db,
    seq: i64,
    from: i64,
    to: i64,
    raw_from: i64,
    excluded: &[(i64, i64)],
) -> Result<Summary, sqlx::Error> {
    let mut total = Summary::default();
    for (a, b) in subtract(from, to, excluded) {
        for part in plan(a, b, raw_from) {
            let s = match part {
                Part::Raw(x, y) => raw_summary(db, seq, x, y).await?,
                Part::Hours(x, y) => hours_summary(db, seq, x, y).await?,
            };
            total.merge(&s);
        }
    }
    Ok(total)
}

/// `[from, to)` minus the intervals, as ordered disjoint half-open ranges.
pub fn subtract(from: i64, to: i64, excluded: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut cuts: Vec<(i64, i64)> = excluded.iter().copied().filter(|(a, b)| a < b).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut cursor = from;
    for (a, b) in cuts {
        if b <= cursor {
            continue;
        }
        if a >= to {
            break;
        }
        if a > cursor {
            out.push((cursor, a));
        }
        cursor = cursor.max(b);
    }
    if cursor < to {
        out.push((cursor, to));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_uses_raw_edges_and_whole_hours() {
        let h = HOUR_MS;
        assert_eq!(
            plan(h / 2, 3 * h + 10, 0),
            vec![
                Part::Raw(h / 2, h),
                Part::Hours(h, 3 * h),
                Part::Raw(3 * h, 3 * h + 10)
            ]
        );
        assert_eq!(plan(h, 2 * h, 0), vec![Part::Hours(h, 2 * h)]);
        assert_eq!(plan(10, 20, 0), vec![Part::Raw(10, 20)]);
        // Too old for raw: widened to the hour.
        assert_eq!(
            plan(h / 2, 2 * h + 5, 10 * h),
            vec![
                Part::Hours(0, h),
                Part::Hours(h, 2 * h),
                Part::Hours(2 * h, 3 * h)
            ]
        );
    }

    fn row(ts: i64, status: i64, latency: i64) -> HeartbeatRow {
        HeartbeatRow {
            monitor_seq: 1,
            ts,
            region_id: 1,
            status,
            latency,
            status_code: None,
            timings: None,
            retry_count: 0,
            correlation_id: None,
        }
    }

    #[test]
    fn pending_heartbeats_count_in_no_figure() {
        use crate::store::status::{code, PENDING};
        use tocsin_core::state::Status;
        let rows = [
            row(0, UP, 100),
            row(1, DOWN, 9_000),
            row(2, PENDING, 50_000),
            row(3, code(Status::Changed), 300),
        ];
        let (hours, bins) = deltas(rows.iter());
        assert_eq!(hours.len(), 1);
        let d = &hours[0];
        assert_eq!((d.total, d.up, d.down, d.degraded), (3, 1, 1, 0));
        assert_eq!(d.latency_sum, 400);
        assert_eq!((d.latency_min, d.latency_max), (Some(100), Some(300)));
        assert_eq!(bins.iter().map(|b| b.3).sum::<i64>(), 2);
        // The raw reading agrees with the rollup, and uptime leaves PENDING out.
        let mut s = Summary::default();
        for r in &rows {
            s.record(r.status, r.latency);
        }
        assert_eq!((s.total, s.up, s.down), (3, 1, 1));
        assert_eq!(s.latency.mean(), Some(200.0));
        assert_eq!(s.uptime(), Some(66.6667));
        let mut only_pending = Summary::default();
        only_pending.record(PENDING, 10);
        assert_eq!(only_pending.uptime(), None);
    }

    #[test]
    fn subtract_cuts_intervals() {
        assert_eq!(subtract(0, 100, &[]), vec![(0, 100)]);
        assert_eq!(
            subtract(0, 100, &[(50, 60), (10, 20), (15, 30), (90, 200)]),
            vec![(0, 10), (30, 50), (60, 90)]
        );
    }
}
