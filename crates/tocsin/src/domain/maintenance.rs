//! Maintenance windows: scheduled periods during which a monitor's status is `MAINTENANCE`
//! and no alert opens. Reads need `monitors:read`; create, update and delete need
//! `maintenance:write`.
//!
//! The record is `MaintenanceWindow` of the interface, exactly; `recurring` keys that do not
//! apply to the frequency are absent, not null. The schedule rules (one-off, daily, weekly,
//! monthly skipping months without the day, cron; IANA zones across DST) are
//! `tocsin_core::maintenance`'s, which also validates them. Every write is audited and then
//! announced ([`Notice::MaintenanceChanged`]) so the maintenance engine on the scheduling node
//! (`monitoring::maintenance`), wherever it runs, reloads the monitor's windows.
//!
//! A create or update whose window has an occurrence within the public pages' horizon
//! announces it to the subscribers of the pages showing its monitor in the same transaction
//! (`alerting::maintenance_notice::announce`: once per window schedule, so an edit of the
//! words mails nobody and a moved window is announced again); windows further ahead are
//! announced by that module's worker on the scheduling node.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tocsin_core::maintenance::{Frequency, Recurring};

use super::input::{check_name, double_option, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::alerting::maintenance_notice;
use crate::alerting::subscriber_mail::SubscriberLinks;
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::schema::Timestamp;
use crate::store::{self, maintenance::WindowRow};

const MAX_TITLE_CHARS: usize = 200;
const MAX_DESCRIPTION_CHARS: usize = 2_000;

/// A scheduled maintenance window of one monitor.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct MaintenanceWindow {
    pub id: String,
    pub workspace_id: String,
    pub monitor_id: String,
    pub title: String,
    pub description: Option<String>,
    /// The first occurrence's start (and, for a recurring window, the wall-clock time every
    /// occurrence starts at in `timezone`).
    #[schemars(with = "Timestamp")]
    pub starts_at: String,
    /// The first occurrence's end; every occurrence lasts `endsAt - startsAt`.
    #[schemars(with = "Timestamp")]
    pub ends_at: String,
    /// IANA time zone the recurrence is read in.
    pub timezone: String,
    /// How the window repeats; `null` for a one-off window.
    pub recurring: Option<RecurringView>,
    /// Whether checks inside the window stay out of uptime figures and reports.
    pub exclude_from_uptime: bool,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    #[schemars(with = "Timestamp")]
    pub updated_at: String,
}

/// How a window repeats. Keys that do not apply to the frequency are absent.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MaintenanceRecurring")]
pub struct RecurringView {
    pub frequency: Frequency,
    /// `weekly`: 0 (Sunday) to 6 (Saturday).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u8", range(min = 0, max = 6))]
    pub day_of_week: Option<i64>,
    /// `monthly`: 1 to 31; a month without that day has no occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u8", range(min = 1, max = 31))]
    pub day_of_month: Option<i64>,
    /// `cron`: a 5-field cron expression read in `timezone`, at most 100 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 100))]
    pub expression: Option<String>,
}

/// `recurring` as given: `frequency` and the one key it needs (`dayOfWeek` for weekly,
/// `dayOfMonth` for monthly, `expression` for cron; daily needs none). Other keys are refused.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MaintenanceRecurringInput")]
pub struct RecurringInput {
    pub frequency: Frequency,
    /// `weekly` only: 0 (Sunday) to 6 (Saturday).
    #[schemars(range(min = 0, max = 6))]
    pub day_of_week: Option<i64>,
    /// `monthly` only: 1 to 31.
    #[schemars(range(min = 1, max = 31))]
    pub day_of_month: Option<i64>,
    /// `cron` only: a 5-field cron expression, at most 100 characters.
    #[schemars(length(max = 100))]
    pub expression: Option<String>,
}

impl From<RecurringInput> for Recurring {
    fn from(r: RecurringInput) -> Recurring {
        Recurring {
            frequency: r.frequency,
            day_of_week: r.day_of_week,
            day_of_month: r.day_of_month,
            expression: r.expression,
        }
    }
}

