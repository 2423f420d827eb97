//! TCP checks against real servers on 127.0.0.1: plain echo, silent and resetting servers, a
//! refused port, and a TLS echo server with a self-signed certificate.

#![allow(clippy::unwrap_used)] // tests fail loudly on setup errors

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::tcp::{self, TcpSpec};
use tocsin_checks::{CheckSpec, MonitorKind, RunOptions, Verdict};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn parse(
    host: Option<&str>,
    port: Option<u16>,
    config: Value,
) -> Result<TcpSpec, Vec<(String, String)>> {
    let config = config.as_object().cloned().unwrap_or_default();
    let input = SpecInput {
        url: None,
        host,
        port,
        config: &config,
    };
    TcpSpec::parse(&input).map_err(|errs| errs.into_iter().map(|e| (e.path, e.message)).collect())
}

fn spec(port: u16, config: Value) -> TcpSpec {
    parse(Some("127.0.0.1"), Some(port), config).unwrap()
}

fn opts(timeout_ms: u64) -> RunOptions {
    RunOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..RunOptions::default()
    }
}

fn paths(errs: &[(String, String)]) -> Vec<&str> {
    errs.iter().map(|(p, _)| p.as_str()).collect()
}

/// Echoes every chunk back, prefixed so tests can tell a reply from their own payload.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let mut reply = b"echo:".to_vec();
                            reply.extend_from_slice(&buf[..n]);
                            if sock.write_all(&reply).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Accepts connections and never writes.
async fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            held.push(sock);
        }
    });
    addr
}

/// Writes a banner on connect and keeps the connection open.
async fn banner_server(banner: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            sock.write_all(banner.as_bytes()).await.unwrap();
            held.push(sock);
        }
    });
    addr
}

/// Reads the request, then resets the connection (SO_LINGER 0).
async fn resetting_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 64];
            let _ = sock.read(&mut buf).await;
            // Linger 0 makes the close an RST; with a zero timeout the drop does not block.
            #[allow(deprecated)]
            sock.set_linger(Some(Duration::ZERO)).unwrap();
            drop(sock);
        }
    });
    addr
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    port
}

fn self_signed() -> (
    rustls::pki_types::CertificateDer<'static>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    (cert.der().clone(), key)
}

/// A TLS echo server with a self-signed certificate for `localhost`.
async fn tls_echo_server() -> SocketAddr {
    let (cert, key) = self_signed();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(sock).await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                loop {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            let mut reply = b"tls-echo:".to_vec();
                            reply.extend_from_slice(&buf[..n]);
                            if tls.write_all(&reply).await.is_err() {
                                return;
                            }
                            let _ = tls.flush().await;
                        }
                    }
                }
            });
        }
    });
    addr
}

// ----------------------------------------------------------------------------------------------
// Parsing
// ----------------------------------------------------------------------------------------------

#[test]
fn parses_full_config() {
    let s = parse(
        Some("example.com"),
        Some(443),
        json!({
            "tls": {"enabled": true, "verify": false, "serverName": "api.example.com"},
            "send": "PING\r\n",
            "expect": "PONG",
            "assertions": [{"target": "latency", "operator": "lt", "value": 500}]
        }),
    )
    .unwrap();
    assert_eq!(s.host, "example.com");
    assert_eq!(s.port, 443);
    let tls = s.tls.unwrap();
    assert!(!tls.verify);
    assert_eq!(tls.server_name.as_deref(), Some("api.example.com"));
    assert_eq!(s.send.as_deref(), Some("PING\r\n"));
    assert_eq!(s.expect.as_deref(), Some("PONG"));
    assert_eq!(s.assertions.len(), 1);
}

#[test]
fn tls_defaults_and_disabled() {
    let s = parse(Some("[::1]"), Some(1), json!({"tls": {}})).unwrap();
    assert_eq!(s.host, "::1");
    let tls = s.tls.unwrap();
    assert!(tls.verify, "verify defaults to true");
    assert_eq!(tls.server_name, None);
    let s = parse(
        Some("localhost"),
        Some(1),
        json!({"tls": {"enabled": false}}),
    )
    .unwrap();
    assert!(s.tls.is_none());
    let s = parse(Some("localhost"), Some(1), json!({})).unwrap();
    assert!(s.tls.is_none() && s.send.is_none() && s.expect.is_none());
}

#[test]
fn reports_missing_host_and_port() {
    let errs = parse(None, None, json!({})).unwrap_err();
    assert_eq!(paths(&errs), ["host", "port"]);
    let errs = parse(Some("bad host!"), Some(0), json!({})).unwrap_err();
    assert_eq!(paths(&errs), ["host", "port"]);
    let errs = parse(Some(""), Some(80), json!({})).unwrap_err();
    assert_eq!(paths(&errs), ["host"]);
}

