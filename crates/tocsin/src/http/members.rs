//! Workspace members: list, change role, remove. A workspace always keeps at least one owner,
//! and only an owner may make or unmake owners.

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::extract::{check_write, ApiJson, ApiQuery, IfMatch, NoContent, Tagged, Validate};
use super::pagination::{finish, PageParams};
use crate::audit::{self, Entry};
use crate::auth::caps;
use crate::auth::{Caller, Role, Via};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, Resource};
use crate::http::AppState;
use crate::store::{self, members::MemberRow};

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

/// A member of the workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub joined_at: String,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub updated_at: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct MemberPage {
    pub members: Vec<Member>,
    pub next_cursor: Option<String>,
}

fn view(m: &MemberRow) -> Member {
    Member {
        user_id: m.user_id.clone(),
        email: m.email.clone(),
        name: m.name.clone(),
        role: Role::parse(&m.role).unwrap_or(Role::Member),
        joined_at: rfc3339(m.created_at),
        updated_at: rfc3339(m.updated_at),
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<MemberPage>> {
    let after = page.after();
    let rows = store::members::list(
        state.db().reader(),
        &caller.workspace_id,
        Some(&after),
        i64::from(page.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, page.limit(), |m| m.user_id.clone());
    Ok(Json(MemberPage {
        members: rows.iter().map(view).collect(),
        next_cursor,
    }))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemberPath {
    pub user_id: String,
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::IdentityRead>,
    Path(p): Path<MemberPath>,
) -> ApiResult<Tagged<Member>> {
    let m = store::members::get(state.db().reader(), &caller.workspace_id, &p.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Member))?;
    Ok(Tagged(view(&m), m.version))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMember {
    pub role: Role,
}

impl Validate for UpdateMember {}

fn caller_role(c: &Caller) -> Option<Role> {
    match &c.via {
        Via::Session { role, .. } => Some(*role),
        Via::ApiKey { .. } => None,
    }
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<MemberPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateMember>,
) -> ApiResult<Tagged<Member>> {
    let db = state.db();
    let ws = &caller.workspace_id;
    let current = store::members::get(db.reader(), ws, &p.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Member))?;
    let from = Role::parse(&current.role).unwrap_or(Role::Member);
    let touches_owner = from == Role::Owner || body.role == Role::Owner;
    if touches_owner && caller_role(&caller) != Some(Role::Owner) {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "only an owner may grant or remove the owner role".into(),
        )
        .into());
    }
    let now = state.clock().now_ms();
    let mut tx = db.begin().await?;
    if from == Role::Owner
        && body.role != Role::Owner
        && store::members::count_owners(&mut *tx, ws).await? <= 1
    {
        return Err(DomainError::Conflict(
            "LAST_OWNER",
            "a workspace must keep at least one owner".into(),
        )
        .into());
    }
    let rows =
        store::members::update_role(&mut *tx, ws, &p.user_id, body.role.as_str(), now, expected)
            .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Member))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "member.update",
            resource_type: "member",
            resource_id: &p.user_id,
            metadata: json!({"from": from.as_str(), "to": body.role.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.keys().forget_workspace(ws);
    state.feed().announce(Notice::MembershipChanged {
        workspace_id: ws.clone(),
    });
    let m = store::members::get(db.reader(), ws, &p.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Member))?;
    Ok(Tagged(view(&m), m.version))
}

async fn remove(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<MemberPath>,
) -> ApiResult<NoContent> {
    let db = state.db();
    let ws = &caller.workspace_id;
    let current = store::members::get(db.reader(), ws, &p.user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Member))?;
    let role = Role::parse(&current.role).unwrap_or(Role::Member);
    if role == Role::Owner && caller_role(&caller) != Some(Role::Owner) {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "only an owner may remove an owner".into(),
        )
        .into());
    }
    let now = state.clock().now_ms();
    let mut tx = db.begin().await?;
    if role == Role::Owner && store::members::count_owners(&mut *tx, ws).await? <= 1 {
        return Err(DomainError::Conflict(
            "LAST_OWNER",
            "a workspace must keep at least one owner".into(),
        )
        .into());
    }
    let rows = store::members::delete(&mut *tx, ws, &p.user_id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Member))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "member.remove",
            resource_type: "member",
            resource_id: &p.user_id,
            metadata: json!({"email": current.email, "role": role.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    // Keys the removed member made stop working at once.
    state.keys().forget_workspace(ws);
    state.feed().announce(Notice::MembershipChanged {
        workspace_id: ws.clone(),
    });
    state.workspace_cache().forget(ws);
    Ok(NoContent)
}
