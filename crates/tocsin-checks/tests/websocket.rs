//! WEBSOCKET checks against a tokio-tungstenite server on 127.0.0.1 (plain and TLS): echo with
//! send/expect, subprotocol negotiation, header-based and path-based handshake rejection.

// Tests fail loudly on setup errors.
#![allow(clippy::unwrap_used)]
// The handshake callback's error type is tungstenite's HTTP response, large by design.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::websocket::{self, WsSpec};
use tocsin_checks::{CheckSpec, MonitorKind, RunOptions, Verdict};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::Message;

fn parse(url: Option<&str>, config: Value) -> Result<WsSpec, Vec<(String, String)>> {
    let config = config.as_object().cloned().unwrap_or_default();
    let input = SpecInput {
        url,
        host: None,
        port: None,
        config: &config,
    };
    WsSpec::parse(&input).map_err(|errs| errs.into_iter().map(|e| (e.path, e.message)).collect())
}

fn opts(timeout_ms: u64) -> RunOptions {
    RunOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..RunOptions::default()
    }
}

/// The handshake policy of the test server:
/// * `/forbidden` is refused with 403;
/// * `/private` needs `x-token: secret` (401 otherwise);
/// * the first offered subprotocol among `chat.v2`, `chat.v1` is selected, `/no-protocol`
///   never selects one;
/// * `/silent` accepts and never sends; `/bye` closes right away with code 1001.
fn policy(req: &Request, mut resp: Response) -> Result<Response, ErrorResponse> {
    let reject = |status: StatusCode, body: &str| {
        let mut r = ErrorResponse::new(Some(body.to_string()));
        *r.status_mut() = status;
        r
    };
    match req.uri().path() {
        "/forbidden" => return Err(reject(StatusCode::FORBIDDEN, "go away")),
        "/private"
            if req.headers().get("x-token").map(HeaderValue::as_bytes) != Some(b"secret") =>
        {
            return Err(reject(StatusCode::UNAUTHORIZED, "token please"))
        }
        _ => {}
    }
    if req.uri().path() != "/no-protocol" {
        let offered: Vec<String> = req
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default();
        if let Some(chosen) = offered.iter().find(|p| *p == "chat.v2" || *p == "chat.v1") {
            resp.headers_mut().insert(
                "sec-websocket-protocol",
                HeaderValue::from_str(chosen).unwrap(),
            );
        }
    }
    Ok(resp)
}

