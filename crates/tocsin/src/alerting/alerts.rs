//! Alerts from monitor events, and whom each notification goes to. [`react`] runs inside the
//! transaction that appends the events (`monitoring::transition`), so an alert and its
//! deliveries exist exactly when the status change that caused them does.
//!
//! - A change **to DOWN** (a failing cycle, a push saying down, a missed push deadline) opens
//!   an alert unless the monitor has an unresolved one (the table's `open_key` keeps that to
//!   one, so flapping cannot open a second) and sends `alert.opened`.
//! - A change to any other status but MAINTENANCE **resolves** the unresolved alert and sends
//!   `alert.resolved`. MAINTENANCE leaves an open alert as it is and opens none.
//! - DEGRADED, CHANGED and `certificate_expiring` send `monitor.degraded`, `monitor.changed`
//!   and `certificate.expiring` without an alert; `stale` sends `monitor.stale` to the
//!   workspace's default channels.
//! - `flapping` sends `monitor.flapping` (with the changes counted in the window); while a
//!   monitor flaps, `monitoring::transition` does not hand its status changes here at all, so
//!   they open, resolve and notify nothing. `stable` sends `monitor.stable` with the status it
//!   settled on, then opens the alert if that is DOWN (its cause the last failure's) or
//!   resolves the unresolved one if the target answers, as a change to that status would.
//!   Both go to the monitor's channels plus its policy's immediate steps.
//!
//! - Monitors with dependencies page once per shared outage: an alert under a dependency's
//!   outage is suppressed, a dependent's page is held, a root's lists its dependents
//!   (`super::root_cause`).
//!
//! Whom: the monitor's own channels; when it names none and has no escalation policy, the
//! workspace's default channels; with a policy, also the channels of the steps the alert has
//! reached (at opening, the steps whose delay is 0). Only enabled channels whose `events` list
//! the event are sent to, each once.

use serde_json::{json, Value};
use tocsin_core::Status;

use super::ack_link::Links;
use super::event::AlertEvent;
use super::outbox::{self, Notification};
use super::root_cause::{self, Upstream};
use crate::clock::rfc3339;
use crate::ids::{new_id, AlertId};
use crate::store::alerts::{self as store, AlertRow};
use crate::store::escalation::{self, StepRow};
use crate::store::events::{EventKind, EventRow};
use crate::store::monitor_channels::{self as routing, MonitorBrief, Target};

/// What a notification says when the event carried no message.
const DOWN_CAUSE: &str = "the monitor is down";

/// Turns appended events into alerts and notifications in the caller's transaction; returns
/// how many deliveries it enqueued (the caller wakes the delivery worker after its commit
/// when there are any).
pub async fn react(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    events: &[EventRow],
    now: i64,
) -> Result<usize, sqlx::Error> {
    let mut enqueued = 0;
    for e in events {
        enqueued += react_one(conn, links, e, now).await?;
    }
    Ok(enqueued)
}

async fn react_one(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    e: &EventRow,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let at = e.created_at;
    match e.kind {
        EventKind::Fresh => Ok(0),
        EventKind::Stale => {
            let Some(m) = routing::brief(&mut *conn, &e.workspace_id, &e.monitor_id).await? else {
                return Ok(0);
            };
            let targets = routing::default_targets(&mut *conn, &e.workspace_id).await?;
            let data = monitor_data(&m, e.message.as_deref());
            send(
                conn,
                &targets,
                &e.workspace_id,
                None,
                AlertEvent::MonitorStale,
                &data,
                at,
            )
            .await
        }
        EventKind::CertificateExpiring => {
            monitor_notice(conn, e, AlertEvent::CertificateExpiring).await
        }
        EventKind::Flapping => flap_notice(conn, e, AlertEvent::MonitorFlapping).await,
        EventKind::Stable => {
            let mut n = flap_notice(conn, e, AlertEvent::MonitorStable).await?;
            match e.to_status {
                Status::Down => {
                    let cause = crate::store::monitors_flap::latest_event(
                        &mut *conn,
                        &e.monitor_id,
                        EventKind::Down.as_str(),
                    )
                    .await?
                    .and_then(|(_, m)| m);
                    let down = EventRow {
                        message: cause,
                        ..e.clone()
                    };
                    n += open(conn, links, &down, now).await?;
                }
                Status::Up | Status::Degraded | Status::Changed => {
                    n += resolve(conn, links, e).await?
                }
                Status::Maintenance | Status::Pending => {}
            }
            Ok(n)
        }
        EventKind::Down
        | EventKind::Up
        | EventKind::Degraded
        | EventKind::Changed
        | EventKind::Maintenance
        | EventKind::Pending => match e.to_status {
            Status::Down => open(conn, links, e, now).await,
            Status::Maintenance => Ok(0),
            to => {
                let mut n = resolve(conn, links, e).await?;
                let notice = match to {
                    Status::Degraded => Some(AlertEvent::MonitorDegraded),
                    Status::Changed => Some(AlertEvent::MonitorChanged),
                    _ => None,
                };
                if let Some(event) = notice {
                    n += monitor_notice(conn, e, event).await?;
                }
                Ok(n)
            }
        },
    }
}

