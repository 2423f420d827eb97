//! Who is calling: a [`Caller`] resolved from an API key or a session token, and the
//! [`Requirement`] an operation declares (its capabilities, and whether only a signed-in
//! person may call it). The HTTP extractor (`http::auth`) and, later, other surfaces build on
//! these. Tenancy starts here: a [`Caller`] carries exactly one workspace, and every
//! operation passes it to every query.

use super::capability::{CapSet, Capability, Role};
use super::error::{AuthError, CredentialProblem, Holder};
use super::key_cache::KeyCache;
use super::{secrets, SESSION_TTL_MS};
use crate::cx::Cx;
use crate::store;

/// How the caller authenticated.
#[derive(Debug, Clone)]
pub enum Via {
    Session {
        session_id: String,
        role: Role,
    },
    ApiKey {
        key_id: String,
    },
    /// An OAuth access token of this grant (valid on `/mcp` only).
    OAuth {
        grant_id: String,
    },
}

/// An authenticated caller, bound to one workspace.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: String,
    pub email: String,
    /// Whether the person showed they receive mail at `email` (see
    /// `domain::email_verification`): what depends on the address asks for it.
    pub email_verified: bool,
    pub workspace_id: String,
    pub caps: CapSet,
    pub via: Via,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

impl Caller {
    /// Refuses unless the caller holds every capability `R` names, and, for person-only
    /// operations, is a signed-in person rather than a token.
    pub fn require<R: Requirement>(&self) -> Result<(), AuthError> {
        if R::session_only() && self.session_id().is_none() {
            return Err(session_required(R::CAPS));
        }
        let missing = self.caps.missing(R::CAPS);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(AuthError::InsufficientCapability {
                missing,
                holder: self.holder(),
            })
        }
    }

    /// What kind of credential the caller used, for the wording of a refusal.
    pub fn holder(&self) -> Holder {
        match self.via {
            Via::Session { .. } => Holder::Session,
            Via::ApiKey { .. } => Holder::ApiKey,
            Via::OAuth { .. } => Holder::OAuthGrant,
        }
    }

    /// The caller's email when it is verified: the only form in which an address may admit
    /// or entitle anyone.
    pub fn verified_email(&self) -> Option<&str> {
        self.email_verified.then_some(self.email.as_str())
    }

    pub fn session_id(&self) -> Option<&str> {
        match &self.via {
            Via::Session { session_id, .. } => Some(session_id),
            Via::ApiKey { .. } | Via::OAuth { .. } => None,
        }
    }
}

/// The refusal of an API key calling what is kept for signed-in people: it names the
/// session-only capabilities among `needed` (none when a person is needed rather than a
/// capability).
pub fn session_required(needed: &[Capability]) -> AuthError {
    AuthError::SessionRequired(
        needed
            .iter()
            .copied()
            .filter(|c| c.is_session_only())
            .collect(),
    )
}

/// What an operation requires. Implemented by the marker types made with [`requirement!`].
pub trait Requirement: Send + Sync + 'static {
    const CAPS: &'static [Capability];
    /// True for operations only a signed-in person may call even without a session-only
    /// capability (API key management, switching workspace).
    const PERSON_ONLY: bool = false;

    fn session_only() -> bool {
        Self::PERSON_ONLY || Self::CAPS.iter().any(|c| c.is_session_only())
    }
}

/// Declares a requirement marker: `requirement!(MonitorsRead => [Capability::MonitorsRead]);`
/// or, for person-only operations, `requirement!(SignedIn => [] person);`.
#[macro_export]
macro_rules! requirement {
    ($name:ident => [$($cap:expr),*]) => {
        pub struct $name;
        impl $crate::auth::Requirement for $name {
            const CAPS: &'static [$crate::auth::Capability] = &[$($cap),*];
        }
    };
    ($name:ident => [$($cap:expr),*] person) => {
        pub struct $name;
        impl $crate::auth::Requirement for $name {
            const CAPS: &'static [$crate::auth::Capability] = &[$($cap),*];
            const PERSON_ONLY: bool = true;
        }
    };
}

/// The caches bearer tokens are resolved from without reading the database: API keys and
/// OAuth access tokens. The composition root builds them and registers both on the change
/// feed, so a revoked key or grant is refused on every node. Cheap to clone.
#[derive(Clone, Default)]
pub struct TokenCaches {
    pub keys: KeyCache,
    pub oauth_tokens: super::oauth::TokenCache,
}

