//! Alerts: list (cursor pages, newest first), read, acknowledge, and each alert's delivery
//! attempts. Reads need `monitors:read`, acknowledging `monitors:write`. Alerts are opened and
//! resolved by monitor events only (`alerting::alerts`); nobody creates or deletes one.
//!
//! Decisions the contract leaves open, kept here and in the OpenAPI descriptions:
//! - `acknowledgedBy` is the acknowledging user's id, or `"link"` for the one-click link.
//! - Acknowledging an alert that is not `OPEN` answers 409 `ALERT_NOT_OPEN` (the message says
//!   whether it was acknowledged or resolved): acknowledging twice is a conflict with what
//!   someone else did, not a malformed request.
//! - Acknowledging stops escalation (`nextEscalationAt` becomes null) and sends
//!   `alert.acknowledged` to the channels the alert has reached.
//! - The one-click link (`alerting::ack_link`) acknowledges through [`acknowledge_by_link`]:
//!   signed, expiring after 24 h, usable once.
//! - An alert's version (its `ETag`) grows with every change: acknowledged, resolved, an
//!   escalation step reached. Acknowledging with a stale `If-Match` answers 409
//!   `VERSION_CONFLICT`, before `ALERT_NOT_OPEN`.
//! - Acknowledging a root alert acknowledges the open alerts suppressed under it
//!   (`rootCauseAlertId`), which send nothing; `?rootOnly=true` lists roots only.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::Validate;
use super::pagination::{finish, PageParams};
use super::{DomainError, FieldError, Resource};
use crate::alerting::ack_link::{self, Links, BY_LINK};
use crate::alerting::alerts::notify_reached;
use crate::alerting::event::AlertEvent;
use crate::audit::{self, Entry};
use crate::auth::signed::Verify;
use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::alerts::{self as store, AlertFilter, AlertRow};
use crate::store::corrupt::{self, stored_text, CorruptRow};

/// The state of an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AlertStatus {
    Open,
    Acknowledged,
    Resolved,
}

impl AlertStatus {
    pub const ALL: [AlertStatus; 3] = [
        AlertStatus::Open,
        AlertStatus::Acknowledged,
        AlertStatus::Resolved,
    ];

    /// The stored word (`store::alerts::{OPEN, ACKNOWLEDGED, RESOLVED}`).
    pub const fn as_str(self) -> &'static str {
        match self {
            AlertStatus::Open => store::OPEN,
            AlertStatus::Acknowledged => store::ACKNOWLEDGED,
            AlertStatus::Resolved => store::RESOLVED,
        }
    }
}

stored_text!(AlertStatus, "alert status");

/// One outage of a monitor: opened when it went DOWN, resolved when it recovered.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Alert {
    pub id: String,
    pub workspace_id: String,
    pub monitor_id: String,
    pub status: AlertStatus,
    /// What the failing check said (the event's message).
    pub cause: String,
    #[schemars(with = "DateTime<Utc>")]
    pub opened_at: String,
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub acknowledged_at: Option<String>,
    /// The acknowledging user's id, or `link` for the one-click link.
    pub acknowledged_by: Option<String>,
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub resolved_at: Option<String>,
    /// The `stepOrder` of the last escalation step reached; null before the first.
    #[schemars(with = "Option<f64>")]
    pub escalation_step: Option<i64>,
    /// When the next escalation step fires; null without one, and once acknowledged or resolved.
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub next_escalation_at: Option<String>,
    /// The alert of the dependency's outage this one is suppressed under: it sent nothing and
    /// does not escalate, and its root's notifications list it in `data.dependents`. Null for
    /// a root.
    pub root_cause_alert_id: Option<String>,
}

/// The API shape of a stored alert; a status this build cannot read is a (reported) corrupt
/// row, never read as OPEN.
pub fn view(a: &AlertRow) -> Result<Alert, CorruptRow> {
    Ok(Alert {
        id: a.id.clone(),
        workspace_id: a.workspace_id.clone(),
        monitor_id: a.monitor_id.clone(),
        status: corrupt::parse("alerts", &a.id, "status", &a.status)?,
        cause: a.cause.clone(),
        opened_at: rfc3339(a.opened_at),
        acknowledged_at: a.acknowledged_at.map(rfc3339),
        acknowledged_by: a.acknowledged_by.clone(),
        resolved_at: a.resolved_at.map(rfc3339),
        escalation_step: a.escalation_step,
        next_escalation_at: a.next_escalation_at.map(rfc3339),
        root_cause_alert_id: a.root_cause_alert_id.clone(),
    })
}

