//! Incidents and their updates: the rows behind `/incidents`, the two facts about status pages
//! the incident operations check (does this page exist in the workspace, which components does
//! it have), and the read the public pages use ([`public_for_page`]).
//!
//! Encodings: timestamps are integer milliseconds; `affected_component_ids` is a JSON array of
//! strings; `auto_generated` and `system_generated` are 0/1; `status`, `severity` and
//! `visibility` are the API's upper-case words. Every workspace query is scoped by workspace
//! id; [`public_for_page`] is keyed by page id (a page belongs to one workspace, and the
//! public side knows the page, not the workspace).

use std::collections::HashMap;

use sqlx::FromRow;

use super::{Exec, Versioned};

/// `visibility` values the public reads look for.
pub const PUBLISHED: &str = "PUBLISHED";
pub const SCHEDULED: &str = "SCHEDULED";

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct IncidentRow {
    pub id: String,
    pub workspace_id: String,
    pub status_page_id: String,
    pub title: String,
    /// INVESTIGATING, IDENTIFIED, MONITORING or RESOLVED.
    pub status: String,
    /// NONE, MINOR, MAJOR or CRITICAL.
    pub severity: String,
    /// DRAFT, PUBLISHED or SCHEDULED.
    pub visibility: String,
    /// JSON array of component ids.
    pub affected_component_ids: String,
    pub source_monitor_id: Option<String>,
    pub auto_generated: i64,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub resolved_at: Option<i64>,
    pub published_at: Option<i64>,
    pub scheduled_for: Option<i64>,
    pub archived_at: Option<i64>,
}

impl IncidentRow {
    /// The affected component ids (an unreadable column reads as none).
    pub fn component_ids(&self) -> Vec<String> {
        serde_json::from_str(&self.affected_component_ids).unwrap_or_default()
    }

    pub fn set_component_ids(&mut self, ids: &[String]) {
        self.affected_component_ids = encode_ids(ids);
    }
}

/// The column text of a list of ids.
pub fn encode_ids(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct UpdateRow {
    pub id: String,
    pub incident_id: String,
    pub workspace_id: String,
    pub message: String,
    pub status: String,
    pub system_generated: i64,
    pub created_at: i64,
    pub updated_at: Option<i64>,
}

const COLUMNS: &str = "id, workspace_id, status_page_id, title, status, severity, visibility, \
     affected_component_ids, source_monitor_id, auto_generated, version, created_at, updated_at, \
     resolved_at, published_at, scheduled_for, archived_at";

const UPDATE_COLUMNS: &str =
    "id, incident_id, workspace_id, message, status, system_generated, created_at, updated_at";

// ---------------------------------------------------------------------------------------------
// Status pages, as far as incidents need them

/// Whether status page `page_id` exists in workspace `ws` (another workspace's page does not).
pub async fn page_exists<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
) -> Result<bool, sqlx::Error> {
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM status_pages WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(page_id)
            .fetch_one(e)
            .await?;
    Ok(n > 0)
}

/// The component ids of page `page_id` of workspace `ws`.
pub async fn component_ids<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM status_page_components WHERE workspace_id = $1 AND status_page_id = $2 \
         ORDER BY position, id",
    )
    .bind(ws)
    .bind(page_id)
    .fetch_all(e)
    .await
}

// ---------------------------------------------------------------------------------------------
// Incidents

