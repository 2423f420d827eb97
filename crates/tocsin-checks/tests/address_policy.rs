//! The operator's address policy against real loopback servers: with `deny_private` every check
//! type refuses a loopback target before sending it anything (a DOWN naming the address), a
//! name is judged on what it resolves to, a redirect hop is judged on its own address (the
//! first hop allowed by an exception, the second on 127.0.0.2 refused, its server never
//! reached), a literal private target is refused on its field, and the policy off changes
//! nothing. Also: an HTTP check keeps the response body only with `storeResponseBody`.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tocsin_checks::address_policy::refused_message;
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{AddressPolicy, CheckSpec, MonitorKind, Outcome, RunOptions, Verdict};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A raw HTTP/1.1 server on `ip` answering every request with `response` (a whole response,
/// head and body), counting the connections it accepted.
async fn http_server(ip: &str, response: String) -> (SocketAddr, Arc<AtomicU32>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU32::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (addr, hits)
}

fn ok_response(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn redirect_response(to: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
}

/// A TCP listener that counts connections and holds them open.
async fn tcp_server() -> (SocketAddr, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU32::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (addr, hits)
}

fn spec(
    kind: MonitorKind,
    url: Option<&str>,
    host: Option<&str>,
    port: Option<u16>,
    config: Value,
) -> CheckSpec {
    let config = config.as_object().cloned().unwrap();
    CheckSpec::parse(
        kind,
        &SpecInput {
            url,
            host,
            port,
            config: &config,
        },
    )
    .unwrap()
}

fn opts(policy: AddressPolicy) -> RunOptions {
    RunOptions {
        timeout: Duration::from_secs(3),
        address_policy: policy,
        ..RunOptions::default()
    }
}

fn deny() -> AddressPolicy {
    AddressPolicy::deny_private(true)
}

fn loopback() -> IpAddr {
    IpAddr::from([127, 0, 0, 1])
}

fn assert_refused(o: &Outcome, ip: IpAddr) {
    assert_eq!(o.verdict, Verdict::Down, "{o:?}");
    assert!(
        o.probe_fault.is_none(),
        "a refusal is not a probe fault: {o:?}"
    );
    assert_eq!(
        o.message.as_deref(),
        Some(refused_message(ip).as_str()),
        "{o:?}"
    );
}

#[tokio::test]
async fn every_check_type_refuses_a_loopback_target_without_touching_it() {
    let (http, http_hits) = http_server("127.0.0.1", ok_response("internal")).await;
    let (tcp, tcp_hits) = tcp_server().await;

    let http_spec = spec(
        MonitorKind::Http,
        Some(&format!("http://{http}/")),
        None,
        None,
        json!({}),
    );
    assert_refused(
        &tocsin_checks::run(&http_spec, &opts(deny())).await,
        loopback(),
    );
    // A name is judged on the address it resolves to.
    let by_name = format!("http://localhost:{}/", http.port());
    let name_spec = spec(
        MonitorKind::Http,
        Some(&by_name),
        None,
        None,
        json!({"ipFamily": "ipv4"}),
    );
    assert_refused(
        &tocsin_checks::run(&name_spec, &opts(deny())).await,
        loopback(),
    );
    assert_eq!(http_hits.load(Ordering::SeqCst), 0);

    let tcp_spec = spec(
        MonitorKind::Tcp,
        None,
        Some("127.0.0.1"),
        Some(tcp.port()),
        json!({}),
    );
    assert_refused(
        &tocsin_checks::run(&tcp_spec, &opts(deny())).await,
        loopback(),
    );
    let ws_spec = spec(
        MonitorKind::WebSocket,
        Some(&format!("ws://{tcp}/")),
        None,
        None,
        json!({}),
    );
    assert_refused(
        &tocsin_checks::run(&ws_spec, &opts(deny())).await,
        loopback(),
    );
    assert_eq!(tcp_hits.load(Ordering::SeqCst), 0);

    let dns_spec = spec(
        MonitorKind::Dns,
        None,
        Some("example.com"),
        None,
        json!({"recordType": "A", "resolver": format!("{tcp}"), "protocol": "tcp"}),
    );
    assert_refused(
        &tocsin_checks::run(&dns_spec, &opts(deny())).await,
        loopback(),
    );
    assert_eq!(tcp_hits.load(Ordering::SeqCst), 0);

    let ping_spec = spec(
        MonitorKind::Ping,
        None,
        Some("127.0.0.1"),
        None,
        json!({"count": 1}),
    );
    assert_refused(
        &tocsin_checks::run(&ping_spec, &opts(deny())).await,
        loopback(),
    );

    // The policy off: the same targets are reached as before.
    let o = tocsin_checks::run(&http_spec, &opts(AddressPolicy::default())).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(http_hits.load(Ordering::SeqCst), 1);
    let o = tocsin_checks::run(&tcp_spec, &opts(AddressPolicy::default())).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    // The listener counts after its accept, which may follow the check's connect a moment.
    for _ in 0..100 {
        if tcp_hits.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(tcp_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_redirect_hop_is_judged_on_its_own_address() {
    // The internal server lives on 127.0.0.2; the "public" first hop on 127.0.0.1 stands in
    // for an allowed address through an exception.
    let (internal, internal_hits) = http_server("127.0.0.2", ok_response("secret")).await;
    let (first, first_hits) = http_server(
        "127.0.0.1",
        redirect_response(&format!("http://{internal}/meta")),
    )
    .await;
    let policy = AddressPolicy {
        deny_private: true,
        exceptions: vec![loopback()],
    };
    let s = spec(
        MonitorKind::Http,
        Some(&format!("http://{first}/")),
        None,
        None,
        json!({"storeResponseBody": true}),
    );
    let o = tocsin_checks::run(&s, &opts(policy)).await;
    assert_refused(&o, internal.ip());
    assert!(o.response_body.is_none(), "{o:?}");
    assert_eq!(first_hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        internal_hits.load(Ordering::SeqCst),
        0,
        "the refused hop was connected to"
    );

    // Without the policy the chain reaches the internal server.
    let o = tocsin_checks::run(&s, &opts(AddressPolicy::default())).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.response_body.as_deref(), Some("secret"));
    assert_eq!(internal_hits.load(Ordering::SeqCst), 1);
}

#[test]
fn literal_private_targets_are_refused_on_their_field() {
    let cases = [
        (
            spec(
                MonitorKind::Http,
                Some("http://10.0.0.1/"),
                None,
                None,
                json!({}),
            ),
            "url",
        ),
        (
            spec(
                MonitorKind::WebSocket,
                Some("wss://[::1]/"),
                None,
                None,
                json!({}),
            ),
            "url",
        ),
        (
            spec(
                MonitorKind::Tcp,
                None,
                Some("169.254.169.254"),
                Some(80),
                json!({}),
            ),
            "host",
        ),
        (
            spec(
                MonitorKind::Ping,
                None,
                Some("192.168.1.1"),
                None,
                json!({}),
            ),
            "host",
        ),
        (
            spec(
                MonitorKind::Dns,
                None,
                Some("example.com"),
                None,
                json!({"recordType": "A", "resolver": "127.0.0.1:53"}),
            ),
            "config.resolver",
        ),
    ];
    for (s, field) in &cases {
        let e = deny()
            .literal_refusal(s)
            .unwrap_or_else(|| panic!("{s:?} not refused"));
        assert_eq!(e.path, *field);
        assert!(
            e.message.contains("is not allowed on this server"),
            "{}",
            e.message
        );
        assert!(AddressPolicy::default().literal_refusal(s).is_none());
    }
    // Names and public literals are not judged at validation.
    for s in [
        spec(
            MonitorKind::Http,
            Some("http://localhost/"),
            None,
            None,
            json!({}),
        ),
        spec(
            MonitorKind::Http,
            Some("http://1.1.1.1/"),
            None,
            None,
            json!({}),
        ),
        spec(
            MonitorKind::Tcp,
            None,
            Some("db.internal"),
            Some(5432),
            json!({}),
        ),
    ] {
        assert!(deny().literal_refusal(&s).is_none(), "{s:?}");
    }
}

#[tokio::test]
async fn the_response_body_is_kept_only_when_asked_for() {
    let body = format!("{{\"status\":\"down\",\"detail\":\"{}\"}}", "x".repeat(100));
    let response = format!(
        "HTTP/1.1 503 Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (addr, _) = http_server("127.0.0.1", response).await;
    let url = format!("http://{addr}/");
    let assertion =
        json!([{"target": "jsonPath", "property": "$.status", "operator": "eq", "value": "ok"}]);
    let quiet = spec(
        MonitorKind::Http,
        Some(&url),
        None,
        None,
        json!({"assertions": assertion}),
    );
    let o = tocsin_checks::run(&quiet, &opts(AddressPolicy::default())).await;
    assert_eq!(o.verdict, Verdict::Down);
    assert!(o.response_body.is_none(), "{o:?}");
    // The assertion still read the body.
    assert_eq!(
        o.assertion_results[0].actual.as_deref(),
        Some("down"),
        "{o:?}"
    );
    assert!(o.response_headers.is_some());

    let kept = spec(
        MonitorKind::Http,
        Some(&url),
        None,
        None,
        json!({"assertions": assertion, "storeResponseBody": true}),
    );
    let o = tocsin_checks::run(&kept, &opts(AddressPolicy::default())).await;
    assert_eq!(o.response_body.as_deref(), Some(body.as_str()));
}
