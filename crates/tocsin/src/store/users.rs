//! Users: people who sign in. Emails are stored lowercased and are unique; an email counts
//! as the user's own once `email_verified_at` is set.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    /// When the user showed they receive mail at `email`; `None` until then.
    pub email_verified_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn insert<'e>(e: impl Exec<'e>, u: &UserRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO users (id, email, name, password_hash, email_verified_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&u.id)
    .bind(&u.email)
    .bind(&u.name)
    .bind(&u.password_hash)
    .bind(u.email_verified_at)
    .bind(u.created_at)
    .bind(u.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find_by_email<'e>(
    e: impl Exec<'e>,
    email: &str,
) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM users WHERE email = $1")
        .bind(email)
        .fetch_optional(e)
        .await
}

pub async fn get<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<UserRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM users WHERE id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

/// Marks `email` verified for user `id`, unless it is no longer their address or already
/// verified; the number of rows changed.
pub async fn mark_verified<'e>(
    e: impl Exec<'e>,
    id: &str,
    email: &str,
    at: i64,
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE users SET email_verified_at = $1, updated_at = $1 \
         WHERE id = $2 AND email = $3 AND email_verified_at IS NULL",
    )
    .bind(at)
    .bind(id)
    .bind(email)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}
