//! The routes reading a monitor's check results: heartbeats, hourly stats, uptime windows and
//! availability reports (JSON or CSV). The reads, their shapes and rules are
//! [`crate::domain::heartbeats`]; this adds the routes, the query validation at extraction
//! and the report's two media types.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as OaResponse, SchemaObject};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{ApiQuery, Validate};
use crate::auth::{caps, needs};
use crate::domain::heartbeats::{
    self as ops, Heartbeat, HeartbeatQuery, HourlyStat, RangeQuery, Report, ReportFormat,
    ReportQuery, Uptime, CSV_HEADER,
};
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, FieldError};
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/monitors/{monitor_id}/heartbeats",
            get_with(list, |op| {
                op.id("listHeartbeats")
                    .tag("Monitors")
                    .summary("A monitor's check results, newest first")
                    .description(
                        "Filters: `from` (inclusive) and `to` (exclusive) on the check time, \
                         `status`, `region`, `correlationId`. Keyset paging: pass the `id` of \
                         the last heartbeat of a page as `before` to get the next, older page; \
                         a page shorter than `limit` is the last. Plain UP results keep status \
                         code, timings, latency and retry count; their message, headers, body, \
                         resolved IP and assertion results read as null unless they carried a \
                         message or a correlation id. Raw heartbeats are kept 14 days by default.",
                    )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/stats/hourly",
            get_with(hourly, |op| {
                op.id("listHourlyStats")
                    .tag("Monitors")
                    .summary("Hourly check counts and latency, oldest first")
                    .description(
                        "One item per UTC hour that has checks, for the hours from the one \
                         containing `from` (default: 24 hours ago) up to `to` (exclusive; \
                         default now). `upChecks`, `downChecks`, `degradedChecks` count those \
                         statuses; `totalChecks` counts every check with a verdict (a PENDING \
                         heartbeat, an on-demand check cancelled by a shutdown, counts in no \
                         figure). Latency figures (ms) cover \
                         checks that were not DOWN and are 0 when there are none; `p95Latency` \
                         is the nearest-rank 95th percentile read from a log-linear histogram \
                         (bins at most 6.25 % wide, reported at the bin midpoint clamped to the \
                         observed min/max: within about 3.1 %). Kept 400 days by default.",
                    )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/uptime",
            get_with(uptime, |op| {
                op.id("getMonitorUptime")
                    .tag("Monitors")
                    .summary("Uptime percentages over the last 24 h, 7, 30 and 90 days")
                    .description(
                        "Uptime = checks whose status is not DOWN / all checks, in percent \
                         rounded to 4 decimals (DEGRADED counts as up; PENDING heartbeats, which \
                         have no verdict, count neither way). Each window ends now \
                         (inclusive). `null` when a window has no checks. With `from` (and \
                         optionally `to`, default now) the range is also reported as `custom`; \
                         otherwise `custom` is null. Whole hours are read from hourly rollups, \
                         partial hours from raw heartbeats while those are retained (older \
                         partial hours count whole).",
                    )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/report",
            get_with(report_handler, |op| {
                op.id("getMonitorReport")
                    .tag("Monitors")
                    .summary("Availability report of a range, as JSON or CSV")
                    .description(
                        "For `from` (inclusive, default 30 days before `to`) to `to` (exclusive, \
                         default now). Uptime and check counts as for uptime windows; latency \
                         percentiles (ms) from hourly histograms (see hourly stats); outages are \
                         runs of DOWN heartbeats, from the first DOWN to the next check that is \
                         neither DOWN nor PENDING, clipped to the range; `downtimeMs` sums them, \
                         `mttrMs` is \
                         their mean (null without outages). Outage figures need raw heartbeats \
                         and cover the range from `outageDataFrom`. `format=csv` answers \
                         `text/csv` with a header row and one data row, same columns as the \
                         JSON fields, in that order.",
                    )
            }),
        )
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MonitorPath {
    pub monitor_id: String,
}

impl Validate for HeartbeatQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

impl Validate for RangeQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

impl Validate for ReportQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListHeartbeats>,
    Path(p): Path<MonitorPath>,
    ApiQuery(q): ApiQuery<HeartbeatQuery>,
) -> ApiResult<Json<Vec<Heartbeat>>> {
    Ok(Json(
        ops::list(state.cx(), &caller, &p.monitor_id, &q).await?,
    ))
}

async fn hourly(
    State(state): State<AppState>,
    caller: Auth<needs::ListHourlyStats>,
    Path(p): Path<MonitorPath>,
    ApiQuery(q): ApiQuery<RangeQuery>,
) -> ApiResult<Json<Vec<HourlyStat>>> {
    Ok(Json(
        ops::hourly(state.cx(), &caller, &p.monitor_id, &q).await?,
    ))
}

async fn uptime(
    State(state): State<AppState>,
    caller: Auth<needs::GetMonitorUptime>,
    Path(p): Path<MonitorPath>,
    ApiQuery(q): ApiQuery<RangeQuery>,
) -> ApiResult<Json<Uptime>> {
    Ok(Json(
        ops::uptime(state.cx(), &caller, &p.monitor_id, &q).await?,
    ))
}

/// A report as JSON or CSV.
pub enum ReportResponse {
    Json(Box<Report>),
    Csv(String),
}

impl IntoResponse for ReportResponse {
    fn into_response(self) -> Response {
        match self {
            ReportResponse::Json(r) => Json(*r).into_response(),
            ReportResponse::Csv(text) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/csv; charset=utf-8"),
                )],
                text,
            )
                .into_response(),
        }
    }
}

impl aide::OperationOutput for ReportResponse {
    type Inner = Report;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        let mut res = <Json<Report> as aide::OperationOutput>::operation_response(ctx, op)?;
        res.description = "The report: JSON by default, CSV with `format=csv`".into();
        let schema = ctx.schema.subschema_for::<String>();
        res.content.insert(
            "text/csv".into(),
            MediaType {
                schema: Some(SchemaObject {
                    json_schema: schema,
                    example: None,
                    external_docs: None,
                }),
                example: Some(serde_json::Value::String(format!(
                    "{CSV_HEADER}\r\n0190f1e2-...,2024-01-01T00:00:00.000Z,2024-01-31T00:00:00.000Z,\
                     99.95,1320000,2,660000,120.5,310.2,802,140.3,86400,86300,43,57,\
                     2024-01-17T00:00:00.000Z\r\n"
                ))),
                ..Default::default()
            },
        );
        Some(res)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(200), r)])
            .unwrap_or_default()
    }
}

async fn report_handler(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<MonitorPath>,
    ApiQuery(q): ApiQuery<ReportQuery>,
) -> ApiResult<ReportResponse> {
    let r = ops::report(state.cx(), &caller, &p.monitor_id, &q).await?;
    Ok(match q.format.unwrap_or_default() {
        ReportFormat::Json => ReportResponse::Json(Box::new(r)),
        ReportFormat::Csv => ReportResponse::Csv(r.csv()),
    })
}
