//! Applying one check cycle: the step between "the probes answered" and "the monitor's status
//! is stored". [`apply`] takes a typed monitor ([`super::monitor::Monitor`], parsed when it
//! was loaded: nothing here parses its stored text) and the per-region results of one cycle and
//!
//! 1. takes the cycle's verdict, decided by the scheduler from the regions' results and their
//!    times with [`tocsin_core::decide_timed`] (the quorum under `all`; under
//!    `round_robin`/`random` a failure counts only once a second region confirmed it, or when
//!    no other region could have). A region with no result — no live probe, no answer by the
//!    slot's deadline, a probe fault — never counts as a failure; when no region reported,
//!    the state machine is **not** stepped, so vanished probes cannot make a monitor `DOWN`;
//!    when a failure could not be confirmed in time the cycle is undecided: its results are
//!    stored (so the monitor is not stale) and the state machine is not stepped either;
//! 2. steps the state machine ([`tocsin_core::step`]) at the time of the decision (the
//!    clock when the results are in: a status change and its event carry the moment it was
//!    decided, while heartbeats and `lastCheckAt` carry the cycle's start);
//! 3. when the status changes (or a DNS_DIFF monitor still needs its baseline, or a stale
//!    monitor gets a result again), in **one transaction** writes the new state, the
//!    status-change event, the `fresh` event that ends staleness ([`super::staleness`]) and,
//!    for DNS_DIFF, the first answer set as the baseline — so a status and its event are never apart — then hands one
//!    heartbeat per reporting region to the group-commit writer;
//! 4. otherwise (the common cycle: counters move, the status does not) hands the heartbeats to
//!    the writer with the new counters attached, and the writer stores both in its batch
//!    transaction: one commit for many cycles instead of one each.
//!
//! Either way a result that lands after a pause or delete changes nothing (state writes apply
//! only to active monitors), and each heartbeat carries its region's own verdict as its status
//! (never `PENDING`).
//!
//! Certificate expiry: the check engine already makes an HTTPS result `Degraded` when the
//! leaf certificate is inside `tls.certExpiryWarnDays`. When a cycle changes the status while
//! a reporting region saw such a certificate, a `certificate_expiring` event (alerting) is
//! recorded right after the status event, in the same transaction. That is "once per state
//! change": a monitor sitting in `DEGRADED` because of its certificate does not repeat it every
//! cycle. An already expired certificate gives none (the `down` event names the expiry).
//!
//! Maintenance: when the monitor row says a window holds it at the moment of the decision
//! (`maintenance_until`, applied by [`super::maintenance`] on the scheduling node), the cycle
//! is stepped as inside maintenance (the status is `MAINTENANCE`, no `down`/`up` can fire) and
//! every heartbeat is stored as `MAINTENANCE`, keeping the check's own result for uptime unless
//! the window is excluded from it. The first cycle decided after the window's end steps
//! normally, so the monitor takes that check's status (an outage still going on gives
//! `MAINTENANCE` -> `DOWN`, which alerts).
//! Everything time-dependent reads the `ran_at_ms` the caller passes or the server's clock,
//! so tests drive both.

use std::sync::Arc;

use tocsin_checks::Outcome;
use tocsin_core::state::{Status, Verdict};
use tocsin_core::{step, CycleInput, Transition};

use super::heartbeats::{NewHeartbeat, WriteError, MAX_MESSAGE_BYTES};
use super::monitor::Monitor;
use super::runner::Runner;
use super::transition::{record_staleness, record_transition, Staleness, StatusChange};
use super::MonitorType;
use crate::alerting::ack_link::Links;
use crate::clock::from_ms;
use crate::store::events::EventRow;
use crate::store::monitors::{self, StateUpdate};

/// One region's part of a cycle: `None` when the region has no live probe (or no result).
#[derive(Debug, Clone)]
pub struct RegionResult {
    pub region: String,
    pub outcome: Option<Outcome>,
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default)]
pub struct CycleReport {
    /// The aggregated verdict; `None` when no region reported (nothing was stepped).
    pub verdict: Option<Verdict>,
    /// The state machine's result, when it was stepped and the write applied.
    pub transition: Option<Transition>,
    /// Events recorded by this cycle, in `seq` order.
    pub events: Vec<EventRow>,
    /// Heartbeats handed to the writer.
    pub heartbeats: usize,
    /// False when the monitor was paused or deleted before the result could be stored.
    pub applied: bool,
}

/// Why a cycle's result was not stored. (A row that cannot be read as a monitor never gets
/// here: it fails to parse when it is loaded, and is skipped there.)
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// The engine's verdict as the state machine's.
pub fn core_verdict(v: tocsin_checks::Verdict) -> Verdict {
    match v {
        tocsin_checks::Verdict::Up => Verdict::Up,
        tocsin_checks::Verdict::Down => Verdict::Down,
        tocsin_checks::Verdict::Degraded => Verdict::Degraded,
        tocsin_checks::Verdict::Changed => Verdict::Changed,
    }
}

