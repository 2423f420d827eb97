//! SQL for heartbeat storage: the batched inserts of the group-commit writer, the hourly
//! rollup upserts, the reads behind the heartbeat, stats, uptime and report endpoints, and the
//! sliced deletes of the retention pruner. Layout and meaning of the tables:
//! `migrations/*/0003_heartbeats.sql` and the monitoring module's heartbeat writer.

use sqlx::{FromRow, Row};

use super::batch::{self, Col};
use super::{Db, Exec, Tx};

/// One heartbeat row as stored.
#[derive(Debug, Clone)]
pub struct HeartbeatRow {
    pub monitor_seq: i64,
    pub ts: i64,
    pub region_id: i64,
    pub status: i64,
    pub latency: i64,
    pub status_code: Option<i64>,
    pub timings: Option<Vec<u8>>,
    pub retry_count: i64,
    pub correlation_id: Option<String>,
}

/// The heavy parts of a non-UP result.
#[derive(Debug, Clone, Default)]
pub struct DetailRow {
    pub monitor_seq: i64,
    pub ts: i64,
    pub region_id: i64,
    pub message: Option<String>,
    pub response_headers: Option<String>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<String>,
    pub assertion_results: Option<String>,
}

/// The additive part of an hourly rollup row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HourlyDelta {
    pub monitor_seq: i64,
    pub bucket_start: i64,
    pub total: i64,
    pub up: i64,
    pub down: i64,
    pub degraded: i64,
    pub latency_sum: i64,
    pub latency_min: Option<i64>,
    pub latency_max: Option<i64>,
}

/// `($1, $2, ...), (...)` for `rows` rows of `cols` parameters.
pub(crate) fn placeholders(rows: usize, cols: usize) -> String {
    let mut s = String::with_capacity(rows * cols * 5);
    for r in 0..rows {
        if r > 0 {
            s.push(',');
        }
        s.push('(');
        for c in 0..cols {
            if c > 0 {
                s.push(',');
            }
            s.push('$');
            s.push_str(&(r * cols + c + 1).to_string());
        }
        s.push(')');
    }
    s
}

/// The id of a region name, allocating one on first use. Ids are small integers so that
/// heartbeat rows stay short; a lost race for an id is retried.
pub async fn region_id(db: &Db, name: &str) -> Result<i64, sqlx::Error> {
    for _ in 0..8 {
        if let Some(id) = region_by_name(db.writer(), name).await? {
            return Ok(id);
        }
        // `WHERE 1 = 1` keeps SQLite's parser from reading ON CONFLICT as a join constraint.
        sqlx::query(
            "INSERT INTO regions (id, name) SELECT COALESCE(MAX(id), 0) + 1, $1 FROM regions \
             WHERE 1 = 1 ON CONFLICT DO NOTHING",
        )
        .bind(name)
        .execute(db.writer())
        .await?;
    }
    region_by_name(db.writer(), name)
        .await?
        .ok_or(sqlx::Error::RowNotFound)
}

pub async fn region_by_name<'e>(e: impl Exec<'e>, name: &str) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM regions WHERE name = $1")
        .bind(name)
        .fetch_optional(e)
        .await
}

/// Inserts heartbeats, skipping keys that already exist; returns the keys actually inserted.
/// One statement for the whole batch (see [`super::batch`]).
pub async fn insert_heartbeats(
    tx: &mut Tx,
    rows: &[HeartbeatRow],
) -> Result<Vec<(i64, i64, i64)>, sqlx::Error> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    const COLS: [Col; 9] = [
        batch::int("monitor_seq"),
        batch::int("ts"),
        batch::int("region_id"),
        batch::int("status"),
        batch::int("latency"),
        batch::int("status_code"),
        batch::hex("timings"),
        batch::int("retry_count"),
        batch::text("correlation_id"),
    ];
    let sql = format!(
        "INSERT INTO heartbeats (monitor_seq, ts, region_id, status, latency, status_code, \
         timings, retry_count, correlation_id) {} ON CONFLICT DO NOTHING \
         RETURNING monitor_seq, ts, region_id",
        batch::select_rows(super::backend_of(tx), &COLS, 1)
    );
    let json = batch::encode(
        &rows
            .iter()
            .map(|r| {
                (
                    r.monitor_seq,
                    r.ts,
                    r.region_id,
                    r.status,
                    r.latency,
                    r.status_code,
                    r.timings.as_deref().map(batch::to_hex),
                    r.retry_count,
                    r.correlation_id.as_deref(),
                )
            })
            .collect::<Vec<_>>(),
    )?;
    let mut inserted = Vec::with_capacity(rows.len());
    for row in sqlx::query(&sql).bind(json).fetch_all(&mut **tx).await? {
        inserted.push((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?));
    }
    Ok(inserted)
}