/// Opens the monitor's alert (unless one is unresolved) and sends `alert.opened`: suppressed
/// under a dependency's outage, held for its dependencies' detection time, folding the held
/// alerts of its own dependents (see [`super::root_cause`]).
async fn open(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    e: &EventRow,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let Some(m) = routing::brief(&mut *conn, &e.workspace_id, &e.monitor_id).await? else {
        return Ok(0);
    };
    let graph = root_cause::enter(&mut *conn, &e.workspace_id, &m.id).await?;
    let (upstream, hold) = root_cause::upstream(&mut *conn, graph, &m.id).await?;
    let under = match upstream {
        Upstream::Maintenance => return Ok(0),
        Upstream::Under(root) => Some(root),
        Upstream::Clear => None,
    };
    let steps = policy_steps(conn, &e.workspace_id, m.escalation_policy_id.as_deref()).await?;
    let opened_at = e.created_at;
    let reached = steps
        .iter()
        .filter(|s| s.delay_minutes <= 0)
        .map(|s| s.step_order)
        .max()
        .filter(|_| under.is_none());
    let alert = AlertRow {
        id: new_id(),
        workspace_id: e.workspace_id.clone(),
        monitor_id: e.monitor_id.clone(),
        status: store::OPEN.to_string(),
        cause: e
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| DOWN_CAUSE.to_string()),
        escalation_policy_id: m.escalation_policy_id.clone(),
        escalation_step: reached,
        next_escalation_at: next_after(&steps, reached.unwrap_or(0), opened_at)
            .filter(|_| under.is_none()),
        opened_at,
        acknowledged_at: None,
        acknowledged_by: None,
        resolved_at: None,
        updated_at: opened_at,
        version: 1,
        root_cause_alert_id: under,
    };
    if !store::open(&mut *conn, &alert).await? {
        // An alert is already open for this outage: coalesce.
        return Ok(0);
    }
    if let Some(root) = &alert.root_cause_alert_id {
        tracing::info!(alert = %alert.id, monitor = %m.id, root = %root, "alert opened under its root cause");
        return Ok(0);
    }
    tracing::info!(alert = %alert.id, monitor = %m.id, "alert opened");
    // The held pages this root folds, listed in its page; beyond a few, the fold follows the
    // page (`super::deliver` runs `root_cause::fold_held` beside its first attempt).
    let dependents = root_cause::listed(&mut *conn, graph, &alert).await?;
    // A held page's incident waits for the hold too (`auto_incidents::open_after_holds`).
    let told = if hold > 0 {
        0
    } else {
        super::auto_incidents::opened(
            &mut *conn,
            links,
            &alert.workspace_id,
            &m.id,
            &m.name,
            &alert.cause,
            opened_at,
        )
        .await?
    };
    let targets = audience(conn, &m, &steps, alert.escalation_step).await?;
    let mut data = alert_data(links, &alert, &m, now);
    data["dependents"] = dependents;
    let sent = send(
        conn,
        &targets,
        &alert.workspace_id,
        Some(AlertId(&alert.id)),
        AlertEvent::AlertOpened,
        &data,
        opened_at,
    )
    .await?;
    root_cause::hold_new(&mut *conn, &alert, hold).await?;
    let listed = data["dependents"].as_array().map_or(0, Vec::len);
    if listed > 0 && (sent == 0 || listed <= root_cause::FOLD_IN_PLACE) {
        // A few, or no page to follow: the fold goes in this transaction.
        root_cause::fold_below(&mut *conn, &alert, opened_at).await?;
    }
    Ok(told + sent)
}

