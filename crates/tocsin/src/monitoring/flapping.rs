//! Flapping monitors: the events that say a monitor started or stopped flapping, and the
//! scheduling node's worker that ends flapping when the window goes quiet.
//!
//! The rule is `tocsin-core`'s `flap` module. A monitor's settings (`flap_transitions`,
//! `flap_window_minutes`; both NULL = off) and state (`flapping_since`, `flap_changes`) are
//! columns of its row. Status changes move the state in their own transaction
//! ([`super::transition`]), which appends a `flapping` event when one starts it. Flapping
//! must also end when nothing changes any more, so [`run`] looks every [`TICK`] (on the node
//! holding the scheduler role only) at the flapping monitors and ends those whose window holds
//! at most one change, or whose detection was turned off: in one transaction it clears the
//! state (conditional on the state it read, so a change committed meanwhile wins), appends a
//! `stable` event carrying the status the monitor settled on, and lets alerting react to it
//! (`monitor.stable`, then the alert opened or resolved as for any change to that status).
//! The state lives in the database, so a restart or another node taking the role over goes on
//! where it stopped.

use std::time::Duration;

use tocsin_core::Status;
use tokio_util::sync::CancellationToken;

use crate::alerting::ack_link::Links;
use crate::cluster::lease::Role;
use crate::cx::Cx;
use crate::store::events::{EventKind, NewEvent};
use crate::store::monitors_flap;

/// How often the scheduling node looks for flapping monitors that settled: flapping ends at
/// most this late.
pub const TICK: Duration = Duration::from_secs(2);

/// The event kinds of a monitor that started, and stopped, flapping.
pub const FLAPPING: EventKind = EventKind::Flapping;
pub const STABLE: EventKind = EventKind::Stable;

/// Flapping monitors looked at per pass.
const BATCH: i64 = 500;

/// A `flapping` or `stable` event to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlapEvent {
    pub kind: EventKind,
    /// The monitor's status (the same before and after: flapping changes no status).
    pub status: Status,
    pub message: String,
    pub at_ms: i64,
}

impl FlapEvent {
    pub fn new_event<'a>(&'a self, monitor_id: &'a str) -> NewEvent<'a> {
        NewEvent {
            monitor_id,
            kind: self.kind,
            from_status: self.status,
            to_status: self.status,
            message: Some(&self.message),
            alert: true,
            created_at: self.at_ms,
        }
    }
}

/// The event of a monitor that starts flapping in `status` after `changes` changes within
/// `window_minutes`.
pub fn flapping_event(status: Status, changes: u32, window_minutes: u32, at_ms: i64) -> FlapEvent {
    FlapEvent {
        kind: FLAPPING,
        status,
        message: format!(
            "changed between UP and DOWN {changes} times within {window_minutes} minutes: \
             its changes page nobody until it settles"
        ),
        at_ms,
    }
}

/// The event of a monitor that stopped flapping, settled on `status`.
pub fn stable_event(status: Status, at_ms: i64) -> FlapEvent {
    FlapEvent {
        kind: STABLE,
        status,
        message: format!("stopped flapping: settled {status}"),
        at_ms,
    }
}

/// Ends the flapping of every monitor whose window is quiet at `now_ms`; returns how many.
/// Tests call it with a manual clock; [`run`] calls it on the scheduling node.
pub async fn run_due(core: &Cx, now_ms: i64) -> Result<usize, sqlx::Error> {
    let rows = monitors_flap::flapping(core.db().reader(), BATCH).await?;
    let mut ended = 0;
    for row in rows {
        let settings = row.settings();
        let (next, quiet) = tocsin_core::flap::tick(&row.state(), settings.as_ref(), now_ms);
        if !quiet {
            continue;
        }
        let mut tx = core.db().begin().await?;
        match super::transition::record_stable(&mut tx, &Links::of(core), &row, &next, now_ms)
            .await?
        {
            Some(_) => {
                tx.commit().await?;
                core.wake_deliveries();
                ended += 1;
            }
            None => tx.rollback().await?,
        }
    }
    Ok(ended)
}

/// Ends settled flapping every [`TICK`] while this node holds the scheduler role, until
/// `cancel`.
pub async fn run(core: Cx, role: Role, cancel: CancellationToken) {
    crate::alerting::on_the_scheduling_node(
        core,
        role,
        cancel,
        TICK,
        "end settled flapping",
        |core, now| async move { run_due(&core, now).await },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_events_say_what_happened() {
        let e = flapping_event(Status::Down, 5, 30, 7);
        assert_eq!((e.kind, e.status, e.at_ms), (FLAPPING, Status::Down, 7));
        assert!(
            e.message.contains("5 times within 30 minutes"),
            "{}",
            e.message
        );
        let s = stable_event(Status::Up, 9);
        assert_eq!(s.message, "stopped flapping: settled UP");
        let n = s.new_event("m");
        assert_eq!(
            (n.kind, n.from_status, n.to_status),
            (STABLE, Status::Up, Status::Up)
        );
    }
}
