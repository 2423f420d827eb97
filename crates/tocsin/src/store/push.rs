//! Push ingestion's own table: the Idempotency-Key of every recorded push (see
//! `src/push/mod.rs` for the window and the rules). Only the heartbeat writer's transaction
//! claims keys, so the check and the claim are one step; pruning runs with retention.

use std::collections::HashSet;

use sqlx::{AnyConnection, Row};

use super::heartbeats::placeholders;
use super::monitors::{MonitorRow, StateUpdate};
use super::{Exec, Tx};

/// Rows per multi-row statement.
const CHUNK: usize = 200;

/// Claims `(monitor_seq, key, at)` triples; a pair already claimed at or after `cutoff` is
/// kept (it is a retry) and a stale one is claimed afresh. Returns the pairs claimed now, i.e.
/// the pushes to record. Pairs must be distinct.
pub async fn claim_keys(
    tx: &mut Tx,
    keys: &[(i64, String, i64)],
    cutoff: i64,
) -> Result<HashSet<(i64, String)>, sqlx::Error> {
    let mut claimed = HashSet::with_capacity(keys.len());
    for chunk in keys.chunks(CHUNK) {
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
        let mut q = sqlx::query(&sql).persistent(chunk.len() == CHUNK);
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
    for chunk in seqs.chunks(CHUNK) {
        let list = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(",");
        let sql = format!(
            "SELECT {} FROM monitors WHERE seq IN ({list})",
            super::monitors::COLUMNS
        );
        let mut q = sqlx::query_as::<_, MonitorRow>(&sql).persistent(false);
        for s in chunk {
            q = q.bind(*s);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}

/// Writes what a batch of pushes did to monitor `seq`: the new state when it is active
/// (`None` for a paused monitor, whose status a push does not touch), and the check-in times.
/// `last_check_at` is, for push monitors, the later of the last push and the last expected
/// check-in already answered by a miss: the watcher's next deadline counts from it.
pub async fn record_pushes(
    tx: &mut Tx,
    seq: i64,
    state: Option<&StateUpdate>,
    last_check_at: Option<i64>,
    last_push_at: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let done = match state {
        Some(u) => {
            sqlx::query(
                "UPDATE monitors SET status = $1, consecutive_failures = $2, \
                 consecutive_successes = $3, pending_failure_since = $4, status_changed_at = $5, \
                 last_check_at = $6, last_push_at = $7 WHERE seq = $8 AND active = 1",
            )
            .bind(crate::monitoring::status_str(u.status))
            .bind(u.consecutive_failures)
            .bind(u.consecutive_successes)
            .bind(u.pending_failure_since)
            .bind(u.status_changed_at)
            .bind(last_check_at)
            .bind(last_push_at)
            .bind(seq)
            .execute(&mut **tx)
            .await?
        }
        None => {
            sqlx::query("UPDATE monitors SET last_check_at = $1, last_push_at = $2 WHERE seq = $3")
                .bind(last_check_at)
                .bind(last_push_at)
                .bind(seq)
                .execute(&mut **tx)
                .await?
        }
    };
    Ok(done.rows_affected())
}