/// Resolves the monitor's unresolved alert, if any, and sends `alert.resolved`.
async fn resolve(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    e: &EventRow,
) -> Result<usize, sqlx::Error> {
    root_cause::enter(&mut *conn, &e.workspace_id, &e.monitor_id).await?;
    let Some(mut alert) =
        store::unresolved_for_monitor(&mut *conn, &e.workspace_id, &e.monitor_id).await?
    else {
        return Ok(0);
    };
    let at = e.created_at;
    if store::resolve(&mut *conn, &alert.id, at).await? == 0 {
        return Ok(0);
    }
    alert.status = store::RESOLVED.to_string();
    alert.resolved_at = Some(at);
    alert.next_escalation_at = None;
    alert.updated_at = at;
    alert.version += 1;
    tracing::info!(alert = %alert.id, monitor = %alert.monitor_id, "alert resolved");
    let told = super::auto_incidents::recovered(
        &mut *conn,
        links,
        &alert.workspace_id,
        &alert.monitor_id,
        at,
    )
    .await?;
    // An outage over within its hold paged nobody, so its end pages nobody either. A
    // suppressed alert pages nobody at all; it may still hold a page if its root's release
    // committed concurrently (PostgreSQL), which this drops.
    let dropped = crate::store::dependencies::drop_held(&mut *conn, &alert.id, at).await?;
    if alert.root_cause_alert_id.is_some() {
        return Ok(told);
    }
    let mut n = told;
    if dropped == 0 {
        n += notify_reached(conn, links, &alert, AlertEvent::AlertResolved, at).await?;
    }
    n += release_dependents(conn, links, &alert, at).await?;
    Ok(n)
}

/// The alerts that were under `root` (resolved at `at`) and are still DOWN become roots of
/// their own and send `alert.opened` now, with the escalation of their policy counted from now.
async fn release_dependents(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    root: &AlertRow,
    at: i64,
) -> Result<usize, sqlx::Error> {
    // The policies' steps, read before the release (which cannot wait on reads).
    let under = crate::store::dependencies::unresolved_under(&mut *conn, &root.id).await?;
    let mut timers = std::collections::HashMap::new();
    for a in &under {
        let steps = policy_steps(conn, &a.workspace_id, a.escalation_policy_id.as_deref()).await?;
        let reached = steps
            .iter()
            .filter(|s| s.delay_minutes <= 0)
            .map(|s| s.step_order)
            .max();
        timers.insert(
            a.id.clone(),
            (reached, next_after(&steps, reached.unwrap_or(0), at)),
        );
    }
    let released = root_cause::release(&mut *conn, &root.id, at, |a| {
        timers.get(&a.id).copied().unwrap_or((None, None))
    })
    .await?;
    let mut n = 0;
    for r in released {
        if r.alert.status != store::OPEN {
            continue;
        }
        tracing::info!(alert = %r.alert.id, monitor = %r.alert.monitor_id, "dependent alert became a root");
        n += notify_reached(conn, links, &r.alert, AlertEvent::AlertOpened, at).await?;
        // Held for the time its own recovery takes to confirm: one that recovered together
        // with the root (its check not recorded yet) then drops the page unsent.
        let hold = crate::store::dependencies::recovery_ms(&mut *conn, &r.alert.monitor_id).await?;
        if hold > 0 {
            crate::store::dependencies::hold(&mut *conn, &r.alert.id, at.saturating_add(hold))
                .await?;
        }
    }
    Ok(n)
}

/// Sends `event` about `alert` to the channels it has reached: the monitor's own (or the
/// defaults), plus the policy's steps up to the alert's `escalationStep`. Resolving and
/// acknowledging use it.
pub async fn notify_reached(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    alert: &AlertRow,
    event: AlertEvent,
    at: i64,
) -> Result<usize, sqlx::Error> {
    let Some(m) = routing::brief(&mut *conn, &alert.workspace_id, &alert.monitor_id).await? else {
        return Ok(0);
    };
    let steps = policy_steps(
        conn,
        &alert.workspace_id,
        alert.escalation_policy_id.as_deref(),
    )
    .await?;
    // The audience follows the policy the alert opened under, not one set since.
    let m = MonitorBrief {
        escalation_policy_id: alert.escalation_policy_id.clone(),
        ..m
    };
    let targets = audience(conn, &m, &steps, alert.escalation_step).await?;
    let mut data = alert_data(links, alert, &m, at);
    if alert.root_cause_alert_id.is_none() && event != AlertEvent::AlertAcknowledged {
        data["dependents"] = root_cause::dependents(&mut *conn, alert).await?;
    }
    send(
        conn,
        &targets,
        &alert.workspace_id,
        Some(AlertId(&alert.id)),
        event,
        &data,
        at,
    )
    .await
}

