//! Failed sign-ins: slowing password guessing down without letting anyone lock a person out.
//!
//! A limit on one email alone would refuse the right password from everyone once a stranger
//! has typed wrong ones (OWASP's "account lockout" denial of service). So failures are counted
//! per email *and* client address, and the per-email rule only holds back addresses that have
//! themselves failed for that email:
//!
//! - **Per email and address.** `failures_per_pair` failures within a minute (a fixed window
//!   opened by the first attempt) refuse that address for that email until the window ends.
//! - **Per email, with exponential back-off.** Once an email has `free_failures` failures (from
//!   any address), each further attempt from an address that has failed for it waits 1 s after
//!   the email's last attempt, then 2 s, 4 s ... doubling with each failure, at most
//!   `backoff_max_secs`. This is what slows an attacker with many addresses.
//! - An address with no failure for an email is never held back by either rule, so its owner
//!   signs in however much others guess. A success clears that address's failures; an email's
//!   failures are forgotten an hour after its last attempt.
//!
//! An attempt counts as a failure from the moment it is let through ([`SignInGuard::begin`])
//! until its password is judged ([`Attempt::failed`], [`Attempt::succeeded`]; dropping the
//! [`Attempt`] unjudged, on bad input or a server error, undoes it). Otherwise a burst of
//! concurrent guesses would all pass before the first failure was recorded.
//!
//! The per-address limit on every attempt (`sign_in_per_ip`, in `rate_limit`) still applies
//! before any of this. Times are the caller's clock in milliseconds, so a driven clock tests it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// What is older than this (since the email's, or the pair's, last attempt) is forgotten.
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
    /// Failures in the window.
    in_window: u32,
    /// Attempts let through and not yet judged.
    pending: u32,
    last_failure_ms: Option<i64>,
    last_ms: i64,
}

impl PairEntry {
    /// Whether this address is held to the rules for this email: it failed, or is trying now.
    fn suspect(&self, now_ms: i64) -> bool {
        self.pending > 0
            || self
                .last_failure_ms
                .is_some_and(|t| now_ms - t < FORGET_AFTER_MS)
    }

    fn live(&self, now_ms: i64) -> bool {
        self.pending > 0 || now_ms - self.last_ms < FORGET_AFTER_MS
    }

