//! A status page's components: the rows of the public page, each a display name (and
//! optional description and group) over a monitor of the workspace (or none: a component
//! whose status only incidents set). The list is read and replaced whole (`PUT`), in page
//! order; a component sent with its `id` keeps it (so incidents and subscribers naming it stay
//! valid), one sent without gets a new id, and one left out is removed.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{announce, load};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller};
use crate::cx::Cx;
use crate::domain::input::{check_name, Validate};
use crate::domain::{DomainError, FieldError};
use crate::ids::new_id;
use crate::store::{self, status_pages::ComponentRow};

const MAX_COMPONENTS: usize = 200;
const MAX_NAME_CHARS: usize = 100;
const MAX_DESCRIPTION_CHARS: usize = 500;

/// One component of a status page.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct StatusPageComponent {
    pub id: String,
    pub status_page_id: String,
    pub name: String,
    pub description: Option<String>,
    /// Components with the same group are shown together under its name.
    pub group: Option<String>,
    /// The monitor whose status the component shows; null for one only incidents set.
    pub monitor_id: Option<String>,
    /// Place on the page, from 1.
    pub position: i64,
}

/// A component as sent in the list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentInput {
    /// An existing component of this page to keep (its id stays); absent for a new one.
    pub id: Option<String>,
    /// 1 to 100 characters.
    pub name: String,
    /// At most 500 characters.
    pub description: Option<String>,
    /// 1 to 100 characters.
    pub group: Option<String>,
    /// A monitor of this workspace.
    pub monitor_id: Option<String>,
}

/// The new component list, in page order (at most 200).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ComponentList(pub Vec<ComponentInput>);

impl Validate for ComponentList {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.0.len() > MAX_COMPONENTS {
            errors.push(FieldError::new(
                "",
                format!("at most {MAX_COMPONENTS} components"),
            ));
        }
        let mut seen = HashSet::new();
        for (i, c) in self.0.iter().enumerate() {
            check_name(&format!("{i}.name"), &c.name, MAX_NAME_CHARS, &mut errors);
            if let Some(g) = &c.group {
                check_name(&format!("{i}.group"), g, MAX_NAME_CHARS, &mut errors);
            }
            if c.description
                .as_ref()
                .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS)
            {
                errors.push(FieldError::new(
                    format!("{i}.description"),
                    format!("at most {MAX_DESCRIPTION_CHARS} characters"),
                ));
            }
            if let Some(id) = &c.id {
                if !seen.insert(id.as_str()) {
                    errors.push(FieldError::new(format!("{i}.id"), "appears twice"));
                }
            }
        }
        errors
    }
}

fn view(c: &ComponentRow) -> StatusPageComponent {
    StatusPageComponent {
        id: c.id.clone(),
        status_page_id: c.status_page_id.clone(),
        name: c.name.clone(),
        description: c.description.clone(),
        group: c.group_name.clone(),
        monitor_id: c.monitor_id.clone(),
        position: c.position,
    }
}

/// A page's components in page order.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
) -> Result<Vec<StatusPageComponent>, DomainError> {
    caller.require::<caps::StatusPagesRead>()?;
    let page = load(cx, caller, page_id).await?;
    let rows = store::status_pages::components(cx.db().reader(), &page.id).await?;
    Ok(rows.iter().map(view).collect())
}

/// Replaces a page's component list.
pub async fn replace(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    input: ComponentList,
) -> Result<Vec<StatusPageComponent>, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    input.check()?;
    let page = load(cx, caller, page_id).await?;
    let reader = cx.db().reader();
    let existing: HashSet<String> = store::status_pages::components(reader, &page.id)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    let monitor_ids: Vec<String> = input
        .0
        .iter()
        .filter_map(|c| c.monitor_id.clone())
        .collect();
    let known: HashSet<String> =
        store::status_pages::monitor_states(reader, &caller.workspace_id, &monitor_ids)
            .await?
            .into_iter()
            .map(|m| m.id)
            .collect();
    let mut errors = Vec::new();
    for (i, c) in input.0.iter().enumerate() {
        if c.id.as_ref().is_some_and(|id| !existing.contains(id)) {
            errors.push(FieldError::new(
                format!("{i}.id"),
                "not a component of this page (leave it out to add a new one)",
            ));
        }
        if c.monitor_id.as_ref().is_some_and(|m| !known.contains(m)) {
            errors.push(FieldError::new(
                format!("{i}.monitorId"),
                "not found in this workspace",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let rows: Vec<ComponentRow> = input
        .0
        .into_iter()
        .enumerate()
        .map(|(i, c)| ComponentRow {
            id: c.id.unwrap_or_else(new_id),
            status_page_id: page.id.clone(),
            workspace_id: caller.workspace_id.clone(),
            monitor_id: c.monitor_id,
            name: c.name.trim().to_string(),
            description: c.description.filter(|d| !d.trim().is_empty()),
            group_name: c.group.map(|g| g.trim().to_string()),
            position: i as i64 + 1,
        })
        .collect();
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    store::status_pages::clear_components(&mut *tx, &page.id).await?;
    for r in &rows {
        store::status_pages::insert_component(&mut *tx, r).await?;
    }
    store::status_pages::touch(&mut *tx, &caller.workspace_id, &page.id, now).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.components",
            resource_type: "status_page",
            resource_id: &page.id,
            metadata: json!({"components": rows.len()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &page.id);
    Ok(rows.iter().map(view).collect())
}
