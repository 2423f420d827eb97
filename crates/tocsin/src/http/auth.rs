//! The request extractor that authenticates a caller and checks its capabilities. Each
//! operation names a [`Requirement`] type; the same type drives the check at request time and
//! the operation's security schemes and `x-svc-required-capabilities` in the OpenAPI document,
//! so the two cannot drift. The credential itself is resolved by [`crate::auth::caller`]; this
//! module reads it from the request (bearer header or session cookie) and checks the Origin of
//! cookie-authenticated writes.

use std::marker::PhantomData;
use std::net::SocketAddr;

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse, SecurityRequirement};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, Method};

use crate::auth::caller::{
    authenticate_key, authenticate_session, session_required, Caller, Requirement,
};
use crate::auth::Capability;
use crate::domain::{CredentialProblem, DomainError};
use crate::http::error::{error_response, ApiError};
use crate::http::AppState;

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
        let caller = authenticate_for(parts, state, R::session_only(), R::CAPS).await?;
        let missing = caller.caps.missing(R::CAPS);
        if !missing.is_empty() {
            return Err(DomainError::InsufficientCapability {
                missing,
                holder: caller.holder(),
            }
            .into());
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
    authenticate_for(parts, state, session_only, &[]).await
}

/// [`authenticate`] for an operation needing `caps`, which a refusal names.
async fn authenticate_for(
    parts: &Parts,
    state: &AppState,
    session_only: bool,
    caps: &[Capability],
) -> Result<Caller, ApiError> {
    let now = state.clock().now_ms();
    let ip = client_ip(parts, state.config().trust_forwarded_for);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(512).collect());
    if let Some(token) = bearer_token(&parts.headers)? {
        let caller = authenticate_key(
            state.cx(),
            state.token_caches(),
            token,
            now,
            ip.clone(),
            user_agent.clone(),
            "rest",
        )
        .await;
        if !session_only {
            return caller.map_err(Into::into);
        }
        // A person-only operation: the cookie decides. A valid token is told why it cannot.
        if session_token(parts).is_none() {
            return match caller {
                Ok(_) => Err(session_required(caps).into()),
                Err(e) => Err(e.into()),
            };
        }
    }
    let token = session_token(parts).ok_or(DomainError::Unauthorized)?;
    let caller = authenticate_session(state.cx(), token, now, ip, user_agent).await?;
    if is_unsafe(&parts.method) {
        check_origin(parts, state)?;
    }
    Ok(caller)
}

/// The session cookie's value, if sent.
pub fn session_token(parts: &Parts) -> Option<&str> {
    cookie(&parts.headers, crate::auth::SESSION_COOKIE)
}

/// A cookie's value among the request's cookies (an empty value counts as not sent).
pub(crate) fn cookie<'h>(headers: &'h axum::http::HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (n, v) = pair.trim().split_once('=')?;
            (n == name && !v.is_empty()).then_some(v)
        })
}

fn is_unsafe(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Cookie-authenticated writes must come from a page of this server: the Origin (or, when a
/// client sends none, the Referer) must name this server's public origin (scheme, host and
/// port), or the Host asked for under the public URL's scheme: an `https://` page may not
/// write to an `http://` server, nor the reverse.
pub fn check_origin(parts: &Parts, state: &AppState) -> Result<(), ApiError> {
    let sent = parts
        .headers
        .get(header::ORIGIN)
        .or_else(|| parts.headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| url::Url::parse(v).ok())
        .ok_or_else(|| invalid_origin(state))?;
    let public = &state.config().public_url;
    if sent.origin() == public.origin() {
        return Ok(());
    }
    if sent.scheme() != public.scheme() {
        return Err(invalid_origin(state).into());
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
    Err(invalid_origin(state).into())
}

fn invalid_origin(state: &AppState) -> DomainError {
    DomainError::InvalidOrigin {
        expected: state.config().public_url.origin().ascii_serialization(),
    }
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

/// The token of an `Authorization: Bearer <token>` header: `None` without the header, an
/// error when it is present but not a bearer token.
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Result<Option<&str>, DomainError> {
    match headers.get(header::AUTHORIZATION) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(Some)
            .ok_or(DomainError::BadCredential(
                CredentialProblem::MalformedHeader,
            )),
    }
}
