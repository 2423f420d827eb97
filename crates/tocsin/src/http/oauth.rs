//! The OAuth 2.1 authorization server's endpoints for MCP clients (outside the REST document,
//! like `/auth/sign-in`): discovery (RFC 8414 at `/.well-known/oauth-authorization-server/auth`,
//! RFC 9728 at `/.well-known/oauth-protected-resource`), registration, authorize, consent,
//! token and revocation under `/auth/oauth2`. The operations are `domain::oauth`'s; this
//! module reads forms and credentials, answers protocol errors in the RFCs' JSON, and sends
//! people to the dashboard's sign-in and consent pages. Errors of the authorize endpoint that
//! cannot go back to the client are an HTML page (the path is outside the JSON error guard).
//! Machine-facing endpoints allow any origin, for MCP clients running in a browser.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, options, post};
use axum::{Json, Router};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::json;

use super::auth::{authenticate, session_token, Auth};
use super::extract::ApiJson;
use crate::auth::capability::TOKEN_CAPABILITIES;
use crate::auth::{caps, oauth as rules};
use crate::domain::oauth::{
    self, AuthorizeError, AuthorizeQuery, Authorized, ClientAuth, ClientMetadata, Consent,
    ConsentAnswer, OAuthError, RevokeForm, TokenForm,
};
use crate::domain::DomainError;
use crate::http::error::ApiResult;
use crate::http::AppState;

/// The authorization endpoint's path (its errors are pages for people).
pub const AUTHORIZE_PATH: &str = "/auth/oauth2/authorize";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server/auth",
            get(server_metadata).options(preflight),
        )
        // Clients that look the metadata up without the issuer's path find it here too.
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata).options(preflight),
        )
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata).options(preflight),
        )
        // RFC 9728 section 3.1: the resource `{base_url}/mcp` inserts its path after the name.
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata).options(preflight),
        )
        .route("/auth/oauth2/register", post(register).options(preflight))
        .route(AUTHORIZE_PATH, get(authorize))
        .route("/auth/oauth2/consent", post(consent))
        .route("/auth/oauth2/token", post(token).options(preflight))
        .route("/auth/oauth2/revoke", post(revoke).options(preflight))
        .route("/auth/oauth2/{*rest}", options(preflight))
}

fn cors(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    r
}

async fn preflight() -> Response {
    let mut r = cors(StatusCode::NO_CONTENT.into_response());
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Authorization, Content-Type, MCP-Protocol-Version"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

fn scopes_supported() -> Vec<&'static str> {
    TOKEN_CAPABILITIES.iter().map(|c| c.as_str()).collect()
}

/// RFC 8414 authorization server metadata.
async fn server_metadata(State(state): State<AppState>) -> Response {
    let base = rules::base_url(state.config());
    cors(
        Json(json!({
            "issuer": rules::issuer(state.config()),
            "authorization_endpoint": format!("{base}{AUTHORIZE_PATH}"),
            "token_endpoint": format!("{base}/auth/oauth2/token"),
            "registration_endpoint": format!("{base}/auth/oauth2/register"),
            "revocation_endpoint": format!("{base}/auth/oauth2/revoke"),
            "scopes_supported": scopes_supported(),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "service_documentation": format!("{base}/openapi.json"),
        }))
        .into_response(),
    )
}

/// RFC 9728 protected resource metadata of `/mcp`.
async fn resource_metadata(State(state): State<AppState>) -> Response {
    cors(
        Json(json!({
            "resource": rules::resource(state.config()),
            "authorization_servers": [rules::issuer(state.config())],
            "scopes_supported": scopes_supported(),
            "bearer_methods_supported": ["header"],
            "resource_name": "Tocsin MCP server",
        }))
        .into_response(),
    )
}

/// An RFC 6749 / RFC 7591 error answer.
fn oauth_error(e: OAuthError, basic_used: bool) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut r = (
        status,
        Json(json!({"error": e.error, "error_description": e.description})),
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if status == StatusCode::UNAUTHORIZED && basic_used {
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"tocsin\""),
        );
    }
    cors(r)
}

/// The registration limit's refusal, if this address is over it.
fn limited(state: &AppState, ip: Option<&str>) -> Option<Response> {
    state
        .limits()
        .oauth_register_ip
        .check(ip.unwrap_or("unknown"))
        .err()
        .map(|retry_after| cors(DomainError::RateLimited { retry_after }.into_response()))
}

fn parts_of(headers: HeaderMap) -> Parts {
    let (mut parts, _) = axum::http::Request::new(()).into_parts();
    parts.headers = headers;
    parts
}

async fn register(
    State(state): State<AppState>,
    meta: crate::domain::users::ClientMeta,
    body: Bytes,
) -> Response {
    if let Some(r) = limited(&state, meta.ip.as_deref()) {
        return r;
    }
    let parsed: ClientMetadata = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(e) => {
            return oauth_error(
                OAuthError::new(
                    400,
                    "invalid_client_metadata",
                    format!("the body is not client metadata as JSON: {e}"),
                ),
                false,
            )
        }
    };
    match oauth::register(state.cx(), parsed).await {
        Ok(c) => {
            let mut r = (StatusCode::CREATED, Json(c)).into_response();
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            cors(r)
        }
        Err(e) => oauth_error(e, false),
    }
}

