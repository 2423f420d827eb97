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

use sqlx::{AnyConnection, FromRow};

use super::Exec;
use crate::ids::new_id;

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct EventRow {
    pub id: String,
    pub monitor_id: String,
    pub workspace_id: String,
    pub seq: i64,
    /// `down`, `up`, `degraded`, `changed`, `certificate_expiring`, `maintenance`, `pending`.
    pub kind: String,
    /// The stored status spelling (`UP`, `DOWN`, ...).
    pub from_status: String,
    pub to_status: String,
    pub message: Option<String>,
    /// 1 when notification channels should hear about it.
    pub alert: i64,
    pub created_at: i64,
    /// The monitor's name when the event was appended (for the log line; not stored).
    #[sqlx(default)]
    pub monitor_name: String,
}

/// What a caller appends; the id and `seq` are allocated here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent<'a> {
    pub monitor_id: &'a str,
    pub kind: &'a str,
    pub from_status: &'a str,
    pub to_status: &'a str,
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
        kind: e.kind.to_string(),
        from_status: e.from_status.to_string(),
        to_status: e.to_status.to_string(),
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
    .bind(&row.kind)
    .bind(&row.from_status)
    .bind(&row.to_status)
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
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .bind(after_seq)
        .bind(limit)
        .fetch_all(e)
        .await
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
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .bind(before_seq.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(e)
        .await
}
