//! A small time-bounded cache for hot reads that tolerate a few seconds of staleness across
//! nodes (the current workspace). Writers on this node invalidate at once.

use std::hash::Hash;
use std::sync::Arc;

use dashmap::DashMap;

#[derive(Clone)]
pub struct TtlCache<K: Eq + Hash, V> {
    map: Arc<DashMap<K, (V, i64)>>,
    ttl_ms: i64,
    max: usize,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    pub fn new(ttl_ms: i64, max: usize) -> Self {
        TtlCache {
            map: Arc::new(DashMap::new()),
            ttl_ms,
            max,
        }
    }

    pub fn get(&self, k: &K, now: i64) -> Option<V> {
        self.map
            .get(k)
            .filter(|e| now - e.1 < self.ttl_ms)
            .map(|e| e.0.clone())
    }

    pub fn put(&self, k: K, v: V, now: i64) {
        if self.map.len() >= self.max {
            self.map.clear();
        }
        self.map.insert(k, (v, now));
    }

    pub fn forget(&self, k: &K) {
        self.map.remove(k);
    }
}
