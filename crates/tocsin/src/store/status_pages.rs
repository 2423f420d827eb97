//! Status pages and their components: the rows behind `/status-pages`, and the reads the
//! public pages build from (a page by slug, its components with their monitors' state, daily
//! uptime from the hourly rollups, and a one-row digest that tells whether anything a page
//! shows has changed).
//!
//! Encodings: timestamps are integer milliseconds; `published` is 0/1; `branding` and
//! `allowed_email_domains` are JSON text; a component's `position` is its place on the page.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct PageRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub slug: String,
    pub published: i64,
    pub branding: String,
    pub history_days: i64,
    pub auto_incidents: String,
    /// PUBLIC, PASSWORD or EMAIL_DOMAINS.
    pub visibility: String,
    /// The argon2 hash of the page password (PASSWORD pages).
    pub password_hash: Option<String>,
    /// JSON list of lowercase domains (EMAIL_DOMAINS pages).
    pub allowed_email_domains: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, workspace_id, name, slug, published, branding, history_days, \
     auto_incidents, visibility, password_hash, allowed_email_domains, version, created_at, \
     updated_at";

pub async fn insert<'e>(e: impl Exec<'e>, p: &PageRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO status_pages (id, workspace_id, name, slug, published, branding, \
         history_days, auto_incidents, visibility, password_hash, allowed_email_domains, \
         version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(&p.id)
    .bind(&p.workspace_id)
    .bind(&p.name)
    .bind(&p.slug)
    .bind(p.published)
    .bind(&p.branding)
    .bind(p.history_days)
    .bind(&p.auto_incidents)
    .bind(&p.visibility)
    .bind(&p.password_hash)
    .bind(&p.allowed_email_domains)
    .bind(p.version)
    .bind(p.created_at)
    .bind(p.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<Option<PageRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM status_pages WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// A page by its public slug, in any workspace (the public routes know no workspace).
pub async fn by_slug<'e>(e: impl Exec<'e>, slug: &str) -> Result<Option<PageRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM status_pages WHERE slug = $1");
    sqlx::query_as(&sql).bind(slug).fetch_optional(e).await
}

/// A page by id, in any workspace (publishable keys and custom domains name a page).
pub async fn by_id<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<PageRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM status_pages WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// A workspace's pages in creation order.
pub async fn list<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<PageRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM status_pages WHERE workspace_id = $1 ORDER BY id");
    sqlx::query_as(&sql).bind(ws).fetch_all(e).await
}

/// How many pages a workspace has.
pub async fn count<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM status_pages WHERE workspace_id = $1")
        .bind(ws)
        .fetch_one(e)
        .await
}

/// Writes every editable field, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    p: &PageRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "status_pages",
        "name = $1, slug = $2, published = $3, branding = $4, history_days = $5, \
         auto_incidents = $6, updated_at = $7, visibility = $8, password_hash = $9, \
         allowed_email_domains = $10",
        "workspace_id = $11 AND id = $12",
        expected,
    )
    .run(e, |q| {
        q.bind(&p.name)
            .bind(&p.slug)
            .bind(p.published)
            .bind(&p.branding)
            .bind(p.history_days)
            .bind(&p.auto_incidents)
            .bind(p.updated_at)
            .bind(&p.visibility)
            .bind(&p.password_hash)
            .bind(&p.allowed_email_domains)
            .bind(&p.workspace_id)
            .bind(&p.id)
    })
    .await
}

/// Bumps a page's `version` and `updated_at` (its components changed).
pub async fn touch<'e>(e: impl Exec<'e>, ws: &str, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE status_pages SET version = version + 1, updated_at = $1 \
         WHERE workspace_id = $2 AND id = $3",
    )
    .bind(now)
    .bind(ws)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM status_pages WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

// ---------------------------------------------------------------------------------------------
// Components

#[derive(Debug, Clone, FromRow)]
pub struct ComponentRow {
    pub id: String,
    pub status_page_id: String,
    pub workspace_id: String,
    pub monitor_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub group_name: Option<String>,
    pub position: i64,
}

