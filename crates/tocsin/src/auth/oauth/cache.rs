//! OAuth access tokens on the request path, kept off the database like API keys
//! (`auth::key_cache`): a token is read on first use and served from memory for a few seconds;
//! revoking a grant (by its person, by the revocation endpoint, or by a reused refresh token)
//! drops its tokens at once on this node and, through the change feed's
//! `Notice::OAuthGrantRevoked`, on every other node; a membership change drops the workspace's
//! tokens, since the role caps the grant. `lastUsedAt` is written at most once a minute per
//! grant.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;

use super::ACCESS_TOKEN_PREFIX;
use crate::auth::capability::{CapSet, Capability, Role};
use crate::auth::error::{AuthError, CredentialProblem};
use crate::auth::key_cache::{TOUCH_EVERY_MS, TTL_MS};
use crate::auth::{secrets, Caller, Via};
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::{self, Db};

/// Past this many entries the cache starts over, bounding memory under a flood of tokens.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug)]
pub struct CachedAccess {
    pub grant_id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub email: String,
    pub email_verified: bool,
    /// The grant's scopes intersected with what the person's role holds now.
    pub caps: CapSet,
    pub resource: Option<String>,
    /// False once the grant was revoked or its person left the workspace.
    pub active: bool,
    pub expires_at: i64,
    fetched_at: i64,
    last_touch: AtomicI64,
}

#[derive(Default, Clone)]
pub struct TokenCache {
    map: Arc<DashMap<String, Arc<CachedAccess>>>,
}

impl TokenCache {
    /// Looks an access token's hash up, from memory when fresh. `None`: no such token.
    pub async fn lookup(
        &self,
        db: &Db,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<Arc<CachedAccess>>, sqlx::Error> {
        if let Some(hit) = self.map.get(token_hash) {
            if now - hit.fetched_at < TTL_MS {
                return Ok(Some(hit.clone()));
            }
        }
        let Some(row) = store::oauth::find_access_for_auth(db.reader(), token_hash).await? else {
            self.map.remove(token_hash);
            return Ok(None);
        };
        if !secrets::hashes_equal(&row.token_hash, token_hash) {
            return Ok(None);
        }
        // A scope or role this build cannot read refuses the token (reported by
        // `corrupt::parse`), as an API key's does: see `crate::auth::key_cache`.
        let scopes: Result<Vec<Capability>, CorruptRow> = store::split_list(&row.scopes)
            .iter()
            .map(|s| corrupt::parse("oauth_grants", &row.grant_id, "scopes", s))
            .collect();
        let membership = format!("{}/{}", row.workspace_id, row.user_id);
        let role: Result<Option<Role>, CorruptRow> = row
            .role
            .as_deref()
            .map(|r| corrupt::parse("memberships", &membership, "role", r))
            .transpose();
        let (Ok(scopes), Ok(role)) = (scopes, role) else {
            self.map.remove(token_hash);
            return Ok(None);
        };
        let role_caps = role.map(Role::capabilities).unwrap_or(CapSet::EMPTY);
        let entry = Arc::new(CachedAccess {
            grant_id: row.grant_id,
            workspace_id: row.workspace_id,
            user_id: row.user_id,
            email: row.email,
            email_verified: row.email_verified_at.is_some(),
            caps: CapSet::of(&scopes).intersect(role_caps),
            resource: row.resource,
            active: row.status == "ACTIVE" && row.role.is_some(),
            expires_at: row.expires_at,
            fetched_at: now,
            last_touch: AtomicI64::new(row.last_used_at.unwrap_or(i64::MIN / 2)),
        });
        if self.map.len() >= MAX_ENTRIES {
            self.map.clear();
        }
        self.map.insert(token_hash.to_string(), entry.clone());
        Ok(Some(entry))
    }

    /// Forgets every token of a grant.
    pub fn forget_grant(&self, grant_id: &str) {
        self.map.retain(|_, v| v.grant_id != grant_id);
    }

    /// Forgets every token of a workspace (after a membership change).
    pub fn forget_workspace(&self, workspace_id: &str) {
        self.map.retain(|_, v| v.workspace_id != workspace_id);
    }

    /// Follows a feed notice: a revoked grant or a membership change forgets what it affects,
    /// a `Resync` clears the cache.
    pub fn apply(&self, notice: &Notice) {
        match notice {
            Notice::OAuthGrantRevoked { grant_id } => self.forget_grant(grant_id),
            Notice::MembershipChanged { workspace_id } => self.forget_workspace(workspace_id),
            Notice::Resync => self.map.clear(),
            _ => {}
        }
    }

    fn should_touch(entry: &CachedAccess, now: i64) -> bool {
        let last = entry.last_touch.load(Ordering::Relaxed);
        now - last >= TOUCH_EVERY_MS
            && entry
                .last_touch
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }
}

/// Resolves an OAuth access token presented on `/mcp` to the [`Caller`] it acts as: the
/// grant's person in the grant's workspace, holding the grant's scopes (never more than their
/// role holds now). Refused (401) when the token is unknown, revoked, expired, or bound to
/// another resource than this server's `/mcp`. Served from memory; the database is read at
/// most once per token every few seconds (`tokens` is this node's cache, which follows the
/// change feed).
pub async fn authenticate_access_token(
    cx: &Cx,
    tokens: &TokenCache,
    token: &str,
    now: i64,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, AuthError> {
    let unknown = AuthError::BadCredential(CredentialProblem::UnknownAccessToken);
    if !token.starts_with(ACCESS_TOKEN_PREFIX) || token.len() > 256 {
        return Err(unknown);
    }
    let hash = secrets::hash(token);
    let access = tokens
        .lookup(cx.db(), &hash, now)
        .await?
        .ok_or(AuthError::BadCredential(
            CredentialProblem::UnknownAccessToken,
        ))?;
    if !access.active {
        return Err(unknown);
    }
    if access.expires_at <= now {
        return Err(AuthError::BadCredential(
            CredentialProblem::ExpiredAccessToken,
        ));
    }
    if let Some(r) = &access.resource {
        if *r != super::resource(cx.config()) {
            return Err(unknown);
        }
    }
    if TokenCache::should_touch(&access, now) {
        let db = cx.db().clone();
        let id = access.grant_id.clone();
        tokio::spawn(async move {
            if let Err(e) = store::oauth::touch_grant(db.writer(), &id, now).await {
                tracing::warn!(error = %e, grant = %id, "could not record lastUsedAt");
            }
        });
    }
    Ok(Caller {
        user_id: access.user_id.clone(),
        email: access.email.clone(),
        email_verified: access.email_verified,
        workspace_id: access.workspace_id.clone(),
        caps: access.caps,
        via: Via::OAuth {
            grant_id: access.grant_id.clone(),
        },
        ip,
        user_agent,
    })
}
