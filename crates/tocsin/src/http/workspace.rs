//! The current workspace, its settings and plan, and the signed-in person's list of
//! workspaces with switching between them.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::extract::{check_write, ApiJson, IfMatch, Tagged, Validate};
use crate::app::Core;
use crate::audit::{self, Entry};
use crate::auth::caps;
use crate::config::PlanQuota;
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{on_constraint, ApiResult, FieldError, Resource};
use crate::http::AppState;
use crate::store;

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

/// The workspace the caller acts in.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct CurrentWorkspace {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub owner_id: String,
    #[schemars(with = "f64")]
    pub member_count: i64,
}

/// Reads the current-workspace view through the cache.
pub async fn current_workspace(state: &AppState, id: &str) -> ApiResult<CurrentWorkspace> {
    let now = state.clock().now_ms();
    if let Some(hit) = state.workspace_cache().get(&id.to_string(), now) {
        return Ok(hit);
    }
    let db = state.db().reader();
    let ws = store::workspaces::get(db, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    let members = store::members::count(db, id).await?;
    let view = CurrentWorkspace {
        id: ws.id,
        name: ws.name,
        slug: ws.slug,
        owner_id: ws.owner_id,
        member_count: members,
    };
    state
        .workspace_cache()
        .put(id.to_string(), view.clone(), now);
    Ok(view)
}

async fn get_current(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Json<CurrentWorkspace>> {
    Ok(Json(current_workspace(&state, &caller.workspace_id).await?))
}

/// Workspace settings.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct WorkspaceSettings {
    pub id: String,
    pub name: String,
    pub slug: String,
    /// IANA time zone used for reports and schedules shown to people.
    pub timezone: String,
    pub plan: String,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub created_at: String,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub updated_at: String,
}

fn settings_view(w: &store::workspaces::WorkspaceRow) -> WorkspaceSettings {
    WorkspaceSettings {
        id: w.id.clone(),
        name: w.name.clone(),
        slug: w.slug.clone(),
        timezone: w.timezone.clone(),
        plan: w.plan.clone(),
        created_at: crate::clock::rfc3339(w.created_at),
        updated_at: crate::clock::rfc3339(w.updated_at),
    }
}

async fn get_settings(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Tagged<WorkspaceSettings>> {
    let ws = store::workspaces::get(state.db().reader(), &caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    Ok(Tagged(settings_view(&ws), ws.version))
}

/// A partial update: absent fields keep their value.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSettings {
    /// 1 to 100 characters.
    pub name: Option<String>,
    /// 3 to 48 characters: lowercase letters, digits and single hyphens.
    pub slug: Option<String>,
    /// An IANA time zone name such as `Europe/Berlin`.
    pub timezone: Option<String>,
}

pub fn check_slug(field: &str, slug: &str, errors: &mut Vec<FieldError>) {
    let ok = (3..=48).contains(&slug.len())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--");
    if !ok {
        errors.push(FieldError::new(
            field,
            "must be 3 to 48 characters of a-z, 0-9 and single hyphens",
        ));
    }
}

pub fn check_name(field: &str, name: &str, max: usize, errors: &mut Vec<FieldError>) {
    let n = name.trim().chars().count();
    if n == 0 || n > max || name.chars().any(char::is_control) {
        errors.push(FieldError::new(
            field,
            format!("must be 1 to {max} printable characters"),
        ));
    }
}

impl Validate for UpdateSettings {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            check_name("name", n, 100, &mut errors);
        }
        if let Some(s) = &self.slug {
            check_slug("slug", s, &mut errors);
        }
        if let Some(tz) = &self.timezone {
            if tz.parse::<chrono_tz::Tz>().is_err() {
                errors.push(FieldError::new(
                    "timezone",
                    "must be an IANA time zone such as Europe/Berlin",
                ));
            }
        }
        errors
    }
}

