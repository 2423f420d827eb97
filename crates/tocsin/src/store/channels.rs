//! Notification channels (`notification_channels`): a type, its config as JSON (secrets
//! included: they are needed to send, and are masked by every read above this layer), the
//! events it takes, whether it is a workspace default, whether it is enabled. Every query is
//! scoped by workspace id.

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct ChannelRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    /// JSON object.
    pub config: String,
    /// JSON array of event names.
    pub events: String,
    pub is_default: i64,
    pub enabled: i64,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ChannelRow {
    /// Whether the channel takes `event` now: enabled, and the event is among its `events`.
    pub fn takes(&self, event: &str) -> bool {
        self.enabled != 0
            && serde_json::from_str::<Vec<String>>(&self.events)
                .is_ok_and(|events| events.iter().any(|e| e == event))
    }
}

const COLUMNS: &str = "id, workspace_id, name, type, config, events, is_default, enabled, \
     version, created_at, updated_at";

pub async fn insert<'e>(e: impl Exec<'e>, c: &ChannelRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO notification_channels (id, workspace_id, name, type, config, events, \
         is_default, enabled, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&c.id)
    .bind(&c.workspace_id)
    .bind(&c.name)
    .bind(&c.kind)
    .bind(&c.config)
    .bind(&c.events)
    .bind(c.is_default)
    .bind(c.enabled)
    .bind(c.version)
    .bind(c.created_at)
    .bind(c.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<ChannelRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM notification_channels WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// One page in id (creation) order, after `after` ("" for the first), `limit` rows.
pub async fn page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<ChannelRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM notification_channels WHERE workspace_id = $1 AND id > $2 \
         ORDER BY id LIMIT $3"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// How many channels the workspace has (plan quota).
pub async fn count<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM notification_channels WHERE workspace_id = $1")
        .bind(ws)
        .fetch_one(e)
        .await
}

/// Writes every editable column, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    c: &ChannelRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "notification_channels",
        "name = $1, config = $2, events = $3, is_default = $4, enabled = $5, updated_at = $6",
        "workspace_id = $7 AND id = $8",
        expected,
    )
    .run(e, |q| {
        q.bind(&c.name)
            .bind(&c.config)
            .bind(&c.events)
            .bind(c.is_default)
            .bind(c.enabled)
            .bind(c.updated_at)
            .bind(&c.workspace_id)
            .bind(&c.id)
    })
    .await
}

/// Deletes a channel (its deliveries and monitor bindings go with it, by cascade).
pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::delete(
        "notification_channels",
        "workspace_id = $1 AND id = $2",
        expected,
    )
    .run(e, |q| q.bind(ws).bind(id))
    .await
}
