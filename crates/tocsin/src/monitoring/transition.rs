//! The one place where a monitor's status changes are stored.
//!
//! Every site that changes a monitor's status — a scheduled cycle ([`super::cycle`]), a push
//! or a missed push deadline (`monitoring::push_record`), accepting a DNS_DIFF baseline and resuming a
//! paused monitor (the monitor API), and later maintenance windows — computes the change with
//! the state machine in `tocsin-core` and hands it to [`record_transitions`] (or
//! [`record_transition`]) inside **its own transaction**. This writes the new state columns
//! and, in order, the status-change events (plus any event that rides with one, such as
//! `certificate_expiring`), so a committed status always has its event and an event never
//! describes a status that was rolled back.
//!
//! A batch of changes is written with one state `UPDATE` (the push writer records a whole
//! batch of pushes this way: push ingestion is measured in tens of thousands per second), then
//! one event append per event. Changes that carry no event (a push batch's counters) may ride
//! along, so the batch stays one statement. The common scheduled cycle that changes no status
//! does not come here: its counters travel with its heartbeats through the group-commit writer.
//!
//! Flap detection rides here too ([`super::flapping`]): each change between UP and DOWN is
//! counted in the monitor's flap state in the same transaction; the change that starts
//! flapping appends a `flapping` event, and while the monitor flaps its status-change events
//! are stored (the status stays truthful) but not handed to alerting, so they open, resolve
//! and notify nothing. A change after a quiet window first appends the `stable` event that
//! ends it (the scheduling node usually ends it sooner, without a change).

use std::collections::HashSet;

use tocsin_core::{Event, FlapSettings, FlapState, Status, Transition};

use super::flapping::{flapping_event, stable_event};
use crate::alerting::ack_link::Links;
use crate::alerting::alerts;
use crate::store::corrupt;
use crate::store::events::{self, EventKind, EventRow, NewEvent};
use crate::store::monitors::{self, StateUpdate, StateWrite};
use crate::store::monitors_flap;
use crate::store::Tx;

/// One monitor's state change, to be stored by [`record_transitions`].
#[derive(Debug, Clone)]
pub struct StatusChange<'a> {
    pub monitor_id: &'a str,
    pub monitor_seq: i64,
    /// The state columns to store.
    pub state: StateUpdate,
    /// The status changes that led to `state`, in order (none when only counters moved).
    pub events: Vec<ChangeEvent>,
    /// PUSH: the last push, stored with the state (`None`: not a push; the column is left
    /// alone). Within one call either every change sets it or none does.
    pub last_push_at: Option<Option<i64>>,
    /// Whether the change applies to a paused monitor (a person's action does; a check or
    /// push result that lands after a pause belongs to nobody and is dropped).
    pub even_paused: bool,
}

/// One status change's event, with what explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEvent {
    pub event: Event,
    /// When it happened (ms).
    pub at_ms: i64,
    pub message: Option<String>,
    /// Days left of a certificate inside its warning threshold, seen by the change's cycle:
    /// recorded as a `certificate_expiring` event (alerting) right after this one. Once per
    /// status change, so a monitor `DEGRADED` by its certificate does not repeat it each cycle.
    pub certificate_expiring_days: Option<i64>,
}

impl ChangeEvent {
    pub fn new(event: Event, at_ms: i64, message: Option<String>) -> Self {
        ChangeEvent {
            event,
            at_ms,
            message,
            certificate_expiring_days: None,
        }
    }
}

impl<'a> StatusChange<'a> {
    /// One state-machine step at `at_ms`: the new state, and its event if the status changed
    /// (then `status_changed_at` becomes `at_ms`, otherwise it stays `previous_changed_at`).
    pub fn of(
        monitor_id: &'a str,
        monitor_seq: i64,
        transition: &Transition,
        previous_changed_at: i64,
        at_ms: i64,
        last_check_at: Option<i64>,
        message: Option<String>,
    ) -> Self {
        let changed_at = if transition.event.is_some() {
            at_ms
        } else {
            previous_changed_at
        };
        StatusChange {
            monitor_id,
            monitor_seq,
            state: StateUpdate::from_state(&transition.state, changed_at, last_check_at),
            events: transition
                .event
                .map(|ev| ChangeEvent::new(ev, at_ms, message))
                .into_iter()
                .collect(),
            last_push_at: None,
            even_paused: false,
        }
    }
}

