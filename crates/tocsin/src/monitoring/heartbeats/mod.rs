//! Heartbeats: one stored check result each, and the group-commit writer every producer
//! (scheduler, probes, push ingestion, on-demand checks) hands results to.
//!
//! # Storage
//! `heartbeats` is a narrow, clustered table keyed `(monitor_seq, ts, region_id)`: status as a
//! small integer (UP = 0), latency in 0.1 ms units, the HTTP status code, the phase timings
//! packed into a varint blob ([`pack_timings`]), the retry count, and an optional correlation
//! id (on-demand checks). An UP heartbeat measures under 48 bytes on disk on SQLite (the
//! test suite measures and prints the figure).
//!
//! The heavy parts go to `heartbeat_details`, written only when the result is worth them:
//! - every heartbeat whose status is not UP (DOWN, DEGRADED, CHANGED, MAINTENANCE, PENDING)
//!   keeps its message, response headers, response body (capped at 64 KiB), resolved IP and
//!   assertion results;
//! - an UP heartbeat keeps them only when it carries a message (push check-ins show theirs)
//!   or a correlation id (an on-demand check, whose caller wants to see everything).
//!
//! Any other UP heartbeat keeps status code, timings, latency and retry count; its
//! `message`, `responseHeaders`, `responseBody`, `resolvedIP` and `assertionResults` read as
//! null. (An UP result never has a failed assertion: a failed `warn` assertion makes it
//! DEGRADED, a failed `fail` one DOWN; so what is dropped is "all assertions passed".)
//!
//! # Identity
//! A heartbeat's API id encodes its key and nothing else: a UUIDv7 whose 48-bit timestamp is
//! the heartbeat's `ts`, with the region id in the 12 `rand_a` bits and the monitor seq in the
//! 62 `rand_b` bits ([`encode_id`]). Ids therefore sort by time like every other id, and need no
//! column. Two results for the same monitor, region and millisecond would share a key: the
//! writer moves the later one forward by a millisecond instead of losing it.
//!
//! # Writing
//! [`HeartbeatWriter`] is cheap to clone and lives in the application state. A single task
//! takes everything queued (up to [`WriterOptions::max_batch`] items; whatever arrived while
//! the previous transaction was committing), writes it in one transaction (the counters of the
//! scheduled cycles that carry them, multi-row inserts of the heartbeats and their details, the
//! hourly rollup rows of [`super::rollup`], and for push items their idempotency claims,
//! monitor state and events via [`crate::monitoring::push_record`]; each table one statement per batch,
//! see [`crate::store::batch`]),
//! commits, and only then answers each waiter: when [`HeartbeatWriter::submit`] resolves, the
//! heartbeat is durable and readable. A submission therefore waits at most for the commit in
//! progress plus its own, well under the 10 ms the push contract allows at the benchmarked
//! rates (see BENCHMARKS.md). If a batch fails, its heartbeats are retried one by one so a single
//! bad result cannot sink the others. [`HeartbeatWriter::shutdown`] writes whatever is queued
//! and stops the task; the server calls it before closing the database.
//!
//! # Modules
//! `submission` (what producers hand over and get back), `handle` (the writer's handle,
//! options, counters and errors), `task` (batching, validation, answers), `commit` (the one
//! transaction), `push_step` (what a batch's pushes mean for their monitors), `fan_out` (the
//! live streams' share), `id` (the id codec), `timings` and `varint` (the timings blob).

mod commit;
mod fan_out;
mod handle;
mod id;
mod push_step;
mod submission;
mod task;
mod timings;
mod varint;

pub use handle::{HeartbeatWriter, WriteError, WriterCounts, WriterOptions, WriterStats};
pub use id::{decode_id, encode_id};
pub use submission::{HeartbeatRef, NewHeartbeat, MAX_BODY_BYTES, MAX_MESSAGE_BYTES, MAX_NAME_LEN};
pub use timings::{pack_timings, unpack_timings};
