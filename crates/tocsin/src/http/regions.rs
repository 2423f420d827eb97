//! `GET /regions`: the regions monitors may name, and whether each can check right now
//! (`monitors:read`). `local` is the built-in probe (always live); every other region exists
//! because it has an unrevoked probe key and is live while at least one of its probes is
//! connected ([`crate::probes`]). This is how a region's absence shows: a region that is not
//! live reports nothing, which never fails a check.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

use super::schema::exact_object;
use crate::auth::caps;
use crate::clock::rfc3339;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;
use crate::monitoring::LOCAL_REGION;
use crate::store::probes;

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

/// One region.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct Region {
    pub name: String,
    /// At least one probe of the region is connected.
    pub live: bool,
    /// Connected probes.
    pub probes: u64,
    /// The names of the connected probes, one per connection.
    pub probe_names: Vec<String>,
    #[schemars(with = "Option<crate::http::schema::Timestamp>")]
    pub last_seen_at: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    _caller: Auth<caps::MonitorsRead>,
) -> ApiResult<Json<Vec<Region>>> {
    let now = state.clock().now_ms();
    let stored = probes::active_regions(state.db().reader()).await?;
    let live = state.probes().snapshot();
    let mut out = vec![Region {
        name: LOCAL_REGION.to_string(),
        live: true,
        probes: 1,
        probe_names: vec![state.config().probe_name.clone()],
        last_seen_at: Some(rfc3339(now)),
    }];
    for (name, seen_stored) in stored {
        let view = live.get(&name).cloned().unwrap_or_default();
        // The store lags the connection by up to a ping interval; the registry by nothing.
        let seen = seen_stored.max(view.last_seen_ms);
        out.push(Region {
            live: !view.probes.is_empty(),
            probes: view.probes.len() as u64,
            probe_names: view.probes,
            last_seen_at: seen.map(rfc3339),
            name,
        });
    }
    Ok(Json(out))
}
