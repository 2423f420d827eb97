//! The token endpoint (`POST /auth/oauth2/token`): the `authorization_code` grant (with the
//! PKCE verifier and the same redirect URI; a code used twice revokes what it issued) and the
//! `refresh_token` grant (the presented token is spent; a spent one presented again revokes
//! the whole grant, OAuth 2.1 section 4.3.1).

use serde::{Deserialize, Serialize};

use super::client::{client_of, ClientAuth};
use super::grants::{grant_actor, revoke_grant};
use super::OAuthError;
use crate::auth::oauth::{self as rules, ACCESS_TTL_MS, REFRESH_TTL_MS};
use crate::auth::secrets;
use crate::cx::Cx;
use crate::store::{self, oauth as st};

/// The form of `POST /auth/oauth2/token`.
#[derive(Debug, Default, Deserialize)]
pub struct TokenForm {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A successful token answer (RFC 6749 section 5.1).
#[derive(Debug, Serialize)]
pub struct TokenAnswer {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: String,
}

/// The token endpoint: the `authorization_code` grant (with the PKCE verifier and the same
/// redirect URI) and the `refresh_token` grant (the presented token is spent; presenting a
/// spent one again revokes the whole grant).
pub async fn token(
    cx: &Cx,
    form: TokenForm,
    auth: ClientAuth,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<TokenAnswer, OAuthError> {
    let client = client_of(cx, &auth).await?;
    if let Some(r) = form.resource.as_deref() {
        if r.trim_end_matches('/') != rules::resource(cx.config()) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's MCP endpoint",
            ));
        }
    }
    let now = cx.clock().now_ms();
    match form.grant_type.as_deref() {
        Some("authorization_code") => {
            authorization_code(cx, &client, &form, now, ip, user_agent).await
        }
        Some("refresh_token") => refresh(cx, &client, &form, now, ip, user_agent).await,
        Some(other) => Err(OAuthError::bad(
            "unsupported_grant_type",
            format!("grant_type {other} is not supported: use authorization_code or refresh_token"),
        )),
        None => Err(OAuthError::bad("invalid_request", "grant_type is required")),
    }
}

/// The `authorization_code` grant: the code, once, within its 60 s, with its redirect URI and
/// PKCE verifier, for the client it was issued to.
async fn authorization_code(
    cx: &Cx,
    client: &st::ClientRow,
    form: &TokenForm,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<TokenAnswer, OAuthError> {
    let code = form
        .code
        .as_deref()
        .ok_or_else(|| OAuthError::bad("invalid_request", "code is required"))?;
    let verifier = form
        .code_verifier
        .as_deref()
        .ok_or_else(|| OAuthError::bad("invalid_request", "code_verifier is required (PKCE)"))?;
    let hash = secrets::hash(code);
    let row = st::find_code(cx.db().reader(), &hash)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("The authorization code is not valid."))?;
    let grant = st::find_grant(cx.db().reader(), &row.grant_id)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("The authorization code is not valid."))?;
    if grant.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "The authorization code was issued to another client.",
        ));
    }
    if row.used_at.is_some() {
        // RFC 6749 section 4.1.2: a code used twice revokes what it issued.
        let actor = grant_actor(cx, &grant, ip, user_agent).await?;
        revoke_grant(
            cx,
            &actor,
            &grant,
            "mcp_grant.revoke",
            "authorization code reused",
        )
        .await?;
        return Err(OAuthError::invalid_grant(
            "The authorization code was already used; the grant it made is revoked.",
        ));
    }
    if row.expires_at <= now {
        return Err(OAuthError::invalid_grant(
            "The authorization code has expired (codes live 60 seconds).",
        ));
    }
    if form.redirect_uri.as_deref() != Some(row.redirect_uri.as_str()) {
        return Err(OAuthError::invalid_grant(
            "redirect_uri does not match the authorization request's.",
        ));
    }
    if !rules::verify_pkce(verifier, &row.code_challenge) {
        return Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge.",
        ));
    }
    if grant.status != "ACTIVE" {
        return Err(OAuthError::invalid_grant("The grant was revoked."));
    }
    let mut tx = cx.db().begin().await?;
    if st::use_code(&mut *tx, &hash, now).await? != 1 {
        return Err(OAuthError::invalid_grant(
            "The authorization code was already used.",
        ));
    }
    let answer = issue(&mut tx, &grant, now).await?;
    tx.commit().await?;
    Ok(answer)
}