const COMPONENT_COLUMNS: &str =
    "id, status_page_id, workspace_id, monitor_id, name, description, group_name, position";

/// A page's components in page order.
pub async fn components<'e>(
    e: impl Exec<'e>,
    page_id: &str,
) -> Result<Vec<ComponentRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COMPONENT_COLUMNS} FROM status_page_components WHERE status_page_id = $1 \
         ORDER BY position, id"
    );
    sqlx::query_as(&sql).bind(page_id).fetch_all(e).await
}

/// Removes every component of a page (before [`insert_component`] writes the new list).
pub async fn clear_components<'e>(e: impl Exec<'e>, page_id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM status_page_components WHERE status_page_id = $1")
            .bind(page_id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

pub async fn insert_component<'e>(e: impl Exec<'e>, c: &ComponentRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO status_page_components (id, status_page_id, workspace_id, monitor_id, \
         name, description, group_name, position) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&c.id)
    .bind(&c.status_page_id)
    .bind(&c.workspace_id)
    .bind(&c.monitor_id)
    .bind(&c.name)
    .bind(&c.description)
    .bind(&c.group_name)
    .bind(c.position)
    .execute(e)
    .await
    .map(|_| ())
}

// ---------------------------------------------------------------------------------------------
// What the public pages read

/// The state of a component's monitor a public page shows.
#[derive(Debug, Clone, FromRow)]
pub struct MonitorState {
    pub id: String,
    pub seq: i64,
    pub status: String,
    pub active: i64,
    pub status_changed_at: i64,
}

/// The state of the page's monitors (`ids` of workspace `ws`).
pub async fn monitor_states<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<Vec<MonitorState>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, seq, status, active, status_changed_at FROM monitors \
         WHERE workspace_id = $1 AND id IN ({})",
        super::in_list(2, ids.len())
    );
    let mut q = sqlx::query_as(&sql).bind(ws);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

/// One monitor's counted checks of one day: `(monitor_seq, day, total, down)`, where `day`
/// is the day number of `bucket_start + offset_ms` (days since the epoch in the page's zone).
pub type DayRow = (i64, i64, i64, i64);

/// Per monitor and day, the counted and DOWN checks from the hourly rollups since `from_ms`.
pub async fn daily_uptime<'e>(
    e: impl Exec<'e>,
    seqs: &[i64],
    from_ms: i64,
    offset_ms: i64,
) -> Result<Vec<DayRow>, sqlx::Error> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT monitor_seq, CAST((bucket_start + $2) / 86400000 AS BIGINT) AS day, \
         CAST(SUM(total) AS BIGINT), CAST(SUM(down) AS BIGINT) FROM heartbeat_hourly \
         WHERE bucket_start >= $1 AND monitor_seq IN ({}) \
         GROUP BY monitor_seq, CAST((bucket_start + $2) / 86400000 AS BIGINT)",
        super::in_list(3, seqs.len())
    );
    let mut q = sqlx::query_as(&sql).bind(from_ms).bind(offset_ms);
    for s in seqs {
        q = q.bind(*s);
    }
    q.fetch_all(e).await
}

/// A one-row digest of what a page shows besides uptime: the page row's version, its
/// components' monitors' status changes, and its incidents' and postmortems' edits. Equal
/// digests mean an unchanged page (deletions are announced with a notice instead).
pub async fn digest<'e>(e: impl Exec<'e>, page_id: &str) -> Result<String, sqlx::Error> {
    let (version, status, incidents, postmortems): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT \
           COALESCE((SELECT version FROM status_pages WHERE id = $1), -1), \
           COALESCE((SELECT CAST(MAX(m.status_changed_at) AS BIGINT) + \
                     CAST(SUM(LENGTH(m.status)) AS BIGINT) + CAST(COUNT(*) AS BIGINT) \
                     FROM monitors m JOIN status_page_components c ON c.monitor_id = m.id \
                     WHERE c.status_page_id = $1), 0), \
           COALESCE((SELECT CAST(MAX(updated_at) AS BIGINT) + CAST(COUNT(*) AS BIGINT) \
                     FROM incidents WHERE status_page_id = $1), 0), \
           COALESCE((SELECT CAST(MAX(p.updated_at) AS BIGINT) + CAST(COUNT(*) AS BIGINT) \
                     FROM postmortems p JOIN incidents i ON i.id = p.incident_id \
                     WHERE i.status_page_id = $1), 0)",
    )
    .bind(page_id)
    .fetch_one(e)
    .await?;
    Ok(format!("{version}.{status}.{incidents}.{postmortems}"))
}

