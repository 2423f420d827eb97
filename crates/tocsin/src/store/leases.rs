//! The `leases` table (migration 0007): named leases that one node of a cluster holds at a
//! time, with an expiry read from the database's own clock so that no two nodes' clocks are
//! ever compared. PostgreSQL only: on SQLite there is one node and nothing to contend for.
//! The protocol around these statements lives in [`crate::cluster::lease`].

use super::Exec;

/// The database's clock, in milliseconds since the epoch (`clock_timestamp()`, not the
/// transaction's start time).
const DB_NOW_MS: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

/// Takes `name` for `holder` for `ttl_ms` from now (by the database's clock), or extends it
/// when `holder` already has it. Succeeds only when the lease is free, expired or already
/// `holder`'s; two contenders at once serialize on the row, and the second sees the first's
/// fresh expiry. Returns the term (bumped when the lease changes hands), `None` when another
/// node holds it.
pub async fn acquire<'e>(
    e: impl Exec<'e>,
    name: &str,
    holder: &str,
    ttl_ms: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let sql = format!(
        "INSERT INTO leases (name, holder, term, expires_at) VALUES ($1, $2, 1, {DB_NOW_MS} + $3) \
         ON CONFLICT (name) DO UPDATE SET \
           term = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.term ELSE leases.term + 1 END, \
           holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at \
         WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < {DB_NOW_MS} \
         RETURNING term"
    );
    sqlx::query_scalar(&sql)
        .bind(name)
        .bind(holder)
        .bind(ttl_ms)
        .fetch_optional(e)
        .await
}

/// Gives `name` up at once if `holder` has it, so another node need not wait for the expiry.
pub async fn release<'e>(e: impl Exec<'e>, name: &str, holder: &str) -> Result<u64, sqlx::Error> {
    sqlx::query("UPDATE leases SET expires_at = 0 WHERE name = $1 AND holder = $2")
        .bind(name)
        .bind(holder)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

/// Who holds `name` now (an unexpired lease), if anyone.
pub async fn holder<'e>(e: impl Exec<'e>, name: &str) -> Result<Option<String>, sqlx::Error> {
    let sql = format!("SELECT holder FROM leases WHERE name = $1 AND expires_at >= {DB_NOW_MS}");
    sqlx::query_scalar(&sql).bind(name).fetch_optional(e).await
}

/// [`acquire`] for many leases at once (a node's partitions and its presence), in one
/// statement: returns the names now held by `holder`.
pub async fn acquire_many<'e>(
    e: impl Exec<'e>,
    names: &[String],
    holder: &str,
    ttl_ms: i64,
) -> Result<Vec<String>, sqlx::Error> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<String> = (0..names.len())
        .map(|i| format!("(${}, $1, 1, {DB_NOW_MS} + $2)", i + 3))
        .collect();
    let sql = format!(
        "INSERT INTO leases (name, holder, term, expires_at) VALUES {} \
         ON CONFLICT (name) DO UPDATE SET \
           term = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.term ELSE leases.term + 1 END, \
           holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at \
         WHERE leases.holder = EXCLUDED.holder OR leases.expires_at < {DB_NOW_MS} \
         RETURNING name",
        rows.join(", ")
    );
    let mut q = sqlx::query_scalar(&sql).bind(holder).bind(ttl_ms);
    for n in names {
        q = q.bind(n);
    }
    q.fetch_all(e).await
}

/// [`release`] for many leases at once.
pub async fn release_many<'e>(
    e: impl Exec<'e>,
    names: &[String],
    holder: &str,
) -> Result<u64, sqlx::Error> {
    if names.is_empty() {
        return Ok(0);
    }
    let list: Vec<String> = (0..names.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "UPDATE leases SET expires_at = 0 WHERE holder = $1 AND name IN ({})",
        list.join(", ")
    );
    let mut q = sqlx::query(&sql).bind(holder);
    for n in names {
        q = q.bind(n);
    }
    q.execute(e).await.map(|r| r.rows_affected())
}

/// Every unexpired lease whose name matches one of the `LIKE` patterns: `(name, holder)`.
pub async fn held_like<'e>(
    e: impl Exec<'e>,
    patterns: &[&str],
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let any: Vec<String> = (0..patterns.len())
        .map(|i| format!("name LIKE ${}", i + 1))
        .collect();
    let sql = format!(
        "SELECT name, holder FROM leases WHERE ({}) AND expires_at >= {DB_NOW_MS}",
        any.join(" OR ")
    );
    let mut q = sqlx::query_as(&sql);
    for p in patterns {
        q = q.bind(*p);
    }
    q.fetch_all(e).await
}

/// Deletes the leases matching `pattern` expired for more than `age_ms`.
pub async fn purge_expired_like<'e>(
    e: impl Exec<'e>,
    pattern: &str,
    age_ms: i64,
) -> Result<u64, sqlx::Error> {
    let sql = format!("DELETE FROM leases WHERE name LIKE $1 AND expires_at < {DB_NOW_MS} - $2");
    sqlx::query(&sql)
        .bind(pattern)
        .bind(age_ms)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}
