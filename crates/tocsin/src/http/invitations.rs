//! Invitations by email. The inviter gets the invitation; the invitee gets a signed accept link
//! that expires (by email when SMTP is configured, otherwise in the create response, for the
//! inviter to pass on). Accepting needs the invitee signed in with the invited address.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::extract::{ApiJson, ApiQuery, Created, Validate};
use super::pagination::{finish, PageParams};
use super::workspace::{current_workspace, CurrentWorkspace};
use crate::audit::{self, Entry};
use crate::auth::caps;
use crate::auth::signed::{self, Verify};
use crate::auth::Role;
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{ApiError, ApiResult, FieldError, Resource};
use crate::http::AppState;
use crate::ids::new_id;
use crate::plans::{ensure_room, Quota};
use crate::store::{self, invitations::InvitationRow};

/// Invitations stay valid for 7 days.
pub const INVITATION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum InvitationStatus {
    Pending,
    Accepted,
    Revoked,
    Expired,
}

/// An invitation to join the workspace.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct Invitation {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub status: InvitationStatus,
    pub invited_by: String,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub expires_at: String,
    #[schemars(with = "crate::http::schema::Timestamp")]
    pub created_at: String,
    /// The accept link: only in the response that creates the invitation, and only when the
    /// server has no SMTP to email it; null otherwise.
    pub accept_url: Option<String>,
    /// True when the link was emailed to the invitee.
    pub emailed: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct InvitationPage {
    pub invitations: Vec<Invitation>,
    pub next_cursor: Option<String>,
}