/// The `refresh_token` grant: the presented refresh token is spent and a new pair issued,
/// never wider than the grant.
async fn refresh(
    cx: &Cx,
    client: &st::ClientRow,
    form: &TokenForm,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<TokenAnswer, OAuthError> {
    let presented = form
        .refresh_token
        .as_deref()
        .ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is required"))?;
    let hash = secrets::hash(presented);
    let invalid = || OAuthError::invalid_grant("The refresh token is not valid.");
    let row = st::find_token(cx.db().reader(), &hash)
        .await?
        .filter(|t| t.kind == st::REFRESH)
        .ok_or_else(invalid)?;
    let grant = st::find_grant(cx.db().reader(), &row.grant_id)
        .await?
        .ok_or_else(invalid)?;
    if grant.client_id != client.id {
        return Err(invalid());
    }
    if let Some(s) = form.scope.as_deref() {
        let asked = rules::parse_scopes(s)
            .map_err(|bad| OAuthError::bad("invalid_scope", format!("{bad} is not a scope")))?;
        let held = store::split_list(&grant.scopes);
        if asked.iter().any(|c| !held.iter().any(|h| h == c.as_str())) {
            return Err(OAuthError::bad(
                "invalid_scope",
                "a refresh may not widen the grant's scopes",
            ));
        }
    }
    if row.used_at.is_some() {
        return Err(refresh_reused(cx, grant, ip, user_agent).await);
    }
    if row.expires_at <= now || grant.status != "ACTIVE" {
        return Err(invalid());
    }
    let mut tx = cx.db().begin().await?;
    if st::spend_refresh(&mut *tx, &hash, now).await? != 1 {
        drop(tx);
        return Err(refresh_reused(cx, grant, ip, user_agent).await);
    }
    let answer = issue(&mut tx, &grant, now).await?;
    tx.commit().await?;
    Ok(answer)
}

/// Issues an access token and a fresh refresh token for `grant`, in `tx`.
async fn issue(
    tx: &mut sqlx::AnyConnection,
    grant: &st::GrantRow,
    now: i64,
) -> Result<TokenAnswer, sqlx::Error> {
    let access = rules::new_secret(rules::ACCESS_TOKEN_PREFIX);
    let refresh = rules::new_secret(rules::REFRESH_TOKEN_PREFIX);
    for (secret, kind, ttl) in [
        (&access, st::ACCESS, ACCESS_TTL_MS),
        (&refresh, st::REFRESH, REFRESH_TTL_MS),
    ] {
        st::insert_token(
            &mut *tx,
            &st::TokenRow {
                token_hash: secrets::hash(secret),
                grant_id: grant.id.clone(),
                kind: kind.to_string(),
                expires_at: now + ttl,
                used_at: None,
                created_at: now,
            },
        )
        .await?;
    }
    Ok(TokenAnswer {
        access_token: access,
        token_type: "Bearer",
        expires_in: ACCESS_TTL_MS / 1000,
        refresh_token: refresh,
        scope: store::split_list(&grant.scopes).join(" "),
    })
}

/// A spent refresh token came back: someone holds a copy, so the whole grant is revoked
/// (OAuth 2.1 section 4.3.1) and audited.
async fn refresh_reused(
    cx: &Cx,
    grant: st::GrantRow,
    ip: Option<String>,
    user_agent: Option<String>,
) -> OAuthError {
    let revoked = async {
        let actor = grant_actor(cx, &grant, ip, user_agent).await?;
        revoke_grant(
            cx,
            &actor,
            &grant,
            "mcp_grant.revoke_refresh_reuse",
            "refresh token reused",
        )
        .await
    };
    match revoked.await {
        Ok(()) => OAuthError::invalid_grant(
            "The refresh token was already used; the whole grant is revoked. Authorize again.",
        ),
        Err(e) => e.into(),
    }
}