/// A page of alerts, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct AlertPage {
    pub alerts: Vec<Alert>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The `status` filter's spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AlertStatusFilter {
    Open,
    Acknowledged,
    Resolved,
}

/// A page of alerts: `cursor`, `limit` and the filters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AlertPageQuery {
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    pub limit: Option<u32>,
    /// Only alerts in this state.
    pub status: Option<AlertStatusFilter>,
    /// Only alerts of this monitor.
    pub monitor_id: Option<String>,
    /// `true`: only root alerts, leaving out those suppressed under a dependency's
    /// (`rootCauseAlertId` set).
    pub root_only: Option<bool>,
}

impl AlertPageQuery {
    fn page(&self) -> PageParams {
        PageParams {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }
}

impl Validate for AlertPageQuery {
    fn validate(&self) -> Vec<FieldError> {
        self.page().validate()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct AlertPath {
    pub alert_id: String,
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<AlertRow, DomainError> {
    store::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Alert))
}

/// A page of the workspace's alerts, newest first.
pub async fn page(
    cx: &Cx,
    caller: &Caller,
    query: &AlertPageQuery,
) -> Result<AlertPage, DomainError> {
    caller.require::<needs::ListAlerts>()?;
    query.check()?;
    let params = query.page();
    let filter = AlertFilter {
        status: query.status.map(|s| match s {
            AlertStatusFilter::Open => store::OPEN,
            AlertStatusFilter::Acknowledged => store::ACKNOWLEDGED,
            AlertStatusFilter::Resolved => store::RESOLVED,
        }),
        monitor_id: query.monitor_id.clone(),
        root_only: query.root_only.unwrap_or(false),
    };
    let rows = store::page(
        cx.db().reader(),
        &caller.workspace_id,
        &filter,
        &params.after(),
        i64::from(params.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, params.limit(), |r| r.id.clone());
    Ok(AlertPage {
        // A corrupt row is reported and left out of the page (see `store::corrupt`).
        alerts: corrupt::readable(rows.iter().map(view)),
        next_cursor,
    })
}

pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<Alert, DomainError> {
    Ok(get_versioned(cx, caller, id).await?.0)
}

/// [`get`] with the alert's version, its `ETag`.
pub async fn get_versioned(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(Alert, i64), DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    let a = load(cx, caller, id).await?;
    Ok((view(&a)?, a.version))
}

fn not_open(a: &AlertRow) -> DomainError {
    let what = if a.status == store::RESOLVED {
        "This alert is already resolved: there is nothing left to acknowledge."
    } else {
        "This alert is already acknowledged: escalation has stopped."
    };
    DomainError::Conflict("ALERT_NOT_OPEN", what.to_string())
}

/// Acknowledges an open alert: records who and when, stops escalation, tells the channels
/// the alert has reached.
pub async fn acknowledge(core: &Cx, caller: &Caller, id: &str) -> Result<Alert, DomainError> {
    Ok(acknowledge_versioned(core, caller, id, None).await?.0)
}

/// [`acknowledge`] of the alert as it was at version `expected` (`If-Match`), when given: a
/// changed alert answers `VERSION_CONFLICT`. Returns the alert and its new version.
pub async fn acknowledge_versioned(
    core: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(Alert, i64), DomainError> {
    caller.require::<needs::AcknowledgeAlert>()?;
    let a = load(core, caller, id).await?;
    let now = core.clock().now_ms();
    let mut tx = core.db().begin().await?;
    let by = &caller.user_id;
    if store::acknowledge(&mut *tx, &caller.workspace_id, &a.id, by, now, expected).await? == 0 {
        tx.rollback().await?;
        let current = load(core, caller, id).await?;
        // A stale tag is the first thing wrong with the request: the client acted on a
        // version that is gone, whatever the alert's state now.
        if expected.is_some_and(|v| v != current.version) {
            return Err(DomainError::VersionConflict);
        }
        return Err(not_open(&current));
    }
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "alert.acknowledge",
            resource_type: "alert",
            resource_id: &a.id,
            metadata: json!({"monitorId": a.monitor_id}),
        },
        now,
    )
    .await?;
    let acked = acknowledged(&mut tx, core, &a.workspace_id, &a.id, now).await?;
    tx.commit().await?;
    core.wake_deliveries();
    Ok((view(&acked)?, acked.version))
}

/// Reads the acknowledged alert back in the transaction and notifies its channels.
async fn acknowledged(
    tx: &mut crate::store::Tx,
    cx: &Cx,
    ws: &str,
    id: &str,
    now: i64,
) -> Result<AlertRow, DomainError> {
    let acked = store::get(&mut **tx, ws, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Alert))?;
    // Its suppressed dependents are the same outage: acknowledged with it, silently (they
    // never paged).
    if let Some(by) = &acked.acknowledged_by {
        crate::store::dependencies::acknowledge_under(&mut **tx, &acked.id, by, now).await?;
    }
    notify_reached(
        tx,
        &Links::of(cx),
        &acked,
        AlertEvent::AlertAcknowledged,
        now,
    )
    .await?;
    Ok(acked)
}

/// What a one-click link can find.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkCheck {
    /// The link is good and its alert is open: the page may offer to acknowledge it.
    Open {
        alert_id: String,
        monitor: String,
        cause: String,
    },
    /// Acknowledged now (by this use of the link).
    Acknowledged {
        monitor: String,
    },
    /// The alert was acknowledged or resolved already (the link was used, or overtaken).
    Done {
        resolved: bool,
    },
    Expired,
    Invalid,
}