/// The earliest `scheduledFor` still to come of the page's SCHEDULED incidents: the moment the
/// page changes without any row changing (the public page shows such an incident from then).
pub async fn next_scheduled_incident<'e>(
    e: impl Exec<'e>,
    page_id: &str,
    now_ms: i64,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(MIN(scheduled_for) AS BIGINT) FROM incidents WHERE status_page_id = $1 \
         AND visibility = 'SCHEDULED' AND archived_at IS NULL AND scheduled_for > $2",
    )
    .bind(page_id)
    .bind(now_ms)
    .fetch_one(e)
    .await
}

/// `(page id, domain)` of a workspace's verified custom domains, oldest first.
pub async fn verified_domains<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT status_page_id, domain FROM status_page_domains \
         WHERE workspace_id = $1 AND verified_at IS NOT NULL ORDER BY created_at, domain",
    )
    .bind(ws)
    .fetch_all(e)
    .await
}

/// Per monitor, `(total, down)` counted checks of the rollup hours since each of `from`
/// (whole hours; typically 24 hours, 7, 30 and 90 days back).
pub async fn window_uptime<'e>(
    e: impl Exec<'e>,
    seqs: &[i64],
    from: &[i64; 4],
) -> Result<std::collections::HashMap<i64, [(i64, i64); 4]>, sqlx::Error> {
    if seqs.is_empty() {
        return Ok(Default::default());
    }
    let sum = |i: usize, col: &str| {
        format!("CAST(SUM(CASE WHEN bucket_start >= ${i} THEN {col} ELSE 0 END) AS BIGINT)")
    };
    let sql = format!(
        "SELECT monitor_seq, {}, {}, {}, {}, {}, {}, {}, {} FROM heartbeat_hourly \
         WHERE bucket_start >= $4 AND monitor_seq IN ({}) GROUP BY monitor_seq",
        sum(1, "total"),
        sum(1, "down"),
        sum(2, "total"),
        sum(2, "down"),
        sum(3, "total"),
        sum(3, "down"),
        sum(4, "total"),
        sum(4, "down"),
        super::in_list(5, seqs.len())
    );
    let mut q = sqlx::query_as::<_, (i64, i64, i64, i64, i64, i64, i64, i64, i64)>(&sql)
        .bind(from[0])
        .bind(from[1])
        .bind(from[2])
        .bind(from[3]);
    for s in seqs {
        q = q.bind(*s);
    }
    Ok(q.fetch_all(e)
        .await?
        .into_iter()
        .map(|r| (r.0, [(r.1, r.2), (r.3, r.4), (r.5, r.6), (r.7, r.8)]))
        .collect())
}

/// A page that opens incidents by itself for a monitor, with its components over it.
#[derive(Debug, Clone)]
pub struct AutoPage {
    pub page_id: String,
    /// DRAFT or PUBLISHED.
    pub mode: String,
    pub component_ids: Vec<String>,
    pub component_names: Vec<String>,
}

/// The pages of workspace `ws` whose `auto_incidents` is not OFF and that show `monitor_id`.
pub async fn auto_incident_pages<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Vec<AutoPage>, sqlx::Error> {
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT p.id, p.auto_incidents, c.id, c.name FROM status_pages p \
         JOIN status_page_components c ON c.status_page_id = p.id \
         WHERE p.workspace_id = $1 AND c.monitor_id = $2 AND p.auto_incidents <> 'OFF' \
         ORDER BY p.id, c.position",
    )
    .bind(ws)
    .bind(monitor_id)
    .fetch_all(e)
    .await?;
    Ok(per_page(rows)
        .into_iter()
        .map(|(page_id, mode, component_ids, component_names)| AutoPage {
            page_id,
            mode,
            component_ids,
            component_names,
        })
        .collect())
}

