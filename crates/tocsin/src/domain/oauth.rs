//! The OAuth 2.1 authorization server's operations for MCP clients: dynamic client
//! registration (RFC 7591), the authorization request and the person's consent (PKCE S256 only,
//! RFC 8707 `resource` bound into the grant), the token endpoint (authorization code and
//! refresh token grants; refresh tokens rotate on every use and a reused one revokes the whole
//! grant, OAuth 2.1 section 4.3.1) and revocation (RFC 7009).
//!
//! The protocol endpoints answer in the RFCs' own error format (`{"error",
//! "error_description"}`), not the REST envelope: clients written against the RFCs parse it.
//! That is [`OAuthError`]. The consent, which the dashboard posts with the session cookie, is
//! a REST-style call and refuses with [`DomainError`] like every other.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{DomainError, FieldError};
use crate::app::Core;
use crate::audit::{self, Entry};
use crate::auth::capability::{CapSet, Capability};
use crate::auth::oauth::{
    self as rules, ACCESS_TTL_MS, CODE_TTL_MS, CONSENT_TTL_MS, REFRESH_TTL_MS,
};
use crate::auth::{caps, secrets, Caller, Via};
use crate::cluster::feed::Notice;
use crate::ids::new_id;
use crate::store::{self, oauth as st};

/// A refusal of a protocol endpoint, as RFC 6749 section 5.2 and RFC 7591 section 3.2.2 write
/// it: `status`, `error` (the RFC's code) and a description for people.
#[derive(Debug)]
pub struct OAuthError {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }
    fn bad(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError::new(400, error, description)
    }
    fn invalid_grant(description: impl Into<String>) -> Self {
        OAuthError::bad("invalid_grant", description)
    }
    fn invalid_client() -> Self {
        OAuthError::new(
            401,
            "invalid_client",
            "Client authentication failed: unknown client, or a missing or wrong client secret.",
        )
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "database error in the OAuth server");
        OAuthError::new(
            500,
            "server_error",
            "A database error stopped the request: retry.",
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Registration (RFC 7591)

/// Client metadata a client registers with. Fields this server does not use are ignored, as
/// RFC 7591 asks.
#[derive(Debug, Deserialize)]
pub struct ClientMetadata {
    #[serde(default)]
    pub redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    pub grant_types: Option<Vec<String>>,
    #[serde(default)]
    pub response_types: Option<Vec<String>>,
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_uri: Option<String>,
    #[serde(default)]
    pub logo_uri: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub software_id: Option<String>,
    #[serde(default)]
    pub software_version: Option<String>,
}

/// The registration answer (RFC 7591 section 3.2.1).
#[derive(Debug, Serialize)]
pub struct RegisteredClient {
    pub client_id: String,
    pub client_id_issued_at: i64,
    /// Confidential clients only; shown this once, stored hashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
    #[serde(flatten)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

const AUTH_METHODS: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];

fn text_field(v: &Option<String>, name: &str, max: usize) -> Result<(), OAuthError> {
    match v {
        Some(s) if s.chars().count() > max => Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("{name} is longer than {max} characters"),
        )),
        _ => Ok(()),
    }
}

