//! People and their sessions: creating a user with a workspace of their own (sign-up and
//! `tocsin user create`), signing in with email and password, starting and ending sessions,
//! and reading the signed-in session.
//!
//! A password account's email is unverified until its person follows the link sign-up emails
//! them (`domain::email_verification`); users the operator creates count as verified.
//!
//! A session is a random token whose SHA-256 is stored; these operations hand the token back
//! and the surface decides how to carry it (the HTTP edge puts it in an `HttpOnly` cookie).
//! Rate limits on sign-up and sign-in are the HTTP edge's: they key on the client address.
//! Sign-up and sign-in have no [`Caller`] yet, so they take no requirement.

use serde::{Deserialize, Serialize};

use super::email_verification;
use super::input::{check_email, Validate};
use super::workspaces::{self, CurrentWorkspace};
use super::{DomainError, FieldError};
use crate::auth::{password, secrets, Caller, Role, SESSION_TTL_MS};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::error::on_constraint;
use crate::ids::new_id;
use crate::mail::Mailer;
use crate::store::{self, sessions::NewSession, users::UserRow, workspaces::WorkspaceRow};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignUp {
    pub email: String,
    pub password: String,
    #[serde(default)]
    pub name: Option<String>,
}

impl Validate for SignUp {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_email("email", self.email.trim(), &mut errors);
        let n = self.password.chars().count();
        if !(password::MIN_LENGTH..=password::MAX_LENGTH).contains(&n) {
            errors.push(FieldError::new(
                "password",
                format!(
                    "must be {} to {} characters",
                    password::MIN_LENGTH,
                    password::MAX_LENGTH
                ),
            ));
        }
        if let Some(name) = &self.name {
            if name.trim().chars().count() > 100 {
                errors.push(FieldError::new("name", "must be at most 100 characters"));
            } else if !name.chars().all(super::input::printable) {
                errors.push(FieldError::new(
                    "name",
                    format!(
                        "must be at most 100 printable characters: {}",
                        super::input::NOT_PRINTABLE
                    ),
                ));
            }
        }
        errors
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    pub email: String,
    pub password: String,
}

impl Validate for SignIn {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.email.trim().is_empty() {
            errors.push(FieldError::new("email", "is required"));
        }
        if self.password.is_empty() || self.password.len() > 1024 {
            errors.push(FieldError::new("password", "is required"));
        }
        errors
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: String,
    pub email: String,
    pub name: String,
    /// Whether the person showed they receive mail at `email`; until then nothing that depends
    /// on the address is granted (email-domain status pages, invitations addressed to it).
    pub email_verified: bool,
    pub created_at: String,
}

/// The answer to a sign-up or sign-in.
#[derive(Debug, Serialize)]
pub struct SignedIn {
    pub user: UserView,
    pub workspace: CurrentWorkspace,
}

/// Where a session was started from, kept on the session record.
#[derive(Debug, Clone, Default)]
pub struct ClientMeta {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

pub(super) fn user_view(u: &UserRow) -> UserView {
    UserView {
        id: u.id.clone(),
        email: u.email.clone(),
        name: u.name.clone(),
        email_verified: u.email_verified_at.is_some(),
        created_at: rfc3339(u.created_at),
    }
}

fn email_taken() -> DomainError {
    DomainError::Conflict(
        "EMAIL_TAKEN",
        "An account with this email already exists: sign in instead, or sign up with another email.".into(),
    )
}

/// A new workspace owned by `owner_id`, on the default plan.
pub(super) async fn new_workspace(
    cx: &Cx,
    owner_id: &str,
    name: String,
    now: i64,
) -> Result<WorkspaceRow, DomainError> {
    Ok(WorkspaceRow {
        id: new_id(),
        slug: workspaces::free_slug(cx, &name).await?,
        name,
        owner_id: owner_id.to_string(),
        plan: cx.config().plans.default.clone(),
        timezone: "UTC".into(),
        version: 1,
        created_at: now,
        updated_at: now,
    })
}

/// Creates a user with their own workspace, as owner. Shared by sign-up (`email_verified`
/// false: the address is verified by the emailed link) and `tocsin user create` (true: the
/// operator vouches for it).
pub async fn create_user(
    cx: &Cx,
    input: &SignUp,
    email_verified: bool,
) -> Result<(UserRow, WorkspaceRow), DomainError> {
    input.check()?;
    let email = input.email.trim().to_lowercase();
    let db = cx.db();
    if store::users::find_by_email(db.reader(), &email)
        .await?
        .is_some()
    {
        return Err(email_taken());
    }
    let hash = password::hash(input.password.clone()).await?;
    let now = cx.clock().now_ms();
    let name = input
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| email.split('@').next().unwrap_or("").to_string());
    let user = UserRow {
        id: new_id(),
        email: email.clone(),
        name: name.clone(),
        password_hash: hash,
        email_verified_at: email_verified.then_some(now),
        created_at: now,
        updated_at: now,
    };
    let ws = new_workspace(cx, &user.id, format!("{name}'s workspace"), now).await?;
    let mut tx = db.begin().await?;
    store::users::insert(&mut *tx, &user)
        .await
        .map_err(|e| on_constraint(e, &[("email", email_taken())]))?;
    store::workspaces::insert(&mut *tx, &ws).await?;
    store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
    tx.commit().await?;
    Ok((user, ws))
}

