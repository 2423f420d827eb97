//! Maintenance windows: the rows behind `/maintenance-windows`, the reads the maintenance
//! engine needs (every window, one monitor's windows, a digest to notice other nodes' edits),
//! the query status pages use (every window of their monitors), the announcements made to
//! status page subscribers (`maintenance_announcements`, one row per window and schedule), and the
//! monitor columns the engine writes (`maintenance_until`, `maintenance_excluded`; state, not
//! settings, so they never bump the monitor's `version`).
//!
//! Encodings: timestamps are integer milliseconds; the `recurring` object is four nullable
//! columns (`frequency` NULL for a one-off window); `exclude_from_uptime` is 0/1.

use sqlx::FromRow;
use tocsin_core::maintenance::{Recurring, Window};

use super::{Exec, Versioned};
use crate::clock::from_ms;

#[derive(Debug, Clone, FromRow)]
pub struct WindowRow {
    pub id: String,
    pub workspace_id: String,
    pub monitor_id: String,
    pub title: String,
    pub description: Option<String>,
    pub starts_at: i64,
    pub ends_at: i64,
    pub timezone: String,
    /// `daily`, `weekly`, `monthly`, `cron`; `None` for a one-off window.
    pub frequency: Option<String>,
    pub day_of_week: Option<i64>,
    pub day_of_month: Option<i64>,
    pub expression: Option<String>,
    pub exclude_from_uptime: i64,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl WindowRow {
    /// The stored `recurring` object; `None` for a one-off window.
    pub fn recurring(&self) -> Option<Recurring> {
        let frequency = self.frequency.as_deref()?.parse().ok()?;
        Some(Recurring {
            frequency,
            day_of_week: self.day_of_week,
            day_of_month: self.day_of_month,
            expression: self.expression.clone(),
        })
    }

    /// The window's schedule, or the reasons it does not validate (a stored row always did
    /// when written; a zone later removed from the time-zone database would not).
    pub fn schedule(&self) -> Result<Window, Vec<tocsin_core::maintenance::WindowError>> {
        Window::new(
            from_ms(self.starts_at),
            from_ms(self.ends_at),
            &self.timezone,
            self.recurring().as_ref(),
        )
    }
}

const COLUMNS: &str = "id, workspace_id, monitor_id, title, description, starts_at, ends_at, \
     timezone, frequency, day_of_week, day_of_month, expression, exclude_from_uptime, version, \
     created_at, updated_at";

pub async fn insert<'e>(e: impl Exec<'e>, w: &WindowRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO maintenance_windows (id, workspace_id, monitor_id, title, description, \
         starts_at, ends_at, timezone, frequency, day_of_week, day_of_month, expression, \
         exclude_from_uptime, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(&w.id)
    .bind(&w.workspace_id)
    .bind(&w.monitor_id)
    .bind(&w.title)
    .bind(&w.description)
    .bind(w.starts_at)
    .bind(w.ends_at)
    .bind(&w.timezone)
    .bind(&w.frequency)
    .bind(w.day_of_week)
    .bind(w.day_of_month)
    .bind(&w.expression)
    .bind(w.exclude_from_uptime)
    .bind(w.version)
    .bind(w.created_at)
    .bind(w.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<WindowRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM maintenance_windows WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// A workspace's windows in creation order, of one monitor when `monitor_id` is given.
pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: Option<&str>,
) -> Result<Vec<WindowRow>, sqlx::Error> {
    match monitor_id {
        Some(m) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM maintenance_windows WHERE workspace_id = $1 \
                 AND monitor_id = $2 ORDER BY id"
            );
            sqlx::query_as(&sql).bind(ws).bind(m).fetch_all(e).await
        }
        None => {
            let sql = format!(
                "SELECT {COLUMNS} FROM maintenance_windows WHERE workspace_id = $1 ORDER BY id"
            );
            sqlx::query_as(&sql).bind(ws).fetch_all(e).await
        }
    }
}

/// Writes every editable field, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    w: &WindowRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "maintenance_windows",
        "monitor_id = $1, title = $2, description = $3, starts_at = $4, ends_at = $5, \
         timezone = $6, frequency = $7, day_of_week = $8, day_of_month = $9, expression = $10, \
         exclude_from_uptime = $11, updated_at = $12",
        "workspace_id = $13 AND id = $14",
        expected,
    )
    .run(e, |q| {
        q.bind(&w.monitor_id)
            .bind(&w.title)
            .bind(&w.description)
            .bind(w.starts_at)
            .bind(w.ends_at)
            .bind(&w.timezone)
            .bind(&w.frequency)
            .bind(w.day_of_week)
            .bind(w.day_of_month)
            .bind(&w.expression)
            .bind(w.exclude_from_uptime)
            .bind(w.updated_at)
            .bind(&w.workspace_id)
            .bind(&w.id)
    })
    .await
}

pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM maintenance_windows WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

