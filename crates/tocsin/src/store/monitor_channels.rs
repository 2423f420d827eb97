//! The alerting side of a monitor: its own channels (`monitor_channels`, in the order given:
//! the API's `notificationChannelIds`) and its escalation policy
//! (`monitors.escalation_policy_id`), plus the channel facts alerting needs to choose whom to
//! notify. The channels' own rows (config, secrets) are `store::channels`'s; only the routing
//! columns are read here.

use std::collections::HashMap;

use sqlx::{AnyConnection, FromRow};

use super::Exec;

/// Replaces a monitor's own channels with `ids`, in that order.
pub async fn set(
    conn: &mut AnyConnection,
    monitor_id: &str,
    ids: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM monitor_channels WHERE monitor_id = $1")
        .bind(monitor_id)
        .execute(&mut *conn)
        .await?;
    for (i, id) in ids.iter().enumerate() {
        sqlx::query(
            "INSERT INTO monitor_channels (monitor_id, channel_id, position) VALUES ($1, $2, $3)",
        )
        .bind(monitor_id)
        .bind(id)
        .bind(i64::try_from(i).unwrap_or(i64::MAX))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Sets a monitor's escalation policy (a setting: the caller bumps the monitor's version with
/// its settings write).
pub async fn set_policy<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
    policy_id: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE monitors SET escalation_policy_id = $1 WHERE workspace_id = $2 AND id = $3")
        .bind(policy_id)
        .bind(ws)
        .bind(monitor_id)
        .execute(e)
        .await
        .map(|_| ())
}

/// A monitor's alerting settings: its own channel ids in order, and its policy.
pub type Settings = (Vec<String>, Option<String>);

/// Folds `(monitor id, policy id, channel id)` rows ordered by monitor then position.
fn fold(rows: Vec<(String, Option<String>, Option<String>)>) -> HashMap<String, Settings> {
    let mut out: HashMap<String, Settings> = HashMap::new();
    for (m, p, c) in rows {
        let entry = out.entry(m).or_default();
        entry.1 = p;
        entry.0.extend(c);
    }
    out
}

/// The alerting settings of every monitor of a workspace that has any (the monitor list's
/// fresh part; a monitor missing from the map has none).
pub async fn of_workspace<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<HashMap<String, Settings>, sqlx::Error> {
    let rows = sqlx::query_as(
        "SELECT m.id, m.escalation_policy_id, mc.channel_id FROM monitors m \
         LEFT JOIN monitor_channels mc ON mc.monitor_id = m.id WHERE m.workspace_id = $1 \
         AND (m.escalation_policy_id IS NOT NULL OR mc.channel_id IS NOT NULL) \
         ORDER BY m.id, mc.position",
    )
    .bind(ws)
    .fetch_all(e)
    .await?;
    Ok(fold(rows))
}

/// Which of `ids` are channels of this workspace.
pub async fn existing_channels<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<Vec<String>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "SELECT id FROM notification_channels WHERE workspace_id = $1 AND id IN ({})",
        placeholders.join(", ")
    );
    let mut q = sqlx::query_scalar(&sql).bind(ws);
    for id in ids {
        q = q.bind(id.clone());
    }
    q.fetch_all(e).await
}

/// What alerting needs of a channel to route to it.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct Target {
    pub id: String,
    /// JSON array of the event types the channel takes.
    pub events: String,
    pub is_default: i64,
    pub enabled: i64,
}

impl Target {
    /// Enabled and subscribed to `event`.
    pub fn takes(&self, event: &str) -> bool {
        self.enabled != 0
            && serde_json::from_str::<Vec<String>>(&self.events)
                .map(|evs| evs.iter().any(|e| e == event))
                .unwrap_or(false)
    }
}

/// A monitor's own channels, in order.
pub async fn own_targets<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Vec<Target>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.id, c.events, c.is_default, c.enabled FROM monitor_channels mc \
         JOIN notification_channels c ON c.id = mc.channel_id \
         WHERE c.workspace_id = $1 AND mc.monitor_id = $2 ORDER BY mc.position",
    )
    .bind(ws)
    .bind(monitor_id)
    .fetch_all(e)
    .await
}

/// The workspace's default channels (`isDefault`), oldest first.
pub async fn default_targets<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<Target>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, events, is_default, enabled FROM notification_channels \
         WHERE workspace_id = $1 AND is_default <> 0 ORDER BY id",
    )
    .bind(ws)
    .fetch_all(e)
    .await
}

/// Every channel of the workspace, oldest first: incident events concern the whole
/// workspace rather than one monitor's routing.
pub async fn workspace_targets<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<Target>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, events, is_default, enabled FROM notification_channels \
         WHERE workspace_id = $1 ORDER BY id",
    )
    .bind(ws)
    .fetch_all(e)
    .await
}

/// The workspace's channels among `ids`, in the order of `ids` (unknown ones left out).
pub async fn targets<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<Vec<Target>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "SELECT id, events, is_default, enabled FROM notification_channels \
         WHERE workspace_id = $1 AND id IN ({})",
        placeholders.join(", ")
    );
    let mut q = sqlx::query_as(&sql).bind(ws);
    for id in ids {
        q = q.bind(id.clone());
    }
    let found: Vec<Target> = q.fetch_all(e).await?;
    Ok(ids
        .iter()
        .filter_map(|id| found.iter().find(|t| &t.id == id).cloned())
        .collect())
}

/// What a notification says about its monitor.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct MonitorBrief {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub url: Option<String>,
    pub host: Option<String>,
    pub status: String,
    pub escalation_policy_id: Option<String>,
}

pub async fn brief<'e>(
    e: impl Exec<'e>,
    ws: &str,
    monitor_id: &str,
) -> Result<Option<MonitorBrief>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, workspace_id, name, type, url, host, status, escalation_policy_id \
         FROM monitors WHERE workspace_id = $1 AND id = $2",
    )
    .bind(ws)
    .bind(monitor_id)
    .fetch_optional(e)
    .await
}

/// The workspaces with an active monitor checked from `region` (regions are a JSON array of
/// names: the quoted name is looked for).
pub async fn workspaces_in_region<'e>(
    e: impl Exec<'e>,
    region: &str,
) -> Result<Vec<String>, sqlx::Error> {
    let quoted = serde_json::to_string(region).unwrap_or_default();
    let pattern: String = quoted
        .chars()
        .flat_map(|c| match c {
            '!' | '%' | '_' => vec!['!', c],
            c => vec![c],
        })
        .collect();
    sqlx::query_scalar(
        "SELECT DISTINCT workspace_id FROM monitors WHERE active <> 0 \
         AND regions LIKE $1 ESCAPE '!' ORDER BY workspace_id",
    )
    .bind(format!("%{pattern}%"))
    .fetch_all(e)
    .await
}
