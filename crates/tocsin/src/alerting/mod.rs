//! Alerting: turning monitor events into notifications that reach people.
//!
//! - `event.rs` — the notification event types (`alert.opened` ...).
//! - `outbox.rs` — enqueueing a notification (its body, its first attempt) in the caller's
//!   transaction.
//! - `alerts.rs` — alerts from monitor events (open on DOWN, resolve on recovery) and whom
//!   each notification goes to; called by `monitoring::transition` in its transaction.
//! - `escalation.rs` — the durable escalation timer and its worker (scheduling node only).
//! - `ack_link.rs` — the signed, expiring one-click acknowledge link.

pub mod ack_link;
pub mod alerts;
pub mod escalation;
pub mod event;
pub mod outbox;
