//! Incidents of status pages and their updates: filing, editing, posting updates, resolving,
//! reopening, publishing, archiving and deleting. Reads need `incidents:read`, writes
//! `incidents:write`, deleting `incidents:delete`.
//!
//! The records are `Incident`, `IncidentUpdate`, `IncidentList` and `IncidentWithUpdates` of
//! the interface, exactly. Decisions the contract leaves open, kept here and in the OpenAPI
//! descriptions:
//! - Every operation on one incident (create, read, edit, every action) answers
//!   `IncidentWithUpdates`, its updates newest first; item reads and writes carry the `ETag`.
//! - Invariants every write keeps: `resolvedAt` is set exactly while the status is RESOLVED;
//!   `publishedAt` exactly while the visibility is PUBLISHED; `scheduledFor` exactly while it
//!   is SCHEDULED (and, when set or changed, it must lie in the future).
//! - The status changes only through updates (`POST .../updates`, whose status becomes the
//!   incident's), `resolve` and `reopen`; PATCH edits title, severity, components and
//!   visibility. An update that moves a resolved incident to another status reopens it.
//! - Resolving a resolved incident answers 409 `INCIDENT_ALREADY_RESOLVED`; reopening one that
//!   is not resolved 409 `INCIDENT_NOT_RESOLVED`. Publishing a published incident and
//!   archiving an archived one change nothing and answer it as it is.
//! - Text (titles, messages) is stored as given, HTML included; the pages escape it on output.
//!
//! Every write enqueues its `incident.*` webhook events and subscriber emails in its
//! transaction (`alerting::incident_notify::tell`, which [`news_events`] decides for, the same
//! one the incidents a monitor's alert opens use), is audited in its transaction and then
//! announced ([`Notice::StatusPageChanged`]) so every node drops its rendered copy of the page.
//! The records and [`incident_view`], the one mapping from rows to the API shape, live in
//! `alerting::incident_view` (the notifications render them too) and are re-exported here; the
//! public pages use them with `store::incidents::public_for_page`.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::input::{check_name, double_option, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::alerting::incident_notify;
pub use crate::alerting::incident_notify::news_events;
pub use crate::alerting::incident_view::{
    incident_record, incident_view, update_record, Incident, IncidentList, IncidentSeverity,
    IncidentStatus, IncidentUpdate, IncidentVisibility, IncidentWithUpdates,
};
use crate::alerting::incident_view::{status_of, visibility_of};
use crate::alerting::subscriber_mail::SubscriberLinks;
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::incidents::{IncidentFilter, IncidentRow, UpdateRow};
use crate::store::{self};

pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_MESSAGE_CHARS: usize = 5_000;
/// More components than any page has; bounds the work one request can ask for.
pub const MAX_COMPONENTS: usize = 200;
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;

/// How many times a write is retried when another write changed the incident between its read
/// and its write (PostgreSQL only: on SQLite writes are serialised).
const ATTEMPTS: usize = 5;

// ---------------------------------------------------------------------------------------------
// Field checks

fn check_message(field: &str, message: &str, errors: &mut Vec<FieldError>) {
    let n = message.trim().chars().count();
    let controls = message
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'));
    if n == 0 || n > MAX_MESSAGE_CHARS || controls {
        errors.push(FieldError::new(
            field,
            format!("must be 1 to {MAX_MESSAGE_CHARS} characters (line breaks allowed)"),
        ));
    }
}

/// Count and duplicates of `affectedComponentIds`; whether they exist is checked against the
/// page by [`check_components`].
fn check_component_list(ids: &[String], errors: &mut Vec<FieldError>) {
    if ids.len() > MAX_COMPONENTS {
        errors.push(FieldError::new(
            "affectedComponentIds",
            format!("at most {MAX_COMPONENTS} components"),
        ));
        return;
    }
    let mut seen = HashSet::new();
    for (i, id) in ids.iter().enumerate() {
        if !seen.insert(id.as_str()) {
            errors.push(FieldError::new(
                format!("affectedComponentIds.{i}"),
                "duplicate component",
            ));
        }
    }
}

