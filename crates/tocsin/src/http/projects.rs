//! Projects: named groups of monitors, ordered within the workspace, with an order of their
//! monitors. Reads need `monitors:read`, every write `monitors:write` (a project only groups
//! monitors; deleting one leaves its monitors alone).
//!
//! The record (the interface leaves it open): `id, workspaceId, name, description, position,
//! monitorIds, createdAt, updatedAt`. `monitorIds` is the membership in project order; a
//! monitor's own `projectIds` reflects the same rows. Membership changes bump the project's
//! version, so its `ETag` covers `monitorIds`; reordering projects does not (position is a
//! property of the list, set by `POST /projects/order`).

use aide::axum::routing::{get_with, post_with, put_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::api_keys::double_option;
use super::extract::{check_write, ApiJson, Created, IfMatch, NoContent, Tagged, Validate};
use crate::audit::{self, Entry};
use crate::auth::caps;
use crate::auth::Caller;
use crate::clock::rfc3339;
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, FieldError, Resource};
use crate::http::AppState;
use crate::ids::new_id;
use crate::store::{self, projects::ProjectRow};

const TAG: &str = "Projects";
const MAX_NAME_CHARS: usize = 100;
const MAX_DESCRIPTION_CHARS: usize = 2_000;

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

/// A project: an ordered group of monitors.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct Project {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub description: Option<String>,
    /// Place in the workspace's project order (ascending).
    #[schemars(with = "f64")]
    pub position: i64,
    /// The project's monitors, in project order.
    pub monitor_ids: Vec<String>,
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: String,
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: String,
}

fn view(p: &ProjectRow, monitor_ids: Vec<String>) -> Project {
    Project {
        id: p.id.clone(),
        workspace_id: p.workspace_id.clone(),
        name: p.name.clone(),
        description: p.description.clone(),
        position: p.position,
        monitor_ids,
        created_at: rfc3339(p.created_at),
        updated_at: rfc3339(p.updated_at),
    }
}

