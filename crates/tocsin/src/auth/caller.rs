//! The request extractor that authenticates a caller and checks its capabilities. Each
//! operation names a [`Requirement`] type; the same type drives the check at request time and
//! the operation's security schemes and `x-svc-required-capabilities` in the OpenAPI document,
//! so the two cannot drift. Tenancy starts here: a [`Caller`] carries exactly one workspace,
//! and handlers pass it to every query.

use std::marker::PhantomData;
use std::net::SocketAddr;

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse, SecurityRequirement};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, Method};

use super::capability::{CapSet, Capability, Role};
use super::key_cache::KeyCache;
use super::{secrets, SESSION_TTL_MS};
use crate::app::AppState;
use crate::error::{error_response, ApiError};
use crate::store;

/// How the caller authenticated.
#[derive(Debug, Clone)]
pub enum Via {
    Session { session_id: String, role: Role },
    ApiKey { key_id: String },
}

/// An authenticated caller, bound to one workspace.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: String,
    pub email: String,
    pub workspace_id: String,
    pub caps: CapSet,
    pub via: Via,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

impl Caller {
    pub fn session_id(&self) -> Option<&str> {
        match &self.via {
            Via::Session { session_id, .. } => Some(session_id),
            Via::ApiKey { .. } => None,
        }
    }
}

/// What an operation requires. Implemented by the marker types made with [`requirement!`].
pub trait Requirement: Send + Sync + 'static {
    const CAPS: &'static [Capability];
    /// True for operations only a signed-in person may call even without a session-only
    /// capability (API key management, switching workspace).
    const PERSON_ONLY: bool = false;

    fn session_only() -> bool {
        Self::PERSON_ONLY || Self::CAPS.iter().any(|c| c.is_session_only())
    }
}

/// Declares a requirement marker: `requirement!(MonitorsRead => [Capability::MonitorsRead]);`
/// or, for person-only operations, `requirement!(SignedIn => [] person);`.
#[macro_export]
macro_rules! requirement {
    ($name:ident => [$($cap:expr),*]) => {
        pub struct $name;
        impl $crate::auth::Requirement for $name {
            const CAPS: &'static [$crate::auth::Capability] = &[$($cap),*];
        }
    };
    ($name:ident => [$($cap:expr),*] person) => {
        pub struct $name;
        impl $crate::auth::Requirement for $name {
            const CAPS: &'static [$crate::auth::Capability] = &[$($cap),*];
            const PERSON_ONLY: bool = true;
        }
    };
}

/// The extractor: `Auth<MonitorsRead>` in a handler's arguments.
pub struct Auth<R: Requirement>(pub Caller, PhantomData<R>);

impl<R: Requirement> std::ops::Deref for Auth<R> {
    type Target = Caller;
    fn deref(&self) -> &Caller {
        &self.0
    }
}

impl<R: Requirement> FromRequestParts<AppState> for Auth<R> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = authenticate(parts, state, R::session_only()).await?;
        let missing = caller.caps.missing(R::CAPS);
        if !missing.is_empty() {
            return Err(ApiError::InsufficientCapability(missing));
        }
        Ok(Auth(caller, PhantomData))
    }
}

/// Resolves the caller from a bearer token (REST surface) or the session cookie.
pub async fn authenticate(
    parts: &Parts,
    state: &AppState,
    session_only: bool,
) -> Result<Caller, ApiError> {
    let now = state.clock().now_ms();
    let ip = client_ip(parts, state.config().trust_forwarded_for);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(512).collect());
    if let Some(auth) = parts.headers.get(header::AUTHORIZATION) {
        let token = auth
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(ApiError::Unauthorized)?;
        let caller =
            authenticate_key(state, token, now, ip.clone(), user_agent.clone(), "rest").await;
        if !session_only {
            return caller;
        }
        // A person-only operation: the cookie decides. A valid token is told why it cannot.
        if session_token(parts).is_none() {
            return match caller {
                Ok(_) => Err(ApiError::InsufficientCapability(
                    super::capability::SESSION_ONLY.to_vec(),
                )),
                Err(e) => Err(e),
            };
        }
    }
    let token = session_token(parts).ok_or(ApiError::Unauthorized)?;
    let caller = authenticate_session(state, token, now, ip, user_agent).await?;
    if is_unsafe(&parts.method) {
        check_origin(parts, state)?;
    }
    Ok(caller)
}

