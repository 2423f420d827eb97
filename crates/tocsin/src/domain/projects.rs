//! Projects: named groups of monitors, ordered within the workspace, with an order of their
//! monitors. Reads need `monitors:read`, every write `monitors:write` (a project only groups
//! monitors; deleting one leaves its monitors alone).
//!
//! The record (the interface leaves it open): `id, workspaceId, name, description, position,
//! monitorIds, createdAt, updatedAt`. `monitorIds` is the membership in project order; a
//! monitor's own `projectIds` reflects the same rows. Membership changes bump the project's
//! version, so its `ETag` covers `monitorIds`; reordering projects does not (position is a
//! property of the list, set by `reorder`).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::{check_name, double_option, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::{self, projects::ProjectRow};

const MAX_NAME_CHARS: usize = 100;
const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// A project: an ordered group of monitors.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
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

async fn check_monitor_ids(cx: &Cx, ws: &str, ids: &[String]) -> Result<(), DomainError> {
    let found = store::projects::existing_monitors(cx.db().reader(), ws, ids).await?;
    let mut errors = Vec::new();
    check_ids("monitorIds", ids, &found, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<ProjectRow, DomainError> {
    store::projects::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Project))
}

async fn versioned(cx: &Cx, caller: &Caller, id: &str) -> Result<(Project, i64), DomainError> {
    let p = load(cx, caller, id).await?;
    let members = store::projects::members(cx.db().reader(), &p.id).await?;
    Ok((view(&p, members), p.version))
}

async fn all(cx: &Cx, ws: &str) -> Result<Vec<Project>, DomainError> {
    let rows = store::projects::list(cx.db().reader(), ws).await?;
    let mut members = store::projects::members_by_project(cx.db().reader(), ws).await?;
    Ok(rows
        .iter()
        .map(|p| view(p, members.remove(&p.id).unwrap_or_default()))
        .collect())
}

/// The workspace's projects, in order.
pub async fn list(cx: &Cx, caller: &Caller) -> Result<Vec<Project>, DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    all(cx, &caller.workspace_id).await
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
        check_name("name", &self.name, MAX_NAME_CHARS, &mut errors);
        check_description(self.description.as_ref(), &mut errors);
        errors
    }
}

/// Creates a project at the end of the order.
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    input: CreateProject,
) -> Result<Project, DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    input.check()?;
    let monitor_ids = input.monitor_ids.unwrap_or_default();
    check_monitor_ids(cx, &caller.workspace_id, &monitor_ids).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let row = ProjectRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: input.name.trim().to_string(),
        description: input.description,
        position: store::projects::next_position(&mut *tx, &caller.workspace_id).await?,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    store::projects::insert(&mut *tx, &row).await?;
    store::projects::set_members(&mut tx, &row.id, &monitor_ids).await?;
    audit::record(
        &mut *tx,
        caller,
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
    Ok(view(&row, monitor_ids))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProjectPath {
    pub project_id: String,
}

/// One project and its version.
pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<(Project, i64), DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    versioned(cx, caller, id).await
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
            check_name("name", n, MAX_NAME_CHARS, &mut errors);
        }
        if let Some(d) = &self.description {
            check_description(d.as_ref(), &mut errors);
        }
        errors
    }
}

/// Renames or describes a project if `expected` (when given) is still its version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateProject,
) -> Result<(Project, i64), DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    input.check()?;
    let mut row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    if let Some(n) = &input.name {
        row.name = n.trim().to_string();
    }
    if let Some(d) = input.description {
        row.description = d;
    }
    row.updated_at = now;
    let mut tx = cx.db().begin().await?;
    let rows = store::projects::update(&mut *tx, &row, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Project))?;
    audit::record(
        &mut *tx,
        caller,
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
    versioned(cx, caller, id).await
}

/// Deletes a project; its monitors stay.
pub async fn delete(cx: &Cx, caller: &Caller, id: &str) -> Result<(), DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::projects::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Project))?;
    audit::record(
        &mut *tx,
        caller,
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
    Ok(())
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

/// Puts the named projects first, in this order; the rest follow as they were.
pub async fn reorder(
    cx: &Cx,
    caller: &Caller,
    input: ProjectOrder,
) -> Result<Vec<Project>, DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    input.check()?;
    let current = store::projects::list(cx.db().reader(), &caller.workspace_id).await?;
    let known: Vec<String> = current.iter().map(|p| p.id.clone()).collect();
    let mut errors = Vec::new();
    check_ids("projectIds", &input.project_ids, &known, &mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let order: Vec<&String> = input
        .project_ids
        .iter()
        .chain(known.iter().filter(|id| !input.project_ids.contains(id)))
        .collect();
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    for (i, id) in order.iter().enumerate() {
        let position = i64::try_from(i).unwrap_or(i64::MAX);
        store::projects::set_position(&mut *tx, &caller.workspace_id, id, position).await?;
    }
    audit::record(
        &mut *tx,
        caller,
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
    all(cx, &caller.workspace_id).await
}

/// A project's complete membership.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectMonitors {
    /// Every member, in display order; monitors not named leave the project.
    pub monitor_ids: Vec<String>,
}

impl Validate for ProjectMonitors {}

/// Sets the project's monitors and their order if `expected` (when given) is its version.
pub async fn set_monitors(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: ProjectMonitors,
) -> Result<(Project, i64), DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    input.check()?;
    let row = load(cx, caller, id).await?;
    check_monitor_ids(cx, &caller.workspace_id, &input.monitor_ids).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    // The version check and bump come first, so a stale If-Match changes nothing.
    let rows =
        store::projects::bump(&mut *tx, &caller.workspace_id, &row.id, now, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Project))?;
    store::projects::set_members(&mut tx, &row.id, &input.monitor_ids).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "project.set_monitors",
            resource_type: "project",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "monitorIds": input.monitor_ids}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    versioned(cx, caller, id).await
}
