//! Workspaces: the tenancy boundary. Every other workspace-owned row carries `workspace_id`
//! and every query on it filters by it.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct WorkspaceRow {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub owner_id: String,
    pub plan: String,
    pub timezone: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn insert<'e>(e: impl Exec<'e>, w: &WorkspaceRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO workspaces (id, name, slug, owner_id, plan, timezone, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&w.id)
    .bind(&w.name)
    .bind(&w.slug)
    .bind(&w.owner_id)
    .bind(&w.plan)
    .bind(&w.timezone)
    .bind(w.version)
    .bind(w.created_at)
    .bind(w.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<WorkspaceRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM workspaces WHERE id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

pub async fn slug_taken<'e>(e: impl Exec<'e>, slug: &str) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM workspaces WHERE slug = $1")
        .bind(slug)
        .fetch_one(e)
        .await?;
    Ok(n > 0)
}

/// Updates name, slug and time zone; `expected` is the `If-Match` version, if any. Returns the
/// number of rows changed (0: missing or stale).
pub async fn update_settings<'e>(
    e: impl Exec<'e>,
    w: &WorkspaceRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "workspaces",
        "name = $1, slug = $2, timezone = $3, updated_at = $4",
        "id = $5",
        expected,
    )
    .run(e, |q| {
        q.bind(&w.name)
            .bind(&w.slug)
            .bind(&w.timezone)
            .bind(w.updated_at)
            .bind(&w.id)
    })
    .await
}

#[derive(Debug, Clone, FromRow)]
pub struct UserWorkspaceRow {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub role: String,
}

pub async fn list_for_user<'e>(
    e: impl Exec<'e>,
    user_id: &str,
) -> Result<Vec<UserWorkspaceRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT w.id, w.name, w.slug, m.role FROM workspaces w \
         JOIN memberships m ON m.workspace_id = w.id WHERE m.user_id = $1 ORDER BY w.id",
    )
    .bind(user_id)
    .fetch_all(e)
    .await
}

/// A server-wide random secret, created on first use (as `fresh`, which the caller generates)
/// and shared by every node through the database: the first node's value wins.
pub async fn server_secret(
    db: &super::Db,
    name: &str,
    fresh: &str,
) -> Result<Vec<u8>, sqlx::Error> {
    sqlx::query(
        "INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(fresh)
    .execute(db.writer())
    .await?;
    let value: String = sqlx::query_scalar("SELECT value FROM server_secrets WHERE name = $1")
        .bind(name)
        .fetch_one(db.writer())
        .await?;
    Ok(value.into_bytes())
}
