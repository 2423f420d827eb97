//! `GET /monitors/{monitor_id}/events`: a monitor's status changes, newest first
//! (`monitors:read`); the operation and its shapes are [`crate::domain::events`].

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{ApiQuery, Validate};
use crate::auth::caps;
use crate::domain::events::{self as ops, EventQuery, MonitorEvent};
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, FieldError};
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/monitors/{monitor_id}/events",
        get_with(list, |op| {
            op.id("listMonitorEvents")
                .tag("Monitors")
                .summary("A monitor's status changes, newest first (`monitors:read`)")
                .description(
                    "One event per status change, recorded in the same transaction as the \
                     change itself, numbered 1, 2, 3 ... per monitor by `seq`. `kind` is \
                     `down`, `up`, `degraded`, `changed`, `maintenance`, `pending`, \
                     `certificate_expiring` (recorded beside the status event of a change \
                     made while a certificate is inside its warning threshold), `stale` \
                     (nobody is checking the monitor: no result for three intervals, or no \
                     live probe in any of its regions; `from` and `to` are its unchanged \
                     status) or `fresh` (results reach it again). `alert` says \
                     whether notification channels should hear of it: the first `up` after \
                     `PENDING` or maintenance is recorded but does not alert. Paging: pass the \
                     `seq` of the last event of a page as `before` to get older ones; a page \
                     shorter than `limit` is the last.",
                )
        }),
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MonitorPath {
    pub monitor_id: String,
}

impl Validate for EventQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<MonitorPath>,
    ApiQuery(q): ApiQuery<EventQuery>,
) -> ApiResult<Json<Vec<MonitorEvent>>> {
    Ok(Json(
        ops::list(state.cx(), &caller, &p.monitor_id, &q).await?,
    ))
}
