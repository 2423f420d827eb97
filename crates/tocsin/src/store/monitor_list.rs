//! The reads behind the full monitor list (`GET /monitors`): what changes without an edit,
//! read narrow and fresh for every monitor, and the full rows only of the monitors whose
//! settings the caller has not seen at their current `version`.
//!
//! The narrow read is aggregated by the database into one text value per slice (SQLite
//! `group_concat`, PostgreSQL `string_agg`), so the driver converts one value instead of
//! thousands of rows of several columns each: at 10,000 monitors the per-row conversion, not
//! the database's own work, was most of the cost.

use std::collections::HashMap;

use super::monitors::{filter_sql, MonitorFilter, MonitorRow, COLUMNS};
use super::{Backend, Exec};

/// Monitors per aggregated slice: bounds one query's result while keeping the round trips few.
const SLICE: usize = 5_000;

/// Full rows per `IN (...)` read.
const ROWS_BATCH: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error(transparent)]
    Sqlx(#[from] sqlx::Error),
    #[error("malformed monitor list record {0:?}")]
    Malformed(String),
}

/// One listed monitor's settings version and the state columns the API shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedState {
    pub id: String,
    /// The settings version: a cached rendering of the settings is current while it matches.
    pub version: i64,
    pub status: String,
    pub consecutive_failures: i64,
    pub consecutive_successes: i64,
    pub pending_failure_since: Option<i64>,
    pub last_push_at: Option<i64>,
    pub last_check_at: Option<i64>,
    /// Shown only while the monitor is active (see the monitor view).
    pub stale_since: Option<i64>,
    pub flapping_since: Option<i64>,
}

/// The aggregate of one slice: `id version status failures successes pending push check
/// stale flapping` per
/// monitor (absent timestamps as empty fields), records separated by `;`. None of the fields
/// can hold a space or a `;`: ids are UUIDs, statuses are the service's own words, the rest
/// integers. One `format()` per record (both dialects print NULL as nothing under `%s`) costs
/// the database about half of what a chain of `||` and `CAST`s does.
fn slice_sql(backend: Backend, clauses: &str, limit_placeholder: usize) -> String {
    let record = "format('%s %s %s %s %s %s %s %s %s %s', id, version, status, \
                  consecutive_failures, consecutive_successes, pending_failure_since, \
                  last_push_at, last_check_at, CASE WHEN active = 1 THEN stale_since END, \
                  flapping_since)";
    let aggregate = match backend {
        Backend::Sqlite => "group_concat(r, ';')",
        Backend::Postgres => "string_agg(r, ';')",
    };
    format!(
        "SELECT {aggregate} FROM (SELECT id, {record} AS r FROM monitors m \
         WHERE workspace_id = $1 AND id > $2{clauses} ORDER BY id LIMIT ${limit_placeholder}) s"
    )
}

fn parse_opt(field: &str) -> Option<Option<i64>> {
    if field.is_empty() {
        Some(None)
    } else {
        field.parse().ok().map(Some)
    }
}

fn parse_record(record: &str) -> Option<ListedState> {
    let mut f = record.split(' ');
    let state = ListedState {
        id: f.next()?.to_string(),
        version: f.next()?.parse().ok()?,
        status: f.next()?.to_string(),
        consecutive_failures: f.next()?.parse().ok()?,
        consecutive_successes: f.next()?.parse().ok()?,
        pending_failure_since: parse_opt(f.next()?)?,
        last_push_at: parse_opt(f.next()?)?,
        last_check_at: parse_opt(f.next()?)?,
        stale_since: parse_opt(f.next()?)?,
        flapping_since: parse_opt(f.next()?)?,
    };
    f.next().is_none().then_some(state)
}

/// Every monitor of workspace `ws` that passes `filter`, in id order (the order of
/// [`super::monitors::list_page`]), with its version and state as committed now.
pub async fn states<'e, E>(
    e: E,
    backend: Backend,
    ws: &str,
    filter: &MonitorFilter,
) -> Result<Vec<ListedState>, ListError>
where
    E: Exec<'e> + Copy,
{
    let (clauses, binds) = filter_sql(filter, 3);
    let sql = slice_sql(backend, &clauses, binds.len() + 3);
    let mut out: Vec<ListedState> = Vec::new();
    loop {
        let after = out.last().map(|s| s.id.clone()).unwrap_or_default();
        let mut q = sqlx::query_scalar::<_, Option<String>>(&sql)
            .bind(ws)
            .bind(after);
        for b in &binds {
            q = q.bind(b.as_str());
        }
        let text = q.bind(SLICE as i64).fetch_one(e).await?;
        let mut slice = Vec::with_capacity(SLICE);
        for record in text.as_deref().unwrap_or("").split(';') {
            if record.is_empty() {
                continue;
            }
            slice.push(parse_record(record).ok_or_else(|| ListError::Malformed(record.into()))?);
        }
        // The aggregate carries no ORDER BY (sorting the records inside the database cost
        // more than the rest of the query); the slice itself is the first SLICE ids in order,
        // so sorting it here gives the same list.
        slice.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        let full = slice.len() >= SLICE;
        out.extend(slice);
        if !full {
            return Ok(out);
        }
    }
}

/// The project memberships of the workspace's monitors, each monitor's in project order
/// (the order of [`super::projects::projects_of_monitors`]).
pub async fn memberships<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<HashMap<String, Vec<String>>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT pm.monitor_id, pm.project_id FROM project_monitors pm \
         JOIN projects p ON p.id = pm.project_id \
         JOIN monitors m ON m.id = pm.monitor_id \
         WHERE m.workspace_id = $1 ORDER BY p.position, p.id",
    )
    .bind(ws)
    .fetch_all(e)
    .await?;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for (m, p) in rows {
        out.entry(m).or_default().push(p);
    }
    Ok(out)
}

/// The full rows of the workspace's monitors named in `ids` (in no particular order; ids of
/// monitors deleted meanwhile are simply absent).
pub async fn rows<'e, E>(e: E, ws: &str, ids: &[&str]) -> Result<Vec<MonitorRow>, sqlx::Error>
where
    E: Exec<'e> + Copy,
{
    let mut out = Vec::with_capacity(ids.len());
    for batch in ids.chunks(ROWS_BATCH) {
        let list = (0..batch.len())
            .map(|i| format!("${}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql =
            format!("SELECT {COLUMNS} FROM monitors WHERE workspace_id = $1 AND id IN ({list})");
        let mut q = sqlx::query_as::<_, MonitorRow>(&sql).bind(ws);
        for id in batch {
            q = q.bind(*id);
        }
        out.extend(q.fetch_all(e).await?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_and_reject_garbage() {
        assert_eq!(
            parse_record("abc 3 UP 0 12  1700000000000 1700000000001  1700000000002"),
            Some(ListedState {
                id: "abc".into(),
                version: 3,
                status: "UP".into(),
                consecutive_failures: 0,
                consecutive_successes: 12,
                pending_failure_since: None,
                last_push_at: Some(1_700_000_000_000),
                last_check_at: Some(1_700_000_000_001),
                stale_since: None,
                flapping_since: Some(1_700_000_000_002),
            })
        );
        assert_eq!(parse_record("abc 3 UP 0 12    "), None);
        assert_eq!(parse_record("abc 3 UP 0 12      extra"), None);
        assert_eq!(parse_record("abc x UP 0 12     "), None);
        assert_eq!(parse_record("abc 3 UP 0 12 - 1   "), None);
    }
}
