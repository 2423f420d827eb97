//! HTTP adapter for alerts (rules and record in `domain::alerts`), and the one-click
//! acknowledge pages. The pages are for people, outside the REST contract like `/auth`: `GET
//! /alerts/ack?token=` shows what the link would acknowledge and a button, whose `POST`
//! acknowledges (a link preview only ever fetches), and every answer, errors included, is a
//! small HTML page rather than the JSON envelope (see `super::guard`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use super::extract::{ApiQuery, IfMatch, Tagged};
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
        .api_route(
            "/alerts/{alert_id}",
            get_with(get_one, |op| {
                op.id("getAlert")
                    .tag(TAG)
                    .summary("One alert, with its version as `ETag`: it changes when the alert is acknowledged, resolved or escalated (`monitors:read`)")
            }),
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
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "<p>The alert could not be acknowledged just now. Try again in a moment.</p>",
    )
}

fn link_page(found: LinkCheck, token: &str) -> Response {
    match found {
        LinkCheck::Open {
            monitor, cause, ..
        } => html(
            StatusCode::OK,
            "Acknowledge this alert?",
            &format!(
                "<p><strong>{}</strong> is down: {}</p>\
                 <form method=\"post\" action=\"{ACK_PATH}?token={}\">\
                 <button type=\"submit\">Acknowledge</button></form>\
                 <p>Acknowledging stops escalation and tells the people already notified.</p>",
                escape(&monitor),
                escape(&cause),
                escape(token)
            ),
        ),
        LinkCheck::Acknowledged { monitor } => html(
            StatusCode::OK,
            "Alert acknowledged",
            &format!(
                "<p>The alert for <strong>{}</strong> is acknowledged: escalation has stopped.</p>",
                escape(&monitor)
            ),
        ),
        LinkCheck::Done { resolved: true } => html(
            StatusCode::CONFLICT,
            "Already resolved",
            "<p>This alert is already resolved: there is nothing left to acknowledge.</p>",
        ),
        LinkCheck::Done { resolved: false } => html(
            StatusCode::CONFLICT,
            "Already acknowledged",
            "<p>This alert was already acknowledged; the link works once.</p>",
        ),
        LinkCheck::Expired => html(
            StatusCode::GONE,
            "Link expired",
            "<p>This acknowledge link has expired (links work for 24 hours). Acknowledge the alert from the dashboard or the API.</p>",
        ),
        LinkCheck::Invalid => html(
            StatusCode::BAD_REQUEST,
            "Link not valid",
            "<p>This acknowledge link is not valid: open it exactly as it was sent, or acknowledge the alert from the dashboard or the API.</p>",
        ),
    }
}

fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><title>{title} · Tocsin</title></head>\
         <body><h1>{title}</h1>{body}</body></html>"
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
            (
                header::CONTENT_SECURITY_POLICY,
                crate::http::subscribers::PERSON_PAGE_CSP,
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        page,
    )
        .into_response()
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