async fn serve_one<S: AsyncRead + AsyncWrite + Unpin>(stream: S) {
    let path = Arc::new(std::sync::Mutex::new(String::new()));
    let seen = path.clone();
    let callback = move |req: &Request, resp: Response| {
        *seen.lock().unwrap() = req.uri().path().to_string();
        policy(req, resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    let path = path.lock().unwrap().clone();
    match path.as_str() {
        "/silent" => {
            // Hold the connection open without replying; answer the close handshake.
            while let Some(Ok(_)) = ws.next().await {}
        }
        "/bye" => {
            let frame = tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode::Away,
                reason: "going away".into(),
            };
            let _ = ws.close(Some(frame)).await;
            while let Some(Ok(_)) = ws.next().await {}
        }
        _ => {
            while let Some(Ok(msg)) = ws.next().await {
                if let Message::Text(t) = msg {
                    // A ping first: the check must not mistake it for the reply.
                    let _ = ws.send(Message::Ping(Default::default())).await;
                    if ws.send(Message::text(format!("echo:{t}"))).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

async fn ws_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            tokio::spawn(serve_one(sock));
        }
    });
    addr
}

async fn wss_server() -> SocketAddr {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(sock).await {
                    serve_one(tls).await;
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
        Some("wss://example.com/socket?x=1"),
        json!({"headers": {"Authorization": "Bearer x"}, "subprotocols": ["chat.v1", "chat.v2"],
               "send": "ping", "expect": "pong", "tls": {"verify": false},
               "assertions": [{"target": "reply", "operator": "contains", "value": "pong"}]}),
    )
    .unwrap();
    assert_eq!(s.url.as_str(), "wss://example.com/socket?x=1");
    assert_eq!(
        s.headers,
        [("Authorization".to_string(), "Bearer x".to_string())]
    );
    assert_eq!(s.subprotocols, ["chat.v1", "chat.v2"]);
    assert_eq!(
        (s.send.as_deref(), s.expect.as_deref()),
        (Some("ping"), Some("pong"))
    );
    assert!(!s.tls_verify);
    assert_eq!(s.assertions.len(), 1);

    let s = parse(Some("ws://127.0.0.1:9/"), json!({})).unwrap();
    assert!(s.tls_verify && s.headers.is_empty() && s.subprotocols.is_empty());

    let config = serde_json::Map::new();
    let input = SpecInput {
        url: Some("ws://localhost/"),
        host: None,
        port: None,
        config: &config,
    };
    assert!(matches!(
        CheckSpec::parse(MonitorKind::WebSocket, &input),
        Ok(CheckSpec::WebSocket(_))
    ));
}

#[test]
fn reports_errors_with_paths() {
    for (url, why) in [
        (None, "required"),
        (Some("http://example.com/"), "ws://"),
        (Some("not a url"), "valid URL"),
    ] {
        let errs = parse(url, json!({})).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].0, "url");
        assert!(errs[0].1.contains(why), "{}", errs[0].1);
    }

    let errs = parse(
        Some("ws://localhost/"),
        json!({"headers": {"Sec-WebSocket-Key": "x", "bad header": "v", "X-Ok": 5},
               "subprotocols": ["good", "bad one", 3],
               "send": "", "tls": {"verify": "no", "sni": "x"}, "compress": true,
               "assertions": [{"target": "dnsRecords", "operator": "contains", "value": "x"}]}),
    )
    .unwrap_err();
    let mut paths: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "config.assertions.0.target",
            "config.compress",
            "config.headers.Sec-WebSocket-Key",
            "config.headers.X-Ok",
            "config.headers.bad header",
            "config.send",
            "config.subprotocols.2",
            "config.tls.sni",
            "config.tls.verify",
        ]
    );

    let errs = parse(
        Some("ws://localhost/"),
        json!({"subprotocols": ["good", "bad one"]}),
    )
    .unwrap_err();
    assert_eq!(errs[0].0, "config.subprotocols.1");
}

// ----------------------------------------------------------------------------------------------
// Running
// ----------------------------------------------------------------------------------------------

