//! What a verified single sign-on identity becomes: a user and a session.
//!
//! A person is found by the provider's (issuer, `sub`), never by email. At a first sign-in the
//! identity is linked to the user with the same email only when the ID token says the address
//! is verified; a user with that email and an unverified claim is refused (whoever controls an
//! account at the provider must not take over a Tocsin account by naming its address). With
//! no such user a new one is made: with a workspace of their own as sign-up does, or as a
//! member of the provider's `workspace` with its `default_role` (audited
//! `member.joined_by_sso`). Such a user has no password. Every sign-in is audited
//! `auth.sso_sign_in` in the workspace the session opens in.
//!
//! Which workspaces refuse a password is also here: [`password_refused`], asked by
//! `users::sign_in` once the password is right.

use serde_json::json;
use thiserror::Error;

use super::users::{new_workspace, start_session, ClientMeta};
use super::DomainError;
use crate::audit::{self, Entry};
use crate::auth::sso::Identity;
use crate::auth::{Caller, Role, Via};
use crate::cluster::feed::Notice;
use crate::config::OidcProvider;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::{self, sso::IdentityRow, users::UserRow};

/// What no user may sign in with: an SSO user's password column holds no argon2 hash, so
/// every password fails against it.
const NO_PASSWORD: &str = "!sso";

/// Why an identity the provider vouched for still cannot sign in; each says what to do.
#[derive(Debug, Error)]
pub enum Refusal {
    #[error("The provider did not share an email address: ask its administrator to release the email claim to Tocsin.")]
    NoEmail,
    #[error("An account with the email {0} exists, and the provider did not say the address is verified: verify it at the provider, or sign in with your password.")]
    EmailNotVerified(String),
    #[error("The workspace {0} that this provider's people join does not exist: ask the server's operator to correct the provider's `workspace` setting.")]
    NoWorkspace(String),
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl From<sqlx::Error> for Refusal {
    fn from(e: sqlx::Error) -> Refusal {
        Refusal::Domain(e.into())
    }
}

/// How the person was found: recorded in the audit entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// By the (issuer, `sub`) of an earlier sign-in.
    Identity,
    /// A first sign-in linked by verified email to an existing user.
    Linked,
    /// A first sign-in that made a new user.
    Created,
}

impl Found {
    fn as_str(self) -> &'static str {
        match self {
            Found::Identity => "identity",
            Found::Linked => "linked",
            Found::Created => "created",
        }
    }
}

/// A signed-in person: the session's token, and who and where.
#[derive(Debug)]
pub struct SsoSignedIn {
    pub token: String,
    pub user_id: String,
    pub workspace_id: String,
    pub found: Found,
}

/// Signs in the person `identity` names at `provider`.
pub async fn sign_in(
    cx: &Cx,
    provider: &OidcProvider,
    identity: &Identity,
    client: &ClientMeta,
) -> Result<SsoSignedIn, Refusal> {
    let db = cx.db();
    let now = cx.clock().now_ms();
    let (user, found) = match store::sso::find(db.reader(), &identity.issuer, &identity.subject)
        .await?
    {
        Some(row) => {
            store::sso::touch(
                db.writer(),
                &identity.issuer,
                &identity.subject,
                identity.email.as_deref(),
                now,
            )
            .await?;
            let user = store::users::get(db.reader(), &row.user_id)
                .await?
                .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("identity without user")))?;
            (user, Found::Identity)
        }
        None => first_sign_in(cx, provider, identity, client, now).await?,
    };
    let workspace_id = workspace_to_open(cx, provider, &user, now).await?;
    let role = store::members::get(db.reader(), &workspace_id, &user.id)
        .await?
        .and_then(|m| Role::parse(&m.role))
        .unwrap_or(Role::Viewer);
    let (session_id, token) = start_session(cx, &user.id, &workspace_id, client).await?;
    let actor = caller(&user, &workspace_id, role, session_id, client);
    audit::record(
        db.writer(),
        &actor,
        Entry {
            action: "auth.sso_sign_in",
            resource_type: "user",
            resource_id: &user.id,
            metadata: json!({
                "provider": provider.id,
                "issuer": identity.issuer,
                "found": found.as_str(),
            }),
        },
        now,
    )
    .await?;
    Ok(SsoSignedIn {
        token,
        user_id: user.id,
        workspace_id,
        found,
    })
}