/// Authenticates an API key for `surface` (`rest` or `mcp`).
pub async fn authenticate_key(
    state: &AppState,
    token: &str,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
    surface: &'static str,
) -> Result<Caller, ApiError> {
    if !token.starts_with(secrets::API_KEY_PREFIX) || token.len() > 256 {
        return Err(ApiError::Unauthorized);
    }
    let hash = secrets::hash(token);
    let key = state
        .keys()
        .lookup(state.db(), &hash, now)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    if !key.active || key.expires_at.is_some_and(|e| e <= now) {
        return Err(ApiError::Unauthorized);
    }
    let allowed = if surface == "mcp" { key.mcp } else { key.rest };
    if !allowed {
        return Err(ApiError::SurfaceNotAllowed(surface));
    }
    if KeyCache::should_touch(&key, now) {
        let db = state.db().clone();
        let id = key.key_id.clone();
        tokio::spawn(async move {
            if let Err(e) = store::api_keys::touch(db.writer(), &id, now).await {
                tracing::warn!(error = %e, key = %id, "could not record lastUsedAt");
            }
        });
    }
    Ok(Caller {
        user_id: key.user_id.clone(),
        email: key.email.clone(),
        workspace_id: key.workspace_id.clone(),
        caps: key.caps,
        via: Via::ApiKey {
            key_id: key.key_id.clone(),
        },
        ip,
        user_agent,
    })
}

async fn authenticate_session(
    state: &AppState,
    token: &str,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, ApiError> {
    let hash = secrets::hash(token);
    let db = state.db();
    let mut s = store::sessions::find(db.reader(), &hash)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    if s.expires_at <= now {
        return Err(ApiError::Unauthorized);
    }
    // Sliding expiry, written at most once a day per session.
    if s.expires_at - now < SESSION_TTL_MS - 24 * 3600 * 1000 {
        store::sessions::extend(db.writer(), &s.id, now + SESSION_TTL_MS).await?;
    }
    let role = match s.role.as_deref().and_then(Role::parse) {
        Some(r) => r,
        None => {
            // Removed from the active workspace: fall back to another one the user belongs to.
            let mine = store::workspaces::list_for_user(db.reader(), &s.user_id).await?;
            let first = mine.into_iter().next().ok_or(ApiError::Unauthorized)?;
            store::sessions::set_workspace(db.writer(), &s.id, &first.id).await?;
            s.workspace_id = first.id;
            Role::parse(&first.role).ok_or(ApiError::Unauthorized)?
        }
    };
    Ok(Caller {
        user_id: s.user_id,
        email: s.email,
        workspace_id: s.workspace_id,
        caps: role.capabilities(),
        via: Via::Session {
            session_id: s.id,
            role,
        },
        ip,
        user_agent,
    })
}

/// The session cookie's value, if sent.
pub fn session_token(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == super::SESSION_COOKIE && !value.is_empty()).then_some(value)
        })
}

fn is_unsafe(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Cookie-authenticated writes must come from a page of this server: the Origin (or, when a
/// client sends none, the Referer) must name this server's public origin or the Host asked for.
fn check_origin(parts: &Parts, state: &AppState) -> Result<(), ApiError> {
    let sent = parts
        .headers
        .get(header::ORIGIN)
        .or_else(|| parts.headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| url::Url::parse(v).ok())
        .ok_or(ApiError::InvalidOrigin)?;
    let sent_origin = sent.origin().ascii_serialization();
    if sent_origin == state.config().public_url.origin().ascii_serialization() {
        return Ok(());
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let sent_host = match sent.port() {
        Some(p) => format!("{}:{p}", sent.host_str().unwrap_or_default()),
        None => sent.host_str().unwrap_or_default().to_string(),
    };
    if !host.is_empty() && sent_host.eq_ignore_ascii_case(host) {
        return Ok(());
    }
    Err(ApiError::InvalidOrigin)
}

/// The client's address: the socket peer, or the first `X-Forwarded-For` hop when the server
/// is configured to trust a proxy in front of it.
pub fn client_ip(parts: &Parts, trust_forwarded_for: bool) -> Option<String> {
    if trust_forwarded_for {
        if let Some(first) = parts
            .headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
        {
            return Some(first.to_string());
        }
    }
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ci| ci.0.ip().to_string())
}

impl<R: Requirement> aide::OperationInput for Auth<R> {
    fn operation_input(_ctx: &mut GenContext, op: &mut Operation) {
        let scheme = |name: &str| -> SecurityRequirement {
            [(name.to_string(), Vec::new())].into_iter().collect()
        };
        op.security = if R::session_only() {
            vec![scheme("sessionCookie")]
        } else {
            vec![scheme("apiKey"), scheme("sessionCookie")]
        };
        let caps: Vec<&str> = R::CAPS.iter().map(|c| c.as_str()).collect();
        op.extensions.insert(
            "x-svc-required-capabilities".into(),
            serde_json::json!(caps),
        );
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![
            (Some(401), error_response(ctx, "Missing or invalid credentials (`UNAUTHORIZED`)")),
            (
                Some(403),
                error_response(
                    ctx,
                    "Not allowed: `INSUFFICIENT_CAPABILITY`, `SURFACE_NOT_ALLOWED` or `INVALID_ORIGIN`",
                ),
            ),
        ]
    }
}
