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

/// Extends every unexpired lease named `prefix...` that `holder` has, in one statement;
/// returns their names. A lease that expired first is not extended (another node may be
/// taking it): its name is missing from the answer.
pub async fn renew_all<'e>(
    e: impl Exec<'e>,
    prefix: &str,
    holder: &str,
    ttl_ms: i64,
) -> Result<Vec<String>, sqlx::Error> {
    let sql = format!(
        "UPDATE leases SET expires_at = {DB_NOW_MS} + $3 \
         WHERE holder = $2 AND name LIKE $1 || '%' AND expires_at >= {DB_NOW_MS} RETURNING name"
    );
    sqlx::query_scalar(&sql)
        .bind(prefix)
        .bind(holder)
        .bind(ttl_ms)
        .fetch_all(e)
        .await
}

/// Every unexpired lease named `prefix...`, as (name, holder).
pub async fn held_with_prefix<'e>(
    e: impl Exec<'e>,
    prefix: &str,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let sql = format!(
        "SELECT name, holder FROM leases WHERE name LIKE $1 || '%' AND expires_at >= {DB_NOW_MS}"
    );
    sqlx::query_as(&sql).bind(prefix).fetch_all(e).await
}

/// Gives up every lease named `prefix...` that `holder` has.
pub async fn release_all<'e>(
    e: impl Exec<'e>,
    prefix: &str,
    holder: &str,
) -> Result<u64, sqlx::Error> {
    sqlx::query("UPDATE leases SET expires_at = 0 WHERE holder = $2 AND name LIKE $1 || '%'")
        .bind(prefix)
        .bind(holder)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}
