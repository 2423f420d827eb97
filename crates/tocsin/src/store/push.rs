//! Push ingestion's own table: the Idempotency-Key of every recorded push (see
//! `src/push/mod.rs` for the window and the rules). Only the heartbeat writer's transaction
//! claims keys, so the check and the claim are one step; pruning runs with retention.

use std::collections::HashSet;

use sqlx::{AnyConnection, Row};

use super::batch::{self, Col};
use super::monitors::MonitorRow;
use super::{Exec, Tx};

/// Claims `(monitor_seq, key, at)` triples; a pair already claimed at or after `cutoff` is
/// kept (it is a retry) and a stale one is claimed afresh. Returns the pairs claimed now, i.e.
/// the pushes to record. Pairs must be distinct. One statement (see [`super::batch`]).
pub async fn claim_keys(
    tx: &mut Tx,
    keys: &[(i64, String, i64)],
    cutoff: i64,
) -> Result<HashSet<(i64, String)>, sqlx::Error> {
    let mut claimed = HashSet::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(claimed);
    }
    const COLS: [Col; 3] = [
        batch::int("monitor_seq"),
        batch::text("key"),
        batch::int("created_at"),
    ];
    // `excluded.created_at` is the new claim; the WHERE keeps fresh claims untouched, and
    // RETURNING lists exactly the rows inserted or renewed (both dialects agree on that).
    let sql = format!(
        "INSERT INTO push_idempotency (monitor_seq, key, created_at) {} \
         ON CONFLICT (monitor_seq, key) DO UPDATE SET created_at = excluded.created_at \
         WHERE push_idempotency.created_at < $2 RETURNING monitor_seq, key",
        batch::select_rows(super::backend_of(tx), &COLS, 1)
    );
    for row in sqlx::query(&sql)
        .bind(batch::encode(keys)?)
        .bind(cutoff)
        .fetch_all(&mut **tx)
        .await?
    {
        claimed.insert((row.try_get(0)?, row.try_get(1)?));
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

/// The monitors with these `seq` values (any type, paused ones included), in one statement,
/// with only the columns push recording reads ([`super::monitors::PUSH_COLUMNS`]).
pub async fn monitors_by_seq(
    conn: &mut AnyConnection,
    seqs: &[i64],
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {} FROM monitors WHERE seq IN ({})",
        super::monitors::PUSH_COLUMNS,
        batch::select_rows(super::backend_of(conn), &[batch::int("seq")], 1)
    );
    let seqs: Vec<[i64; 1]> = seqs.iter().map(|s| [*s]).collect();
    sqlx::query_as::<_, MonitorRow>(&sql)
        .bind(batch::encode(&seqs)?)
        .fetch_all(&mut *conn)
        .await
}

/// A paused push monitor's check-in times after a batch of pushes (a push does not touch a
/// paused monitor's status). `last_check_at` is, for push monitors, the later of the last push
/// and the last expected check-in already answered by a miss: the watcher's next deadline
/// counts from it. Active monitors' state, with their `last_push_at`, is written through
/// [`super::monitors::write_states`] as a status change.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub seq: i64,
    pub last_check_at: Option<i64>,
    pub last_push_at: Option<i64>,
}

/// Writes [`Pushed`] rows in one statement (a statement per monitor would cost more than
/// everything else a push does).
pub async fn record_pushes(tx: &mut Tx, rows: &[Pushed]) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    const COLS: [Col; 3] = [
        batch::int("seq"),
        batch::int("checked_at"),
        batch::int("pushed_at"),
    ];
    let sql = format!(
        "WITH v AS ({}) \
         UPDATE monitors SET last_check_at = v.checked_at, last_push_at = v.pushed_at \
         FROM v WHERE monitors.seq = v.seq",
        batch::select_rows(super::backend_of(tx), &COLS, 1)
    );
    let rows: Vec<_> = rows
        .iter()
        .map(|r| (r.seq, r.last_check_at, r.last_push_at))
        .collect();
    sqlx::query(&sql)
        .bind(batch::encode(&rows)?)
        .execute(&mut **tx)
        .await?;
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