/// Sends `alert.escalated` about `alert` (already moved to `step`) to that step's channels.
pub async fn notify_step(
    conn: &mut sqlx::AnyConnection,
    links: &Links,
    alert: &AlertRow,
    step: &StepRow,
    at: i64,
) -> Result<usize, sqlx::Error> {
    let Some(m) = routing::brief(&mut *conn, &alert.workspace_id, &alert.monitor_id).await? else {
        return Ok(0);
    };
    let targets = routing::targets(&mut *conn, &alert.workspace_id, &step.channel_ids()).await?;
    let mut data = alert_data(links, alert, &m, at);
    data["dependents"] = root_cause::dependents(&mut *conn, alert).await?;
    send(
        conn,
        &targets,
        &alert.workspace_id,
        Some(AlertId(&alert.id)),
        AlertEvent::AlertEscalated,
        &data,
        at,
    )
    .await
}

/// A notice about the monitor that opens no alert (degraded, changed, certificate).
async fn monitor_notice(
    conn: &mut sqlx::AnyConnection,
    e: &EventRow,
    event: AlertEvent,
) -> Result<usize, sqlx::Error> {
    let Some(m) = routing::brief(&mut *conn, &e.workspace_id, &e.monitor_id).await? else {
        return Ok(0);
    };
    let targets = audience(conn, &m, &[], None).await?;
    let data = monitor_data(&m, e.message.as_deref());
    send(
        conn,
        &targets,
        &e.workspace_id,
        None,
        event,
        &data,
        e.created_at,
    )
    .await
}

/// `monitor.flapping` or `monitor.stable` about `e`'s monitor: `data.flapping` says since
/// when, over what window and how many changes it counts now; `data.status` the status then.
async fn flap_notice(
    conn: &mut sqlx::AnyConnection,
    e: &EventRow,
    event: AlertEvent,
) -> Result<usize, sqlx::Error> {
    let Some(m) = routing::brief(&mut *conn, &e.workspace_id, &e.monitor_id).await? else {
        return Ok(0);
    };
    let flap = crate::store::monitors_flap::read(&mut *conn, &e.monitor_id).await?;
    let window = flap
        .as_ref()
        .and_then(|f| f.settings())
        .unwrap_or_default()
        .window_minutes;
    let changes = flap.as_ref().map_or(0, |f| {
        tocsin_core::flap::changes_in_window(
            &f.state().changes,
            i64::from(window) * 60_000,
            e.created_at,
        )
    });
    let flapping = if event == AlertEvent::MonitorFlapping {
        json!({"since": rfc3339(e.created_at), "until": null,
               "windowMinutes": window, "changes": changes})
    } else {
        let since = crate::store::monitors_flap::latest_event(
            &mut *conn,
            &e.monitor_id,
            EventKind::Flapping.as_str(),
        )
        .await?
        .map(|(at, _)| rfc3339(at));
        json!({"since": since, "until": rfc3339(e.created_at),
               "windowMinutes": window, "changes": changes})
    };
    let steps = policy_steps(conn, &e.workspace_id, m.escalation_policy_id.as_deref()).await?;
    let immediate = steps
        .iter()
        .filter(|s| s.delay_minutes <= 0)
        .map(|s| s.step_order)
        .max();
    let targets = audience(conn, &m, &steps, immediate).await?;
    let mut data = monitor_data(&m, e.message.as_deref());
    data["status"] = json!(e.to_status);
    data["flapping"] = flapping;
    send(
        conn,
        &targets,
        &e.workspace_id,
        None,
        event,
        &data,
        e.created_at,
    )
    .await
}

/// Sends `region.down` to the default channels of every workspace with an active monitor in
/// `region`, which has just lost its last live probe (the scheduling node calls it once per
/// loss: `monitoring::staleness::watch_regions`).
pub async fn region_down(
    conn: &mut sqlx::AnyConnection,
    region: &str,
    at: i64,
) -> Result<usize, sqlx::Error> {
    let mut n = 0;
    let cause = format!("region {region} has no live probe: its checks have stopped");
    let data = json!({"alert": null, "region": region, "cause": cause});
    for ws in routing::workspaces_in_region(&mut *conn, region).await? {
        let targets = routing::default_targets(&mut *conn, &ws).await?;
        n += send(conn, &targets, &ws, None, AlertEvent::RegionDown, &data, at).await?;
    }
    Ok(n)
}

/// The steps of `policy` (none without one, or when it was deleted).
pub async fn policy_steps(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    policy: Option<&str>,
) -> Result<Vec<StepRow>, sqlx::Error> {
    match policy {
        Some(p) => escalation::steps(&mut *conn, ws, p).await,
        None => Ok(Vec::new()),
    }
}

