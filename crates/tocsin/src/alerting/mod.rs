//! Alerting: turning monitor events into notifications that reach people.
//!
//! - `event.rs` — the notification event types (`alert.opened` ...).
//! - `outbox.rs` — enqueueing a notification (its body, its first attempt) in the caller's
//!   transaction.
//! - `alerts.rs` — alerts from monitor events (open on DOWN, resolve on recovery) and whom
//!   each notification goes to; called by `monitoring::transition` in its transaction.
//! - `root_cause.rs` — monitor dependencies: alerts suppressed under a dependency's outage,
//!   pages held for the dependencies' detection time, folded under a root, released when it
//!   resolves.
//! - `escalation.rs` — the durable escalation timer and its worker (scheduling node only).
//! - `ack_link.rs` — the signed, expiring one-click acknowledge link.
//! - `channels/` — the channel types: one provider file per type behind one trait (config,
//!   secrets, the provider's message format), and the one outbound HTTP client.
//! - `deliver.rs` — the delivery worker: claims due attempts, sends, records, retries.
//! - `incident_view.rs` — the API record of an incident and its updates, the one mapping the
//!   REST answers, the public pages and the notifications' `data` share.
//! - `incident_notify.rs` — `incident.*` events to channels and incident news to status page
//!   subscribers, enqueued with the incident write (the API's and the automatic ones alike).
//! - `subscriber_mail.rs` — subscriber email (confirmation, incident news, scheduled
//!   maintenance) through the same outbox, and its signed verify and unsubscribe links.
//! - `maintenance_notice.rs` — announcing a maintenance window to the subscribers of the pages
//!   showing its monitor, once per schedule, with the window write or by a worker on the
//!   scheduling node when it comes within the public pages' horizon.
//! - `auto_incidents.rs` — status page incidents opened and resolved with an alert, for pages
//!   that ask for them.

pub mod ack_link;
pub mod alerts;
pub mod auto_incidents;
pub mod channels;
pub mod deliver;
pub mod escalation;
pub mod event;
pub mod incident_notify;
pub mod incident_view;
pub mod maintenance_notice;
pub mod outbox;
pub mod root_cause;
pub mod subscriber_mail;

/// Runs `job` every `tick` while this node holds the scheduler role, until `cancel`: the
/// alerting timers (escalation steps, maintenance announcements) fire on one node only, and
/// another takes over with the lease. A failed pass is logged (`what` failed) and the next tick
/// tries again.
pub async fn on_the_scheduling_node<F, Fut, T, E>(
    cx: crate::cx::Cx,
    role: crate::cluster::lease::Role,
    cancel: tokio_util::sync::CancellationToken,
    tick: std::time::Duration,
    what: &'static str,
    job: F,
) where
    F: Fn(crate::cx::Cx, i64) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let mut ticks = tokio::time::interval(tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if !role.is_held() {
            continue;
        }
        let now = cx.clock().now_ms();
        if let Err(e) = job(cx.clone(), now).await {
            tracing::warn!(error = %e, "could not {what}");
        }
    }
}
