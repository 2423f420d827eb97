//! PING checks: ICMP echo requests to `host` (IPv4 or IPv6), reporting packets sent/received,
//! loss and round-trip times.
//!
//! Config shape (inside the monitor's `config`; `host` is the monitor field):
//! ```json
//! {"count": 3, "intervalMs": 200, "packetSize": 56, "maxLossPercent": 0,
//!  "assertions": [{"target": "latency", "operator": "lt", "value": 100}]}
//! ```
//! * `count`: echo requests per check, 1..=10 (default 3).
//! * `intervalMs`: gap between requests, 10..=5000 (default 200). Requests are not sent
//!   one-after-reply: each goes out on schedule, so one lost packet does not delay the rest. When
//!   the schedule would not fit the monitor timeout, the interval is shortened so all requests are
//!   sent within the first half of it.
//! * `packetSize`: ICMP payload bytes, 0..=65500 (default 56).
//! * `maxLossPercent`: 0..=100 (default 0). All packets lost is always DOWN; partial loss above
//!   this threshold is DEGRADED. The default treats any loss as degraded.
//!
//! The outcome's latency is the average round-trip time of the replies (the elapsed time when no
//! reply came). Sockets are unprivileged ICMP datagram sockets where the OS allows them, raw
//! sockets otherwise (surge-ping falls back from one to the other).

use std::net::IpAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use surge_ping::{Client, Config, PingIdentifier, PingSequence, SurgeError, ICMP};

use crate::assertions::{Assertion, Observation, Target};
use crate::config::{field_names, PingConfig};
use crate::spec::{FieldError, RunOptions, SpecInput};
use crate::tcp::{apply_assertions, deadline_for, ms, parse_host, resolve, ConfigReader};
use crate::{Outcome, Verdict};

/// A validated PING check.
#[derive(Debug, Clone, PartialEq)]
pub struct PingSpec {
    pub host: String,
    pub count: u32,
    pub interval: Duration,
    pub packet_size: usize,
    pub max_loss_percent: f64,
    pub assertions: Vec<Assertion>,
}

const PING_TARGETS: &[Target] = &[Target::Latency, Target::ResolvedIp];

impl PingSpec {
    pub fn parse(input: &SpecInput<'_>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let host = parse_host(input.host, "host", &mut errors);
        let mut cfg = ConfigReader::new(input.config, "config", field_names::<PingConfig>());
        let count = cfg.integer("count", 1, 10).unwrap_or(3);
        let interval_ms = cfg.integer("intervalMs", 10, 5000).unwrap_or(200);
        let packet_size = cfg.integer("packetSize", 0, 65500).unwrap_or(56);
        let max_loss_percent = cfg.number("maxLossPercent", 0.0, 100.0).unwrap_or(0.0);
        let assertions = cfg.assertions(PING_TARGETS, "PING");
        errors.append(&mut cfg.errors);
        match host {
            Some(host) if errors.is_empty() => Ok(PingSpec {
                host,
                // Both are range-checked above, so the conversions cannot fail.
                count: u32::try_from(count).unwrap_or(3),
                interval: Duration::from_millis(interval_ms),
                packet_size: usize::try_from(packet_size).unwrap_or(56),
                max_loss_percent,
                assertions,
            }),
            _ => Err(errors),
        }
    }
}

/// Identifiers only matter for raw sockets, where every process sees every echo reply; a
/// per-process base plus a counter keeps concurrent checks apart.
fn next_identifier() -> PingIdentifier {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = (std::process::id() & 0xffff) as u16;
    PingIdentifier(base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(7919)))
}

