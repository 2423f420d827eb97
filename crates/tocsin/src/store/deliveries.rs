//! Deliveries: one row per attempt to send one notification to one channel. A `PENDING` row
//! is the outbox (due at `due_at`, claimed by a worker until `claimed_until`); the others are
//! the history the API pages through. See the migration `0009_alerting.sql` for the lifecycle.
//! A delivery goes to a notification channel or, since `0013_subscribers.sql`, to a status
//! page's subscriber (an email): exactly one of `channel_id` and `subscriber_id` is set.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sqlx::{AnyConnection, FromRow};

use super::Exec;
use crate::ids::new_id;

/// One stored attempt.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub workspace_id: String,
    /// The channel it goes to; `None` for a subscriber's email.
    pub channel_id: Option<String>,
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
    /// The status page subscriber it goes to; `None` for a channel's notification.
    pub subscriber_id: Option<String>,
}

pub const COLUMNS: &str = "id, workspace_id, channel_id, alert_id, event, message_id, payload, \
     status, attempt, due_at, claimed_until, response_status, error, latency_ms, payload_digest, \
     created_at, attempted_at, delivered_at, subscriber_id";

/// The statuses of an attempt.
pub const PENDING: &str = "PENDING";
pub const DELIVERED: &str = "DELIVERED";
pub const RETRYING: &str = "RETRYING";
pub const FAILED: &str = "FAILED";

/// Where an attempt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryStatus {
    /// Due (or being sent).
    Pending,
    Delivered,
    /// This attempt failed; the next one is queued.
    Retrying,
    /// This attempt failed and no other follows.
    Failed,
}

impl DeliveryStatus {
    pub const ALL: [DeliveryStatus; 4] = [
        DeliveryStatus::Pending,
        DeliveryStatus::Delivered,
        DeliveryStatus::Retrying,
        DeliveryStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => PENDING,
            DeliveryStatus::Delivered => DELIVERED,
            DeliveryStatus::Retrying => RETRYING,
            DeliveryStatus::Failed => FAILED,
        }
    }
}

super::corrupt::stored_text!(DeliveryStatus, "delivery status");

/// A notification to send: its first attempt, due at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    pub workspace_id: &'a str,
    /// Exactly one of `channel_id` and `subscriber_id`.
    pub channel_id: Option<&'a str>,
    pub subscriber_id: Option<&'a str>,
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
         payload, status, attempt, due_at, created_at, subscriber_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9, $10)",
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
    .bind(d.subscriber_id)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// Which attempts a history page shows: one channel's or one alert's, optionally by status
/// and event.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub channel_id: Option<String>,
    pub alert_id: Option<String>,
    pub status: Option<String>,
    pub event: Option<String>,
}

/// One page of attempts, newest first, before `before` ("" for the first page).
pub async fn page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    filter: &DeliveryFilter,
    before: &str,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    let mut sql = format!("SELECT {COLUMNS} FROM deliveries WHERE workspace_id = $1");
    let mut values: Vec<&str> = Vec::new();
    for (column, value) in [
        ("channel_id", filter.channel_id.as_deref()),
        ("alert_id", filter.alert_id.as_deref()),
        ("status", filter.status.as_deref()),
        ("event", filter.event.as_deref()),
        ("id <", Some(before).filter(|b| !b.is_empty())),
    ] {
        if let Some(v) = value {
            values.push(v);
            let op = if column.ends_with('<') { "" } else { " =" };
            sql.push_str(&format!(" AND {column}{op} ${}", values.len() + 1));
        }
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", values.len() + 2));
    let mut q = sqlx::query_as::<_, DeliveryRow>(&sql).bind(ws);
    for v in values {
        q = q.bind(v);
    }
    q.bind(limit).fetch_all(e).await
}