/// A heartbeat's status for one region's verdict (a check result is never `PENDING`).
pub fn heartbeat_status(v: tocsin_checks::Verdict) -> Status {
    match v {
        tocsin_checks::Verdict::Up => Status::Up,
        tocsin_checks::Verdict::Down => Status::Down,
        tocsin_checks::Verdict::Degraded => Status::Degraded,
        tocsin_checks::Verdict::Changed => Status::Changed,
    }
}

/// One outcome as a heartbeat of `m` in `region` at `ts_ms`.
pub fn heartbeat_of(
    m: &Monitor,
    region: &str,
    ts_ms: i64,
    o: &Outcome,
    correlation_id: Option<&str>,
) -> NewHeartbeat {
    let mut hb = NewHeartbeat::new(
        &m.id,
        m.seq,
        ts_ms,
        region,
        heartbeat_status(o.verdict),
        o.latency.as_secs_f64() * 1000.0,
    );
    hb.status_code = o.status_code;
    hb.message = o.message.as_deref().map(|s| truncate(s, MAX_MESSAGE_BYTES));
    hb.retry_count = o.retry_count;
    hb.timings = o.timings;
    hb.response_headers = o.response_headers.clone();
    hb.response_body = o.response_body.clone();
    hb.resolved_ip = o.resolved_ip;
    hb.assertion_results = (!o.assertion_results.is_empty()).then(|| o.assertion_results.clone());
    hb.correlation_id = correlation_id.map(str::to_string);
    hb
}