/// What [`record_transitions`] stored.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The seqs of the monitors whose change applied (the others were paused or deleted).
    pub applied: HashSet<i64>,
    /// The events appended, in order.
    pub events: Vec<EventRow>,
    /// Deliveries alerting enqueued for them: when any, the caller wakes the delivery worker
    /// after its commit.
    pub notified: usize,
}

/// Stores status changes in the caller's transaction: the state of every change in one
/// statement, then the events of those that applied, in order.
///
/// This is the one place where alerting enqueues deliveries ([`alerts::react`]), in the same
/// transaction, so an alert and its deliveries exist exactly when their event does.
pub async fn record_transitions(
    tx: &mut Tx,
    links: &Links,
    changes: &[StatusChange<'_>],
) -> Result<Recorded, sqlx::Error> {
    let mut recorded = Recorded::default();
    if changes.is_empty() {
        return Ok(recorded);
    }
    let with_last_push = changes.iter().any(|c| c.last_push_at.is_some());
    let rows: Vec<StateWrite<'_>> = changes
        .iter()
        .map(|c| StateWrite {
            seq: c.monitor_seq,
            update: &c.state,
            last_push_at: c.last_push_at.flatten(),
            even_paused: c.even_paused,
        })
        .collect();
    recorded.applied = monitors::write_states(tx, &rows, with_last_push).await?;
    // What alerting hears: every event but the status changes of a flapping monitor.
    let mut heard = Vec::new();
    for c in changes {
        if !recorded.applied.contains(&c.monitor_seq) || c.events.is_empty() {
            continue;
        }
        let mut flap = Flap::read(tx, c.monitor_id).await?;
        for e in &c.events {
            let step = flap.step(&e.event, e.at_ms);
            if let Some(settled) = step.ended {
                let stable = stable_event(settled, e.at_ms);
                let new = stable.new_event(c.monitor_id);
                append_one(tx, &new, &mut recorded.events, &mut heard).await?;
            }
            let first = recorded.events.len();
            append(tx, c.monitor_id, e, !step.flapping, &mut recorded.events).await?;
            // The change itself, then what rides with it (a certificate notice), which is no
            // per-change page and is heard either way.
            let skip = usize::from(step.flapping);
            heard.extend(recorded.events.iter().skip(first + skip).cloned());
            if let Some(n) = step.started {
                let started = flapping_event(e.event.to, n, flap.window_minutes(), e.at_ms);
                let new = started.new_event(c.monitor_id);
                append_one(tx, &new, &mut recorded.events, &mut heard).await?;
            }
        }
        flap.save(tx, c.monitor_id).await?;
    }
    for ev in &recorded.events {
        log_event(ev);
    }
    if let Some(now) = heard.iter().map(|e| e.created_at).max() {
        recorded.notified = alerts::react(tx, links, &heard, now).await?;
    }
    Ok(recorded)
}

/// Appends one event that alerting hears.
async fn append_one(
    tx: &mut Tx,
    e: &NewEvent<'_>,
    out: &mut Vec<EventRow>,
    heard: &mut Vec<EventRow>,
) -> Result<(), sqlx::Error> {
    if let Some(row) = events::append(tx, e).await? {
        heard.push(row.clone());
        out.push(row);
    }
    Ok(())
}

/// Whether a status change counts toward flapping: between DOWN and a status of a target that
/// answered (UP, DEGRADED, CHANGED). Entering or leaving PENDING or MAINTENANCE does not.
pub fn is_flap_change(ev: &Event) -> bool {
    use tocsin_core::Status::{Changed, Degraded, Down, Up};
    let answered = |s| matches!(s, Up | Degraded | Changed);
    (ev.to == Down && answered(ev.from)) || (ev.from == Down && answered(ev.to))
}

/// One monitor's flap state while its changes are recorded.
struct Flap {
    settings: Option<FlapSettings>,
    before: FlapState,
    state: FlapState,
}

/// What one status change did to the flap state.
struct FlapStep {
    /// Flapping ended before this change, settled on this status.
    ended: Option<tocsin_core::Status>,
    /// Flapping started with this change, after this many changes in the window.
    started: Option<u32>,
    /// The monitor flaps after this change: alerting does not hear of it.
    flapping: bool,
}

impl Flap {
    async fn read(tx: &mut Tx, id: &str) -> Result<Flap, sqlx::Error> {
        let row = monitors_flap::read(&mut **tx, id).await?;
        let (settings, state) = row.map(|r| (r.settings(), r.state())).unwrap_or_default();
        Ok(Flap {
            settings,
            before: state.clone(),
            state,
        })
    }

    fn window_minutes(&self) -> u32 {
        self.settings.unwrap_or_default().window_minutes
    }

    fn step(&mut self, ev: &Event, at: i64) -> FlapStep {
        let settings = self.settings.as_ref();
        let (next, ended, started) = if is_flap_change(ev) {
            let (next, o) = tocsin_core::flap::record_change(&self.state, settings, at);
            (next, o.ended, o.started)
        } else {
            let (next, ended) = tocsin_core::flap::tick(&self.state, settings, at);
            (next, ended, None)
        };
        self.state = next;
        FlapStep {
            ended: ended.then_some(ev.from),
            started,
            flapping: self.state.is_flapping(),
        }
    }

    async fn save(&self, tx: &mut Tx, id: &str) -> Result<(), sqlx::Error> {
        if self.state != self.before {
            monitors_flap::write(&mut **tx, id, &self.state).await?;
        }
        Ok(())
    }
}

/// One info line per recorded event: which monitor, from what to what, and why.
fn log_event(ev: &EventRow) {
    tracing::info!(
        monitor = %ev.monitor_id,
        name = %ev.monitor_name,
        kind = %ev.kind,
        from = %ev.from_status,
        to = %ev.to_status,
        cause = ev.message.as_deref().unwrap_or(""),
        "monitor status changed"
    );
}

/// [`record_transitions`] for one change: the events appended, or `None` when the change did
/// not apply (the monitor was paused or deleted meanwhile; the caller should roll back).
pub async fn record_transition(
    tx: &mut Tx,
    links: &Links,
    change: &StatusChange<'_>,
) -> Result<Option<Vec<EventRow>>, sqlx::Error> {
    let recorded = record_transitions(tx, links, std::slice::from_ref(change)).await?;
    Ok(recorded
        .applied
        .contains(&change.monitor_seq)
        .then_some(recorded.events))
}

/// Appends a change's event (then its certificate notice, if any); `alert` says whether
/// notification channels hear of the change (not while the monitor flaps).
async fn append(
    tx: &mut Tx,
    monitor_id: &str,
    e: &ChangeEvent,
    alert: bool,
    out: &mut Vec<EventRow>,
) -> Result<(), sqlx::Error> {
    let ev = e.event;
    let row = events::append(
        tx,
        &NewEvent {
            monitor_id,
            kind: ev.kind.into(),
            from_status: ev.from,
            to_status: ev.to,
            message: e.message.as_deref(),
            alert: alert && ev.is_alert_worthy(),
            created_at: e.at_ms,
        },
    )
    .await?;
    out.extend(row);
    if let Some(days) = e.certificate_expiring_days {
        let text = expiry_text(days);
        let row = events::append(
            tx,
            &NewEvent {
                monitor_id,
                kind: CERTIFICATE_EXPIRING,
                from_status: ev.from,
                to_status: ev.to,
                message: Some(&text),
                alert: true,
                created_at: e.at_ms,
            },
        )
        .await?;
        out.extend(row);
    }
    Ok(())
}

/// The event kinds of a monitor nobody is checking, and of checks reaching it again.
pub const STALE: EventKind = EventKind::Stale;
pub const FRESH: EventKind = EventKind::Fresh;

/// Whether a monitor is being checked: the other thing besides its status that alerting
/// must hear about (see [`super::staleness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness<'a> {
    /// Nobody has checked it since `since` ms; `why` says what is missing.
    Stale { since: i64, why: &'a str },
    /// A result came in again at `at` ms.
    Fresh { at: i64 },
}

/// Marks a monitor stale or fresh in the caller's transaction, with its `stale` / `fresh`
/// event (from and to its current status, which staleness does not change). Returns the
/// event, or `None` when there was nothing to change (already so, paused, or deleted).
pub async fn record_staleness(
    tx: &mut Tx,
    links: &Links,
    monitor_id: &str,
    change: Staleness<'_>,
) -> Result<Option<EventRow>, sqlx::Error> {
    let (since, at) = match change {
        Staleness::Stale { since, .. } => (Some(since), since),
        Staleness::Fresh { at } => (None, at),
    };
    let Some(text) = monitors::set_stale_since(&mut **tx, monitor_id, since).await? else {
        return Ok(None);
    };
    // A status this build cannot read is reported there; no event is made up for it.
    let Ok(status) = corrupt::parse::<Status>("monitors", monitor_id, "status", &text) else {
        return Ok(None);
    };
    let (kind, message) = match change {
        Staleness::Stale { why, .. } => (STALE, why.to_string()),
        Staleness::Fresh { .. } => (FRESH, "check results are coming in again".to_string()),
    };
    let row = events::append(
        tx,
        &NewEvent {
            monitor_id,
            kind,
            from_status: status,
            to_status: status,
            message: Some(&message),
            alert: true,
            created_at: at,
        },
    )
    .await?;
    if let Some(ev) = &row {
        log_event(ev);
        alerts::react(tx, links, std::slice::from_ref(ev), at).await?;
    }
    Ok(row)
}

/// Ends a monitor's flapping (the scheduling node's [`super::flapping::run_due`]) in the
/// caller's transaction: clears its flap state to `next` if it is still `seen`'s, appends the
/// `stable` event with the status it settled on, and lets alerting react (`monitor.stable`,
/// then the alert opened or resolved as that status asks). Returns the event, or `None` when
/// the state moved meanwhile or the monitor is gone (the caller rolls back).
pub async fn record_stable(
    tx: &mut Tx,
    links: &Links,
    seen: &monitors_flap::FlapRow,
    next: &FlapState,
    at: i64,
) -> Result<Option<EventRow>, sqlx::Error> {
    let Some(text) = monitors_flap::end(&mut **tx, seen, next).await? else {
        return Ok(None);
    };
    // A status this build cannot read is reported there (logged and counted).
    let Ok(status) = corrupt::parse::<Status>("monitors", &seen.id, "status", &text) else {
        return Ok(None);
    };
    let ev = stable_event(status, at);
    let row = events::append(tx, &ev.new_event(&seen.id)).await?;
    if let Some(r) = &row {
        log_event(r);
        alerts::react(tx, links, std::slice::from_ref(r), at).await?;
    }
    Ok(row)
}

/// The event kind of a certificate inside its warning threshold.
pub const CERTIFICATE_EXPIRING: EventKind = EventKind::CertificateExpiring;

fn expiry_text(days: i64) -> String {
    match days {
        0 => "the certificate expires today".to_string(),
        1 => "the certificate expires in 1 day".to_string(),
        n => format!("the certificate expires in {n} days"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_core::{EventKind, MonitorState, Status};

    #[test]
    fn expiry_text_counts_days() {
        assert_eq!(expiry_text(0), "the certificate expires today");
        assert_eq!(expiry_text(1), "the certificate expires in 1 day");
        assert_eq!(expiry_text(9), "the certificate expires in 9 days");
    }

    #[test]
    fn a_change_moves_status_changed_at_and_a_non_change_keeps_it() {
        let changed = Transition {
            state: MonitorState {
                status: Status::Down,
                ..MonitorState::initial()
            },
            event: Some(Event {
                kind: EventKind::Down,
                from: Status::Up,
                to: Status::Down,
            }),
        };
        let c = StatusChange::of("m", 1, &changed, 5, 10, Some(10), None);
        assert_eq!(c.state.status_changed_at, 10);
        assert_eq!(c.events.len(), 1);
        let same = Transition {
            state: MonitorState::initial(),
            event: None,
        };
        let c = StatusChange::of("m", 1, &same, 5, 10, Some(10), None);
        assert_eq!(c.state.status_changed_at, 5);
        assert!(c.events.is_empty());
    }
}
