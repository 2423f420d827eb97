//! Custom domains of status pages: the rows behind `/status-pages/{page_id}/domains`, and the
//! one public read the custom-domain routing needs (which published page a verified host
//! serves).
//!
//! Encodings: `domain` is the lowercase host name, unique across the server (the primary
//! key); timestamps are integer milliseconds; `verified_at` is NULL until the TXT record was
//! found.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct DomainRow {
    pub domain: String,
    pub status_page_id: String,
    pub workspace_id: String,
    /// The value the `_tocsin-challenge.<domain>` TXT record must hold.
    pub verification_token: String,
    pub verified_at: Option<i64>,
    pub created_at: i64,
}

const COLUMNS: &str =
    "domain, status_page_id, workspace_id, verification_token, verified_at, created_at";

pub async fn insert<'e>(e: impl Exec<'e>, d: &DomainRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO status_page_domains (domain, status_page_id, workspace_id, \
         verification_token, verified_at, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&d.domain)
    .bind(&d.status_page_id)
    .bind(&d.workspace_id)
    .bind(&d.verification_token)
    .bind(d.verified_at)
    .bind(d.created_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// A page's domains, oldest first.
pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
) -> Result<Vec<DomainRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM status_page_domains WHERE workspace_id = $1 \
         AND status_page_id = $2 ORDER BY created_at, domain"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(page_id)
        .fetch_all(e)
        .await
}

/// One domain of one page of a workspace.
pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    domain: &str,
) -> Result<Option<DomainRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM status_page_domains WHERE workspace_id = $1 \
         AND status_page_id = $2 AND domain = $3"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(page_id)
        .bind(domain)
        .fetch_optional(e)
        .await
}

/// Records that the domain's TXT record was found at `at` (kept if it was verified already).
pub async fn mark_verified<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    domain: &str,
    at: i64,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE status_page_domains SET verified_at = COALESCE(verified_at, $1) \
         WHERE workspace_id = $2 AND status_page_id = $3 AND domain = $4",
    )
    .bind(at)
    .bind(ws)
    .bind(page_id)
    .bind(domain)
    .execute(e)
    .await?
    .rows_affected())
}

pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    domain: &str,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "DELETE FROM status_page_domains WHERE workspace_id = $1 AND status_page_id = $2 \
         AND domain = $3",
    )
    .bind(ws)
    .bind(page_id)
    .bind(domain)
    .execute(e)
    .await?
    .rows_affected())
}

/// Drops a claim on `domain` that was never verified and is older than `before`, in
/// whichever workspace holds it, so a name cannot be held by adding it first (see
/// `domain::status_pages::domains`). Answers how many rows went (0 or 1).
pub async fn release_stale_claim<'e>(
    e: impl Exec<'e>,
    domain: &str,
    before: i64,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "DELETE FROM status_page_domains WHERE domain = $1 AND verified_at IS NULL \
         AND created_at < $2",
    )
    .bind(domain)
    .bind(before)
    .execute(e)
    .await?
    .rows_affected())
}

/// The page a verified domain serves, in any workspace (the Host header names no workspace):
/// its slug and whether it is published. `host` is lowercase.
pub async fn verified_host<'e>(
    e: impl Exec<'e>,
    host: &str,
) -> Result<Option<(String, bool)>, sqlx::Error> {
    let row: Option<(String, i64)> = sqlx::query_as(
        "SELECT p.slug, p.published FROM status_page_domains d \
         JOIN status_pages p ON p.id = d.status_page_id \
         WHERE d.domain = $1 AND d.verified_at IS NOT NULL",
    )
    .bind(host)
    .fetch_optional(e)
    .await?;
    Ok(row.map(|(slug, published)| (slug, published != 0)))
}
