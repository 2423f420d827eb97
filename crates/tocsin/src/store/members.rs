//! Workspace membership and roles.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct MemberRow {
    pub user_id: String,
    pub email: String,
    pub name: String,
    pub role: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// 0 for a person made by single sign-on, whose password column holds the marker
    /// `domain::sso` writes instead of a hash; 1 otherwise.
    pub has_password: i64,
}

pub async fn insert<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user: &str,
    role: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO memberships (workspace_id, user_id, role, version, created_at, updated_at) \
         VALUES ($1, $2, $3, 1, $4, $4)",
    )
    .bind(ws)
    .bind(user)
    .bind(role)
    .bind(now)
    .execute(e)
    .await
    .map(|_| ())
}

const SELECT: &str =
    "SELECT m.user_id, u.email, u.name, m.role, m.version, m.created_at, m.updated_at, \
     CAST(CASE WHEN u.password_hash = '!sso' THEN 0 ELSE 1 END AS BIGINT) AS has_password \
     FROM memberships m JOIN users u ON u.id = m.user_id";

pub async fn list<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<MemberRow>, sqlx::Error> {
    let sql = format!(
        "{SELECT} WHERE m.workspace_id = $1 AND m.user_id > $2 ORDER BY m.user_id LIMIT $3"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(after.unwrap_or(""))
        .bind(limit)
        .fetch_all(e)
        .await
}

/// (user, provider id) of every identity linked to the members of the page `list` reads
/// with the same arguments: one read per page, not one per member.
pub async fn identities_of_page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT user_id, provider_id FROM sso_identities WHERE user_id IN \
         (SELECT m.user_id FROM memberships m WHERE m.workspace_id = $1 AND m.user_id > $2 \
          ORDER BY m.user_id LIMIT $3) \
         ORDER BY user_id, provider_id",
    )
    .bind(ws)
    .bind(after.unwrap_or(""))
    .bind(limit)
    .fetch_all(e)
    .await
}

/// The provider ids of `user`'s linked identities.
pub async fn identities_of<'e>(e: impl Exec<'e>, user: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT provider_id FROM sso_identities WHERE user_id = $1 ORDER BY provider_id",
    )
    .bind(user)
    .fetch_all(e)
    .await
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user: &str,
) -> Result<Option<MemberRow>, sqlx::Error> {
    let sql = format!("{SELECT} WHERE m.workspace_id = $1 AND m.user_id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(user)
        .fetch_optional(e)
        .await
}

pub async fn update_role<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user: &str,
    role: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "memberships",
        "role = $1, updated_at = $2",
        "workspace_id = $3 AND user_id = $4",
        expected,
    )
    .run(e, |q| q.bind(role).bind(now).bind(ws).bind(user))
    .await
}

pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, user: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2")
            .bind(ws)
            .bind(user)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

pub async fn count<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE workspace_id = $1")
        .bind(ws)
        .fetch_one(e)
        .await
}

pub async fn count_owners<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM memberships WHERE workspace_id = $1 AND role = 'owner'",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}
