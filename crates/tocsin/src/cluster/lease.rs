//! The scheduler role: which node of a cluster runs the scheduler's slots and the push
//! watcher's judgments, so that no monitor is checked twice in one slot and no push deadline
//! is judged twice, however many nodes run with the scheduler enabled.
//!
//! **Mechanism: a lease row with an expiry** (`leases`, migration 0007, [`store::leases`]),
//! taken and renewed with one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` statement that
//! succeeds only for the current holder or once the lease has expired, by the database's
//! clock. The holder renews every [`Timing::renew_every`] for [`Timing::ttl`]; the others try
//! as often and take over once it has expired. Chosen over a session-level advisory lock on a
//! dedicated connection because the lease lets the holder know, by its own monotonic clock,
//! when it must stop: a renewal *sent* at local instant `t` moves the expiry to at least
//! `t + ttl` in real time (the database reads its clock after receiving it), so a holder that
//! stops judging at `t + ttl - margin` ([`Role::is_held`]) has stopped before anyone can take
//! over, whether the database, the network or the holder itself stalled — no overlap, and no
//! two machines' clocks compared. An advisory lock is released when the server notices the
//! session is gone, which the old holder learns only later (no bound on overlap) and which a
//! half-open connection can delay for as long as TCP keepalives allow (no bound on takeover).
//! The lease also needs no connection of its own and survives a pool reconnect.
//!
//! Takeover: after `kill -9` of the holder, another node takes over within `ttl + renew_every`
//! (12 s with the defaults); a holder that shuts down cleanly releases the lease, and another
//! node takes over at its next try (within `renew_every`). On SQLite (one node), and wherever
//! no lease task runs (benchmarks calling the scheduler directly), the role is always held.
//! Acquisition and loss are logged at info; `/metrics` shows `scheduler_leader` 0/1.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::store::{self, Db};

/// The lease name of the scheduler role.
pub const SCHEDULER: &str = "scheduler";

/// The lease's clockwork.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long a renewal holds the lease (by the database's clock).
    pub ttl: Duration,
    /// How often the holder renews and the others try to take over.
    pub renew_every: Duration,
    /// How long before its lease can expire the holder stops judging: room for the two
    /// clocks' rates to differ.
    pub margin: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(2),
            margin: Duration::from_secs(1),
        }
    }
}

/// Whether this node holds a role, as the workers that need it see it. Cheap to clone.
#[derive(Clone)]
pub struct Role(Arc<RoleInner>);

struct RoleInner {
    /// False until a lease task contends for the role; until then it is simply held.
    leased: AtomicBool,
    /// While leased: held until this instant.
    until: Mutex<Option<Instant>>,
    held: watch::Sender<bool>,
}

impl Default for Role {
    fn default() -> Self {
        let (held, _) = watch::channel(true);
        Role(Arc::new(RoleInner {
            leased: AtomicBool::new(false),
            until: Mutex::new(None),
            held,
        }))
    }
}

impl std::fmt::Debug for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Role")
            .field("held", &self.is_held())
            .finish()
    }
}

impl Role {
    /// From now on the role is held only while a lease says so (see [`run`]).
    pub fn contend(&self) {
        *self.until() = None;
        self.0.leased.store(true, Ordering::SeqCst);
        self.0.held.send_replace(false);
    }

    fn until(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.0.until.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True while this node may judge: always when not leased, else until the last renewal's
    /// deadline, whether or not the lease task has noticed yet.
    pub fn is_held(&self) -> bool {
        if !self.0.leased.load(Ordering::SeqCst) {
            return true;
        }
        self.until().is_some_and(|u| Instant::now() < u)
    }

    /// Changes of [`Role::is_held`] as the lease task sees them; workers wake on them.
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.0.held.subscribe()
    }

    fn grant(&self, until: Instant) {
        *self.until() = Some(until);
        self.0
            .held
            .send_if_modified(|h| !std::mem::replace(h, true));
    }

    fn revoke(&self) {
        *self.until() = None;
        self.0
            .held
            .send_if_modified(|h| std::mem::replace(h, false));
    }
}

/// One node's claim on one lease.
#[derive(Debug, Clone)]
pub struct Lease {
    db: Db,
    name: String,
    holder: String,
    timing: Timing,
}

impl Lease {
    pub fn new(db: Db, name: &str, holder: &str, timing: Timing) -> Lease {
        Lease {
            db,
            name: name.to_string(),
            holder: holder.to_string(),
            timing,
        }
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.timing.ttl.as_millis()).unwrap_or(i64::MAX / 4)
    }

    /// Takes or renews the lease; the term when held, `None` when another node holds it.
    pub async fn try_acquire(&self) -> Result<Option<i64>, sqlx::Error> {
        store::leases::acquire(self.db.writer(), &self.name, &self.holder, self.ttl_ms()).await
    }

    /// Gives the lease up if held.
    pub async fn release(&self) -> Result<(), sqlx::Error> {
        store::leases::release(self.db.writer(), &self.name, &self.holder)
            .await
            .map(|_| ())
    }
}

/// Contends for `lease` and keeps `role` in step until `cancel`; then, if held, gives it up.
/// Call [`Role::contend`] first (before starting the workers that check the role).
pub async fn run(lease: Lease, role: Role, cancel: CancellationToken) {
    let timing = lease.timing;
    let mut term = None;
    loop {
        let sent = Instant::now();
        let held_until = *role.until();
        // Never wait on a renewal past the point where the role ends anyway.
        let give_up = held_until.unwrap_or(sent + timing.renew_every * 2);
        let attempt = tokio::select! {
            _ = cancel.cancelled() => break,
            r = tokio::time::timeout_at(give_up, lease.try_acquire()) => r,
        };
        match attempt {
            Ok(Ok(Some(t))) => {
                role.grant(sent + timing.ttl.saturating_sub(timing.margin));
                if term != Some(t) {
                    tracing::info!(lease = %lease.name, term = t, node = %lease.holder, "scheduler role acquired");
                    term = Some(t);
                }
            }
            Ok(Ok(None)) => {
                if term.take().is_some() {
                    tracing::info!(lease = %lease.name, "scheduler role lost to another node");
                }
                role.revoke();
            }
            Ok(Err(e)) => {
                tracing::warn!(lease = %lease.name, error = %e, "could not renew or take the lease")
            }
            Err(_) => tracing::warn!(lease = %lease.name, "lease renewal timed out"),
        }
        // Stop judging on time even when renewals fail.
        let until = *role.until();
        if term.is_some() && until.is_none_or(|u| Instant::now() >= u) {
            tracing::info!(lease = %lease.name, "scheduler role lost: the lease could not be renewed");
            term = None;
            role.revoke();
        }
        let next = match until {
            Some(u) if term.is_some() => (sent + timing.renew_every).min(u),
            _ => sent + timing.renew_every,
        };
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(next) => {}
        }
    }
    if term.is_some() {
        role.revoke();
        match lease.release().await {
            Ok(()) => tracing::info!(lease = %lease.name, "scheduler role released"),
            Err(e) => {
                tracing::warn!(lease = %lease.name, error = %e, "could not release the lease; it expires on its own")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_nobody_contends_for_is_held() {
        let r = Role::default();
        assert!(r.is_held());
        r.contend();
        assert!(!r.is_held());
        r.grant(Instant::now() + Duration::from_secs(60));
        assert!(r.is_held());
        r.grant(Instant::now() - Duration::from_millis(1));
        assert!(
            !r.is_held(),
            "a deadline that passed ends the role without the task"
        );
        r.revoke();
        assert!(!*r.watch().borrow());
    }
}
