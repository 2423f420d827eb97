//! A monitor's flap state: since when it flaps and the times of its recent changes between UP
//! and DOWN (a bounded JSON array of milliseconds), columns of the monitor row written beside
//! its status, never bumping `version`. `monitoring::transition` reads and writes them in the
//! status change's transaction (after the state `UPDATE`, so on PostgreSQL the row is locked);
//! `monitoring::flapping` ends quiet ones on the scheduling node with a compare-and-set, so a
//! status change committed meanwhile wins.

use sqlx::FromRow;
use tocsin_core::{FlapSettings, FlapState};

use super::Exec;

/// The flap columns of one monitor, with its status.
#[derive(Debug, Clone, FromRow)]
pub struct FlapRow {
    pub id: String,
    pub workspace_id: String,
    pub status: String,
    pub flap_transitions: Option<i64>,
    pub flap_window_minutes: Option<i64>,
    pub flapping_since: Option<i64>,
    /// JSON array of milliseconds, oldest first.
    pub flap_changes: String,
}

const COLUMNS: &str = "id, workspace_id, status, flap_transitions, flap_window_minutes, \
                       flapping_since, flap_changes";

impl FlapRow {
    /// The settings; `None` when detection is off (or the stored values are out of range).
    pub fn settings(&self) -> Option<FlapSettings> {
        let t = u32::try_from(self.flap_transitions?).ok()?;
        let w = u32::try_from(self.flap_window_minutes?).ok()?;
        FlapSettings::new(t, w).ok()
    }

    /// The state; an unreadable change list counts as no changes (it only ever delays
    /// detection by one window), never as an error that would block the status change.
    pub fn state(&self) -> FlapState {
        FlapState {
            flapping_since: self.flapping_since,
            changes: serde_json::from_str(&self.flap_changes).unwrap_or_default(),
        }
    }
}

/// The change list as stored.
pub fn changes_text(changes: &[i64]) -> String {
    serde_json::to_string(changes).unwrap_or_else(|_| "[]".into())
}

/// One monitor's flap columns.
pub async fn read<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<FlapRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM monitors WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// Writes a monitor's flap state (inside the status change's transaction).
pub async fn write<'e>(e: impl Exec<'e>, id: &str, state: &FlapState) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("UPDATE monitors SET flapping_since = $1, flap_changes = $2 WHERE id = $3")
            .bind(state.flapping_since)
            .bind(changes_text(&state.changes))
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

/// Every flapping monitor (paused ones too: pausing does not settle anything), oldest first.
pub async fn flapping<'e>(e: impl Exec<'e>, limit: i64) -> Result<Vec<FlapRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM monitors WHERE flapping_since IS NOT NULL \
         ORDER BY flapping_since, id LIMIT $1"
    );
    sqlx::query_as(&sql).bind(limit).fetch_all(e).await
}

/// Ends a monitor's flapping if its flap columns are still `seen`'s: writes `next` and
/// returns the status it settled on, or `None` when something changed meanwhile.
pub async fn end<'e>(
    e: impl Exec<'e>,
    seen: &FlapRow,
    next: &FlapState,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE monitors SET flapping_since = $1, flap_changes = $2 \
         WHERE id = $3 AND flapping_since = $4 AND flap_changes = $5 RETURNING status",
    )
    .bind(next.flapping_since)
    .bind(changes_text(&next.changes))
    .bind(&seen.id)
    .bind(seen.flapping_since)
    .bind(&seen.flap_changes)
    .fetch_optional(e)
    .await
}

/// When the monitor's latest event of `kind` happened, and its message.
pub async fn latest_event<'e>(
    e: impl Exec<'e>,
    monitor_id: &str,
    kind: &str,
) -> Result<Option<(i64, Option<String>)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT created_at, message FROM monitor_events WHERE monitor_id = $1 AND kind = $2 \
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(monitor_id)
    .bind(kind)
    .fetch_optional(e)
    .await
}
