//! Telling people about incidents: `incident.created`, `incident.updated` and
//! `incident.resolved` go to the workspace's notification channels whose `events` list them
//! (enabled ones; `data` is `{"statusPage", "incident", "update"}`, the update null when the
//! write added none), and the news of published incidents goes to the page's subscribers by
//! email (`super::subscriber_mail`). Called by `domain::incidents` inside the transaction that
//! writes the incident, so the notifications exist exactly when the write does; which events a
//! write makes is decided there.

use serde_json::Value;

use super::event::AlertEvent;
use super::outbox::{self, Notification};
use super::subscriber_mail;
use crate::store::monitor_channels as routing;

/// What one incident write tells.
#[derive(Debug, Clone)]
pub struct IncidentNews<'a> {
    pub workspace_id: &'a str,
    pub page_id: &'a str,
    /// The channels' event (every incident write has one).
    pub webhook: AlertEvent,
    /// The subscribers' event, when the write is news for the public.
    pub email: Option<AlertEvent>,
    /// The incident's components (subscribers who chose components hear of these only).
    pub affected: &'a [String],
    pub data: Value,
    pub now: i64,
}

/// Enqueues the webhook events and subscriber emails of `news` in the caller's transaction;
/// returns how many deliveries it queued (the caller wakes the worker after its commit).
pub async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    news: &IncidentNews<'_>,
) -> Result<usize, sqlx::Error> {
    let mut n = 0;
    let event = news.webhook.as_str();
    for t in routing::workspace_targets(&mut *conn, news.workspace_id).await? {
        if !t.takes(event) {
            continue;
        }
        outbox::enqueue(
            conn,
            &Notification {
                workspace_id: news.workspace_id,
                channel_id: &t.id,
                alert_id: None,
                event: news.webhook,
                data: news.data.clone(),
                at_ms: news.now,
            },
        )
        .await?;
        n += 1;
    }
    if let Some(email) = news.email {
        n += subscriber_mail::enqueue_incident(
            conn,
            news.workspace_id,
            news.page_id,
            email,
            news.affected,
            &news.data,
            news.now,
        )
        .await?;
    }
    Ok(n)
}