async fn first_sign_in(
    cx: &Cx,
    provider: &OidcProvider,
    identity: &Identity,
    client: &ClientMeta,
    now: i64,
) -> Result<(UserRow, Found), Refusal> {
    let db = cx.db();
    let email = identity
        .email
        .clone()
        .filter(|e| e.contains('@'))
        .ok_or(Refusal::NoEmail)?;
    let row = |user_id: &str| IdentityRow {
        issuer: identity.issuer.clone(),
        subject: identity.subject.clone(),
        user_id: user_id.to_string(),
        provider_id: provider.id.clone(),
        email: Some(email.clone()),
        created_at: now,
        last_sign_in_at: now,
    };
    if let Some(user) = store::users::find_by_email(db.reader(), &email).await? {
        if !identity.email_verified {
            return Err(Refusal::EmailNotVerified(email));
        }
        let mut tx = db.begin().await?;
        store::sso::insert(&mut *tx, &row(&user.id)).await?;
        // The provider vouched for the address.
        store::users::mark_verified(&mut *tx, &user.id, &email, now).await?;
        tx.commit().await?;
        return Ok((user, Found::Linked));
    }
    let name = identity
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty() && n.chars().all(crate::text::printable))
        .map(|n| n.chars().take(100).collect::<String>())
        .unwrap_or_else(|| email.split('@').next().unwrap_or("").to_string());
    let user = UserRow {
        id: new_id(),
        email: email.clone(),
        name: name.clone(),
        password_hash: NO_PASSWORD.into(),
        email_verified_at: identity.email_verified.then_some(now),
        created_at: now,
        updated_at: now,
    };
    let joined = match &provider.workspace {
        Some(slug) => Some(
            store::sso::workspace_by_slug(db.reader(), slug)
                .await?
                .ok_or_else(|| Refusal::NoWorkspace(slug.clone()))?,
        ),
        None => None,
    };
    let own = match joined {
        Some(_) => None,
        None => Some(new_workspace(cx, &user.id, format!("{name}'s workspace"), now).await?),
    };
    let mut tx = db.begin().await?;
    store::users::insert(&mut *tx, &user).await?;
    if let Some(ws) = &own {
        store::workspaces::insert(&mut *tx, ws).await?;
        store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
    }
    if let Some(ws_id) = &joined {
        let role = Role::parse(&provider.default_role).unwrap_or(Role::Member);
        store::members::insert(&mut *tx, ws_id, &user.id, role.as_str(), now).await?;
        let actor = caller(&user, ws_id, role, String::new(), client);
        audit::record(
            &mut *tx,
            &actor,
            Entry {
                action: "member.joined_by_sso",
                resource_type: "member",
                resource_id: &user.id,
                metadata: json!({"email": email, "role": role.as_str(), "provider": provider.id}),
            },
            now,
        )
        .await?;
    }
    store::sso::insert(&mut *tx, &row(&user.id)).await?;
    tx.commit().await?;
    if let Some(ws_id) = joined {
        cx.announce(Notice::MembershipChanged {
            workspace_id: ws_id,
        });
    }
    Ok((user, Found::Created))
}

/// The provider's workspace when the person is in it, else their first; someone removed from
/// every workspace gets a fresh one of their own, as at a password sign-in.
async fn workspace_to_open(
    cx: &Cx,
    provider: &OidcProvider,
    user: &UserRow,
    now: i64,
) -> Result<String, Refusal> {
    let db = cx.db();
    let mine = store::workspaces::list_for_user(db.reader(), &user.id).await?;
    if let Some(slug) = &provider.workspace {
        if let Some(w) = mine.iter().find(|w| &w.slug == slug) {
            return Ok(w.id.clone());
        }
    }
    if let Some(w) = mine.first() {
        return Ok(w.id.clone());
    }
    let ws = new_workspace(cx, &user.id, format!("{}'s workspace", user.name), now).await?;
    let mut tx = db.begin().await?;
    store::workspaces::insert(&mut *tx, &ws).await?;
    store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
    tx.commit().await?;
    Ok(ws.id)
}

fn caller(user: &UserRow, ws: &str, role: Role, session_id: String, client: &ClientMeta) -> Caller {
    Caller {
        user_id: user.id.clone(),
        email: user.email.clone(),
        email_verified: user.email_verified_at.is_some(),
        workspace_id: ws.to_string(),
        caps: role.capabilities(),
        via: Via::Session { session_id, role },
        ip: client.ip.clone(),
        user_agent: client.user_agent.clone(),
    }
}

/// When `user_id`'s password may not sign them in: the sign-in path of the provider to use
/// instead, because they are a member but not an owner of a workspace requiring single
/// sign-on. The provider is the one whose `workspace` is that workspace, else the first.
pub async fn password_refused(cx: &Cx, user_id: &str) -> Result<Option<String>, DomainError> {
    let slugs = store::sso::sso_only_memberships(cx.db().reader(), user_id).await?;
    let Some(first) = slugs.first() else {
        return Ok(None);
    };
    let providers = &cx.config().sso;
    let provider = slugs
        .iter()
        .find_map(|s| providers.iter().find(|p| p.workspace.as_ref() == Some(s)))
        .or_else(|| providers.first());
    Ok(Some(match provider {
        Some(p) => format!("/auth/sso/{}/start", p.id),
        // Settings refuse `requireSso` without a provider; one removed from the file since
        // leaves the person this page to ask from.
        None => format!("/auth/sso/providers?workspace={first}"),
    }))
}
