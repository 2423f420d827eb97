//! Sign-in sessions. Only the SHA-256 of the cookie's token is stored.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct SessionRow {
    pub id: String,
    pub user_id: String,
    pub workspace_id: String,
    pub expires_at: i64,
    pub created_at: i64,
    pub email: String,
    pub name: String,
    /// When the user verified `email`; `None`: not yet.
    pub email_verified_at: Option<i64>,
    /// The user's role in the session's active workspace; `None` if no longer a member.
    pub role: Option<String>,
}

pub struct NewSession<'a> {
    pub id: &'a str,
    pub token_hash: &'a str,
    pub user_id: &'a str,
    pub workspace_id: &'a str,
    pub expires_at: i64,
    pub now: i64,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

pub async fn insert<'e>(e: impl Exec<'e>, s: &NewSession<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sessions (id, token_hash, user_id, workspace_id, expires_at, created_at, ip_address, user_agent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(s.id)
    .bind(s.token_hash)
    .bind(s.user_id)
    .bind(s.workspace_id)
    .bind(s.expires_at)
    .bind(s.now)
    .bind(s.ip)
    .bind(s.user_agent)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find<'e>(
    e: impl Exec<'e>,
    token_hash: &str,
) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.id, s.user_id, s.workspace_id, s.expires_at, s.created_at, u.email, u.name, u.email_verified_at, m.role \
         FROM sessions s JOIN users u ON u.id = s.user_id \
         LEFT JOIN memberships m ON m.workspace_id = s.workspace_id AND m.user_id = s.user_id \
         WHERE s.token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(e)
    .await
}

pub async fn extend<'e>(e: impl Exec<'e>, id: &str, expires_at: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sessions SET expires_at = $1 WHERE id = $2")
        .bind(expires_at)
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

pub async fn set_workspace<'e>(e: impl Exec<'e>, id: &str, ws: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sessions SET workspace_id = $1 WHERE id = $2")
        .bind(ws)
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

pub async fn delete<'e>(e: impl Exec<'e>, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM sessions WHERE id = $1")
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

pub async fn delete_expired<'e>(e: impl Exec<'e>, now: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query("DELETE FROM sessions WHERE expires_at < $1")
        .bind(now)
        .execute(e)
        .await?
        .rows_affected())
}

/// Takes `user`'s sessions out of workspace `ws` (their removal from it): each moves to
/// `fallback`, another workspace of theirs, or is deleted when there is none. Returns how
/// many sessions were in `ws`.
pub async fn unpin(
    e: &mut sqlx::AnyConnection,
    user: &str,
    ws: &str,
    fallback: Option<&str>,
) -> Result<u64, sqlx::Error> {
    let q = match fallback {
        Some(other) => sqlx::query(
            "UPDATE sessions SET workspace_id = $1 WHERE user_id = $2 AND workspace_id = $3",
        )
        .bind(other),
        None => sqlx::query("DELETE FROM sessions WHERE user_id = $1 AND workspace_id = $2"),
    };
    Ok(q.bind(user).bind(ws).execute(e).await?.rows_affected())
}