#[tokio::test]
async fn send_and_expect_pass() {
    let addr = ws_server().await;
    let s = parse(
        Some(&format!("ws://{addr}/echo")),
        json!({"send": "hello", "expect": "echo:hello"}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.status_code, Some(101));
    assert_eq!(out.response_body.as_deref(), Some("echo:hello"));
    assert_eq!(out.resolved_ip, Some(addr.ip()));
    let t = out.timings.unwrap();
    assert!(t.first_byte > 0.0 && t.transfer > 0.0 && t.tls.is_none());
    let headers = out.response_headers.unwrap();
    assert_eq!(headers["upgrade"], ["websocket"]);
}

#[tokio::test]
async fn expect_mismatch_is_down() {
    let addr = ws_server().await;
    let s = parse(
        Some(&format!("ws://{addr}/echo")),
        json!({"send": "hello", "expect": "goodbye"}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(
        out.message.as_deref(),
        Some("reply does not contain \"goodbye\"")
    );
    assert_eq!(out.response_body.as_deref(), Some("echo:hello"));
}

#[tokio::test]
async fn connect_only_is_up() {
    let addr = ws_server().await;
    let s = parse(Some(&format!("ws://{addr}/silent")), json!({})).unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert!(
        out.latency < Duration::from_millis(1500),
        "closes promptly: {:?}",
        out.latency
    );
}

#[tokio::test]
async fn no_reply_times_out() {
    let addr = ws_server().await;
    let s = parse(
        Some(&format!("ws://{addr}/silent")),
        json!({"send": "anyone?", "expect": "x"}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(800)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.starts_with("no reply within"), "{msg}");
}

#[tokio::test]
async fn server_close_before_reply_is_down() {
    let addr = ws_server().await;
    let s = parse(Some(&format!("ws://{addr}/bye")), json!({"expect": "x"})).unwrap();
    let out = websocket::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(
        msg.contains("closed the connection without a reply") && msg.contains("going away"),
        "{msg}"
    );
}

#[tokio::test]
async fn subprotocol_negotiation() {
    let addr = ws_server().await;
    let s = parse(
        Some(&format!("ws://{addr}/echo")),
        json!({"subprotocols": ["chat.v3", "chat.v2"], "send": "hi", "expect": "echo:hi"}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(
        out.response_headers.unwrap()["sec-websocket-protocol"],
        ["chat.v2"]
    );

    // The server picks none of the offered subprotocols: the handshake fails.
    let s = parse(
        Some(&format!("ws://{addr}/no-protocol")),
        json!({"subprotocols": ["chat.v1"]}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(
        msg.starts_with("WebSocket handshake failed") && msg.to_lowercase().contains("subprotocol"),
        "{msg}"
    );
}

#[tokio::test]
async fn handshake_rejection_is_down_with_status() {
    let addr = ws_server().await;
    let s = parse(Some(&format!("ws://{addr}/forbidden")), json!({})).unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(out.status_code, Some(403));
    assert_eq!(
        out.message.as_deref(),
        Some("WebSocket handshake rejected: HTTP 403 Forbidden")
    );
    assert_eq!(out.response_body.as_deref(), Some("go away"));
}

#[tokio::test]
async fn custom_headers_are_sent() {
    let addr = ws_server().await;
    let url = format!("ws://{addr}/private");
    let without = parse(Some(&url), json!({})).unwrap();
    let out = websocket::check(&without, &opts(3000)).await;
    assert_eq!(out.status_code, Some(401));
    assert_eq!(out.verdict, Verdict::Down);

    let with = parse(Some(&url), json!({"headers": {"X-Token": "secret"}})).unwrap();
    let out = websocket::check(&with, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.status_code, Some(101));
}

#[tokio::test]
async fn refused_is_down() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let s = parse(Some(&format!("ws://{addr}/")), json!({})).unwrap();
    let out = websocket::check(&s, &opts(2000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert!(out.message.unwrap().contains("connection refused"));
}

#[tokio::test]
async fn assertions_on_reply_and_status() {
    let addr = ws_server().await;
    let s = parse(
        Some(&format!("ws://{addr}/echo")),
        json!({"send": "abc", "assertions": [
            {"target": "reply", "operator": "eq", "value": "echo:abc"},
            {"target": "statusCode", "operator": "eq", "value": 101},
            {"target": "reply", "operator": "contains", "value": "zzz", "severity": "warn"}
        ]}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Degraded, "{:?}", out.message);
    let passed: Vec<bool> = out.assertion_results.iter().map(|r| r.passed).collect();
    assert_eq!(passed, [true, true, false]);
}

#[tokio::test]
async fn wss_without_verification() {
    let addr = wss_server().await;
    let s = parse(
        Some(&format!("wss://localhost:{}/echo", addr.port())),
        json!({"tls": {"verify": false}, "send": "secure", "expect": "echo:secure"}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert!(out.timings.unwrap().tls.is_some());
    assert!(out.cert_days_left.unwrap() > 0);
    assert!(out.resolved_ip.unwrap().is_loopback());
}

#[tokio::test]
async fn wss_with_verification_rejects_self_signed() {
    let addr = wss_server().await;
    let s = parse(
        Some(&format!("wss://localhost:{}/echo", addr.port())),
        json!({}),
    )
    .unwrap();
    let out = websocket::check(&s, &opts(3000)).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert!(out.message.unwrap().starts_with("TLS handshake failed"));
}
