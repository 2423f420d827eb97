//! How a [`Status`] is stored: the one mapping between the status type and its two storage
//! forms, the text of `monitors.status` and `monitor_events.{from,to}_status` (the API
//! spelling, [`Status::as_str`]) and the small integer of `heartbeats.status`.
//!
//! A heartbeat taken inside a maintenance window reads as `MAINTENANCE`, but its code also
//! keeps how it counts in uptime figures: `MAINTENANCE_COUNTED + own` (6 to 9) when the window
//! counts and the check's own result (UP, DOWN, DEGRADED, CHANGED) counts with it; when the
//! window is excluded from uptime it counts in nothing, as [`MAINTENANCE`] (4, no result
//! known) or `MAINTENANCE_EXCLUDED + own` (10 to 13, the result kept only so that a push
//! monitor can take its job's last word when the window ends). [`tally`] is the one reading of
//! a code for the figures; [`own_result`] the result a maintenance code kept; [`codes_of`] the
//! codes a status filter matches.
//!
//! Reading is fallible on purpose: a value no status spells is a corrupt (or foreign) row, and
//! callers must report it rather than guess a status — a silent `PENDING` would hide an outage.

use tocsin_core::Status;

/// A stored status value that no [`Status`] spells.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorruptStatus {
    #[error("stored status text {0:?} is not a status")]
    Text(String),
    #[error("stored heartbeat status code {0} is not a status")]
    Code(i64),
}

/// The stored text of a status.
pub const fn text(s: Status) -> &'static str {
    s.as_str()
}

/// The status a stored text spells.
pub fn from_text(t: &str) -> Result<Status, CorruptStatus> {
    t.parse().map_err(|_| CorruptStatus::Text(t.to_string()))
}

/// `heartbeats.status` of UP, DOWN and DEGRADED, for the aggregate queries that count them,
/// and of PENDING, which they leave out.
pub const UP: i64 = code(Status::Up);
pub const DOWN: i64 = code(Status::Down);
pub const DEGRADED: i64 = code(Status::Degraded);
pub const PENDING: i64 = code(Status::Pending);

/// `heartbeats.status` of a maintenance heartbeat excluded from uptime.
pub const MAINTENANCE: i64 = code(Status::Maintenance);
/// Added to a check's own code (UP 0 ... CHANGED 3) for a maintenance heartbeat that counts.
const MAINTENANCE_COUNTED: i64 = 6;
/// Added to a check's own code for a maintenance heartbeat excluded from uptime.
const MAINTENANCE_EXCLUDED: i64 = 10;

/// The code of a heartbeat inside a maintenance window: excluded from uptime (`counted` is
/// `None`), or counted as the check's own result.
pub const fn maintenance_code(counted: Option<Status>) -> i64 {
    match counted {
        Some(s @ (Status::Up | Status::Down | Status::Degraded | Status::Changed)) => {
            MAINTENANCE_COUNTED + code(s)
        }
        _ => MAINTENANCE,
    }
}

/// The code of a heartbeat inside a window excluded from uptime that still keeps the check's
/// own result (`MAINTENANCE` when there is none to keep).
pub const fn excluded_code(own: Option<Status>) -> i64 {
    match own {
        Some(s @ (Status::Up | Status::Down | Status::Degraded | Status::Changed)) => {
            MAINTENANCE_EXCLUDED + code(s)
        }
        _ => MAINTENANCE,
    }
}

/// The check's own result a maintenance heartbeat code kept, counted or not; `None` for any
/// other code, and for a bare [`MAINTENANCE`].
pub fn own_result(c: i64) -> Option<Status> {
    match c {
        6..=9 => from_code(c - MAINTENANCE_COUNTED).ok(),
        10..=13 => from_code(c - MAINTENANCE_EXCLUDED).ok(),
        _ => None,
    }
}

/// How a stored heartbeat code counts in uptime, latency and outage figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// As this result's code (UP, DOWN, DEGRADED or CHANGED).
    Counted(i64),
    /// Inside a maintenance window excluded from uptime: in no figure, and it ends an outage
    /// (the monitor was in maintenance, not down).
    Excluded,
    /// No verdict (PENDING, or a code this build does not know): in no figure, ends nothing.
    NoVerdict,
}

/// The one reading of a heartbeat code for the figures (see [`Tally`]).
pub const fn tally(c: i64) -> Tally {
    match c {
        0..=3 => Tally::Counted(c),
        MAINTENANCE | 10..=13 => Tally::Excluded,
        6..=9 => Tally::Counted(c - MAINTENANCE_COUNTED),
        _ => Tally::NoVerdict,
    }
}

/// Every code a heartbeat of status `s` may be stored with (for a status filter).
pub fn codes_of(s: Status) -> Vec<i64> {
    match s {
        Status::Maintenance => vec![MAINTENANCE, 6, 7, 8, 9, 10, 11, 12, 13],
        s => vec![code(s)],
    }
}

/// The stored code of a heartbeat's status (UP is 0, which SQLite stores in no bytes at all).
pub const fn code(s: Status) -> i64 {
    match s {
        Status::Up => 0,
        Status::Down => 1,
        Status::Degraded => 2,
        Status::Changed => 3,
        Status::Maintenance => 4,
        Status::Pending => 5,
    }
}

/// The status a stored heartbeat code stands for.
pub fn from_code(c: i64) -> Result<Status, CorruptStatus> {
    if matches!(c, 6..=13) {
        return Ok(Status::Maintenance);
    }
    Status::ALL
        .into_iter()
        .find(|s| code(*s) == c)
        .ok_or(CorruptStatus::Code(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_round_trip_and_reject_strangers() {
        for s in Status::ALL {
            assert_eq!(from_text(text(s)), Ok(s));
            assert_eq!(from_code(code(s)), Ok(s));
        }
        assert_eq!(from_text("Up"), Err(CorruptStatus::Text("Up".into())));
        assert_eq!(from_code(14), Err(CorruptStatus::Code(14)));
        assert_eq!((UP, DOWN, DEGRADED), (0, 1, 2));
    }

    #[test]
    fn maintenance_codes_read_as_maintenance_and_tally_their_own_result() {
        assert_eq!(maintenance_code(None), MAINTENANCE);
        assert_eq!(tally(MAINTENANCE), Tally::Excluded);
        for own in [Status::Up, Status::Down, Status::Degraded, Status::Changed] {
            let c = maintenance_code(Some(own));
            assert_eq!(from_code(c), Ok(Status::Maintenance));
            assert_eq!(tally(c), Tally::Counted(code(own)));
            assert!(codes_of(Status::Maintenance).contains(&c));
            assert_eq!(own_result(c), Some(own));
            // Excluded from uptime: in no figure, but the result is kept.
            let x = excluded_code(Some(own));
            assert_eq!(from_code(x), Ok(Status::Maintenance));
            assert_eq!(tally(x), Tally::Excluded);
            assert_eq!(own_result(x), Some(own));
            assert!(codes_of(Status::Maintenance).contains(&x));
        }
        assert_eq!(excluded_code(None), MAINTENANCE);
        assert_eq!(own_result(MAINTENANCE), None);
        assert_eq!(own_result(DOWN), None);
        assert_eq!(tally(PENDING), Tally::NoVerdict);
        assert_eq!(tally(DOWN), Tally::Counted(DOWN));
        assert_eq!(codes_of(Status::Up), vec![UP]);
    }
}
