//! `--checks-deny-private-addresses` through the real server: with it on, a monitor whose
//! target is a private address literal is refused at create and update (`VALIDATION_ERROR` on
//! the field naming it), and HTTP, TCP and WebSocket monitors naming loopback targets by name go
//! DOWN with a message saying the address is not allowed (the targets see no connection),
//! from the built-in probe and from a remote probe alike (the job carries the policy); with it
//! off (the default) the same monitors are created and UP. A failed HTTP check keeps the
//! response body in its heartbeat only when the monitor asks (`storeResponseBody`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use common::clock::{tick, T0};
use common::monitors::{create_id, heartbeats};
use common::{expect_error, json_of, Options, TestServer, User};
use futures::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::ManualClock;
use tocsin::probes::client::{self, ProbeOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// A loopback server answering HTTP requests with `status` and `body`, and WebSocket
/// handshakes with an echo; it counts the connections it accepted.
async fn target(status: u16, body: &'static str) -> (SocketAddr, Arc<AtomicU32>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU32::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let Ok(n) = stream.peek(&mut head).await else {
                    return;
                };
                let text = String::from_utf8_lossy(&head[..n]).to_ascii_lowercase();
                if text.contains("upgrade: websocket") {
                    if let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await {
                        while let Some(Ok(m)) = ws.next().await {
                            if m.is_text() && futures::SinkExt::send(&mut ws, m).await.is_err() {
                                break;
                            }
                        }
                    }
                    return;
                }
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (addr, hits)
}

async fn server(deny: bool, clock: &Arc<ManualClock>) -> TestServer {
    TestServer::start_with(Options {
        clock: Some(clock.clone()),
        tweak: Some(Box::new(move |c| c.checks_deny_private_addresses = deny)),
    })
    .await
}

/// The three monitors, naming the loopback target by name (names are judged when connecting).
fn monitors(addr: SocketAddr, regions: &[&str]) -> Vec<Value> {
    let port = addr.port();
    vec![
        json!({"name": "web", "type": "HTTP", "url": format!("http://localhost:{port}/"),
               "interval": 10, "timeout": 3, "regions": regions,
               "config": {"ipFamily": "ipv4"}}),
        json!({"name": "tcp", "type": "TCP", "host": "localhost", "port": port,
               "interval": 10, "timeout": 3, "regions": regions}),
        json!({"name": "ws", "type": "WEBSOCKET", "url": format!("ws://localhost:{port}/"),
               "interval": 10, "timeout": 3, "regions": regions}),
    ]
}

