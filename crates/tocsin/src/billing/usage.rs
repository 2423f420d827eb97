//! The usage period: the subscription's current period, or without one the calendar month
//! (UTC) around now.

use chrono::{Datelike, TimeZone, Utc};

/// `(start, end)` in milliseconds of the calendar month (UTC) holding `now_ms`.
pub fn calendar_month(now_ms: i64) -> (i64, i64) {
    let now = Utc
        .timestamp_millis_opt(now_ms)
        .single()
        .unwrap_or_else(Utc::now);
    let (y, m) = (now.year(), now.month());
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    let start = Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single();
    let end = Utc.with_ymd_and_hms(ny, nm, 1, 0, 0, 0).single();
    match (start, end) {
        (Some(s), Some(e)) => (s.timestamp_millis(), e.timestamp_millis()),
        // Every month has a first day at midnight UTC; this arm only satisfies the types.
        _ => (now_ms, now_ms),
    }
}

/// The subscription's period when both ends are known and hold `now_ms`, else the month.
pub fn period(start: Option<i64>, end: Option<i64>, now_ms: i64) -> (i64, i64) {
    match (start, end) {
        (Some(s), Some(e)) if s < e => (s, e),
        _ => calendar_month(now_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_month_around_a_time() {
        // 2026-12-15T12:00:00Z
        let (s, e) = calendar_month(1_797_336_000_000);
        assert_eq!(s, 1_796_083_200_000); // 2026-12-01
        assert_eq!(e, 1_798_761_600_000); // 2027-01-01
    }
}
