//! Failed sign-ins: slowing password guessing down without letting anyone lock a person out.
//!
//! A limit on one email alone would refuse the right password from everyone once a stranger
//! has typed wrong ones (OWASP's "account lockout" denial of service). So failures are counted
//! per email *and* client address, and the per-email rule only holds back addresses that have
//! themselves failed for that email:
//!
//! - **Per email and address.** More than `failures_per_pair` failures within a minute (a
//!   fixed window opened by the first failure) refuse that address for that email until the
//!   window ends.
//! - **Per email, with exponential back-off.** Once an email has `free_failures` failures (from
//!   any address), each further attempt from an address that has failed for it waits 1 s after
//!   the email's last failure, then 2 s, 4 s ... doubling with each failure, at most
//!   `backoff_max_secs`. This is what slows an attacker with many addresses.
//! - An address with no failure for an email is never held back by either rule, so its owner
//!   signs in however much others guess. A success clears that address's failures; an email's
//!   failures are forgotten an hour after its last one.
//!
//! The per-address limit on every attempt (`sign_in_per_ip`, in `rate_limit`) still applies
//! before any of this. Times are the caller's clock in milliseconds, so a driven clock tests it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Failures older than this (since the email's, or the pair's, last failure) are forgotten.
pub const FORGET_AFTER_MS: i64 = 3_600_000;
/// The per-pair window.
const WINDOW_MS: i64 = 60_000;
/// Beyond this many remembered entries, the oldest half is dropped: memory stays bounded
/// however many addresses and emails appear, at the cost of forgetting the stalest.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
pub struct GuardRules {
    /// Failures a minute for one email from one address.
    pub failures_per_pair: u32,
    /// Failures for one email, from all addresses, before back-off sets in.
    pub free_failures: u32,
    /// The longest back-off, in seconds.
    pub backoff_max_secs: u64,
}

#[derive(Debug, Clone, Copy)]
struct PairEntry {
    window_start_ms: i64,
    in_window: u32,
    last_failure_ms: i64,
}

#[derive(Debug, Clone, Copy)]
struct EmailEntry {
    failures: u32,
    last_failure_ms: i64,
}

#[derive(Default)]
struct Failures {
    pairs: HashMap<(String, String), PairEntry>,
    emails: HashMap<String, EmailEntry>,
}

/// The sign-in failure record, shared by every request.
#[derive(Clone)]
pub struct SignInGuard {
    rules: GuardRules,
    state: Arc<Mutex<Failures>>,
}

/// Whole seconds from `now_ms` to `until_ms`, rounded up.
fn secs_until(until_ms: i64, now_ms: i64) -> u64 {
    let ms = u64::try_from(until_ms.saturating_sub(now_ms)).unwrap_or(0);
    ms.div_ceil(1000).max(1)
}