/// Registers a client: public (`token_endpoint_auth_method: none`) or confidential (a secret
/// is generated, returned once and stored hashed).
pub async fn register(core: &Core, meta: ClientMetadata) -> Result<RegisteredClient, OAuthError> {
    let uris = meta.redirect_uris.clone().unwrap_or_default();
    if uris.is_empty() {
        return Err(OAuthError::bad(
            "invalid_redirect_uri",
            "redirect_uris must name at least one redirect URI",
        ));
    }
    if uris.len() > 10 {
        return Err(OAuthError::bad(
            "invalid_redirect_uri",
            "at most 10 redirect URIs may be registered",
        ));
    }
    for u in &uris {
        if u.len() > 2000 {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "a redirect URI is longer than 2000 characters",
            ));
        }
        rules::check_redirect_uri(u).map_err(|m| OAuthError::bad("invalid_redirect_uri", m))?;
    }
    let method = meta
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| "client_secret_basic".into());
    if !AUTH_METHODS.contains(&method.as_str()) {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("token_endpoint_auth_method {method} is not supported: use none, client_secret_basic or client_secret_post"),
        ));
    }
    let grant_types = meta
        .grant_types
        .clone()
        .unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
    if let Some(g) = grant_types
        .iter()
        .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("grant type {g} is not supported: use authorization_code and refresh_token"),
        ));
    }
    let response_types = meta
        .response_types
        .clone()
        .unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            "only the response type code is supported",
        ));
    }
    let scope = match &meta.scope {
        Some(s) => {
            let caps = rules::parse_scopes(s).map_err(|bad| {
                OAuthError::bad(
                    "invalid_client_metadata",
                    format!("scope {bad} is not one of the server's scopes"),
                )
            })?;
            rules::scope_string(&caps)
        }
        None => String::new(),
    };
    text_field(&meta.client_name, "client_name", 200)?;
    text_field(&meta.client_uri, "client_uri", 2000)?;
    text_field(&meta.logo_uri, "logo_uri", 2000)?;
    text_field(&meta.software_id, "software_id", 200)?;
    text_field(&meta.software_version, "software_version", 100)?;

    let now = core.clock().now_ms();
    let id = format!("{}{}", rules::CLIENT_ID_PREFIX, new_id().replace('-', ""));
    let secret = (method != "none").then(|| rules::new_secret(rules::CLIENT_SECRET_PREFIX));
    let name = meta
        .client_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "Unnamed MCP client".into());
    let mut out = serde_json::Map::new();
    out.insert("redirect_uris".into(), json!(uris));
    out.insert("token_endpoint_auth_method".into(), json!(method));
    out.insert("grant_types".into(), json!(grant_types));
    out.insert("response_types".into(), json!(response_types));
    out.insert("client_name".into(), json!(name));
    if !scope.is_empty() {
        out.insert("scope".into(), json!(scope));
    }
    for (k, v) in [
        ("client_uri", &meta.client_uri),
        ("logo_uri", &meta.logo_uri),
        ("software_id", &meta.software_id),
        ("software_version", &meta.software_version),
    ] {
        if let Some(v) = v {
            out.insert(k.into(), json!(v));
        }
    }
    let row = st::ClientRow {
        id: id.clone(),
        name,
        redirect_uris: uris.join("\n"),
        token_endpoint_auth_method: method,
        secret_hash: secret.as_deref().map(secrets::hash),
        scope,
        metadata: serde_json::Value::Object(out.clone()).to_string(),
        created_at: now,
    };
    st::insert_client(core.db().writer(), &row).await?;
    Ok(RegisteredClient {
        client_id: id,
        client_id_issued_at: now / 1000,
        client_secret_expires_at: secret.as_ref().map(|_| 0),
        client_secret: secret,
        metadata: out,
    })
}

// ---------------------------------------------------------------------------------------------
// Authorization request and consent

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
    core: &Core,
    caller: Option<&Caller>,
    q: &AuthorizeQuery,
) -> Result<Authorized, AuthorizeError> {
    let client_id = q
        .client_id
        .as_deref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| AuthorizeError::Page("The request names no client (client_id).".into()))?;
    let client = st::find_client(core.db().reader(), client_id)
        .await?
        .ok_or_else(|| {
            AuthorizeError::Page(
                "The application asking for access is not registered with this server.".into(),
            )
        })?;
    let uris = registered_uris(&client);
    let redirect_uri = match q.redirect_uri.as_deref() {
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
    })?;
    let issuer = rules::issuer(core.config());
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
    let expected_resource = rules::resource(core.config());
    if let Some(r) = q.resource.as_deref() {
        if r.trim_end_matches('/') != expected_resource {
            return Err(back(
                "invalid_target",
                &format!("resource must be this server's MCP endpoint, {expected_resource}"),
            ));
        }
    }
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
    let Some(caller) = caller else {
        return Ok(Authorized::SignIn);
    };
    let now = core.clock().now_ms();
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
    let mut tx = core.db().begin().await?;
    st::purge_requests(&mut *tx, now).await?;
    st::insert_request(&mut *tx, &row).await?;
    tx.commit().await?;
    Ok(Authorized::Consent {
        consent_code,
        client_id: client.id,
        scope: rules::scope_string(&scopes),
    })
}

/// The consent page's answer, `POST /auth/oauth2/consent`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consent {
    /// The `consent_code` the authorize endpoint put in the consent page's URL.
    pub consent_code: String,
    /// True to grant access, false to refuse it.
    pub accept: bool,
    /// The scopes granted, space-separated: those asked for, or fewer. Absent: all asked for.
    pub scope: Option<String>,
}

