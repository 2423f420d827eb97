//! What the alert and escalation tests share: notification channels stored as rows, and reads
//! of the outbox (the manual-clock step is [`super::clock::tick`]).
//!
//! Channels are inserted as rows: their API (CRUD, providers, delivery) belongs to the
//! channel work and is not what these tests are about; the alerting code reads exactly these
//! columns. The outbox is read back both as rows (what was enqueued, with its payload) and
//! through `GET /alerts/{id}/deliveries`.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::clock::T0;
use super::monitors::get;
use super::{TestServer, User};

/// Every event type a channel can take.
pub const ALL_EVENTS: [&str; 9] = [
    "alert.opened",
    "alert.escalated",
    "alert.acknowledged",
    "alert.resolved",
    "monitor.degraded",
    "monitor.changed",
    "monitor.stale",
    "region.down",
    "certificate.expiring",
];

/// The settings of a channel [`channel`] stores (default: `ops`, every event, enabled).
pub struct Chan<'a> {
    pub name: &'a str,
    pub events: &'a [&'a str],
    pub is_default: bool,
    pub enabled: bool,
}

impl Default for Chan<'_> {
    fn default() -> Self {
        Chan {
            name: "ops",
            events: &ALL_EVENTS,
            is_default: false,
            enabled: true,
        }
    }
}

/// Stores a WEBHOOK channel of workspace `ws`; returns its id.
pub async fn channel(srv: &TestServer, ws: &str, c: Chan<'_>) -> String {
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO notification_channels (id, workspace_id, name, type, config, events, \
         is_default, enabled, version, created_at, updated_at) \
         VALUES ($1, $2, $3, 'WEBHOOK', $4, $5, $6, $7, 1, $8, $8)",
    )
    .bind(&id)
    .bind(ws)
    .bind(c.name)
    .bind(json!({"url": "http://127.0.0.1:9/hook"}).to_string())
    .bind(serde_json::to_string(c.events).unwrap())
    .bind(i64::from(c.is_default))
    .bind(i64::from(c.enabled))
    .bind(T0)
    .execute(srv.state.db().writer())
    .await
    .unwrap();
    id
}

/// One enqueued notification, as stored.
#[derive(Debug, Clone)]
pub struct Queued {
    pub channel_id: String,
    pub alert_id: Option<String>,
    pub event: String,
    pub payload: Value,
    pub status: String,
    pub attempt: i64,
}

/// Every delivery row of the workspace, oldest first.
pub async fn queued(srv: &TestServer, ws: &str) -> Vec<Queued> {
    let rows: Vec<(String, Option<String>, String, String, String, i64)> = sqlx::query_as(
        "SELECT channel_id, alert_id, event, payload, status, attempt FROM deliveries \
         WHERE workspace_id = $1 ORDER BY id",
    )
    .bind(ws)
    .fetch_all(srv.state.db().reader())
    .await
    .unwrap();
    rows.into_iter()
        .map(
            |(channel_id, alert_id, event, payload, status, attempt)| Queued {
                channel_id,
                alert_id,
                event,
                payload: serde_json::from_str(&payload).unwrap(),
                status,
                attempt,
            },
        )
        .collect()
}

/// (channel, event) of each row, sorted, for set comparisons.
pub fn pairs(q: &[Queued]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = q
        .iter()
        .map(|d| (d.channel_id.clone(), d.event.clone()))
        .collect();
    v.sort();
    v
}

/// `(channel, event)` pairs, sorted.
pub fn want(items: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = items
        .iter()
        .map(|(c, e)| (c.to_string(), e.to_string()))
        .collect();
    v.sort();
    v
}

/// The caller's alerts (`GET /alerts`); `query` is appended to the path (`""` or `?...`).
pub async fn alerts(u: &User, query: &str) -> Vec<Value> {
    get(u, &format!("/alerts{query}")).await["alerts"]
        .as_array()
        .unwrap()
        .clone()
}
