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
//!
//! The watchdog costs a request nothing it can avoid: the phase, the number of requests in
//! flight and the phase's start live in one atomic word (no lock), and the watchdog is woken
//! only when a deadline moves earlier than the one it sleeps until (an idle connection's
//! next head). A request ending wakes nobody: while requests are in flight the watchdog
//! re-reads the phase at least every `min(header-read, idle)` timeout, which is never later
//! than the idle deadline that the end starts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
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
    /// [`Word`] packed: phase, requests in flight, and when the phase began.
    word: AtomicU64,
    http2: AtomicBool,
    /// When the watchdog will next look (ms since `epoch`), so that a deadline moving earlier
    /// than that wakes it.
    watching_until: AtomicU64,
    changed: Notify,
    epoch: Instant,
    header_read_timeout: Duration,
    idle_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Busy,
    Idle,
}

/// The connection's state in one `u64`: 2 bits of phase, 24 bits of requests in flight (far
/// above any HTTP/2 stream limit), 38 bits of milliseconds since the connection was accepted
/// (8.7 years).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word {
    phase: Phase,
    in_flight: u64,
    since_ms: u64,
}

const SINCE_BITS: u32 = 38;
const FLIGHT_BITS: u32 = 24;
const SINCE_MASK: u64 = (1 << SINCE_BITS) - 1;
const FLIGHT_MASK: u64 = (1 << FLIGHT_BITS) - 1;

impl Word {
    fn pack(self) -> u64 {
        let phase = match self.phase {
            Phase::Head => 0,
            Phase::Busy => 1,
            Phase::Idle => 2,
        };
        (phase << (SINCE_BITS + FLIGHT_BITS))
            | ((self.in_flight & FLIGHT_MASK) << SINCE_BITS)
            | (self.since_ms & SINCE_MASK)
    }

    fn unpack(bits: u64) -> Word {
        let phase = match bits >> (SINCE_BITS + FLIGHT_BITS) {
            0 => Phase::Head,
            1 => Phase::Busy,
            _ => Phase::Idle,
        };
        Word {
            phase,
            in_flight: (bits >> SINCE_BITS) & FLIGHT_MASK,
            since_ms: bits & SINCE_MASK,
        }
    }
}

