//! The Model Context Protocol surface at `/mcp`: the Streamable HTTP transport of the `rmcp`
//! SDK (POST for JSON-RPC, GET for the server's SSE stream, DELETE to end a session), behind
//! the auth step that turns the request's bearer credential into a [`Caller`] for the `mcp`
//! surface. What an agent can do is the tool table in [`tools`]; the MCP server itself
//! (initialize, tools/list, tools/call, resources, prompts) is [`server`].
//!
//! Protocol revisions up to 2025-11-25 open a session at `initialize`; from 2026-07-28 requests
//! are stateless (each carries the version and client capabilities in its `_meta`), which any
//! node answers alike. Sessions (`Mcp-Session-Id`) live in the memory of the node that opened them, and their
//! `initialize` parameters in the `mcp_sessions` table ([`session_store::SessionTable`]): a request
//! that reaches another node of the cluster is answered by that node, which restores the
//! session from the table without the client initialising again. A session carries no
//! authority: every request presents its own token and is authorised on its own.

pub mod server;
pub mod session_store;
pub mod tools;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::caller::authenticate_key;
use crate::auth::Caller;
use crate::domain::DomainError;
use crate::http::auth::{bearer_token, client_ip};
use crate::http::error::ApiError;
use crate::http::AppState;

/// The path of the transport.
pub const PATH: &str = "/mcp";

/// The surface name API keys declare to be usable here.
const SURFACE: &str = "mcp";

/// What a request to `/mcp` may present: a bearer token, resolved to a [`Caller`] in
/// [`resolve`].
#[derive(Debug)]
pub enum Credential<'a> {
    /// A personal access token (`svc_...`) whose surfaces must include `mcp`, or an OAuth
    /// access token (valid on this surface only); [`authenticate_key`] tells them apart by
    /// their prefix, and each has its cache, so a call does not read the database for it.
    AccessKey(&'a str),
}

impl<'a> Credential<'a> {
    /// Reads the `Authorization: Bearer ...` header. `Ok(None)`: no credential was sent.
    pub fn from_headers(headers: &'a axum::http::HeaderMap) -> Result<Option<Self>, DomainError> {
        Ok(bearer_token(headers)?.map(Credential::AccessKey))
    }
}

/// Resolves a credential to the caller it stands for, on the `mcp` surface.
async fn resolve(
    state: &AppState,
    credential: Credential<'_>,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, DomainError> {
    let now = state.clock().now_ms();
    match credential {
        Credential::AccessKey(token) => authenticate_key(
            state.cx(),
            state.token_caches(),
            token,
            now,
            ip,
            user_agent,
            SURFACE,
        )
        .await
        .map_err(Into::into),
    }
}

type Transport = StreamableHttpService<server::TocsinMcp, LocalSessionManager>;

/// The `/mcp` routes, for [`crate::http::router`].
pub fn router(state: &AppState) -> Router<AppState> {
    let catalog = Arc::new(tools::Catalog::build());
    let core = state.clone();
    let factory_core = core.clone();
    let factory_catalog = catalog.clone();
    let mut config = StreamableHttpServerConfig::default()
        // Every request is authenticated by a bearer token, never by ambient browser
        // credentials, so the DNS-rebinding guard for unauthenticated local servers is not
        // needed, and the server answers on whatever host it is published under.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(crate::http::extract::BODY_LIMIT)
        // Stateless requests get a plain JSON answer when the tool sends nothing before it.
        .with_json_response(true);
    config.session_store = Some(Arc::new(session_store::SessionTable::new(
        core.cx().clone(),
    )));
    let transport: Transport = StreamableHttpService::new(
        move || {
            Ok(server::TocsinMcp::new(
                factory_core.clone(),
                factory_catalog.clone(),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new().route(
        PATH,
        any(move |State(state): State<AppState>, req: Request| {
            let transport = transport.clone();
            async move { serve(state, transport, req).await }
        }),
    )
}

/// Authenticates the request, then hands it to the transport with its [`Caller`] attached
/// (the tools read it from the request's parts).
async fn serve(state: AppState, transport: Transport, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let ip = client_ip(&parts, state.config().trust_forwarded_for);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(512).collect());
    let caller = match Credential::from_headers(&parts.headers) {
        Ok(Some(credential)) => resolve(&state, credential, ip, user_agent).await,
        Ok(None) => Err(DomainError::Unauthorized),
        Err(e) => Err(e),
    };
    let caller = match caller {
        Ok(c) => c,
        Err(e) => return refusal(&state, e),
    };
    parts.extensions.insert(caller);
    let ending = parts.method == Method::DELETE;
    let mut response = transport
        .handle(Request::from_parts(parts, body))
        .await
        .into_response();
    // The session is gone once the DELETE is answered: say so with 200, which every SDK reads
    // as success (some log the transport's 202 as a failed termination).
    if ending && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// The error envelope for a refused request; a 401 names where OAuth clients discover how to
/// get a token (RFC 9728).
fn refusal(state: &AppState, e: DomainError) -> Response {
    let unauthorized = matches!(e, DomainError::Unauthorized | DomainError::BadCredential(_));
    let mut response = ApiError::Domain(e).into_response();
    if unauthorized {
        let base = state.config().public_url.as_str().trim_end_matches('/');
        let challenge =
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource\"");
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    response
}
