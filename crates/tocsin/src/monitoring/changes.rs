//! The monitor change feed. Every API write that can change what or when a monitor checks
//! (create, update, delete, pause, resume, baseline reset) publishes a [`MonitorChange`]
//! after its transaction commits, so the scheduler can reload that one monitor at once
//! instead of waiting for a periodic rescan or a restart.
//!
//! The feed is a bounded `tokio::sync::broadcast` channel and is best-effort by design: a
//! subscriber that falls behind gets `RecvError::Lagged` and must then reload every monitor
//! from the store (the store, not the feed, is the source of truth). Publishing never blocks
//! and never fails a request, even with no subscriber. Changes are per process: on PostgreSQL
//! with several API nodes, a scheduler on another node learns of them by its own rescan.

use tokio::sync::broadcast;

/// How many changes a slow subscriber may fall behind before it must reload everything.
const CAPACITY: usize = 1024;

/// What happened to a monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Created,
    /// Settings changed (including a DNS_DIFF baseline reset): reload the row.
    Updated,
    Deleted,
    Paused,
    Resumed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorChange {
    pub monitor_id: String,
    pub kind: ChangeKind,
}

/// The sending side, held by the application state.
#[derive(Debug, Clone)]
pub struct Changes {
    tx: broadcast::Sender<MonitorChange>,
}

impl Default for Changes {
    fn default() -> Self {
        let (tx, _) = broadcast::channel(CAPACITY);
        Changes { tx }
    }
}

impl Changes {
    /// Announces a committed change. With no subscriber the change is simply dropped.
    pub fn publish(&self, monitor_id: &str, kind: ChangeKind) {
        let _ = self.tx.send(MonitorChange {
            monitor_id: monitor_id.to_string(),
            kind,
        });
    }

    /// A receiver of every change published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<MonitorChange> {
        self.tx.subscribe()
    }
}