/// Every id must be a component of page `page_id`.
async fn check_components(
    cx: &Cx,
    ws: &str,
    page_id: &str,
    ids: &[String],
) -> Result<(), DomainError> {
    if ids.is_empty() {
        return Ok(());
    }
    let known: HashSet<String> = store::incidents::component_ids(cx.db().reader(), ws, page_id)
        .await?
        .into_iter()
        .collect();
    let errors: Vec<FieldError> = ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !known.contains(*id))
        .map(|(i, _)| {
            FieldError::new(
                format!("affectedComponentIds.{i}"),
                "not a component of this incident's status page",
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

fn in_future(field: &str, at: i64, now: i64) -> Result<(), DomainError> {
    if at > now {
        Ok(())
    } else {
        Err(DomainError::field(field, "must be in the future"))
    }
}

fn ms(t: &DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

// ---------------------------------------------------------------------------------------------
// Reads

/// `GET /incidents`: filters and offset paging.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IncidentQuery {
    /// Only this status page's incidents.
    pub status_page_id: Option<String>,
    /// Only incidents with this status.
    pub status: Option<IncidentStatus>,
    /// Only incidents with this visibility.
    pub visibility: Option<IncidentVisibility>,
    /// Incidents per page, 1 to 200 (default 50).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// How many matching incidents to skip (default 0).
    pub offset: Option<u32>,
}

impl Validate for IncidentQuery {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.limit.is_some_and(|l| !(1..=MAX_LIMIT).contains(&l)) {
            errors.push(FieldError::new(
                "limit",
                format!("must be between 1 and {MAX_LIMIT}"),
            ));
        }
        errors
    }
}

/// The workspace's incidents matching the filters, newest first, `limit` from `offset`, and how
/// many match in all.
pub async fn list(cx: &Cx, caller: &Caller, q: IncidentQuery) -> Result<IncidentList, DomainError> {
    caller.require::<needs::ListIncidents>()?;
    q.check()?;
    let filter = IncidentFilter {
        status_page_id: q.status_page_id.filter(|p| !p.is_empty()),
        status: q.status.map(|s| s.as_str().to_string()),
        visibility: q.visibility.map(|v| v.as_str().to_string()),
    };
    let db = cx.db().reader();
    let ws = &caller.workspace_id;
    let rows = store::incidents::list(
        db,
        ws,
        &filter,
        i64::from(q.limit.unwrap_or(DEFAULT_LIMIT)),
        i64::from(q.offset.unwrap_or(0)),
    )
    .await?;
    let total = store::incidents::count(db, ws, &filter).await?;
    Ok(IncidentList {
        // A corrupt row is reported and left out of the list (see `store::corrupt`).
        incidents: crate::store::corrupt::readable(rows.iter().map(incident_record)),
        total,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct IncidentPath {
    pub incident_id: String,
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<IncidentRow, DomainError> {
    store::incidents::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Incident))
}

/// The incident with its updates, and its version.
async fn read(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    let row = load(cx, caller, id).await?;
    let updates =
        store::incidents::updates(cx.db().reader(), &caller.workspace_id, &row.id).await?;
    Ok((incident_view(&row, &updates)?, row.version))
}

/// One incident with its updates, and its version.
pub async fn get(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<needs::GetIncident>()?;
    read(cx, caller, id).await
}

// ---------------------------------------------------------------------------------------------
// Create

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateIncident {
    /// A status page of this workspace.
    pub status_page_id: String,
    /// 1 to 200 characters.
    pub title: String,
    /// Default INVESTIGATING; RESOLVED files an incident that is already over.
    pub status: Option<IncidentStatus>,
    /// Default NONE.
    pub severity: Option<IncidentSeverity>,
    /// Default DRAFT.
    pub visibility: Option<IncidentVisibility>,
    /// Components of the page (default none), each once.
    pub affected_component_ids: Option<Vec<String>>,
    /// Required with visibility SCHEDULED, and then in the future; refused otherwise.
    pub scheduled_for: Option<DateTime<Utc>>,
    /// The first update's message (1 to 5,000 characters), with the incident's status.
    pub message: Option<String>,
}

impl Validate for CreateIncident {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("title", &self.title, MAX_TITLE_CHARS, &mut errors);
        if let Some(m) = &self.message {
            check_message("message", m, &mut errors);
        }
        if let Some(ids) = &self.affected_component_ids {
            check_component_list(ids, &mut errors);
        }
        let scheduled = self.visibility == Some(IncidentVisibility::Scheduled);
        match (scheduled, self.scheduled_for.is_some()) {
            (true, false) => errors.push(FieldError::new(
                "scheduledFor",
                "is required when visibility is SCHEDULED",
            )),
            (false, true) => errors.push(FieldError::new(
                "scheduledFor",
                "is only allowed when visibility is SCHEDULED",
            )),
            _ => {}
        }
        errors
    }
}

/// Files an incident (with a first update when `message` is given).
pub async fn create(
    core: &Cx,
    caller: &Caller,
    input: CreateIncident,
) -> Result<IncidentWithUpdates, DomainError> {
    caller.require::<needs::CreateIncident>()?;
    input.check()?;
    let ws = &caller.workspace_id;
    let now = core.clock().now_ms();
    if let Some(at) = &input.scheduled_for {
        in_future("scheduledFor", ms(at), now)?;
    }
    if !store::incidents::page_exists(core.db().reader(), ws, &input.status_page_id).await? {
        return Err(DomainError::field(
            "statusPageId",
            "no status page with this id in this workspace",
        ));
    }
    let components = input.affected_component_ids.unwrap_or_default();
    check_components(core, ws, &input.status_page_id, &components).await?;

    let status = input.status.unwrap_or(IncidentStatus::Investigating);
    let visibility = input.visibility.unwrap_or(IncidentVisibility::Draft);
    let mut row = IncidentRow {
        id: new_id(),
        workspace_id: ws.clone(),
        status_page_id: input.status_page_id,
        title: input.title.trim().to_string(),
        status: status.as_str().to_string(),
        severity: input
            .severity
            .unwrap_or(IncidentSeverity::None)
            .as_str()
            .to_string(),
        visibility: visibility.as_str().to_string(),
        affected_component_ids: String::new(),
        source_monitor_id: None,
        auto_generated: 0,
        version: 1,
        created_at: now,
        updated_at: now,
        resolved_at: (status == IncidentStatus::Resolved).then_some(now),
        published_at: (visibility == IncidentVisibility::Published).then_some(now),
        scheduled_for: input.scheduled_for.as_ref().map(ms),
        archived_at: None,
    };
    row.set_component_ids(&components);
    let mut tx = core.db().begin().await?;
    store::incidents::insert(&mut *tx, &row).await?;
    let first = input
        .message
        .as_ref()
        .map(|message| new_update(&row, message.trim().to_string(), false, now));
    if let Some(u) = &first {
        store::incidents::insert_update(&mut *tx, u).await?;
    }
    let queued = tell(core, &mut tx, None, &row, first.as_ref(), now).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "incident.create",
            resource_type: "incident",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "statusPageId": row.status_page_id,
                             "status": row.status, "visibility": row.visibility}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(core, &row.status_page_id);
    if queued > 0 {
        core.wake_deliveries();
    }
    Ok(read(core, caller, &row.id).await?.0)
}

fn new_update(row: &IncidentRow, message: String, system: bool, now: i64) -> UpdateRow {
    UpdateRow {
        id: new_id(),
        incident_id: row.id.clone(),
        workspace_id: row.workspace_id.clone(),
        message,
        status: row.status.clone(),
        system_generated: i64::from(system),
        created_at: now,
        updated_at: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Changes to one incident

/// A change to one incident: what it does to the row (given the time of the write), and the
/// update it adds (message, system-generated), if any. Refusing leaves everything as it was.
type ChangeFn<'a> = dyn Fn(&mut IncidentRow, i64) -> Outcome + Send + Sync + 'a;

/// What a change answers: the update it adds (message, system-generated), if any.
type Outcome = Result<Option<(String, bool)>, DomainError>;

/// Applies `change` to incident `id`: reads it inside the write transaction, refuses a stale
/// `expected` version, writes it locked on the version read (retrying when another node's write
/// came in between, which only PostgreSQL allows), adds the update, audits `action`, commits
/// and announces. A change that alters nothing and adds no update writes nothing.
async fn apply(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    action: &str,
    change: &ChangeFn<'_>,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    let ws = &caller.workspace_id;
    for _ in 0..ATTEMPTS {
        let now = core.clock().now_ms();
        let mut tx = core.db().begin().await?;
        let row = store::incidents::get(&mut *tx, ws, id)
            .await?
            .ok_or(DomainError::NotFound(Resource::Incident))?;
        if expected.is_some_and(|v| v != row.version) {
            return Err(DomainError::VersionConflict);
        }
        let mut next = row.clone();
        let update = change(&mut next, now)?;
        if next == row && update.is_none() {
            drop(tx);
            return read(core, caller, id).await;
        }
        next.updated_at = now;
        let rows = store::incidents::update(&mut *tx, &next, Some(row.version)).await?;
        if rows == 0 {
            // Changed (or deleted) since this transaction read it: read again.
            continue;
        }
        let added = update.map(|(message, system)| new_update(&next, message, system, now));
        if let Some(u) = &added {
            store::incidents::insert_update(&mut *tx, u).await?;
        }
        let queued = tell(core, &mut tx, Some(&row), &next, added.as_ref(), now).await?;
        audit::record(
            &mut *tx,
            caller,
            Entry {
                action,
                resource_type: "incident",
                resource_id: &next.id,
                metadata: json!({"title": next.title, "statusPageId": next.status_page_id,
                                 "status": next.status, "visibility": next.visibility}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        announce(core, &next.status_page_id);
        if queued > 0 {
            core.wake_deliveries();
        }
        return read(core, caller, id).await;
    }
    Err(DomainError::VersionConflict)
}

/// Sets the status, keeping `resolvedAt` set exactly while it is RESOLVED (the first
/// resolution's time is kept while it stays resolved).
fn set_status(row: &mut IncidentRow, status: IncidentStatus, now: i64) {
    row.status = status.as_str().to_string();
    row.resolved_at = if status == IncidentStatus::Resolved {
        row.resolved_at.or(Some(now))
    } else {
        None
    };
}

/// Sets the visibility, keeping `publishedAt` and `scheduledFor` consistent with it.
fn set_visibility(
    row: &mut IncidentRow,
    visibility: IncidentVisibility,
    scheduled_for: Option<i64>,
    now: i64,
) {
    row.visibility = visibility.as_str().to_string();
    row.published_at = if visibility == IncidentVisibility::Published {
        row.published_at.or(Some(now))
    } else {
        None
    };
    row.scheduled_for = if visibility == IncidentVisibility::Scheduled {
        scheduled_for
    } else {
        None
    };
}

/// Fields to change; absent ones stay. The status changes through updates, resolve and
/// reopen, not here.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateIncident {
    /// 1 to 200 characters.
    pub title: Option<String>,
    pub severity: Option<IncidentSeverity>,
    /// Replaces the list: components of the incident's page, each once.
    pub affected_component_ids: Option<Vec<String>>,
    /// PUBLISHED sets `publishedAt` (if not yet set); DRAFT and PUBLISHED clear `scheduledFor`.
    pub visibility: Option<IncidentVisibility>,
    /// Only while the (new) visibility is SCHEDULED, and then in the future; required when
    /// the visibility becomes SCHEDULED.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub scheduled_for: Option<Option<DateTime<Utc>>>,
}

impl Validate for UpdateIncident {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(t) = &self.title {
            check_name("title", t, MAX_TITLE_CHARS, &mut errors);
        }
        if let Some(ids) = &self.affected_component_ids {
            check_component_list(ids, &mut errors);
        }
        errors
    }
}

/// Edits an incident if `expected` (when given) is still its version.
pub async fn update(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateIncident,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<needs::UpdateIncident>()?;
    input.check()?;
    if let Some(ids) = &input.affected_component_ids {
        // The page never changes, so the components can be checked before the write.
        let row = load(core, caller, id).await?;
        check_components(core, &caller.workspace_id, &row.status_page_id, ids).await?;
    }
    let title = input.title.as_deref().map(|t| t.trim().to_string());
    let components = input
        .affected_component_ids
        .as_deref()
        .map(store::incidents::encode_ids);
    let (severity, visibility, scheduled) = (input.severity, input.visibility, input.scheduled_for);
    let change = move |row: &mut IncidentRow, now: i64| -> Outcome {
        if let Some(t) = &title {
            row.title = t.clone();
        }
        if let Some(s) = severity {
            row.severity = s.as_str().to_string();
        }
        if let Some(c) = &components {
            row.affected_component_ids = c.clone();
        }
        let current = visibility_of(row)?;
        let visibility = visibility.unwrap_or(current);
        let scheduled_for = match (visibility, scheduled) {
            (IncidentVisibility::Scheduled, Some(Some(at))) => {
                in_future("scheduledFor", ms(&at), now)?;
                Some(ms(&at))
            }
            (IncidentVisibility::Scheduled, None) if current == IncidentVisibility::Scheduled => {
                row.scheduled_for
            }
            (IncidentVisibility::Scheduled, _) => {
                return Err(DomainError::field(
                    "scheduledFor",
                    "is required when visibility is SCHEDULED",
                ))
            }
            (_, Some(Some(_))) => {
                return Err(DomainError::field(
                    "scheduledFor",
                    "is only allowed when visibility is SCHEDULED",
                ))
            }
            _ => None,
        };
        set_visibility(row, visibility, scheduled_for, now);
        Ok(None)
    };
    apply(core, caller, id, expected, "incident.update", &change).await
}

/// `POST /incidents/{incident_id}/updates`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostIncidentUpdate {
    /// 1 to 5,000 characters.
    pub message: String,
    /// The incident's new status (it may be the current one). RESOLVED resolves it; another
    /// status on a resolved incident reopens it.
    pub status: IncidentStatus,
}

impl Validate for PostIncidentUpdate {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_message("message", &self.message, &mut errors);
        errors
    }
}

/// Adds an update; its status becomes the incident's.
pub async fn post_update(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: PostIncidentUpdate,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<needs::PostIncidentUpdate>()?;
    input.check()?;
    let message = input.message.trim().to_string();
    let change = move |row: &mut IncidentRow, now: i64| -> Outcome {
        set_status(row, input.status, now);
        Ok(Some((message.clone(), false)))
    };
    apply(core, caller, id, expected, "incident.post_update", &change).await
}

/// `POST /incidents/{incident_id}/resolve`; the body is optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResolveIncident {
    /// The resolving update's message (1 to 5,000 characters); without one the service writes
    /// a system-generated update.
    pub message: Option<String>,
}

impl Validate for ResolveIncident {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(m) = &self.message {
            check_message("message", m, &mut errors);
        }
        errors
    }
}

pub const RESOLVED_MESSAGE: &str = "This incident has been resolved.";
pub const REOPENED_MESSAGE: &str = "This incident has been reopened.";

/// Resolves an incident: status RESOLVED, `resolvedAt` now, and an update saying so.
pub async fn resolve(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: ResolveIncident,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<needs::ResolveIncident>()?;
    input.check()?;
    let message = input.message.as_deref().map(str::trim);
    let change = move |row: &mut IncidentRow, now: i64| -> Outcome {
        if status_of(row)? == IncidentStatus::Resolved {
            return Err(DomainError::Conflict(
                "INCIDENT_ALREADY_RESOLVED",
                "This incident is already resolved: reopen it first to resolve it again."
                    .to_string(),
            ));
        }
        set_status(row, IncidentStatus::Resolved, now);
        Ok(Some(match message {
            Some(m) => (m.to_string(), false),
            None => (RESOLVED_MESSAGE.to_string(), true),
        }))
    };
    apply(core, caller, id, expected, "incident.resolve", &change).await
}

/// `POST /incidents/{incident_id}/reopen`; the body is optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReopenIncident {
    /// The status to reopen with: INVESTIGATING (default), IDENTIFIED or MONITORING.
    pub status: Option<IncidentStatus>,
    /// The reopening update's message (1 to 5,000 characters); without one the service writes
    /// a system-generated update.
    pub message: Option<String>,
}