pub async fn insert_details(tx: &mut Tx, rows: &[DetailRow]) -> Result<(), sqlx::Error> {
    // Bodies can be 64 KiB each: smaller statements keep memory per statement bounded.
    for chunk in rows.chunks(32) {
        let sql = format!(
            "INSERT INTO heartbeat_details (monitor_seq, ts, region_id, message, \
             response_headers, response_body, resolved_ip, assertion_results) VALUES {} \
             ON CONFLICT DO NOTHING",
            placeholders(chunk.len(), 8)
        );
        let mut q = sqlx::query(&sql).persistent(false);
        for r in chunk {
            q = q
                .bind(r.monitor_seq)
                .bind(r.ts)
                .bind(r.region_id)
                .bind(r.message.clone())
                .bind(r.response_headers.clone())
                .bind(r.response_body.clone())
                .bind(r.resolved_ip.clone())
                .bind(r.assertion_results.clone());
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Adds per-hour deltas to the rollup rows (keys must be unique within `rows`), in one
/// statement.
pub async fn upsert_hourly(tx: &mut Tx, rows: &[HourlyDelta]) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    const COLS: [Col; 9] = [
        batch::int("monitor_seq"),
        batch::int("bucket_start"),
        batch::int("total"),
        batch::int("up"),
        batch::int("down"),
        batch::int("degraded"),
        batch::int("latency_sum"),
        batch::int("latency_min"),
        batch::int("latency_max"),
    ];
    // CASE instead of MIN()/LEAST(): the one spelling both dialects share.
    let sql = format!(
        "INSERT INTO heartbeat_hourly AS h (monitor_seq, bucket_start, total, up, down, \
         degraded, latency_sum, latency_min, latency_max) {} \
         ON CONFLICT (monitor_seq, bucket_start) DO UPDATE SET \
         total = h.total + excluded.total, up = h.up + excluded.up, \
         down = h.down + excluded.down, degraded = h.degraded + excluded.degraded, \
         latency_sum = h.latency_sum + excluded.latency_sum, \
         latency_min = CASE WHEN h.latency_min IS NULL OR excluded.latency_min < h.latency_min \
             THEN excluded.latency_min ELSE h.latency_min END, \
         latency_max = CASE WHEN h.latency_max IS NULL OR excluded.latency_max > h.latency_max \
             THEN excluded.latency_max ELSE h.latency_max END",
        batch::select_rows(super::backend_of(tx), &COLS, 1)
    );
    let json = batch::encode(
        &rows
            .iter()
            .map(|r| {
                (
                    r.monitor_seq,
                    r.bucket_start,
                    r.total,
                    r.up,
                    r.down,
                    r.degraded,
                    r.latency_sum,
                    r.latency_min,
                    r.latency_max,
                )
            })
            .collect::<Vec<_>>(),
    )?;
    sqlx::query(&sql).bind(json).execute(&mut **tx).await?;
    Ok(())
}

/// Adds histogram counts `(monitor_seq, bucket_start, bin, n)` (keys unique within `rows`), in
/// one statement.
pub async fn upsert_bins(tx: &mut Tx, rows: &[(i64, i64, i64, i64)]) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    const COLS: [Col; 4] = [
        batch::int("monitor_seq"),
        batch::int("bucket_start"),
        batch::int("bin"),
        batch::int("n"),
    ];
    let sql = format!(
        "INSERT INTO heartbeat_hourly_bins AS b (monitor_seq, bucket_start, bin, n) {} \
         ON CONFLICT (monitor_seq, bucket_start, bin) DO UPDATE SET n = b.n + excluded.n",
        batch::select_rows(super::backend_of(tx), &COLS, 1)
    );
    sqlx::query(&sql)
        .bind(batch::encode(rows)?)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reads

/// The `seq` of a monitor of this workspace, or `None` (absent, or another workspace's).
pub async fn monitor_seq<'e>(
    e: impl Exec<'e>,
    workspace_id: &str,
    monitor_id: &str,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT seq FROM monitors WHERE id = $1 AND workspace_id = $2")
        .bind(monitor_id)
        .bind(workspace_id)
        .fetch_optional(e)
        .await
}

/// A heartbeat joined with its region name and details, as the API shows it.
#[derive(Debug, Clone, FromRow)]
pub struct StoredHeartbeat {
    pub ts: i64,
    pub region_id: i64,
    pub region: String,
    pub status: i64,
    pub latency: i64,
    pub status_code: Option<i64>,
    pub timings: Option<Vec<u8>>,
    pub retry_count: i64,
    pub message: Option<String>,
    pub response_headers: Option<String>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<String>,
    pub assertion_results: Option<String>,
}

/// Filters of a heartbeat listing; `before` is the `(ts, region_id)` key of a keyset page.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// The codes of one status ([`super::status::codes_of`]).
    pub status: Option<Vec<i64>>,
    pub region_id: Option<i64>,
    pub correlation_id: Option<String>,
    pub before: Option<(i64, i64)>,
    pub limit: i64,
}

