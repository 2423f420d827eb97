//! Monitor events: the durable, per-monitor ordered record of status changes that alerting,
//! notifications and status pages consume.
//!
//! An event is appended in the same transaction as the state update it describes (see
//! the one transition path in monitoring), so a committed status always has its event and an event never
//! describes a status that was rolled back. Each monitor's events are numbered 1, 2, 3 ... by
//! `seq`, allocated from `monitors.event_seq` with an `UPDATE ... RETURNING`: the row lock that
//! takes (PostgreSQL) or the single writer (SQLite) serializes concurrent appends for one
//! monitor, so two events can never share a number. Consumers read in `seq` order with
//! [`list_for_monitor`] and remember the last `seq` they handled.

//!
//! Rows are typed: the kind is an [`EventKind`] and the statuses are [`Status`] values, parsed
//! once where a row is read ([`typed`]). A row whose kind or status this build cannot read is
//! logged and counted (see [`super::corrupt`]) and left out of the read, as every list read
//! does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sqlx::{AnyConnection, FromRow};
use tocsin_core::Status;

use super::corrupt::{self, CorruptRow};
use super::Exec;
use crate::ids::new_id;

/// What a status change was about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "MonitorEventKind")]
pub enum EventKind {
    Down,
    Up,
    Degraded,
    Changed,
    CertificateExpiring,
    Maintenance,
    Pending,
    /// Nobody is checking the monitor (see the monitor's `staleSince`); `from` and `to` are
    /// its unchanged status.
    Stale,
    /// Check results reach a stale monitor again.
    Fresh,
    /// The monitor started flapping (see its `flapDetection`): its changes page nobody until
    /// it settles; `from` and `to` are its status then.
    Flapping,
    /// The monitor stopped flapping; `to` is the status it settled on.
    Stable,
}

impl EventKind {
    pub const ALL: [EventKind; 11] = [
        EventKind::Down,
        EventKind::Up,
        EventKind::Degraded,
        EventKind::Changed,
        EventKind::CertificateExpiring,
        EventKind::Maintenance,
        EventKind::Pending,
        EventKind::Stale,
        EventKind::Fresh,
        EventKind::Flapping,
        EventKind::Stable,
    ];

    /// The stored (and API) spelling, the same as the serde form.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Down => "down",
            EventKind::Up => "up",
            EventKind::Degraded => "degraded",
            EventKind::Changed => "changed",
            EventKind::CertificateExpiring => "certificate_expiring",
            EventKind::Maintenance => "maintenance",
            EventKind::Pending => "pending",
            EventKind::Stale => "stale",
            EventKind::Fresh => "fresh",
            EventKind::Flapping => "flapping",
            EventKind::Stable => "stable",
        }
    }
}

corrupt::stored_text!(EventKind, "event kind");

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds of the state machine's status changes are the first of the stored kinds.
impl From<tocsin_core::EventKind> for EventKind {
    fn from(k: tocsin_core::EventKind) -> EventKind {
        match k {
            tocsin_core::EventKind::Down => EventKind::Down,
            tocsin_core::EventKind::Up => EventKind::Up,
            tocsin_core::EventKind::Degraded => EventKind::Degraded,
            tocsin_core::EventKind::Changed => EventKind::Changed,
            tocsin_core::EventKind::Maintenance => EventKind::Maintenance,
            tocsin_core::EventKind::Pending => EventKind::Pending,
        }
    }
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub id: String,
    pub monitor_id: String,
    pub workspace_id: String,
    pub seq: i64,
    pub kind: EventKind,
    pub from_status: Status,
    pub to_status: Status,
    pub message: Option<String>,
    /// 1 when notification channels should hear about it.
    pub alert: i64,
    pub created_at: i64,
    /// The monitor's name when the event was appended (for the log line; not stored).
    pub monitor_name: String,
}

/// An event as the table holds it, before [`typed`] reads its kind and statuses.
#[derive(Debug, Clone, FromRow)]
pub struct StoredEvent {
    pub id: String,
    pub monitor_id: String,
    pub workspace_id: String,
    pub seq: i64,
    pub kind: String,
    pub from_status: String,
    pub to_status: String,
    pub message: Option<String>,
    pub alert: i64,
    pub created_at: i64,
}

/// The typed row of a stored event; an unknown kind or status is a (reported) [`CorruptRow`].
pub fn typed(r: StoredEvent) -> Result<EventRow, CorruptRow> {
    const T: &str = "monitor_events";
    Ok(EventRow {
        kind: corrupt::parse(T, &r.id, "kind", &r.kind)?,
        from_status: corrupt::parse(T, &r.id, "from_status", &r.from_status)?,
        to_status: corrupt::parse(T, &r.id, "to_status", &r.to_status)?,
        id: r.id,
        monitor_id: r.monitor_id,
        workspace_id: r.workspace_id,
        seq: r.seq,
        message: r.message,
        alert: r.alert,
        created_at: r.created_at,
        monitor_name: String::new(),
    })
}

