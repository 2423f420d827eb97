//! Alerts: one row per outage of a monitor, from the DOWN that opened it to the recovery that
//! resolved it. `open_key` holds the monitor id while the alert is not resolved (UNIQUE), so
//! the database itself keeps "at most one open alert per monitor"; opening is an
//! `INSERT ... ON CONFLICT DO NOTHING` on it. `next_escalation_at` is the durable escalation
//! timer the escalation worker walks (`alerting::escalation`).

use sqlx::{AnyConnection, FromRow};

use super::Exec;

pub const OPEN: &str = "OPEN";
pub const ACKNOWLEDGED: &str = "ACKNOWLEDGED";
pub const RESOLVED: &str = "RESOLVED";

/// One stored alert.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct AlertRow {
    pub id: String,
    pub workspace_id: String,
    pub monitor_id: String,
    /// `OPEN`, `ACKNOWLEDGED`, `RESOLVED`.
    pub status: String,
    pub cause: String,
    /// The monitor's policy when the alert opened (the steps are read when they fire).
    pub escalation_policy_id: Option<String>,
    /// The `stepOrder` of the last step reached; `None` before the first.
    pub escalation_step: Option<i64>,
    /// When the next step fires (ms); `None` after the last, and once acknowledged or resolved.
    pub next_escalation_at: Option<i64>,
    pub opened_at: i64,
    pub acknowledged_at: Option<i64>,
    pub acknowledged_by: Option<String>,
    pub resolved_at: Option<i64>,
    pub updated_at: i64,
    /// Starts at 1 and grows by one with every change (the `ETag` of `GET /alerts/{id}`).
    pub version: i64,
    /// The alert of a dependency's outage this one is suppressed under (`rootCauseAlertId`);
    /// `None` for a root (`store::dependencies`).
    pub root_cause_alert_id: Option<String>,
}

pub const COLUMNS: &str = "id, workspace_id, monitor_id, status, cause, escalation_policy_id, \
     escalation_step, next_escalation_at, opened_at, acknowledged_at, acknowledged_by, \
     resolved_at, updated_at, version, root_cause_alert_id";

/// Opens `a` unless the monitor already has an unresolved alert: true when it was inserted.
pub async fn open(conn: &mut AnyConnection, a: &AlertRow) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO alerts (id, workspace_id, monitor_id, status, cause, open_key, \
         escalation_policy_id, escalation_step, next_escalation_at, opened_at, updated_at, \
         root_cause_alert_id) \
         VALUES ($1, $2, $3, $4, $5, $3, $6, $7, $8, $9, $9, $10) ON CONFLICT (open_key) DO NOTHING",
    )
    .bind(&a.id)
    .bind(&a.workspace_id)
    .bind(&a.monitor_id)
    .bind(&a.status)
    .bind(&a.cause)
    .bind(&a.escalation_policy_id)
    .bind(a.escalation_step)
    .bind(a.next_escalation_at)
    .bind(a.opened_at)
    .bind(&a.root_cause_alert_id)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The monitor's unresolved alert (open or acknowledged), if any.
pub async fn unresolved_for_monitor<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Option<AlertRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM alerts WHERE workspace_id = $1 AND open_key = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .fetch_optional(e)
        .await
}

/// Resolves an unresolved alert: frees the monitor's `open_key` and stops escalation.
pub async fn resolve<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE alerts SET status = $1, open_key = NULL, resolved_at = $2, \
         next_escalation_at = NULL, updated_at = $2, version = version + 1 \
         WHERE id = $3 AND status <> $1",
    )
    .bind(RESOLVED)
    .bind(now)
    .bind(id)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// Acknowledges an `OPEN` alert of the workspace (stops escalation), if it is still at
/// `expected` version when one is given; 0 rows when it is not open any more or has changed.
pub async fn acknowledge<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    by: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let mut sql = String::from(
        "UPDATE alerts SET status = $1, acknowledged_at = $2, acknowledged_by = $3, \
         next_escalation_at = NULL, updated_at = $2, version = version + 1 \
         WHERE workspace_id = $4 AND id = $5 AND status = $6",
    );
    if expected.is_some() {
        sql.push_str(" AND version = $7");
    }
    let mut query = sqlx::query(&sql)
        .bind(ACKNOWLEDGED)
        .bind(now)
        .bind(by)
        .bind(ws)
        .bind(id)
        .bind(OPEN);
    if let Some(v) = expected {
        query = query.bind(v);
    }
    let done = query.execute(e).await?;
    Ok(done.rows_affected())
}

/// One alert of one workspace.
pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<AlertRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM alerts WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// One alert by id, whatever its workspace: for the signed acknowledge link, whose signature
/// is the credential. Never use it on behalf of a caller.
pub async fn get_by_id<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<AlertRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM alerts WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// Filters of the alert list.
#[derive(Debug, Clone, Default)]
pub struct AlertFilter {
    /// `OPEN`, `ACKNOWLEDGED` or `RESOLVED`.
    pub status: Option<&'static str>,
    pub monitor_id: Option<String>,
    /// Only roots: alerts not suppressed under a dependency's (`?rootOnly=true`).
    pub root_only: bool,
}

/// A workspace's alerts, newest first, older than `before` ("" for the first page), at most
/// `limit`. Ids grow with time, so a page never shifts when alerts open.
pub async fn page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    filter: &AlertFilter,
    before: &str,
    limit: i64,
) -> Result<Vec<AlertRow>, sqlx::Error> {
    let mut sql =
        format!("SELECT {COLUMNS} FROM alerts WHERE workspace_id = $1 AND ($2 = '' OR id < $2)");
    let mut n = 3;
    if filter.status.is_some() {
        sql.push_str(&format!(" AND status = ${n}"));
        n += 1;
    }
    if filter.monitor_id.is_some() {
        sql.push_str(&format!(" AND monitor_id = ${n}"));
        n += 1;
    }
    if filter.root_only {
        sql.push_str(" AND root_cause_alert_id IS NULL");
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${n}"));
    let mut q = sqlx::query_as(&sql).bind(ws).bind(before);
    if let Some(s) = filter.status {
        q = q.bind(s);
    }
    if let Some(m) = &filter.monitor_id {
        q = q.bind(m.clone());
    }
    q.bind(limit).fetch_all(e).await
}

/// Open (not acknowledged) alerts whose next escalation step is due at `now`, earliest
/// first, at most `limit`.
pub async fn due_escalations<'e>(
    e: impl Exec<'e>,
    now: i64,
    limit: i64,
) -> Result<Vec<AlertRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM alerts WHERE next_escalation_at <= $1 AND status = $2 \
         ORDER BY next_escalation_at, id LIMIT $3"
    );
    sqlx::query_as(&sql)
        .bind(now)
        .bind(OPEN)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// Moves an open alert to `step` with the next timer `next`, only if its timer is still
/// `fired` (a step fires once even if two workers raced, or an acknowledgement came first).
pub async fn advance<'e>(
    e: impl Exec<'e>,
    id: &str,
    fired: i64,
    step: Option<i64>,
    next: Option<i64>,
    now: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE alerts SET escalation_step = $1, next_escalation_at = $2, updated_at = $3, \
         version = version + 1 \
         WHERE id = $4 AND status = $5 AND next_escalation_at = $6",
    )
    .bind(step)
    .bind(next)
    .bind(now)
    .bind(id)
    .bind(OPEN)
    .bind(fired)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}
