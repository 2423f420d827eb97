//! What one connection is doing, and when it has waited too long. hyper 1's HTTP/1
//! `header_read_timeout` starts whenever the connection waits for a request head, so it is
//! also the keep-alive idle timeout: one value for two jobs (a slow head is hostile, a quiet
//! keep-alive connection is a browser), and nothing at all for HTTP/2. So the connection's
//! phases are tracked here and its watchdog ([`Activity::expired`]) closes it:
//!
//! - **head**: from accepting, or from the first byte after an idle wait, until a request's
//!   head is complete — at most the header-read timeout;
//! - **busy**: a request in flight, from its head until its response is written — no limit
//!   here (a body that stops arriving is the body timeout's, see `body.rs`);
//! - **idle**: no request in flight since the last response — at most the idle timeout.
//!
//! On HTTP/2 the client sends frames (pings, window updates) while idle, so bytes read do not
//! start a head there; an idle HTTP/2 connection closes after the idle timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    Head,
    Idle,
}

#[derive(Debug)]
pub struct Activity {
    state: Mutex<State>,
    changed: Notify,
    header_read_timeout: Duration,
    idle_timeout: Duration,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    in_flight: usize,
    http2: bool,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Head(Instant),
    Busy,
    Idle(Instant),
}

impl Activity {
    /// A connection just accepted: waiting for its first head.
    pub fn new(header_read_timeout: Duration, idle_timeout: Duration) -> Arc<Self> {
        Arc::new(Activity {
            state: Mutex::new(State {
                phase: Phase::Head(Instant::now()),
                in_flight: 0,
                http2: false,
            }),
            changed: Notify::new(),
            header_read_timeout,
            idle_timeout,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes arrived: on an idle HTTP/1 connection that starts the next head.
    pub fn on_read(&self) {
        let mut s = self.lock();
        if !s.http2 && matches!(s.phase, Phase::Idle(_)) {
            s.phase = Phase::Head(Instant::now());
            drop(s);
            // The deadline moved earlier: wake the watchdog to sleep until the new one.
            self.changed.notify_one();
        }
    }

    /// A request's head is complete; the connection is busy until the guard drops.
    pub fn begin(self: &Arc<Self>, http2: bool) -> InFlight {
        let mut s = self.lock();
        s.in_flight += 1;
        s.http2 |= http2;
        s.phase = Phase::Busy;
        InFlight(Arc::clone(self))
    }

    fn end(&self) {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            s.phase = Phase::Idle(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    fn deadline(&self) -> Option<(Instant, Expired)> {
        match self.lock().phase {
            Phase::Head(since) => Some((since + self.header_read_timeout, Expired::Head)),
            Phase::Idle(since) => Some((since + self.idle_timeout, Expired::Idle)),
            Phase::Busy => None,
        }
    }

    /// Resolves when the connection has waited past its current phase's limit.
    pub async fn expired(&self) -> Expired {
        loop {
            match self.deadline() {
                None => self.changed.notified().await,
                Some((at, _)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {
                            // The phase may have changed while asleep without a notice (a
                            // deadline that moved later): decide on the current one.
                            if let Some((at, kind)) = self.deadline() {
                                if at <= Instant::now() {
                                    return kind;
                                }
                            }
                        }
                        _ = self.changed.notified() => {}
                    }
                }
            }
        }
    }
}

/// A request in flight; dropped with its response body, once the response is written.
#[derive(Debug)]
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn head_idle_and_busy_each_have_their_limit() {
        let a = Activity::new(Duration::from_secs(1), Duration::from_secs(5));
        let started = Instant::now();
        assert_eq!(a.expired().await, Expired::Head);
        assert_eq!(started.elapsed(), Duration::from_secs(1));

        let req = a.begin(false);
        let waited = tokio::time::timeout(Duration::from_secs(100), a.expired()).await;
        assert!(waited.is_err(), "a busy connection has no deadline here");
        drop(req);
        let idle_from = Instant::now();
        assert_eq!(a.expired().await, Expired::Idle);
        assert_eq!(idle_from.elapsed(), Duration::from_secs(5));

        // The first byte of the next request starts the shorter head limit.
        let _req = a.begin(false);
        drop(_req);
        tokio::time::sleep(Duration::from_secs(3)).await;
        a.on_read();
        let head_from = Instant::now();
        assert_eq!(a.expired().await, Expired::Head);
        assert_eq!(head_from.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn http2_frames_do_not_start_a_head() {
        let a = Activity::new(Duration::from_secs(1), Duration::from_secs(5));
        drop(a.begin(true));
        let idle_from = Instant::now();
        a.on_read();
        assert_eq!(a.expired().await, Expired::Idle);
        assert_eq!(idle_from.elapsed(), Duration::from_secs(5));
    }
}
