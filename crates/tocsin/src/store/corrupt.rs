//! A stored value this build cannot read: the one error for a text column whose value no enum
//! of the service spells (an unknown status, role, capability, event kind, channel type ...),
//! and the one place such a value is logged and counted.
//!
//! Every enum kept in a text column parses with a `FromStr` that fails on a value it does not
//! know ([`UnknownValue`]), never with a default: a guessed `PENDING`, `member` or `DRAFT` would
//! hide an outage, take a right away or publish nothing without anyone noticing. Where a row is
//! mapped, [`parse`] turns that failure into a [`CorruptRow`] naming the table, the row's id and
//! the column; building one logs it (`error`) and counts it in
//! `tocsin_corrupt_rows_total{table,column}`, so each corrupt read is reported exactly once.
//!
//! What a read does with a corrupt row (the decision every reader follows):
//! - **Lists** (members, alerts, incidents, events, heartbeats, a status page's incidents,
//!   the live stream) skip the row: it is logged and counted, the rest of the list is answered. One bad
//!   row must not make a page someone needs fail until an operator repairs the database.
//! - **Single-record reads and writes that start from the record** (get, update, remove one
//!   member, alert, incident or monitor) fail with 500 and the envelope code `INTERNAL`: the
//!   record cannot be shown or changed without guessing what it says. So does `GET /monitors`
//!   over a monitor whose stored status is unknown (its shared builds hold whole lists).
//! - **Workers** (alerting reacting to an event, the delivery worker) log, count and skip the
//!   row; a delivery whose event or channel type is unknown fails for good with that reason.
//! - **Credentials** (an API key whose stored capability or creator role is unknown) are
//!   refused, as a revoked key is: a key must never quietly do less, or more, than it says.

use std::str::FromStr;

/// Counts corrupt values read, by table and column.
pub const METRIC: &str = "tocsin_corrupt_rows_total";

/// A text that none of an enum's values spells.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {value:?}")]
pub struct UnknownValue {
    /// What the text should have been (`role`, `alert status` ...).
    pub kind: &'static str,
    pub value: String,
}

/// A stored value that cannot be read, and where it is. Building one reports it (see the
/// module documentation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt row: {table}.{column} of row {id} holds {value:?}, which this build cannot read")]
pub struct CorruptRow {
    pub table: &'static str,
    /// The row's id; for a table keyed by two columns (`memberships`), both joined by `/`
    /// (`workspace/user`).
    pub id: String,
    pub column: &'static str,
    pub value: String,
}

impl CorruptRow {
    /// The corrupt value `value` in `table.column` of row `id`: logged and counted here.
    pub fn new(
        table: &'static str,
        id: impl Into<String>,
        column: &'static str,
        value: impl Into<String>,
    ) -> CorruptRow {
        let e = CorruptRow {
            table,
            id: id.into(),
            column,
            value: value.into(),
        };
        metrics::counter!(METRIC, "table" => table, "column" => column).increment(1);
        tracing::error!(table, row = %e.id, column, value = %e.value,
            "stored value cannot be read");
        e
    }
}

/// Parses the value of `table.column` of row `id`; an unknown value is a (reported)
/// [`CorruptRow`].
pub fn parse<T: FromStr>(
    table: &'static str,
    id: &str,
    column: &'static str,
    value: &str,
) -> Result<T, CorruptRow> {
    value
        .parse()
        .map_err(|_| CorruptRow::new(table, id, column, value))
}

/// For a list read: the rows that map, without the corrupt ones (already reported).
pub fn readable<T>(rows: impl IntoIterator<Item = Result<T, CorruptRow>>) -> Vec<T> {
    rows.into_iter().filter_map(Result::ok).collect()
}

/// Implements `FromStr` for an enum with `ALL` and `as_str`: the inverse of `as_str`, and an
/// [`UnknownValue`] for anything else.
macro_rules! stored_text {
    ($ty:ty, $kind:literal) => {
        impl std::str::FromStr for $ty {
            type Err = $crate::store::corrupt::UnknownValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                <$ty>::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| $crate::store::corrupt::UnknownValue {
                        kind: $kind,
                        value: s.to_string(),
                    })
            }
        }
    };
}
pub(crate) use stored_text;

/// For the unit tests of each stored enum: every value round-trips through its text, and texts
/// none spells (an unknown word, a differently cased one, the empty text) are errors.
#[cfg(test)]
pub fn assert_round_trip<T>(all: &[T], as_str: fn(T) -> &'static str)
where
    T: FromStr<Err = UnknownValue> + Copy + PartialEq + std::fmt::Debug,
{
    for v in all {
        assert_eq!(as_str(*v).parse::<T>(), Ok(*v));
        let shouted = format!("{}X", as_str(*v).to_uppercase());
        assert!(shouted.parse::<T>().is_err(), "{shouted:?} parsed");
    }
    for stranger in ["", "garbage", " "] {
        let e = stranger.parse::<T>().unwrap_err();
        assert_eq!(e.value, stranger);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_row_names_its_place() {
        let e = parse::<tocsin_core::Status>("monitors", "m1", "status", "SIDEWAYS").unwrap_err();
        assert_eq!(
            e,
            CorruptRow {
                table: "monitors",
                id: "m1".into(),
                column: "status",
                value: "SIDEWAYS".into()
            }
        );
        assert!(e.to_string().contains("monitors.status of row m1"));
        assert_eq!(
            parse::<tocsin_core::Status>("monitors", "m1", "status", "UP"),
            Ok(tocsin_core::Status::Up)
        );
        assert_eq!(readable([Ok(1), Err(e), Ok(2)]), vec![1, 2]);
    }
}
