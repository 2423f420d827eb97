//! Publishable keys as the embed API meets them: a presented `pk_...` resolved to its page's
//! slug, remembered for a few seconds so a widget on a busy site costs no query per request.
//! A revoked key stops at once on the node that revoked it and, through the feed's
//! `StatusPageChanged`, on every other (the page's entries are forgotten); the time limit is
//! the net for a missed notice. Unknown keys are not remembered (nothing to grow), and their
//! lookup is one indexed query on a hash.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::auth::secrets;
use crate::cx::Cx;
use crate::domain::status_pages::keys::PREFIX;
use crate::store;

/// How long a resolved key is trusted without asking the database again.
const TRUST: Duration = Duration::from_secs(10);
/// `last_used_at` moves at most this often per key.
const TOUCH_EVERY: Duration = Duration::from_secs(60);
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug, Clone)]
struct Resolved {
    key_id: String,
    page_id: String,
    slug: String,
    at: Instant,
    touched: Instant,
}

/// The resolved keys of this node.
#[derive(Debug, Clone, Default)]
pub struct KeyMemory(Arc<RwLock<HashMap<String, Resolved>>>);

impl KeyMemory {
    /// The slug of the page a presented key reads, or `None` for a malformed, unknown or
    /// revoked key.
    pub async fn resolve(&self, cx: &Cx, presented: &str) -> Result<Option<String>, sqlx::Error> {
        if !presented.starts_with(PREFIX) || presented.len() > 64 {
            return Ok(None);
        }
        let hash = secrets::hash(presented);
        let hit = self
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&hash)
            .filter(|r| r.at.elapsed() < TRUST)
            .cloned();
        if let Some(r) = hit {
            if r.touched.elapsed() >= TOUCH_EVERY {
                self.touch(cx, &hash, &r.key_id).await;
            }
            return Ok(Some(r.slug));
        }
        let reader = cx.db().reader();
        let Some(key) = store::publishable_keys::by_hash(reader, &hash).await? else {
            return Ok(None);
        };
        // The lookup was by hash; compare in constant time all the same.
        if !secrets::hashes_equal(&key.key_hash, &hash) {
            return Ok(None);
        }
        let Some(page) = store::status_pages::by_id(reader, &key.status_page_id).await? else {
            return Ok(None);
        };
        let now = Instant::now();
        {
            let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(
                hash.clone(),
                Resolved {
                    key_id: key.id.clone(),
                    page_id: page.id,
                    slug: page.slug.clone(),
                    at: now,
                    touched: now,
                },
            );
        }
        let _ =
            store::publishable_keys::touch(cx.db().writer(), &key.id, cx.clock().now_ms()).await;
        Ok(Some(page.slug))
    }

    async fn touch(&self, cx: &Cx, hash: &str, key_id: &str) {
        if let Some(r) = self
            .0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(hash)
        {
            r.touched = Instant::now();
        }
        let _ = store::publishable_keys::touch(cx.db().writer(), key_id, cx.clock().now_ms()).await;
    }

    /// Forgets a page's keys (one was revoked, or the page changed slug or was deleted).
    pub fn forget_page(&self, page_id: &str) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, r| r.page_id != page_id);
    }

    pub fn clear(&self) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
