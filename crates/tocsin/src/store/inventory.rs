//! The narrow reads of the reconciliation scan ([`crate::cluster::inventory`]): which monitors
//! a worker should hold, as a one-row digest (cheap enough to run every few seconds over
//! 100,000 monitors: the database sums, nothing but four numbers travels) and, only when the
//! digest differs from the worker's, as `(id, seq, version)` triples to diff.

use super::Exec;

/// Which monitors a worker holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// Active monitors of every type but PUSH: the scheduler's.
    Scheduled,
    /// Active PUSH monitors: the push watcher's.
    Push,
}

impl Set {
    fn filter(self) -> &'static str {
        match self {
            Set::Scheduled => "active = 1 AND type <> 'PUSH'",
            Set::Push => "active = 1 AND type = 'PUSH'",
        }
    }
}

/// Count, sum of `seq`, sum of `version` and sum of `seq * version` over the set. Any create,
/// delete, pause, resume or edit (which bumps `version`) moves at least one of them.
/// Only the monitors of `partitions` count (`None`: all), the share a worker holds.
pub async fn digest<'e>(
    e: impl Exec<'e>,
    set: Set,
    partitions: Option<&[usize]>,
) -> Result<[i64; 4], sqlx::Error> {
    let sql = format!(
        "SELECT COUNT(*), CAST(COALESCE(SUM(seq), 0) AS BIGINT), \
         CAST(COALESCE(SUM(version), 0) AS BIGINT), CAST(COALESCE(SUM(seq * version), 0) AS BIGINT) \
         FROM monitors WHERE {}{}",
        set.filter(),
        super::in_partitions(partitions)
    );
    let (n, seqs, versions, mixed): (i64, i64, i64, i64) =
        sqlx::query_as(&sql).fetch_one(e).await?;
    Ok([n, seqs, versions, mixed])
}

/// Every monitor of the set (in `partitions`, `None`: all) as `(id, seq, version)`.
pub async fn versions<'e>(
    e: impl Exec<'e>,
    set: Set,
    partitions: Option<&[usize]>,
) -> Result<Vec<(String, i64, i64)>, sqlx::Error> {
    let sql = format!(
        "SELECT id, seq, version FROM monitors WHERE {}{}",
        set.filter(),
        super::in_partitions(partitions)
    );
    sqlx::query_as(&sql).fetch_all(e).await
}
