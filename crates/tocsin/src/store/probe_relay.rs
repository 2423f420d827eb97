//! The tables that let a remote probe connect to any node: which node holds probes of which
//! region (`probe_presence`), and checks relayed to that node with their answers
//! (`probe_relay_jobs`). See `probes::relay` for how they are used.

use super::Exec;

/// One node's live probes in one region.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Presence {
    pub node_id: String,
    pub region: String,
    /// JSON array of probe names.
    pub probe_names: String,
    pub seen_at: i64,
}

impl Presence {
    pub fn names(&self) -> Vec<String> {
        serde_json::from_str(&self.probe_names).unwrap_or_default()
    }
}

/// Replaces what `node` advertises: one row per region it holds probes of (`regions`: region,
/// names JSON), stamped `now`; regions it no longer holds are removed.
pub async fn advertise(
    db: &super::Db,
    node: &str,
    regions: &[(String, String)],
    now: i64,
) -> Result<(), sqlx::Error> {
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM probe_presence WHERE node_id = $1")
        .bind(node)
        .execute(&mut *tx)
        .await?;
    for (region, names) in regions {
        sqlx::query(
            "INSERT INTO probe_presence (node_id, region, probe_names, seen_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(node)
        .bind(region)
        .bind(names)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

/// What the other nodes advertised since `since` (older rows belong to nodes that died).
pub async fn others<'e>(
    e: impl Exec<'e>,
    node: &str,
    since: i64,
) -> Result<Vec<Presence>, sqlx::Error> {
    sqlx::query_as(
        "SELECT node_id, region, probe_names, seen_at FROM probe_presence \
         WHERE node_id <> $1 AND seen_at >= $2 ORDER BY region, node_id",
    )
    .bind(node)
    .bind(since)
    .fetch_all(e)
    .await
}

/// A relayed check, as the node holding the probe reads it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RelayedJob {
    pub from_node: String,
    pub region: String,
    pub job: String,
    pub deadline_at: i64,
}

pub struct NewJob<'a> {
    pub id: &'a str,
    pub from_node: &'a str,
    pub to_node: &'a str,
    pub region: &'a str,
    pub job: &'a str,
    pub deadline_at: i64,
    pub now: i64,
}

pub async fn insert_job<'e>(e: impl Exec<'e>, j: &NewJob<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO probe_relay_jobs (id, from_node, to_node, region, job, deadline_at, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(j.id)
    .bind(j.from_node)
    .bind(j.to_node)
    .bind(j.region)
    .bind(j.job)
    .bind(j.deadline_at)
    .bind(j.now)
    .execute(e)
    .await?;
    Ok(())
}

/// The job `id` addressed to `node`, if it is still there.
pub async fn job_for<'e>(
    e: impl Exec<'e>,
    id: &str,
    node: &str,
) -> Result<Option<RelayedJob>, sqlx::Error> {
    sqlx::query_as(
        "SELECT from_node, region, job, deadline_at FROM probe_relay_jobs \
         WHERE id = $1 AND to_node = $2",
    )
    .bind(id)
    .bind(node)
    .fetch_optional(e)
    .await
}

/// Stores the answer to job `id`; false when the job is gone (its sender gave up).
pub async fn answer<'e>(e: impl Exec<'e>, id: &str, result: &str) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE probe_relay_jobs SET result = $1 WHERE id = $2")
        .bind(result)
        .bind(id)
        .execute(e)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Takes (reads and deletes) job `id` of `node`, returning its answer if it has one.
pub async fn take<'e>(
    e: impl Exec<'e>,
    id: &str,
    node: &str,
) -> Result<Option<Option<String>>, sqlx::Error> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "DELETE FROM probe_relay_jobs WHERE id = $1 AND from_node = $2 RETURNING result",
    )
    .bind(id)
    .bind(node)
    .fetch_optional(e)
    .await?;
    Ok(row.map(|(r,)| r))
}

/// Removes jobs whose deadline passed before `before` (answers nobody waits for any more).
pub async fn purge<'e>(e: impl Exec<'e>, before: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("DELETE FROM probe_relay_jobs WHERE deadline_at < $1")
        .bind(before)
        .execute(e)
        .await?;
    Ok(done.rows_affected())
}