fn check_description(d: Option<&String>, errors: &mut Vec<FieldError>) {
    if d.is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        errors.push(FieldError::new(
            "description",
            format!("at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
}

/// Refuses ids that are not of this workspace or that repeat, as `field.N`.
fn check_ids(field: &str, ids: &[String], found: &[String], errors: &mut Vec<FieldError>) {
    for (i, id) in ids.iter().enumerate() {
        if !found.contains(id) {
            errors.push(FieldError::new(
                format!("{field}.{i}"),
                "not found in this workspace",
            ));
        } else if ids[..i].contains(id) {
            errors.push(FieldError::new(format!("{field}.{i}"), "duplicate"));
        }
    }
}

async fn check_monitor_ids(state: &AppState, ws: &str, ids: &[String]) -> ApiResult<()> {
    let found = store::projects::existing_monitors(state.db().reader(), ws, ids).await?;
    let mut errors = Vec::new();
    check_ids("monitorIds", ids, &found, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

async fn load(state: &AppState, caller: &Caller, id: &str) -> Result<ProjectRow, DomainError> {
    store::projects::get(state.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Project))
}

async fn tagged(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Tagged<Project>> {
    let p = load(state, caller, id).await?;
    let members = store::projects::members(state.db().reader(), &p.id).await?;
    Ok(Tagged(view(&p, members), p.version))
}

async fn all(state: &AppState, ws: &str) -> ApiResult<Vec<Project>> {
    let rows = store::projects::list(state.db().reader(), ws).await?;
    let mut members = store::projects::members_by_project(state.db().reader(), ws).await?;
    Ok(rows
        .iter()
        .map(|p| view(p, members.remove(&p.id).unwrap_or_default()))
        .collect())
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
) -> ApiResult<Json<Vec<Project>>> {
    Ok(Json(all(&state, &caller.workspace_id).await?))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateProject {
    /// 1 to 100 characters.
    pub name: String,
    /// At most 2,000 characters.
    pub description: Option<String>,
    /// Initial members, in order.
    pub monitor_ids: Option<Vec<String>>,
}

impl Validate for CreateProject {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        super::workspace::check_name("name", &self.name, MAX_NAME_CHARS, &mut errors);
        check_description(self.description.as_ref(), &mut errors);
        errors
    }
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    ApiJson(body): ApiJson<CreateProject>,
) -> ApiResult<Created<Project>> {
    let monitor_ids = body.monitor_ids.unwrap_or_default();
    check_monitor_ids(&state, &caller.workspace_id, &monitor_ids).await?;
    let now = state.clock().now_ms();
    let mut tx = state.db().begin().await?;
    let row = ProjectRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: body.name.trim().to_string(),
        description: body.description,
        position: store::projects::next_position(&mut *tx, &caller.workspace_id).await?,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    store::projects::insert(&mut *tx, &row).await?;
    store::projects::set_members(&mut tx, &row.id, &monitor_ids).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "project.create",
            resource_type: "project",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "monitorIds": monitor_ids}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Created(view(&row, monitor_ids)))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProjectPath {
    pub project_id: String,
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<ProjectPath>,
) -> ApiResult<Tagged<Project>> {
    tagged(&state, &caller, &p.project_id).await
}

/// Fields to change; absent ones stay, `description: null` clears it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateProject {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub description: Option<Option<String>>,
}

impl Validate for UpdateProject {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            super::workspace::check_name("name", n, MAX_NAME_CHARS, &mut errors);
        }
        if let Some(d) = &self.description {
            check_description(d.as_ref(), &mut errors);
        }
        errors
    }
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateProject>,
) -> ApiResult<Tagged<Project>> {
    let mut row = load(&state, &caller, &p.project_id).await?;
    let now = state.clock().now_ms();
    if let Some(n) = &body.name {
        row.name = n.trim().to_string();
    }
    if let Some(d) = body.description {
        row.description = d;
    }
    row.updated_at = now;
    let mut tx = state.db().begin().await?;
    let rows = store::projects::update(&mut *tx, &row, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Project))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "project.update",
            resource_type: "project",
            resource_id: &row.id,
            metadata: json!({"name": row.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    tagged(&state, &caller, &p.project_id).await
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
) -> ApiResult<NoContent> {
    let row = load(&state, &caller, &p.project_id).await?;
    let now = state.clock().now_ms();
    let mut tx = state.db().begin().await?;
    let rows = store::projects::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Project))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "project.delete",
            resource_type: "project",
            resource_id: &row.id,
            metadata: json!({"name": row.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(NoContent)
}

/// A new project order.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectOrder {
    /// Projects to put first, in this order; projects not named keep their relative order
    /// after them.
    pub project_ids: Vec<String>,
}

impl Validate for ProjectOrder {}

async fn reorder(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    ApiJson(body): ApiJson<ProjectOrder>,
) -> ApiResult<Json<Vec<Project>>> {
    let current = store::projects::list(state.db().reader(), &caller.workspace_id).await?;
    let known: Vec<String> = current.iter().map(|p| p.id.clone()).collect();
    let mut errors = Vec::new();
    check_ids("projectIds", &body.project_ids, &known, &mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let order: Vec<&String> = body
        .project_ids
        .iter()
        .chain(known.iter().filter(|id| !body.project_ids.contains(id)))
        .collect();
    let now = state.clock().now_ms();
    let mut tx = state.db().begin().await?;
    for (i, id) in order.iter().enumerate() {
        let position = i64::try_from(i).unwrap_or(i64::MAX);
        store::projects::set_position(&mut *tx, &caller.workspace_id, id, position).await?;
    }
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "project.reorder",
            resource_type: "project",
            resource_id: &caller.workspace_id,
            metadata: json!({"projectIds": order}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Json(all(&state, &caller.workspace_id).await?))
}

/// A project's complete membership.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectMonitors {
    /// Every member, in display order; monitors not named leave the project.
    pub monitor_ids: Vec<String>,
}

impl Validate for ProjectMonitors {}

async fn set_monitors(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<ProjectPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<ProjectMonitors>,
) -> ApiResult<Tagged<Project>> {
    let row = load(&state, &caller, &p.project_id).await?;
    check_monitor_ids(&state, &caller.workspace_id, &body.monitor_ids).await?;
    let now = state.clock().now_ms();
    let mut tx = state.db().begin().await?;
    // The version check and bump come first, so a stale If-Match changes nothing.
    let rows =
        store::projects::bump(&mut *tx, &caller.workspace_id, &row.id, now, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Project))?;
    store::projects::set_members(&mut tx, &row.id, &body.monitor_ids).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "project.set_monitors",
            resource_type: "project",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "monitorIds": body.monitor_ids}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    tagged(&state, &caller, &p.project_id).await
}
