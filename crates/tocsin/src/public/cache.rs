//! The rendered cache of public pages: every public answer about a page (summary JSON, HTML,
//! feeds, badges) comes from one [`Rendered`] built from one snapshot, shared by every request
//! for it until something it shows changes. A page read by thousands of people at once during
//! an outage costs the database one cheap digest query every half second.
//!
//! Freshness: an entry is served as it is for [`FRESH`]; after that the next request checks the
//! page's digest (`store::status_pages::digest`: the page row's version, its monitors' status
//! changes, its incidents and postmortems) and rebuilds only when it moved, or when the entry
//! is older than [`MAX_AGE`] (uptime figures drift slowly). One request per page does this
//! while the others keep being served the previous entry, so a change shows within about
//! `FRESH` plus one build, on every node: the digest reads the shared database. Writes made
//! through the API also announce `Notice::StatusPageChanged`, which drops the page's entry at
//! once on every node ([`PageCache::forget`]). An entry is replaced whole, never edited, so a
//! reader sees the old page or the new one and never a mix.
//!
//! Time alone changes a page too: a SCHEDULED incident shows from its `scheduledFor`, a
//! maintenance window starts and ends. A snapshot knows the next such moment
//! (`valid_until_ms`, on the server clock) and an entry is not served past it, so these show
//! on their time without waiting for [`MAX_AGE`].
//!
//! Private pages are cached here like public ones (one copy per page, built for whoever may
//! read it); the HTTP edge checks the page's `gate` before serving any of it.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::snapshot::{self, Snapshot};
use super::{feed, html};
use crate::cx::Cx;
use crate::store;

/// How long an entry is served before its digest is checked again.
pub const FRESH: Duration = Duration::from_millis(500);
/// How long an entry lives at most (uptime figures and bars move without a digest change).
pub const MAX_AGE: Duration = Duration::from_secs(60);
/// Entries kept at most; past it, the not-found ones are dropped first (unknown slugs cost
/// memory only until then).
const MAX_ENTRIES: usize = 10_000;

/// A body with its validators.
#[derive(Debug, Clone)]
pub struct Body {
    pub bytes: Bytes,
    /// The gzip-compressed bytes, for clients that accept them.
    pub gzip: Bytes,
    /// A strong entity tag (quoted).
    pub etag: String,
}

impl Body {
    fn of(bytes: Vec<u8>) -> Body {
        let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&bytes))[..32]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let gzip = gz
            .write_all(&bytes)
            .and_then(|_| gz.finish())
            .unwrap_or_default();
        Body {
            bytes: Bytes::from(bytes),
            gzip: Bytes::from(gzip),
            etag,
        }
    }
}

/// Every public rendering of one page at one moment.
#[derive(Debug)]
pub struct Rendered {
    pub snapshot: Snapshot,
    pub summary: Body,
    pub html: Body,
    pub rss: Body,
    pub atom: Body,
    /// The HTML page's Content-Security-Policy.
    pub csp: String,
    /// `Last-Modified`, as an HTTP date.
    pub last_modified: String,
    /// The SVG badges drawn from this render.
    pub badges: super::badge::Memo,
}

impl Rendered {
    fn render(snapshot: Snapshot) -> Result<Rendered, serde_json::Error> {
        let summary = Body::of(serde_json::to_vec(&snapshot.summary)?);
        let page = html::page(&snapshot);
        let last_modified = httpdate::fmt_http_date(
            std::time::UNIX_EPOCH + Duration::from_millis(snapshot.updated_at_ms.max(0) as u64),
        );
        Ok(Rendered {
            summary,
            html: Body::of(page.body.into_bytes()),
            rss: Body::of(feed::rss(&snapshot).into_bytes()),
            atom: Body::of(feed::atom(&snapshot).into_bytes()),
            csp: page.csp,
            last_modified,
            badges: super::badge::Memo::default(),
            snapshot,
        })
    }
}

/// Whether an entry's page has changed by time alone (`Snapshot::valid_until_ms` passed on
/// the server clock): a scheduled incident's time came, a maintenance window began or ended.
fn lapsed(value: &Option<Arc<Rendered>>, now_ms: i64) -> bool {
    value
        .as_ref()
        .and_then(|v| v.snapshot.valid_until_ms)
        .is_some_and(|t| t <= now_ms)
}

struct Entry {
    /// `None`: no published page has this slug.
    value: Option<Arc<Rendered>>,
    digest: String,
    checked: Instant,
    built: Instant,
    /// Held by the one request that revalidates the entry.
    gate: Arc<tokio::sync::Mutex<()>>,
}

/// The cache, held by the application core, with the resolved publishable keys (dropped by
/// the same notices). Cheap to clone.
#[derive(Clone, Default)]
pub struct PageCache {
    pages: Arc<RwLock<HashMap<String, Entry>>>,
    keys: super::keys::KeyMemory,
}

