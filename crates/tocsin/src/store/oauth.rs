//! OAuth 2.1 tables: registered clients, pending authorization requests, grants, authorization
//! codes and tokens. Only hashes of secrets are stored. Grants are scoped by workspace and user
//! wherever a person reads or deletes them; codes and tokens are found by their hash alone,
//! which only their holder can produce.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct ClientRow {
    pub id: String,
    pub name: String,
    /// One redirect URI per line.
    pub redirect_uris: String,
    pub token_endpoint_auth_method: String,
    pub secret_hash: Option<String>,
    pub scope: String,
    /// The registration response (RFC 7591) without the secret, as JSON.
    pub metadata: String,
    pub created_at: i64,
}

pub async fn insert_client<'e>(e: impl Exec<'e>, c: &ClientRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO oauth_clients (id, name, redirect_uris, token_endpoint_auth_method, secret_hash, \
         scope, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&c.id)
    .bind(&c.name)
    .bind(&c.redirect_uris)
    .bind(&c.token_endpoint_auth_method)
    .bind(&c.secret_hash)
    .bind(&c.scope)
    .bind(&c.metadata)
    .bind(c.created_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find_client<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<ClientRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, name, redirect_uris, token_endpoint_auth_method, secret_hash, scope, metadata, \
         created_at FROM oauth_clients WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(e)
    .await
}

/// An authorization request waiting for the person's consent.
#[derive(Debug, Clone, FromRow)]
pub struct RequestRow {
    pub consent_hash: String,
    pub client_id: String,
    pub user_id: String,
    pub workspace_id: String,
    pub redirect_uri: String,
    pub scopes: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: Option<String>,
    pub expires_at: i64,
}

pub async fn insert_request<'e>(e: impl Exec<'e>, r: &RequestRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO oauth_requests (consent_hash, client_id, user_id, workspace_id, redirect_uri, \
         scopes, state, code_challenge, resource, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&r.consent_hash)
    .bind(&r.client_id)
    .bind(&r.user_id)
    .bind(&r.workspace_id)
    .bind(&r.redirect_uri)
    .bind(&r.scopes)
    .bind(&r.state)
    .bind(&r.code_challenge)
    .bind(&r.resource)
    .bind(r.expires_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// Removes and returns a pending request: a consent code answers once.
pub async fn take_request<'e>(
    e: impl Exec<'e>,
    consent_hash: &str,
) -> Result<Option<RequestRow>, sqlx::Error> {
    sqlx::query_as(
        "DELETE FROM oauth_requests WHERE consent_hash = $1 RETURNING consent_hash, client_id, \
         user_id, workspace_id, redirect_uri, scopes, state, code_challenge, resource, expires_at",
    )
    .bind(consent_hash)
    .fetch_optional(e)
    .await
}

/// Drops requests nobody answered in time.
pub async fn purge_requests<'e>(e: impl Exec<'e>, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("DELETE FROM oauth_requests WHERE expires_at < $1")
        .bind(now)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

#[derive(Debug, Clone, FromRow)]
pub struct GrantRow {
    pub id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub client_id: String,
    pub scopes: String,
    pub resource: Option<String>,
    pub status: String,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const GRANT_COLUMNS: &str = "id, workspace_id, user_id, client_id, scopes, resource, status, \
                             last_used_at, created_at, updated_at";

pub async fn insert_grant<'e>(e: impl Exec<'e>, g: &GrantRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, scopes, resource, status, \
         last_used_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&g.id)
    .bind(&g.workspace_id)
    .bind(&g.user_id)
    .bind(&g.client_id)
    .bind(&g.scopes)
    .bind(&g.resource)
    .bind(&g.status)
    .bind(g.last_used_at)
    .bind(g.created_at)
    .bind(g.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find_grant<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<GrantRow>, sqlx::Error> {
    let sql = format!("SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// One person's active grants in one workspace, oldest first, after `after`.
pub async fn list_grants<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user_id: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<GrantRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE workspace_id = $1 AND user_id = $2 \
         AND status = 'ACTIVE' AND id > $3 ORDER BY id LIMIT $4"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(user_id)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// Revokes an active grant and deletes its codes and tokens; the number of grants changed.
pub async fn revoke_grant(
    e: &mut sqlx::AnyConnection,
    id: &str,
    now: i64,
) -> Result<u64, sqlx::Error> {
    let n = sqlx::query(
        "UPDATE oauth_grants SET status = 'REVOKED', updated_at = $1 WHERE id = $2 AND status = 'ACTIVE'",
    )
    .bind(now)
    .bind(id)
    .execute(&mut *e)
    .await?
    .rows_affected();
    sqlx::query("DELETE FROM oauth_tokens WHERE grant_id = $1")
        .bind(id)
        .execute(&mut *e)
        .await?;
    sqlx::query("DELETE FROM oauth_codes WHERE grant_id = $1")
        .bind(id)
        .execute(&mut *e)
        .await?;
    Ok(n)
}

pub async fn touch_grant<'e>(e: impl Exec<'e>, id: &str, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE oauth_grants SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)",
    )
    .bind(at)
    .bind(id)
    .execute(e)
    .await
    .map(|_| ())
}

