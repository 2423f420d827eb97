//! A monitor's events: its status changes, newest first (`monitors:read`). The rows are
//! written by the check cycle ([`crate::monitoring::cycle`]) in the transaction of the state
//! update they describe; see [`crate::store::events`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::{DomainError, FieldError, Resource};
use crate::schema::exact_object;
use tocsin_core::Status;

use crate::store::events::{self, EventRow};
use crate::store::monitors;

pub const DEFAULT_EVENT_LIMIT: u32 = 100;
pub const MAX_EVENT_LIMIT: u32 = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventQuery {
    /// Only events with a smaller `seq` (the `seq` of the last event of the previous page).
    pub before: Option<i64>,
    /// 1 to 1000 (default 100).
    pub limit: Option<u32>,
}

impl EventQuery {
    /// The problems with `limit` and `before`, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(l) = self.limit {
            if !(1..=MAX_EVENT_LIMIT).contains(&l) {
                errors.push(FieldError::new("limit", "must be 1 to 1000"));
            }
        }
        if self.before.is_some_and(|b| b < 1) {
            errors.push(FieldError::new("before", "must be at least 1"));
        }
        errors
    }
}

/// What a status change was about: the stored kind, typed where the row is read.
pub use crate::store::events::EventKind as MonitorEventKind;

/// One status change of a monitor.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct MonitorEvent {
    pub id: String,
    pub monitor_id: String,
    /// 1, 2, 3 ... per monitor, in the order the changes happened.
    #[schemars(with = "f64")]
    pub seq: i64,
    pub kind: MonitorEventKind,
    /// The status before the change.
    pub from: Status,
    /// The status after the change.
    pub to: Status,
    /// Why, in words (the failing check's message for `down`), when known.
    pub message: Option<String>,
    /// Whether notification channels should hear of this change.
    pub alert: bool,
    /// RFC 3339.
    pub created_at: String,
}

/// An event as the API shows it (the store has typed it already).
fn view(r: EventRow) -> MonitorEvent {
    MonitorEvent {
        kind: r.kind,
        from: r.from_status,
        to: r.to_status,
        seq: r.seq,
        message: r.message,
        alert: r.alert != 0,
        created_at: rfc3339(r.created_at),
        id: r.id,
        monitor_id: r.monitor_id,
    }
}

/// A monitor's events, newest first, older than `query.before` when given.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    query: &EventQuery,
) -> Result<Vec<MonitorEvent>, DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    let errors = query.check();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let db = cx.db().reader();
    if monitors::get(db, &caller.workspace_id, monitor_id)
        .await?
        .is_none()
    {
        return Err(DomainError::NotFound(Resource::Monitor));
    }
    let limit = i64::from(query.limit.unwrap_or(DEFAULT_EVENT_LIMIT));
    let rows =
        events::list_recent(db, &caller.workspace_id, monitor_id, query.before, limit).await?;
    // Rows this build cannot read (a kind from a newer release, a corrupt status) were
    // reported and left out by the store: a list read skips them (see `store::corrupt`).
    Ok(rows.into_iter().map(view).collect())
}
