//! The monitor routes: each handler extracts the request, calls the operation in
//! [`crate::domain::monitors`] (which owns the rules, the transactions, the audit entries and
//! the change feed; its module doc lists the decisions the interface leaves open) and wraps
//! the answer: `ETag` for versioned reads and writes, `201` for a create, `202` for an
//! on-demand check. `GET /monitors` answers from the cached parts of
//! [`super::monitor_list`], an HTTP-edge cache over the same view.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{Accepted, ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged, Validate};
use super::monitor_list::{self, RawJson};
use crate::auth::{caps, needs};
use crate::domain::heartbeats::MonitorSummary;
use crate::domain::monitors::{
    self as ops, CheckResult, CreateMonitor, Monitor, MonitorListQuery, MonitorPage,
    MonitorPageQuery, MonitorStats, PushTokenIssued, UpdateMonitor, Versioned,
};
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, ErrorBody, FieldError};
use crate::http::AppState;

const TAG: &str = "Monitors";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/monitors",
            get_with(list, |op| {
                op.id("listMonitors").tag(TAG).summary(
                    "Every monitor of the workspace, filtered like the page (`monitors:read`)",
                )
            })
            .post_with(create, |op| {
                op.id("createMonitor")
                    .tag(TAG)
                    .summary(
                        "Create a monitor; a PUSH monitor's token is in this response only (`monitors:write`)",
                    )
                    .response_with::<402, Json<ErrorBody>, _>(|r| {
                        r.description("The plan's monitor count or shortest interval is reached (`PLAN_LIMIT_EXCEEDED`)")
                    })
            }),
        )
        .api_route(
            "/monitors/page",
            get_with(page, |op| {
                op.id("listMonitorsPage").tag(TAG).summary(
                    "Monitors in id order, one cursor page at a time, with filters (`monitors:read`)",
                )
            }),
        )
        .api_route(
            "/monitors/stats",
            get_with(stats, |op| {
                op.id("getMonitorStats")
                    .tag(TAG)
                    .summary("How many monitors are up, down, degraded, paused... (`monitors:read`)")
            }),
        )
        .api_route(
            "/monitors/summary",
            get_with(summaries, |op| {
                op.id("listMonitorSummaries").tag(TAG).summary(
                    "Every monitor's last 40 checks, 24-hour uptime and latest response time, in one answer (`monitors:read`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}",
            get_with(get_one, |op| {
                op.id("getMonitor").tag(TAG).summary("One monitor (`monitors:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateMonitor")
                    .tag(TAG)
                    .summary(
                        "Change a monitor's settings; version-locked with If-Match (`monitors:write`)",
                    )
                    .response_with::<402, Json<ErrorBody>, _>(|r| {
                        r.description("The interval is shorter than the plan allows (`PLAN_LIMIT_EXCEEDED`)")
                    })
            })
            .delete_with(delete, |op| {
                op.id("deleteMonitor")
                    .tag(TAG)
                    .summary("Delete a monitor and its history (`monitors:delete`)")
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/pause",
            post_with(pause, |op| {
                op.id("pauseMonitor")
                    .tag(TAG)
                    .summary("Stop checking; the status is kept (`monitors:write`)")
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/resume",
            post_with(resume, |op| {
                op.id("resumeMonitor").tag(TAG).summary(
                    "Start checking again from PENDING with counters reset (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/regenerate-push-token",
            post_with(regenerate_push_token, |op| {
                op.id("regeneratePushToken").tag(TAG).summary(
                    "Issue a new push token, shown once; the old one stops at once (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/check",
            post_with(check_now, |op| {
                op.id("checkMonitor")
                    .tag(TAG)
                    .summary(
                        "Run the check now in the background; results are heartbeats with the returned correlationId, the status is not changed (`monitors:write`)",
                    )
                    .description(
                        "A check still running when the server stops is given the shutdown \
                         grace to finish; one still running after it is stored as a PENDING \
                         heartbeat with the correlationId and a message saying the server shut \
                         down.",
                    )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/accept-baseline",
            post_with(accept_baseline, |op| {
                op.id("acceptMonitorBaseline").tag(TAG).summary(
                    "DNS_DIFF: accept the changed answers; the next answer becomes the baseline (`monitors:write`)",
                )
            }),
        )
}

impl Validate for CreateMonitor {}

impl Validate for UpdateMonitor {}

impl Validate for MonitorListQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

impl Validate for MonitorPageQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MonitorPath {
    pub monitor_id: String,
}

fn tagged(v: Versioned<Monitor>) -> Tagged<Monitor> {
    Tagged(v.value, v.version)
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListMonitors>,
    ApiQuery(q): ApiQuery<MonitorListQuery>,
) -> ApiResult<RawJson<Vec<Monitor>>> {
    let filter = ops::list_filter(&caller, &q)?;
    monitor_list::build(&state, &caller.workspace_id, &filter).await
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<needs::CreateMonitor>,
    ApiJson(body): ApiJson<CreateMonitor>,
) -> ApiResult<Created<Monitor>> {
    Ok(Created(ops::create(state.cx(), &caller, &body).await?))
}

async fn page(
    State(state): State<AppState>,
    caller: Auth<needs::ListMonitorsPage>,
    ApiQuery(q): ApiQuery<MonitorPageQuery>,
) -> ApiResult<Json<MonitorPage>> {
    Ok(Json(ops::page(state.cx(), &caller, &q).await?))
}

async fn stats(
    State(state): State<AppState>,
    caller: Auth<needs::GetMonitorStats>,
) -> ApiResult<Json<MonitorStats>> {
    Ok(Json(ops::stats(state.cx(), &caller).await?))
}

async fn summaries(
    State(state): State<AppState>,
    caller: Auth<needs::ListMonitorSummaries>,
) -> ApiResult<Json<Vec<MonitorSummary>>> {
    Ok(Json(
        crate::domain::heartbeats::summaries(state.cx(), &caller).await?,
    ))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<needs::GetMonitor>,
    Path(p): Path<MonitorPath>,
) -> ApiResult<Tagged<Monitor>> {
    Ok(tagged(ops::get(state.cx(), &caller, &p.monitor_id).await?))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<needs::UpdateMonitor>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateMonitor>,
) -> ApiResult<Tagged<Monitor>> {
    let v = ops::update(state.cx(), &caller, &p.monitor_id, expected, &body).await?;
    Ok(tagged(v))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<needs::DeleteMonitor>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<NoContent> {
    ops::delete(state.cx(), &caller, &p.monitor_id, expected).await?;
    Ok(NoContent)
}

async fn pause(
    State(state): State<AppState>,
    caller: Auth<needs::PauseMonitor>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    Ok(tagged(
        ops::pause(state.cx(), &caller, &p.monitor_id, expected).await?,
    ))
}

async fn resume(
    State(state): State<AppState>,
    caller: Auth<needs::ResumeMonitor>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    Ok(tagged(
        ops::resume(state.cx(), &caller, &p.monitor_id, expected).await?,
    ))
}

async fn regenerate_push_token(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Json<PushTokenIssued>> {
    let issued = ops::regenerate_push_token(
        state.cx(),
        state.push_tokens(),
        &caller,
        &p.monitor_id,
        expected,
    )
    .await?;
    Ok(Json(issued))
}

async fn accept_baseline(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    Ok(tagged(
        ops::accept_baseline(state.cx(), &caller, &p.monitor_id, expected).await?,
    ))
}

async fn check_now(
    State(state): State<AppState>,
    caller: Auth<needs::CheckMonitor>,
    Path(p): Path<MonitorPath>,
) -> ApiResult<Accepted<CheckResult>> {
    Ok(Accepted(
        ops::check_now(state.runner(), state.on_demand(), &caller, &p.monitor_id).await?,
    ))
}
