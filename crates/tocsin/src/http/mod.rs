//! The HTTP surface: one router per resource, merged here with the `/auth` routes, the
//! fallbacks and the middleware every request passes (request id, tracing, metrics, body
//! limit, panic catching, and the guarantee that every error is the JSON envelope).

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod auth;
pub mod auth_routes;
pub mod billing;
pub mod channels;
pub mod custom_domains;
pub mod dashboard;
pub mod embed;
pub mod error;
pub mod escalation;
pub mod events;
pub mod extract;
pub mod heartbeats;
pub mod incidents;
pub mod input_errors;
pub mod invitations;
pub mod maintenance;
pub mod mcp;
pub mod mcp_grants;
pub mod members;
pub mod monitor_list;
pub mod monitors;
pub mod next;
pub mod nul;
pub mod oauth;
pub mod openapi;
pub mod ops;
pub mod people_page;
pub mod postmortems;
pub mod probe_socket;
pub mod projects;
pub mod public;
pub mod push;
pub mod regions;
pub mod serve;
pub mod sso;
pub mod state;
pub mod status_page_domains;
pub mod status_pages;
pub mod stream;
pub mod subscribers;
pub mod workspace;

use std::any::Any;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::domain::DomainError;
use crate::http::error::{envelope, ApiError};
use extract::BODY_LIMIT;
pub use state::AppState;

static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let (api, _doc) = openapi::build();
    let app = Router::new()
        .merge(api)
        .merge(auth_routes::router())
        .merge(sso::router())
        .merge(oauth::router())
        .merge(billing::webhook_router())
        .merge(alerts::link_router())
        .merge(public::pages_router())
        .merge(dashboard::router())
        .merge(embed::plain_router())
        .merge(probe_socket::router())
        .merge(stream::router())
        .merge(mcp::router(&state))
        .route("/", get(|| async { Redirect::temporary("/app/") }))
        .fallback(|| async { DomainError::NotFound(crate::domain::Resource::Route) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(state.clone(), monitor_list::note_writes))
        .layer(middleware::from_fn(record_request))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(guard))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let id = req.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
                    tracing::info_span!("request", method = %req.method(), path = %logged_path(req), request_id = %id)
                })
                .on_request(())
                .on_response(|res: &Response, latency: Duration, _span: &tracing::Span| {
                    tracing::debug!(status = res.status().as_u16(), latency_ms = latency.as_secs_f64() * 1000.0, "response");
                }),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID.clone()))
        .layer(SetRequestIdLayer::new(REQUEST_ID.clone(), RandomRequestId))
        .layer(CatchPanicLayer::custom(on_panic))
        .with_state(state.clone());
    // Before routing, so that a NUL in a path parameter never reaches a handler.
    let app = Router::new()
        .fallback_service(app)
        .layer(middleware::from_fn(nul::refuse));
    custom_domains::wrap(&state, app)
}

/// The path a request's log lines carry: the route's template (`/push/{token}`) when a path
/// parameter is a secret, so that a credential never lands in a log; the path otherwise.
fn logged_path(req: &Request) -> &str {
    match req.extensions().get::<axum::extract::MatchedPath>() {
        Some(route) if route.as_str().contains("{token}") => route.as_str(),
        _ => req.uri().path(),
    }
}

/// Request ids: random (v4) UUIDs drawn from the thread-local CSPRNG. tower-http's
/// `MakeRequestUuid` asks the kernel for randomness (a `getrandom` syscall) on every request,
/// which `tocsin bench` measured at about 3% of the server's CPU per request; ids only need to
/// be unique, and the thread-local generator is seeded from the OS and reseeds itself.
#[derive(Clone, Copy, Default)]
struct RandomRequestId;

impl MakeRequestId for RandomRequestId {
    fn make_request_id<B>(&mut self, _request: &Request<B>) -> Option<RequestId> {
        let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
        let mut buf = uuid::Uuid::encode_buffer();
        HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
            .ok()
            .map(RequestId::new)
    }
}

/// Refuses oversized bodies before any handler reads them, and makes sure every error
/// response — including ones produced by layers — is the JSON envelope.
async fn guard(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return ApiError::PayloadTooLarge.into_response();
    }
    let for_people = for_people(req.uri().path());
    let response = next.run(req).await;
    if response.status().as_u16() >= 400 && !for_people {
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/json"));
        if !is_json {
            return envelope(response.status());
        }
    }
    response
}

/// Pages for people (links followed from emails and chats, the public pages, the dashboard)
/// answer their errors as pages, never as the API's JSON envelope.
pub(crate) fn for_people(path: &str) -> bool {
    path == crate::alerting::ack_link::ACK_PATH
        || path == oauth::AUTHORIZE_PATH
        || path.starts_with(public::PAGES_PREFIX)
        || path.starts_with(subscribers::LINKS_PREFIX)
        || path == auth_routes::VERIFY_PATH
        || (path.starts_with(sso::PREFIX) && path != sso::PROVIDERS_PATH)
        || path == dashboard::PREFIX
        || path.starts_with(dashboard::ASSET_PREFIX)
}

fn on_panic(err: Box<dyn Any + Send + 'static>) -> Response {
    let detail = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = detail, "handler panicked");
    envelope(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Counts and times every request by route template (never the raw path, which would let
/// clients create unbounded label values), method and status.
pub async fn record_request(req: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = req.method().as_str().to_owned();
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".into());
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    let elapsed = started.elapsed().as_secs_f64();
    metrics::counter!("http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status.clone()).increment(1);
    metrics::histogram!("http_request_duration_seconds", "method" => method, "route" => route, "status" => status).record(elapsed);
    response
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request as HttpRequest;
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> &'static str {
        panic!("secret detail")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_internal_with_no_detail() {
        let app: Router = Router::new()
            .route("/boom", get(boom))
            .layer(middleware::from_fn(guard))
            .layer(CatchPanicLayer::custom(on_panic));
        let res = app
            .oneshot(
                HttpRequest::get("/boom")
                    .body(Body::empty())
                    .unwrap_or_default(),
            )
            .await;
        let res = match res {
            Ok(r) => r,
            Err(never) => match never {},
        };
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(res.into_body(), 4096)
            .await
            .unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        assert_eq!(body["code"], "INTERNAL");
        assert_eq!(body["statusCode"], 500);
        assert!(!body.to_string().contains("secret detail"));
    }
}
