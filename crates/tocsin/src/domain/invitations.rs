//! Invitations by email. The inviter gets the invitation; the invitee gets a signed accept link
//! that expires (by email when SMTP is configured, otherwise in the create response, for the
//! inviter to pass on). Accepting needs the invitee signed in with the invited address,
//! verified (`domain::email_verification`: an address typed at sign-up proves nothing), and
//! makes the joined workspace the session's active one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::{check_email, Validate};
use super::pagination::{finish, PageParams};
use super::plans::{ensure_room, Quota};
use super::workspaces::{self, CurrentWorkspace};
use super::{DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::signed::{self, Verify};
use crate::auth::{caps, Caller, Role, Via};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::mail::Mailer;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::{self, invitations::InvitationRow};

/// Invitations stay valid for 7 days.
pub const INVITATION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

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
#[schemars(transform = crate::schema::exact_object)]
pub struct Invitation {
    pub id: String,
    pub email: String,
    pub role: Role,
    pub status: InvitationStatus,
    pub invited_by: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub expires_at: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
    /// The accept link: only in the response that creates the invitation, and only when the
    /// server has no SMTP to email it; null otherwise.
    pub accept_url: Option<String>,
    /// True when the link was emailed to the invitee.
    pub emailed: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct InvitationPage {
    pub invitations: Vec<Invitation>,
    pub next_cursor: Option<String>,
}

/// The API shape of a stored invitation; a status or role this build cannot read is a
/// (reported) corrupt row, never read as pending or as `member`.
fn view(i: &InvitationRow, now: i64) -> Result<Invitation, CorruptRow> {
    let status = match i.status.as_str() {
        "accepted" => InvitationStatus::Accepted,
        "revoked" => InvitationStatus::Revoked,
        "pending" if i.expires_at <= now => InvitationStatus::Expired,
        "pending" => InvitationStatus::Pending,
        other => return Err(CorruptRow::new("invitations", &i.id, "status", other)),
    };
    Ok(Invitation {
        id: i.id.clone(),
        email: i.email.clone(),
        role: corrupt::parse("invitations", &i.id, "role", &i.role)?,
        status,
        invited_by: i.invited_by.clone(),
        expires_at: rfc3339(i.expires_at),
        created_at: rfc3339(i.created_at),
        accept_url: None,
        emailed: false,
    })
}

pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page: PageParams,
) -> Result<InvitationPage, DomainError> {
    caller.require::<caps::MembersManage>()?;
    page.check()?;
    let rows = store::invitations::list(
        cx.db().reader(),
        &caller.workspace_id,
        &page.after(),
        i64::from(page.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, page.limit(), |i| i.id.clone());
    let now = cx.clock().now_ms();
    Ok(InvitationPage {
        // A corrupt row is reported and left out of the page (see `store::corrupt`).
        invitations: corrupt::readable(rows.iter().map(|i| view(i, now))),
        next_cursor,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct InvitationPath {
    pub invitation_id: String,
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<InvitationRow, DomainError> {
    store::invitations::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))
}

pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<Invitation, DomainError> {
    caller.require::<caps::MembersManage>()?;
    let i = load(cx, caller, id).await?;
    Ok(view(&i, cx.clock().now_ms())?)
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
        check_email("email", self.email.trim(), &mut errors);
        errors
    }
}

/// Invites someone; emails the accept link when the server can, otherwise returns it.
pub async fn create(
    core: &Cx,
    mailer: Option<&Mailer>,
    caller: &Caller,
    input: CreateInvitation,
) -> Result<Invitation, DomainError> {
    caller.require::<caps::MembersManage>()?;
    input.check()?;
    let db = core.db();
    let ws = caller.workspace_id.clone();
    let email = input.email.trim().to_lowercase();
    let role = input.role.unwrap_or(Role::Member);
    if role == Role::Owner
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
            "Only an owner may invite an owner: invite with another role, or ask an owner of this workspace.".into(),
        ));
    }
    let now = core.clock().now_ms();
    if let Some(u) = store::users::find_by_email(db.reader(), &email).await? {
        if store::members::get(db.reader(), &ws, &u.id)
            .await?
            .is_some()
        {
            return Err(DomainError::Conflict(
                "ALREADY_MEMBER",
                "This person is already a member of the workspace: change their role instead of inviting them.".into(),
            ));
        }
    }
    let occupied = store::members::count(db.reader(), &ws).await?
        + store::invitations::count_pending(db.reader(), &ws, now).await?;
    ensure_room(core, &ws, Quota::Members, occupied).await?;
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
        caller,
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

    let token = signed::sign(core.link_secret(), &row.id, row.expires_at);
    let mut base = core.config().public_url.clone();
    base.set_path("/app/invitations/accept");
    base.set_query(Some(&format!("token={token}")));
    let link = base.to_string();
    let mut out = view(&row, now)?;
    match mailer {
        Some(mailer) => {
            let ws_name = workspaces::view(core, &ws)
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
    Ok(out)
}

/// Revokes a pending invitation; the record stays, with status revoked.
pub async fn revoke(cx: &Cx, caller: &Caller, id: &str) -> Result<Invitation, DomainError> {
    caller.require::<caps::MembersManage>()?;
    let db = cx.db();
    let i = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = db.begin().await?;
    if store::invitations::set_status(&mut *tx, &i.id, "pending", "revoked", now).await? == 0 {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            "Only a pending invitation can be revoked, and this one was already accepted, revoked or expired: nothing needs doing.".into(),
        ));
    }
    audit::record(
        &mut *tx,
        caller,
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
    let fresh = load(cx, caller, &i.id).await?;
    Ok(view(&fresh, now)?)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInvitation {
    /// The `token` query parameter of the accept link.
    pub token: String,
}

impl Validate for AcceptInvitation {}

/// Joins the invitation's workspace as the signed-in invitee and makes it the session's
/// active workspace; returns its view (the member count changed: HTTP refreshes its cache).
pub async fn accept(
    cx: &Cx,
    caller: &Caller,
    input: AcceptInvitation,
) -> Result<CurrentWorkspace, DomainError> {
    caller.require::<caps::SignedIn>()?;
    input.check()?;
    let now = cx.clock().now_ms();
    let id = match signed::verify(cx.link_secret(), &input.token, now) {
        Verify::Valid(id) => id,
        Verify::Expired => return Err(DomainError::Conflict(
            "INVITATION_EXPIRED",
            "This invitation has expired: ask an owner or admin of the workspace for a new one."
                .into(),
        )),
        Verify::Invalid => {
            return Err(DomainError::field(
                "token",
                "is not a valid invitation token",
            ))
        }
    };
    let db = cx.db();
    let inv = store::invitations::get_unscoped(db.reader(), &id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Invitation))?;
    if !inv.email.eq_ignore_ascii_case(&caller.email) {
        // Not the invitee: as far as this caller is concerned there is no such invitation.
        return Err(DomainError::NotFound(Resource::Invitation));
    }
    if caller.verified_email().is_none() {
        return Err(DomainError::Forbidden(
            "EMAIL_NOT_VERIFIED",
            "This invitation is for your email address, which is not verified yet: follow the \
             link emailed to you at sign-up (or ask for a new one from the dashboard), then \
             accept again."
                .into(),
        ));
    }
    if inv.status != "pending" {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            format!(
                "This invitation is {}: ask an owner or admin of the workspace for a new one.",
                inv.status
            ),
        ));
    }
    let mut tx = db.begin().await?;
    if store::invitations::set_status(&mut *tx, &inv.id, "pending", "accepted", now).await? == 0 {
        return Err(DomainError::Conflict(
            "INVITATION_NOT_PENDING",
            "This invitation was already used: ask an owner or admin of the workspace for a new one.".into(),
        ));
    }
    if store::members::get(&mut *tx, &inv.workspace_id, &caller.user_id)
        .await?
        .is_none()
    {
        store::members::insert(&mut *tx, &inv.workspace_id, &caller.user_id, &inv.role, now)
            .await?;
    }
    // The entry belongs to the workspace joined, not the one the caller was acting in.
    let mut actor = caller.clone();
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
    // Other nodes drop what they cached of this workspace's memberships.
    cx.announce(Notice::MembershipChanged {
        workspace_id: inv.workspace_id.clone(),
    });
    workspaces::view(cx, &inv.workspace_id).await
}
