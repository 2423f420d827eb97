//! HTTP adapter for workspace members: list, read, change role, remove (operations and rules
//! in `domain::members`). Removing a member changes the member count, so the handler forgets
//! the cached current-workspace view.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, ApiQuery, IfMatch, NoContent, Tagged};
use crate::auth::caps;
use crate::domain::members::{self, Member, MemberPage, MemberPath, UpdateMember};
use crate::domain::pagination::PageParams;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/workspace/members",
            get_with(list, |op| {
                op.id("listMembers")
                    .tag("Workspace")
                    .summary("Members of the workspace")
            }),
        )
        .api_route(
            "/workspace/members/{user_id}",
            get_with(get_one, |op| {
                op.id("getMember").tag("Workspace").summary("One member")
            })
            .patch_with(update, |op| {
                op.id("updateMember")
                    .tag("Workspace")
                    .summary("Change a member's role (version-locked)")
            })
            .delete_with(remove, |op| {
                op.id("removeMember")
                    .tag("Workspace")
                    .summary("Remove a member from the workspace")
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<MemberPage>> {
    Ok(Json(members::list(state.cx(), &caller, page).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
    Path(p): Path<MemberPath>,
) -> ApiResult<Tagged<Member>> {
    let (member, version) = members::get(state.cx(), &caller, &p.user_id).await?;
    Ok(Tagged(member, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<MemberPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateMember>,
) -> ApiResult<Tagged<Member>> {
    let (member, version) =
        members::update(state.cx(), &caller, &p.user_id, expected, body).await?;
    Ok(Tagged(member, version))
}

async fn remove(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<MemberPath>,
) -> ApiResult<NoContent> {
    members::remove(state.cx(), &caller, &p.user_id).await?;
    state.workspace_cache().forget(&caller.workspace_id);
    Ok(NoContent)
}