fn view(i: &InvitationRow, now: i64) -> Invitation {
    let status = match i.status.as_str() {
        "accepted" => InvitationStatus::Accepted,
        "revoked" => InvitationStatus::Revoked,
        _ if i.expires_at <= now => InvitationStatus::Expired,
        _ => InvitationStatus::Pending,
    };
    Invitation {
        id: i.id.clone(),
        email: i.email.clone(),
        role: Role::parse(&i.role).unwrap_or(Role::Member),
        status,
        invited_by: i.invited_by.clone(),
        expires_at: rfc3339(i.expires_at),
        created_at: rfc3339(i.created_at),
        accept_url: None,
        emailed: false,
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> ApiResult<Json<InvitationPage>> {
    let rows = store::invitations::list(
        state.db().reader(),
        &caller.workspace_id,
        &page.after(),
        i64::from(page.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, page.limit(), |i| i.id.clone());
    let now = state.clock().now_ms();
    Ok(Json(InvitationPage {
        invitations: rows.iter().map(|i| view(i, now)).collect(),
        next_cursor,
    }))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct InvitationPath {
    pub invitation_id: String,
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<InvitationPath>,
) -> ApiResult<Json<Invitation>> {
    let i = store::invitations::get(state.db().reader(), &caller.workspace_id, &p.invitation_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))?;
    Ok(Json(view(&i, state.clock().now_ms())))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvitation {
    #[schemars(email)]
    pub email: String,
    /// `member` by default. Only an owner may invite an owner.
    pub role: Option<Role>,
}

impl Validate for CreateInvitation {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        super::auth_routes::check_email("email", self.email.trim(), &mut errors);
        errors
    }
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    ApiJson(body): ApiJson<CreateInvitation>,
) -> ApiResult<Created<Invitation>> {
    let db = state.db();
    let ws = caller.workspace_id.clone();
    let email = body.email.trim().to_lowercase();
    let role = body.role.unwrap_or(Role::Member);
    if role == Role::Owner
        && !matches!(
            caller.via,
            crate::auth::Via::Session {
                role: Role::Owner,
                ..
            }
        )
    {
        return Err(DomainError::Forbidden(
            "OWNER_REQUIRED",
            "only an owner may invite an owner".into(),
        )
        .into());
    }
    let now = state.clock().now_ms();
    if let Some(u) = store::users::find_by_email(db.reader(), &email).await? {
        if store::members::get(db.reader(), &ws, &u.id)
            .await?
            .is_some()
        {
            return Err(DomainError::Conflict(
                "ALREADY_MEMBER",
                "this person is already a member".into(),
            )
            .into());
        }
    }
    let occupied = store::members::count(db.reader(), &ws).await?
        + store::invitations::count_pending(db.reader(), &ws, now).await?;
    ensure_room(&state, &ws, Quota::Members, occupied).await?;
    let row = InvitationRow {
        id: new_id(),
        workspace_id: ws.clone(),
        email: email.clone(),
        role: role.as_str().into(),
        invited_by: caller.user_id.clone(),
        status: "pending".into(),
        expires_at: now + INVITATION_TTL_MS,
        created_at: now,
        updated_at: now,
    };
    let mut tx = db.begin().await?;
    store::invitations::insert(&mut *tx, &row).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "invitation.create",
            resource_type: "invitation",
            resource_id: &row.id,
            metadata: json!({"email": email, "role": role.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;

    let token = signed::sign(state.link_secret(), &row.id, row.expires_at);
    let mut base = state.config().public_url.clone();
    base.set_path("/app/invitations/accept");
    base.set_query(Some(&format!("token={token}")));
    let link = base.to_string();
    let mut out = view(&row, now);
    match state.mailer() {
        Some(mailer) => {
            let ws_name = current_workspace(&state, &ws)
                .await
                .map(|w| w.name)
                .unwrap_or_default();
            let text = format!(
                "You have been invited to join the workspace \"{ws_name}\" on Tocsin as {}.\n\nAccept the invitation (valid for 7 days):\n{link}\n",
                role.as_str()
            );
            match mailer
                .send(
                    &email,
                    &format!("Invitation to join {ws_name} on Tocsin"),
                    text,
                )
                .await
            {
                Ok(()) => out.emailed = true,
                Err(e) => {
                    // The invitation stands; the inviter still gets the link to pass on.
                    tracing::warn!(error = %e, "could not email invitation; returning the link instead");
                    out.accept_url = Some(link);
                }
            }
        }
        None => out.accept_url = Some(link),
    }
    Ok(Created(out))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Auth<caps::MembersManage>,
    Path(p): Path<InvitationPath>,
) -> ApiResult<Json<Invitation>> {
    let db = state.db();
    let i = store::invitations::get(db.reader(), &caller.workspace_id, &p.invitation_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))?;
    let now = state.clock().now_ms();
    let mut tx = db.begin().await?;
    if store::invitations::set_status(&mut *tx, &i.id, "pending", "revoked", now).await? == 0 {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            "only a pending invitation can be revoked".into(),
        )
        .into());
    }
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "invitation.revoke",
            resource_type: "invitation",
            resource_id: &i.id,
            metadata: json!({"email": i.email}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    let fresh = store::invitations::get(db.reader(), &caller.workspace_id, &i.id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))?;
    Ok(Json(view(&fresh, now)))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitation {
    /// The `token` query parameter of the accept link.
    pub token: String,
}

impl Validate for AcceptInvitation {}

async fn accept(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    ApiJson(body): ApiJson<AcceptInvitation>,
) -> ApiResult<Json<CurrentWorkspace>> {
    let now = state.clock().now_ms();
    let id = match signed::verify(state.link_secret(), &body.token, now) {
        Verify::Valid(id) => id,
        Verify::Expired => {
            return Err(DomainError::Conflict(
                "INVITATION_EXPIRED",
                "this invitation has expired".into(),
            )
            .into())
        }
        Verify::Invalid => return Err(ApiError::field("token", "is not a valid invitation token")),
    };
    let db = state.db();
    let inv = store::invitations::get_unscoped(db.reader(), &id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))?;
    if !inv.email.eq_ignore_ascii_case(&caller.email) {
        // Not the invitee: as far as this caller is concerned there is no such invitation.
        return Err(DomainError::NotFound(Resource::Invitation).into());
    }
    if inv.status != "pending" {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            format!("this invitation is {}", inv.status),
        )
        .into());
    }
    let mut tx = db.begin().await?;
    if store::invitations::set_status(&mut *tx, &inv.id, "pending", "accepted", now).await? == 0 {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            "this invitation was already used".into(),
        )
        .into());
    }
    if store::members::get(&mut *tx, &inv.workspace_id, &caller.user_id)
        .await?
        .is_none()
    {
        store::members::insert(&mut *tx, &inv.workspace_id, &caller.user_id, &inv.role, now)
            .await?;
    }
    // The entry belongs to the workspace joined, not the one the caller was acting in.
    let mut actor = caller.0.clone();
    actor.workspace_id = inv.workspace_id.clone();
    audit::record(
        &mut *tx,
        &actor,
        Entry {
            action: "invitation.accept",
            resource_type: "invitation",
            resource_id: &inv.id,
            metadata: json!({"role": inv.role}),
        },
        now,
    )
    .await?;
    if let Some(session) = caller.session_id() {
        store::sessions::set_workspace(&mut *tx, session, &inv.workspace_id).await?;
    }
    tx.commit().await?;
    state.workspace_cache().forget(&inv.workspace_id);
    state.feed().announce(Notice::MembershipChanged {
        workspace_id: inv.workspace_id.clone(),
    });
    Ok(Json(current_workspace(&state, &inv.workspace_id).await?))
}
