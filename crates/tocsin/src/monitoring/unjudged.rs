//! Scheduled checks that finish after a graceful shutdown began. The server stops judging at
//! the signal ([`super::runner::Runner::judging`]): such a cycle is not decided and steps no state
//! machine, so no alert opens while the server goes away (an outage it saw is judged again by
//! the next check, after the restart). Each region's result is still stored, as a `PENDING`
//! heartbeat (the status meaning "no verdict", counted in no uptime or latency figure) whose
//! message says why and what the check saw, so the history shows the check was made.

use tocsin_core::state::Status;

use super::cycle::{heartbeat_of, heartbeat_status, CycleReport, RegionResult};
use super::heartbeats::MAX_MESSAGE_BYTES;
use super::monitor::Monitor;
use super::runner::Runner;

/// What an unjudged heartbeat's message starts with.
pub const UNJUDGED_MESSAGE: &str =
    "not judged: the server was shutting down when this check finished";

/// Stores every reporting region's result of `m`'s cycle that ran at `ran_at_ms` as an
/// unjudged `PENDING` heartbeat; changes nothing else.
pub async fn store(
    state: &Runner,
    m: &Monitor,
    ran_at_ms: i64,
    results: &[RegionResult],
) -> CycleReport {
    let submissions: Vec<_> = results
        .iter()
        .filter_map(|r| {
            let o = r.outcome.as_ref()?;
            let mut hb = heartbeat_of(m, &r.region, ran_at_ms, o, None);
            hb.status = Status::Pending;
            hb.counted_as = None;
            hb.message = Some(message(heartbeat_status(o.verdict), o.message.as_deref()));
            Some(state.heartbeats().submit(hb))
        })
        .collect();
    let heartbeats = submissions.len();
    for outcome in futures::future::join_all(submissions).await {
        if let Err(e) = outcome {
            tracing::warn!(monitor = %m.id, error = %e, "unjudged heartbeat not stored");
        }
    }
    tracing::debug!(monitor = %m.id, heartbeats, "check finished during shutdown: stored unjudged");
    CycleReport {
        heartbeats,
        ..CycleReport::default()
    }
}

/// The unjudged message: why, then what the check itself saw.
fn message(saw: Status, detail: Option<&str>) -> String {
    let mut text = format!("{UNJUDGED_MESSAGE} (it saw {}", saw.as_str());
    if let Some(d) = detail.filter(|d| !d.is_empty()) {
        text.push_str(": ");
        text.push_str(d);
    }
    text.push(')');
    if text.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_why_and_what_was_seen() {
        assert_eq!(
            message(Status::Down, Some("HTTP 500")),
            format!("{UNJUDGED_MESSAGE} (it saw DOWN: HTTP 500)")
        );
        assert_eq!(
            message(Status::Up, None),
            format!("{UNJUDGED_MESSAGE} (it saw UP)")
        );
        let long = "é".repeat(MAX_MESSAGE_BYTES);
        let m = message(Status::Down, Some(&long));
        assert!(m.len() <= MAX_MESSAGE_BYTES);
    }
}
