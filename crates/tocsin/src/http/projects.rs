//! HTTP adapter for projects (operations, rules and the record's shape in
//! `domain::projects`).

use aide::axum::routing::{get_with, post_with, put_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, Created, IfMatch, NoContent, Tagged};
use crate::auth::caps;
use crate::domain::projects::{
    self, CreateProject, Project, ProjectMonitors, ProjectOrder, ProjectPath, UpdateProject,
};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Projects";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/projects",
            get_with(list, |op| {
                op.id("listProjects")
                    .tag(TAG)
                    .summary("The workspace's projects, in order (`monitors:read`)")
            })
            .post_with(create, |op| {
                op.id("createProject")
                    .tag(TAG)
                    .summary("Create a project at the end of the order (`monitors:write`)")
            }),
        )
        .api_route(
            "/projects/order",
            post_with(reorder, |op| {
                op.id("reorderProjects").tag(TAG).summary(
                    "Put the named projects first, in this order; the rest follow as they were (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/projects/{project_id}",
            get_with(get_one, |op| {
                op.id("getProject")
                    .tag(TAG)
                    .summary("One project (`monitors:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateProject").tag(TAG).summary(
                    "Rename or describe a project; version-locked with If-Match (`monitors:write`)",
                )
            })
            .delete_with(delete, |op| {
                op.id("deleteProject")
                    .tag(TAG)
                    .summary("Delete a project; its monitors stay (`monitors:write`)")
            }),
        )
        .api_route(
            "/projects/{project_id}/monitors",
            put_with(set_monitors, |op| {
                op.id("setProjectMonitors").tag(TAG).summary(
                    "Set the project's monitors and their order; version-locked (`monitors:write`)",
                )
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
) -> ApiResult<Json<Vec<Project>>> {
    Ok(Json(projects::list(state.cx(), &caller).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    ApiJson(body): ApiJson<CreateProject>,
) -> ApiResult<Created<Project>> {
    Ok(Created(projects::create(state.cx(), &caller, body).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<ProjectPath>,
) -> ApiResult<Tagged<Project>> {
    let (project, version) = projects::get(state.cx(), &caller, &p.project_id).await?;
    Ok(Tagged(project, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateProject>,
) -> ApiResult<Tagged<Project>> {
    let (project, version) =
        projects::update(state.cx(), &caller, &p.project_id, expected, body).await?;
    Ok(Tagged(project, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
) -> ApiResult<NoContent> {
    projects::delete(state.cx(), &caller, &p.project_id).await?;
    Ok(NoContent)
}

async fn reorder(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    ApiJson(body): ApiJson<ProjectOrder>,
) -> ApiResult<Json<Vec<Project>>> {
    Ok(Json(projects::reorder(state.cx(), &caller, body).await?))
}

async fn set_monitors(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<ProjectMonitors>,
) -> ApiResult<Tagged<Project>> {
    let (project, version) =
        projects::set_monitors(state.cx(), &caller, &p.project_id, expected, body).await?;
    Ok(Tagged(project, version))
}
