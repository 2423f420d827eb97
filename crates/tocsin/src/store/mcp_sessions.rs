//! MCP sessions: the client's `initialize` parameters by session id, so any node can take over
//! a session another node opened (the MCP transport in `http/mcp/` reads and writes them only
//! when a session is not in its own memory, and on opening and ending one).

use sqlx::Row;

use super::Exec;

/// The stored `initialize` parameters (JSON) of session `id`.
pub async fn load<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<String>, sqlx::Error> {
    let row = sqlx::query("SELECT state FROM mcp_sessions WHERE id = $1")
        .bind(id)
        .fetch_optional(e)
        .await?;
    row.map(|r| r.try_get::<String, _>("state")).transpose()
}

pub async fn save<'e>(
    e: impl Exec<'e>,
    id: &str,
    state: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO mcp_sessions (id, state, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET state = excluded.state",
    )
    .bind(id)
    .bind(state)
    .bind(now)
    .execute(e)
    .await
    .map(|_| ())
}

pub async fn delete<'e>(e: impl Exec<'e>, id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM mcp_sessions WHERE id = $1")
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

/// Forgets sessions opened before `cutoff` (housekeeping); returns how many.
pub async fn delete_older_than<'e>(e: impl Exec<'e>, cutoff: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("DELETE FROM mcp_sessions WHERE created_at < $1")
        .bind(cutoff)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}