/// Every window of `monitor_ids` (of workspace `ws`), by monitor then start: what status
/// pages read for their maintenance marks and their scheduled maintenance.
pub async fn of_monitors<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_ids: &[String],
) -> Result<Vec<WindowRow>, sqlx::Error> {
    if monitor_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM maintenance_windows WHERE workspace_id = $1 \
         AND monitor_id IN ({}) ORDER BY monitor_id, starts_at, id",
        super::in_list(2, monitor_ids.len())
    );
    let mut q = sqlx::query_as(&sql).bind(ws);
    for id in monitor_ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

// ---------------------------------------------------------------------------------------------
// The engine's reads and writes (across workspaces: the scheduling node serves them all)

/// Every window that can still be active at or after `now_ms` (recurring, or not yet ended).
pub async fn all_live<'e>(e: impl Exec<'e>, now_ms: i64) -> Result<Vec<WindowRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM maintenance_windows WHERE frequency IS NOT NULL OR ends_at > $1 \
         ORDER BY monitor_id, id"
    );
    sqlx::query_as(&sql).bind(now_ms).fetch_all(e).await
}

/// One monitor's windows.
pub async fn of_monitor<'e>(
    e: impl Exec<'e>,
    monitor_id: &str,
) -> Result<Vec<WindowRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM maintenance_windows WHERE monitor_id = $1 ORDER BY id");
    sqlx::query_as(&sql).bind(monitor_id).fetch_all(e).await
}

/// A one-row digest of every window (count, version sum, newest change), so the engine can
/// tell cheaply whether another node changed something whose notice it missed.
pub async fn digest<'e>(e: impl Exec<'e>) -> Result<(i64, i64, i64), sqlx::Error> {
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(version), 0) AS BIGINT), \
         COALESCE(MAX(updated_at), 0) FROM maintenance_windows",
    )
    .fetch_one(e)
    .await
}

/// The ids of the monitors a window holds at `now_ms` according to their rows.
pub async fn monitors_held<'e>(e: impl Exec<'e>, now_ms: i64) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM monitors WHERE maintenance_until IS NOT NULL AND maintenance_until > $1 \
         ORDER BY id",
    )
    .bind(now_ms)
    .fetch_all(e)
    .await
}

/// Sets (or with `None` clears) the window a monitor is in. Returns rows affected.
pub async fn set_monitor_window<'e>(
    e: impl Exec<'e>,
    monitor_id: &str,
    window: Option<(i64, bool)>,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE monitors SET maintenance_until = $1, maintenance_excluded = $2 WHERE id = $3",
    )
    .bind(window.map(|w| w.0))
    .bind(i64::from(window.is_some_and(|w| w.1)))
    .bind(monitor_id)
    .execute(e)
    .await?
    .rows_affected())
}

/// Records that `window_id`'s schedule `key` was announced; `false` when it already was (by
/// another node, the worker or an earlier write), in which case the caller sends nothing. The
/// insert never fails on the duplicate, so it cannot abort the caller's transaction.
pub async fn mark_announced<'e>(
    e: impl Exec<'e>,
    w: &WindowRow,
    key: &str,
    occurrence_start: i64,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO maintenance_announcements (window_id, schedule_key, workspace_id, \
         occurrence_start, announced_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (window_id, schedule_key) DO NOTHING",
    )
    .bind(&w.id)
    .bind(key)
    .bind(&w.workspace_id)
    .bind(occurrence_start)
    .bind(now_ms)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The conditions of a window that may still be owed an announcement (alias `w`): not over
/// (recurring, or ending after `$1`) and over a monitor some published status page shows.
const OWED: &str = "(w.frequency IS NOT NULL OR w.ends_at > $1) AND EXISTS (\
     SELECT 1 FROM status_page_components c JOIN status_pages p ON p.id = c.status_page_id \
     WHERE c.monitor_id = w.monitor_id AND p.published = 1)";

/// Windows that may still be owed an announcement at `now_ms` (see [`OWED`]), every workspace's.
pub async fn to_announce<'e>(e: impl Exec<'e>, now_ms: i64) -> Result<Vec<WindowRow>, sqlx::Error> {
    let cols = COLUMNS
        .split(',')
        .map(|c| format!("w.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!("SELECT {cols} FROM maintenance_windows w WHERE {OWED} ORDER BY w.id");
    sqlx::query_as(&sql).bind(now_ms).fetch_all(e).await
}

/// The schedule keys already announced of the windows [`to_announce`] reads: (window id, key).
pub async fn announced_keys<'e>(
    e: impl Exec<'e>,
    now_ms: i64,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let sql = format!(
        "SELECT a.window_id, a.schedule_key FROM maintenance_announcements a \
         JOIN maintenance_windows w ON w.id = a.window_id WHERE {OWED}"
    );
    sqlx::query_as(&sql).bind(now_ms).fetch_all(e).await
}
