//! Workspace members: list, read, change role, remove. A workspace always keeps at least one
//! owner, and only an owner may make or unmake owners. Role changes and removals forget the
//! workspace's cached API keys and OAuth access tokens on every node, so credentials lose what
//! their person lost at once. A removal revokes, in its transaction, what the person held in
//! the workspace: their API keys and OAuth (MCP) grants there are revoked for good, and their
//! sessions acting there move to another workspace of theirs (or end), so inviting them again
//! brings none of it back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::Validate;
use super::pagination::{finish, PageParams};
use super::{check_write, DomainError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller, Role, Via};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::{self, members::MemberRow};

/// A member of the workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub name: String,
    pub role: Role,
    #[schemars(with = "crate::schema::Timestamp")]
    pub joined_at: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub updated_at: String,
    /// How this person can sign in: `password`, and `sso:<provider id>` for each identity
    /// provider (`GET /auth/sso/providers`) their account is linked to.
    pub sign_in_methods: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct MemberPage {
    pub members: Vec<Member>,
    pub next_cursor: Option<String>,
}

/// The role of a stored membership; an unknown word is a (reported) corrupt row, never read
/// as `member` (which would give rights to a row that may have meant less, or hide an owner).
fn role_of(ws: &str, m: &MemberRow) -> Result<Role, CorruptRow> {
    let key = format!("{ws}/{}", m.user_id);
    corrupt::parse("memberships", &key, "role", &m.role)
}

fn view(ws: &str, m: &MemberRow, providers: &[&str]) -> Result<Member, CorruptRow> {
    let password = (m.has_password != 0).then(|| "password".to_string());
    let sso = providers.iter().map(|p| format!("sso:{p}"));
    Ok(Member {
        sign_in_methods: password.into_iter().chain(sso).collect(),
        user_id: m.user_id.clone(),
        email: m.email.clone(),
        name: m.name.clone(),
        role: role_of(ws, m)?,
        joined_at: rfc3339(m.created_at),
        updated_at: rfc3339(m.updated_at),
    })
}

/// One member's view, with the identities they are linked to.
async fn view_one(cx: &Cx, ws: &str, m: &MemberRow) -> Result<Member, DomainError> {
    let providers = store::members::identities_of(cx.db().reader(), &m.user_id).await?;
    let providers: Vec<&str> = providers.iter().map(String::as_str).collect();
    Ok(view(ws, m, &providers)?)
}

pub async fn list(cx: &Cx, caller: &Caller, page: PageParams) -> Result<MemberPage, DomainError> {
    caller.require::<caps::IdentityRead>()?;
    page.check()?;
    let after = page.after();
    let rows = store::members::list(
        cx.db().reader(),
        &caller.workspace_id,
        Some(&after),
        i64::from(page.limit()) + 1,
    )
    .await?;
    let identities = store::members::identities_of_page(
        cx.db().reader(),
        &caller.workspace_id,
        Some(&after),
        i64::from(page.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, page.limit(), |m| m.user_id.clone());
    let providers_of = |user: &str| -> Vec<&str> {
        identities
            .iter()
            .filter(|(u, _)| u == user)
            .map(|(_, p)| p.as_str())
            .collect()
    };
    Ok(MemberPage {
        // A corrupt row is reported and left out of the page (see `store::corrupt`).
        members: corrupt::readable(
            rows.iter()
                .map(|m| view(&caller.workspace_id, m, &providers_of(&m.user_id))),
        ),
        next_cursor,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemberPath {
    pub user_id: String,
}

/// One member and its version.
pub async fn get(cx: &Cx, caller: &Caller, user_id: &str) -> Result<(Member, i64), DomainError> {
    caller.require::<caps::IdentityRead>()?;
    let m = load(cx, &caller.workspace_id, user_id).await?;
    Ok((view_one(cx, &caller.workspace_id, &m).await?, m.version))
}

async fn load(cx: &Cx, ws: &str, user_id: &str) -> Result<MemberRow, DomainError> {
    store::members::get(cx.db().reader(), ws, user_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Member))
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
        Via::ApiKey { .. } | Via::OAuth { .. } => None,
    }
}

fn last_owner() -> DomainError {
    DomainError::Conflict(
        "LAST_OWNER",
        "A workspace must keep at least one owner: make another member an owner first.".into(),
    )
}

/// Changes a member's role if `expected` (when given) is still its version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    user_id: &str,
    expected: Option<i64>,
    input: UpdateMember,
) -> Result<(Member, i64), DomainError> {
    caller.require::<caps::MembersManage>()?;
    input.check()?;
    let db = cx.db();
    let ws = &caller.workspace_id;
    let current = load(cx, ws, user_id).await?;
    let from = role_of(ws, &current)?;
    let touches_owner = from == Role::Owner || input.role == Role::Owner;
    if touches_owner && caller_role(caller) != Some(Role::Owner) {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "Only an owner may grant or remove the owner role: ask an owner of this workspace to do it.".into(),
        ));
    }
    let now = cx.clock().now_ms();
    let mut tx = db.begin().await?;
    if from == Role::Owner
        && input.role != Role::Owner
        && store::members::count_owners(&mut *tx, ws).await? <= 1
    {
        return Err(last_owner());
    }
    let rows =
        store::members::update_role(&mut *tx, ws, user_id, input.role.as_str(), now, expected)
            .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Member))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "member.update",
            resource_type: "member",
            resource_id: user_id,
            metadata: json!({"from": from.as_str(), "to": input.role.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce(Notice::MembershipChanged {
        workspace_id: ws.clone(),
    });
    let m = load(cx, ws, user_id).await?;
    Ok((view_one(cx, ws, &m).await?, m.version))
}

/// Removes a member. The workspace's member count changes: HTTP forgets its cached view.
pub async fn remove(cx: &Cx, caller: &Caller, user_id: &str) -> Result<(), DomainError> {
    caller.require::<caps::MembersManage>()?;
    let db = cx.db();
    let ws = &caller.workspace_id;
    let current = load(cx, ws, user_id).await?;
    let role = role_of(ws, &current)?;
    if role == Role::Owner && caller_role(caller) != Some(Role::Owner) {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "Only an owner may remove an owner: ask an owner of this workspace to do it.".into(),
        ));
    }
    let now = cx.clock().now_ms();
    let mut tx = db.begin().await?;
    if role == Role::Owner && store::members::count_owners(&mut *tx, ws).await? <= 1 {
        return Err(last_owner());
    }
    let rows = store::members::delete(&mut *tx, ws, user_id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Member))?;
    let keys = store::api_keys::revoke_created_by(&mut *tx, ws, user_id, now).await?;
    let grants = store::oauth::active_grant_ids(&mut *tx, ws, user_id).await?;
    for g in &grants {
        store::oauth::revoke_grant(&mut tx, g, now).await?;
    }
    let fallback = store::workspaces::list_for_user(&mut *tx, user_id)
        .await?
        .into_iter()
        .next()
        .map(|w| w.id);
    store::sessions::unpin(&mut tx, user_id, ws, fallback.as_deref()).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "member.remove",
            resource_type: "member",
            resource_id: user_id,
            metadata: json!({"email": current.email, "role": role.as_str(),
                             "revokedApiKeys": keys, "revokedMcpGrants": grants}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    // Every node forgets the workspace's cached keys and access tokens (both caches follow
    // this notice), so the revoked ones are read again, and refused, on their next use.
    cx.announce(Notice::MembershipChanged {
        workspace_id: ws.clone(),
    });
    Ok(())
}
