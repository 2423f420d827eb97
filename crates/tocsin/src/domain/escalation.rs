//! Escalation policies: who is told next while an alert stays unacknowledged. Reads need
//! `notifications:read`, create and update `notifications:write`, delete
//! `notifications:delete`. The record is exactly the contract's `EscalationPolicy`.
//!
//! Rules (also in the OpenAPI descriptions):
//! - `steps`: 1 to [`MAX_STEPS`]; a step's `stepOrder` is its position, from 1; its
//!   `delayMinutes` (0 to [`MAX_DELAY_MINUTES`], counted from the alert's opening) must be
//!   greater than the step before's; its `notificationChannelIds` (1 to [`MAX_CHANNELS`],
//!   no repeats) must be channels of the workspace.
//! - A step with delay 0 is notified with `alert.opened`; each later one with
//!   `alert.escalated` when its delay has passed, unless the alert was acknowledged or resolved.
//! - `PATCH` replaces the fields it names (`steps` as a whole); alerts already open follow the
//!   new steps from the step they reached.
//! - Deleting a policy detaches it from its monitors (`escalationPolicyId` becomes null) and
//!   stops the escalation of the alerts open under it.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::{check_name, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store;
use crate::store::escalation::{NewStep, PolicyRow, StepRow};

const MAX_NAME_CHARS: usize = 100;
pub const MAX_STEPS: usize = 10;
pub const MAX_CHANNELS: usize = 20;
/// One week.
pub const MAX_DELAY_MINUTES: i64 = 10_080;

/// One step of a policy.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct EscalationStep {
    pub id: String,
    /// The step's position, from 1.
    #[schemars(with = "i64")]
    pub step_order: i64,
    /// Minutes after the alert opened when this step is notified.
    #[schemars(with = "i64")]
    pub delay_minutes: i64,
    pub notification_channel_ids: Vec<String>,
}

/// An escalation policy.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct EscalationPolicy {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub steps: Vec<EscalationStep>,
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: String,
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: String,
}

fn view(p: &PolicyRow, steps: &[StepRow]) -> EscalationPolicy {
    EscalationPolicy {
        id: p.id.clone(),
        workspace_id: p.workspace_id.clone(),
        name: p.name.clone(),
        steps: steps
            .iter()
            .map(|s| EscalationStep {
                id: s.id.clone(),
                step_order: s.step_order,
                delay_minutes: s.delay_minutes,
                notification_channel_ids: s.channel_ids(),
            })
            .collect(),
        created_at: rfc3339(p.created_at),
        updated_at: rfc3339(p.updated_at),
    }
}

/// A step as a caller writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepInput {
    /// Minutes after the alert opened, 0 to 10,080, greater than the previous step's.
    pub delay_minutes: i64,
    /// 1 to 20 channels of the workspace.
    pub notification_channel_ids: Vec<String>,
}

/// A new policy.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateEscalationPolicy {
    /// 1 to 100 characters.
    pub name: String,
    /// 1 to 10 steps, in order.
    pub steps: Vec<StepInput>,
}

/// Fields to change; absent ones stay.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateEscalationPolicy {
    pub name: Option<String>,
    /// Replaces every step.
    pub steps: Option<Vec<StepInput>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PolicyPath {
    pub policy_id: String,
}

/// The shape rules of a step list (the channels' existence is checked against the store).
fn check_steps(steps: &[StepInput], errors: &mut Vec<FieldError>) {
    if steps.is_empty() {
        errors.push(FieldError::new("steps", "must have at least one step"));
    }
    if steps.len() > MAX_STEPS {
        errors.push(FieldError::new(
            "steps",
            format!("at most {MAX_STEPS} steps"),
        ));
    }
    for (i, s) in steps.iter().enumerate() {
        let field = format!("steps.{i}.delayMinutes");
        if !(0..=MAX_DELAY_MINUTES).contains(&s.delay_minutes) {
            errors.push(FieldError::new(
                field,
                format!("must be between 0 and {MAX_DELAY_MINUTES} minutes"),
            ));
        } else if let Some(prev) = i.checked_sub(1).and_then(|p| steps.get(p)) {
            if s.delay_minutes <= prev.delay_minutes {
                errors.push(FieldError::new(
                    field,
                    format!(
                        "must be greater than the previous step's ({} minutes)",
                        prev.delay_minutes
                    ),
                ));
            }
        }
        let ids = &s.notification_channel_ids;
        let field = format!("steps.{i}.notificationChannelIds");
        if ids.is_empty() {
            errors.push(FieldError::new(field, "must name at least one channel"));
        } else if ids.len() > MAX_CHANNELS {
            errors.push(FieldError::new(
                field,
                format!("at most {MAX_CHANNELS} channels"),
            ));
        }
    }
}

impl Validate for CreateEscalationPolicy {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("name", &self.name, MAX_NAME_CHARS, &mut errors);
        check_steps(&self.steps, &mut errors);
        errors
    }
}