/// A page for the person when the request cannot go back to the client (the people pages'
/// layout, `super::people_page`).
fn error_page(status: StatusCode, message: &str) -> Response {
    super::people_page::PeoplePage::new(
        "This authorization request cannot be completed",
        maud::html! {
            p { (message) }
            p { "Go back to the application and start again, or tell its developer." }
        },
    )
    .respond(status)
}

/// A 302 Found to `to`, as the authorization flow's redirects are.
fn found(to: &str) -> Response {
    match HeaderValue::from_str(to) {
        Ok(v) => (StatusCode::FOUND, [(header::LOCATION, v)]).into_response(),
        Err(_) => error_page(
            StatusCode::BAD_REQUEST,
            "The address to send you to is not valid.",
        ),
    }
}

async fn authorize(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let raw = raw.unwrap_or_default();
    let q: AuthorizeQuery = match serde_urlencoded::from_str(&raw) {
        Ok(q) => q,
        Err(e) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                &format!("The request's parameters cannot be read: {e}."),
            )
        }
    };
    let parts = parts_of(headers);
    // A stale or unknown cookie counts as no session: the person signs in again.
    let caller = if session_token(&parts).is_some() {
        authenticate(&parts, &state, true).await.ok()
    } else {
        None
    };
    match oauth::authorize(state.cx(), caller.as_ref(), &q).await {
        Ok(Authorized::SignIn) => {
            let here = format!("{AUTHORIZE_PATH}?{raw}");
            let Some(here) = super::next::local_path(&here, &state.config().public_url) else {
                return error_page(
                    StatusCode::BAD_REQUEST,
                    "The request's parameters cannot be read.",
                );
            };
            let next: String = form_urlencoded::byte_serialize(here.as_bytes()).collect();
            found(&format!("/app/sign-in?next={next}"))
        }
        Ok(Authorized::Consent {
            consent_code,
            client_id,
            scope,
        }) => {
            let query = form_urlencoded::Serializer::new(String::new())
                .append_pair("consent_code", &consent_code)
                .append_pair("client_id", &client_id)
                .append_pair("scope", &scope)
                .finish();
            found(&format!("/app/oauth/consent?{query}"))
        }
        Err(AuthorizeError::Redirect(to)) => found(&to),
        Err(AuthorizeError::Page(message)) => error_page(StatusCode::BAD_REQUEST, &message),
    }
}

async fn consent(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    ApiJson(body): ApiJson<Consent>,
) -> ApiResult<Json<ConsentAnswer>> {
    Ok(Json(oauth::consent(state.cx(), &caller, body).await?))
}

/// The client's credentials from HTTP Basic (RFC 6749 section 2.3.1: each part form-encoded).
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))?;
    let decoded = STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    let unescape = |s: &str| -> String {
        form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let (id, secret) = (unescape(id), unescape(secret));
    // No client id or secret holds a NUL (PostgreSQL could not even look one up).
    (!id.contains('\0') && !secret.contains('\0')).then_some((id, secret))
}

fn form<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, OAuthError> {
    serde_urlencoded::from_bytes(body).map_err(|e| {
        OAuthError::new(
            400,
            "invalid_request",
            format!("the body must be application/x-www-form-urlencoded parameters: {e}"),
        )
    })
}

fn no_store(r: Response) -> Response {
    let mut r = cors(r);
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    r
}

async fn token(
    State(state): State<AppState>,
    meta: crate::domain::users::ClientMeta,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let basic = basic_credentials(&headers);
    let basic_used = basic.is_some();
    let f: TokenForm = match form(&body) {
        Ok(f) => f,
        Err(e) => return oauth_error(e, basic_used),
    };
    let auth = ClientAuth {
        basic,
        form_id: f.client_id.clone(),
        form_secret: f.client_secret.clone(),
    };
    match oauth::token(state.cx(), f, auth, meta.ip, meta.user_agent).await {
        Ok(answer) => no_store(Json(answer).into_response()),
        Err(e) => oauth_error(e, basic_used),
    }
}

async fn revoke(
    State(state): State<AppState>,
    meta: crate::domain::users::ClientMeta,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let basic = basic_credentials(&headers);
    let basic_used = basic.is_some();
    let f: RevokeForm = match form(&body) {
        Ok(f) => f,
        Err(e) => return oauth_error(e, basic_used),
    };
    let auth = ClientAuth {
        basic,
        form_id: f.client_id.clone(),
        form_secret: f.client_secret.clone(),
    };
    match oauth::revoke(state.cx(), f, auth, meta.ip, meta.user_agent).await {
        Ok(()) => no_store(StatusCode::OK.into_response()),
        Err(e) => oauth_error(e, basic_used),
    }
}
