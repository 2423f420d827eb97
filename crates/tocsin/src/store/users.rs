//! Users: people who sign in. Emails are stored lowercased and are unique.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn insert<'e>(e: impl Exec<'e>, u: &UserRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO users (id, email, name, password_hash, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&u.id)
    .bind(&u.email)
    .bind(&u.name)
    .bind(&u.password_hash)
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