/// One attempt of the workspace.
pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<DeliveryRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM deliveries WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// Claims up to `limit` due attempts until `claimed_until` (ms): they are this worker's to
/// send until then; one whose claim lapses unrecorded (a crash) is claimed again. On
/// PostgreSQL several nodes claim side by side (`FOR UPDATE SKIP LOCKED`: a row another node
/// is claiming is skipped, not waited for); on SQLite the single writer serialises claims.
pub async fn claim(
    conn: &mut AnyConnection,
    now: i64,
    claimed_until: i64,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    let lock = match super::backend_of(conn) {
        super::Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        super::Backend::Sqlite => "",
    };
    let sql = format!(
        "UPDATE deliveries SET claimed_until = $1 WHERE id IN (\
         SELECT id FROM deliveries WHERE status = $2 AND due_at <= $3 \
         AND (claimed_until IS NULL OR claimed_until <= $3) \
         ORDER BY due_at, id LIMIT $4{lock}) RETURNING {COLUMNS}"
    );
    sqlx::query_as(&sql)
        .bind(claimed_until)
        .bind(PENDING)
        .bind(now)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await
}

/// The outcome of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted {
    /// DELIVERED, RETRYING or FAILED.
    pub status: DeliveryStatus,
    pub response_status: Option<i64>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub payload_digest: Option<String>,
    pub attempted_at: i64,
    pub delivered_at: Option<i64>,
}

/// Records a claimed attempt's outcome. Returns false when the attempt is no longer pending
/// (its claim lapsed and another worker recorded it first): the caller then adds nothing.
pub async fn record(
    conn: &mut AnyConnection,
    id: &str,
    a: &Attempted,
) -> Result<bool, sqlx::Error> {
    let rows = sqlx::query(
        "UPDATE deliveries SET status = $1, response_status = $2, error = $3, latency_ms = $4, \
         payload_digest = $5, attempted_at = $6, delivered_at = $7, claimed_until = NULL \
         WHERE id = $8 AND status = $9",
    )
    .bind(a.status.as_str())
    .bind(a.response_status)
    .bind(&a.error)
    .bind(a.latency_ms)
    .bind(&a.payload_digest)
    .bind(a.attempted_at)
    .bind(a.delivered_at)
    .bind(id)
    .bind(PENDING)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(rows == 1)
}

/// Inserts the attempt after `prev`, due at `due_at`, with the same message id and body.
pub async fn next_attempt(
    conn: &mut AnyConnection,
    prev: &DeliveryRow,
    due_at: i64,
    now: i64,
) -> Result<String, sqlx::Error> {
    let id = new_id();
    sqlx::query(
        "INSERT INTO deliveries (id, workspace_id, channel_id, alert_id, event, message_id, \
         payload, status, attempt, due_at, created_at, subscriber_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&id)
    .bind(&prev.workspace_id)
    .bind(&prev.channel_id)
    .bind(&prev.alert_id)
    .bind(&prev.event)
    .bind(&prev.message_id)
    .bind(&prev.payload)
    .bind(PENDING)
    .bind(prev.attempt + 1)
    .bind(due_at)
    .bind(now)
    .bind(&prev.subscriber_id)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// Pending attempts (the queue depth) and the due time of the oldest one already due.
pub async fn queue_stats<'e>(
    e: impl Exec<'e>,
    now: i64,
) -> Result<(i64, Option<i64>), sqlx::Error> {
    sqlx::query_as(
        "SELECT COUNT(*), MIN(CASE WHEN due_at <= $1 THEN due_at END) FROM deliveries \
         WHERE status = $2",
    )
    .bind(now)
    .bind(PENDING)
    .fetch_one(e)
    .await
}

/// Whether `alert_id` is an alert of the workspace (the history of an alert is asked by id).
pub async fn alert_exists<'e>(
    e: impl Exec<'e>,
    ws: &str,
    alert_id: &str,
) -> Result<bool, sqlx::Error> {
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(alert_id)
            .fetch_one(e)
            .await?;
    Ok(n > 0)
}
