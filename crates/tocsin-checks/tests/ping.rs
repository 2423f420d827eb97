//! PING checks: ICMP echo to the loopback addresses only, plus config validation.

#![allow(clippy::unwrap_used)] // tests fail loudly on setup errors

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};
use tocsin_checks::ping::{self, PingSpec};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{CheckSpec, MonitorKind, RunOptions, Verdict};

fn parse(host: Option<&str>, config: Value) -> Result<PingSpec, Vec<(String, String)>> {
    let config = config.as_object().cloned().unwrap_or_default();
    let input = SpecInput {
        url: None,
        host,
        port: None,
        config: &config,
    };
    PingSpec::parse(&input).map_err(|errs| errs.into_iter().map(|e| (e.path, e.message)).collect())
}

fn opts(timeout_ms: u64) -> RunOptions {
    RunOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..RunOptions::default()
    }
}

fn ipv6_loopback_usable() -> bool {
    std::net::UdpSocket::bind("[::1]:0").is_ok()
}

#[test]
fn defaults() {
    let s = parse(Some("127.0.0.1"), json!({})).unwrap();
    assert_eq!(s.count, 3);
    assert_eq!(s.interval, Duration::from_millis(200));
    assert_eq!(s.packet_size, 56);
    assert_eq!(s.max_loss_percent, 0.0);
    assert!(s.assertions.is_empty());
}

#[test]
fn full_config() {
    let s = parse(
        Some("example.com"),
        json!({"count": 10, "intervalMs": 50, "packetSize": 1000, "maxLossPercent": 20.5,
               "assertions": [{"target": "latency", "operator": "lt", "value": 100}]}),
    )
    .unwrap();
    assert_eq!(
        (s.count, s.interval, s.packet_size),
        (10, Duration::from_millis(50), 1000)
    );
    assert_eq!(s.max_loss_percent, 20.5);
    assert_eq!(s.assertions.len(), 1);
    assert!(matches!(
        CheckSpec::parse(
            MonitorKind::Ping,
            &SpecInput {
                url: None,
                host: Some("::1"),
                port: None,
                config: &serde_json::Map::new()
            }
        ),
        Ok(CheckSpec::Ping(_))
    ));
}

#[test]
fn errors_have_paths() {
    let errs = parse(None, json!({})).unwrap_err();
    assert_eq!(
        errs.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["host"]
    );

    let errs = parse(
        Some("127.0.0.1"),
        json!({"count": 11, "intervalMs": 1, "packetSize": -1, "maxLossPercent": 101, "ttl": 3,
               "assertions": [{"target": "reply", "operator": "contains", "value": "x"}]}),
    )
    .unwrap_err();
    let mut paths: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "config.assertions.0.target",
            "config.count",
            "config.intervalMs",
            "config.maxLossPercent",
            "config.packetSize",
            "config.ttl"
        ]
    );
    let count = errs.iter().find(|e| e.0 == "config.count").unwrap();
    assert!(count.1.contains("between 1 and 10"), "{}", count.1);

    let errs = parse(Some("127.0.0.1"), json!({"count": "3"})).unwrap_err();
    assert_eq!(errs[0].0, "config.count");
}

#[tokio::test]
async fn loopback_answers() {
    let s = parse(Some("127.0.0.1"), json!({"intervalMs": 20})).unwrap();
    let out = ping::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.packets, Some((3, 3)));
    assert_eq!(
        out.resolved_ip,
        Some("127.0.0.1".parse::<IpAddr>().unwrap())
    );
    assert!(out.latency > Duration::ZERO && out.latency < Duration::from_millis(500));
    assert!(out.message.is_none());
}

#[tokio::test]
async fn count_and_payload_size_are_honoured() {
    let s = parse(
        Some("localhost"),
        json!({"count": 5, "intervalMs": 10, "packetSize": 1400}),
    )
    .unwrap();
    let out = ping::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.packets, Some((5, 5)));
    assert!(out.resolved_ip.unwrap().is_loopback());
}

#[tokio::test]
async fn ipv6_loopback_answers() {
    if !ipv6_loopback_usable() {
        eprintln!("skipping: no IPv6 loopback on this machine");
        return;
    }
    let s = parse(Some("::1"), json!({"count": 2, "intervalMs": 10})).unwrap();
    let out = ping::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.packets, Some((2, 2)));
}

#[tokio::test]
async fn latency_assertions_apply() {
    let s = parse(
        Some("127.0.0.1"),
        json!({"count": 1, "assertions": [{"target": "latency", "operator": "lt", "value": 0, "severity": "warn"}]}),
    )
    .unwrap();
    let out = ping::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Degraded);
    assert_eq!(out.assertion_results.len(), 1);
    let msg = out.message.unwrap();
    assert!(msg.contains("1/1 packets received"), "{msg}");
}

/// All packets lost, without sending anything off the machine: 127.255.255.255 is the loopback
/// broadcast address. The kernel refuses to send to it without SO_BROADCAST, and ignores
/// broadcast echo requests anyway, so no reply can come back.
#[tokio::test]
async fn all_lost_is_down() {
    let s = parse(
        Some("127.255.255.255"),
        json!({"count": 2, "intervalMs": 10}),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = ping::check(&s, &opts(500)).await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "finishes within the timeout"
    );
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(out.packets, Some((2, 0)));
    let msg = out.message.unwrap();
    assert!(
        msg.contains("did not answer") && msg.contains("0/2 packets received, 100% loss"),
        "{msg}"
    );
}

#[tokio::test]
async fn unresolvable_host_is_down() {
    let s = parse(Some("does-not-exist.invalid"), json!({})).unwrap();
    let out = ping::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert!(out.message.unwrap().contains("does-not-exist.invalid"));
    assert_eq!(out.packets, None);
}