/// A monitor's heartbeats, newest first.
pub async fn list<'e>(
    e: impl Exec<'e>,
    seq: i64,
    f: &ListFilter,
) -> Result<Vec<StoredHeartbeat>, sqlx::Error> {
    let mut sql = String::from(
        "SELECT h.ts, h.region_id, r.name AS region, h.status, h.latency, h.status_code, \
         h.timings, h.retry_count, d.message, d.response_headers, d.response_body, \
         d.resolved_ip, d.assertion_results \
         FROM heartbeats h JOIN regions r ON r.id = h.region_id \
         LEFT JOIN heartbeat_details d ON d.monitor_seq = h.monitor_seq AND d.ts = h.ts \
         AND d.region_id = h.region_id WHERE h.monitor_seq = $1",
    );
    let mut n = 1;
    let mut next = |sql: &mut String, clause: &str| {
        n += 1;
        sql.push_str(&clause.replace('?', &format!("${n}")));
    };
    if f.from.is_some() {
        next(&mut sql, " AND h.ts >= ?");
    }
    if f.to.is_some() {
        next(&mut sql, " AND h.ts < ?");
    }
    if let Some(codes) = &f.status {
        next(&mut sql, " AND h.status IN (?");
        for _ in 1..codes.len() {
            next(&mut sql, ", ?");
        }
        sql.push(')');
    }
    if f.region_id.is_some() {
        next(&mut sql, " AND h.region_id = ?");
    }
    if f.correlation_id.is_some() {
        next(&mut sql, " AND h.correlation_id = ?");
    }
    if f.before.is_some() {
        next(&mut sql, " AND (h.ts < ?");
        next(&mut sql, " OR (h.ts = ?");
        next(&mut sql, " AND h.region_id < ?))");
    }
    next(&mut sql, " ORDER BY h.ts DESC, h.region_id DESC LIMIT ?");
    let mut q = sqlx::query_as::<_, StoredHeartbeat>(&sql).bind(seq);
    if let Some(v) = f.from {
        q = q.bind(v);
    }
    if let Some(v) = f.to {
        q = q.bind(v);
    }
    for v in f.status.iter().flatten() {
        q = q.bind(*v);
    }
    if let Some(v) = f.region_id {
        q = q.bind(v);
    }
    if let Some(v) = &f.correlation_id {
        q = q.bind(v.clone());
    }
    if let Some((ts, region)) = f.before {
        q = q.bind(ts).bind(ts).bind(region);
    }
    q.bind(f.limit).fetch_all(e).await
}

/// One stored hourly rollup row.
#[derive(Debug, Clone, FromRow)]
pub struct HourlyRow {
    pub bucket_start: i64,
    pub total: i64,
    pub up: i64,
    pub down: i64,
    pub degraded: i64,
    pub latency_sum: i64,
    pub latency_min: Option<i64>,
    pub latency_max: Option<i64>,
}

/// Rollup rows with `from <= bucket_start < to`, oldest first.
pub async fn hourly<'e>(
    e: impl Exec<'e>,
    seq: i64,
    from: i64,
    to: i64,
) -> Result<Vec<HourlyRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT bucket_start, total, up, down, degraded, latency_sum, latency_min, latency_max \
         FROM heartbeat_hourly WHERE monitor_seq = $1 AND bucket_start >= $2 \
         AND bucket_start < $3 ORDER BY bucket_start",
    )
    .bind(seq)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// Histogram bins `(bucket_start, bin, n)` of the hours `from <= bucket_start < to`.
pub async fn bins<'e>(
    e: impl Exec<'e>,
    seq: i64,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT bucket_start, bin, n FROM heartbeat_hourly_bins WHERE monitor_seq = $1 \
         AND bucket_start >= $2 AND bucket_start < $3 ORDER BY bucket_start, bin",
    )
    .bind(seq)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// `(ts, status, latency)` of raw heartbeats with `from <= ts < to`, oldest first.
pub async fn points<'e>(
    e: impl Exec<'e>,
    seq: i64,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT ts, status, latency FROM heartbeats WHERE monitor_seq = $1 AND ts >= $2 \
         AND ts < $3 ORDER BY ts, region_id",
    )
    .bind(seq)
    .bind(from)
    .bind(to)
    .fetch_all(e)
    .await
}

/// One monitor's recent heartbeat `(monitor id, ts, status code, latency)`, as
/// [`recent_of_workspace`] reads it.
pub type RecentRow = (String, i64, i64, i64);

