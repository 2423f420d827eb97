//! Measurements the monitor scenarios take of the process and of the database: resident
//! memory, heartbeats stored per second of a window, the slots a window should have run, and
//! the on-disk size of the heartbeat table. Each reads the real thing (`/proc`, the store);
//! nothing is estimated.

use tocsin_core::Grid;

use tocsin::cx::Cx;
use tocsin::store::Backend;

/// The process's resident set size in bytes (`VmRSS` of `/proc/self/status`); `None` where
/// the platform does not expose it.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// How many grid slots of monitors with these ids and interval fall in `[from_ms, to_ms)`: the
/// runs a scheduler that never skips would start in that window.
pub fn expected_runs<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    interval_ms: u64,
    from_ms: i64,
    to_ms: i64,
) -> u64 {
    let step = i64::try_from(interval_ms.max(1)).unwrap_or(i64::MAX);
    ids.into_iter()
        .map(|id| {
            let first = Grid::for_monitor(id, interval_ms).next_run_after(from_ms - 1);
            if first >= to_ms {
                0
            } else {
                u64::try_from((to_ms - 1 - first) / step + 1).unwrap_or(0)
            }
        })
        .sum()
}

/// Heartbeats stored with a start time in `[from_ms, to_ms)`, counted per whole second of the
/// window (seconds with none count as zero). The heartbeat's `ts` is when its check started.
pub async fn stored_per_second(cx: &Cx, from_ms: i64, to_ms: i64) -> Result<Vec<u64>, sqlx::Error> {
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT (ts - $1) / 1000 AS s, COUNT(*) FROM heartbeats WHERE ts >= $1 AND ts < $2 \
         GROUP BY (ts - $1) / 1000",
    )
    .bind(from_ms)
    .bind(to_ms)
    .fetch_all(cx.db().reader())
    .await?;
    let seconds = usize::try_from((to_ms - from_ms).max(0) / 1000).unwrap_or(0);
    let mut out = vec![0u64; seconds.max(1)];
    for (s, n) in rows {
        if let Some(slot) = usize::try_from(s).ok().and_then(|s| out.get_mut(s)) {
            *slot += u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(out)
}

/// On-disk size of the heartbeat table with its indexes and its row count. SQLite: the pages
/// of `heartbeats` and its indexes from the `dbstat` table (after a WAL checkpoint, so the
/// main file holds everything); PostgreSQL: `pg_total_relation_size` summed over the table's
/// day partitions (the partitioned parent holds nothing itself). `None` when the backend
/// cannot tell (a SQLite built without `dbstat`).
pub async fn heartbeat_table_bytes(cx: &Cx) -> Result<Option<(u64, u64)>, sqlx::Error> {
    let db = cx.db();
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats")
        .fetch_one(db.reader())
        .await?;
    let bytes: Option<i64> = match db.backend() {
        Backend::Sqlite => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(db.writer())
                .await?;
            sqlx::query_scalar(
                "SELECT SUM(pgsize) FROM dbstat WHERE name IN \
                 (SELECT name FROM sqlite_schema WHERE tbl_name = 'heartbeats')",
            )
            .fetch_one(db.writer())
            .await
            .ok()
            .flatten()
        }
        Backend::Postgres => {
            sqlx::query("VACUUM ANALYZE heartbeats")
                .execute(db.writer())
                .await?;
            sqlx::query_scalar(
                "SELECT CAST(COALESCE(SUM(pg_total_relation_size(inhrelid)), 0) AS BIGINT) \
                 FROM pg_inherits WHERE inhparent = CAST('heartbeats' AS regclass)",
            )
            .fetch_one(db.writer())
            .await?
        }
    };
    Ok(bytes.map(|b| {
        (
            u64::try_from(b).unwrap_or(0),
            u64::try_from(rows).unwrap_or(0),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss() {
        let text = "Name:\ttocsin\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss(text), Some(1234 * 1024));
        assert_eq!(parse_vm_rss("Name: x\n"), None);
        assert!(rss_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn counts_slots_in_a_window() {
        // One slot per second per monitor: a 10 s window holds 10 of each.
        let ids = ["a", "b", "c"];
        assert_eq!(expected_runs(ids, 1_000, 50_000, 60_000), 30);
        // A 60 s interval: over one whole interval each monitor runs exactly once.
        assert_eq!(expected_runs(ids, 60_000, 120_000, 180_000), 3);
        assert_eq!(expected_runs(ids, 60_000, 5_000, 5_000), 0);
    }
}
