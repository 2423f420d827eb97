//! Retention: raw heartbeats (and their details) are kept `heartbeat_retention_days` (14 by
//! default), hourly rollups `rollup_retention_days` (400). The pruner walks monitors one at a
//! time and deletes in small slices, each its own short statement, so the heartbeat writer
//! (which shares SQLite's single write connection) gets its turn between slices and is never
//! stalled for long. Heartbeats of monitors that no longer exist are deleted whole. On SQLite
//! the freed pages are then handed back to the file system with `PRAGMA incremental_vacuum`
//! (the database runs with `auto_vacuum = INCREMENTAL`).
//!
//! On PostgreSQL raw heartbeats are partitioned by day ([`hb_parts`]): a pass first makes
//! sure the coming days' partitions exist, then drops every partition wholly before the
//! cutoff in one statement each, and deletes rows in slices only from the partitions that
//! are not days (the rows stored before partitioning, the default partition). A heartbeat is
//! kept there between the retention and one day more.
//!
//! The pruner reads time from the state's clock, so tests drive it with a manual clock and
//! call [`prune_once`] directly; the server runs [`run`] in the background.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::report::DAY_MS;
use crate::cluster::lease::Role;
use crate::cx::Cx;
use crate::store::heartbeat_partitions as hb_parts;
use crate::store::heartbeats as hb_store;
use crate::store::Backend;

/// Rows per delete statement.
const SLICE: i64 = 2_000;
/// Pages handed back per `incremental_vacuum` step.
const VACUUM_PAGES: i64 = 2_000;

/// What one pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub heartbeats: u64,
    pub details: u64,
    pub hourly: u64,
    /// Daily partitions of raw heartbeats dropped whole (PostgreSQL).
    pub partitions: u64,
}

/// One full pass over every monitor.
pub async fn prune_once(cx: &Cx) -> Result<Pruned, sqlx::Error> {
    let now = cx.clock().now_ms();
    let raw_cutoff = now - i64::from(cx.config().heartbeat_retention_days) * DAY_MS;
    let rollup_cutoff = now - i64::from(cx.config().rollup_retention_days) * DAY_MS;
    let db = cx.db();
    let mut pruned = Pruned::default();
    // Which tables rows are deleted from, and what they count as (0 heartbeats, 1 details,
    // 2 rollups).
    let mut tables: Vec<(String, &str, i64, usize)> = Vec::new();
    if db.backend() == Backend::Postgres {
        hb_parts::create_ahead(db, now).await?;
        let dropped = hb_parts::drop_before(db, raw_cutoff).await?;
        if !dropped.is_empty() {
            tracing::info!(?dropped, "dropped heartbeat partitions past retention");
        }
        pruned.partitions = dropped.len() as u64;
        for name in hb_parts::row_pruned(&hb_parts::list(db.reader()).await?) {
            tables.push((name, "ts", raw_cutoff, 0));
        }
    } else {
        tables.push(("heartbeats".into(), "ts", raw_cutoff, 0));
    }
    tables.extend([
        ("heartbeat_details".into(), "ts", raw_cutoff, 1),
        ("heartbeat_hourly".into(), "bucket_start", rollup_cutoff, 2),
        (
            "heartbeat_hourly_bins".into(),
            "bucket_start",
            rollup_cutoff,
            2,
        ),
    ]);
    for (table, col, cutoff, i) in tables {
        let table = table.as_str();
        let mut after = i64::MIN;
        while let Some(seq) = hb_store::next_seq(db.reader(), table, after).await? {
            after = seq;
            // A deleted monitor's rows go entirely.
            let cutoff = if hb_store::monitor_exists(db.reader(), seq).await? {
                cutoff
            } else {
                i64::MAX
            };
            loop {
                let n = hb_store::delete_slice(db, table, col, seq, cutoff, SLICE).await?;
                match i {
                    0 => pruned.heartbeats += n,
                    1 => pruned.details += n,
                    2 => pruned.hourly += n,
                    _ => {}
                }
                if n == 0 {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
    }
    if db.backend() == Backend::Sqlite && pruned != Pruned::default() {
        vacuum(cx).await?;
    }
    Ok(pruned)
}

/// Hands free pages back in steps, so no single step holds the write lock for long.
async fn vacuum(cx: &Cx) -> Result<(), sqlx::Error> {
    let db = cx.db();
    loop {
        let free: i64 = sqlx::query_scalar("PRAGMA freelist_count")
            .fetch_one(db.writer())
            .await?;
        if free == 0 {
            return Ok(());
        }
        sqlx::query(&format!("PRAGMA incremental_vacuum({VACUUM_PAGES})"))
            .execute(db.writer())
            .await?;
        let after: i64 = sqlx::query_scalar("PRAGMA freelist_count")
            .fetch_one(db.writer())
            .await?;
        // auto_vacuum off (an old database): nothing to hand back this way.
        if after >= free {
            return Ok(());
        }
    }
}

/// Prunes every `every` until cancelled.
/// Prunes every `every` while this node holds the scheduler `role` (always on one node):
/// several nodes deleting the same rows would only contend for them.
pub async fn run(cx: Cx, role: Role, every: Duration, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tick.tick() => {
                if !role.is_held() {
                    continue;
                }
                match prune_once(&cx).await {
                    Ok(p) if p != Pruned::default() => tracing::info!(?p, "pruned heartbeats"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "heartbeat pruning failed"),
                }
            }
        }
    }
}
