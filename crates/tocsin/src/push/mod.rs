//! Push monitors: cron jobs, backups and pipelines report in with `POST /push/{token}`, and
//! Tocsin raises the alarm when they say they failed or fall silent.
//!
//! - [`tokens`]: push token → monitor, served from memory, forgotten on regenerate and delete.
//! - [`crate::monitoring::push_record`]: what a push or a missed deadline does to the
//!   monitor. It runs inside the heartbeat writer's transaction (so it lives with the writer),
//!   and the heartbeat, the Idempotency-Key claim, `lastPushAt`, the new state and any event
//!   commit together or not at all; the `202` goes out only after that commit.
//! - [`watcher`]: finds monitors whose grace period after an expected check-in has elapsed.
//! - The HTTP surface is `http/push.rs`.
//!
//! # Rules
//! - `status=up` (the default) is a successful cycle for the state machine (recovery follows
//!   `recoveryConfirmationsRequired`); `status=down` is [`tocsin_core::push_down`]: DOWN at once,
//!   no grace, no confirmations, and the down event.
//! - `message` (or its alias `msg`; `message` wins) is stored on the heartbeat, cut to
//!   [`MAX_MESSAGE_BYTES`] at a character boundary; longer ones are truncated, never refused.
//! - Idempotency-Key: printable ASCII (0x20–0x7E), 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] characters.
//!   Retries with the same key for the same monitor within [`IDEMPOTENCY_WINDOW_MS`] (24 hours)
//!   answer 202 and record nothing; a malformed key is ignored (the push counts as keyless).
//! - A push to a **paused** monitor answers 202 and is recorded as a heartbeat with
//!   `lastPushAt`, so the job's history stays complete, but the status does not change, no
//!   event fires and no deadline runs; resuming starts the expectation afresh from that moment.
//! - Deadlines: the next check-in is expected `interval` seconds (or at the next cron run in
//!   the configured time zone) after the later of the last push, the last missed deadline and
//!   the moment monitoring started or resumed; `gracePeriod` seconds later the watcher records
//!   a DOWN heartbeat ("no push received") and steps the monitor with `push_down`. While the job
//!   stays silent, each further missed check-in records another DOWN heartbeat (so uptime
//!   figures see the outage) without a second event.
//! - Unknown, old and regenerated tokens answer 404 `PUSH_TOKEN_NOT_FOUND`. Tokens are looked up
//!   by their SHA-256, never compared as text, so the answer's timing says nothing about how
//!   close a guess was.

pub mod tokens;
pub mod watcher;

/// The contract's push rate: requests per minute per token.
pub const PUSH_RATE_PER_MINUTE: u32 = 60;
/// How long an Idempotency-Key collapses retries.
pub const IDEMPOTENCY_WINDOW_MS: i64 = crate::monitoring::push_record::IDEMPOTENCY_WINDOW_MS;
/// The longest Idempotency-Key honoured.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 200;
/// Push messages are stored up to this many bytes.
pub const MAX_MESSAGE_BYTES: usize = crate::monitoring::heartbeats::MAX_MESSAGE_BYTES;

/// Deletes Idempotency-Key claims older than the window, in slices so no statement holds the
/// write lock for long. Returns how many went.
pub async fn prune_idempotency_keys(state: &crate::cx::Cx) -> Result<u64, sqlx::Error> {
    let cutoff = state.clock().now_ms() - IDEMPOTENCY_WINDOW_MS;
    let mut total = 0;
    loop {
        let n = crate::store::push::prune_keys(state.db().writer(), cutoff, 2_000).await?;
        total += n;
        if n == 0 {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// The key to honour, or `None` when the header is absent or malformed (ignored, never
/// refused).
pub fn idempotency_key(raw: Option<&[u8]>) -> Option<String> {
    let raw = raw?;
    let ok = !raw.is_empty()
        && raw.len() <= MAX_IDEMPOTENCY_KEY_LEN
        && raw.iter().all(|b| (0x20..=0x7e).contains(b));
    ok.then(|| String::from_utf8_lossy(raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_printable_ascii_up_to_200() {
        assert_eq!(
            idempotency_key(Some(b"abc-123 x")),
            Some("abc-123 x".into())
        );
        assert_eq!(idempotency_key(Some(&[b'a'; 200])), Some("a".repeat(200)));
        assert_eq!(idempotency_key(Some(&[b'a'; 201])), None);
        assert_eq!(idempotency_key(Some(b"")), None);
        assert_eq!(idempotency_key(Some(b"tab\there")), None);
        assert_eq!(idempotency_key(Some("caf\u{e9}".as_bytes())), None);
        assert_eq!(idempotency_key(None), None);
    }
}