pub async fn check(spec: &PingSpec, opts: &RunOptions) -> Outcome {
    let started = Instant::now();
    let deadline = deadline_for(opts, started);

    let ip = match resolve(&spec.host, 0, deadline, &opts.address_policy).await {
        Ok(addrs) => match addrs.first() {
            Some(a) => a.ip(),
            None => {
                return Outcome::down(started.elapsed(), format!("{} has no addresses", spec.host))
            }
        },
        Err(message) => return Outcome::down(started.elapsed(), message),
    };

    let kind = if ip.is_ipv4() { ICMP::V4 } else { ICMP::V6 };
    let client = match Client::new(&Config::builder().kind(kind).build()) {
        Ok(c) => c,
        Err(e) => {
            if let Some(resource) = crate::fault::local_io_fault(&e) {
                return Outcome::probe_fault(started.elapsed(), resource);
            }
            let mut outcome = Outcome::down(
                started.elapsed(),
                format!(
                    "cannot open an ICMP socket: {e} (needs net.ipv4.ping_group_range to include \
                     this process's group, or CAP_NET_RAW)"
                ),
            );
            outcome.resolved_ip = Some(ip);
            return outcome;
        }
    };

    let rounds = echo_all(&client, ip, spec, deadline).await;
    let sent = spec.count;
    let rtts: Vec<Duration> = rounds
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    let received = u32::try_from(rtts.len()).unwrap_or(u32::MAX);
    let loss = f64::from(sent - received) * 100.0 / f64::from(sent);

    let summary = if rtts.is_empty() {
        format!("{received}/{sent} packets received, {loss:.0}% loss")
    } else {
        let min = rtts.iter().min().copied().unwrap_or_default();
        let max = rtts.iter().max().copied().unwrap_or_default();
        let avg = average(&rtts);
        format!(
            "{received}/{sent} packets received, {loss:.0}% loss, rtt min/avg/max = {:.3}/{:.3}/{:.3} ms",
            ms(min),
            ms(avg),
            ms(max)
        )
    };

    let mut outcome = Outcome {
        packets: Some((sent, received)),
        resolved_ip: Some(ip),
        ..Outcome::default()
    };
    if received == 0 {
        outcome.verdict = Verdict::Down;
        outcome.latency = started.elapsed();
        // Say why the last request failed when it was not a plain timeout.
        let reason = rounds.iter().rev().find_map(|r| match r {
            Err(e) if !matches!(e, SurgeError::Timeout { .. }) => Some(e.to_string()),
            _ => None,
        });
        outcome.message = Some(match reason {
            Some(reason) => format!("{ip} did not answer: {summary} ({reason})"),
            None => format!("{ip} did not answer: {summary}"),
        });
        return outcome;
    }

    outcome.latency = average(&rtts);
    outcome.verdict = loss_verdict(sent, received, spec.max_loss_percent);
    if outcome.verdict != Verdict::Up {
        outcome.message = Some(format!(
            "packet loss above {}%: {summary}",
            spec.max_loss_percent
        ));
    }
    let obs = Observation {
        latency_ms: ms(outcome.latency),
        resolved_ip: Some(ip),
        ..Observation::default()
    };
    apply_assertions(&mut outcome, &spec.assertions, &obs);
    if outcome.verdict != Verdict::Up
        && !outcome.message.as_deref().unwrap_or("").contains(&summary)
    {
        outcome.message = outcome.message.map(|m| format!("{m} ({summary})"));
    }
    outcome
}

/// The loss policy: nothing back is DOWN, loss above the threshold is DEGRADED.
fn loss_verdict(sent: u32, received: u32, max_loss_percent: f64) -> Verdict {
    if received == 0 {
        return Verdict::Down;
    }
    let loss = f64::from(sent.saturating_sub(received)) * 100.0 / f64::from(sent.max(1));
    if loss > max_loss_percent {
        Verdict::Degraded
    } else {
        Verdict::Up
    }
}

/// Sends `count` echo requests on schedule and waits for each reply until `deadline`.
async fn echo_all(
    client: &Client,
    ip: IpAddr,
    spec: &PingSpec,
    deadline: Instant,
) -> Vec<Result<Duration, SurgeError>> {
    let start = Instant::now();
    // Keep every send inside the first half of the budget so the last request still has time
    // to be answered.
    let budget = deadline.saturating_duration_since(start);
    let slots = spec.count.saturating_sub(1).max(1);
    let interval = spec.interval.min(budget / 2 / slots);
    let ident = next_identifier();
    let payload = vec![0xA5u8; spec.packet_size];

    let rounds = (0..spec.count).map(|seq| {
        let payload = &payload;
        async move {
            tokio::time::sleep_until((start + interval * seq).into()).await;
            let mut pinger = client.pinger(ip, ident).await;
            pinger.timeout(deadline.saturating_duration_since(Instant::now()));
            // Sequence numbers are u16 and count is at most 10.
            let seq = PingSequence(u16::try_from(seq).unwrap_or(u16::MAX));
            pinger.ping(seq, payload).await.map(|(_, rtt)| rtt)
        }
    });
    futures::future::join_all(rounds).await
}

fn average(rtts: &[Duration]) -> Duration {
    let total: Duration = rtts.iter().sum();
    total / u32::try_from(rtts.len()).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_policy() {
        assert_eq!(loss_verdict(3, 0, 100.0), Verdict::Down);
        assert_eq!(loss_verdict(3, 3, 0.0), Verdict::Up);
        assert_eq!(loss_verdict(3, 2, 0.0), Verdict::Degraded);
        assert_eq!(loss_verdict(3, 2, 34.0), Verdict::Up);
        assert_eq!(loss_verdict(3, 2, 33.0), Verdict::Degraded);
        assert_eq!(loss_verdict(10, 1, 100.0), Verdict::Up);
    }
}
