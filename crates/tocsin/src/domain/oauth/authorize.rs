//! The authorization request (`GET /auth/oauth2/authorize`): the client and its redirect URI
//! (errors about them are shown on a page of this server, nothing may be sent to them), then
//! PKCE, state, resource and scopes (errors go back to the client), and the request stored
//! for the consent page once a person is signed in.

use serde::Deserialize;

use crate::auth::capability::Capability;
use crate::auth::oauth::{self as rules, CONSENT_TTL_MS};
use crate::auth::{secrets, Caller};
use crate::config::Config;
use crate::cx::Cx;
use crate::store::{self, oauth as st};

/// The query of `GET /auth/oauth2/authorize`.
#[derive(Debug, Default, Deserialize)]
pub struct AuthorizeQuery {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
}

/// Where an authorization request goes next.
#[derive(Debug)]
pub enum Authorized {
    /// No session: the person signs in first, then comes back to the same URL.
    SignIn,
    /// The consent page, with the code that names this pending request.
    Consent {
        consent_code: String,
        client_id: String,
        scope: String,
    },
}

/// A refused authorization request.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or the redirect URI cannot be trusted: nothing may be sent to it, so the
    /// person is shown this text on a page of this server.
    Page(String),
    /// Sent back to the client's redirect URI with `error`, `error_description` and `state`.
    Redirect(String),
}

impl From<sqlx::Error> for AuthorizeError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "database error in the OAuth server");
        AuthorizeError::Page("A database error stopped the request: retry.".into())
    }
}

/// `redirect_uri` with `params` added to its query.
pub fn with_query(redirect_uri: &str, params: &[(&str, Option<&str>)]) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut u) => {
            {
                let mut q = u.query_pairs_mut();
                for (k, v) in params {
                    if let Some(v) = v {
                        q.append_pair(k, v);
                    }
                }
            }
            u.to_string()
        }
        Err(_) => redirect_uri.to_string(),
    }
}

fn registered_uris(c: &st::ClientRow) -> Vec<&str> {
    c.redirect_uris.lines().filter(|l| !l.is_empty()).collect()
}

/// Checks an authorization request. `caller` is the signed-in person (`None` without a
/// session). Errors about the client or its redirect URI are shown on a page; others go back
/// to the client. With a session, the request is stored for the consent page.
pub async fn authorize(
    cx: &Cx,
    caller: Option<&Caller>,
    q: &AuthorizeQuery,
) -> Result<Authorized, AuthorizeError> {
    let client_id = q
        .client_id
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| AuthorizeError::Page("The request names no client (client_id).".into()))?;
    let client = st::find_client(cx.db().reader(), client_id)
        .await?
        .ok_or_else(|| {
            AuthorizeError::Page(
                "The application asking for access is not registered with this server.".into(),
            )
        })?;
    let redirect_uri = redirect_uri(&client, q)?;
    let issuer = rules::issuer(cx.config());
    let back = |error: &str, description: &str| {
        AuthorizeError::Redirect(with_query(
            &redirect_uri,
            &[
                ("error", Some(error)),
                ("error_description", Some(description)),
                ("state", q.state.as_deref()),
                ("iss", Some(issuer.as_str())),
            ],
        ))
    };
    let challenge = check_request(q, &back)?;
    let expected_resource = resource(cx.config(), q, &back)?;
    let scopes = scopes(q, &client, &back)?;
    let Some(caller) = caller else {
        return Ok(Authorized::SignIn);
    };
    let now = cx.clock().now_ms();
    let consent_code = secrets::generate("");
    let row = st::RequestRow {
        consent_hash: secrets::hash(&consent_code),
        client_id: client.id.clone(),
        user_id: caller.user_id.clone(),
        workspace_id: caller.workspace_id.clone(),
        redirect_uri,
        scopes: store::join_list(scopes.iter().map(|c| c.as_str())),
        state: q.state.clone(),
        code_challenge: challenge.to_string(),
        // Bound when the client names it (RFC 8707); every node then checks it on `/mcp`.
        resource: q.resource.as_ref().map(|_| expected_resource),
        expires_at: now + CONSENT_TTL_MS,
    };
    let mut tx = cx.db().begin().await?;
    st::purge_requests(&mut *tx, now).await?;
    st::insert_request(&mut *tx, &row).await?;
    tx.commit().await?;
    Ok(Authorized::Consent {
        consent_code,
        client_id: client.id,
        scope: rules::scope_string(&scopes),
    })
}

