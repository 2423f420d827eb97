//! What a push, or a missed deadline, does to its monitor, inside the heartbeat writer's
//! transaction (see [`crate::push`] for the rules). It lives with the writer that runs it, so
//! that storage of results does not reach up into push ingestion.
//!
//! The writer calls [`plan`] before inserting the batch's heartbeats, to learn which push
//! items must not be recorded at all (an Idempotency-Key retry, a monitor deleted since the
//! token was looked up, a missed deadline that a push or another miss already answered), and
//! [`apply`] after, to write each monitor's new state, `lastPushAt` and events. Both run in the
//! one transaction the writer commits before answering anybody, and the writer is the only
//! task that records pushes, so check-then-write needs no further locking.

use std::collections::{HashMap, HashSet};

use chrono::Duration;
use tocsin_core::state::{push_down, step, CycleInput, MonitorState, Verdict};
use tocsin_core::PushStatus;

use super::transition::{record_transitions, ChangeEvent, StatusChange};
use super::MonitorType;
use crate::alerting::ack_link::Links;
use crate::clock::from_ms;
use crate::store::events::EventRow;
use crate::store::monitors::{MonitorRow, StateUpdate};
use crate::store::{push as store, Tx};

/// How long an Idempotency-Key collapses retries.
pub const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;

/// What a heartbeat handed to the writer by push ingestion means for its monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushEffect {
    /// The job checked in.
    Push {
        status: PushStatus,
        idempotency_key: Option<String>,
    },
    /// The watcher saw the deadline pass; re-checked here against the committed state.
    Missed,
}

/// Why a push item is not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Same Idempotency-Key as a recorded push of the same monitor, within the window.
    Repeated,
    /// The monitor is gone (or is no longer a push monitor).
    Gone,
    /// A missed deadline that is not (or no longer) missed.
    NotDue,
}

/// One push item of a batch, as the writer sees it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    pub monitor_seq: i64,
    pub ts_ms: i64,
    pub effect: &'a PushEffect,
}

/// The outcome of [`plan`]: a verdict per item, and the monitors involved.
#[derive(Debug, Default)]
pub struct Plan {
    /// Parallel to the items given to [`plan`].
    pub skip: Vec<Option<Skip>>,
    /// Per item that is a miss: the expected check-in it answers for.
    expected: Vec<Option<i64>>,
    monitors: HashMap<i64, MonitorRow>,
}

impl Plan {
    /// Whether a maintenance window holds monitor `seq` at `ts_ms` (`Some(excluded)`), as the
    /// monitor row read in this transaction says.
    pub fn maintenance_at(&self, seq: i64, ts_ms: i64) -> Option<bool> {
        self.monitors.get(&seq)?.maintenance_at(ts_ms)
    }
}

/// Decides which items to record (call before inserting the heartbeats).
pub async fn plan(tx: &mut Tx, items: &[Item<'_>]) -> Result<Plan, sqlx::Error> {
    let mut seqs: Vec<i64> = items.iter().map(|i| i.monitor_seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let monitors: HashMap<i64, MonitorRow> = store::monitors_by_seq(&mut *tx, &seqs)
        .await?
        .into_iter()
        .filter(|m| m.kind() == Some(MonitorType::Push))
        .map(|m| (m.seq, m))
        .collect();

    let mut skip = vec![None; items.len()];
    let mut expected = vec![None; items.len()];
    // Keys: the first of a batch claims, later twins in the batch are retries.
    let mut seen = HashSet::new();
    let mut claims = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !monitors.contains_key(&item.monitor_seq) {
            skip[i] = Some(Skip::Gone);
            continue;
        }
        if let PushEffect::Push {
            idempotency_key: Some(key),
            ..
        } = item.effect
        {
            if seen.insert((item.monitor_seq, key.as_str())) {
                claims.push((item.monitor_seq, key.clone(), item.ts_ms));
            } else {
                skip[i] = Some(Skip::Repeated);
            }
        }
    }
    if !claims.is_empty() {
        let oldest = claims.iter().map(|c| c.2).min().unwrap_or(0);
        let claimed = store::claim_keys(tx, &claims, oldest - IDEMPOTENCY_WINDOW_MS).await?;
        for (i, item) in items.iter().enumerate() {
            if let PushEffect::Push {
                idempotency_key: Some(key),
                ..
            } = item.effect
            {
                if skip[i].is_none() && !claimed.contains(&(item.monitor_seq, key.clone())) {
                    skip[i] = Some(Skip::Repeated);
                }
            }
        }
    }

    // Misses, replayed in order against each monitor's check-ins so far.
    let mut last_check: HashMap<i64, Option<i64>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let Some(m) = monitors.get(&item.monitor_seq) else {
            continue;
        };
        if skip[i].is_some() {
            continue;
        }
        let last = last_check
            .entry(m.seq)
            .or_insert_with(|| base_of(m.last_check_at, m.last_push_at));
        match item.effect {
            PushEffect::Push { .. } => *last = Some(last.unwrap_or(item.ts_ms).max(item.ts_ms)),
            PushEffect::Missed => match missed_expectation(m, *last, item.ts_ms) {
                Some(e) => {
                    expected[i] = Some(e);
                    *last = Some(e);
                }
                None => skip[i] = Some(Skip::NotDue),
            },
        }
    }
    Ok(Plan {
        skip,
        expected,
        monitors,
    })
}