/// Starts a session in `workspace_id`; returns its id and its secret token.
pub(super) async fn start_session(
    cx: &Cx,
    user_id: &str,
    workspace_id: &str,
    client: &ClientMeta,
) -> Result<(String, String), DomainError> {
    let token = secrets::generate("");
    let id = new_id();
    let now = cx.clock().now_ms();
    store::sessions::insert(
        cx.db().writer(),
        &NewSession {
            id: &id,
            token_hash: &secrets::hash(&token),
            user_id,
            workspace_id,
            expires_at: now + SESSION_TTL_MS,
            now,
            ip: client.ip.as_deref(),
            user_agent: client.user_agent.as_deref(),
        },
    )
    .await?;
    Ok((id, token))
}

/// Creates the user and signs them in: the answer and the new session's token.
pub async fn sign_up(
    core: &Cx,
    mailer: Option<&Mailer>,
    input: SignUp,
    client: &ClientMeta,
) -> Result<(SignedIn, String), DomainError> {
    let (user, ws) = create_user(core, &input, false).await?;
    email_verification::send_first_link(core, mailer, &user);
    let (_, token) = start_session(core, &user.id, &ws.id, client).await?;
    let workspace = workspaces::view(core, &ws.id).await?;
    Ok((
        SignedIn {
            user: user_view(&user),
            workspace,
        },
        token,
    ))
}

/// Checks email and password and starts a session in the person's first workspace: the
/// answer and the new session's token. A wrong email and a wrong password are one error.
pub async fn sign_in(
    cx: &Cx,
    input: SignIn,
    client: &ClientMeta,
) -> Result<(SignedIn, String), DomainError> {
    input.check()?;
    let email = input.email.trim().to_lowercase();
    let user = store::users::find_by_email(cx.db().reader(), &email).await?;
    // Verify even when there is no such user, so timing does not tell who has an account.
    let ok = password::verify(
        input.password,
        user.as_ref().map(|u| u.password_hash.clone()),
    )
    .await;
    let Some(user) = user.filter(|_| ok) else {
        return Err(DomainError::InvalidCredentials);
    };
    // A workspace that requires single sign-on refuses its non-owner members' passwords.
    if let Some(path) = super::sso::password_refused(cx, &user.id).await? {
        return Err(DomainError::Forbidden(
            "SSO_REQUIRED",
            format!("Your workspace requires single sign-on: sign in at {path} instead of with a password."),
        ));
    }
    let mine = store::workspaces::list_for_user(cx.db().reader(), &user.id).await?;
    let ws_id = match mine.first() {
        Some(w) => w.id.clone(),
        None => {
            // Someone removed from every workspace gets a fresh one rather than a dead end.
            let now = cx.clock().now_ms();
            let ws = new_workspace(cx, &user.id, format!("{}'s workspace", user.name), now).await?;
            let mut tx = cx.db().begin().await?;
            store::workspaces::insert(&mut *tx, &ws).await?;
            store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
            tx.commit().await?;
            ws.id
        }
    };
    let (_, token) = start_session(cx, &user.id, &ws_id, client).await?;
    let workspace = workspaces::view(cx, &ws_id).await?;
    Ok((
        SignedIn {
            user: user_view(&user),
            workspace,
        },
        token,
    ))
}

/// Ends the session whose token this is; an unknown token is already signed out.
pub async fn sign_out(cx: &Cx, token: &str) -> Result<(), DomainError> {
    let hash = secrets::hash(token);
    if let Some(s) = store::sessions::find(cx.db().reader(), &hash).await? {
        store::sessions::delete(cx.db().writer(), &s.id).await?;
    }
    Ok(())
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: String,
    pub active_workspace_id: String,
    pub expires_at: String,
}

#[derive(Debug, Serialize)]
pub struct SessionAnswer {
    pub session: SessionView,
    pub user: UserView,
    pub workspace: CurrentWorkspace,
}

/// The session `token` belongs to, for a caller already authenticated by it (which applied
/// expiry, sliding renewal and the workspace fallback).
pub async fn session(cx: &Cx, caller: &Caller, token: &str) -> Result<SessionAnswer, DomainError> {
    let db = cx.db().reader();
    let s = store::sessions::find(db, &secrets::hash(token))
        .await?
        .ok_or(DomainError::Unauthorized)?;
    let user = store::users::get(db, &caller.user_id)
        .await?
        .ok_or(DomainError::Unauthorized)?;
    let workspace = workspaces::view(cx, &caller.workspace_id).await?;
    Ok(SessionAnswer {
        session: SessionView {
            id: s.id,
            active_workspace_id: caller.workspace_id.clone(),
            expires_at: rfc3339(s.expires_at),
        },
        user: user_view(&user),
        workspace,
    })
}