async fn check(cx: &Cx, token: &str) -> Result<(LinkCheck, Option<AlertRow>), DomainError> {
    let id = match Links::of(cx).verify(token, cx.clock().now_ms()) {
        Verify::Valid(id) => id,
        Verify::Expired => return Ok((LinkCheck::Expired, None)),
        Verify::Invalid => return Ok((LinkCheck::Invalid, None)),
    };
    let Some(a) = store::get_by_id(cx.db().reader(), &id).await? else {
        // Its monitor was deleted since.
        return Ok((LinkCheck::Invalid, None));
    };
    if a.status != store::OPEN {
        return Ok((
            LinkCheck::Done {
                resolved: a.status == store::RESOLVED,
            },
            Some(a),
        ));
    }
    let monitor =
        crate::store::monitor_channels::brief(cx.db().reader(), &a.workspace_id, &a.monitor_id)
            .await?
            .map(|m| m.name)
            .unwrap_or_default();
    Ok((
        LinkCheck::Open {
            alert_id: a.id.clone(),
            monitor,
            cause: a.cause.clone(),
        },
        Some(a),
    ))
}

/// What opening the link shows: nothing changes.
pub async fn inspect_link(cx: &Cx, token: &str) -> Result<LinkCheck, DomainError> {
    Ok(check(cx, token).await?.0)
}

/// Acknowledges the alert a one-click link names (its signature is the credential), audited
/// as done through the link.
pub async fn acknowledge_by_link(core: &Cx, token: &str) -> Result<LinkCheck, DomainError> {
    let (found, alert) = check(core, token).await?;
    let (LinkCheck::Open { monitor, .. }, Some(a)) = (&found, alert.as_ref()) else {
        return Ok(found);
    };
    let monitor = monitor.clone();
    let now = core.clock().now_ms();
    let mut tx = core.db().begin().await?;
    if store::acknowledge(&mut *tx, &a.workspace_id, &a.id, BY_LINK, now, None).await? == 0 {
        tx.rollback().await?;
        return Ok(check(core, token).await?.0);
    }
    crate::store::audit::append(
        &mut *tx,
        &crate::store::audit::AuditRow {
            id: new_id(),
            workspace_id: a.workspace_id.clone(),
            user_id: BY_LINK.to_string(),
            action: "alert.acknowledge".to_string(),
            resource_type: "alert".to_string(),
            resource_id: a.id.clone(),
            metadata: json!({"monitorId": a.monitor_id, "via": ack_link::ACK_PATH}).to_string(),
            ip_address: None,
            actor_email: None,
            user_agent: None,
            created_at: now,
        },
    )
    .await?;
    acknowledged(&mut tx, core, &a.workspace_id, &a.id, now).await?;
    tx.commit().await?;
    core.wake_deliveries();
    Ok(LinkCheck::Acknowledged { monitor })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notification_record_is_the_api_record() {
        let a = AlertRow {
            id: "a".into(),
            workspace_id: "w".into(),
            monitor_id: "m".into(),
            status: store::ACKNOWLEDGED.into(),
            cause: "timeout".into(),
            escalation_policy_id: Some("p".into()),
            escalation_step: Some(2),
            next_escalation_at: None,
            opened_at: 1_700_000_000_000,
            acknowledged_at: Some(1_700_000_060_000),
            acknowledged_by: Some("u".into()),
            resolved_at: None,
            updated_at: 1_700_000_060_000,
            version: 2,
            root_cause_alert_id: Some("r".into()),
        };
        let api = serde_json::to_value(view(&a).unwrap()).unwrap_or_default();
        assert_eq!(api, crate::alerting::alerts::record_json(&a));
    }

    #[test]
    fn every_alert_status_round_trips_and_strangers_are_errors() {
        corrupt::assert_round_trip(&AlertStatus::ALL, AlertStatus::as_str);
    }
}
