//! Workspaces: the current-workspace view, settings (version-locked), plan with quotas and
//! usage, the signed-in person's list of workspaces, switching the active one, and choosing a
//! free slug for a new workspace.
//!
//! The current-workspace *cache* is not here: it is a read cache for the HTTP hot path
//! (`http::AppState::workspace_cache`, five seconds, per node), so the HTTP handlers read
//! through it and forget entries after the writes that change the view (settings, members,
//! accepted invitations). The operations here always read the database; a surface without the
//! cache is never stale.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::{check_name, check_slug, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller, Role, Via};
use crate::config::PlanQuota;
use crate::cx::Cx;
use crate::domain::error::on_constraint;
use crate::store;

/// The workspace the caller acts in.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct CurrentWorkspace {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub owner_id: String,
    #[schemars(with = "f64")]
    pub member_count: i64,
}

/// The current-workspace view of `id`, read from the database (no authorisation: callers
/// have already established that the view is theirs to see).
pub async fn view(cx: &Cx, id: &str) -> Result<CurrentWorkspace, DomainError> {
    let db = cx.db().reader();
    let ws = store::workspaces::get(db, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    let members = store::members::count(db, id).await?;
    Ok(CurrentWorkspace {
        id: ws.id,
        name: ws.name,
        slug: ws.slug,
        owner_id: ws.owner_id,
        member_count: members,
    })
}

/// The workspace the caller acts in.
pub async fn current(cx: &Cx, caller: &Caller) -> Result<CurrentWorkspace, DomainError> {
    caller.require::<caps::IdentityRead>()?;
    view(cx, &caller.workspace_id).await
}

/// Workspace settings.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct WorkspaceSettings {
    pub id: String,
    pub name: String,
    pub slug: String,
    /// IANA time zone used for reports and schedules shown to people.
    pub timezone: String,
    pub plan: String,
    /// Members who are not owners sign in through the workspace's single sign-on provider
    /// only (a password sign-in answers 403 `SSO_REQUIRED`); owners keep their password.
    pub require_sso: bool,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub updated_at: String,
}

fn settings_view(w: &store::workspaces::WorkspaceRow, require_sso: bool) -> WorkspaceSettings {
    WorkspaceSettings {
        require_sso,
        id: w.id.clone(),
        name: w.name.clone(),
        slug: w.slug.clone(),
        timezone: w.timezone.clone(),
        plan: w.plan.clone(),
        created_at: crate::clock::rfc3339(w.created_at),
        updated_at: crate::clock::rfc3339(w.updated_at),
    }
}