/// Marks a result taken inside a maintenance window (`window`: whether it is excluded from
/// uptime) as `MAINTENANCE`, keeping its own status to count unless excluded.
pub fn in_window(hb: &mut NewHeartbeat, window: Option<bool>) {
    if let Some(excluded) = window {
        hb.counted_as = (!excluded).then_some(hb.status);
        hb.status = Status::Maintenance;
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Applies one cycle of `m` that ran at `ran_at_ms` (see the module documentation): `verdict`
/// is the cycle's, decided by the scheduler from the regions' results and their times
/// ([`tocsin_core::decide_timed`]); `results` are the regions asked.
pub async fn apply(
    state: &Runner,
    m: &Monitor,
    ran_at_ms: i64,
    verdict: Option<Verdict>,
    results: &[RegionResult],
) -> Result<CycleReport, CycleError> {
    for r in results {
        if let Some(o) = &r.outcome {
            state.check_stats().record(&m.id, &r.region, o);
        }
    }
    if state.judging().is_cancelled() {
        // Shutdown began while the checks ran: kept as results, never judged.
        return Ok(super::unjudged::store(state, m, ran_at_ms, results).await);
    }
    let mut report = CycleReport {
        verdict,
        ..CycleReport::default()
    };
    let Some(verdict) = verdict else {
        if results.iter().any(|r| r.outcome.is_some()) {
            // Undecided (one region's failure that no other region could confirm in time):
            // what came in is stored and counts as a result, the state machine is not stepped.
            let decided_at_ms = state.cx().clock().now_ms().max(ran_at_ms);
            let window = m.maintenance_at(decided_at_ms);
            let update = StateUpdate::from_state(&m.state, m.status_changed_at, Some(ran_at_ms));
            report =
                apply_with_heartbeats(state, m, ran_at_ms, window, results, update, None, report)
                    .await;
        }
        // Nobody reported: no heartbeat, no step, no false DOWN.
        return Ok(report);
    };
    // A status changes when the verdict is in, not when the checks started: a timed-out
    // check decides its cycle a whole timeout after it began.
    let decided_at_ms = state.cx().clock().now_ms().max(ran_at_ms);
    let window = m.maintenance_at(decided_at_ms);
    let transition = step(
        &m.state,
        &m.settings.state_settings,
        CycleInput {
            verdict,
            in_maintenance: window.is_some(),
        },
        from_ms(decided_at_ms),
    );
    let needs_baseline = m.kind() == MonitorType::DnsDiff && m.dns_baseline.is_none();
    if transition.event.is_none() && !needs_baseline && m.stale_since.is_none() {
        let update =
            StateUpdate::from_state(&transition.state, m.status_changed_at, Some(ran_at_ms));
        return Ok(apply_with_heartbeats(
            state,
            m,
            ran_at_ms,
            window,
            results,
            update,
            Some(transition),
            report,
        )
        .await);
    }

    // The words of the first region that agrees with the cycle's verdict explain it best.
    let message = results
        .iter()
        .filter_map(|r| r.outcome.as_ref())
        .find(|o| core_verdict(o.verdict) == verdict)
        .and_then(|o| o.message.as_deref())
        .map(|s| truncate(s, MAX_MESSAGE_BYTES));
    let mut change = StatusChange::of(
        &m.id,
        m.seq,
        &transition,
        m.status_changed_at,
        decided_at_ms,
        Some(ran_at_ms),
        message,
    );
    if let Some(ev) = change.events.first_mut() {
        ev.certificate_expiring_days = m.settings.cert_warn_days.and_then(|warn| {
            results
                .iter()
                .filter_map(|r| r.outcome.as_ref()?.cert_days_left)
                // An expired certificate is no longer "expiring": the status event says so.
                .filter(|days| (0..warn).contains(days))
                .min()
        });
    }
    let mut tx = state.cx().db().begin().await?;
    let Some(mut events) = record_transition(&mut tx, &Links::of(state.cx()), &change).await?
    else {
        // Paused or deleted while the check ran: the result belongs to nobody.
        tx.rollback().await?;
        return Ok(report);
    };
    if m.stale_since.is_some() {
        // Results reach the monitor again: it is no longer a blind spot.
        let fresh = Staleness::Fresh { at: decided_at_ms };
        events.extend(record_staleness(&mut tx, &Links::of(state.cx()), &m.id, fresh).await?);
    }
    report.events = events;
    if needs_baseline {
        // The first answer set becomes the baseline later cycles are compared against.
        let first = results
            .iter()
            .filter_map(|r| r.outcome.as_ref()?.dns_answers.as_ref())
            .next();
        if let Some(answers) = first {
            monitors::set_dns_baseline(&mut *tx, &m.id, Some(answers)).await?;
        }
    }
    tx.commit().await?;
    state.cx().wake_deliveries();
    report.transition = Some(transition);
    report.applied = true;

    let submissions: Vec<_> = results
        .iter()
        .filter_map(|r| {
            let o = r.outcome.as_ref()?;
            let mut hb = heartbeat_of(m, &r.region, ran_at_ms, o, None);
            in_window(&mut hb, window);
            Some(state.heartbeats().submit(hb))
        })
        .collect();
    report.heartbeats = submissions.len();
    for (i, outcome) in futures::future::join_all(submissions)
        .await
        .into_iter()
        .enumerate()
    {
        if let Err(e) = outcome {
            tracing::warn!(monitor = %m.id, index = i, error = %e, "heartbeat not stored");
        }
    }
    Ok(report)
}

/// The common cycle, which changes no status: the new counters ride with the heartbeats, so
/// the group-commit writer stores both in its batch transaction (one commit for many cycles,
/// where a transaction of their own would cost a commit each) and drops both if the monitor
/// was paused or deleted meanwhile.
#[allow(clippy::too_many_arguments)]
async fn apply_with_heartbeats(
    state: &Runner,
    m: &Monitor,
    ran_at_ms: i64,
    window: Option<bool>,
    results: &[RegionResult],
    update: StateUpdate,
    transition: Option<Transition>,
    mut report: CycleReport,
) -> CycleReport {
    let update = Arc::new(update);
    let submissions: Vec<_> = results
        .iter()
        .filter_map(|r| {
            let o = r.outcome.as_ref()?;
            let mut hb = heartbeat_of(m, &r.region, ran_at_ms, o, None);
            in_window(&mut hb, window);
            hb.state = Some(update.clone());
            // No status changes here and nobody waits but this cycle: the result may share
            // a commit with others (see `WriterOptions::patience`).
            Some(state.heartbeats().submit_patient(hb))
        })
        .collect();
    report.heartbeats = submissions.len();
    let (mut stored, mut gone) = (false, false);
    for (i, outcome) in futures::future::join_all(submissions)
        .await
        .into_iter()
        .enumerate()
    {
        match outcome {
            // A duplicate key still committed the state write (it runs before the insert).
            Ok(_) | Err(WriteError::Duplicate) => stored = true,
            Err(WriteError::MonitorGone) => gone = true,
            Err(e) => {
                tracing::warn!(monitor = %m.id, index = i, error = %e, "heartbeat not stored")
            }
        }
    }
    if stored && !gone {
        report.transition = transition;
        report.applied = true;
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_at_char_boundary() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }

    #[test]
    fn verdicts_map_one_to_one() {
        use tocsin_checks::Verdict as V;
        for (v, s) in [
            (V::Up, Status::Up),
            (V::Down, Status::Down),
            (V::Degraded, Status::Degraded),
            (V::Changed, Status::Changed),
        ] {
            assert_eq!(heartbeat_status(v), s);
        }
    }
}
