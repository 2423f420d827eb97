//! The emailed links that verify a user's address. Only the SHA-256 of a link's token is
//! stored; a link is for one address of one user, expires, and works once.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct VerificationRow {
    pub token_hash: String,
    pub user_id: String,
    pub email: String,
    /// 1 when the user asked for it again (the per-hour limit counts these).
    pub resend: i64,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub created_at: i64,
}

pub async fn insert<'e>(e: impl Exec<'e>, v: &VerificationRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO email_verifications (token_hash, user_id, email, resend, expires_at, used_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&v.token_hash)
    .bind(&v.user_id)
    .bind(&v.email)
    .bind(v.resend)
    .bind(v.expires_at)
    .bind(v.used_at)
    .bind(v.created_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find<'e>(
    e: impl Exec<'e>,
    token_hash: &str,
) -> Result<Option<VerificationRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT token_hash, user_id, email, resend, expires_at, used_at, created_at \
         FROM email_verifications WHERE token_hash = $1",
    )
    .bind(token_hash)
    .fetch_optional(e)
    .await
}

/// Spends a link that is unused and unexpired: 1 when this call spent it, 0 otherwise.
pub async fn spend<'e>(e: impl Exec<'e>, token_hash: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE email_verifications SET used_at = $1 \
         WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(token_hash)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// The creation times of a user's resent links since `since`, oldest first.
pub async fn resent_since<'e>(
    e: impl Exec<'e>,
    user_id: &str,
    since: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT created_at FROM email_verifications \
         WHERE user_id = $1 AND resend = 1 AND created_at > $2 ORDER BY created_at",
    )
    .bind(user_id)
    .bind(since)
    .fetch_all(e)
    .await
}

/// Drops links past their expiry (housekeeping).
pub async fn purge_expired<'e>(e: impl Exec<'e>, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("DELETE FROM email_verifications WHERE expires_at < $1")
        .bind(now)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}