impl Validate for ReopenIncident {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.status == Some(IncidentStatus::Resolved) {
            errors.push(FieldError::new(
                "status",
                "must be INVESTIGATING, IDENTIFIED or MONITORING",
            ));
        }
        if let Some(m) = &self.message {
            check_message("message", m, &mut errors);
        }
        errors
    }
}

/// Reopens a resolved incident: clears `resolvedAt`, sets the status given (default
/// INVESTIGATING) and adds an update saying so.
pub async fn reopen(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: ReopenIncident,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<caps::IncidentsWrite>()?;
    input.check()?;
    let status = input.status.unwrap_or(IncidentStatus::Investigating);
    let message = input.message.as_deref().map(str::trim);
    let change = move |row: &mut IncidentRow, now: i64| -> Outcome {
        if status_of(row)? != IncidentStatus::Resolved {
            return Err(DomainError::Conflict(
                "INCIDENT_NOT_RESOLVED",
                format!(
                    "This incident is not resolved (its status is {}): only a resolved incident can be reopened.",
                    row.status
                ),
            ));
        }
        set_status(row, status, now);
        Ok(Some(match message {
            Some(m) => (m.to_string(), false),
            None => (REOPENED_MESSAGE.to_string(), true),
        }))
    };
    apply(core, caller, id, expected, "incident.reopen", &change).await
}