fn view(w: &WindowRow) -> MaintenanceWindow {
    MaintenanceWindow {
        id: w.id.clone(),
        workspace_id: w.workspace_id.clone(),
        monitor_id: w.monitor_id.clone(),
        title: w.title.clone(),
        description: w.description.clone(),
        starts_at: rfc3339(w.starts_at),
        ends_at: rfc3339(w.ends_at),
        timezone: w.timezone.clone(),
        recurring: w.recurring().map(|r| RecurringView {
            frequency: r.frequency,
            day_of_week: r.day_of_week,
            day_of_month: r.day_of_month,
            expression: r.expression,
        }),
        exclude_from_uptime: w.exclude_from_uptime != 0,
        created_at: rfc3339(w.created_at),
        updated_at: rfc3339(w.updated_at),
    }
}

fn check_text(title: Option<&String>, description: Option<&String>, errors: &mut Vec<FieldError>) {
    if let Some(t) = title {
        check_name("title", t, MAX_TITLE_CHARS, errors);
    }
    if description.is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        errors.push(FieldError::new(
            "description",
            format!("at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
}

/// Validates the schedule fields of a (merged) row.
fn check_schedule(w: &WindowRow) -> Result<(), DomainError> {
    match w.schedule() {
        Ok(_) => Ok(()),
        Err(errors) => Err(errors
            .iter()
            .map(|e| FieldError::new(e.field(), e.to_string()))
            .collect::<Vec<_>>()
            .into()),
    }
}

async fn check_monitor(cx: &Cx, ws: &str, monitor_id: &str) -> Result<(), DomainError> {
    if store::monitors::get(cx.db().reader(), ws, monitor_id)
        .await?
        .is_some()
    {
        Ok(())
    } else {
        Err(vec![FieldError::new("monitorId", "not found in this workspace")].into())
    }
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<WindowRow, DomainError> {
    store::maintenance::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::MaintenanceWindow))
}

fn set_recurring(w: &mut WindowRow, r: Option<Recurring>) {
    w.frequency = r.as_ref().map(|r| r.frequency.as_str().to_string());
    w.day_of_week = r.as_ref().and_then(|r| r.day_of_week);
    w.day_of_month = r.as_ref().and_then(|r| r.day_of_month);
    w.expression = r.and_then(|r| r.expression);
}

fn ms(t: &DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WindowQuery {
    /// Only this monitor's windows.
    #[serde(rename = "monitorId")]
    pub monitor_id: Option<String>,
}

/// The workspace's windows in creation order (one monitor's with `monitorId`).
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    q: WindowQuery,
) -> Result<Vec<MaintenanceWindow>, DomainError> {
    caller.require::<needs::ListMaintenanceWindows>()?;
    let rows = store::maintenance::list(
        cx.db().reader(),
        &caller.workspace_id,
        q.monitor_id.as_deref(),
    )
    .await?;
    Ok(rows.iter().map(view).collect())
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateMaintenanceWindow {
    /// A monitor of this workspace.
    pub monitor_id: String,
    /// 1 to 200 characters.
    pub title: String,
    /// At most 2,000 characters.
    pub description: Option<String>,
    pub starts_at: DateTime<Utc>,
    /// After `startsAt`; for a recurring window, `endsAt - startsAt` is each occurrence's
    /// length and may not exceed its period.
    pub ends_at: DateTime<Utc>,
    /// IANA time zone; default `UTC`.
    pub timezone: Option<String>,
    /// `null` or absent for a one-off window.
    pub recurring: Option<RecurringInput>,
    /// Default false: checks inside the window count by their own result.
    pub exclude_from_uptime: Option<bool>,
}

impl Validate for CreateMaintenanceWindow {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_text(Some(&self.title), self.description.as_ref(), &mut errors);
        errors
    }
}

/// Schedules a window.
pub async fn create(
    core: &Cx,
    caller: &Caller,
    input: CreateMaintenanceWindow,
) -> Result<MaintenanceWindow, DomainError> {
    caller.require::<needs::CreateMaintenanceWindow>()?;
    input.check()?;
    let now = core.clock().now_ms();
    let mut row = WindowRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        monitor_id: input.monitor_id,
        title: input.title.trim().to_string(),
        description: input.description,
        starts_at: ms(&input.starts_at),
        ends_at: ms(&input.ends_at),
        timezone: input.timezone.unwrap_or_else(|| "UTC".to_string()),
        frequency: None,
        day_of_week: None,
        day_of_month: None,
        expression: None,
        exclude_from_uptime: i64::from(input.exclude_from_uptime.unwrap_or(false)),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    set_recurring(&mut row, input.recurring.map(Recurring::from));
    check_schedule(&row)?;
    check_monitor(core, &caller.workspace_id, &row.monitor_id).await?;
    let mut tx = core.db().begin().await?;
    store::maintenance::insert(&mut *tx, &row).await?;
    let queued = maintenance_notice::announce(&mut tx, &links(core), &row, now).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "maintenance_window.create",
            resource_type: "maintenance_window",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "monitorId": row.monitor_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(core, &row.monitor_id);
    if queued > 0 {
        core.wake_deliveries();
    }
    Ok(view(&row))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WindowPath {
    pub window_id: String,
}

/// One window and its version.
pub async fn get(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(MaintenanceWindow, i64), DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    let row = load(cx, caller, id).await?;
    Ok((view(&row), row.version))
}

/// Fields to change; absent ones stay. `description: null` clears it, `recurring: null`
/// makes the window one-off.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateMaintenanceWindow {
    pub monitor_id: Option<String>,
    pub title: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub description: Option<Option<String>>,
    pub starts_at: Option<DateTime<Utc>>,
    pub ends_at: Option<DateTime<Utc>>,
    pub timezone: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<RecurringInput>")]
    pub recurring: Option<Option<RecurringInput>>,
    pub exclude_from_uptime: Option<bool>,
}

impl Validate for UpdateMaintenanceWindow {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_text(
            self.title.as_ref(),
            self.description.as_ref().and_then(Option::as_ref),
            &mut errors,
        );
        errors
    }
}

/// Changes a window if `expected` (when given) is still its version.
pub async fn update(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateMaintenanceWindow,
) -> Result<(MaintenanceWindow, i64), DomainError> {
    caller.require::<caps::MaintenanceWrite>()?;
    input.check()?;
    let mut row = load(core, caller, id).await?;
    let previous_monitor = row.monitor_id.clone();
    let now = core.clock().now_ms();
    if let Some(m) = input.monitor_id {
        row.monitor_id = m;
    }
    if let Some(t) = &input.title {
        row.title = t.trim().to_string();
    }
    if let Some(d) = input.description {
        row.description = d;
    }
    if let Some(s) = &input.starts_at {
        row.starts_at = ms(s);
    }
    if let Some(e) = &input.ends_at {
        row.ends_at = ms(e);
    }
    if let Some(tz) = input.timezone {
        row.timezone = tz;
    }
    if let Some(r) = input.recurring {
        set_recurring(&mut row, r.map(Recurring::from));
    }
    if let Some(x) = input.exclude_from_uptime {
        row.exclude_from_uptime = i64::from(x);
    }
    row.updated_at = now;
    check_schedule(&row)?;
    if row.monitor_id != previous_monitor {
        check_monitor(core, &caller.workspace_id, &row.monitor_id).await?;
    }
    let mut tx = core.db().begin().await?;
    let rows = store::maintenance::update(&mut *tx, &row, expected).await?;
    check_write(
        rows,
        expected,
        DomainError::NotFound(Resource::MaintenanceWindow),
    )?;
    let queued = maintenance_notice::announce(&mut tx, &links(core), &row, now).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "maintenance_window.update",
            resource_type: "maintenance_window",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "monitorId": row.monitor_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(core, &row.monitor_id);
    if previous_monitor != row.monitor_id {
        announce(core, &previous_monitor);
    }
    if queued > 0 {
        core.wake_deliveries();
    }
    let row = load(core, caller, id).await?;
    Ok((view(&row), row.version))
}

/// Deletes a window; a monitor it holds leaves maintenance with its next check.
pub async fn delete(cx: &Cx, caller: &Caller, id: &str) -> Result<(), DomainError> {
    caller.require::<needs::DeleteMaintenanceWindow>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::maintenance::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(
        rows,
        None,
        DomainError::NotFound(Resource::MaintenanceWindow),
    )?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "maintenance_window.delete",
            resource_type: "maintenance_window",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "monitorId": row.monitor_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.monitor_id);
    Ok(())
}

fn links(cx: &Cx) -> SubscriberLinks {
    SubscriberLinks::new(cx.config().public_url.as_str(), cx.link_secret())
}

fn announce(cx: &Cx, monitor_id: &str) {
    cx.announce(Notice::MaintenanceChanged {
        monitor_id: monitor_id.to_string(),
    });
}

impl Validate for WindowQuery {}