/// The settings and their version.
pub async fn settings(cx: &Cx, caller: &Caller) -> Result<(WorkspaceSettings, i64), DomainError> {
    caller.require::<caps::IdentityRead>()?;
    let ws = store::workspaces::get(cx.db().reader(), &caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    let require_sso = store::sso::require_sso(cx.db().reader(), &ws.id).await?;
    Ok((settings_view(&ws, require_sso), ws.version))
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
    /// Owners only; needs a single sign-on provider configured on the server.
    pub require_sso: Option<bool>,
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

/// Changes the settings if `expected` (when given) is still the version; returns the new
/// settings and version. The caller's current-workspace view changes with the name and slug.
pub async fn update_settings(
    cx: &Cx,
    caller: &Caller,
    expected: Option<i64>,
    input: UpdateSettings,
) -> Result<(WorkspaceSettings, i64), DomainError> {
    caller.require::<caps::WorkspaceManage>()?;
    input.check()?;
    if input.require_sso.is_some()
        && !matches!(
            caller.via,
            Via::Session {
                role: Role::Owner,
                ..
            }
        )
    {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "Only an owner may change requireSso: ask an owner of this workspace.".into(),
        ));
    }
    if input.require_sso == Some(true) && cx.config().sso.is_empty() {
        return Err(DomainError::field(
            "requireSso",
            "needs a single sign-on provider, and this server has none configured ([[sso.oidc]])",
        ));
    }
    let db = cx.db();
    let mut ws = store::workspaces::get(db.reader(), &caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    if let Some(n) = input.name {
        ws.name = n.trim().to_string();
    }
    if let Some(s) = input.slug {
        ws.slug = s;
    }
    if let Some(tz) = input.timezone {
        ws.timezone = tz;
    }
    let now = cx.clock().now_ms();
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
    if let Some(on) = input.require_sso {
        store::sso::set_require_sso(&mut *tx, &ws.id, on).await?;
    }
    let require_sso = store::sso::require_sso(&mut *tx, &ws.id).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "workspace.update",
            resource_type: "workspace",
            resource_id: &ws.id,
            metadata: json!({"name": ws.name, "slug": ws.slug, "timezone": ws.timezone, "requireSso": require_sso}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    let fresh = store::workspaces::get(db.reader(), &ws.id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    Ok((settings_view(&fresh, require_sso), fresh.version))
}

/// The plan, its quotas (absent = unlimited) and what is used.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PlanView {
    pub plan: String,
    pub quotas: PlanQuota,
    pub usage: PlanUsage,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PlanUsage {
    /// Monitors of every type, paused ones included (what the `monitors` quota counts).
    #[schemars(with = "f64")]
    pub monitors: i64,
    #[schemars(with = "f64")]
    pub members: i64,
    #[schemars(with = "f64")]
    pub api_keys: i64,
    #[schemars(with = "f64")]
    pub status_pages: i64,
    #[schemars(with = "f64")]
    pub notification_channels: i64,
}

pub async fn plan(cx: &Cx, caller: &Caller) -> Result<PlanView, DomainError> {
    caller.require::<caps::IdentityRead>()?;
    let (plan, quotas) = super::plans::quotas_of(cx, &caller.workspace_id).await?;
    let db = cx.db().reader();
    let monitors = store::monitors::count(db, &caller.workspace_id).await?;
    let members = store::members::count(db, &caller.workspace_id).await?;
    let keys = store::api_keys::count_active(db, &caller.workspace_id).await?;
    let status_pages = store::status_pages::count(db, &caller.workspace_id).await?;
    let notification_channels = store::channels::count(db, &caller.workspace_id).await?;
    Ok(PlanView {
        plan,
        quotas,
        usage: PlanUsage {
            monitors,
            members,
            api_keys: keys,
            status_pages,
            notification_channels,
        },
    })
}

/// One workspace the signed-in person belongs to.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct MyWorkspace {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub role: Role,
    /// True for the session's active workspace.
    pub active: bool,
}

pub async fn list_mine(cx: &Cx, caller: &Caller) -> Result<Vec<MyWorkspace>, DomainError> {
    caller.require::<caps::SignedInIdentity>()?;
    let rows = store::workspaces::list_for_user(cx.db().reader(), &caller.user_id).await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            // A role this build cannot read is reported and the workspace left out of the
            // list (see `store::corrupt`).
            let key = format!("{}/{}", r.id, caller.user_id);
            let role: Role = store::corrupt::parse("memberships", &key, "role", &r.role).ok()?;
            Some(MyWorkspace {
                active: r.id == caller.workspace_id,
                id: r.id,
                name: r.name,
                slug: r.slug,
                role,
            })
        })
        .collect())
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WorkspacePath {
    pub workspace_id: String,
}

/// Makes `workspace_id` the session's active workspace; returns its view.
pub async fn activate(
    cx: &Cx,
    caller: &Caller,
    workspace_id: &str,
) -> Result<CurrentWorkspace, DomainError> {
    caller.require::<caps::SignedIn>()?;
    let db = cx.db();
    // Only a workspace the person belongs to; any other is simply not found.
    store::members::get(db.reader(), workspace_id, &caller.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Workspace))?;
    let session = caller.session_id().ok_or(DomainError::Unauthorized)?;
    store::sessions::set_workspace(db.writer(), session, workspace_id).await?;
    view(cx, workspace_id).await
}

/// A slug derived from `name` that no workspace uses yet.
pub async fn free_slug(cx: &Cx, name: &str) -> Result<String, DomainError> {
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
    if !store::workspaces::slug_taken(cx.db().reader(), &base).await? {
        return Ok(base);
    }
    for _ in 0..8 {
        let suffix: u32 = rand::random::<u32>() % 1_000_000;
        let candidate = format!("{base}-{suffix}");
        if !store::workspaces::slug_taken(cx.db().reader(), &candidate).await? {
            return Ok(candidate);
        }
    }
    Ok(format!("{base}-{}", crate::ids::new_id().replace('-', "")))
}
