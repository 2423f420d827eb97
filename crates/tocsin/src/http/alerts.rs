//! HTTP adapter for alerts (rules and record in `domain::alerts`), and the one-click
//! acknowledge pages. The pages are for people, outside the REST contract like `/auth`: `GET
//! /alerts/ack?token=` shows what the link would acknowledge and a button, whose `POST`
//! acknowledges (a link preview only ever fetches), and every answer, errors included, is a
//! small HTML page rather than the JSON envelope (see `super::guard`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::Request;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use maud::html;

use super::extract::{ApiQuery, IfMatch, Tagged};
use super::people_page::PeoplePage;
use crate::alerting::ack_link::ACK_PATH;
use crate::auth::{caps, needs};
use crate::domain::alerts::{self as ops, Alert, AlertPage, AlertPageQuery, AlertPath, LinkCheck};
use crate::domain::deliveries::{self, DeliveriesOf, DeliveryPage, DeliveryQuery};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Alerts";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/alerts",
            get_with(page, |op| {
                op.id("listAlerts").tag(TAG).summary(
                    "The workspace's alerts, newest first, in cursor pages; filter by `status` (open, acknowledged, resolved) and `monitorId` (`monitors:read`)",
                )
            }),
        )
        .merge(
            ApiRouter::<AppState>::new()
                .api_route(
                    "/alerts/{alert_id}",
                    get_with(get_one, |op| {
                        op.id("getAlert")
                            .tag(TAG)
                            .summary("One alert, with its version as `ETag`: it changes when the alert is acknowledged, resolved or escalated (`monitors:read`)")
                            .description("A browser opening this address (an `Accept` header that names `text/html` first, as a followed link's does) is sent with 303 to the dashboard's page of the alert, `/app/alerts/{alert_id}`, which asks it to sign in first if need be; an API client gets the record.")
                    }),
                )
                .route_layer(axum::middleware::from_fn(to_dashboard)),
        )
        .api_route(
            "/alerts/{alert_id}/acknowledge",
            post_with(acknowledge, |op| {
                op.id("acknowledgeAlert").tag(TAG).summary(
                    "Acknowledge an open alert: records who and when, stops its escalation and tells the channels it reached (`alert.acknowledged`); an alert already acknowledged or resolved answers 409 ALERT_NOT_OPEN, and a stale `If-Match` (the `ETag` of `GET /alerts/{alert_id}`) 409 VERSION_CONFLICT (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/alerts/{alert_id}/deliveries",
            get_with(deliveries, |op| {
                op.id("listAlertDeliveries").tag(TAG).summary(
                    "The alert's notification delivery attempts, newest first, in cursor pages (`monitors:read`)",
                )
            }),
        )
}

/// The acknowledge pages (not in the API document).
pub fn link_router() -> Router<AppState> {
    Router::new().route(ACK_PATH, get(show_link).post(use_link))
}

async fn page(
    State(state): State<AppState>,
    caller: Auth<needs::ListAlerts>,
    ApiQuery(q): ApiQuery<AlertPageQuery>,
) -> ApiResult<Json<AlertPage>> {
    Ok(Json(ops::page(state.cx(), &caller, &q).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<AlertPath>,
) -> ApiResult<Tagged<Alert>> {
    let (alert, version) = ops::get_versioned(state.cx(), &caller, &p.alert_id).await?;
    Ok(Tagged(alert, version))
}

async fn acknowledge(
    State(state): State<AppState>,
    caller: Auth<needs::AcknowledgeAlert>,
    Path(p): Path<AlertPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Alert>> {
    let (alert, version) =
        ops::acknowledge_versioned(state.cx(), &caller, &p.alert_id, expected).await?;
    Ok(Tagged(alert, version))
}

async fn deliveries(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<AlertPath>,
    ApiQuery(q): ApiQuery<DeliveryQuery>,
) -> ApiResult<Json<DeliveryPage>> {
    // One delivery history for channels and alerts (`domain::deliveries`).
    Ok(Json(
        deliveries::list(state.cx(), &caller, DeliveriesOf::Alert(&p.alert_id), &q).await?,
    ))
}

/// A person following a notification's alert link (`ack_link::Links::alert`) lands on the
/// dashboard's page of the alert rather than on JSON; API clients, which do not put HTML first
/// in `Accept`, are not redirected.
async fn to_dashboard(req: Request, next: Next) -> Response {
    if req.method() == Method::GET && wants_html(req.headers()) {
        let id = req.uri().path().strip_prefix("/alerts/").unwrap_or("");
        // Alert ids are plain tokens; anything else goes on to the route's own not-found.
        if !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Redirect::to(&format!("/app/alerts/{id}")).into_response();
        }
    }
    next.run(req).await
}

/// Whether the first media range of `Accept` is HTML (a browser's navigation).
fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|first| first.trim().to_ascii_lowercase().starts_with("text/html"))
}

#[derive(Debug, Deserialize)]
struct LinkQuery {
    #[serde(default)]
    token: String,
}

async fn show_link(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> Response {
    match ops::inspect_link(state.cx(), &q.token).await {
        Ok(found) => link_page(found, &q.token),
        Err(e) => failed(&e),
    }
}

async fn use_link(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> Response {
    match ops::acknowledge_by_link(state.cx(), &q.token).await {
        Ok(found) => link_page(found, &q.token),
        Err(e) => failed(&e),
    }
}

fn failed(e: &crate::domain::DomainError) -> Response {
    tracing::warn!(error = %e, "acknowledge link failed");
    PeoplePage::text(
        "Try again",
        "The alert could not be acknowledged just now. Try again in a moment.",
    )
    .respond(StatusCode::SERVICE_UNAVAILABLE)
}

fn link_page(found: LinkCheck, token: &str) -> Response {
    let (status, title, body) = match found {
        LinkCheck::Open { monitor, cause, .. } => (
            StatusCode::OK,
            "Acknowledge this alert?",
            html! {
                p { strong { (monitor) } " is down: " (cause) }
                form method="post" action={ (ACK_PATH) "?token=" (token) } {
                    button type="submit" { "Acknowledge" }
                }
                p.fine { "Acknowledging stops escalation and tells the people already notified." }
            },
        ),
        LinkCheck::Acknowledged { monitor } => (
            StatusCode::OK,
            "Alert acknowledged",
            html! {
                p { "The alert for " strong { (monitor) } " is acknowledged: escalation has stopped." }
                p { a href="/app/alerts" { "Open the alerts in the dashboard" } }
            },
        ),
        LinkCheck::Done { resolved: true } => (
            StatusCode::CONFLICT,
            "Already resolved",
            html! { p { "This alert is already resolved: there is nothing left to acknowledge." } },
        ),
        LinkCheck::Done { resolved: false } => (
            StatusCode::CONFLICT,
            "Already acknowledged",
            html! { p { "This alert was already acknowledged; the link works once." } },
        ),
        LinkCheck::Expired => (
            StatusCode::GONE,
            "Link expired",
            html! { p { "This acknowledge link has expired (links work for 24 hours). Acknowledge the alert from the dashboard or the API." } },
        ),
        LinkCheck::Invalid => (
            StatusCode::BAD_REQUEST,
            "Link not valid",
            html! { p { "This acknowledge link is not valid: open it exactly as it was sent, or acknowledge the alert from the dashboard or the API." } },
        ),
    };
    PeoplePage::new(title, body).respond(status)
}