    fn roll_window(&mut self, now_ms: i64) {
        if now_ms >= self.window_start_ms + WINDOW_MS {
            self.window_start_ms = now_ms;
            self.in_window = 0;
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct EmailEntry {
    failures: u32,
    pending: u32,
    last_ms: i64,
}

impl EmailEntry {
    fn live(&self, now_ms: i64) -> bool {
        self.pending > 0 || now_ms - self.last_ms < FORGET_AFTER_MS
    }
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

/// One sign-in attempt let through, counted as a failure until judged.
#[must_use = "an attempt dropped unjudged is undone"]
pub struct Attempt {
    guard: SignInGuard,
    email: String,
    ip: String,
    judged: bool,
}

/// Whole seconds from `now_ms` to `until_ms`, rounded up, at least 1.
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

    /// Lets `ip` try a password for `email` now, or answers the whole seconds to wait. The
    /// attempt counts as a failure until judged.
    pub fn begin(&self, email: &str, ip: &str, now_ms: i64) -> Result<Attempt, u64> {
        let key = (email.to_string(), ip.to_string());
        let mut s = self.lock();
        if let Some(pair) = s.pairs.get(&key).filter(|p| p.suspect(now_ms)) {
            let mut until = i64::MIN;
            let window_live = now_ms < pair.window_start_ms + WINDOW_MS;
            let in_window = if window_live { pair.in_window } else { 0 };
            if in_window + pair.pending >= self.rules.failures_per_pair {
                until = if window_live {
                    pair.window_start_ms + WINDOW_MS
                } else {
                    now_ms + 1
                };
            }
            if let Some(e) = s.emails.get(email).filter(|e| e.live(now_ms)) {
                if let Some(wait_ms) = self.backoff_ms(e.failures + e.pending) {
                    until = until.max(e.last_ms.saturating_add(wait_ms));
                }
            }
            if now_ms < until {
                return Err(secs_until(until, now_ms));
            }
        }
        let pair = s.pairs.entry(key).or_insert(PairEntry {
            window_start_ms: now_ms,
            in_window: 0,
            pending: 0,
            last_failure_ms: None,
            last_ms: now_ms,
        });
        pair.roll_window(now_ms);
        // `last_ms` moves with failures only: an attempt undone leaves no trace to keep.
        pair.pending += 1;
        let e = s.emails.entry(email.to_string()).or_insert(EmailEntry {
            failures: 0,
            pending: 0,
            last_ms: now_ms,
        });
        if !e.live(now_ms) {
            e.failures = 0;
        }
        e.pending += 1;
        e.last_ms = now_ms;
        if s.pairs.len() > MAX_ENTRIES || s.emails.len() > MAX_ENTRIES {
            prune(&mut s, now_ms);
        }
        Ok(Attempt {
            guard: self.clone(),
            email: email.to_string(),
            ip: ip.to_string(),
            judged: false,
        })
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

    /// Drops what is old enough to be forgotten.
    pub fn evict_idle(&self, now_ms: i64) {
        let mut s = self.lock();
        s.pairs.retain(|_, p| p.live(now_ms));
        s.emails.retain(|_, e| e.live(now_ms));
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

impl Attempt {
    /// The email or password was wrong.
    pub fn failed(mut self, now_ms: i64) {
        self.judged = true;
        let mut s = self.guard.lock();
        let key = (self.email.clone(), self.ip.clone());
        // The entry may have been pruned (or cleared by a concurrent success) meanwhile.
        let pair = s.pairs.entry(key).or_insert(PairEntry {
            window_start_ms: now_ms,
            in_window: 0,
            pending: 1,
            last_failure_ms: None,
            last_ms: now_ms,
        });
        pair.pending = pair.pending.saturating_sub(1);
        pair.roll_window(now_ms);
        pair.in_window = pair.in_window.saturating_add(1);
        pair.last_failure_ms = Some(now_ms);
        pair.last_ms = now_ms;
        let e = s.emails.entry(self.email.clone()).or_insert(EmailEntry {
            failures: 0,
            pending: 1,
            last_ms: now_ms,
        });
        e.pending = e.pending.saturating_sub(1);
        e.failures = e.failures.saturating_add(1);
        e.last_ms = now_ms;
    }

    /// The password was right: this address's failures for the email are forgotten (the
    /// email's own count is not, so a success cannot reset another address's back-off).
    pub fn succeeded(mut self) {
        self.judged = true;
        let mut s = self.guard.lock();
        s.pairs.remove(&(self.email.clone(), self.ip.clone()));
        self.undo_email(&mut s);
    }

    fn undo_email(&self, s: &mut Failures) {
        if let Some(e) = s.emails.get_mut(&self.email) {
            e.pending = e.pending.saturating_sub(1);
            if e.failures == 0 && e.pending == 0 {
                s.emails.remove(&self.email);
            }
        }
    }
}

impl Drop for Attempt {
    /// Unjudged (bad input, a server error, the client went away): as if never tried.
    fn drop(&mut self) {
        if self.judged {
            return;
        }
        let mut s = self.guard.lock();
        let key = (self.email.clone(), self.ip.clone());
        if let Some(p) = s.pairs.get_mut(&key) {
            p.pending = p.pending.saturating_sub(1);
            if p.pending == 0 && p.last_failure_ms.is_none() {
                s.pairs.remove(&key);
            }
        }
        self.undo_email(&mut s);
    }
}

/// Forgets what has expired and, if that is not enough, the older half.
fn prune(s: &mut Failures, now_ms: i64) {
    s.pairs.retain(|_, p| p.live(now_ms));
    s.emails.retain(|_, e| e.live(now_ms));
    if s.pairs.len() > MAX_ENTRIES / 2 {
        let mut times: Vec<i64> = s.pairs.values().map(|p| p.last_ms).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        s.pairs.retain(|_, p| p.last_ms > cut);
    }
    if s.emails.len() > MAX_ENTRIES / 2 {
        let mut times: Vec<i64> = s.emails.values().map(|e| e.last_ms).collect();
        let mid = times.len() / 2;
        let (_, cut, _) = times.select_nth_unstable(mid);
        let cut = *cut;
        s.emails.retain(|_, e| e.last_ms > cut);
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

    fn fail(g: &SignInGuard, email: &str, ip: &str, now: i64) {
        g.begin(email, ip, now).unwrap().failed(now);
    }

    #[test]
    fn a_failing_pair_is_refused_until_its_window_ends_and_others_are_not() {
        let g = guard();
        for i in 0..3 {
            fail(&g, "a@x", "1.1.1.1", i);
        }
        assert_eq!(g.begin("a@x", "1.1.1.1", 1_000).err(), Some(59));
        // Another address for the same email, the same address for another email: free.
        assert!(g.begin("a@x", "2.2.2.2", 1_000).is_ok());
        assert!(g.begin("b@x", "1.1.1.1", 1_000).is_ok());
        assert!(g.begin("a@x", "1.1.1.1", 60_000).is_ok());
    }

    #[test]
    fn an_email_backs_off_exponentially_for_addresses_that_failed_only() {
        let g = guard();
        // Five addresses fail once each: the email reaches its free failures.
        for i in 0..5 {
            fail(&g, "a@x", &format!("10.0.0.{i}"), 0);
        }
        // The sixth failure from 10.0.0.0 (wait 1 s), then 2 s, 4 s ... up to 60 s.
        assert_eq!(g.begin("a@x", "10.0.0.0", 0).err(), Some(1));
        let mut t = 0;
        for expect in [2, 4, 8, 16, 32, 60, 60] {
            t += 100_000;
            fail(&g, "a@x", "10.0.0.1", t);
            assert_eq!(g.begin("a@x", "10.0.0.1", t).err(), Some(expect));
            assert_eq!(g.begin("a@x", "10.0.0.2", t).err(), Some(expect));
            // Someone who never failed for this email is not held back.
            let owner = g.begin("a@x", "192.168.1.1", t).unwrap();
            owner.succeeded();
        }
        // A success clears that address's record, not the email's.
        g.begin("a@x", "10.0.0.1", t + 60_000).unwrap().succeeded();
        assert!(g.begin("a@x", "10.0.0.1", t + 60_000).is_ok());
        assert!(g.begin("a@x", "10.0.0.2", t + 60_000).is_err());
        // An hour after the last attempt, everything is forgotten.
        let later = t + 60_000 + FORGET_AFTER_MS;
        assert!(g.begin("a@x", "10.0.0.2", later).is_ok());
        g.evict_idle(later);
        assert!(g.is_empty());
    }

    #[test]
    fn concurrent_attempts_count_before_they_are_judged() {
        let g = guard();
        // Three guesses in flight at once from one address: a fourth waits for the window.
        let flying: Vec<Attempt> = (0..3)
            .map(|_| g.begin("a@x", "1.1.1.1", 0).unwrap())
            .collect();
        assert_eq!(g.begin("a@x", "1.1.1.1", 0).err(), Some(60));
        // Unjudged (say the input was invalid), they are undone.
        drop(flying);
        assert!(g.is_empty());
        // With the email in back-off, a second concurrent guess from a fresh address waits.
        for i in 0..5 {
            fail(&g, "a@x", &format!("10.0.0.{i}"), 0);
        }
        let first = g.begin("a@x", "9.9.9.9", 10_000).unwrap();
        assert!(g.begin("a@x", "9.9.9.9", 10_000).is_err());
        first.failed(10_000);
    }

    #[test]
    fn memory_stays_bounded() {
        let g = guard();
        for i in 0..(MAX_ENTRIES as i64 + 10) {
            fail(&g, &format!("{i}@x"), "1.1.1.1", i);
        }
        assert!(g.len() <= 2 * MAX_ENTRIES);
        // The newest are kept.
        let last = MAX_ENTRIES as i64 + 9;
        fail(&g, &format!("{last}@x"), "1.1.1.1", last);
        fail(&g, &format!("{last}@x"), "1.1.1.1", last);
        assert!(g.begin(&format!("{last}@x"), "1.1.1.1", last).is_err());
    }
}
