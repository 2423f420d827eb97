//! On-demand checks in flight (`POST /monitors/{id}/check`, answered `202` before the check
//! runs): an accepted check is never silently dropped by a shutdown.
//!
//! Every accepted check runs as a task spawned through [`OnDemandChecks::spawn`], which counts
//! it. When the server stops, while the open requests drain and before the heartbeat writer
//! shuts down, [`OnDemandChecks::finish_by`] waits for them until the shutdown's one deadline
//! (`shutdown_grace_seconds` after shutdown began, the same deadline the requests get), and
//! once more after the requests are done, for a check a draining request accepted late.
//! Checks still running at the deadline are cancelled: each region that had not answered is stored as a [`cancelled_heartbeat`] carrying
//! the check's `correlationId`, with status PENDING (the one status meaning "no verdict") and
//! [`CANCELLED_MESSAGE`]. Like every on-demand result it has no state update, so it never steps
//! the state machine or moves the monitor's counters, and PENDING counts in no rollup figure
//! (see [`super::rollup`]): a cancelled check is neither downtime nor a latency.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tocsin_core::state::Status;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::heartbeats::NewHeartbeat;
use super::monitor::Monitor;

/// The message of a check cancelled by a shutdown.
pub const CANCELLED_MESSAGE: &str = "check cancelled: the server shut down before it finished";

/// After cancelling, how long the checks get to store their cancelled heartbeats (they only
/// hand one to the writer, so this is a bound against a stuck writer, not a wait).
const AFTER_CANCEL: Duration = Duration::from_secs(5);

/// The accepted on-demand checks still running. Cheap to clone.
#[derive(Clone, Default)]
pub struct OnDemandChecks(Arc<Inner>);

#[derive(Default)]
struct Inner {
    running: AtomicUsize,
    idle: Notify,
    cancel: CancellationToken,
}

/// What [`OnDemandChecks::finish`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// Checks still running when the grace ran out, and so cancelled.
    pub cancelled: usize,
    /// Checks still running after cancellation (their results are lost): 0 unless the writer
    /// is stuck.
    pub abandoned: usize,
}

/// Lowers the count however the check's task ends (including a panic).
struct Running(Arc<Inner>);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl OnDemandChecks {
    /// Runs an accepted check in the background, counted until it ends.
    pub fn spawn(&self, check: impl Future<Output = ()> + Send + 'static) {
        self.0.running.fetch_add(1, Ordering::AcqRel);
        let running = Running(self.0.clone());
        tokio::spawn(async move {
            let _running = running;
            check.await;
        });
    }

    /// Cancelled when the shutdown grace has run out: a check selects on it and stores
    /// [`cancelled_heartbeat`]s for the regions that had not answered.
    pub fn cancellation(&self) -> CancellationToken {
        self.0.cancel.clone()
    }

    /// Checks running now.
    pub fn running(&self) -> usize {
        self.0.running.load(Ordering::Acquire)
    }

    /// Resolves once no check runs.
    async fn idle(&self) {
        loop {
            let notified = self.0.idle.notified();
            tokio::pin!(notified);
            // Register before reading the count, so a check ending in between still wakes us.
            notified.as_mut().enable();
            if self.running() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Waits up to `grace` for the running checks, then cancels the rest and waits (briefly)
    /// for them to store their cancelled heartbeats. Call it while the heartbeat writer still
    /// runs.
    pub async fn finish(&self, grace: Duration) -> Finished {
        self.finish_by(tokio::time::Instant::now() + grace).await
    }

    /// [`OnDemandChecks::finish`] with the deadline given: waits until `deadline` for the
    /// running checks, then cancels the rest. Once cancelled, a check started later (by a
    /// request still draining) is stored as cancelled at once. Safe to call more than once.
    pub async fn finish_by(&self, deadline: tokio::time::Instant) -> Finished {
        if tokio::time::timeout_at(deadline, self.idle()).await.is_ok() {
            return Finished {
                cancelled: 0,
                abandoned: 0,
            };
        }
        let cancelled = self.running();
        tracing::info!(
            checks = cancelled,
            "shutdown grace over: cancelling on-demand checks"
        );
        self.0.cancel.cancel();
        let _ = tokio::time::timeout(AFTER_CANCEL, self.idle()).await;
        let abandoned = self.running();
        if abandoned > 0 {
            tracing::warn!(
                checks = abandoned,
                "on-demand checks did not store their cancellation"
            );
        }
        Finished {
            cancelled,
            abandoned,
        }
    }
}

/// The heartbeat of `m`'s on-demand check in `region`, started at `ts_ms`, that a shutdown
/// cancelled before it gave a verdict.
pub fn cancelled_heartbeat(
    m: &Monitor,
    region: &str,
    ts_ms: i64,
    correlation_id: &str,
) -> NewHeartbeat {
    let mut hb = NewHeartbeat::new(&m.id, m.seq, ts_ms, region, Status::Pending, 0.0);
    hb.message = Some(CANCELLED_MESSAGE.to_string());
    hb.correlation_id = Some(correlation_id.to_string());
    hb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checks_ending_within_the_grace_are_waited_for() {
        let checks = OnDemandChecks::default();
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        checks.spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            d.fetch_add(1, Ordering::SeqCst);
        });
        let f = checks.finish(Duration::from_secs(10)).await;
        assert_eq!(f.cancelled, 0);
        assert_eq!(done.load(Ordering::SeqCst), 1);
        assert!(!checks.cancellation().is_cancelled());
    }

    #[tokio::test]
    async fn checks_outlasting_the_grace_are_cancelled_and_waited_for_again() {
        let checks = OnDemandChecks::default();
        let stored = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let (cancel, s) = (checks.cancellation(), stored.clone());
            checks.spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(3600)) => {}
                    () = cancel.cancelled() => {
                        s.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        assert_eq!(checks.running(), 2);
        let started = tokio::time::Instant::now();
        let f = checks.finish(Duration::from_millis(200)).await;
        assert_eq!(
            f,
            Finished {
                cancelled: 2,
                abandoned: 0
            }
        );
        assert_eq!(stored.load(Ordering::SeqCst), 2);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(checks.running(), 0);
    }
}
