//! How a [`Status`] is stored: the one mapping between the status type and its two storage
//! forms, the text of `monitors.status` and `monitor_events.{from,to}_status` (the API
//! spelling, [`Status::as_str`]) and the small integer of `heartbeats.status`.
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
        assert_eq!(from_code(6), Err(CorruptStatus::Code(6)));
        assert_eq!((UP, DOWN, DEGRADED), (0, 1, 2));
    }
}
