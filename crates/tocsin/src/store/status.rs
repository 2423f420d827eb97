//! How a [`Status`] is stored: the one mapping between the status type and its two storage
//! forms, the text of `monitors.status` and `monitor_events.{from,to}_status` (the API
//! spelling, [`Status::as_str`]) and the small integer of `heartbeats.status`.
//!
//! A heartbeat taken inside a maintenance window reads as `MAINTENANCE`, but its code also
//! keeps how it counts in uptime figures: [`MAINTENANCE`] (4) when the window is excluded from
//! uptime (it counts in nothing), or `MAINTENANCE_COUNTED + own` (6 to 9) when it is not and
//! the check's own result (UP, DOWN, DEGRADED, CHANGED) counts. [`tally`] is the one reading of
//! a code for the figures; [`codes_of`] the codes a status filter matches.
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
        MAINTENANCE => Tally::Excluded,
        6..=9 => Tally::Counted(c - MAINTENANCE_COUNTED),
        _ => Tally::NoVerdict,
    }
}

/// Every code a heartbeat of status `s` may be stored with (for a status filter).
pub fn codes_of(s: Status) -> Vec<i64> {
    match s {
        Status::Maintenance => vec![MAINTENANCE, 6, 7, 8, 9],
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
    if matches!(c, 6..=9) {
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
        assert_eq!(from_code(10), Err(CorruptStatus::Code(10)));
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
        }
        assert_eq!(tally(PENDING), Tally::NoVerdict);
        assert_eq!(tally(DOWN), Tally::Counted(DOWN));
        assert_eq!(codes_of(Status::Up), vec![UP]);
    }
}
