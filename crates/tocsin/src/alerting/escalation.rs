//! The escalation timer. An open alert under a policy carries `next_escalation_at`: when its
//! next step fires, counted from the alert's opening (`opened_at + delayMinutes`). [`run`]
//! looks every [`TICK`] for alerts that are due by the injectable clock — only while this node
//! holds the scheduler role, so one node escalates — and for each, in one transaction, moves
//! it to the step (`escalation_step` = its `stepOrder`, the timer to the step after, `NULL`
//! after the last) and enqueues `alert.escalated` to that step's channels. The timer is a
//! column, so a restart (or another node taking the role over) goes on where it stopped; the
//! move is conditional on the timer it fired, so a step fires once. Acknowledging or
//! resolving clears the timer.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ack_link::Links;
use super::alerts::{next_after, notify_step, policy_steps};
use crate::cluster::lease::Role;
use crate::cx::Cx;
use crate::store::alerts::{self as store, AlertRow};

/// How often the worker looks for due steps: a step fires at most this late.
pub const TICK: Duration = Duration::from_secs(1);

/// Alerts handled per query.
const BATCH: i64 = 200;

/// Fires every escalation step due at `now_ms`; returns how many fired. Tests call it with a
/// manual clock; [`run`] calls it on the scheduling node.
pub async fn run_due(core: &Cx, now_ms: i64) -> Result<usize, sqlx::Error> {
    let mut fired = 0;
    // A node that was down may owe an alert several steps: each round fires one per alert.
    for _ in 0..32 {
        let due = store::due_escalations(core.db().reader(), now_ms, BATCH).await?;
        if due.is_empty() {
            break;
        }
        let mut moved = 0;
        for a in due {
            if fire(core, a, now_ms).await? {
                moved += 1;
            }
        }
        fired += moved;
        if moved == 0 {
            break;
        }
    }
    Ok(fired)
}

/// Moves one due alert to its next step and notifies that step's channels.
async fn fire(core: &Cx, mut a: AlertRow, now_ms: i64) -> Result<bool, sqlx::Error> {
    let Some(timer) = a.next_escalation_at else {
        return Ok(false);
    };
    let mut tx = core.db().begin().await?;
    let steps = policy_steps(&mut tx, &a.workspace_id, a.escalation_policy_id.as_deref()).await?;
    let reached = a.escalation_step.unwrap_or(0);
    let step = steps
        .iter()
        .filter(|s| s.step_order > reached)
        .min_by_key(|s| s.step_order)
        .cloned();
    let Some(step) = step else {
        // The policy lost its later steps (or was deleted) since: nothing left to fire.
        store::advance(&mut *tx, &a.id, timer, a.escalation_step, None, now_ms).await?;
        tx.commit().await?;
        return Ok(false);
    };
    let next = next_after(&steps, step.step_order, a.opened_at);
    let rows = store::advance(&mut *tx, &a.id, timer, Some(step.step_order), next, now_ms).await?;
    if rows == 0 {
        // Acknowledged, resolved or fired elsewhere meanwhile.
        tx.rollback().await?;
        return Ok(false);
    }
    a.escalation_step = Some(step.step_order);
    a.next_escalation_at = next;
    a.updated_at = now_ms;
    notify_step(&mut tx, &Links::of(core), &a, &step, now_ms).await?;
    tx.commit().await?;
    core.wake_deliveries();
    tracing::info!(alert = %a.id, step = step.step_order, "alert escalated");
    Ok(true)
}

/// Fires due steps every [`TICK`] while this node holds the scheduler role, until `cancel`.
pub async fn run(core: Cx, role: Role, cancel: CancellationToken) {
    super::on_the_scheduling_node(
        core,
        role,
        cancel,
        TICK,
        "fire escalation steps",
        |core, now| async move { run_due(&core, now).await },
    )
    .await;
}
