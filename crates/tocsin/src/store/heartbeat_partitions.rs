//! Daily partitions of raw heartbeats on PostgreSQL (migration `0045_heartbeat_partitions`):
//! `heartbeats` is partitioned by range of `ts`, one partition per UTC day
//! (`heartbeats_YYYY_MM_DD`), plus the rows stored before the migration (`heartbeats_before`,
//! everything up to a day boundary) and a default partition for a row no day covers.
//!
//! Why: at a million monitors every minute a day of heartbeats is 1.4 billion rows; deleting
//! them row by row (and vacuuming behind the deletes) would cost about what inserting them
//! did. Dropping a day's partition is one statement whatever it holds. Retention
//! (`monitoring::retention`) drops every partition that lies wholly before its cutoff and
//! deletes rows only from the partitions that are not days (`heartbeats_before`, the
//! default), so on PostgreSQL a heartbeat is kept between `heartbeat_retention_days` and one
//! day more.
//!
//! Days are created [`AHEAD_DAYS`] ahead, at start-up and by every retention pass (on the
//! node holding the scheduler role), so a day's partition exists long before its first row.
//! A day whose range already has rows in the default partition (a server that ran without
//! its partitions, a clock far off) is not created: those rows stay in the default
//! partition, where retention deletes them row by row. Nothing here runs on SQLite.

use chrono::{DateTime, Utc};

use super::Exec;

/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// How many days ahead of today partitions are kept ready.
pub const AHEAD_DAYS: i64 = 7;

/// One partition of `heartbeats` and the range it covers (`None`: unbounded on that side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub from: Option<i64>,
    pub to: Option<i64>,
    /// The default partition (covers whatever no other does).
    pub default: bool,
}

/// The partitions of `heartbeats`, with their bounds as PostgreSQL states them.
pub async fn list<'e>(e: impl Exec<'e>) -> Result<Vec<Partition>, sqlx::Error> {
    // A partition another transaction is dropping has no bound left to show: skipped.
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT CAST(c.relname AS TEXT), pg_get_expr(c.relpartbound, c.oid) \
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = CAST('heartbeats' AS regclass) ORDER BY c.relname",
    )
    .fetch_all(e)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, bound)| Some(parse_bound(name, &bound?)))
        .collect())
}

/// Reads `FOR VALUES FROM (a) TO (b)` (a bound is a number, quoted or not, or
/// `MINVALUE`/`MAXVALUE`) or `DEFAULT`.
fn parse_bound(name: String, bound: &str) -> Partition {
    if bound.trim() == "DEFAULT" {
        return Partition {
            name,
            from: None,
            to: None,
            default: true,
        };
    }
    let value = |after: &str| -> Option<i64> {
        let rest = &bound[bound.find(after)? + after.len()..];
        let inner = rest.trim_start().strip_prefix('(')?;
        let inner = &inner[..inner.find(')')?];
        inner.trim().trim_matches('\'').parse().ok()
    };
    Partition {
        from: value("FROM"),
        to: value(" TO"),
        name,
        default: false,
    }
}

/// The name of the partition of the UTC day starting at `day_start` (ms).
pub fn day_name(day_start: i64) -> String {
    let date = DateTime::<Utc>::from_timestamp_millis(day_start).unwrap_or_default();
    format!("heartbeats_{}", date.format("%Y_%m_%d"))
}

/// The start (ms) of the UTC day holding `ts`.
pub fn day_start(ts: i64) -> i64 {
    ts.div_euclid(DAY_MS) * DAY_MS
}

/// Creates the partitions of today and the next [`AHEAD_DAYS`] days (by `now_ms`) that no
/// partition covers yet; returns how many were created. A day that cannot be created (rows
/// of it already in the default partition, or another node creating it at the same moment)
/// is skipped and left to the next pass.
pub async fn create_ahead(db: &super::Db, now_ms: i64) -> Result<usize, sqlx::Error> {
    let existing = list(db.reader()).await?;
    let mut created = 0;
    for d in 0..=AHEAD_DAYS {
        let from = day_start(now_ms) + d * DAY_MS;
        let to = from + DAY_MS;
        let covered = existing
            .iter()
            .any(|p| !p.default && p.from.is_none_or(|f| f < to) && p.to.is_none_or(|t| t > from));
        if covered {
            continue;
        }
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {} PARTITION OF heartbeats FOR VALUES FROM ({from}) TO ({to})",
            day_name(from)
        );
        match sqlx::query(&sql).execute(db.writer()).await {
            Ok(_) => created += 1,
            Err(e) => tracing::info!(error = %e, day = %day_name(from),
                "heartbeat partition not created; its rows stay in the default partition"),
        }
    }
    Ok(created)
}

/// Drops every partition whose rows all lie before `cutoff` (not the default one); returns
/// the names dropped.
pub async fn drop_before(db: &super::Db, cutoff: i64) -> Result<Vec<String>, sqlx::Error> {
    let mut dropped = Vec::new();
    for p in list(db.reader()).await? {
        if p.default || p.to.is_none_or(|t| t > cutoff) {
            continue;
        }
        // The name comes from the catalogue, never from input; quoted all the same.
        let sql = format!("DROP TABLE IF EXISTS \"{}\"", p.name.replace('"', "\"\""));
        sqlx::query(&sql).execute(db.writer()).await?;
        dropped.push(p.name);
    }
    Ok(dropped)
}

/// The partitions retention still deletes rows from: those that are not one day.
pub fn row_pruned(parts: &[Partition]) -> Vec<String> {
    parts
        .iter()
        .filter(|p| match (p.from, p.to) {
            (Some(f), Some(t)) => t - f != DAY_MS || f != day_start(f),
            _ => true,
        })
        .map(|p| p.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bounds_postgres_states() {
        let p = parse_bound(
            "heartbeats_before".into(),
            "FOR VALUES FROM (MINVALUE) TO ('1795910400000')",
        );
        assert_eq!(
            (p.from, p.to, p.default),
            (None, Some(1_795_910_400_000), false)
        );
        let p = parse_bound("d".into(), "FOR VALUES FROM ('86400000') TO ('172800000')");
        assert_eq!((p.from, p.to), (Some(DAY_MS), Some(2 * DAY_MS)));
        let p = parse_bound("x".into(), "DEFAULT");
        assert!(p.default);
    }

    #[test]
    fn names_a_day_by_its_date_and_prunes_rows_only_outside_days() {
        assert_eq!(day_name(0), "heartbeats_1970_01_01");
        assert_eq!(day_start(DAY_MS + 5), DAY_MS);
        assert_eq!(day_start(-1), -DAY_MS);
        let parts = [
            parse_bound("b".into(), "FOR VALUES FROM (MINVALUE) TO ('172800000')"),
            parse_bound("d".into(), "FOR VALUES FROM ('172800000') TO ('259200000')"),
            parse_bound("x".into(), "DEFAULT"),
        ];
        assert_eq!(row_pruned(&parts), vec!["b".to_string(), "x".to_string()]);
    }
}
