//! Probe keys: the credentials remote probes connect with (`tocsin probe-key ...`). The key is
//! never stored, only its SHA-256 (`key_hash`). An unrevoked key makes its region known to the
//! API (the monitoring module's `known_regions`); `last_seen_at` is written by the probe
//! endpoint while a probe holding the key is connected.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct ProbeKeyRow {
    pub id: String,
    pub region: String,
    pub name: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    pub last_seen_at: Option<i64>,
}

const COLUMNS: &str = "id, region, name, created_at, revoked_at, last_seen_at";

pub async fn insert<'e>(
    e: impl Exec<'e>,
    k: &ProbeKeyRow,
    key_hash: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO probe_keys (id, region, name, key_hash, created_at, revoked_at, last_seen_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&k.id)
    .bind(&k.region)
    .bind(&k.name)
    .bind(key_hash)
    .bind(k.created_at)
    .bind(k.revoked_at)
    .bind(k.last_seen_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// Every key, revoked ones included, oldest first.
pub async fn list<'e>(e: impl Exec<'e>) -> Result<Vec<ProbeKeyRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM probe_keys ORDER BY id");
    sqlx::query_as(&sql).fetch_all(e).await
}

/// Revokes a key; 0 when there is no such unrevoked key.
pub async fn revoke<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("UPDATE probe_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

/// The unrevoked key with this hash, with the stored hash (for the constant-time comparison).
pub async fn find_active_by_hash<'e>(
    e: impl Exec<'e>,
    key_hash: &str,
) -> Result<Option<(ProbeKeyRow, String)>, sqlx::Error> {
    #[derive(FromRow)]
    struct WithHash {
        #[sqlx(flatten)]
        row: ProbeKeyRow,
        key_hash: String,
    }
    let sql = format!(
        "SELECT {COLUMNS}, key_hash FROM probe_keys WHERE key_hash = $1 AND revoked_at IS NULL"
    );
    let found: Option<WithHash> = sqlx::query_as(&sql)
        .bind(key_hash)
        .fetch_optional(e)
        .await?;
    Ok(found.map(|f| (f.row, f.key_hash)))
}

/// Records that a probe holding key `id` is alive; 0 when the key has been revoked meanwhile
/// (the caller then drops the connection).
pub async fn touch<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("UPDATE probe_keys SET last_seen_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

/// The regions with at least one unrevoked key, by name, each with the latest `last_seen_at`
/// of its keys.
pub async fn active_regions<'e>(
    e: impl Exec<'e>,
) -> Result<Vec<(String, Option<i64>)>, sqlx::Error> {
    // Rows, not MAX(...): an aggregate's type is not declared, which sqlx's Any driver cannot
    // always decode on SQLite; a region has a handful of keys at most.
    let rows: Vec<(String, Option<i64>)> = sqlx::query_as(
        "SELECT region, last_seen_at FROM probe_keys WHERE revoked_at IS NULL ORDER BY region",
    )
    .fetch_all(e)
    .await?;
    let mut out: Vec<(String, Option<i64>)> = Vec::new();
    for (region, seen) in rows {
        match out.last_mut() {
            Some((r, latest)) if *r == region => *latest = (*latest).max(seen),
            _ => out.push((region, seen)),
        }
    }
    Ok(out)
}
