//! Time as a dependency. Everything that decides by the clock (session expiry, key expiry,
//! `lastUsedAt` coalescing, schedules) reads it through [`Clock`], so tests can drive it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};

pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    fn now(&self) -> DateTime<Utc> {
        from_ms(self.now_ms())
    }
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(start_ms)))
    }

    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set_ms(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

pub type SharedClock = Arc<dyn Clock>;

/// Milliseconds since the epoch to a UTC timestamp (out-of-range values clamp to the epoch).
pub fn from_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

/// RFC 3339 with `Z`, millisecond precision: the one timestamp format of the API.
pub fn rfc3339(ms: i64) -> String {
    from_ms(ms).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