pub async fn insert<'e>(e: impl Exec<'e>, i: &IncidentRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO incidents (id, workspace_id, status_page_id, title, status, severity, \
         visibility, affected_component_ids, source_monitor_id, auto_generated, version, \
         created_at, updated_at, resolved_at, published_at, scheduled_for, archived_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(&i.id)
    .bind(&i.workspace_id)
    .bind(&i.status_page_id)
    .bind(&i.title)
    .bind(&i.status)
    .bind(&i.severity)
    .bind(&i.visibility)
    .bind(&i.affected_component_ids)
    .bind(&i.source_monitor_id)
    .bind(i.auto_generated)
    .bind(i.version)
    .bind(i.created_at)
    .bind(i.updated_at)
    .bind(i.resolved_at)
    .bind(i.published_at)
    .bind(i.scheduled_for)
    .bind(i.archived_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<IncidentRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM incidents WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// What `GET /incidents` filters on; `None` matches everything.
#[derive(Debug, Clone, Default)]
pub struct IncidentFilter {
    pub status_page_id: Option<String>,
    pub status: Option<String>,
    pub visibility: Option<String>,
}

impl IncidentFilter {
    /// `WHERE ...` for workspace `$1` and the filters set, numbered from `$2`, and the values to
    /// bind after the workspace id, in order.
    fn clause(&self) -> (String, Vec<&str>) {
        let mut sql = String::from("WHERE workspace_id = $1");
        let mut values = Vec::new();
        for (column, value) in [
            ("status_page_id", &self.status_page_id),
            ("status", &self.status),
            ("visibility", &self.visibility),
        ] {
            if let Some(v) = value {
                values.push(v.as_str());
                sql.push_str(&format!(" AND {column} = ${}", values.len() + 1));
            }
        }
        (sql, values)
    }
}

/// One page of a workspace's incidents matching `filter`, newest first.
pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    filter: &IncidentFilter,
    limit: i64,
    offset: i64,
) -> Result<Vec<IncidentRow>, sqlx::Error> {
    let (clause, values) = filter.clause();
    let n = values.len() + 2;
    let sql = format!(
        "SELECT {COLUMNS} FROM incidents {clause} ORDER BY created_at DESC, id DESC \
         LIMIT ${n} OFFSET ${}",
        n + 1
    );
    let mut q = sqlx::query_as(&sql).bind(ws);
    for v in values {
        q = q.bind(v);
    }
    q.bind(limit).bind(offset).fetch_all(e).await
}

/// How many of a workspace's incidents match `filter`.
pub async fn count<'e>(
    e: impl Exec<'e>,
    ws: &str,
    filter: &IncidentFilter,
) -> Result<i64, sqlx::Error> {
    let (clause, values) = filter.clause();
    let sql = format!("SELECT COUNT(*) FROM incidents {clause}");
    let mut q = sqlx::query_scalar(&sql).bind(ws);
    for v in values {
        q = q.bind(v);
    }
    q.fetch_one(e).await
}

/// Writes every mutable field, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    i: &IncidentRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "incidents",
        "title = $1, status = $2, severity = $3, visibility = $4, affected_component_ids = $5, \
         updated_at = $6, resolved_at = $7, published_at = $8, scheduled_for = $9, \
         archived_at = $10",
        "workspace_id = $11 AND id = $12",
        expected,
    )
    .run(e, |q| {
        q.bind(&i.title)
            .bind(&i.status)
            .bind(&i.severity)
            .bind(&i.visibility)
            .bind(&i.affected_component_ids)
            .bind(i.updated_at)
            .bind(i.resolved_at)
            .bind(i.published_at)
            .bind(i.scheduled_for)
            .bind(i.archived_at)
            .bind(&i.workspace_id)
            .bind(&i.id)
    })
    .await
}

/// Deletes an incident; its updates and postmortems go with it (foreign keys cascade).
pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM incidents WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

// ---------------------------------------------------------------------------------------------
// Updates

pub async fn insert_update<'e>(e: impl Exec<'e>, u: &UpdateRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO incident_updates (id, incident_id, workspace_id, message, status, \
         system_generated, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&u.id)
    .bind(&u.incident_id)
    .bind(&u.workspace_id)
    .bind(&u.message)
    .bind(&u.status)
    .bind(u.system_generated)
    .bind(u.created_at)
    .bind(u.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// One incident's updates, newest first.
pub async fn updates<'e>(
    e: impl Exec<'e>,
    ws: &str,
    incident_id: &str,
) -> Result<Vec<UpdateRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {UPDATE_COLUMNS} FROM incident_updates WHERE workspace_id = $1 \
         AND incident_id = $2 ORDER BY created_at DESC, id DESC"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(incident_id)
        .fetch_all(e)
        .await
}

/// The updates of several incidents (any workspace: the ids are already scoped), each
/// incident's newest first.
async fn updates_of<'e>(
    e: impl Exec<'e>,
    incident_ids: &[String],
) -> Result<HashMap<String, Vec<UpdateRow>>, sqlx::Error> {
    let mut by_incident: HashMap<String, Vec<UpdateRow>> = HashMap::new();
    if incident_ids.is_empty() {
        return Ok(by_incident);
    }
    let sql = format!(
        "SELECT {UPDATE_COLUMNS} FROM incident_updates WHERE incident_id IN ({}) \
         ORDER BY created_at DESC, id DESC",
        super::in_list(1, incident_ids.len())
    );
    let mut q = sqlx::query_as::<_, UpdateRow>(&sql);
    for id in incident_ids {
        q = q.bind(id);
    }
    for u in q.fetch_all(e).await? {
        by_incident
            .entry(u.incident_id.clone())
            .or_default()
            .push(u);
    }
    Ok(by_incident)
}

