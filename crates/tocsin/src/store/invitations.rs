//! Invitations to join a workspace. The accept link carries a signed token (see
//! `auth::invite_link`); the row records who was invited, with what role, until when.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct InvitationRow {
    pub id: String,
    pub workspace_id: String,
    pub email: String,
    pub role: String,
    pub invited_by: String,
    pub status: String,
    pub expires_at: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn insert<'e>(e: impl Exec<'e>, i: &InvitationRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO invitations (id, workspace_id, email, role, invited_by, status, expires_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&i.id)
    .bind(&i.workspace_id)
    .bind(&i.email)
    .bind(&i.role)
    .bind(&i.invited_by)
    .bind(&i.status)
    .bind(i.expires_at)
    .bind(i.created_at)
    .bind(i.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<InvitationRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT * FROM invitations WHERE workspace_id = $1 AND id > $2 ORDER BY id LIMIT $3",
    )
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
) -> Result<Option<InvitationRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM invitations WHERE workspace_id = $1 AND id = $2")
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// By id alone: only for accepting, where the signed token already names the invitation.
pub async fn get_unscoped<'e>(
    e: impl Exec<'e>,
    id: &str,
) -> Result<Option<InvitationRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM invitations WHERE id = $1")
        .bind(id)
        .fetch_optional(e)
        .await
}

pub async fn set_status<'e>(
    e: impl Exec<'e>,
    id: &str,
    from: &str,
    to: &str,
    now: i64,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE invitations SET status = $1, updated_at = $2 WHERE id = $3 AND status = $4",
    )
    .bind(to)
    .bind(now)
    .bind(id)
    .bind(from)
    .execute(e)
    .await?
    .rows_affected())
}

pub async fn count_pending<'e>(e: impl Exec<'e>, ws: &str, now: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM invitations WHERE workspace_id = $1 AND status = 'pending' AND expires_at > $2",
    )
    .bind(ws)
    .bind(now)
    .fetch_one(e)
    .await
}