/// Publishes an incident: visibility PUBLISHED, `publishedAt` now, `scheduledFor` cleared.
pub async fn publish(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<needs::PublishIncident>()?;
    let change = |row: &mut IncidentRow, now: i64| -> Outcome {
        set_visibility(row, IncidentVisibility::Published, None, now);
        Ok(None)
    };
    apply(core, caller, id, expected, "incident.publish", &change).await
}

/// Archives an incident: `archivedAt` now; it leaves the public page.
pub async fn archive(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(IncidentWithUpdates, i64), DomainError> {
    caller.require::<caps::IncidentsWrite>()?;
    let change = |row: &mut IncidentRow, now: i64| -> Outcome {
        row.archived_at = row.archived_at.or(Some(now));
        Ok(None)
    };
    apply(core, caller, id, expected, "incident.archive", &change).await
}

/// Deletes an incident with its updates and postmortems.
pub async fn delete(cx: &Cx, caller: &Caller, id: &str) -> Result<(), DomainError> {
    caller.require::<caps::IncidentsDelete>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::incidents::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Incident))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "incident.delete",
            resource_type: "incident",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "statusPageId": row.status_page_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.status_page_id);
    Ok(())
}

/// Enqueues what an incident write tells channels and subscribers in the write's transaction
/// (`alerting::incident_notify::tell`, which the incidents a monitor opens by itself use too).
async fn tell(
    cx: &Cx,
    conn: &mut sqlx::AnyConnection,
    before: Option<&IncidentRow>,
    after: &IncidentRow,
    update: Option<&UpdateRow>,
    now: i64,
) -> Result<usize, DomainError> {
    let links = SubscriberLinks::new(cx.config().public_url.as_str(), cx.link_secret());
    Ok(incident_notify::tell(conn, &links, before, after, update, now).await?)
}

