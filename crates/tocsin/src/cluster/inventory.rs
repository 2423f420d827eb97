//! The reconciliation scan: the safety net under the change feed, so that a notice lost
//! between nodes costs at most [`SCAN_EVERY`] of staleness in the scheduler and the push
//! watcher.
//!
//! A worker records, for each monitor it holds, the `seq` and `version` it loaded (an
//! [`Inventory`]), and keeps a digest of them up to date as it goes: count, sum of `seq`, sum
//! of `version`, sum of `seq × version`. Every scan asks the database for the same digest over
//! the monitors the worker should hold ([`store::inventory::digest`]: one row, however many
//! monitors). Only when the two differ does it read every `(id, seq, version)`
//! ([`store::inventory::versions`]) and [`Inventory::diff`] them, so the worker reloads just
//! the monitors that changed and drops those that are gone. Every create, delete, pause,
//! resume and edit bumps `version` or changes the set, so it moves the digest; at 100,000
//! monitors a matching scan costs the database one pass over the index-free table and the
//! node four numbers.
//!
//! Scans run on PostgreSQL only (on SQLite one process makes every write and the in-process
//! feed cannot lose a notice short of lagging, which reloads everything anyway). After a
//! [`super::feed::Notice::Resync`] the worker diffs in full without consulting the digest.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::store::inventory::{self, Set};
use crate::store::Db;

/// How often a worker compares what it holds with the store (PostgreSQL only).
pub const SCAN_EVERY: Duration = Duration::from_secs(10);

/// Past this many differences a worker reloads everything instead of one by one.
pub const RELOAD_ALL_ABOVE: usize = 1_000;

/// What a worker holds: `id → (seq, version)`, with its digest.
#[derive(Debug, Default)]
pub struct Inventory {
    held: HashMap<String, (i64, i64)>,
    digest: [i64; 4],
}

fn terms(seq: i64, version: i64) -> [i64; 4] {
    [1, seq, version, seq.wrapping_mul(version)]
}

/// What a scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Held with another version, or not held: reload these.
    pub reload: Vec<String>,
    /// Held but no longer in the set: drop these.
    pub gone: Vec<String>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.reload.is_empty() && self.gone.is_empty()
    }

    pub fn len(&self) -> usize {
        self.reload.len() + self.gone.len()
    }
}

impl Inventory {
    /// Records that `id` is held as loaded at `version`.
    pub fn put(&mut self, id: &str, seq: i64, version: i64) {
        self.remove(id);
        for (d, t) in self.digest.iter_mut().zip(terms(seq, version)) {
            *d = d.wrapping_add(t);
        }
        self.held.insert(id.to_string(), (seq, version));
    }

    pub fn remove(&mut self, id: &str) {
        if let Some((seq, version)) = self.held.remove(id) {
            for (d, t) in self.digest.iter_mut().zip(terms(seq, version)) {
                *d = d.wrapping_sub(t);
            }
        }
    }

    pub fn clear(&mut self) {
        self.held.clear();
        self.digest = [0; 4];
    }

    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// The `seq` of a held monitor.
    pub fn seq_of(&self, id: &str) -> Option<i64> {
        self.held.get(id).map(|(seq, _)| *seq)
    }

    /// Every held monitor with its `seq`.
    pub fn ids(&self) -> impl Iterator<Item = (&str, i64)> {
        self.held.iter().map(|(id, (seq, _))| (id.as_str(), *seq))
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    pub fn digest(&self) -> [i64; 4] {
        self.digest
    }

    /// Compares with the store's `(id, seq, version)` of the set.
    pub fn diff(&self, store: &[(String, i64, i64)]) -> Diff {
        let mut diff = Diff::default();
        let mut seen = HashSet::with_capacity(store.len());
        for (id, seq, version) in store {
            seen.insert(id.as_str());
            if self.held.get(id) != Some(&(*seq, *version)) {
                diff.reload.push(id.clone());
            }
        }
        diff.gone = self
            .held
            .keys()
            .filter(|id| !seen.contains(id.as_str()))
            .cloned()
            .collect();
        diff
    }

    /// One scan of `set` within `partitions` (`None`: all monitors), the share the worker
    /// holds: what to reload and drop (empty when the digests match, unless `full`).
    pub async fn scan(
        &self,
        db: &Db,
        set: Set,
        partitions: Option<&[usize]>,
        full: bool,
    ) -> Result<Diff, sqlx::Error> {
        if !full && inventory::digest(db.reader(), set, partitions).await? == self.digest {
            return Ok(Diff::default());
        }
        let rows = inventory::versions(db.reader(), set, partitions).await?;
        Ok(self.diff(&rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_puts_and_removes() {
        let mut inv = Inventory::default();
        inv.put("a", 1, 1);
        inv.put("b", 2, 5);
        inv.put("a", 1, 2);
        assert_eq!(inv.digest(), [2, 3, 7, 2 + 10]);
        inv.remove("b");
        inv.remove("nope");
        assert_eq!(inv.digest(), [1, 1, 2, 2]);
        inv.clear();
        assert_eq!(inv.digest(), [0; 4]);
    }

    #[test]
    fn diff_finds_changed_new_and_gone() {
        let mut inv = Inventory::default();
        inv.put("same", 1, 1);
        inv.put("edited", 2, 1);
        inv.put("deleted", 3, 1);
        let store = vec![
            ("same".to_string(), 1, 1),
            ("edited".to_string(), 2, 2),
            ("created".to_string(), 4, 1),
        ];
        let d = inv.diff(&store);
        assert_eq!(d.reload, ["edited", "created"]);
        assert_eq!(d.gone, ["deleted"]);
        assert_eq!(d.len(), 3);
    }
}
