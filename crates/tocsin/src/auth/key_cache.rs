//! The in-memory view of API keys that keeps the database off the request path. A key is read
//! from the database on first use and then served from memory for a short time; revoking,
//! rotating or editing a key (or changing its creator's membership) drops it here at once. Other
//! nodes sharing the database announce the same changes through the change feed
//! ([`crate::cluster::feed`]), which [`KeyCache::apply`] follows (a `Resync` clears the cache);
//! the time limit stays as a further net should a notice be lost. `lastUsedAt` is written at
//! most once a minute per key.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;

use super::capability::{CapSet, Capability, Role};
use crate::cluster::feed::Notice;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::{self, Db};

/// How long a cached key is trusted before it is read again.
pub const TTL_MS: i64 = 5_000;
/// `lastUsedAt` is written at most this often per key.
pub const TOUCH_EVERY_MS: i64 = 60_000;
/// Past this many entries the cache starts over, bounding memory under a flood of distinct keys.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug)]
pub struct CachedKey {
    pub key_id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub email: String,
    pub email_verified: bool,
    pub rest: bool,
    pub mcp: bool,
    /// Permissions intersected with what the creator's role holds now.
    pub caps: CapSet,
    /// False when the key was revoked or its creator left the workspace.
    pub active: bool,
    /// Revoked by a person (as opposed to inactive because its creator left).
    pub revoked: bool,
    pub expires_at: Option<i64>,
    fetched_at: i64,
    last_touch: AtomicI64,
}

#[derive(Default, Clone)]
pub struct KeyCache {
    map: Arc<DashMap<String, Arc<CachedKey>>>,
}

impl KeyCache {
    /// Looks a token hash up, from memory when fresh. `None`: no such key.
    pub async fn lookup(
        &self,
        db: &Db,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<Arc<CachedKey>>, sqlx::Error> {
        if let Some(hit) = self.map.get(token_hash) {
            if now - hit.fetched_at < TTL_MS {
                return Ok(Some(hit.clone()));
            }
        }
        let Some(row) = store::api_keys::find_for_auth(db.reader(), token_hash).await? else {
            self.map.remove(token_hash);
            return Ok(None);
        };
        // The index found the row by its hash; compare again in constant time all the same.
        if !super::secrets::hashes_equal(&row.token_hash, token_hash) {
            return Ok(None);
        }
        let surfaces = store::split_list(&row.surfaces);
        // A capability or creator role this build cannot read refuses the key (reported by
        // `corrupt::parse`, as if it did not exist): dropping the word would quietly change
        // what the key may do. Not cached, so a repaired row works at once.
        let perms: Result<Vec<Capability>, CorruptRow> = store::split_list(&row.permissions)
            .iter()
            .map(|p| corrupt::parse("api_keys", &row.id, "permissions", p))
            .collect();
        let membership = format!("{}/{}", row.workspace_id, row.created_by);
        let role: Result<Option<Role>, CorruptRow> = row
            .creator_role
            .as_deref()
            .map(|r| corrupt::parse("memberships", &membership, "role", r))
            .transpose();
        let (Ok(perms), Ok(role)) = (perms, role) else {
            self.map.remove(token_hash);
            return Ok(None);
        };
        let role_caps = role.map(Role::capabilities).unwrap_or(CapSet::EMPTY);
        let entry = Arc::new(CachedKey {
            key_id: row.id,
            workspace_id: row.workspace_id,
            user_id: row.created_by,
            email: row.creator_email,
            email_verified: row.creator_email_verified_at.is_some(),
            rest: surfaces.iter().any(|s| s == "rest"),
            mcp: surfaces.iter().any(|s| s == "mcp"),
            caps: CapSet::of(&perms).intersect(role_caps),
            active: row.status == "ACTIVE" && row.creator_role.is_some(),
            revoked: row.status != "ACTIVE",
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

    /// Records a use; returns true when the caller should write `lastUsedAt` now.
    pub fn should_touch(key: &CachedKey, now: i64) -> bool {
        let last = key.last_touch.load(Ordering::Relaxed);
        now - last >= TOUCH_EVERY_MS
            && key
                .last_touch
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Forgets one key (after revoke, rotate or update).
    pub fn forget_key(&self, key_id: &str) {
        self.map.retain(|_, v| v.key_id != key_id);
    }

    /// Forgets every key of a workspace (after a membership change).
    pub fn forget_workspace(&self, workspace_id: &str) {
        self.map.retain(|_, v| v.workspace_id != workspace_id);
    }

    /// Forgets every key.
    pub fn clear(&self) {
        self.map.clear();
    }

    /// Follows a feed notice: a changed key or membership forgets what it affects, a
    /// `Resync` clears the cache.
    pub fn apply(&self, notice: &Notice) {
        match notice {
            Notice::ApiKeyChanged { key_id } => self.forget_key(key_id),
            Notice::MembershipChanged { workspace_id } => self.forget_workspace(workspace_id),
            Notice::Resync => self.clear(),
            _ => {}
        }
    }
}