/// Where the answer goes: the redirect URI asked for when the client registered it, or the
/// only one it registered.
fn redirect_uri(client: &st::ClientRow, q: &AuthorizeQuery) -> Result<String, AuthorizeError> {
    let uris = registered_uris(client);
    match q.redirect_uri.as_deref() {
        Some(r) => uris
            .iter()
            .any(|reg| rules::redirect_matches(reg, r))
            .then(|| r.to_string()),
        // RFC 6749 section 3.1.2.3: may be left out when exactly one is registered.
        None if uris.len() == 1 => Some(uris[0].to_string()),
        None => None,
    }
    .ok_or_else(|| {
        AuthorizeError::Page(
            "The application's redirect address is not one it registered, so it cannot be sent an answer.".into(),
        )
    })
}

/// The response type, PKCE (S256 only) and state; the code challenge when they pass.
fn check_request<'q>(
    q: &'q AuthorizeQuery,
    back: &dyn Fn(&str, &str) -> AuthorizeError,
) -> Result<&'q str, AuthorizeError> {
    if q.response_type.as_deref() != Some("code") {
        return Err(back(
            "unsupported_response_type",
            "response_type must be code",
        ));
    }
    let challenge = q.code_challenge.as_deref().unwrap_or_default();
    if challenge.is_empty() {
        return Err(back(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method S256",
        ));
    }
    if q.code_challenge_method.as_deref() != Some("S256") {
        return Err(back(
            "invalid_request",
            "code_challenge_method must be S256 (plain is not accepted)",
        ));
    }
    if !rules::valid_challenge(challenge) {
        return Err(back(
            "invalid_request",
            "code_challenge must be the 43-character base64url SHA-256 of the verifier",
        ));
    }
    if q.state.as_deref().is_some_and(|s| s.len() > 1000) {
        return Err(back(
            "invalid_request",
            "state is longer than 1000 characters",
        ));
    }
    Ok(challenge)
}

/// This server's MCP endpoint, which `resource` must name when given (RFC 8707).
fn resource(
    config: &Config,
    q: &AuthorizeQuery,
    back: &dyn Fn(&str, &str) -> AuthorizeError,
) -> Result<String, AuthorizeError> {
    let expected_resource = rules::resource(config);
    if let Some(r) = q.resource.as_deref() {
        if r.trim_end_matches('/') != expected_resource {
            return Err(back(
                "invalid_target",
                &format!("resource must be this server's MCP endpoint, {expected_resource}"),
            ));
        }
    }
    Ok(expected_resource)
}

/// The scopes asked for: the request's, else the client's registered ones, else every scope a
/// token may carry; at least one.
fn scopes(
    q: &AuthorizeQuery,
    client: &st::ClientRow,
    back: &dyn Fn(&str, &str) -> AuthorizeError,
) -> Result<Vec<Capability>, AuthorizeError> {
    let asked = match q.scope.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(s) => Some(s.to_string()),
        None if !client.scope.is_empty() => Some(client.scope.clone()),
        None => None,
    };
    let scopes = match &asked {
        Some(s) => rules::parse_scopes(s).map_err(|bad| {
            back(
                "invalid_scope",
                &format!("{bad} is not a scope this server grants"),
            )
        })?,
        None => crate::auth::capability::TOKEN_CAPABILITIES.to_vec(),
    };
    if scopes.is_empty() {
        return Err(back("invalid_scope", "no scope asked for"));
    }
    Ok(scopes)
}