async fn last_heartbeat(u: &User, id: &str) -> Value {
    heartbeats(u, id, "")
        .await
        .first()
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn private_targets_are_refused_at_create_and_go_down_at_connect_time() {
    let clock = ManualClock::new(T0);
    let srv = server(true, &clock).await;
    let u = srv.sign_up("shared@example.com").await;
    let (addr, hits) = target(200, "internal").await;

    // Literal private addresses: refused on the field that names them.
    for (body, field) in [
        (
            json!({"name": "a", "type": "HTTP", "url": format!("http://{addr}/")}),
            "url",
        ),
        (
            json!({"name": "b", "type": "TCP", "host": "127.0.0.1", "port": addr.port()}),
            "host",
        ),
        (
            json!({"name": "c", "type": "WEBSOCKET", "url": "ws://[::1]:9/"}),
            "url",
        ),
        (
            json!({"name": "d", "type": "PING", "host": "169.254.169.254"}),
            "host",
        ),
        (
            json!({"name": "e", "type": "DNS", "host": "example.com",
                   "config": {"recordType": "A", "resolver": "10.0.0.53"}}),
            "config.resolver",
        ),
    ] {
        let res = u.call(Method::POST, "/monitors", Some(body)).await;
        let e = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(e["field"], json!(field), "{e}");
        assert!(
            e.to_string().contains("is not allowed on this server"),
            "{e}"
        );
    }
    // An update to a literal private target is refused the same way.
    let public = create_id(
        &u,
        json!({"name": "pub", "type": "HTTP", "url": "https://example.com/"}),
    )
    .await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{public}"),
            Some(json!({"url": "http://192.168.1.1/admin"})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        json!("url")
    );
    // Pause it: it must not reach out to example.com during the ticks below.
    let res = u
        .call(Method::POST, &format!("/monitors/{public}/pause"), None)
        .await;
    assert!(res.status().is_success(), "{}", res.status());

    // Names resolving to loopback: accepted, and DOWN when the check connects.
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for m in monitors(addr, &["local"]) {
            ids.push(create_id(&u, m).await);
        }
        ids
    };
    tick(&srv, &clock).await;
    for id in &ids {
        let hb = last_heartbeat(&u, id).await;
        assert_eq!(hb["status"], json!("DOWN"), "{hb}");
        let message = hb["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("address 127.0.0.1 is not allowed on this server"),
            "{hb}"
        );
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a refused target was connected to"
    );

    // A remote probe applies the server's policy too.
    let key = tocsin::probes::keys::create(srv.state.db(), "eu-west", None, T0)
        .await
        .unwrap()
        .key;
    let cancel = CancellationToken::new();
    let probe = tokio::spawn(client::run(
        ProbeOptions {
            server: url::Url::parse(&srv.base).unwrap(),
            region: "eu-west".into(),
            key,
            max_in_flight: 4,
        },
        cancel.clone(),
    ));
    let started = std::time::Instant::now();
    while !tocsin::probes::is_live(srv.state.probes(), srv.state.relay(), "eu-west") {
        assert!(
            started.elapsed().as_secs() < 10,
            "the probe never connected"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let remote = create_id(&u, monitors(addr, &["eu-west"]).remove(0)).await;
    tick(&srv, &clock).await;
    let hb = last_heartbeat(&u, &remote).await;
    assert_eq!(hb["region"], json!("eu-west"), "{hb}");
    assert_eq!(hb["status"], json!("DOWN"), "{hb}");
    assert!(
        hb["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is not allowed on this server"),
        "{hb}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    cancel.cancel();
    let _ = probe.await;
    srv.stop().await;
}

#[tokio::test]
async fn without_the_setting_private_targets_are_checked_as_before() {
    let clock = ManualClock::new(T0);
    let srv = server(false, &clock).await;
    let u = srv.sign_up("selfhost@example.com").await;
    let (addr, hits) = target(200, "fine").await;
    create_id(
        &u,
        json!({"name": "literal", "type": "HTTP", "url": format!("http://{addr}/"),
               "interval": 10, "timeout": 3}),
    )
    .await;
    let mut ids = Vec::new();
    for m in monitors(addr, &["local"]) {
        ids.push(create_id(&u, m).await);
    }
    tick(&srv, &clock).await;
    for id in &ids {
        let hb = last_heartbeat(&u, id).await;
        assert_eq!(hb["status"], json!("UP"), "{hb}");
    }
    assert!(hits.load(Ordering::SeqCst) >= 4);
    srv.stop().await;
}

#[tokio::test]
async fn a_failed_check_keeps_the_body_only_when_the_monitor_asks() {
    let clock = ManualClock::new(T0);
    let srv = server(false, &clock).await;
    let u = srv.sign_up("bodies@example.com").await;
    let (addr, _) = target(503, "token=internal-secret").await;
    let url = format!("http://{addr}/");
    let quiet = create_id(
        &u,
        json!({"name": "quiet", "type": "HTTP", "url": url, "interval": 10, "timeout": 3,
               "config": {"assertions": [{"target": "body", "operator": "contains", "value": "healthy"}]}}),
    )
    .await;
    let kept = create_id(
        &u,
        json!({"name": "kept", "type": "HTTP", "url": url, "interval": 10, "timeout": 3,
               "config": {"storeResponseBody": true}}),
    )
    .await;
    let m = json_of(
        u.call(Method::GET, &format!("/monitors/{kept}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(m["config"]["storeResponseBody"], json!(true), "{m}");
    tick(&srv, &clock).await;
    let hb = last_heartbeat(&u, &quiet).await;
    assert_eq!(hb["status"], json!("DOWN"), "{hb}");
    assert_eq!(hb["responseBody"], Value::Null, "{hb}");
    // The assertion read the body all the same.
    assert_eq!(hb["assertionResults"][0]["passed"], json!(false), "{hb}");
    let hb = last_heartbeat(&u, &kept).await;
    assert_eq!(hb["status"], json!("DOWN"), "{hb}");
    assert_eq!(hb["responseBody"], json!("token=internal-secret"), "{hb}");
    srv.stop().await;
}