/// The expected check-in a silence at `now_ms` answers for, if `m` is active and overdue.
fn missed_expectation(m: &MonitorRow, last_check: Option<i64>, now_ms: i64) -> Option<i64> {
    if m.active == 0 {
        return None;
    }
    let schedule = m.push_schedule()?;
    let deadline = tocsin_core::push::deadline(&schedule, last_check.map(from_ms), m.started_at())?;
    if from_ms(now_ms) <= deadline {
        return None;
    }
    let grace = Duration::seconds(i64::from(schedule.grace_secs));
    let now = from_ms(now_ms);
    let mut expected = deadline - grace;
    // A long silence (or a server that was itself down) is one outage: answer the latest
    // expected check-in already overdue rather than each one in turn. Bounded, as a cron
    // schedule can only be walked one run at a time.
    for _ in 0..10_000 {
        match tocsin_core::push::deadline(&schedule, Some(expected), m.started_at()) {
            Some(next) if now > next => expected = next - grace,
            _ => break,
        }
    }
    Some(expected.timestamp_millis())
}

/// The later of the last real check-in and the last answered expectation.
fn base_of(last_check_at: Option<i64>, last_push_at: Option<i64>) -> Option<i64> {
    match (last_check_at, last_push_at) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The next deadline of `m` as stored now (what the watcher schedules), in ms.
pub fn next_deadline_ms(m: &MonitorRow) -> Option<i64> {
    if m.active == 0 {
        return None;
    }
    let schedule = m.push_schedule()?;
    let base = base_of(m.last_check_at, m.last_push_at).map(from_ms);
    tocsin_core::push::deadline(&schedule, base, m.started_at()).map(|d| d.timestamp_millis())
}

/// A recorded item, as [`apply`] needs it.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    /// Index into the items given to [`plan`].
    pub index: usize,
    pub item: Item<'a>,
    pub message: Option<&'a str>,
}

/// Writes each monitor's new state, `lastPushAt` and events for the recorded items (call
/// after inserting the heartbeats, in the same transaction). Items must be in batch order.
pub async fn apply(
    tx: &mut Tx,
    plan: &Plan,
    recorded: &[Recorded<'_>],
    links: &Links,
) -> Result<Vec<EventRow>, sqlx::Error> {
    let mut order = Vec::new();
    let mut per_monitor: HashMap<i64, Vec<&Recorded<'_>>> = HashMap::new();
    for r in recorded {
        let list = per_monitor.entry(r.item.monitor_seq).or_default();
        if list.is_empty() {
            order.push(r.item.monitor_seq);
        }
        list.push(r);
    }
    let mut changes = Vec::with_capacity(order.len());
    let mut paused = Vec::new();
    for seq in order {
        let (Some(m), Some(list)) = (plan.monitors.get(&seq), per_monitor.get(&seq)) else {
            continue;
        };
        let settings = m.state_settings();
        // A corrupt stored status cannot be stepped: the pushes are still recorded as
        // heartbeats and check-ins, and the row is reported, never taken for PENDING.
        let mut state: Option<MonitorState> = match m.monitor_state() {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(monitor = %m.id, error = %e, "push monitor state unreadable");
                None
            }
        };
        let mut changed_at = m.status_changed_at;
        let mut last_push = m.last_push_at;
        let mut last_check = m.last_check_at;
        let mut events = Vec::new();
        for r in list {
            let ts = r.item.ts_ms;
            let transition = match r.item.effect {
                PushEffect::Push { status, .. } => {
                    last_push = Some(last_push.map_or(ts, |p| p.max(ts)));
                    last_check = Some(last_check.map_or(ts, |c| c.max(ts)));
                    if m.active == 0 {
                        continue;
                    }
                    let Some(current) = &state else { continue };
                    // Inside a window a push changes nothing but its heartbeat.
                    let in_maintenance = m.maintenance_at(ts).is_some();
                    match status {
                        PushStatus::Up => step(
                            current,
                            &settings,
                            CycleInput {
                                verdict: Verdict::Up,
                                in_maintenance,
                            },
                            from_ms(ts),
                        ),
                        PushStatus::Down => push_down(current, in_maintenance, from_ms(ts)),
                    }
                }
                PushEffect::Missed => {
                    let expected = plan.expected.get(r.index).copied().flatten().unwrap_or(ts);
                    last_check = Some(last_check.map_or(expected, |c| c.max(expected)));
                    let Some(current) = &state else { continue };
                    push_down(current, m.maintenance_at(ts).is_some(), from_ms(ts))
                }
            };
            if let Some(ev) = transition.event {
                changed_at = ts;
                events.push(ChangeEvent::new(ev, ts, event_message(r)));
            }
            state = Some(transition.state);
        }
        match state {
            Some(state) if m.active != 0 => changes.push(StatusChange {
                monitor_id: &m.id,
                monitor_seq: seq,
                state: StateUpdate::from_state(&state, changed_at, last_check),
                events,
                last_push_at: Some(last_push),
                even_paused: false,
            }),
            // Paused (or unreadable): only the check-in times move.
            _ => paused.push(store::Pushed {
                seq,
                last_check_at: last_check,
                last_push_at: last_push,
            }),
        }
    }
    let recorded = record_transitions(tx, links, &changes).await?;
    store::record_pushes(tx, &paused).await?;
    Ok(recorded.events)
}

fn event_message(r: &Recorded<'_>) -> Option<String> {
    match r.item.effect {
        PushEffect::Missed => Some("no push received within the grace period".to_string()),
        PushEffect::Push { status, .. } => match (r.message, status) {
            (Some(m), _) => Some(m.to_string()),
            (None, PushStatus::Down) => Some("the job reported status=down".to_string()),
            (None, PushStatus::Up) => None,
        },
    }
}