#[derive(Debug, Clone, FromRow)]
pub struct CodeRow {
    pub code_hash: String,
    pub grant_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

pub async fn insert_code<'e>(e: impl Exec<'e>, c: &CodeRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at, used_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&c.code_hash)
    .bind(&c.grant_id)
    .bind(&c.redirect_uri)
    .bind(&c.code_challenge)
    .bind(c.expires_at)
    .bind(c.used_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find_code<'e>(e: impl Exec<'e>, hash: &str) -> Result<Option<CodeRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT code_hash, grant_id, redirect_uri, code_challenge, expires_at, used_at \
         FROM oauth_codes WHERE code_hash = $1",
    )
    .bind(hash)
    .fetch_optional(e)
    .await
}

/// Marks a code used unless it already was: 1 when this call used it, 0 when another did.
pub async fn use_code<'e>(e: impl Exec<'e>, hash: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("UPDATE oauth_codes SET used_at = $1 WHERE code_hash = $2 AND used_at IS NULL")
        .bind(now)
        .bind(hash)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

pub const ACCESS: &str = "access";
pub const REFRESH: &str = "refresh";

#[derive(Debug, Clone, FromRow)]
pub struct TokenRow {
    pub token_hash: String,
    pub grant_id: String,
    pub kind: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub created_at: i64,
}

pub async fn insert_token<'e>(e: impl Exec<'e>, t: &TokenRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at, used_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&t.token_hash)
    .bind(&t.grant_id)
    .bind(&t.kind)
    .bind(t.expires_at)
    .bind(t.used_at)
    .bind(t.created_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn find_token<'e>(e: impl Exec<'e>, hash: &str) -> Result<Option<TokenRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT token_hash, grant_id, kind, expires_at, used_at, created_at FROM oauth_tokens \
         WHERE token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(e)
    .await
}

/// Marks a refresh token spent unless it already was: 1 when this call spent it.
pub async fn spend_refresh<'e>(e: impl Exec<'e>, hash: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE oauth_tokens SET used_at = $1 WHERE token_hash = $2 AND kind = 'refresh' AND used_at IS NULL",
    )
    .bind(now)
    .bind(hash)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

pub async fn delete_token<'e>(e: impl Exec<'e>, hash: &str) -> Result<u64, sqlx::Error> {
    sqlx::query("DELETE FROM oauth_tokens WHERE token_hash = $1")
        .bind(hash)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

/// What the `/mcp` request path needs to authenticate an access token.
#[derive(Debug, Clone, FromRow)]
pub struct AccessAuthRow {
    pub token_hash: String,
    pub expires_at: i64,
    pub grant_id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub email: String,
    pub email_verified_at: Option<i64>,
    pub scopes: String,
    pub resource: Option<String>,
    pub status: String,
    pub last_used_at: Option<i64>,
    /// The person's current role in the grant's workspace; `None` once they left it.
    pub role: Option<String>,
}

pub async fn find_access_for_auth<'e>(
    e: impl Exec<'e>,
    hash: &str,
) -> Result<Option<AccessAuthRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.token_hash, t.expires_at, g.id AS grant_id, g.workspace_id, g.user_id, u.email, \
         u.email_verified_at, g.scopes, g.resource, g.status, g.last_used_at, m.role \
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id \
         JOIN users u ON u.id = g.user_id \
         LEFT JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id \
         WHERE t.token_hash = $1 AND t.kind = 'access'",
    )
    .bind(hash)
    .fetch_optional(e)
    .await
}

/// The ids of one person's active grants in one workspace (all of them, for revoking).
pub async fn active_grant_ids<'e>(
    e: impl Exec<'e>,
    ws: &str,
    user_id: &str,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM oauth_grants WHERE workspace_id = $1 AND user_id = $2 AND status = 'ACTIVE' \
         ORDER BY id",
    )
    .bind(ws)
    .bind(user_id)
    .fetch_all(e)
    .await
}
