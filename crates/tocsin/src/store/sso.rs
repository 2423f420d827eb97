//! Single sign-on rows: identities at OpenID providers, keyed by (issuer, subject) and owned by
//! a user; the used sign-in flows that make a replayed callback fail on every node; and the
//! workspaces' `require_sso` setting with who it holds back.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct IdentityRow {
    pub issuer: String,
    pub subject: String,
    pub user_id: String,
    pub provider_id: String,
    pub email: Option<String>,
    pub created_at: i64,
    pub last_sign_in_at: i64,
}

pub async fn find<'e>(
    e: impl Exec<'e>,
    issuer: &str,
    subject: &str,
) -> Result<Option<IdentityRow>, sqlx::Error> {
    sqlx::query_as("SELECT * FROM sso_identities WHERE issuer = $1 AND subject = $2")
        .bind(issuer)
        .bind(subject)
        .fetch_optional(e)
        .await
}

pub async fn insert<'e>(e: impl Exec<'e>, r: &IdentityRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO sso_identities (issuer, subject, user_id, provider_id, email, created_at, last_sign_in_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&r.issuer)
    .bind(&r.subject)
    .bind(&r.user_id)
    .bind(&r.provider_id)
    .bind(&r.email)
    .bind(r.created_at)
    .bind(r.last_sign_in_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn touch<'e>(
    e: impl Exec<'e>,
    issuer: &str,
    subject: &str,
    email: Option<&str>,
    at: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE sso_identities SET last_sign_in_at = $1, email = $2 WHERE issuer = $3 AND subject = $4",
    )
    .bind(at)
    .bind(email)
    .bind(issuer)
    .bind(subject)
    .execute(e)
    .await
    .map(|_| ())
}

/// The providers a user has signed in with, by provider id.
pub async fn providers_of<'e>(e: impl Exec<'e>, user_id: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT DISTINCT provider_id FROM sso_identities WHERE user_id = $1 ORDER BY provider_id",
    )
    .bind(user_id)
    .fetch_all(e)
    .await
}

/// Records a flow as completed; false when it already was (a replay), on any node. Flows whose
/// cookie has expired are forgotten on the way.
pub async fn use_flow<'e>(
    e: impl Exec<'e> + Copy,
    state_hash: &str,
    expires_at: i64,
    now: i64,
) -> Result<bool, sqlx::Error> {
    sqlx::query("DELETE FROM sso_flows_used WHERE expires_at < $1")
        .bind(now)
        .execute(e)
        .await?;
    let done = sqlx::query(
        "INSERT INTO sso_flows_used (state_hash, expires_at) VALUES ($1, $2) ON CONFLICT (state_hash) DO NOTHING",
    )
    .bind(state_hash)
    .bind(expires_at)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn require_sso<'e>(e: impl Exec<'e>, workspace_id: &str) -> Result<bool, sqlx::Error> {
    let v: Option<i64> = sqlx::query_scalar("SELECT require_sso FROM workspaces WHERE id = $1")
        .bind(workspace_id)
        .fetch_optional(e)
        .await?;
    Ok(v.unwrap_or(0) != 0)
}

pub async fn set_require_sso<'e>(
    e: impl Exec<'e>,
    workspace_id: &str,
    on: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE workspaces SET require_sso = $1 WHERE id = $2")
        .bind(i64::from(on))
        .bind(workspace_id)
        .execute(e)
        .await
        .map(|_| ())
}

/// The slugs of the workspaces requiring single sign-on where `user_id` is a member but not an
/// owner: those that refuse the person's password.
pub async fn sso_only_memberships<'e>(
    e: impl Exec<'e>,
    user_id: &str,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT w.slug FROM workspaces w JOIN memberships m ON m.workspace_id = w.id \
         WHERE m.user_id = $1 AND w.require_sso <> 0 AND m.role <> 'owner' ORDER BY w.slug",
    )
    .bind(user_id)
    .fetch_all(e)
    .await
}

pub async fn workspace_by_slug<'e>(
    e: impl Exec<'e>,
    slug: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM workspaces WHERE slug = $1")
        .bind(slug)
        .fetch_optional(e)
        .await
}