/// When the step after `reached` fires: `opened_at` plus its delay; `None` after the last.
pub fn next_after(steps: &[StepRow], reached: i64, opened_at: i64) -> Option<i64> {
    steps
        .iter()
        .filter(|s| s.step_order > reached)
        .min_by_key(|s| s.step_order)
        .map(|s| opened_at.saturating_add(s.delay_minutes.saturating_mul(60_000)))
}

/// The monitor's own channels (the defaults when it names none and has no policy), then the
/// channels of the policy's steps up to `reached`, each once.
async fn audience(
    conn: &mut sqlx::AnyConnection,
    m: &MonitorBrief,
    steps: &[StepRow],
    reached: Option<i64>,
) -> Result<Vec<Target>, sqlx::Error> {
    let mut targets = routing::own_targets(&mut *conn, &m.workspace_id, &m.id).await?;
    if targets.is_empty() && m.escalation_policy_id.is_none() {
        targets = routing::default_targets(&mut *conn, &m.workspace_id).await?;
    }
    let upto = reached.unwrap_or(0);
    let ids: Vec<String> = steps
        .iter()
        .filter(|s| s.step_order <= upto)
        .flat_map(StepRow::channel_ids)
        .collect();
    targets.extend(routing::targets(&mut *conn, &m.workspace_id, &ids).await?);
    let mut seen = std::collections::HashSet::new();
    targets.retain(|t| seen.insert(t.id.clone()));
    Ok(targets)
}

/// Enqueues `event` to every target that takes it.
async fn send(
    conn: &mut sqlx::AnyConnection,
    targets: &[Target],
    ws: &str,
    alert_id: Option<AlertId<'_>>,
    event: AlertEvent,
    data: &Value,
    at: i64,
) -> Result<usize, sqlx::Error> {
    let mut n = 0;
    for t in targets.iter().filter(|t| t.takes(event.as_str())) {
        outbox::enqueue(
            &mut *conn,
            &Notification {
                workspace_id: ws,
                channel_id: &t.id,
                alert_id,
                event,
                data,
                at_ms: at,
            },
        )
        .await?;
        n += 1;
    }
    Ok(n)
}

/// The Alert record as the API shows it (`domain::alerts::Alert` serializes the same).
pub fn record_json(a: &AlertRow) -> Value {
    json!({
        "id": a.id,
        "workspaceId": a.workspace_id,
        "monitorId": a.monitor_id,
        "status": a.status,
        "cause": a.cause,
        "openedAt": rfc3339(a.opened_at),
        "acknowledgedAt": a.acknowledged_at.map(rfc3339),
        "acknowledgedBy": a.acknowledged_by,
        "resolvedAt": a.resolved_at.map(rfc3339),
        "escalationStep": a.escalation_step,
        "nextEscalationAt": a.next_escalation_at.map(rfc3339),
        "rootCauseAlertId": a.root_cause_alert_id,
    })
}

/// The monitor as a notification shows it: `id`, `name`, `type`, `url` or `host`, `status`.
pub fn monitor_json(m: &MonitorBrief) -> Value {
    let mut v = json!({"id": m.id, "name": m.name, "type": m.kind, "status": m.status});
    if let Some(url) = &m.url {
        v["url"] = json!(url);
    } else if let Some(host) = &m.host {
        v["host"] = json!(host);
    }
    v
}

/// `data` of an alert notification: the alert, its monitor, and links (the one-click
/// acknowledge link while the alert is open).
fn alert_data(links: &Links, a: &AlertRow, m: &MonitorBrief, now: i64) -> Value {
    let acknowledge = (a.status == store::OPEN).then(|| links.acknowledge(&a.id, now));
    json!({
        "alert": record_json(a),
        "monitor": monitor_json(m),
        "links": {"acknowledge": acknowledge, "alert": links.alert(&a.id)},
    })
}

/// `data` of a notice that opens no alert: the monitor and what was seen.
fn monitor_data(m: &MonitorBrief, cause: Option<&str>) -> Value {
    json!({"alert": null, "monitor": monitor_json(m), "cause": cause})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(order: i64, delay: i64) -> StepRow {
        StepRow {
            id: format!("s{order}"),
            policy_id: "p".into(),
            step_order: order,
            delay_minutes: delay,
            channel_ids: "[]".into(),
        }
    }

    #[test]
    fn the_next_step_counts_from_the_opening() {
        let steps = [step(1, 0), step(2, 5), step(3, 15)];
        assert_eq!(next_after(&steps, 1, 1_000), Some(1_000 + 5 * 60_000));
        assert_eq!(next_after(&steps, 2, 1_000), Some(1_000 + 15 * 60_000));
        assert_eq!(next_after(&steps, 3, 1_000), None);
        assert_eq!(next_after(&[], 0, 1_000), None);
    }
}
