//! Keeps the process caches in step with other nodes: one task applies every notice from
//! another node (this node's own were applied by `Core::announce` before it answered) to the
//! push-token map ([`crate::push::tokens::PushTokens::apply`]) and the
//! API-key cache ([`crate::auth::key_cache::KeyCache::apply`]). A lagged subscription counts
//! as a [`Notice::Resync`]: both caches start over (the key cache also keeps its time limit as
//! a further net). After a `Resync` the push tokens are loaded again in the background of this
//! task, so pushes do not all fall back to the database at once.

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::feed::Notice;
use crate::app::Core;

/// Applies notices until `cancel`.
pub async fn run(core: Core, cancel: CancellationToken) {
    let mut feed = core.feed().subscribe_all();
    loop {
        let notice = tokio::select! {
            _ = cancel.cancelled() => return,
            d = feed.recv() => match d {
                // This node's own notices were applied by `Core::announce` before it answered.
                Ok(d) if !d.remote => continue,
                Ok(d) => d.notice,
                Err(RecvError::Lagged(_)) => Notice::Resync,
                Err(RecvError::Closed) => return,
            },
        };
        core.keys().apply(&notice);
        core.oauth_tokens().apply(&notice);
        core.push_tokens().apply(&notice);
        if notice == Notice::Resync {
            if let Err(e) = core.push_tokens().preload(core.db()).await {
                tracing::warn!(error = %e, "could not reload push tokens");
            }
        }
    }
}
