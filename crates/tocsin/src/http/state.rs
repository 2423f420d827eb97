//! The state HTTP handlers get: the application [`Core`], the credential caches the composition
//! root built and registered on the change feed (API keys, OAuth access tokens, push tokens),
//! the billing engine,
//! plus what only the HTTP edge needs (rate limiters, the current-workspace cache, the builds
//! of `GET /monitors`). It derefs to the core, and axum's `FromRef` hands the core alone to
//! anything that needs no more.

use std::ops::Deref;
use std::sync::Arc;

use axum::extract::FromRef;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::monitor_list::MonitorLists;
use crate::app::Core;
use crate::auth::key_cache::KeyCache;
use crate::auth::oauth::TokenCache;
use crate::auth::rate_limit::Limiters;
use crate::auth::TokenCaches;
use crate::billing::Billing;
use crate::cache::TtlCache;
use crate::cluster::feed::Notice;
use crate::domain::workspaces::CurrentWorkspace;
use crate::push::tokens::PushTokens;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

struct Inner {
    core: Core,
    tokens: TokenCaches,
    push_tokens: Arc<PushTokens>,
    limits: Limiters,
    workspaces: TtlCache<String, CurrentWorkspace>,
    monitor_lists: MonitorLists,
    billing: Billing,
}

impl AppState {
    /// The edge's state over `core`, with the credential caches the composition root built
    /// and registered on the change feed.
    pub fn new(
        core: Core,
        tokens: TokenCaches,
        push_tokens: Arc<PushTokens>,
        billing: Billing,
    ) -> AppState {
        AppState(Arc::new(Inner {
            billing,
            tokens,
            push_tokens,
            limits: Limiters::new(
                &core.config().rate_limits,
                crate::push::PUSH_RATE_PER_MINUTE,
            ),
            workspaces: TtlCache::new(5_000, 100_000),
            monitor_lists: MonitorLists::default(),
            core,
        }))
    }

    pub fn core(&self) -> &Core {
        &self.0.core
    }
    /// The API keys in memory (see [`crate::auth::key_cache`]).
    pub fn keys(&self) -> &KeyCache {
        &self.0.tokens.keys
    }
    /// OAuth access tokens in memory (see [`crate::auth::oauth::cache`]).
    pub fn oauth_tokens(&self) -> &TokenCache {
        &self.0.tokens.oauth_tokens
    }
    /// Both bearer-token caches, as [`crate::auth::caller::authenticate_key`] takes them.
    pub fn token_caches(&self) -> &TokenCaches {
        &self.0.tokens
    }
    /// The push monitors' tokens in memory (see [`crate::push::tokens`]).
    pub fn push_tokens(&self) -> &PushTokens {
        &self.0.push_tokens
    }
    /// The billing engine (see [`crate::billing`]).
    pub fn billing(&self) -> &Billing {
        &self.0.billing
    }
    pub fn limits(&self) -> &Limiters {
        &self.0.limits
    }
    /// The current-workspace view, cached for the hot read path.
    pub fn workspace_cache(&self) -> &TtlCache<String, CurrentWorkspace> {
        &self.0.workspaces
    }
    /// The cached parts of `GET /monitors` and the cap on concurrent full lists.
    pub fn monitor_lists(&self) -> &MonitorLists {
        &self.0.monitor_lists
    }

    /// Follows other nodes' writes until `cancel`: each of their notices (and every `Resync`)
    /// counts as a write for the list builds, and a membership change forgets the workspace's
    /// cached view.
    pub async fn follow_feed(self, cancel: CancellationToken) {
        let mut feed = self.feed().subscribe_all();
        loop {
            let delivery = tokio::select! {
                _ = cancel.cancelled() => return,
                d = feed.recv() => d,
            };
            match delivery {
                Ok(d) if d.remote => {
                    self.monitor_lists().note_remote_write();
                    if let Notice::MembershipChanged { workspace_id } = &d.notice {
                        self.workspace_cache().forget(workspace_id);
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => self.monitor_lists().note_remote_write(),
                Err(RecvError::Closed) => return,
            }
        }
    }
}

impl Deref for AppState {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.0.core
    }
}

impl FromRef<AppState> for Core {
    fn from_ref(state: &AppState) -> Core {
        state.0.core.clone()
    }
}
