//! Several nodes on one database. Tocsin nodes that share a PostgreSQL database share all
//! durable state through it; what each process holds in memory (the schedule, push deadlines,
//! the push-token map, the API-key cache, the monitor-list builds) follows other nodes' writes
//! through the change feed, and the work that must happen once per cluster runs on the node
//! holding a lease.
//!
//! - [`feed`]: notices of committed writes, delivered to subscribers on every node
//!   (`pg_notify` between nodes, a broadcast channel within one).
//! - [`listen`]: the node's one `LISTEN` connection, shared by the feed, the probe relay and
//!   the live relay.
//! - [`inventory`]: the reconciliation scan under the feed, for the scheduler and the push
//!   watcher.
//! - [`lease`]: the scheduler role, held by one node at a time: the work that runs once
//!   per cluster (escalation, maintenance, announcements, flapping, region notices); its
//!   timing discipline is also the one the monitors' partitions
//!   (`monitoring::partitions`, owned by the scheduling engines) are held by.
//!
//! The caches that follow the feed are registered on it as appliers by the composition root
//! ([`feed::Applier`]).
//!
//! On SQLite there is one node: the feed stays in process and the role is always held.

pub mod feed;
pub mod inventory;
pub mod lease;
pub mod listen;

/// A fresh id for this process, telling its notices and its lease apart from other nodes'.
pub fn new_node_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
