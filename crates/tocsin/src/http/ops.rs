//! Operational endpoints: liveness, readiness (database reachable, migrations applied) and
//! Prometheus metrics. Public and cheap.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

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
            }),
        )
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::http::schema::exact_object)]
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

async fn metrics(State(state): State<AppState>) -> PromText {
    PromText(state.metrics().render(&state))
}
