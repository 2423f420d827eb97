//! HTTP adapter for invitations (operations in `domain::invitations`). Accepting changes the
//! joined workspace's member count, so the handler refreshes the cached current-workspace view.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, ApiQuery, Created};
use super::workspace::remember;
use crate::auth::caps;
use crate::domain::invitations::{
    self, AcceptInvitation, CreateInvitation, Invitation, InvitationPage, InvitationPath,
};
use crate::domain::pagination::PageParams;
use crate::domain::workspaces::CurrentWorkspace;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/workspace/invitations",
            get_with(list, |op| {
                op.id("listInvitations")
                    .tag("Workspace")
                    .summary("Pending and past invitations")
            })
            .post_with(create, |op| {
                op.id("createInvitation")
                    .tag("Workspace")
                    .summary("Invite someone by email")
            }),
        )
        .api_route(
            "/workspace/invitations/{invitation_id}",
            get_with(get_one, |op| {
                op.id("getInvitation")
                    .tag("Workspace")
                    .summary("One invitation")
            }),
        )
        .api_route(
            "/workspace/invitations/{invitation_id}/revoke",
            post_with(revoke, |op| {
                op.id("revokeInvitation")
                    .tag("Workspace")
                    .summary("Revoke a pending invitation (the record stays, with status revoked)")
            }),
        )
        .api_route(
            "/invitations/accept",
            post_with(accept, |op| {
                op.id("acceptInvitation")
                    .tag("Workspace")
                    .summary("Accept an invitation as the signed-in person")
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<InvitationPage>> {
    Ok(Json(invitations::list(state.cx(), &caller, page).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<InvitationPath>,
) -> ApiResult<Json<Invitation>> {
    Ok(Json(
        invitations::get(state.cx(), &caller, &p.invitation_id).await?,
    ))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    ApiJson(body): ApiJson<CreateInvitation>,
) -> ApiResult<Created<Invitation>> {
    Ok(Created(
        invitations::create(state.cx(), state.mailer(), &caller, body).await?,
    ))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<InvitationPath>,
) -> ApiResult<Json<Invitation>> {
    Ok(Json(
        invitations::revoke(state.cx(), &caller, &p.invitation_id).await?,
    ))
}

async fn accept(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    ApiJson(body): ApiJson<AcceptInvitation>,
) -> ApiResult<Json<CurrentWorkspace>> {
    let view = invitations::accept(state.cx(), &caller, body).await?;
    remember(&state, &view);
    Ok(Json(view))
}