impl std::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageCache").finish_non_exhaustive()
    }
}

impl PageCache {
    /// The rendered page published at `slug`, or `None` when no published page has it.
    pub async fn get(&self, cx: &Cx, slug: &str) -> Result<Option<Arc<Rendered>>, sqlx::Error> {
        let now_ms = cx.clock().now_ms();
        let gate = {
            let map = self.pages.read().unwrap_or_else(|p| p.into_inner());
            match map.get(slug) {
                Some(e) if e.checked.elapsed() < FRESH && !lapsed(&e.value, now_ms) => {
                    return Ok(e.value.clone())
                }
                Some(e) => Some((e.gate.clone(), e.value.clone())),
                None => None,
            }
        };
        let gate = match gate {
            Some((gate, stale)) => match gate.clone().try_lock_owned() {
                Ok(held) => (gate, held),
                // Someone is revalidating: the previous entry is at most one build old.
                Err(_) if stale.is_some() => return Ok(stale),
                Err(_) => {
                    let held = gate.clone().lock_owned().await;
                    (gate, held)
                }
            },
            None => {
                let gate = Arc::new(tokio::sync::Mutex::new(()));
                let held = gate.clone().lock_owned().await;
                (gate, held)
            }
        };
        let (gate, _held) = gate;
        // Another request may have refreshed it while this one waited.
        if let Some(e) = self
            .pages
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(slug)
        {
            if e.checked.elapsed() < FRESH
                && Arc::ptr_eq(&e.gate, &gate)
                && !lapsed(&e.value, cx.clock().now_ms())
            {
                return Ok(e.value.clone());
            }
        }
        self.refresh(cx, slug, gate).await
    }

    async fn refresh(
        &self,
        cx: &Cx,
        slug: &str,
        gate: Arc<tokio::sync::Mutex<()>>,
    ) -> Result<Option<Arc<Rendered>>, sqlx::Error> {
        let reader = cx.db().reader();
        let page = store::status_pages::by_slug(reader, slug)
            .await?
            .filter(|p| p.published != 0);
        let Some(page) = page else {
            self.put(slug, None, String::new(), Instant::now(), gate);
            return Ok(None);
        };
        let digest = store::status_pages::digest(reader, &page.id).await?;
        {
            let mut map = self.pages.write().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = map.get_mut(slug) {
                let same = e
                    .value
                    .as_ref()
                    .is_some_and(|v| v.snapshot.page_id == page.id);
                if same
                    && e.digest == digest
                    && e.built.elapsed() < MAX_AGE
                    && !lapsed(&e.value, cx.clock().now_ms())
                {
                    e.checked = Instant::now();
                    return Ok(e.value.clone());
                }
            }
        }
        let snapshot = snapshot::build(cx, &page).await?;
        let rendered =
            Arc::new(Rendered::render(snapshot).map_err(|e| sqlx::Error::Decode(Box::new(e)))?);
        self.put(slug, Some(rendered.clone()), digest, Instant::now(), gate);
        Ok(Some(rendered))
    }

    fn put(
        &self,
        slug: &str,
        value: Option<Arc<Rendered>>,
        digest: String,
        now: Instant,
        gate: Arc<tokio::sync::Mutex<()>>,
    ) {
        let mut map = self.pages.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_ENTRIES && !map.contains_key(slug) {
            map.retain(|_, e| e.value.is_some());
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
        }
        map.insert(
            slug.to_string(),
            Entry {
                value,
                digest,
                checked: now,
                built: now,
                gate,
            },
        );
    }

    /// The resolved publishable keys.
    pub fn keys(&self) -> &super::keys::KeyMemory {
        &self.keys
    }

    /// Drops what is held of a page (it changed). Entries for slugs with no page are dropped
    /// too: the change may be a page taking that slug.
    pub fn forget(&self, page_id: &str) {
        self.keys.forget_page(page_id);
        let mut map = self.pages.write().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, e| {
            e.value
                .as_ref()
                .is_some_and(|v| v.snapshot.page_id != page_id)
        });
    }

    /// Drops everything (notices may have been missed).
    pub fn clear(&self) {
        self.keys.clear();
        self.pages
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Applies a notice (registered on the feed as an applier: this node's own writes before
    /// their caller is answered, other nodes' through [`crate::cluster::feed::run_appliers`]).
    pub fn apply(&self, notice: &crate::cluster::feed::Notice) {
        use crate::cluster::feed::Notice;
        match notice {
            Notice::StatusPageChanged { page_id } => self.forget(page_id),
            Notice::Resync => self.clear(),
            _ => {}
        }
    }
}
