//! The writes that move a monitor's state rather than its settings: pause (the status is
//! kept, `active` goes false), resume (back to `PENDING` with counters reset) and accepting a
//! DNS_DIFF monitor's changed answers. Each is one function whose store calls, in their
//! order, are those the REST handlers made, so a status change keeps one path through them.
//! All need `monitors:write`.

use serde_json::json;

use super::reads::{current, load};
use super::view::Monitor;
use super::{wrong_type, Versioned};
use crate::alerting::ack_link::Links;
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::cluster::feed::ChangeKind;
use crate::cx::Cx;
use crate::domain::{check_write, DomainError, Resource};
use crate::monitoring::transition::{record_transition, StatusChange};
use crate::monitoring::MonitorType;
use crate::store;

/// Stops checking a monitor; its status is kept. Pausing a paused monitor changes nothing.
pub async fn pause(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
) -> Result<Versioned<Monitor>, DomainError> {
    caller.require::<needs::PauseMonitor>()?;
    let m = load(cx, caller, monitor_id).await?;
    if m.is_active() {
        let now = cx.clock().now_ms();
        let mut tx = cx.db().begin().await?;
        let rows =
            store::monitors::pause(&mut *tx, &caller.workspace_id, &m.id, now, expected).await?;
        check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
        audit::record(
            &mut *tx,
            caller,
            Entry {
                action: "monitor.pause",
                resource_type: "monitor",
                resource_id: &m.id,
                metadata: json!({"name": m.name}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        cx.announce_monitor(&m.id, ChangeKind::Paused);
    }
    current(cx, caller, monitor_id).await
}

/// Starts checking a paused monitor again from `PENDING` with its counters reset. Resuming
/// an active monitor changes nothing.
pub async fn resume(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
) -> Result<Versioned<Monitor>, DomainError> {
    caller.require::<needs::ResumeMonitor>()?;
    let m = load(cx, caller, monitor_id).await?;
    if !m.is_active() {
        let now = cx.clock().now_ms();
        let mut tx = cx.db().begin().await?;
        let rows =
            store::monitors::resume(&mut *tx, &caller.workspace_id, &m.id, now, expected).await?;
        check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
        // The state a resumed monitor starts in is the state machine's, through the one
        // path every status change takes.
        let mut change = StatusChange::of(
            &m.id,
            m.seq,
            &tocsin_core::resume(&m.monitor_state()?),
            m.status_changed_at,
            now,
            m.last_check_at,
            None,
        );
        // A resumed monitor's status starts now, changed or not.
        change.state.status_changed_at = now;
        record_transition(&mut tx, &Links::of(cx), &change).await?;
        audit::record(
            &mut *tx,
            caller,
            Entry {
                action: "monitor.resume",
                resource_type: "monitor",
                resource_id: &m.id,
                metadata: json!({"name": m.name}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        cx.announce_monitor(&m.id, ChangeKind::Resumed);
    }
    current(cx, caller, monitor_id).await
}

/// DNS_DIFF: accepts the changed answers; the next answer becomes the baseline.
pub async fn accept_baseline(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
) -> Result<Versioned<Monitor>, DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    let m = load(cx, caller, monitor_id).await?;
    if m.kind() != Some(MonitorType::DnsDiff) {
        return Err(wrong_type(
            "Only DNS_DIFF monitors have a baseline to accept: nothing needs accepting on this monitor.",
        ));
    }
    let now = cx.clock().now_ms();
    let transition = tocsin_core::accept_baseline(&m.monitor_state()?);
    let mut tx = cx.db().begin().await?;
    let rows =
        store::monitors::accept_baseline(&mut *tx, &caller.workspace_id, &m.id, now, expected)
            .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    let mut change = StatusChange::of(
        &m.id,
        m.seq,
        &transition,
        m.status_changed_at,
        now,
        m.last_check_at,
        Some("new answers accepted as the baseline".into()),
    );
    // A person's action, whether or not the monitor runs.
    change.even_paused = true;
    record_transition(&mut tx, &Links::of(cx), &change).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "monitor.accept_baseline",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name, "from": m.status_text, "to": transition.state.status.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce_monitor(&m.id, ChangeKind::Updated);
    current(cx, caller, monitor_id).await
}