/// A page that opens incidents by itself, showing a root's monitor or monitors that depend
/// on it: its components over the root, and those over its dependents.
#[derive(Debug, Clone)]
pub struct AutoPageOver {
    pub page_id: String,
    /// DRAFT or PUBLISHED.
    pub mode: String,
    /// (id, name) of the components over the root's monitor, in page order.
    pub root: Vec<(String, String)>,
    /// (id, name) of the components over monitors depending on it (directly or not).
    pub dependents: Vec<(String, String)>,
}

/// The pages of workspace `ws` whose `auto_incidents` is not OFF and that show `monitor_id` or
/// a monitor depending on it (directly or through others).
pub async fn auto_incident_pages_over<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Vec<AutoPageOver>, sqlx::Error> {
    let sql = format!(
        "{} SELECT p.id, p.auto_incidents, c.id, c.name, c.monitor_id FROM status_pages p \
         JOIN status_page_components c ON c.status_page_id = p.id \
         WHERE p.workspace_id = $2 AND p.auto_incidents <> 'OFF' \
         AND (c.monitor_id = $1 OR c.monitor_id IN (SELECT id FROM down)) \
         ORDER BY p.id, c.position",
        super::dependencies::DOWNSTREAM
    );
    let rows: Vec<(String, String, String, String, Option<String>)> = sqlx::query_as(&sql)
        .bind(monitor_id)
        .bind(ws)
        .fetch_all(e)
        .await?;
    let mut out: Vec<AutoPageOver> = Vec::new();
    for (page_id, mode, cid, name, over) in rows {
        if out.last().is_none_or(|l| l.page_id != page_id) {
            out.push(AutoPageOver {
                page_id,
                mode,
                root: Vec::new(),
                dependents: Vec::new(),
            });
        }
        if let Some(last) = out.last_mut() {
            if over.as_deref() == Some(monitor_id) {
                last.root.push((cid, name));
            } else {
                last.dependents.push((cid, name));
            }
        }
    }
    Ok(out)
}

/// Folds `(page id, page fields, component id, component name)` rows, ordered by page, into
/// one entry per page with its components in row order.
fn per_page<P>(
    rows: impl IntoIterator<Item = (String, P, String, String)>,
) -> Vec<(String, P, Vec<String>, Vec<String>)> {
    let mut out: Vec<(String, P, Vec<String>, Vec<String>)> = Vec::new();
    for (page, fields, cid, name) in rows {
        match out.last_mut() {
            Some(last) if last.0 == page => {
                last.2.push(cid);
                last.3.push(name);
            }
            _ => out.push((page, fields, vec![cid], vec![name])),
        }
    }
    out
}

/// A published page showing a monitor: its name and address, and its components over it.
#[derive(Debug, Clone)]
pub struct ShowingPage {
    pub page_id: String,
    pub name: String,
    pub slug: String,
    pub component_ids: Vec<String>,
    pub component_names: Vec<String>,
}

/// The published pages of workspace `ws` that show `monitor_id`, with their components over it
/// (in page order).
pub async fn published_showing<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Vec<ShowingPage>, sqlx::Error> {
    let rows: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT p.id, p.name, p.slug, c.id, c.name FROM status_pages p \
         JOIN status_page_components c ON c.status_page_id = p.id \
         WHERE p.workspace_id = $1 AND c.monitor_id = $2 AND p.published = 1 \
         ORDER BY p.id, c.position",
    )
    .bind(ws)
    .bind(monitor_id)
    .fetch_all(e)
    .await?;
    let rows = rows
        .into_iter()
        .map(|(page_id, name, slug, cid, cname)| (page_id, (name, slug), cid, cname));
    Ok(per_page(rows)
        .into_iter()
        .map(
            |(page_id, (name, slug), component_ids, component_names)| ShowingPage {
                page_id,
                name,
                slug,
                component_ids,
                component_names,
            },
        )
        .collect())
}
