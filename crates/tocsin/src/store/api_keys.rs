//! Personal access tokens. The secret itself is never stored: `token_hash` is its SHA-256.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct ApiKeyRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub token_hint: String,
    pub surfaces: String,
    pub permissions: String,
    pub status: String,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub created_by: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str =
    "id, workspace_id, name, token_hint, surfaces, permissions, status, expires_at, \
     last_used_at, created_by, version, created_at, updated_at";

pub async fn insert<'e>(
    e: impl Exec<'e>,
    k: &ApiKeyRow,
    token_hash: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO api_keys (id, workspace_id, name, token_hash, token_hint, surfaces, permissions, status, \
         expires_at, last_used_at, created_by, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(&k.id)
    .bind(&k.workspace_id)
    .bind(&k.name)
    .bind(token_hash)
    .bind(&k.token_hint)
    .bind(&k.surfaces)
    .bind(&k.permissions)
    .bind(&k.status)
    .bind(k.expires_at)
    .bind(k.last_used_at)
    .bind(&k.created_by)
    .bind(k.version)
    .bind(k.created_at)
    .bind(k.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<ApiKeyRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM api_keys WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT $3"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<ApiKeyRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM api_keys WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

pub async fn count_active<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM api_keys WHERE workspace_id = $1 AND status = 'ACTIVE'",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}

/// Writes name, permissions, expiry (and optionally a new secret) with a version check.
pub async fn update<'e>(
    e: impl Exec<'e>,
    k: &ApiKeyRow,
    new_hash: Option<&str>,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let mut set = String::from(
        "name = $1, permissions = $2, expires_at = $3, status = $4, token_hint = $5, updated_at = $6",
    );
    let mut n = 6;
    if new_hash.is_some() {
        n += 1;
        set.push_str(&format!(", token_hash = ${n}"));
    }
    let filter = format!("workspace_id = ${} AND id = ${}", n + 1, n + 2);
    Versioned::update("api_keys", &set, &filter, expected)
        .run(e, |q| {
            let mut q = q
                .bind(&k.name)
                .bind(&k.permissions)
                .bind(k.expires_at)
                .bind(&k.status)
                .bind(&k.token_hint)
                .bind(k.updated_at);
            if let Some(h) = new_hash {
                q = q.bind(h);
            }
            q.bind(&k.workspace_id).bind(&k.id)
        })
        .await
}

/// What the request path needs to authenticate a bearer token.
#[derive(Debug, Clone, FromRow)]
pub struct KeyAuthRow {
    pub id: String,
    pub workspace_id: String,
    pub token_hash: String,
    pub surfaces: String,
    pub permissions: String,
    pub status: String,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub created_by: String,
    pub creator_email: String,
    pub creator_email_verified_at: Option<i64>,
    /// The creator's current role; `None` once they left the workspace (the key then stops).
    pub creator_role: Option<String>,
}

pub async fn find_for_auth<'e>(
    e: impl Exec<'e>,
    token_hash: &str,
) -> Result<Option<KeyAuthRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT k.id, k.workspace_id, k.token_hash, k.surfaces, k.permissions, k.status, k.expires_at, \
         k.last_used_at, k.created_by, u.email AS creator_email, \
         u.email_verified_at AS creator_email_verified_at, m.role AS creator_role \
         FROM api_keys k JOIN users u ON u.id = k.created_by \
         LEFT JOIN memberships m ON m.workspace_id = k.workspace_id AND m.user_id = k.created_by \
         WHERE k.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(e)
    .await
}

pub async fn touch<'e>(e: impl Exec<'e>, id: &str, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)")
        .bind(at)
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

/// Revokes every active key `user` made in workspace `ws` (their removal from it); returns the
/// ids revoked.
pub async fn revoke_created_by<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user: &str,
    now: i64,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE api_keys SET status = 'REVOKED', updated_at = $1, version = version + 1 \
         WHERE workspace_id = $2 AND created_by = $3 AND status = 'ACTIVE' RETURNING id",
    )
    .bind(now)
    .bind(ws)
    .bind(user)
    .fetch_all(e)
    .await
}