fn announce(cx: &Cx, page_id: &str) {
    cx.announce(Notice::StatusPageChanged {
        page_id: page_id.to_string(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> IncidentRow {
        IncidentRow {
            id: "i1".into(),
            workspace_id: "w".into(),
            status_page_id: "p".into(),
            title: "<b>API</b> down".into(),
            status: "IDENTIFIED".into(),
            severity: "MAJOR".into(),
            visibility: "SCHEDULED".into(),
            affected_component_ids: r#"["c1","c2"]"#.into(),
            source_monitor_id: None,
            auto_generated: 0,
            version: 3,
            created_at: 1_700_000_000_000,
            updated_at: 1_700_000_000_500,
            resolved_at: None,
            published_at: None,
            scheduled_for: Some(1_700_000_060_000),
            archived_at: None,
        }
    }

    #[test]
    fn the_view_maps_every_field_and_keeps_text_as_written() {
        let u = UpdateRow {
            id: "u1".into(),
            incident_id: "i1".into(),
            workspace_id: "w".into(),
            message: "<script>x</script>".into(),
            status: "IDENTIFIED".into(),
            system_generated: 1,
            created_at: 1_700_000_000_000,
            updated_at: None,
        };
        let v = incident_view(&row(), &[u]).unwrap();
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["incident"]["title"], "<b>API</b> down");
        assert_eq!(json["incident"]["status"], "IDENTIFIED");
        assert_eq!(json["incident"]["severity"], "MAJOR");
        assert_eq!(json["incident"]["visibility"], "SCHEDULED");
        assert_eq!(
            json["incident"]["affectedComponentIds"],
            serde_json::json!(["c1", "c2"])
        );
        assert_eq!(json["incident"]["scheduledFor"], "2023-11-14T22:14:20.000Z");
        assert_eq!(json["incident"]["resolvedAt"], serde_json::Value::Null);
        assert_eq!(json["incident"].as_object().unwrap().len(), 16);
        assert_eq!(json["updates"][0]["message"], "<script>x</script>");
        assert_eq!(json["updates"][0]["systemGenerated"], true);
        assert_eq!(json["updates"][0].as_object().unwrap().len(), 7);
    }

    #[test]
    fn only_public_news_is_emailed_and_every_change_is_a_webhook_event() {
        use crate::alerting::event::AlertEvent;
        use AlertEvent::{IncidentCreated as C, IncidentResolved as R, IncidentUpdated as U};
        let mut draft = row();
        set_visibility(&mut draft, IncidentVisibility::Draft, None, 4);
        let mut public = row();
        set_visibility(&mut public, IncidentVisibility::Published, None, 5);
        let mut resolved = public.clone();
        set_status(&mut resolved, IncidentStatus::Resolved, 6);
        let mut archived = public.clone();
        archived.archived_at = Some(7);
        // Filed as a draft: the channels hear of it, the public does not.
        assert_eq!(news_events(None, &draft, true), (C, None));
        assert_eq!(news_events(None, &public, false), (C, Some(C)));
        // Published later: news for the public then.
        assert_eq!(news_events(Some(&draft), &public, false), (U, Some(C)));
        assert_eq!(news_events(Some(&public), &public, true), (U, Some(U)));
        // An edit without an update emails nobody.
        assert_eq!(news_events(Some(&public), &public, false), (U, None));
        assert_eq!(news_events(Some(&public), &resolved, true), (R, Some(R)));
        // A draft resolved stays private; an archived incident is nobody's news.
        let mut draft_resolved = draft.clone();
        set_status(&mut draft_resolved, IncidentStatus::Resolved, 6);
        assert_eq!(news_events(Some(&draft), &draft_resolved, true), (R, None));
        assert_eq!(news_events(Some(&public), &archived, false), (U, None));
    }

    #[test]
    fn status_and_visibility_keep_their_timestamps_consistent() {
        let mut r = row();
        set_status(&mut r, IncidentStatus::Resolved, 10);
        assert_eq!(r.resolved_at, Some(10));
        set_status(&mut r, IncidentStatus::Resolved, 20);
        assert_eq!(r.resolved_at, Some(10), "the first resolution is kept");
        set_status(&mut r, IncidentStatus::Monitoring, 30);
        assert_eq!(r.resolved_at, None);

        set_visibility(&mut r, IncidentVisibility::Published, Some(99), 40);
        assert_eq!((r.published_at, r.scheduled_for), (Some(40), None));
        set_visibility(&mut r, IncidentVisibility::Published, None, 50);
        assert_eq!(r.published_at, Some(40));
        set_visibility(&mut r, IncidentVisibility::Scheduled, Some(99), 60);
        assert_eq!((r.published_at, r.scheduled_for), (None, Some(99)));
        set_visibility(&mut r, IncidentVisibility::Draft, Some(99), 70);
        assert_eq!((r.published_at, r.scheduled_for), (None, None));
    }

    #[test]
    fn messages_allow_line_breaks_but_not_other_controls_or_blank_text() {
        let mut errors = Vec::new();
        check_message("message", "line one\nline two\r\n\tindented", &mut errors);
        assert!(errors.is_empty());
        check_message("message", "   ", &mut errors);
        check_message("message", "bell\u{7}", &mut errors);
        check_message("message", &"x".repeat(MAX_MESSAGE_CHARS + 1), &mut errors);
        assert_eq!(errors.len(), 3);
    }

    #[test]
    fn duplicate_components_are_named_by_index() {
        let mut errors = Vec::new();
        check_component_list(&["a".into(), "b".into(), "a".into()], &mut errors);
        assert_eq!(
            errors,
            vec![FieldError::new(
                "affectedComponentIds.2",
                "duplicate component"
            )]
        );
    }
}
