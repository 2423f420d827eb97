//! `GET /regions`: the regions monitors may name, and whether each can check right now
//! (`monitors:read`); the operation and its shape are [`crate::domain::regions`].

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::Json;

use crate::auth::caps;
use crate::domain::regions::{self as ops, Region};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/regions",
        get_with(list, |op| {
            op.id("listRegions")
                .tag("Monitors")
                .summary("Known regions and their live probes (`monitors:read`)")
                .description(
                    "The regions a monitor's `regions` may name, by name, `local` first. \
                     `local` is the probe built into the server: always live, one probe, \
                     `lastSeenAt` now. Every other region has at least one unrevoked probe \
                     key; it is `live` while at least one of its probes is connected, and \
                     `probes` counts those connections. `lastSeenAt` is when a probe of the \
                     region last connected or answered a ping (`null` if none ever has). A \
                     region that is not live reports nothing for its checks: it never makes \
                     a monitor fail.",
                )
        }),
    )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
) -> ApiResult<Json<Vec<Region>>> {
    Ok(Json(
        ops::list(state.cx(), state.probes(), state.relay(), &caller).await?,
    ))
}