impl Validate for UpdateEscalationPolicy {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            check_name("name", n, MAX_NAME_CHARS, &mut errors);
        }
        if let Some(steps) = &self.steps {
            check_steps(steps, &mut errors);
        }
        errors
    }
}

/// Refuses channel ids that are not the workspace's, or repeat within a step.
async fn check_channels(cx: &Cx, ws: &str, steps: &[StepInput]) -> Result<(), DomainError> {
    let all: Vec<String> = steps
        .iter()
        .flat_map(|s| s.notification_channel_ids.iter().cloned())
        .collect();
    let found = store::monitor_channels::existing_channels(cx.db().reader(), ws, &all).await?;
    let mut errors = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let ids = &s.notification_channel_ids;
        for (j, id) in ids.iter().enumerate() {
            let field = format!("steps.{i}.notificationChannelIds.{j}");
            if !found.contains(id) {
                errors.push(FieldError::new(field, "no such notification channel"));
            } else if ids[..j].contains(id) {
                errors.push(FieldError::new(field, "duplicate channel"));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

fn new_steps(steps: &[StepInput]) -> Vec<NewStep> {
    steps
        .iter()
        .map(|s| NewStep {
            delay_minutes: s.delay_minutes,
            channel_ids: s.notification_channel_ids.clone(),
        })
        .collect()
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<PolicyRow, DomainError> {
    store::escalation::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::EscalationPolicy))
}

async fn versioned(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(EscalationPolicy, i64), DomainError> {
    let p = load(cx, caller, id).await?;
    let steps = store::escalation::steps(cx.db().reader(), &caller.workspace_id, &p.id).await?;
    Ok((view(&p, &steps), p.version))
}

/// The workspace's policies, oldest first.
pub async fn list(cx: &Cx, caller: &Caller) -> Result<Vec<EscalationPolicy>, DomainError> {
    caller.require::<caps::NotificationsRead>()?;
    let rows = store::escalation::list(cx.db().reader(), &caller.workspace_id).await?;
    let mut steps =
        store::escalation::steps_by_policy(cx.db().reader(), &caller.workspace_id).await?;
    Ok(rows
        .iter()
        .map(|p| view(p, &steps.remove(&p.id).unwrap_or_default()))
        .collect())
}

/// One policy and its version.
pub async fn get(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(EscalationPolicy, i64), DomainError> {
    caller.require::<caps::NotificationsRead>()?;
    versioned(cx, caller, id).await
}

fn audit_meta(name: &str, steps: &[StepInput]) -> serde_json::Value {
    let delays: Vec<i64> = steps.iter().map(|s| s.delay_minutes).collect();
    json!({"name": name, "delayMinutes": delays})
}

pub async fn create(
    cx: &Cx,
    caller: &Caller,
    input: CreateEscalationPolicy,
) -> Result<EscalationPolicy, DomainError> {
    caller.require::<caps::NotificationsWrite>()?;
    input.check()?;
    check_channels(cx, &caller.workspace_id, &input.steps).await?;
    let now = cx.clock().now_ms();
    let row = PolicyRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: input.name.trim().to_string(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let mut tx = cx.db().begin().await?;
    store::escalation::insert(&mut *tx, &row).await?;
    store::escalation::set_steps(&mut tx, &row.id, &new_steps(&input.steps)).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "escalation_policy.create",
            resource_type: "escalation_policy",
            resource_id: &row.id,
            metadata: audit_meta(&row.name, &input.steps),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(versioned(cx, caller, &row.id).await?.0)
}

/// Renames a policy or replaces its steps if `expected` (when given) is still its version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateEscalationPolicy,
) -> Result<(EscalationPolicy, i64), DomainError> {
    caller.require::<caps::NotificationsWrite>()?;
    input.check()?;
    if let Some(steps) = &input.steps {
        check_channels(cx, &caller.workspace_id, steps).await?;
    }
    let p = load(cx, caller, id).await?;
    let name = input
        .name
        .as_deref()
        .map_or_else(|| p.name.clone(), |n| n.trim().to_string());
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows =
        store::escalation::update(&mut *tx, &caller.workspace_id, &p.id, &name, now, expected)
            .await?;
    check_write(
        rows,
        expected,
        DomainError::NotFound(Resource::EscalationPolicy),
    )?;
    if let Some(steps) = &input.steps {
        store::escalation::set_steps(&mut tx, &p.id, &new_steps(steps)).await?;
    }
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "escalation_policy.update",
            resource_type: "escalation_policy",
            resource_id: &p.id,
            metadata: audit_meta(&name, input.steps.as_deref().unwrap_or_default()),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    versioned(cx, caller, id).await
}

/// Deletes a policy; its monitors keep running without one.
pub async fn delete(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(), DomainError> {
    caller.require::<caps::NotificationsDelete>()?;
    let p = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::escalation::delete(&mut *tx, &caller.workspace_id, &p.id, expected).await?;
    check_write(
        rows,
        expected,
        DomainError::NotFound(Resource::EscalationPolicy),
    )?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "escalation_policy.delete",
            resource_type: "escalation_policy",
            resource_id: &p.id,
            metadata: json!({"name": p.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
