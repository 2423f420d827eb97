//! The monitor change feed: every API write that can change what or when a monitor checks
//! (create, update, delete, pause, resume, baseline reset) publishes a [`MonitorChange`] after
//! its transaction commits, so the scheduler and the push watcher reload that one monitor at
//! once. The feed itself, which also carries the other notices and crosses nodes on
//! PostgreSQL, lives in [`crate::cluster::feed`]; this module keeps its monitor-facing names.

pub use crate::cluster::feed::{ChangeKind, Feed as Changes, MonitorChange, Notice};