impl super::input::Validate for Consent {
    fn validate(&self) -> Vec<FieldError> {
        if self.consent_code.is_empty() || self.consent_code.len() > 200 {
            vec![FieldError::new(
                "consent_code",
                "must be the consent code of the page",
            )]
        } else {
            Vec::new()
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ConsentAnswer {
    /// Where the browser goes next: the client's redirect URI with `code` and `state` (or
    /// `error=access_denied`).
    #[serde(rename = "redirectURI")]
    pub redirect_uri: String,
}

/// Records the signed-in person's answer to a pending authorization request. Accepting makes
/// a grant (scopes: those asked for, narrowed by the person, never beyond their role) and a
/// single-use authorization code valid 60 s.
pub async fn consent(
    core: &Core,
    caller: &Caller,
    input: Consent,
) -> Result<ConsentAnswer, DomainError> {
    caller.require::<caps::SignedIn>()?;
    super::input::Validate::check(&input)?;
    let now = core.clock().now_ms();
    let unknown = || {
        DomainError::field(
            "consent_code",
            "no pending authorization request has this code (it was answered, expired after 10 minutes, or belongs to someone else): start again from the application",
        )
    };
    let hash = secrets::hash(&input.consent_code);
    let mut tx = core.db().begin().await?;
    let req = st::take_request(&mut *tx, &hash)
        .await?
        .ok_or_else(unknown)?;
    if !secrets::hashes_equal(&req.consent_hash, &hash)
        || req.user_id != caller.user_id
        || req.workspace_id != caller.workspace_id
        || req.expires_at <= now
    {
        // The request stays consumed only if it was the caller's own.
        if req.user_id == caller.user_id {
            tx.commit().await?;
        }
        return Err(unknown());
    }
    let issuer = rules::issuer(core.config());
    if !input.accept {
        tx.commit().await?;
        return Ok(ConsentAnswer {
            redirect_uri: with_query(
                &req.redirect_uri,
                &[
                    ("error", Some("access_denied")),
                    (
                        "error_description",
                        Some("The person declined the request."),
                    ),
                    ("state", req.state.as_deref()),
                    ("iss", Some(issuer.as_str())),
                ],
            ),
        });
    }
    let asked: Vec<Capability> = store::split_list(&req.scopes)
        .iter()
        .filter_map(|s| Capability::parse(s))
        .collect();
    let chosen = match input.scope.as_deref() {
        Some(s) => {
            let narrowed = rules::parse_scopes(s).map_err(|bad| {
                DomainError::field("scope", format!("{bad} is not a scope this server grants"))
            })?;
            if let Some(extra) = narrowed.iter().find(|c| !asked.contains(c)) {
                return Err(DomainError::field(
                    "scope",
                    format!(
                        "{} was not asked for: you may only narrow the scopes",
                        extra.as_str()
                    ),
                ));
            }
            narrowed
        }
        None => asked,
    };
    // The role's ceiling: a grant never carries what its person does not hold.
    let granted = rules::ordered(CapSet::of(&chosen).intersect(caller.caps));
    if granted.is_empty() {
        return Err(DomainError::field(
            "scope",
            "grants nothing: keep at least one scope your role holds",
        ));
    }
    let grant = st::GrantRow {
        id: new_id(),
        workspace_id: req.workspace_id.clone(),
        user_id: req.user_id.clone(),
        client_id: req.client_id.clone(),
        scopes: store::join_list(granted.iter().map(|c| c.as_str())),
        resource: req.resource.clone(),
        status: "ACTIVE".into(),
        last_used_at: None,
        created_at: now,
        updated_at: now,
    };
    let code = secrets::generate("");
    st::insert_grant(&mut *tx, &grant).await?;
    st::insert_code(
        &mut *tx,
        &st::CodeRow {
            code_hash: secrets::hash(&code),
            grant_id: grant.id.clone(),
            redirect_uri: req.redirect_uri.clone(),
            code_challenge: req.code_challenge.clone(),
            expires_at: now + CODE_TTL_MS,
            used_at: None,
        },
    )
    .await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "mcp_grant.create",
            resource_type: "mcp_grant",
            resource_id: &grant.id,
            metadata: json!({"clientId": grant.client_id, "scopes": rules::scope_string(&granted)}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(ConsentAnswer {
        redirect_uri: with_query(
            &req.redirect_uri,
            &[
                ("code", Some(code.as_str())),
                ("state", req.state.as_deref()),
                ("iss", Some(issuer.as_str())),
            ],
        ),
    })
}

// ---------------------------------------------------------------------------------------------
// Token endpoint and revocation

/// The client's credentials as the token and revocation endpoints received them.
#[derive(Debug, Default)]
pub struct ClientAuth {
    /// From HTTP Basic (`client_secret_basic`), if sent.
    pub basic: Option<(String, String)>,
    /// `client_id` and `client_secret` of the form body.
    pub form_id: Option<String>,
    pub form_secret: Option<String>,
}

/// Identifies and authenticates the client: a public client by its id alone, a confidential
/// one by its secret, compared in constant time.
async fn client_of(core: &Core, auth: &ClientAuth) -> Result<st::ClientRow, OAuthError> {
    let (id, secret) = match &auth.basic {
        Some((id, secret)) => (id.clone(), Some(secret.clone())),
        None => (
            auth.form_id.clone().ok_or_else(|| {
                OAuthError::new(
                    401,
                    "invalid_client",
                    "The request names no client (client_id).",
                )
            })?,
            auth.form_secret.clone(),
        ),
    };
    let client = st::find_client(core.db().reader(), &id)
        .await?
        .ok_or_else(OAuthError::invalid_client)?;
    match (&client.secret_hash, secret) {
        (None, _) => Ok(client),
        (Some(stored), Some(given)) if secrets::hashes_equal(stored, &secrets::hash(&given)) => {
            Ok(client)
        }
        _ => Err(OAuthError::invalid_client()),
    }
}

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

/// Who the audit log names for what the token endpoint does on a grant's behalf: the grant's
/// person, from the client's address.
async fn grant_actor(
    core: &Core,
    g: &st::GrantRow,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, sqlx::Error> {
    let user = store::users::get(core.db().reader(), &g.user_id).await?;
    Ok(Caller {
        user_id: g.user_id.clone(),
        email_verified: user.as_ref().is_some_and(|u| u.email_verified_at.is_some()),
        email: user.map(|u| u.email).unwrap_or_default(),
        workspace_id: g.workspace_id.clone(),
        caps: CapSet::EMPTY,
        via: Via::OAuth {
            grant_id: g.id.clone(),
        },
        ip,
        user_agent,
    })
}

/// Revokes a grant (its codes and tokens go with it), audits why, and tells every node.
async fn revoke_grant(
    core: &Core,
    actor: &Caller,
    g: &st::GrantRow,
    action: &str,
    reason: &str,
) -> Result<(), sqlx::Error> {
    let now = core.clock().now_ms();
    let mut tx = core.db().begin().await?;
    let changed = st::revoke_grant(&mut tx, &g.id, now).await?;
    if changed > 0 {
        audit::record(
            &mut *tx,
            actor,
            Entry {
                action,
                resource_type: "mcp_grant",
                resource_id: &g.id,
                metadata: json!({"clientId": g.client_id, "reason": reason}),
            },
            now,
        )
        .await?;
    }
    tx.commit().await?;
    core.announce(Notice::OAuthGrantRevoked {
        grant_id: g.id.clone(),
    });
    Ok(())
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

/// The token endpoint: the `authorization_code` grant (with the PKCE verifier and the same
/// redirect URI) and the `refresh_token` grant (the presented token is spent; presenting a
/// spent one again revokes the whole grant).
pub async fn token(
    core: &Core,
    form: TokenForm,
    auth: ClientAuth,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<TokenAnswer, OAuthError> {
    let client = client_of(core, &auth).await?;
    if let Some(r) = form.resource.as_deref() {
        if r.trim_end_matches('/') != rules::resource(core.config()) {
            return Err(OAuthError::bad(
                "invalid_target",
                "resource must be this server's MCP endpoint",
            ));
        }
    }
    let now = core.clock().now_ms();
    match form.grant_type.as_deref() {
        Some("authorization_code") => {
            let code = form
                .code
                .as_deref()
                .ok_or_else(|| OAuthError::bad("invalid_request", "code is required"))?;
            let verifier = form.code_verifier.as_deref().ok_or_else(|| {
                OAuthError::bad("invalid_request", "code_verifier is required (PKCE)")
            })?;
            let hash = secrets::hash(code);
            let row = st::find_code(core.db().reader(), &hash)
                .await?
                .ok_or_else(|| OAuthError::invalid_grant("The authorization code is not valid."))?;
            let grant = st::find_grant(core.db().reader(), &row.grant_id)
                .await?
                .ok_or_else(|| OAuthError::invalid_grant("The authorization code is not valid."))?;
            if grant.client_id != client.id {
                return Err(OAuthError::invalid_grant(
                    "The authorization code was issued to another client.",
                ));
            }
            if row.used_at.is_some() {
                // RFC 6749 section 4.1.2: a code used twice revokes what it issued.
                let actor = grant_actor(core, &grant, ip, user_agent).await?;
                revoke_grant(
                    core,
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
            let mut tx = core.db().begin().await?;
            if st::use_code(&mut *tx, &hash, now).await? != 1 {
                return Err(OAuthError::invalid_grant(
                    "The authorization code was already used.",
                ));
            }
            let answer = issue(&mut tx, &grant, now).await?;
            tx.commit().await?;
            Ok(answer)
        }
        Some("refresh_token") => {
            let presented = form
                .refresh_token
                .as_deref()
                .ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is required"))?;
            let hash = secrets::hash(presented);
            let invalid = || OAuthError::invalid_grant("The refresh token is not valid.");
            let row = st::find_token(core.db().reader(), &hash)
                .await?
                .filter(|t| t.kind == st::REFRESH)
                .ok_or_else(invalid)?;
            let grant = st::find_grant(core.db().reader(), &row.grant_id)
                .await?
                .ok_or_else(invalid)?;
            if grant.client_id != client.id {
                return Err(invalid());
            }
            if let Some(s) = form.scope.as_deref() {
                let asked = rules::parse_scopes(s).map_err(|bad| {
                    OAuthError::bad("invalid_scope", format!("{bad} is not a scope"))
                })?;
                let held = store::split_list(&grant.scopes);
                if asked.iter().any(|c| !held.iter().any(|h| h == c.as_str())) {
                    return Err(OAuthError::bad(
                        "invalid_scope",
                        "a refresh may not widen the grant's scopes",
                    ));
                }
            }
            if row.used_at.is_some() {
                return Err(refresh_reused(core, grant, ip, user_agent).await);
            }
            if row.expires_at <= now || grant.status != "ACTIVE" {
                return Err(invalid());
            }
            let mut tx = core.db().begin().await?;
            if st::spend_refresh(&mut *tx, &hash, now).await? != 1 {
                drop(tx);
                return Err(refresh_reused(core, grant, ip, user_agent).await);
            }
            let answer = issue(&mut tx, &grant, now).await?;
            tx.commit().await?;
            Ok(answer)
        }
        Some(other) => Err(OAuthError::bad(
            "unsupported_grant_type",
            format!("grant_type {other} is not supported: use authorization_code or refresh_token"),
        )),
        None => Err(OAuthError::bad("invalid_request", "grant_type is required")),
    }
}

/// A spent refresh token came back: someone holds a copy, so the whole grant is revoked
/// (OAuth 2.1 section 4.3.1) and audited.
async fn refresh_reused(
    core: &Core,
    grant: st::GrantRow,
    ip: Option<String>,
    user_agent: Option<String>,
) -> OAuthError {
    let revoked = async {
        let actor = grant_actor(core, &grant, ip, user_agent).await?;
        revoke_grant(
            core,
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

/// The form of `POST /auth/oauth2/revoke` (RFC 7009).
#[derive(Debug, Default, Deserialize)]
pub struct RevokeForm {
    pub token: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// Revokes a token the client holds. A refresh token takes its whole grant with it; an access
/// token stops alone. Unknown tokens, and tokens of other clients, change nothing and answer
/// the same (RFC 7009 section 2.2).
pub async fn revoke(
    core: &Core,
    form: RevokeForm,
    auth: ClientAuth,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<(), OAuthError> {
    let client = client_of(core, &auth).await?;
    let presented = form
        .token
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::bad("invalid_request", "token is required"))?;
    let hash = secrets::hash(presented);
    let Some(row) = st::find_token(core.db().reader(), &hash).await? else {
        return Ok(());
    };
    let Some(grant) = st::find_grant(core.db().reader(), &row.grant_id).await? else {
        return Ok(());
    };
    if grant.client_id != client.id {
        return Ok(());
    }
    if row.kind == st::REFRESH {
        let actor = grant_actor(core, &grant, ip, user_agent).await?;
        revoke_grant(
            core,
            &actor,
            &grant,
            "mcp_grant.revoke",
            "refresh token revoked by the client",
        )
        .await?;
    } else {
        st::delete_token(core.db().writer(), &hash).await?;
        // Forgets the grant's cached tokens; the others are read again on their next use.
        core.announce(Notice::OAuthGrantRevoked {
            grant_id: grant.id.clone(),
        });
    }
    Ok(())
}

/// Revokes a grant for its person (the grants list's delete).
pub(super) async fn revoke_for_person(
    core: &Core,
    caller: &Caller,
    grant: &st::GrantRow,
) -> Result<(), DomainError> {
    revoke_grant(
        core,
        caller,
        grant,
        "mcp_grant.delete",
        "deleted by its person",
    )
    .await?;
    Ok(())
}
