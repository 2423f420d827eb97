//! Keyed rate limits (sign-in per IP, push per token, public endpoints): GCRA from
//! `governor`, with idle keys evicted so memory stays bounded however many keys appear. Failed
//! sign-ins per email are `sign_in_guard`'s, held here with the rest.

use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use super::sign_in_guard::{GuardRules, SignInGuard};

/// A GCRA limiter per key `K` (an IP or email as text, a push monitor's sequence number).
#[derive(Clone)]
pub struct KeyedLimiter<K: Hash + Eq + Clone = String> {
    inner: Arc<DefaultKeyedRateLimiter<K>>,
    clock: DefaultClock,
}

impl KeyedLimiter<String> {
    /// `Ok` if allowed now; otherwise the whole seconds to wait.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        self.check_key(&key.to_string())
    }
}

impl<K: Hash + Eq + Clone> KeyedLimiter<K> {
    /// `per_minute` requests a minute, all of which may come at once.
    pub fn per_minute(per_minute: u32) -> Self {
        let n = NonZeroU32::new(per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
        KeyedLimiter {
            inner: Arc::new(DefaultKeyedRateLimiter::keyed(Quota::per_minute(n))),
            clock: DefaultClock::default(),
        }
    }

    /// `per_hour` requests an hour, all of which may come at once.
    pub fn per_hour(per_hour: u32) -> Self {
        let n = NonZeroU32::new(per_hour.max(1)).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(Duration::from_secs(3_600) / n.get())
            .unwrap_or_else(|| Quota::per_hour(n))
            .allow_burst(n);
        KeyedLimiter {
            inner: Arc::new(DefaultKeyedRateLimiter::keyed(quota)),
            clock: DefaultClock::default(),
        }
    }

    /// `Ok` if allowed now; otherwise the whole seconds to wait.
    pub fn check_key(&self, key: &K) -> Result<(), u64> {
        match self.inner.check_key(key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait: Duration = not_until.wait_time_from(self.clock.now());
                Err(wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
            }
        }
    }

    /// Drops keys whose limit has fully recovered.
    pub fn evict_idle(&self) {
        self.inner.retain_recent();
        self.inner.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

/// Dynamic client registrations (RFC 7591) allowed per client address and minute.
pub const OAUTH_REGISTER_PER_MINUTE: u32 = 20;

/// The limiters the API uses, built once.
#[derive(Clone)]
pub struct Limiters {
    pub sign_in_ip: KeyedLimiter,
    /// Failed sign-ins per email and address, and the per-email back-off.
    pub sign_in: SignInGuard,
    pub sign_up_ip: KeyedLimiter,
    /// Password attempts on private status pages per client IP (the sign-in rate).
    pub page_password_ip: KeyedLimiter,
    /// Pushes per monitor (keyed by its sequence number, so a regenerated token keeps the
    /// monitor's budget).
    pub push: KeyedLimiter<i64>,
    /// Pushes to unknown tokens per client IP: guessing costs the guesser, not the database.
    pub push_unknown_ip: KeyedLimiter,
    /// Status page subscription requests per client address.
    pub subscribe_ip: KeyedLimiter,
    /// Status page subscription requests per (lowercased) email address.
    pub subscribe_email: KeyedLimiter,
    /// OAuth client registrations per client address.
    pub oauth_register_ip: KeyedLimiter,
}

impl Limiters {
    /// `push_per_minute` is the push module's per-token rule, passed in so that credentials
    /// and rate limits do not depend on push ingestion.
    pub fn new(cfg: &crate::config::RateLimits, push_per_minute: u32) -> Self {
        Limiters {
            sign_in_ip: KeyedLimiter::per_minute(cfg.sign_in_per_ip),
            sign_in: SignInGuard::new(GuardRules {
                failures_per_pair: cfg.sign_in_failures_per_email_ip.max(1),
                free_failures: cfg.sign_in_per_email,
                backoff_max_secs: cfg.sign_in_email_backoff_max_seconds.max(1),
            }),
            sign_up_ip: KeyedLimiter::per_minute(cfg.sign_up_per_ip),
            page_password_ip: KeyedLimiter::per_minute(cfg.sign_in_per_ip),
            push: KeyedLimiter::per_minute(push_per_minute),
            push_unknown_ip: KeyedLimiter::per_minute(cfg.push_unknown_per_ip),
            subscribe_ip: KeyedLimiter::per_minute(cfg.subscribe_per_ip),
            subscribe_email: KeyedLimiter::per_hour(cfg.subscribe_per_email_hour),
            oauth_register_ip: KeyedLimiter::per_minute(OAUTH_REGISTER_PER_MINUTE),
        }
    }

    /// `now_ms` is the server clock's, for the sign-in guard; the GCRA limiters keep their own.
    pub fn evict_idle(&self, now_ms: i64) {
        self.sign_in_ip.evict_idle();
        self.sign_in.evict_idle(now_ms);
        self.sign_up_ip.evict_idle();
        self.page_password_ip.evict_idle();
        self.push.evict_idle();
        self.push_unknown_ip.evict_idle();
        self.subscribe_ip.evict_idle();
        self.subscribe_email.evict_idle();
        self.oauth_register_ip.evict_idle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_plus_one_is_refused_with_a_wait() {
        let l = KeyedLimiter::per_minute(3);
        for _ in 0..3 {
            assert!(l.check("a").is_ok());
        }
        let wait = l.check("a").err().unwrap_or(0);
        assert!((1..=60).contains(&wait), "wait {wait}");
        assert!(l.check("b").is_ok());
    }

    #[test]
    fn an_hourly_limit_waits_minutes_not_seconds() {
        let l = KeyedLimiter::per_hour(2);
        assert!(l.check("a").is_ok());
        assert!(l.check("a").is_ok());
        let wait = l.check("a").err().unwrap_or(0);
        assert!((1_000..=1_800).contains(&wait), "wait {wait}");
    }
}
