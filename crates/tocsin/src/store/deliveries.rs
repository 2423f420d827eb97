//! Deliveries: one row per attempt to send one notification to one channel. A `PENDING` row
//! is the outbox (due at `due_at`, claimed by a worker until `claimed_until`); the others are
//! the history the API pages through. See the migration `0009_alerting.sql` for the lifecycle.

use sqlx::{AnyConnection, FromRow};

use crate::ids::new_id;

/// One stored attempt.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub workspace_id: String,
    pub channel_id: String,
    pub alert_id: Option<String>,
    pub event: String,
    pub message_id: String,
    pub payload: String,
    pub status: String,
    pub attempt: i64,
    pub due_at: i64,
    pub claimed_until: Option<i64>,
    pub response_status: Option<i64>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub payload_digest: Option<String>,
    pub created_at: i64,
    pub attempted_at: Option<i64>,
    pub delivered_at: Option<i64>,
}

pub const COLUMNS: &str = "id, workspace_id, channel_id, alert_id, event, message_id, payload, \
     status, attempt, due_at, claimed_until, response_status, error, latency_ms, payload_digest, \
     created_at, attempted_at, delivered_at";

/// The statuses of an attempt.
pub const PENDING: &str = "PENDING";
pub const DELIVERED: &str = "DELIVERED";
pub const RETRYING: &str = "RETRYING";
pub const FAILED: &str = "FAILED";

/// A notification to send: its first attempt, due at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    pub workspace_id: &'a str,
    pub channel_id: &'a str,
    pub alert_id: Option<&'a str>,
    pub event: &'a str,
    /// Stable across the attempts of one notification.
    pub message_id: &'a str,
    /// The Standard Webhooks body, serialized.
    pub payload: &'a str,
    pub now: i64,
}

/// Enqueues the first attempt of a notification (call inside the transaction that decided
/// to send it, so the notification exists exactly when its cause does). Returns its id.
pub async fn enqueue(conn: &mut AnyConnection, d: &NewDelivery<'_>) -> Result<String, sqlx::Error> {
    let id = new_id();
    sqlx::query(
        "INSERT INTO deliveries (id, workspace_id, channel_id, alert_id, event, message_id, \
         payload, status, attempt, due_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9)",
    )
    .bind(&id)
    .bind(d.workspace_id)
    .bind(d.channel_id)
    .bind(d.alert_id)
    .bind(d.event)
    .bind(d.message_id)
    .bind(d.payload)
    .bind(PENDING)
    .bind(d.now)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}
