//! Push ingestion's own table: the Idempotency-Key of every recorded push (see
//! `src/push/mod.rs` for the window and the rules). Only the heartbeat writer's transaction
//! claims keys, so the check and the claim are one step; pruning runs with retention.

use std::collections::HashSet;

use sqlx::{AnyConnection, Row};

use super::heartbeats::placeholders;
use super::monitors::{MonitorRow, StateUpdate};
use super::{Exec, Tx};

/// Claims `(monitor_seq, key, at)` triples; a pair already claimed at or after `cutoff` is
/// kept (it is a retry) and a stale one is claimed afresh. Returns the pairs claimed now, i.e.
/// the pushes to record. Pairs must be distinct.
pub async fn claim_keys(
    tx: &mut Tx,
    keys: &[(i64, String, i64)],
    cutoff: i64,
) -> Result<HashSet<(i64, String)>, sqlx::Error> {
    let mut claimed = HashSet::with_capacity(keys.len());
    for chunk in super::cached_chunks(keys) {
        let n = chunk.len() * 3;
        // `excluded.created_at` is the new claim; the WHERE keeps fresh claims untouched, and
        // RETURNING lists exactly the rows inserted or renewed (both dialects agree on that).
        let sql = format!(
            "INSERT INTO push_idempotency (monitor_seq, key, created_at) VALUES {} \
             ON CONFLICT (monitor_seq, key) DO UPDATE SET created_at = excluded.created_at \
             WHERE push_idempotency.created_at < ${} RETURNING monitor_seq, key",
            placeholders(chunk.len(), 3),
            n + 1
        );
        let mut q = sqlx::query(&sql);
        for (seq, key, at) in chunk {
            q = q.bind(*seq).bind(key.as_str()).bind(*at);
        }
        for row in q.bind(cutoff).fetch_all(&mut **tx).await? {
            claimed.insert((row.try_get(0)?, row.try_get(1)?));
        }
    }
    Ok(claimed)
}

/// Deletes claims older than `cutoff`, at most `limit` of them; returns how many went.
pub async fn prune_keys<'e>(e: impl Exec<'e>, cutoff: i64, limit: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "DELETE FROM push_idempotency WHERE (monitor_seq, key) IN \
         (SELECT monitor_seq, key FROM push_idempotency WHERE created_at < $1 LIMIT $2)",
    )
    .bind(cutoff)
    .bind(limit)
    .execute(e)
    .await?
    .rows_affected())
}

/// The monitors with these `seq` values (any type, paused ones included).
pub async fn monitors_by_seq(
    conn: &mut AnyConnection,
    seqs: &[i64],
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    let mut out = Vec::with_capacity(seqs.len());
    for chunk in super::cached_chunks(seqs) {
        let list = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(",");
        let sql = format!(
            "SELECT {} FROM monitors WHERE seq IN ({list})",
            super::monitors::COLUMNS
        );
        let mut q = sqlx::query_as::<_, MonitorRow>(&sql);
        for s in chunk {
            q = q.bind(*s);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}

/// What a batch of pushes did to one monitor: the new state when it is active (`None` for a
/// paused monitor, whose status a push does not touch), and the check-in times.
/// `last_check_at` is, for push monitors, the later of the last push and the last expected
/// check-in already answered by a miss: the watcher's next deadline counts from it.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub seq: i64,
    pub state: Option<StateUpdate>,
    pub last_check_at: Option<i64>,
    pub last_push_at: Option<i64>,
}

/// Writes [`Pushed`] rows, many monitors per statement (a statement per monitor would cost
/// more than everything else a push does).
pub async fn record_pushes(tx: &mut Tx, rows: &[Pushed]) -> Result<(), sqlx::Error> {
    let (active, paused): (Vec<&Pushed>, Vec<&Pushed>) =
        rows.iter().partition(|r| r.state.is_some());
    for chunk in super::cached_chunks(&active) {
        let sql = format!(
            "WITH v (seq, status, failures, successes, pending_since, changed_at, checked_at, \
             pushed_at) AS (VALUES {}) \
             UPDATE monitors SET status = v.status, consecutive_failures = v.failures, \
             consecutive_successes = v.successes, pending_failure_since = v.pending_since, \
             status_changed_at = v.changed_at, last_check_at = v.checked_at, \
             last_push_at = v.pushed_at FROM v WHERE monitors.seq = v.seq AND monitors.active = 1",
            placeholders(chunk.len(), 8)
        );
        let mut q = sqlx::query(&sql);
        for r in chunk {
            let Some(u) = &r.state else { continue };
            q = q
                .bind(r.seq)
                .bind(crate::monitoring::status_str(u.status))
                .bind(u.consecutive_failures)
                .bind(u.consecutive_successes)
                .bind(u.pending_failure_since)
                .bind(u.status_changed_at)
                .bind(r.last_check_at)
                .bind(r.last_push_at);
        }
        q.execute(&mut **tx).await?;
    }
    for chunk in super::cached_chunks(&paused) {
        let sql = format!(
            "WITH v (seq, checked_at, pushed_at) AS (VALUES {}) \
             UPDATE monitors SET last_check_at = v.checked_at, last_push_at = v.pushed_at \
             FROM v WHERE monitors.seq = v.seq",
            placeholders(chunk.len(), 3)
        );
        let mut q = sqlx::query(&sql);
        for r in chunk {
            q = q.bind(r.seq).bind(r.last_check_at).bind(r.last_push_at);
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Every push monitor's `(id, seq, token hash)`: what the token map preloads.
pub async fn token_hashes<'e>(e: impl Exec<'e>) -> Result<Vec<(String, i64, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, seq, push_token_hash FROM monitors WHERE push_token_hash IS NOT NULL",
    )
    .fetch_all(e)
    .await
}
