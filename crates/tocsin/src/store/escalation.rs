//! Escalation policies and their steps. A policy row carries the version lock; its steps are
//! replaced whole on every edit (their `step_order` is their position, from 1), so a policy
//! and its steps are always written in one transaction. `channel_ids` is a JSON array.

use std::collections::HashMap;

use sqlx::{AnyConnection, FromRow};

use super::{Exec, Versioned};
use crate::ids::new_id;

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct PolicyRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct StepRow {
    pub id: String,
    pub policy_id: String,
    pub step_order: i64,
    pub delay_minutes: i64,
    /// JSON array of channel ids.
    pub channel_ids: String,
}

impl StepRow {
    pub fn channel_ids(&self) -> Vec<String> {
        serde_json::from_str(&self.channel_ids).unwrap_or_default()
    }
}

/// A step to store: its delay and channels (its order is its position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStep {
    pub delay_minutes: i64,
    pub channel_ids: Vec<String>,
}

const COLUMNS: &str = "id, workspace_id, name, version, created_at, updated_at";
const STEP_COLUMNS: &str = "s.id, s.policy_id, s.step_order, s.delay_minutes, s.channel_ids";

pub async fn insert<'e>(e: impl Exec<'e>, p: &PolicyRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO escalation_policies (id, workspace_id, name, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&p.id)
    .bind(&p.workspace_id)
    .bind(&p.name)
    .bind(p.version)
    .bind(p.created_at)
    .bind(p.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// Replaces a policy's steps with `steps`, numbered from 1 in order.
pub async fn set_steps(
    conn: &mut AnyConnection,
    policy_id: &str,
    steps: &[NewStep],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM escalation_steps WHERE policy_id = $1")
        .bind(policy_id)
        .execute(&mut *conn)
        .await?;
    for (i, s) in steps.iter().enumerate() {
        let ids = serde_json::to_string(&s.channel_ids).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO escalation_steps (id, policy_id, step_order, delay_minutes, channel_ids) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(new_id())
        .bind(policy_id)
        .bind(i64::try_from(i + 1).unwrap_or(i64::MAX))
        .bind(s.delay_minutes)
        .bind(ids)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<PolicyRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM escalation_policies WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// Every policy of a workspace, oldest first.
pub async fn list<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<PolicyRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM escalation_policies WHERE workspace_id = $1 ORDER BY id");
    sqlx::query_as(&sql).bind(ws).fetch_all(e).await
}

pub async fn count<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM escalation_policies WHERE workspace_id = $1")
        .bind(ws)
        .fetch_one(e)
        .await
}

/// One policy's steps in order (the policy's workspace checked).
pub async fn steps<'e>(
    e: impl Exec<'e>,
    ws: &str,
    policy_id: &str,
) -> Result<Vec<StepRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {STEP_COLUMNS} FROM escalation_steps s JOIN escalation_policies p ON p.id = s.policy_id \
         WHERE p.workspace_id = $1 AND s.policy_id = $2 ORDER BY s.step_order"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(policy_id)
        .fetch_all(e)
        .await
}

/// Every step of a workspace's policies: policy id → steps in order.
pub async fn steps_by_policy<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<HashMap<String, Vec<StepRow>>, sqlx::Error> {
    let sql = format!(
        "SELECT {STEP_COLUMNS} FROM escalation_steps s JOIN escalation_policies p ON p.id = s.policy_id \
         WHERE p.workspace_id = $1 ORDER BY s.policy_id, s.step_order"
    );
    let rows: Vec<StepRow> = sqlx::query_as(&sql).bind(ws).fetch_all(e).await?;
    let mut out: HashMap<String, Vec<StepRow>> = HashMap::new();
    for r in rows {
        out.entry(r.policy_id.clone()).or_default().push(r);
    }
    Ok(out)
}

/// Renames a policy (and bumps its version, checked against `expected` when given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    name: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let w = Versioned::update(
        "escalation_policies",
        "name = $1, updated_at = $2",
        "workspace_id = $3 AND id = $4",
        expected,
    );
    w.run(e, |q| q.bind(name).bind(now).bind(ws).bind(id)).await
}

pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let w = Versioned::delete(
        "escalation_policies",
        "workspace_id = $1 AND id = $2",
        expected,
    );
    w.run(e, |q| q.bind(ws).bind(id)).await
}

/// Whether `id` is a policy of this workspace.
pub async fn exists<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM escalation_policies WHERE workspace_id = $1 AND id = $2",
    )
    .bind(ws)
    .bind(id)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}