async fn update_settings(
    State(state): State<AppState>,
    caller: Auth<caps::WorkspaceManage>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateSettings>,
) -> ApiResult<Tagged<WorkspaceSettings>> {
    let db = state.db();
    let mut ws = store::workspaces::get(db.reader(), &caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    if let Some(n) = body.name {
        ws.name = n.trim().to_string();
    }
    if let Some(s) = body.slug {
        ws.slug = s;
    }
    if let Some(tz) = body.timezone {
        ws.timezone = tz;
    }
    let now = state.clock().now_ms();
    ws.updated_at = now;
    let mut tx = db.begin().await?;
    let rows = store::workspaces::update_settings(&mut *tx, &ws, expected)
        .await
        .map_err(|e| {
            on_constraint(
                e,
                &[("slug", DomainError::field("slug", "is already taken"))],
            )
        })?;
    check_write(rows, expected, DomainError::NotFound(Resource::Workspace))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "workspace.update",
            resource_type: "workspace",
            resource_id: &ws.id,
            metadata: json!({"name": ws.name, "slug": ws.slug, "timezone": ws.timezone}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.workspace_cache().forget(&ws.id);
    let fresh = store::workspaces::get(db.reader(), &ws.id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    Ok(Tagged(settings_view(&fresh), fresh.version))
}

/// The plan, its quotas (absent = unlimited) and what is used.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct PlanView {
    pub plan: String,
    pub quotas: PlanQuota,
    pub usage: PlanUsage,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct PlanUsage {
    #[schemars(with = "f64")]
    pub members: i64,
    #[schemars(with = "f64")]
    pub api_keys: i64,
}

async fn get_plan(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
) -> ApiResult<Json<PlanView>> {
    let (plan, quotas) = crate::plans::quotas_of(&state, &caller.workspace_id).await?;
    let db = state.db().reader();
    let members = store::members::count(db, &caller.workspace_id).await?;
    let keys = store::api_keys::count_active(db, &caller.workspace_id).await?;
    Ok(Json(PlanView {
        plan,
        quotas,
        usage: PlanUsage {
            members,
            api_keys: keys,
        },
    }))
}

/// One workspace the signed-in person belongs to.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct MyWorkspace {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub role: crate::auth::Role,
    /// True for the session's active workspace.
    pub active: bool,
}

async fn list_mine(
    State(state): State<AppState>,
    caller: Auth<caps::SignedInIdentity>,
) -> ApiResult<Json<Vec<MyWorkspace>>> {
    let rows = store::workspaces::list_for_user(state.db().reader(), &caller.user_id).await?;
    Ok(Json(
        rows.into_iter()
            .filter_map(|r| {
                let role = crate::auth::Role::parse(&r.role)?;
                Some(MyWorkspace {
                    active: r.id == caller.workspace_id,
                    id: r.id,
                    name: r.name,
                    slug: r.slug,
                    role,
                })
            })
            .collect(),
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WorkspacePath {
    pub workspace_id: String,
}

async fn activate(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<WorkspacePath>,
) -> ApiResult<Json<CurrentWorkspace>> {
    let db = state.db();
    // Only a workspace the person belongs to; any other is simply not found.
    store::members::get(db.reader(), &p.workspace_id, &caller.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    let session = caller.session_id().ok_or(DomainError::Unauthorized)?;
    store::sessions::set_workspace(db.writer(), session, &p.workspace_id).await?;
    Ok(Json(current_workspace(&state, &p.workspace_id).await?))
}

/// A slug derived from `name` that no workspace uses yet.
pub async fn free_slug(state: &Core, name: &str) -> ApiResult<String> {
    let mut base: String = name
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    base.truncate(40);
    let base = base.trim_end_matches('-').to_string();
    let base = if base.len() < 3 {
        format!("ws-{base}").trim_end_matches('-').to_string()
    } else {
        base
    };
    if !store::workspaces::slug_taken(state.db().reader(), &base).await? {
        return Ok(base);
    }
    for _ in 0..8 {
        let suffix: u32 = rand::random::<u32>() % 1_000_000;
        let candidate = format!("{base}-{suffix}");
        if !store::workspaces::slug_taken(state.db().reader(), &candidate).await? {
            return Ok(candidate);
        }
    }
    Ok(format!("{base}-{}", crate::ids::new_id().replace('-', "")))
}