impl SignInGuard {
    pub fn new(rules: GuardRules) -> Self {
        SignInGuard {
            rules,
            state: Arc::new(Mutex::new(Failures::default())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Failures> {
        // A panic while holding the lock leaves plain counters behind: still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Ok` if `ip` may try a password for `email` now; otherwise the whole seconds to wait.
    pub fn check(&self, email: &str, ip: &str, now_ms: i64) -> Result<(), u64> {
        let s = self.lock();
        let Some(pair) = s
            .pairs
            .get(&(email.to_string(), ip.to_string()))
            .filter(|p| now_ms - p.last_failure_ms < FORGET_AFTER_MS)
        else {
            return Ok(());
        };
        let mut until = i64::MIN;
        if pair.in_window >= self.rules.failures_per_pair
            && now_ms < pair.window_start_ms + WINDOW_MS
        {
            until = pair.window_start_ms + WINDOW_MS;
        }
        if let Some(e) = s
            .emails
            .get(email)
            .filter(|e| now_ms - e.last_failure_ms < FORGET_AFTER_MS)
        {
            if let Some(wait_ms) = self.backoff_ms(e.failures) {
                until = until.max(e.last_failure_ms.saturating_add(wait_ms));
            }
        }
        if now_ms < until {
            Err(secs_until(until, now_ms))
        } else {
            Ok(())
        }
    }

    /// The back-off after an email's `failures`, if it has any.
    fn backoff_ms(&self, failures: u32) -> Option<i64> {
        let over = failures.checked_sub(self.rules.free_failures)?;
        let secs = 1u64
            .checked_shl(over)
            .unwrap_or(u64::MAX)
            .min(self.rules.backoff_max_secs);
        Some(i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX))
    }

    /// Records a wrong email or password from `ip`.
    pub fn failed(&self, email: &str, ip: &str, now_ms: i64) {
        let mut s = self.lock();
        let pair = s
            .pairs
            .entry((email.to_string(), ip.to_string()))
            .or_insert(PairEntry {
                window_start_ms: now_ms,
                in_window: 0,
                last_failure_ms: now_ms,
            });
        if now_ms >= pair.window_start_ms + WINDOW_MS {
            pair.window_start_ms = now_ms;
            pair.in_window = 0;
        }
        pair.in_window = pair.in_window.saturating_add(1);
        pair.last_failure_ms = now_ms;
        let e = s.emails.entry(email.to_string()).or_insert(EmailEntry {
            failures: 0,
            last_failure_ms: now_ms,
        });
        if now_ms - e.last_failure_ms >= FORGET_AFTER_MS {
            e.failures = 0;
        }
        e.failures = e.failures.saturating_add(1);
        e.last_failure_ms = now_ms;
        if s.pairs.len() > MAX_ENTRIES || s.emails.len() > MAX_ENTRIES {
            prune(&mut s, now_ms);
        }
    }

    /// Records a successful sign-in from `ip`: its failures for `email` are forgotten (the
    /// email's own count is not, so a success cannot reset another address's back-off).
    pub fn succeeded(&self, email: &str, ip: &str) {
        self.lock()
            .pairs
            .remove(&(email.to_string(), ip.to_string()));
    }

    /// Drops what is old enough to be forgotten.
    pub fn evict_idle(&self, now_ms: i64) {
        let mut s = self.lock();
        s.pairs
            .retain(|_, p| now_ms - p.last_failure_ms < FORGET_AFTER_MS);
        s.emails
            .retain(|_, e| now_ms - e.last_failure_ms < FORGET_AFTER_MS);
        s.pairs.shrink_to_fit();
        s.emails.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        let s = self.lock();
        s.pairs.len() + s.emails.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Forgets what has expired and, if that is not enough, the older half.
fn prune(s: &mut Failures, now_ms: i64) {
    s.pairs
        .retain(|_, p| now_ms - p.last_failure_ms < FORGET_AFTER_MS);
    s.emails
        .retain(|_, e| now_ms - e.last_failure_ms < FORGET_AFTER_MS);
    if s.pairs.len() > MAX_ENTRIES / 2 {
        let mut times: Vec<i64> = s.pairs.values().map(|p| p.last_failure_ms).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        s.pairs.retain(|_, p| p.last_failure_ms > cut);
    }
    if s.emails.len() > MAX_ENTRIES / 2 {
        let mut times: Vec<i64> = s.emails.values().map(|e| e.last_failure_ms).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        s.emails.retain(|_, e| e.last_failure_ms > cut);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn guard() -> SignInGuard {
        SignInGuard::new(GuardRules {
            failures_per_pair: 3,
            free_failures: 5,
            backoff_max_secs: 60,
        })
    }

    #[test]
    fn a_failing_pair_is_refused_until_its_window_ends_and_others_are_not() {
        let g = guard();
        for i in 0..3 {
            assert!(g.check("a@x", "1.1.1.1", i).is_ok());
            g.failed("a@x", "1.1.1.1", i);
        }
        assert_eq!(g.check("a@x", "1.1.1.1", 1_000), Err(59));
        // Another address for the same email, the same address for another email: free.
        assert!(g.check("a@x", "2.2.2.2", 1_000).is_ok());
        assert!(g.check("b@x", "1.1.1.1", 1_000).is_ok());
        assert!(g.check("a@x", "1.1.1.1", 60_000).is_ok());
    }

    #[test]
    fn an_email_backs_off_exponentially_for_addresses_that_failed_only() {
        let g = guard();
        // Five addresses fail once each: the email reaches its free failures.
        for i in 0..5 {
            g.failed("a@x", &format!("10.0.0.{i}"), 0);
        }
        // The sixth failure from 10.0.0.0 (wait 1 s), then 2 s, 4 s ... up to 60 s.
        assert_eq!(g.check("a@x", "10.0.0.0", 0), Err(1));
        let mut t = 0;
        for expect in [2, 4, 8, 16, 32, 60, 60] {
            t += 100_000;
            assert!(g.check("a@x", "10.0.0.1", t).is_ok());
            g.failed("a@x", "10.0.0.1", t);
            assert_eq!(g.check("a@x", "10.0.0.1", t), Err(expect));
            assert_eq!(g.check("a@x", "10.0.0.2", t), Err(expect));
            // Someone who never failed for this email is not held back.
            assert!(g.check("a@x", "192.168.1.1", t).is_ok());
        }
        // A success clears that address's record, not the email's.
        g.succeeded("a@x", "10.0.0.1");
        assert!(g.check("a@x", "10.0.0.1", t).is_ok());
        assert!(g.check("a@x", "10.0.0.2", t).is_err());
        // An hour after the last failure, everything is forgotten.
        assert!(g.check("a@x", "10.0.0.2", t + FORGET_AFTER_MS).is_ok());
        g.evict_idle(t + FORGET_AFTER_MS);
        assert!(g.is_empty());
    }

    #[test]
    fn memory_stays_bounded() {
        let g = guard();
        for i in 0..(MAX_ENTRIES as i64 + 10) {
            g.failed(&format!("{i}@x"), "1.1.1.1", i);
        }
        assert!(g.len() <= 2 * MAX_ENTRIES);
        // The newest are kept.
        let last = MAX_ENTRIES as i64 + 9;
        g.failed(&format!("{last}@x"), "1.1.1.1", last);
        g.failed(&format!("{last}@x"), "1.1.1.1", last);
        assert!(g.check(&format!("{last}@x"), "1.1.1.1", last).is_err());
    }
}
