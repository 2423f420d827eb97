//! HTTP adapter for escalation policies (rules and record in `domain::escalation`).

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, Created, IfMatch, NoContent, Tagged};
use crate::auth::caps;
use crate::domain::escalation::{
    self as ops, CreateEscalationPolicy, EscalationPolicy, PolicyPath, UpdateEscalationPolicy,
};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Escalation policies";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/escalation-policies",
            get_with(list, |op| {
                op.id("listEscalationPolicies")
                    .tag(TAG)
                    .summary("The workspace's escalation policies, oldest first (`notifications:read`)")
            })
            .post_with(create, |op| {
                op.id("createEscalationPolicy").tag(TAG).summary(
                    "Create an escalation policy: 1 to 10 steps, each notified `delayMinutes` (0 to 10,080, increasing) after an alert opens unless it was acknowledged or resolved; `stepOrder` is the position, from 1 (`notifications:write`)",
                )
            }),
        )
        .api_route(
            "/escalation-policies/{policy_id}",
            get_with(get_one, |op| {
                op.id("getEscalationPolicy")
                    .tag(TAG)
                    .summary("One escalation policy (`notifications:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateEscalationPolicy").tag(TAG).summary(
                    "Rename a policy or replace its steps; version-locked with If-Match (`notifications:write`)",
                )
            })
            .delete_with(delete, |op| {
                op.id("deleteEscalationPolicy").tag(TAG).summary(
                    "Delete a policy: its monitors keep running without one and open alerts stop escalating (`notifications:delete`)",
                )
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsRead>,
) -> ApiResult<Json<Vec<EscalationPolicy>>> {
    Ok(Json(ops::list(state.cx(), &caller).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsWrite>,
    ApiJson(body): ApiJson<CreateEscalationPolicy>,
) -> ApiResult<Created<EscalationPolicy>> {
    Ok(Created(ops::create(state.cx(), &caller, body).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsRead>,
    Path(p): Path<PolicyPath>,
) -> ApiResult<Tagged<EscalationPolicy>> {
    let (policy, version) = ops::get(state.cx(), &caller, &p.policy_id).await?;
    Ok(Tagged(policy, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsWrite>,
    Path(p): Path<PolicyPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateEscalationPolicy>,
) -> ApiResult<Tagged<EscalationPolicy>> {
    let (policy, version) = ops::update(state.cx(), &caller, &p.policy_id, expected, body).await?;
    Ok(Tagged(policy, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsDelete>,
    Path(p): Path<PolicyPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<NoContent> {
    ops::delete(state.cx(), &caller, &p.policy_id, expected).await?;
    Ok(NoContent)
}
