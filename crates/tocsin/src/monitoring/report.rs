//! Uptime windows and availability reports of one monitor, built from the rollup summaries
//! ([`super::rollup::summarize`]) and, for outages, from the raw heartbeat sequence.
//!
//! - **Uptime** of a range: checks whose status is not DOWN, over all checks, in percent
//!   (DEGRADED and CHANGED count as up: DOWN is the only confirmed failure).
//!   PENDING heartbeats (no verdict: a check cancelled by a shutdown) count neither way.
//!   A MAINTENANCE heartbeat counts as its check's own result, or not at all when its window
//!   is excluded from uptime ([`crate::store::status::tally`], decided when it was stored).
//!   `None` when the range holds no counted checks.
//! - **Outages** are maximal runs of DOWN heartbeats (all regions merged, in time order). A run
//!   starts at its first DOWN heartbeat and ends at the first later heartbeat that is neither
//!   DOWN nor PENDING (a check without a verdict ends nothing; one in a window excluded
//!   from uptime ends a run but starts none); a run still open ends at the
//!   end of the range (or now, if earlier). Runs are clipped
//!   to the range, and one already open when the range starts counts, from the range start.
//!   Downtime is the sum of the clipped run lengths, MTTR their mean (downtime / outages).
//!   Runs need the raw sequence, so they cover the part of the range within the raw
//!   retention; the report says where that part starts (`outageDataFrom`).

use super::rollup::{summarize, Summary};
use crate::cx::Cx;
use crate::store::heartbeats as hb_store;
use crate::store::status::{tally, Tally, DOWN};

pub const DAY_MS: i64 = 86_400_000;

/// The raw-retention horizon: raw heartbeats are trusted from here on.
pub fn raw_from(cx: &Cx, now: i64) -> i64 {
    now - i64::from(cx.config().heartbeat_retention_days) * DAY_MS
}

/// The summary of `[from, to)`. Maintenance windows excluded from uptime need no intervals
/// cut out here: their heartbeats were stored as counting in nothing.
pub async fn window(cx: &Cx, seq: i64, from: i64, to: i64) -> Result<Summary, sqlx::Error> {
    let now = cx.clock().now_ms();
    summarize(cx.db(), seq, from, to, raw_from(cx, now), &[]).await
}

/// Outage figures of a range.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Outages {
    pub count: i64,
    pub downtime_ms: i64,
}

impl Outages {
    /// Mean outage length in milliseconds, or `None` without outages.
    pub fn mttr_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.downtime_ms as f64 / self.count as f64)
    }
}

/// Outages of `[from, end)` from a time-ordered `(ts, status)` sequence inside it, given
/// whether the monitor was DOWN just before `from`.
pub fn outages(from: i64, end: i64, down_before: bool, seq: &[(i64, i64)]) -> Outages {
    let mut out = Outages::default();
    let mut open: Option<i64> = None;
    if down_before {
        open = Some(from);
        out.count += 1;
    }
    for &(ts, code) in seq {
        let down = match tally(code) {
            Tally::Counted(status) => status == DOWN,
            Tally::Excluded => false,
            Tally::NoVerdict => continue,
        };
        match (down, open) {
            (true, None) => {
                open = Some(ts);
                out.count += 1;
            }
            (false, Some(start)) => {
                out.downtime_ms += ts - start;
                open = None;
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        out.downtime_ms += (end - start).max(0);
    }
    out
}

/// Outages of `[from, to)` from raw heartbeats; returns them and where the covered part
/// starts.
pub async fn outages_of(
    cx: &Cx,
    seq: i64,
    from: i64,
    to: i64,
) -> Result<(Outages, i64), sqlx::Error> {
    let now = cx.clock().now_ms();
    let start = from.max(raw_from(cx, now));
    let end = to.min(now.max(start));
    if start >= end {
        return Ok((Outages::default(), start));
    }
    let db = cx.db();
    let before = hb_store::status_before(db.reader(), seq, start).await?;
    let points: Vec<(i64, i64)> = hb_store::points(db.reader(), seq, start, end)
        .await?
        .into_iter()
        .map(|(ts, status, _)| (ts, status))
        .collect();
    let down_before = before.map(tally) == Some(Tally::Counted(DOWN));
    Ok((outages(start, end, down_before, &points), start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_down() {
        // up, down@10, down@20, up@30, down@50 (open until 100)
        let seq = [(0, 0), (10, 1), (20, 1), (30, 0), (50, 1)];
        let o = outages(0, 100, false, &seq);
        assert_eq!(
            o,
            Outages {
                count: 2,
                downtime_ms: 20 + 50
            }
        );
        assert_eq!(o.mttr_ms(), Some(35.0));
        // Already down when the range starts.
        let o = outages(0, 100, true, &[(40, 0)]);
        assert_eq!(
            o,
            Outages {
                count: 1,
                downtime_ms: 40
            }
        );
        assert_eq!(outages(0, 100, false, &[(5, 5), (6, 2)]).mttr_ms(), None);
        // A PENDING heartbeat (5) inside a run neither ends it nor starts one.
        let o = outages(
            0,
            100,
            false,
            &[(10, 1), (20, 5), (30, 1), (40, 0), (50, 5)],
        );
        assert_eq!(
            o,
            Outages {
                count: 1,
                downtime_ms: 30
            }
        );
    }
}