#[test]
fn reports_config_errors_with_paths() {
    let errs = parse(
        Some("localhost"),
        Some(80),
        json!({
            "bogus": 1,
            "tls": {"verify": "yes", "serverName": "not a name", "extra": true},
            "send": 5,
            "expect": "",
            "assertions": [
                {"target": "statusCode", "operator": "eq", "value": 200},
                {"target": "latency", "operator": "lt", "value": "fast"}
            ]
        }),
    )
    .unwrap_err();
    let p = paths(&errs);
    for expected in [
        "config.bogus",
        "config.tls.extra",
        "config.tls.verify",
        "config.tls.serverName",
        "config.send",
        "config.expect",
        "config.assertions.1.value",
    ] {
        assert!(p.contains(&expected), "missing {expected} in {p:?}");
    }
    // The second assertion is invalid, so the list as a whole did not parse and the target check
    // does not run; a list that parses reports a wrong target instead.
    let errs = parse(
        Some("localhost"),
        Some(80),
        json!({"assertions": [{"target": "latency", "operator": "lt", "value": 5},
                               {"target": "statusCode", "operator": "eq", "value": 200}]}),
    )
    .unwrap_err();
    assert_eq!(paths(&errs), ["config.assertions.1.target"]);
    assert!(errs[0].1.contains("statusCode"), "{}", errs[0].1);

    let errs = parse(Some("localhost"), Some(80), json!({"tls": true})).unwrap_err();
    assert_eq!(paths(&errs), ["config.tls"]);
}

#[test]
fn tcp_parses_through_check_spec() {
    let config = json!({"send": "x"}).as_object().cloned().unwrap();
    let input = SpecInput {
        url: None,
        host: Some("localhost"),
        port: Some(7),
        config: &config,
    };
    assert!(matches!(
        CheckSpec::parse(MonitorKind::Tcp, &input),
        Ok(CheckSpec::Tcp(_))
    ));
}

// ----------------------------------------------------------------------------------------------
// Running
// ----------------------------------------------------------------------------------------------

#[tokio::test]
async fn plain_connect_is_up() {
    let addr = echo_server().await;
    let out = tcp::check(&spec(addr.port(), json!({})), &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.resolved_ip, Some(addr.ip()));
    let t = out.timings.unwrap();
    assert!(t.tcp >= 0.0 && t.tls.is_none());
    assert!(out.message.is_none());
    assert!(out.response_body.is_none(), "no reply read without expect");
}

#[tokio::test]
async fn send_and_expect_pass() {
    let addr = echo_server().await;
    let s = spec(
        addr.port(),
        json!({"send": "hello\n", "expect": "echo:hello"}),
    );
    let out = tcp::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.response_body.as_deref(), Some("echo:hello\n"));
    assert!(out.latency > Duration::ZERO);
}

#[tokio::test]
async fn expect_mismatch_is_down() {
    let addr = echo_server().await;
    let s = spec(addr.port(), json!({"send": "hello", "expect": "goodbye"}));
    let out = tcp::check(&s, &opts(1000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.contains("does not contain \"goodbye\""), "{msg}");
    assert_eq!(out.response_body.as_deref(), Some("echo:hello"));
}

#[tokio::test]
async fn refused_port_is_down() {
    let port = closed_port().await;
    let out = tcp::check(&spec(port, json!({})), &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.contains("connection refused"), "{msg}");
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
}

#[tokio::test]
async fn silent_server_times_out() {
    let addr = silent_server().await;
    let s = spec(addr.port(), json!({"send": "anyone?", "expect": "yes"}));
    let started = std::time::Instant::now();
    let out = tcp::check(&s, &opts(600)).await;
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "must finish before the monitor timeout"
    );
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.starts_with("no reply within"), "{msg}");
}

#[tokio::test]
async fn silent_server_through_run_reports_reason() {
    let addr = silent_server().await;
    let config = json!({"expect": "hi"}).as_object().cloned().unwrap();
    let port = addr.port();
    let input = SpecInput {
        url: None,
        host: Some("127.0.0.1"),
        port: Some(port),
        config: &config,
    };
    let spec = CheckSpec::parse(MonitorKind::Tcp, &input).unwrap();
    let out = tocsin_checks::run(
        &spec,
        &RunOptions {
            retries: 1,
            ..opts(400)
        },
    )
    .await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(out.retry_count, 1);
    assert!(out.message.unwrap().starts_with("no reply within"));
}

#[tokio::test]
async fn reset_is_down() {
    let addr = resetting_server().await;
    let s = spec(addr.port(), json!({"send": "boom", "expect": "never"}));
    let out = tcp::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.contains("connection reset by peer"), "{msg}");
}