/// Authenticates a bearer token for `surface` (`rest` or `mcp`): a personal access token, or
/// an OAuth access token, which is valid on `mcp` only (on `rest` a valid one is refused with
/// 403 `SURFACE_NOT_ALLOWED`, an invalid one with 401). Each kind is looked up in its cache
/// of `caches`.
pub async fn authenticate_key(
    cx: &Cx,
    caches: &TokenCaches,
    token: &str,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
    surface: &'static str,
) -> Result<Caller, AuthError> {
    if token.starts_with(super::oauth::ACCESS_TOKEN_PREFIX) {
        let caller = super::oauth::authenticate_access_token(
            cx,
            &caches.oauth_tokens,
            token,
            now,
            ip,
            user_agent,
        )
        .await?;
        return if surface == "mcp" {
            Ok(caller)
        } else {
            Err(AuthError::Forbidden(
                "SURFACE_NOT_ALLOWED",
                format!("OAuth access tokens are valid on the mcp surface (/mcp) only, not on {surface}: call the REST API with a personal access token or the session cookie."),
            ))
        };
    }
    if !token.starts_with(secrets::API_KEY_PREFIX) || token.len() > 256 {
        return Err(AuthError::BadCredential(CredentialProblem::MalformedKey));
    }
    let hash = secrets::hash(token);
    // Past this lookup the caller has shown the key's whole secret, so saying what became of
    // that key tells them nothing about anyone else's; before it, every miss reads the same.
    let key = caches
        .keys
        .lookup(cx.db(), &hash, now)
        .await?
        .ok_or(AuthError::BadCredential(CredentialProblem::UnknownKey))?;
    if key.revoked {
        return Err(AuthError::BadCredential(CredentialProblem::RevokedKey));
    }
    if !key.active {
        return Err(AuthError::BadCredential(CredentialProblem::KeyCreatorLeft));
    }
    if key.expires_at.is_some_and(|e| e <= now) {
        return Err(AuthError::BadCredential(CredentialProblem::ExpiredKey));
    }
    let allowed = if surface == "mcp" { key.mcp } else { key.rest };
    if !allowed {
        return Err(AuthError::SurfaceNotAllowed(surface));
    }
    if KeyCache::should_touch(&key, now) {
        let db = cx.db().clone();
        let id = key.key_id.clone();
        tokio::spawn(async move {
            if let Err(e) = store::api_keys::touch(db.writer(), &id, now).await {
                tracing::warn!(error = %e, key = %id, "could not record lastUsedAt");
            }
        });
    }
    Ok(Caller {
        user_id: key.user_id.clone(),
        email: key.email.clone(),
        email_verified: key.email_verified,
        workspace_id: key.workspace_id.clone(),
        caps: key.caps,
        via: Via::ApiKey {
            key_id: key.key_id.clone(),
        },
        ip,
        user_agent,
    })
}

pub async fn authenticate_session(
    cx: &Cx,
    token: &str,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, AuthError> {
    let hash = secrets::hash(token);
    let db = cx.db();
    let mut s = store::sessions::find(db.reader(), &hash)
        .await?
        .ok_or(AuthError::BadCredential(CredentialProblem::UnknownSession))?;
    if s.expires_at <= now {
        return Err(AuthError::BadCredential(CredentialProblem::ExpiredSession));
    }
    // Sliding expiry, written at most once a day per session.
    if s.expires_at - now < SESSION_TTL_MS - 24 * 3600 * 1000 {
        store::sessions::extend(db.writer(), &s.id, now + SESSION_TTL_MS).await?;
    }
    // A stored role this build cannot read is a (reported) corrupt row and an error, not a
    // sign the person left the workspace.
    let membership = format!("{}/{}", s.workspace_id, s.user_id);
    let stored = s
        .role
        .as_deref()
        .map(|r| store::corrupt::parse::<Role>("memberships", &membership, "role", r))
        .transpose()?;
    let role = match stored {
        Some(r) => r,
        None => {
            // Removed from the active workspace: fall back to another one the user belongs to.
            let mine = store::workspaces::list_for_user(db.reader(), &s.user_id).await?;
            let first = mine
                .into_iter()
                .next()
                .ok_or(AuthError::BadCredential(CredentialProblem::NoWorkspace))?;
            store::sessions::set_workspace(db.writer(), &s.id, &first.id).await?;
            s.workspace_id = first.id;
            let membership = format!("{}/{}", s.workspace_id, s.user_id);
            store::corrupt::parse("memberships", &membership, "role", &first.role)?
        }
    };
    Ok(Caller {
        user_id: s.user_id,
        email: s.email,
        email_verified: s.email_verified_at.is_some(),
        workspace_id: s.workspace_id,
        caps: role.capabilities(),
        via: Via::Session {
            session_id: s.id,
            role,
        },
        ip,
        user_agent,
    })
}
