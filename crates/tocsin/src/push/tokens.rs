//! Push token → monitor, served from memory.
//!
//! A push carries only its token. The token's SHA-256 (what the database stores) is the key of
//! an in-memory map to the monitor's id and sequence number; a miss reads the database once
//! and fills the entry. Only identity is cached: everything that changes (pause, settings,
//! state) is read inside the writer's transaction, so an edit never waits for this cache.
//!
//! Regenerating a token or deleting the monitor forgets the monitor's entry *before and after*
//! the database write, and every forget bumps a generation counter: a lookup that read the
//! database before a forget never stores what it read, so an old token cannot come back into
//! the map after the write commits. Unknown tokens are not cached (a guesser would fill
//! memory); they are rate-limited per IP.
//!
//! Other nodes sharing the database announce their regenerates and deletes through the change
//! feed ([`crate::cluster::feed`]): [`PushTokens::apply`] forgets the monitor's entry when the
//! notice arrives (after the other node's commit, so a lookup racing it is refused by the
//! generation counter as above), and a `Resync` clears the whole map.
//!
//! At start the server loads every push monitor's entry ([`PushTokens::preload`]), so pushes
//! never wait on the database for a token that existed then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::cluster::feed::{ChangeKind, MonitorChange, Notice};
use crate::store::{monitors, Db};

/// The monitor a push token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    pub monitor_id: String,
    pub monitor_seq: i64,
}

#[derive(Default)]
struct Maps {
    by_hash: HashMap<String, PushTarget>,
    hash_of: HashMap<String, String>,
}

/// The cache; one per process, in the application state.
#[derive(Default)]
pub struct PushTokens {
    maps: Mutex<Maps>,
    /// Bumped by every [`PushTokens::forget`].
    generation: AtomicU64,
}

impl std::fmt::Debug for PushTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushTokens")
            .field("len", &self.len())
            .finish()
    }
}

impl PushTokens {
    fn maps(&self) -> std::sync::MutexGuard<'_, Maps> {
        self.maps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The monitor whose token hashes to `hash`, from memory or the database.
    pub async fn resolve(&self, db: &Db, hash: &str) -> Result<Option<PushTarget>, sqlx::Error> {
        if let Some(t) = self.maps().by_hash.get(hash) {
            return Ok(Some(t.clone()));
        }
        let generation = self.generation.load(Ordering::SeqCst);
        let Some(row) = monitors::get_by_push_token_hash(db.reader(), hash).await? else {
            return Ok(None);
        };
        let target = PushTarget {
            monitor_id: row.id,
            monitor_seq: row.seq,
        };
        self.store(generation, hash, &target);
        Ok(Some(target))
    }

    /// Remembers `hash → target` unless a forget happened since `generation` was read.
    fn store(&self, generation: u64, hash: &str, target: &PushTarget) -> bool {
        let mut maps = self.maps();
        if self.generation.load(Ordering::SeqCst) != generation {
            return false;
        }
        if let Some(old) = maps
            .hash_of
            .insert(target.monitor_id.clone(), hash.to_string())
        {
            if old != hash {
                maps.by_hash.remove(&old);
            }
        }
        maps.by_hash.insert(hash.to_string(), target.clone());
        true
    }

    /// Loads every push monitor's entry. Stops early (harmlessly: lookups fill the rest) if a
    /// token is regenerated or a monitor deleted meanwhile. Returns the entries loaded.
    pub async fn preload(&self, db: &Db) -> Result<usize, sqlx::Error> {
        let generation = self.generation.load(Ordering::SeqCst);
        let rows = crate::store::push::token_hashes(db.reader()).await?;
        let mut n = 0;
        for (id, seq, hash) in rows {
            let target = PushTarget {
                monitor_id: id,
                monitor_seq: seq,
            };
            if !self.store(generation, &hash, &target) {
                break;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Drops the entry of `monitor_id` (token regenerated, monitor deleted).
    pub fn forget(&self, monitor_id: &str) {
        let mut maps = self.maps();
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Some(hash) = maps.hash_of.remove(monitor_id) {
            maps.by_hash.remove(&hash);
        }
    }

    /// Drops every entry (notices may have been missed); lookups fill the map again.
    pub fn clear(&self) {
        let mut maps = self.maps();
        self.generation.fetch_add(1, Ordering::SeqCst);
        maps.by_hash.clear();
        maps.hash_of.clear();
    }

    /// Follows a feed notice: a regenerated token or a deleted monitor forgets the monitor's
    /// entry, a `Resync` clears the map.
    pub fn apply(&self, notice: &Notice) {
        match notice {
            Notice::PushTokenRegenerated { monitor_id }
            | Notice::Monitor(MonitorChange {
                monitor_id,
                kind: ChangeKind::Deleted,
            }) => self.forget(monitor_id),
            Notice::Resync => self.clear(),
            _ => {}
        }
    }

    pub fn len(&self) -> usize {
        self.maps().by_hash.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