#[tokio::test]
async fn banner_without_send_is_read_for_reply_assertions() {
    let addr = banner_server("220 ready\r\n").await;
    let s = spec(
        addr.port(),
        json!({"assertions": [{"target": "reply", "operator": "contains", "value": "220"}]}),
    );
    let out = tcp::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.response_body.as_deref(), Some("220 ready\r\n"));
    assert_eq!(out.assertion_results.len(), 1);
    assert!(out.assertion_results[0].passed);
    // The reply is delimited by the quiet period, not by the monitor timeout.
    assert!(
        out.latency < Duration::from_millis(1000),
        "{:?}",
        out.latency
    );
}

#[tokio::test]
async fn assertions_set_verdict() {
    let addr = echo_server().await;
    let fail = spec(
        addr.port(),
        json!({"send": "a", "expect": "echo:a",
               "assertions": [{"target": "reply", "operator": "eq", "value": "something else"}]}),
    );
    let out = tcp::check(&fail, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert!(!out.assertion_results[0].passed);
    assert!(out.message.is_some());

    let warn = spec(
        addr.port(),
        json!({"send": "a", "expect": "echo:a",
        "assertions": [
            {"target": "latency", "operator": "lt", "value": 0, "severity": "warn"},
            {"target": "resolvedIp", "operator": "eq", "value": "127.0.0.1"}
        ]}),
    );
    let out = tcp::check(&warn, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Degraded, "{:?}", out.message);
    assert!(!out.assertion_results[0].passed);
    assert!(out.assertion_results[1].passed);
}

#[tokio::test]
async fn tls_without_verification_is_up() {
    let addr = tls_echo_server().await;
    let s = spec(
        addr.port(),
        json!({"tls": {"verify": false, "serverName": "localhost"}, "send": "hi", "expect": "tls-echo:hi",
               "assertions": [{"target": "certificateDaysLeft", "operator": "gt", "value": 1000}]}),
    );
    let out = tcp::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert!(out.timings.unwrap().tls.is_some());
    let expected_days = (chrono::NaiveDate::from_ymd_opt(2100, 1, 1).unwrap()
        - chrono::Utc::now().date_naive())
    .num_days();
    let days = out.cert_days_left.unwrap();
    assert!(
        (expected_days - 1..=expected_days).contains(&days),
        "{days} vs {expected_days}"
    );
    assert_eq!(out.response_body.as_deref(), Some("tls-echo:hi"));
}

/// Days left count from the caller's `now`, not the wall clock: the same certificate (valid
/// until 2100-01-01) is ten days from expiry late in 2099 and expired in 2100.
#[tokio::test]
async fn certificate_days_left_follow_the_given_time() {
    let addr = tls_echo_server().await;
    let s = spec(
        addr.port(),
        json!({"tls": {"verify": false, "serverName": "localhost"}, "send": "hi", "expect": "tls-echo:hi"}),
    );
    let at = |y, m, d| {
        chrono::NaiveDate::from_ymd_opt(y, m, d)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .map(|t| t.and_utc())
            .expect("a valid date")
    };
    let late_2099 = RunOptions {
        now: at(2099, 12, 21),
        ..opts(3000)
    };
    let out = tcp::check(&s, &late_2099).await;
    let days = out.cert_days_left.expect("days left");
    assert!((10..=11).contains(&days), "{days}");
    let in_2100 = RunOptions {
        now: at(2100, 1, 3),
        ..opts(3000)
    };
    let out = tcp::check(&s, &in_2100).await;
    let days = out.cert_days_left.expect("days left");
    assert!((-3..=-2).contains(&days), "{days}");
}

#[tokio::test]
async fn tls_with_verification_rejects_self_signed() {
    let addr = tls_echo_server().await;
    let s = spec(
        addr.port(),
        json!({"tls": {"serverName": "localhost"}, "send": "hi"}),
    );
    let out = tcp::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.starts_with("TLS handshake failed"), "{msg}");
    assert!(msg.contains("certificate"), "{msg}");
    assert!(out.timings.unwrap().tls.is_none());
}

#[tokio::test]
async fn tls_against_plain_server_is_down() {
    let addr = echo_server().await;
    let s = spec(addr.port(), json!({"tls": {"verify": false}}));
    let out = tcp::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert!(out.message.unwrap().starts_with("TLS handshake"));
}

#[tokio::test]
async fn hostname_resolves() {
    let addr = echo_server().await;
    // `localhost` may resolve to ::1 first; the check falls through to 127.0.0.1.
    let s = parse(
        Some("localhost"),
        Some(addr.port()),
        json!({"send": "x", "expect": "echo:x"}),
    )
    .unwrap();
    let out = tcp::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.resolved_ip, Some(addr.ip()));
}

#[tokio::test]
async fn connect_succeeds_before_server_reads() {
    // A bare connect with no send/expect does not depend on the server reading anything.
    let addr = silent_server().await;
    let out = tcp::check(&spec(addr.port(), json!({})), &opts(1000)).await;
    assert_eq!(out.verdict, Verdict::Up);
    let _ = TcpStream::connect(addr).await.unwrap();
}