// ---------------------------------------------------------------------------------------------
// The public pages' read

/// What a public status page shows of its incidents at `now_ms`: the page's incidents that are
/// visible (visibility PUBLISHED, or SCHEDULED with `scheduled_for` at or before `now_ms`) and
/// not archived, and that are either active (not resolved) or were created or resolved at or
/// after `since_ms` (the page's history window). Newest first, at most `limit`, each with its
/// updates (newest first). `now_ms` is the caller's clock (`Cx::clock()`), never the wall
/// clock, so a test can move a scheduled incident into view. Pair each with
/// `domain::incidents::incident_view` for the API shape.
pub async fn public_for_page(
    db: &sqlx::AnyPool,
    page_id: &str,
    now_ms: i64,
    since_ms: i64,
    limit: i64,
) -> Result<Vec<(IncidentRow, Vec<UpdateRow>)>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM incidents WHERE status_page_id = $1 AND archived_at IS NULL \
         AND (visibility = $2 OR (visibility = $3 AND scheduled_for IS NOT NULL \
              AND scheduled_for <= $4)) \
         AND (resolved_at IS NULL OR created_at >= $5 OR resolved_at >= $5) \
         ORDER BY created_at DESC, id DESC LIMIT $6"
    );
    let rows: Vec<IncidentRow> = sqlx::query_as(&sql)
        .bind(page_id)
        .bind(PUBLISHED)
        .bind(SCHEDULED)
        .bind(now_ms)
        .bind(since_ms)
        .bind(limit)
        .fetch_all(db)
        .await?;
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let mut updates = updates_of(db, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let u = updates.remove(&r.id).unwrap_or_default();
            (r, u)
        })
        .collect())
}

/// One page of a public status page's visible incidents (as [`public_for_page`] sees them,
/// whatever their age), newest first by `(created_at, id)`, after the key `after` (the last
/// incident of the previous page; `None` for the first): keyset paging, so an incident
/// published meanwhile never shifts a later page. Without updates.
pub async fn public_page_of(
    db: &sqlx::AnyPool,
    page_id: &str,
    now_ms: i64,
    after: Option<(i64, &str)>,
    limit: i64,
) -> Result<Vec<IncidentRow>, sqlx::Error> {
    let (after_at, after_id) = after.unwrap_or((i64::MAX, ""));
    let sql = format!(
        "SELECT {COLUMNS} FROM incidents WHERE status_page_id = $1 AND archived_at IS NULL \
         AND (visibility = $2 OR (visibility = $3 AND scheduled_for IS NOT NULL \
              AND scheduled_for <= $4)) \
         AND (created_at < $5 OR (created_at = $5 AND ($6 = '' OR id < $6))) \
         ORDER BY created_at DESC, id DESC LIMIT $7"
    );
    sqlx::query_as(&sql)
        .bind(page_id)
        .bind(PUBLISHED)
        .bind(SCHEDULED)
        .bind(now_ms)
        .bind(after_at)
        .bind(after_id)
        .bind(limit)
        .fetch_all(db)
        .await
}

// ---------------------------------------------------------------------------------------------
// Automatic incidents (alerting::auto_incidents)

/// The id of page `page_id`'s unresolved automatic incident for `monitor_id`, if any.
pub async fn open_auto<'e>(
    e: impl Exec<'e>,
    page_id: &str,
    monitor_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM incidents WHERE status_page_id = $1 AND source_monitor_id = $2 \
         AND auto_generated = 1 AND resolved_at IS NULL",
    )
    .bind(page_id)
    .bind(monitor_id)
    .fetch_optional(e)
    .await
}

/// Every unresolved automatic incident of `monitor_id` (one per page at most).
pub async fn unresolved_auto_for_monitor<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Vec<IncidentRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM incidents WHERE workspace_id = $1 AND source_monitor_id = $2 \
         AND auto_generated = 1 AND resolved_at IS NULL ORDER BY id"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(monitor_id)
        .fetch_all(e)
        .await
}
