//! Putting a notification in the outbox: the Standard Webhooks body every provider renders
//! from, stored with the first attempt inside the caller's transaction. The delivery worker
//! (`super::deliver`) sends it.

use serde::Serialize;
use serde_json::Value;

use super::event::AlertEvent;
use crate::clock::rfc3339;
use crate::ids::{new_id, AlertId};
use crate::store::deliveries::{self, NewDelivery};

/// What to notify one channel of.
#[derive(Debug, Clone)]
pub struct Notification<'a> {
    pub workspace_id: &'a str,
    pub channel_id: &'a str,
    pub alert_id: Option<AlertId<'a>>,
    pub event: AlertEvent,
    /// The body's `data` (the alert and the monitor, or what the event is about).
    pub data: &'a Value,
    /// When the event happened (ms): the body's `timestamp`, and when the first attempt is due.
    pub at_ms: i64,
}

/// The body of every notification: `{"type", "timestamp", "data"}` (Standard Webhooks).
/// Serialized from a borrow: a root's `data` may list ten thousand dependents, and its page
/// waits for this.
#[derive(Serialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    timestamp: String,
    data: &'a Value,
}

/// [`Envelope`] as stored: its JSON text.
pub fn envelope(event: AlertEvent, at_ms: i64, data: &Value) -> String {
    let body = Envelope {
        kind: event.as_str(),
        timestamp: rfc3339(at_ms),
        data,
    };
    // A `Value` with string keys always serializes.
    serde_json::to_string(&body).unwrap_or_default()
}

/// Enqueues `n` in the caller's transaction; returns the delivery's id. The message id
/// (`msg_<uuid>`) is the webhook-id of every attempt.
pub async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    n: &Notification<'_>,
) -> Result<String, sqlx::Error> {
    let message_id = format!("msg_{}", new_id());
    let payload = envelope(n.event, n.at_ms, n.data);
    deliveries::enqueue(
        conn,
        &NewDelivery {
            workspace_id: n.workspace_id,
            channel_id: Some(n.channel_id),
            subscriber_id: None,
            alert_id: n.alert_id.map(|a| a.0),
            event: n.event.as_str(),
            message_id: &message_id,
            payload: &payload,
            now: n.at_ms,
        },
    )
    .await
}