/// The rows of a list read that this build can read (the others are reported and skipped).
pub fn typed_rows(rows: Vec<StoredEvent>) -> Vec<EventRow> {
    corrupt::readable(rows.into_iter().map(typed))
}

/// What a caller appends; the id and `seq` are allocated here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent<'a> {
    pub monitor_id: &'a str,
    pub kind: EventKind,
    pub from_status: Status,
    pub to_status: Status,
    pub message: Option<&'a str>,
    pub alert: bool,
    pub created_at: i64,
}

const COLUMNS: &str =
    "id, monitor_id, workspace_id, seq, kind, from_status, to_status, message, alert, created_at";

/// Appends an event (call inside the transaction that writes the state it describes). Returns
/// the stored row, or `None` when the monitor no longer exists.
pub async fn append(
    conn: &mut AnyConnection,
    e: &NewEvent<'_>,
) -> Result<Option<EventRow>, sqlx::Error> {
    let allocated: Option<(i64, String, String)> = sqlx::query_as(
        "UPDATE monitors SET event_seq = event_seq + 1 WHERE id = $1 \
         RETURNING event_seq, workspace_id, name",
    )
    .bind(e.monitor_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((seq, workspace_id, monitor_name)) = allocated else {
        return Ok(None);
    };
    let row = EventRow {
        id: new_id(),
        monitor_id: e.monitor_id.to_string(),
        workspace_id,
        seq,
        kind: e.kind,
        from_status: e.from_status,
        to_status: e.to_status,
        message: e.message.map(str::to_string),
        alert: i64::from(e.alert),
        created_at: e.created_at,
        monitor_name,
    };
    sqlx::query(
        "INSERT INTO monitor_events (id, monitor_id, workspace_id, seq, kind, from_status, \
         to_status, message, alert, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&row.id)
    .bind(&row.monitor_id)
    .bind(&row.workspace_id)
    .bind(row.seq)
    .bind(row.kind.as_str())
    .bind(row.from_status.as_str())
    .bind(row.to_status.as_str())
    .bind(&row.message)
    .bind(row.alert)
    .bind(row.created_at)
    .execute(&mut *conn)
    .await?;
    Ok(Some(row))
}

/// A monitor's events with `seq > after_seq`, oldest first, at most `limit`: the consumer's
/// read (alerting resumes from the last `seq` it handled).
pub async fn list_for_monitor<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<EventRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM monitor_events WHERE workspace_id = $1 AND monitor_id = $2 \
         AND seq > $3 ORDER BY seq LIMIT $4"
    );
    let rows = sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .bind(after_seq)
        .bind(limit)
        .fetch_all(e)
        .await?;
    Ok(typed_rows(rows))
}

/// A monitor's events with `seq < before_seq` (`None`: from the newest), newest first, at most
/// `limit`: the API's read.
pub async fn list_recent<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
    before_seq: Option<i64>,
    limit: i64,
) -> Result<Vec<EventRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM monitor_events WHERE workspace_id = $1 AND monitor_id = $2 \
         AND seq < $3 ORDER BY seq DESC LIMIT $4"
    );
    let rows = sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .bind(before_seq.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(e)
        .await?;
    Ok(typed_rows(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_and_strangers_are_errors() {
        corrupt::assert_round_trip(&EventKind::ALL, EventKind::as_str);
        for k in EventKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }

    #[test]
    fn a_row_with_an_unknown_kind_or_status_is_corrupt() {
        let row = StoredEvent {
            id: "e1".into(),
            monitor_id: "m1".into(),
            workspace_id: "w1".into(),
            seq: 1,
            kind: "down".into(),
            from_status: "UP".into(),
            to_status: "DOWN".into(),
            message: None,
            alert: 1,
            created_at: 5,
        };
        let ok = typed(row.clone()).unwrap();
        assert_eq!(
            (ok.kind, ok.from_status, ok.to_status),
            (EventKind::Down, Status::Up, Status::Down)
        );
        let bad = StoredEvent {
            to_status: "SIDEWAYS".into(),
            ..row.clone()
        };
        let e = typed(bad).unwrap_err();
        assert_eq!(
            (e.table, e.column, e.id.as_str()),
            ("monitor_events", "to_status", "e1")
        );
        let unknown = StoredEvent {
            kind: "exploded".into(),
            ..row
        };
        assert_eq!(typed_rows(vec![unknown]), vec![]);
    }
}