/// The last `per_monitor` heartbeats (by time, across regions) of every monitor of workspace
/// `ws`, grouped by monitor and oldest first within each. One statement: for each monitor an
/// index seek finds the timestamp `per_monitor` rows back, then a range scan reads from it.
pub async fn recent_of_workspace<'e>(
    e: impl Exec<'e>,
    ws: &str,
    per_monitor: i64,
) -> Result<Vec<RecentRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.id, h.ts, h.status, h.latency FROM \
         (SELECT m.id, m.seq, COALESCE((SELECT x.ts FROM heartbeats x WHERE x.monitor_seq = m.seq \
         ORDER BY x.ts DESC LIMIT 1 OFFSET $2), 0) AS since \
         FROM monitors m WHERE m.workspace_id = $1) c \
         JOIN heartbeats h ON h.monitor_seq = c.seq AND h.ts >= c.since \
         ORDER BY c.seq, h.ts, h.region_id",
    )
    .bind(ws)
    .bind(per_monitor - 1)
    .fetch_all(e)
    .await
}

/// Counted and down checks `(monitor id, total, down)` in the rollup hours from `from` on,
/// of every monitor of workspace `ws` that has any.
pub async fn counts_of_workspace<'e>(
    e: impl Exec<'e>,
    ws: &str,
    from: i64,
) -> Result<Vec<(String, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT m.id, CAST(SUM(r.total) AS BIGINT), CAST(SUM(r.down) AS BIGINT) \
         FROM monitors m JOIN heartbeat_hourly r ON r.monitor_seq = m.seq \
         WHERE m.workspace_id = $1 AND r.bucket_start >= $2 GROUP BY m.id",
    )
    .bind(ws)
    .bind(from)
    .fetch_all(e)
    .await
}

/// The status of the last heartbeat with a verdict (not PENDING) before `ts`, if one is
/// still stored.
pub async fn status_before<'e>(
    e: impl Exec<'e>,
    seq: i64,
    ts: i64,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT status FROM heartbeats WHERE monitor_seq = $1 AND ts < $2 AND status <> $3 \
         ORDER BY ts DESC, region_id DESC LIMIT 1",
    )
    .bind(seq)
    .bind(ts)
    .bind(super::status::PENDING)
    .fetch_optional(e)
    .await
}

// ---------------------------------------------------------------------------------------------
// Retention

/// The smallest monitor seq above `after` that has rows in `table` (a loose index scan: one
/// index seek per monitor, never a full scan).
pub async fn next_seq<'e>(
    e: impl Exec<'e>,
    table: &str,
    after: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let sql = format!(
        "SELECT monitor_seq FROM {table} WHERE monitor_seq > $1 ORDER BY monitor_seq LIMIT 1"
    );
    sqlx::query_scalar(&sql).bind(after).fetch_optional(e).await
}

/// Whether a monitor row with this seq exists.
pub async fn monitor_exists<'e>(e: impl Exec<'e>, seq: i64) -> Result<bool, sqlx::Error> {
    let n: Option<i64> = sqlx::query_scalar("SELECT seq FROM monitors WHERE seq = $1")
        .bind(seq)
        .fetch_optional(e)
        .await?;
    Ok(n.is_some())
}

/// Deletes at most about `slice` rows of `table` for one monitor with `time_col < cutoff`;
/// returns the number deleted. Portable stand-in for `DELETE ... LIMIT`: find the key at the
/// slice boundary, delete below it.
pub async fn delete_slice(
    db: &Db,
    table: &str,
    time_col: &str,
    seq: i64,
    cutoff: i64,
    slice: i64,
) -> Result<u64, sqlx::Error> {
    let probe = format!(
        "SELECT {time_col} FROM {table} WHERE monitor_seq = $1 AND {time_col} < $2 \
         ORDER BY {time_col} LIMIT 1 OFFSET $3"
    );
    let boundary: Option<i64> = sqlx::query_scalar(&probe)
        .bind(seq)
        .bind(cutoff)
        .bind(slice)
        .fetch_optional(db.reader())
        .await?;
    let upto = boundary.map_or(cutoff, |b| b.min(cutoff));
    let sql = format!("DELETE FROM {table} WHERE monitor_seq = $1 AND {time_col} < $2");
    let done = sqlx::query(&sql)
        .bind(seq)
        .bind(upto)
        .execute(db.writer())
        .await?;
    if done.rows_affected() > 0 {
        return Ok(done.rows_affected());
    }
    // Every row of the slice shares the oldest time (one per region or bin): take that time
    // whole, which is a handful of rows.
    let Some(b) = boundary else { return Ok(0) };
    let sql = format!("DELETE FROM {table} WHERE monitor_seq = $1 AND {time_col} <= $2");
    let done = sqlx::query(&sql)
        .bind(seq)
        .bind(b)
        .execute(db.writer())
        .await?;
    Ok(done.rows_affected())
}
