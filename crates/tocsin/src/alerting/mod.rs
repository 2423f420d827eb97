//! Alerting: turning monitor events into notifications that reach people.
//!
//! - `event.rs` — the notification event types (`alert.opened` ...).
//! - `outbox.rs` — enqueueing a notification (its body, its first attempt) in the caller's
//!   transaction.
//! - `channels/` — the channel types: one provider file per type behind one trait (config,
//!   secrets, the provider's message format), and the one outbound HTTP client.
//! - `deliver.rs` — the delivery worker: claims due attempts, sends, records, retries.

pub mod channels;
pub mod deliver;
pub mod event;
pub mod outbox;
