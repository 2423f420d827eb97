//! Postmortems: the rows behind `/postmortems`, and the reads the public pages use
//! ([`published_for_page`], [`published_on_page`]).
//!
//! A postmortem belongs to one incident; its status page is the incident's, read through a
//! join (`status_page_id` of [`PostmortemRow`]), so it can never disagree with the incident.
//! `body` is the Markdown as written (rendered and sanitised by the domain on output);
//! `published_at` is null until published. Timestamps are integer milliseconds.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct PostmortemRow {
    pub id: String,
    pub workspace_id: String,
    pub incident_id: String,
    /// The incident's page (not a column of `postmortems`).
    pub status_page_id: String,
    pub title: String,
    pub body: String,
    pub published_at: Option<i64>,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const SELECT: &str = "SELECT p.id, p.workspace_id, p.incident_id, i.status_page_id, p.title, \
     p.body, p.published_at, p.version, p.created_at, p.updated_at \
     FROM postmortems p JOIN incidents i ON i.id = p.incident_id";

pub async fn insert<'e>(e: impl Exec<'e>, p: &PostmortemRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO postmortems (id, workspace_id, incident_id, title, body, published_at, \
         version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&p.id)
    .bind(&p.workspace_id)
    .bind(&p.incident_id)
    .bind(&p.title)
    .bind(&p.body)
    .bind(p.published_at)
    .bind(p.version)
    .bind(p.created_at)
    .bind(p.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<PostmortemRow>, sqlx::Error> {
    let sql = format!("{SELECT} WHERE p.workspace_id = $1 AND p.id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// A workspace's postmortems, newest first; one incident's with `incident_id`.
pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    incident_id: Option<&str>,
) -> Result<Vec<PostmortemRow>, sqlx::Error> {
    match incident_id {
        Some(incident) => {
            let sql = format!(
                "{SELECT} WHERE p.workspace_id = $1 AND p.incident_id = $2 \
                 ORDER BY p.created_at DESC, p.id DESC"
            );
            sqlx::query_as(&sql)
                .bind(ws)
                .bind(incident)
                .fetch_all(e)
                .await
        }
        None => {
            let sql =
                format!("{SELECT} WHERE p.workspace_id = $1 ORDER BY p.created_at DESC, p.id DESC");
            sqlx::query_as(&sql).bind(ws).fetch_all(e).await
        }
    }
}

/// Writes title, body and `published_at`, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    p: &PostmortemRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "postmortems",
        "title = $1, body = $2, published_at = $3, updated_at = $4",
        "workspace_id = $5 AND id = $6",
        expected,
    )
    .run(e, |q| {
        q.bind(&p.title)
            .bind(&p.body)
            .bind(p.published_at)
            .bind(p.updated_at)
            .bind(&p.workspace_id)
            .bind(&p.id)
    })
    .await
}

pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM postmortems WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

// ---------------------------------------------------------------------------------------------
// The public pages' reads (keyed by page: the public side knows the page, not the workspace)

/// The published postmortems of page `page_id`'s incidents, newest published first. Pair each
/// with `domain::postmortems::postmortem_view` for the API shape (Markdown rendered safely).
pub async fn published_for_page<'e>(
    e: impl Exec<'e>,
    page_id: &str,
) -> Result<Vec<PostmortemRow>, sqlx::Error> {
    let sql = format!(
        "{SELECT} WHERE i.status_page_id = $1 AND p.published_at IS NOT NULL \
         ORDER BY p.published_at DESC, p.id DESC"
    );
    sqlx::query_as(&sql).bind(page_id).fetch_all(e).await
}

/// One published postmortem of page `page_id` (`None` when it is unpublished, unknown, or of
/// another page): `GET /api/v1/status-pages/{slug}/postmortems/{postmortem_id}`.
pub async fn published_on_page<'e>(
    e: impl Exec<'e>,
    page_id: &str,
    id: &str,
) -> Result<Option<PostmortemRow>, sqlx::Error> {
    let sql = format!(
        "{SELECT} WHERE i.status_page_id = $1 AND p.id = $2 AND p.published_at IS NOT NULL"
    );
    sqlx::query_as(&sql)
        .bind(page_id)
        .bind(id)
        .fetch_optional(e)
        .await
}
