//! HTTP adapter for the current workspace, its settings and plan, and the signed-in person's
//! list of workspaces with switching between them (operations in `domain::workspaces`). The
//! current-workspace cache is HTTP state (`AppState::workspace_cache`): [`current_workspace`]
//! reads through it, and handlers whose writes change the view forget or refresh it.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, IfMatch, Tagged};
use crate::auth::caps;
use crate::domain::email_readiness::{self, EmailReadiness};
use crate::domain::workspaces::{
    self, MyWorkspace, PlanView, UpdateSettings, WorkspacePath, WorkspaceSettings,
};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

use crate::domain::workspaces::CurrentWorkspace;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/workspace",
            get_with(get_current, |op| {
                op.id("getCurrentWorkspace")
                    .tag("Workspace")
                    .summary("The workspace the caller acts in")
            }),
        )
        .api_route(
            "/workspace/settings",
            get_with(get_settings, |op| {
                op.id("getWorkspaceSettings")
                    .tag("Workspace")
                    .summary("Workspace settings")
            })
            .patch_with(update_settings, |op| {
                op.id("updateWorkspaceSettings")
                    .tag("Workspace")
                    .summary("Change workspace settings (version-locked)")
            }),
        )
        .api_route(
            "/workspace/plan",
            get_with(get_plan, |op| {
                op.id("getWorkspacePlan")
                    .tag("Workspace")
                    .summary("The workspace's plan, quotas and usage")
            }),
        )
        .api_route(
            "/workspace/email-readiness",
            get_with(get_email_readiness, |op| {
                op.id("getEmailReadiness").tag("Workspace").summary(
                    "Whether this server sends email (it has an SMTP relay) and what of the workspace needs it: subscribers, enabled EMAIL channels, pending invitations, published status pages",
                )
            }),
        )
        .api_route(
            "/workspaces",
            get_with(list_mine, |op| {
                op.id("listMyWorkspaces")
                    .tag("Workspace")
                    .summary("Workspaces the signed-in person belongs to")
            }),
        )
        .api_route(
            "/workspaces/{workspace_id}/activate",
            post_with(activate, |op| {
                op.id("activateWorkspace")
                    .tag("Workspace")
                    .summary("Switch the session's active workspace")
            }),
        )
}

/// Reads the current-workspace view through the cache.
pub async fn current_workspace(state: &AppState, id: &str) -> ApiResult<CurrentWorkspace> {
    let now = state.clock().now_ms();
    if let Some(hit) = state.workspace_cache().get(&id.to_string(), now) {
        return Ok(hit);
    }
    let view = workspaces::view(state.cx(), id).await?;
    remember(state, &view);
    Ok(view)
}

/// Puts a freshly read view into the cache (after a write that changed it).
pub fn remember(state: &AppState, view: &CurrentWorkspace) {
    let now = state.clock().now_ms();
    state
        .workspace_cache()
        .put(view.id.clone(), view.clone(), now);
}

async fn get_current(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Json<CurrentWorkspace>> {
    // The extractor has authorised the caller; the hot path is served from the cache.
    Ok(Json(current_workspace(&state, &caller.workspace_id).await?))
}

async fn get_settings(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Tagged<WorkspaceSettings>> {
    let (settings, version) = workspaces::settings(state.cx(), &caller).await?;
    Ok(Tagged(settings, version))
}

async fn update_settings(
    State(state): State<AppState>,
    caller: Auth<caps::WorkspaceManage>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateSettings>,
) -> ApiResult<Tagged<WorkspaceSettings>> {
    let (settings, version) =
        workspaces::update_settings(state.cx(), &caller, expected, body).await?;
    state.workspace_cache().forget(&settings.id);
    Ok(Tagged(settings, version))
}

async fn get_plan(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Json<PlanView>> {
    Ok(Json(workspaces::plan(state.cx(), &caller).await?))
}

async fn get_email_readiness(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Json<EmailReadiness>> {
    Ok(Json(email_readiness::get(state.cx(), &caller).await?))
}

async fn list_mine(
    State(state): State<AppState>,
    caller: Auth<caps::SignedInIdentity>,
) -> ApiResult<Json<Vec<MyWorkspace>>> {
    Ok(Json(workspaces::list_mine(state.cx(), &caller).await?))
}

async fn activate(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<WorkspacePath>,
) -> ApiResult<Json<CurrentWorkspace>> {
    let view = workspaces::activate(state.cx(), &caller, &p.workspace_id).await?;
    remember(&state, &view);
    Ok(Json(view))
}
