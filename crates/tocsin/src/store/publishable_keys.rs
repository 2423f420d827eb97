//! Publishable keys (`pk_...`): read-only keys of one status page for the embed API and
//! badges. Only a SHA-256 of each key is stored; a revoked key's row is deleted.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct KeyRow {
    pub id: String,
    pub workspace_id: String,
    pub status_page_id: String,
    pub name: String,
    pub prefix: String,
    pub key_hash: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

const COLUMNS: &str =
    "id, workspace_id, status_page_id, name, prefix, key_hash, created_at, last_used_at";

pub async fn insert<'e>(e: impl Exec<'e>, k: &KeyRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO publishable_keys (id, workspace_id, status_page_id, name, prefix, key_hash, \
         created_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&k.id)
    .bind(&k.workspace_id)
    .bind(&k.status_page_id)
    .bind(&k.name)
    .bind(&k.prefix)
    .bind(&k.key_hash)
    .bind(k.created_at)
    .bind(k.last_used_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// A page's keys, oldest first.
pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
) -> Result<Vec<KeyRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM publishable_keys WHERE workspace_id = $1 AND status_page_id = $2 \
         ORDER BY id"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(page_id)
        .fetch_all(e)
        .await
}

/// Revokes a key of a page. Returns rows affected.
pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    id: &str,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "DELETE FROM publishable_keys WHERE workspace_id = $1 AND status_page_id = $2 AND id = $3",
    )
    .bind(ws)
    .bind(page_id)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// The key whose hash is `hash`, in any workspace.
pub async fn by_hash<'e>(e: impl Exec<'e>, hash: &str) -> Result<Option<KeyRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM publishable_keys WHERE key_hash = $1");
    sqlx::query_as(&sql).bind(hash).fetch_optional(e).await
}

/// Records a use, at most moving `last_used_at` forward.
pub async fn touch<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE publishable_keys SET last_used_at = $1 \
         WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)",
    )
    .bind(now)
    .bind(id)
    .execute(e)
    .await
    .map(|_| ())
}
