//! The live stream's reads: what changed in the durable logs since a node last looked (every
//! workspace at once, since one reader feeds the node's fan-out), a workspace's monitor events
//! after a client's cursor (resume), and which workspace a monitor belongs to.
//!
//! Monitor events are ordered by their id (UUIDv7, so by creation time); alerts and incidents
//! by `updated_at`. Each read has an index (migration 0015).

use sqlx::FromRow;

// Whole alert rows: exactly the columns `AlertRow` has.
use super::alerts::{AlertRow, COLUMNS as ALERT_COLUMNS};
use super::corrupt::CorruptRow;
use super::events::{typed, EventRow};
use super::Exec;

const EVENT_COLUMNS: &str =
    "id, monitor_id, workspace_id, seq, kind, from_status, to_status, message, alert, created_at";

/// What the stream shows of an incident.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct IncidentHead {
    pub id: String,
    pub workspace_id: String,
    pub status_page_id: String,
    pub status: String,
    pub title: String,
    pub updated_at: i64,
}

/// The newest monitor event id of every workspace (`None`: the log is empty).
pub async fn newest_event_id<'e>(e: impl Exec<'e>) -> Result<Option<String>, sqlx::Error> {
    let row: Option<(Option<String>,)> = sqlx::query_as("SELECT MAX(id) FROM monitor_events")
        .fetch_optional(e)
        .await?;
    Ok(row.and_then(|r| r.0))
}

/// Monitor events of every workspace with an id after `after`, oldest first, at most `limit`.
/// A row this build cannot read comes back as its (reported) error, so that the reader's
/// cursor still moves past it and a full page is still known to be full.
pub async fn events_after<'e>(
    e: impl Exec<'e>,
    after: &str,
    limit: i64,
) -> Result<Vec<Result<EventRow, CorruptRow>>, sqlx::Error> {
    let sql =
        format!("SELECT {EVENT_COLUMNS} FROM monitor_events WHERE id > $1 ORDER BY id LIMIT $2");
    let rows = sqlx::query_as(&sql)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await?;
    Ok(rows.into_iter().map(typed).collect())
}

/// A workspace's monitor events with an id after `after`, oldest first, at most `limit`.
pub async fn workspace_events_after<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<Result<EventRow, CorruptRow>>, sqlx::Error> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM monitor_events WHERE workspace_id = $1 AND id > $2 \
         ORDER BY id LIMIT $3"
    );
    let rows = sqlx::query_as(&sql)
        .bind(ws)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await?;
    Ok(rows.into_iter().map(typed).collect())
}

/// The latest `updated_at` of alerts and of incidents (0 when none).
pub async fn newest_updates<'e>(e: impl Exec<'e> + Copy) -> Result<(i64, i64), sqlx::Error> {
    let (a,): (Option<i64>,) = sqlx::query_as("SELECT MAX(updated_at) FROM alerts")
        .fetch_one(e)
        .await?;
    let (i,): (Option<i64>,) = sqlx::query_as("SELECT MAX(updated_at) FROM incidents")
        .fetch_one(e)
        .await?;
    Ok((a.unwrap_or(0), i.unwrap_or(0)))
}

/// Alerts of every workspace updated after `since`, oldest update first.
pub async fn alerts_since<'e>(
    e: impl Exec<'e>,
    since: i64,
    limit: i64,
) -> Result<Vec<AlertRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {ALERT_COLUMNS} FROM alerts WHERE updated_at > $1 ORDER BY updated_at, id \
         LIMIT $2"
    );
    sqlx::query_as(&sql)
        .bind(since)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// Incidents of every workspace updated after `since`, oldest update first.
pub async fn incidents_since<'e>(
    e: impl Exec<'e>,
    since: i64,
    limit: i64,
) -> Result<Vec<IncidentHead>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, workspace_id, status_page_id, status, title, updated_at FROM incidents \
         WHERE updated_at > $1 ORDER BY updated_at, id LIMIT $2",
    )
    .bind(since)
    .bind(limit)
    .fetch_all(e)
    .await
}

/// The workspace of each of `monitor_ids` that exists.
pub async fn workspaces_of<'e>(
    e: impl Exec<'e>,
    monitor_ids: &[String],
) -> Result<Vec<(String, String)>, sqlx::Error> {
    if monitor_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, workspace_id FROM monitors WHERE id IN ({})",
        super::in_list(1, monitor_ids.len())
    );
    let mut q = sqlx::query_as(&sql);
    for id in monitor_ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

/// Every monitor's workspace (the fan-out's map, loaded when the first stream opens).
pub async fn all_workspaces<'e>(e: impl Exec<'e>) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT id, workspace_id FROM monitors")
        .fetch_all(e)
        .await
}
