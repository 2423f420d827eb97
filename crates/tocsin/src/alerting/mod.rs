//! Alerting: turning monitor events into notifications that reach people.
//!
//! - `event.rs` — the notification event types (`alert.opened` ...).
//! - `outbox.rs` — enqueueing a notification (its body, its first attempt) in the caller's
//!   transaction.

pub mod event;
pub mod outbox;
