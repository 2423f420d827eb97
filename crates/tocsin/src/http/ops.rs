//! Operational endpoints: liveness, readiness (database reachable, migrations applied) and
//! Prometheus metrics. Public and cheap.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::IntoResponse;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::secrets;
use crate::domain::DomainError;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/healthz",
            get_with(healthz, |op| {
                op.id("getHealth").tag("Operations").summary("Liveness")
            }),
        )
        .api_route(
            "/readyz",
            get_with(readyz, |op| {
                op.id("getReadiness")
                    .tag("Operations")
                    .summary("Readiness: database reachable and migrations applied")
                    .response_with::<503, Json<crate::http::error::ErrorBody>, _>(|r| {
                        r.description("Not ready (`SERVICE_UNAVAILABLE`)")
                    })
            }),
        )
        .api_route(
            "/metrics",
            get_with(metrics, |op| {
                op.id("getMetrics")
                    .tag("Operations")
                    .summary("Prometheus text exposition")
                    .description(
                        "Request, database, scheduler and probe metrics, and per-monitor series \
                         (`monitor_status`, `monitor_response_time_ms`, `monitor_checks_total`, \
                         `monitor_cert_days_remaining`) labelled by monitor id, name, type, \
                         workspace and region. Open unless the server runs with \
                         `--metrics-token`; then it needs `Authorization: Bearer <token>`.",
                    )
                    .response_with::<401, Json<crate::http::error::ErrorBody>, _>(|r| {
                        r.description("`--metrics-token` is set and the request did not carry it (`UNAUTHORIZED`)")
                    })
            }),
        )
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::exact_object)]
pub struct Health {
    /// `ok`
    pub status: String,
}

async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Health>> {
    state
        .db()
        .ping()
        .await
        .map_err(|_| DomainError::Unavailable)?;
    if !state
        .db()
        .migrations_current()
        .await
        .map_err(|_| DomainError::Unavailable)?
    {
        return Err(DomainError::Unavailable.into());
    }
    // A node that holds partitions it cannot renew is about to stop checking them: a load
    // balancer or an orchestrator should know before the others take them over.
    if !state.runner().partitions().renewing() {
        return Err(DomainError::Unavailable.into());
    }
    Ok(Json(Health {
        status: "ok".into(),
    }))
}

/// A Prometheus text exposition body.
pub struct PromText(String);

impl IntoResponse for PromText {
    fn into_response(self) -> axum::response::Response {
        (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            self.0,
        )
            .into_response()
    }
}

impl aide::OperationOutput for PromText {
    type Inner = String;
    fn operation_response(
        ctx: &mut aide::generate::GenContext,
        op: &mut aide::openapi::Operation,
    ) -> Option<aide::openapi::Response> {
        <String as aide::OperationOutput>::operation_response(ctx, op)
    }
    fn inferred_responses(
        ctx: &mut aide::generate::GenContext,
        op: &mut aide::openapi::Operation,
    ) -> Vec<(Option<u16>, aide::openapi::Response)> {
        <String as aide::OperationOutput>::inferred_responses(ctx, op)
    }
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<PromText> {
    if let Some(expected) = &state.config().metrics_token {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(DomainError::Unauthorized)?;
        // Compared as hashes, in constant time, like every other secret.
        if !secrets::hashes_equal(&secrets::hash(presented), &secrets::hash(expected)) {
            return Err(DomainError::Unauthorized.into());
        }
    }
    Ok(PromText(state.metrics().render(state.runner()).await))
}