impl Activity {
    /// A connection just accepted: waiting for its first head.
    pub fn new(header_read_timeout: Duration, idle_timeout: Duration) -> Arc<Self> {
        let first = Word {
            phase: Phase::Head,
            in_flight: 0,
            since_ms: 0,
        };
        Arc::new(Activity {
            word: AtomicU64::new(first.pack()),
            http2: AtomicBool::new(false),
            watching_until: AtomicU64::new(u64::MAX),
            changed: Notify::new(),
            epoch: Instant::now(),
            header_read_timeout,
            idle_timeout,
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX) & SINCE_MASK
    }

    fn at(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    /// Applies `f` to the word atomically; returns the word it replaced and the new one.
    fn update(&self, f: impl Fn(Word) -> Option<Word>) -> Option<(Word, Word)> {
        let mut current = self.word.load(SeqCst);
        loop {
            let old = Word::unpack(current);
            let new = f(old)?;
            match self
                .word
                .compare_exchange_weak(current, new.pack(), SeqCst, SeqCst)
            {
                Ok(_) => return Some((old, new)),
                Err(seen) => current = seen,
            }
        }
    }

    /// Bytes arrived: on an idle HTTP/1 connection that starts the next head.
    pub fn on_read(&self) {
        if self.http2.load(SeqCst) {
            return;
        }
        // Cheap check first: reads in the middle of a request change nothing.
        if Word::unpack(self.word.load(SeqCst)).phase != Phase::Idle {
            return;
        }
        let now = self.now_ms();
        let changed = self.update(|w| {
            (w.phase == Phase::Idle).then_some(Word {
                phase: Phase::Head,
                since_ms: now,
                ..w
            })
        });
        if changed.is_some() {
            let deadline = now.saturating_add(millis(self.header_read_timeout));
            // Wake the watchdog only if it sleeps past the new, earlier deadline.
            if self.watching_until.load(SeqCst) > deadline {
                self.changed.notify_one();
            }
        }
    }

    /// A request's head is complete; the connection is busy until the guard drops.
    pub fn begin(self: &Arc<Self>, http2: bool) -> InFlight {
        if http2 {
            self.http2.store(true, SeqCst);
        }
        self.update(|w| {
            Some(Word {
                phase: Phase::Busy,
                in_flight: w.in_flight + 1,
                since_ms: w.since_ms,
            })
        });
        InFlight(Arc::clone(self))
    }

    fn end(&self) {
        let now = std::cell::OnceCell::new();
        self.update(|w| {
            let in_flight = w.in_flight.saturating_sub(1);
            Some(if in_flight == 0 {
                Word {
                    phase: Phase::Idle,
                    in_flight,
                    since_ms: *now.get_or_init(|| self.now_ms()),
                }
            } else {
                Word { in_flight, ..w }
            })
        });
    }

    /// When to look next (ms since the epoch), and what expires then if nothing changes.
    fn next_look(&self, w: Word) -> (u64, Option<Expired>) {
        match w.phase {
            Phase::Head => (
                w.since_ms.saturating_add(millis(self.header_read_timeout)),
                Some(Expired::Head),
            ),
            Phase::Idle => (
                w.since_ms.saturating_add(millis(self.idle_timeout)),
                Some(Expired::Idle),
            ),
            // No limit while busy; look again no later than any deadline the end can start.
            Phase::Busy => (
                self.now_ms()
                    .saturating_add(millis(self.header_read_timeout.min(self.idle_timeout))),
                None,
            ),
        }
    }

    /// Resolves when the connection has waited past its current phase's limit.
    pub async fn expired(&self) -> Expired {
        loop {
            let seen = self.word.load(SeqCst);
            let (look_at, expires) = self.next_look(Word::unpack(seen));
            self.watching_until.store(look_at, SeqCst);
            // A change between reading the word and publishing `watching_until` may have
            // skipped its wake-up: read again before sleeping.
            if self.word.load(SeqCst) != seen {
                continue;
            }
            if let Some(kind) = expires {
                if look_at <= self.now_ms() {
                    return kind;
                }
            }
            tokio::select! {
                _ = tokio::time::sleep_until(self.at(look_at)) => {}
                _ = self.changed.notified() => {}
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

    #[test]
    fn the_word_round_trips_at_its_limits() {
        for phase in [Phase::Head, Phase::Busy, Phase::Idle] {
            for in_flight in [0, 1, FLIGHT_MASK] {
                for since_ms in [0, 1, SINCE_MASK] {
                    let w = Word {
                        phase,
                        in_flight,
                        since_ms,
                    };
                    assert_eq!(Word::unpack(w.pack()), w);
                }
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_watchdog_running_through_a_long_request_expires_idle_on_time() {
        let a = Activity::new(Duration::from_secs(1), Duration::from_secs(5));
        let req = a.begin(false);
        let watchdog = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.expired().await })
        };
        tokio::time::sleep(Duration::from_millis(30_500)).await;
        assert!(!watchdog.is_finished(), "busy has no limit");
        drop(req);
        let idle_from = Instant::now();
        assert_eq!(watchdog.await.ok(), Some(Expired::Idle));
        assert_eq!(idle_from.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_after_a_long_idle_wait_wakes_the_watchdog_early() {
        let a = Activity::new(Duration::from_secs(1), Duration::from_secs(60));
        drop(a.begin(false));
        let watchdog = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.expired().await })
        };
        tokio::time::sleep(Duration::from_secs(10)).await;
        a.on_read();
        let head_from = Instant::now();
        assert_eq!(watchdog.await.ok(), Some(Expired::Head));
        assert_eq!(head_from.elapsed(), Duration::from_secs(1));
    }

    #[test]
    fn concurrent_requests_leave_the_connection_idle_only_when_all_ended() {
        let a = Activity::new(Duration::from_secs(1), Duration::from_secs(5));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        drop(a.begin(true));
                    }
                })
            })
            .collect();
        let held = a.begin(true);
        for t in threads {
            assert!(t.join().is_ok());
        }
        let w = Word::unpack(a.word.load(SeqCst));
        assert_eq!((w.phase, w.in_flight), (Phase::Busy, 1));
        drop(held);
        let w = Word::unpack(a.word.load(SeqCst));
        assert_eq!((w.phase, w.in_flight), (Phase::Idle, 0));
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
