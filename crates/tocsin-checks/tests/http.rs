//! End-to-end tests of the HTTP(S) check against real servers on 127.0.0.1, spawned here: a
//! well-behaved hyper server (echo, status, redirects, JSON, delays, flaky), raw TCP servers
//! that misbehave on purpose, and rustls servers with rcgen certificates.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::Datelike;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tocsin_checks::http::{self, HttpSpec};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{CheckSpec, MonitorKind, Outcome, RunOptions, Verdict};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

/// The well-behaved server's routes. `hits` counts requests to `/flaky`.
async fn route(req: Request<Incoming>, hits: Arc<AtomicU32>) -> Response<Full<Bytes>> {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let headers: serde_json::Map<String, Value> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                Value::String(v.to_str().unwrap_or_default().into()),
            )
        })
        .collect();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let respond = |status: u16, body: String| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let redirect = |status: u16, to: &str| {
        Response::builder()
            .status(status)
            .header("location", to)
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["echo"] => {
            let echo = json!({
                "method": method,
                "query": query,
                "headers": headers,
                "body": String::from_utf8_lossy(&body),
            });
            Response::builder()
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(echo.to_string())))
                .unwrap()
        }
        ["status", code] => respond(code.parse().unwrap(), format!("status {code}")),
        ["redirect", "0"] => respond(200, "arrived".into()),
        ["redirect", n] => {
            let n: u32 = n.parse().unwrap();
            redirect(302, &format!("/redirect/{}", n - 1))
        }
        ["loop", "a"] => redirect(302, "/loop/b"),
        ["loop", "b"] => redirect(301, "/loop/a"),
        ["to-echo", code] => redirect(code.parse().unwrap(), "/echo"),
        ["json"] => Response::builder()
            .header("content-type", "application/json; charset=utf-8")
            .header("x-version", "7")
            .header("set-cookie", "a=1")
            .header("set-cookie", "b=2")
            .body(Full::new(Bytes::from(
                r#"{"status":"ok","items":[1,2,3],"db":{"latencyMs":12}}"#,
            )))
            .unwrap(),
        ["big"] => respond(200, "x".repeat(100 * 1024)),
        ["delay", ms] => {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
            respond(200, "late".into())
        }
        ["flaky", n] => {
            let fails: u32 = n.parse().unwrap();
            let hit = hits.fetch_add(1, Ordering::SeqCst);
            if hit < fails {
                respond(503, "not yet".into())
            } else {
                respond(200, "ok".into())
            }
        }
        _ => respond(404, "not found".into()),
    }
}

struct Server {
    addr: SocketAddr,
    hits: Arc<AtomicU32>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// Spawns the well-behaved HTTP server.
async fn spawn_http() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicU32::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let h = h.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let h = h.clone();
                    async move { Ok::<_, Infallible>(route(req, h).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Server { addr, hits }
}

/// Spawns a raw TCP server running `handler` on every connection (after reading the request
/// head, so the client is never blocked writing).
async fn spawn_raw<F, Fut>(handler: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(handler);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            tokio::spawn(async move {
                read_head(&mut stream).await;
                handler(stream).await;
            });
        }
    });
    addr
}

async fn read_head(stream: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Spawns a TLS server (hyper behind rustls) presenting `cert`.
async fn spawn_https(cert: &rcgen::CertifiedKey) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let hits = Arc::new(AtomicU32::new(0));
                let svc = service_fn(move |req| {
                    let h = hits.clone();
                    async move { Ok::<_, Infallible>(route(req, h).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    addr
}

/// A self-signed certificate for `localhost`/127.0.0.1 expiring `days` from now (at the UTC
/// midnight of that day), or the rcgen default far in the future.
fn certificate(expires_in_days: Option<i64>) -> rcgen::CertifiedKey {
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    if let Some(days) = expires_in_days {
        let at = chrono::Utc::now() + chrono::Duration::days(days);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(at.year(), at.month() as u8, at.day() as u8);
    }
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    rcgen::CertifiedKey { cert, key_pair }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The spec of `config`, keeping the response body unless `config` says otherwise: most
/// tests here look at what the server answered.
fn spec(url: &str, config: Value) -> HttpSpec {
    let mut config = config.as_object().cloned().unwrap();
    config
        .entry("storeResponseBody")
        .or_insert(Value::Bool(true));
    let input = SpecInput {
        url: Some(url),
        host: None,
        port: None,
        config: &config,
    };
    HttpSpec::parse(&input).unwrap()
}

fn opts(timeout_ms: u64) -> RunOptions {
    RunOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..RunOptions::default()
    }
}

async fn check(url: &str, config: Value) -> Outcome {
    http::check(&spec(url, config), &opts(5000)).await
}

fn echoed(outcome: &Outcome) -> Value {
    serde_json::from_str(outcome.response_body.as_deref().unwrap()).unwrap()
}

fn message(outcome: &Outcome) -> &str {
    outcome.message.as_deref().unwrap_or("")
}

fn assert_down_with(outcome: &Outcome, needle: &str) {
    assert_eq!(outcome.verdict, Verdict::Down, "{outcome:?}");
    assert!(
        message(outcome).contains(needle),
        "message {:?} lacks {needle:?}",
        outcome.message
    );
}

// ---------------------------------------------------------------------------------------------
// Requests reach the server as configured
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn get_is_up_with_full_outcome() {
    let s = spawn_http().await;
    let o = check(&s.url("/echo?x=1"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.message, None);
    assert_eq!(o.status_code, Some(200));
    assert_eq!(o.resolved_ip, Some("127.0.0.1".parse().unwrap()));
    let e = echoed(&o);
    assert_eq!(e["method"], "GET");
    assert_eq!(e["query"], "x=1");
    assert_eq!(
        e["headers"]["user-agent"],
        format!("Tocsin/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(e["headers"]["host"], s.addr.to_string());
    let headers = o.response_headers.as_ref().unwrap();
    assert_eq!(headers["content-type"], vec!["application/json"]);
    assert_eq!(o.cert_days_left, None);
}

#[tokio::test]
async fn every_method_reaches_the_server() {
    let s = spawn_http().await;
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let o = check(&s.url("/echo"), json!({"method": method})).await;
        assert_eq!(o.verdict, Verdict::Up, "{method}: {o:?}");
        assert_eq!(echoed(&o)["method"], method);
    }
    // HEAD has no body; the status still arrives.
    let o = check(&s.url("/echo"), json!({"method": "HEAD"})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.status_code, Some(200));
    assert_eq!(o.response_body.as_deref(), Some(""));
}

#[tokio::test]
async fn headers_body_and_user_agent_override() {
    let s = spawn_http().await;
    let o = check(
        &s.url("/echo"),
        json!({
            "method": "POST",
            "headers": {"X-Probe": "abc", "Content-Type": "text/plain", "User-Agent": "custom/1"},
            "body": "hello body"
        }),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let e = echoed(&o);
    assert_eq!(e["headers"]["x-probe"], "abc");
    assert_eq!(e["headers"]["content-type"], "text/plain");
    assert_eq!(e["headers"]["user-agent"], "custom/1");
    assert_eq!(e["headers"]["content-length"], "10");
    assert_eq!(e["body"], "hello body");

    // A configured Host replaces the default one (virtual hosting behind an IP).
    let o = check(
        &s.url("/echo"),
        json!({"headers": {"Host": "example.test"}}),
    )
    .await;
    assert_eq!(echoed(&o)["headers"]["host"], "example.test");
}

#[tokio::test]
async fn basic_and_bearer_auth() {
    let s = spawn_http().await;
    let o = check(
        &s.url("/echo"),
        json!({"auth": {"type": "basic", "username": "user", "password": "pa:ss"}}),
    )
    .await;
    // base64("user:pa:ss")
    assert_eq!(
        echoed(&o)["headers"]["authorization"],
        "Basic dXNlcjpwYTpzcw=="
    );
    let o = check(
        &s.url("/echo"),
        json!({"auth": {"type": "bearer", "token": "t0k"}}),
    )
    .await;
    assert_eq!(echoed(&o)["headers"]["authorization"], "Bearer t0k");
}

// ---------------------------------------------------------------------------------------------
// Status expectations
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn status_expectations() {
    let s = spawn_http().await;
    let o = check(&s.url("/status/503"), json!({})).await;
    assert_down_with(&o, "expected status 2xx/3xx, got 503");
    assert_eq!(o.status_code, Some(503));
    // The body is still kept on failure.
    assert_eq!(o.response_body.as_deref(), Some("status 503"));

    let o = check(
        &s.url("/status/503"),
        json!({"expect": {"statusCodes": [503]}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let o = check(
        &s.url("/status/404"),
        json!({"expect": {"statusCodes": ["400-499"]}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let o = check(
        &s.url("/status/204"),
        json!({"expect": {"statusCodes": [200, "201-203"]}}),
    )
    .await;
    assert_down_with(&o, "expected status 200/201-203, got 204");
    let o = check(
        &s.url("/status/201"),
        json!({"expect": {"statusCodes": ["2xx"]}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let o = check(&s.url("/status/404"), json!({})).await;
    assert_down_with(&o, "got 404");
}

// ---------------------------------------------------------------------------------------------
// Redirects
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn redirects_followed() {
    let s = spawn_http().await;
    let o = check(&s.url("/redirect/3"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.status_code, Some(200));
    assert_eq!(o.response_body.as_deref(), Some("arrived"));
}

#[tokio::test]
async fn redirects_not_followed() {
    let s = spawn_http().await;
    let o = check(&s.url("/redirect/3"), json!({"followRedirects": false})).await;
    assert_eq!(o.verdict, Verdict::Up, "3xx is accepted by default: {o:?}");
    assert_eq!(o.status_code, Some(302));
    assert_eq!(
        o.response_headers.as_ref().unwrap()["location"],
        vec!["/redirect/2"]
    );
    let o = check(
        &s.url("/redirect/3"),
        json!({"followRedirects": false, "expect": {"statusCodes": [200]}}),
    )
    .await;
    assert_down_with(&o, "expected status 200, got 302");
}

#[tokio::test]
async fn too_many_redirects_and_loops_fail() {
    let s = spawn_http().await;
    let o = check(&s.url("/redirect/3"), json!({"maxRedirects": 2})).await;
    assert_down_with(&o, "too many redirects (more than 2)");
    let o = check(&s.url("/redirect/3"), json!({"maxRedirects": 3})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let o = check(&s.url("/loop/a"), json!({"maxRedirects": 20})).await;
    assert_down_with(&o, "redirect loop");
    assert!(message(&o).contains("/loop/b"), "{o:?}");
}

#[tokio::test]
async fn redirect_method_rules() {
    let s = spawn_http().await;
    // 302 turns POST into GET and drops the body.
    let o = check(
        &s.url("/to-echo/302"),
        json!({"method": "POST", "body": "data"}),
    )
    .await;
    assert_eq!(echoed(&o)["method"], "GET");
    assert_eq!(echoed(&o)["body"], "");
    // 303 makes anything a GET, and the body's content type goes with the body.
    let o = check(
        &s.url("/to-echo/303"),
        json!({"method": "PUT", "body": "data", "headers": {"Content-Type": "text/plain"}}),
    )
    .await;
    assert_eq!(echoed(&o)["method"], "GET");
    assert_eq!(echoed(&o)["headers"].get("content-type"), None);
    // 307 keeps both.
    let o = check(
        &s.url("/to-echo/307"),
        json!({"method": "POST", "body": "data", "headers": {"Content-Type": "text/plain"}}),
    )
    .await;
    assert_eq!(echoed(&o)["method"], "POST");
    assert_eq!(echoed(&o)["body"], "data");
    assert_eq!(echoed(&o)["headers"]["content-type"], "text/plain");
}

#[tokio::test]
async fn credentials_are_not_sent_to_another_origin() {
    let target = spawn_http().await;
    let to = target.url("/echo");
    let addr = spawn_raw(move |mut stream| {
        let to = to.clone();
        async move {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
        }
    })
    .await;
    let o = check(
        &format!("http://{addr}/"),
        json!({"auth": {"type": "bearer", "token": "secret"}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(echoed(&o)["headers"].get("authorization"), None);
}

// ---------------------------------------------------------------------------------------------
// Timings, addresses, body cap
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn timings_are_measured_per_phase() {
    let s = spawn_http().await;
    let o = check(&s.url("/delay/150"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    let t = o.timings.unwrap();
    assert_eq!(t.dns, 0.0, "an IP literal needs no lookup");
    assert_eq!(t.tls, None, "plain http has no TLS phase");
    assert!(t.tcp >= 0.0 && t.tcp < 1000.0, "{t:?}");
    assert!(
        t.first_byte >= 140.0,
        "server waits 150 ms before answering: {t:?}"
    );
    assert!(t.transfer >= 0.0 && t.transfer < 140.0, "{t:?}");
    let total = o.latency.as_secs_f64() * 1000.0;
    assert!(
        total >= t.dns + t.tcp + t.first_byte + t.transfer - 1.0,
        "{total} vs {t:?}"
    );
}

#[tokio::test]
async fn transfer_time_covers_a_slow_body() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = stream.write_all(b"world").await;
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.response_body.as_deref(), Some("helloworld"));
    let t = o.timings.unwrap();
    assert!(t.transfer >= 190.0, "{t:?}");
    assert!(t.first_byte < 190.0, "{t:?}");
}

#[tokio::test]
async fn localhost_resolves_to_loopback() {
    let s = spawn_http().await;
    let o = check(
        &format!("http://localhost:{}/echo", s.addr.port()),
        json!({}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.resolved_ip, Some("127.0.0.1".parse().unwrap()));
    assert_eq!(
        echoed(&o)["headers"]["host"],
        format!("localhost:{}", s.addr.port())
    );
    // IPv6-only localhost finds nothing listening on ::1 for this IPv4 server.
    let o = check(
        &format!("http://localhost:{}/echo", s.addr.port()),
        json!({"ipFamily": "ipv6"}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Down, "{o:?}");
    if let Some(ip) = o.resolved_ip {
        assert!(ip.is_ipv6());
    }
}

/// A name from /etc/hosts (other than localhost, which needs no lookup) goes through the real
/// resolver, so its DNS phase is measured. Skipped when the machine's hosts file has none.
#[tokio::test]
async fn hosts_file_names_go_through_the_resolver() {
    let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let name = hosts.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next() == Some("127.0.0.1"))
            .then(|| fields.find(|n| !n.contains("localhost") && !n.starts_with('#')))
            .flatten()
            .map(str::to_string)
    });
    let Some(name) = name else {
        eprintln!("no 127.0.0.1 alias in /etc/hosts; skipping");
        return;
    };
    let s = spawn_http().await;
    let o = check(&format!("http://{name}:{}/echo", s.addr.port()), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.resolved_ip, Some("127.0.0.1".parse().unwrap()));
    assert!(o.timings.unwrap().dns > 0.0, "{o:?}");
}

#[tokio::test]
async fn unresolvable_host_is_down() {
    let spec = check_spec("http://no-such-host.invalid/", json!({}));
    let o = tocsin_checks::run(&spec, &opts(3000)).await;
    assert_eq!(o.verdict, Verdict::Down, "{o:?}");
    let m = message(&o);
    assert!(
        m.contains("no-such-host.invalid") || m.contains("timed out"),
        "{o:?}"
    );
}

#[tokio::test]
async fn kept_body_is_capped_at_64_kib() {
    let s = spawn_http().await;
    let o = check(&s.url("/big"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.response_body.as_ref().unwrap().len(), 64 * 1024);
}

// ---------------------------------------------------------------------------------------------
// Assertions end to end
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn assertions_all_pass() {
    let s = spawn_http().await;
    let o = check(
        &s.url("/json"),
        json!({"assertions": [
            {"target": "header", "property": "Content-Type", "operator": "contains", "value": "json"},
            {"target": "body", "operator": "contains", "value": "\"ok\""},
            {"target": "jsonPath", "property": "$.status", "operator": "eq", "value": "ok"},
            {"target": "jsonPath", "property": "$.items", "operator": "contains", "value": 2},
            {"target": "jsonPath", "property": "$.db.latencyMs", "operator": "lt", "value": 100},
            {"target": "latency", "operator": "lt", "value": 5000},
            {"target": "statusCode", "operator": "eq", "value": 200},
            {"target": "header", "property": "set-cookie", "operator": "eq", "value": "a=1, b=2"},
            {"target": "resolvedIp", "operator": "eq", "value": "127.0.0.1"}
        ]}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.assertion_results.len(), 9);
    assert!(
        o.assertion_results.iter().all(|r| r.passed),
        "{:?}",
        o.assertion_results
    );
    assert_eq!(o.assertion_results[2].actual.as_deref(), Some("ok"));
    assert_eq!(
        o.response_headers.as_ref().unwrap()["set-cookie"],
        vec!["a=1", "b=2"]
    );
}

#[tokio::test]
async fn warn_assertion_degrades_and_fail_assertion_downs() {
    let s = spawn_http().await;
    let o = check(
        &s.url("/json"),
        json!({"assertions": [
            {"target": "statusCode", "operator": "eq", "value": 201, "severity": "warn"},
            {"target": "header", "property": "x-version", "operator": "gte", "value": 7}
        ]}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Degraded, "{o:?}");
    assert!(message(&o).contains("statusCode eq 201"), "{o:?}");
    assert!(!o.assertion_results[0].passed);
    assert_eq!(o.assertion_results[0].actual.as_deref(), Some("200"));
    assert!(o.assertion_results[1].passed);

    let o = check(
        &s.url("/json"),
        json!({"assertions": [
            {"target": "jsonPath", "property": "$.status", "operator": "eq", "value": "down"},
            {"target": "latency", "operator": "gt", "value": 60000, "severity": "warn"}
        ]}),
    )
    .await;
    assert_down_with(&o, "jsonPath $.status eq \"down\"");
    // Both failures are reported, fail first.
    assert!(message(&o).contains("latency gt 60000"), "{o:?}");
}

#[tokio::test]
async fn status_and_assertions_both_apply() {
    let s = spawn_http().await;
    let o = check(
        &s.url("/status/500"),
        json!({"assertions": [{"target": "body", "operator": "contains", "value": "500"}]}),
    )
    .await;
    assert_down_with(&o, "expected status 2xx/3xx, got 500");
    assert!(
        o.assertion_results[0].passed,
        "assertions are still evaluated and reported"
    );
}

// ---------------------------------------------------------------------------------------------
// Misbehaving targets
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn connection_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "connection refused");
    assert_eq!(o.status_code, None);
    assert!(o.timings.is_some(), "phases reached are still reported");
}

#[tokio::test]
async fn garbage_instead_of_http() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"\x00\x01\x02 this is not http at all\r\n\r\n")
            .await;
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "invalid HTTP response");
}

#[tokio::test]
async fn endless_body_is_cut_off() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await;
        let chunk = format!("10000\r\n{}\r\n", "y".repeat(0x10000));
        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
    let started = Instant::now();
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "response body larger than 8 MiB");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(o.status_code, Some(200));
    assert_eq!(o.response_body.as_ref().unwrap().len(), 64 * 1024);
}

#[tokio::test]
async fn huge_headers_fail() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n").await;
        let line = format!("X-Big: {}\r\n", "z".repeat(1000));
        for _ in 0..200 {
            if stream.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = stream.write_all(b"Content-Length: 0\r\n\r\n").await;
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "response headers too large (over 64 KiB");
}

#[tokio::test]
async fn too_many_headers_fail() {
    let addr = spawn_raw(|mut stream| async move {
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..400 {
            head.push_str(&format!("X-H{i}: v\r\n"));
        }
        head.push_str("Content-Length: 0\r\n\r\n");
        let _ = stream.write_all(head.as_bytes()).await;
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "more than 256 headers");
}

#[tokio::test]
async fn slow_drip_is_bounded_by_the_timeout() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            .await;
        for _ in 0..1000 {
            if stream.write_all(b".").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let started = Instant::now();
    let o = http::check(&spec(&format!("http://{addr}/"), json!({})), &opts(600)).await;
    assert_down_with(&o, "timed out after 600 ms");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn reset_mid_response() {
    let addr = spawn_raw(|stream| async move {
        let mut stream = stream;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial body")
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Zero linger makes close send RST instead of FIN.
        let _ = stream.set_zero_linger();
        drop(stream);
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Down, "{o:?}");
    assert!(message(&o).contains("reading the body"), "{o:?}");
    assert!(
        message(&o).contains("reset") || message(&o).contains("closed"),
        "{o:?}"
    );
    assert_eq!(o.status_code, Some(200));
}

#[tokio::test]
async fn closed_mid_body() {
    let addr = spawn_raw(|mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nshort")
            .await;
    })
    .await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_down_with(&o, "reading the body");
    assert_eq!(o.response_body.as_deref(), Some("short"));
}

#[tokio::test]
async fn closed_without_response() {
    let addr = spawn_raw(|stream| async move { drop(stream) }).await;
    let o = check(&format!("http://{addr}/"), json!({})).await;
    assert_eq!(o.verdict, Verdict::Down, "{o:?}");
    assert!(
        message(&o).contains("closed") || message(&o).contains("reset"),
        "{o:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn https_self_signed_passes_without_verification() {
    let addr = spawn_https(&certificate(None)).await;
    let url = format!("https://localhost:{}/echo", addr.port());
    let o = check(&url, json!({"tls": {"verify": false}})).await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(echoed(&o)["method"], "GET");
    let t = o.timings.unwrap();
    assert!(t.tls.is_some_and(|ms| ms > 0.0), "{t:?}");
    assert!(o.cert_days_left.unwrap() > 365, "{o:?}");
    assert_eq!(o.resolved_ip, Some("127.0.0.1".parse().unwrap()));
}

#[tokio::test]
async fn https_self_signed_fails_with_verification() {
    let addr = spawn_https(&certificate(None)).await;
    let url = format!("https://localhost:{}/echo", addr.port());
    let o = check(&url, json!({})).await;
    assert_down_with(&o, "certificate not trusted");
    assert_eq!(o.status_code, None);
    assert!(
        o.cert_days_left.is_some(),
        "the certificate is still inspected: {o:?}"
    );
    assert!(o.timings.unwrap().tls.is_some());
}

#[tokio::test]
async fn https_to_ip_literal() {
    let addr = spawn_https(&certificate(None)).await;
    let o = check(
        &format!("https://{addr}/echo"),
        json!({"tls": {"verify": false}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
}

#[tokio::test]
async fn near_expiry_certificate_degrades() {
    let addr = spawn_https(&certificate(Some(5))).await;
    let url = format!("https://localhost:{}/", addr.port());
    let o = check(
        &url,
        json!({"tls": {"verify": false}, "expect": {"statusCodes": [404]}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Degraded, "{o:?}");
    let days = o.cert_days_left.unwrap();
    assert!((4..=5).contains(&days), "{days}");
    assert!(message(&o).contains("certificate expires in"), "{o:?}");
    // Below the fail threshold it is DOWN; below neither it is UP.
    let o = check(
        &url,
        json!({"tls": {"verify": false, "certExpiryFailDays": 7}, "expect": {"statusCodes": [404]}}),
    )
    .await;
    assert_down_with(&o, "fail threshold");
    let o = check(
        &url,
        json!({"tls": {"verify": false, "certExpiryWarnDays": 2}, "expect": {"statusCodes": [404]}}),
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
}

#[tokio::test]
async fn expired_certificate_fails() {
    let addr = spawn_https(&certificate(Some(-3))).await;
    let url = format!("https://localhost:{}/", addr.port());
    let o = check(&url, json!({"tls": {"verify": false}})).await;
    assert_down_with(&o, "certificate expired");
    assert!(o.cert_days_left.unwrap() < 0);
    // With verification on, the handshake itself is refused with a certificate message.
    let o = check(&url, json!({})).await;
    assert_down_with(&o, "certificate");
}

#[tokio::test]
async fn tls_against_plain_server_fails_cleanly() {
    let s = spawn_http().await;
    let o = check(
        &format!("https://{}/", s.addr),
        json!({"tls": {"verify": false}}),
    )
    .await;
    assert_down_with(&o, "TLS handshake failed");
}

// ---------------------------------------------------------------------------------------------
// Through run(): retries and timeout
// ---------------------------------------------------------------------------------------------

fn check_spec(url: &str, config: Value) -> CheckSpec {
    let config = config.as_object().cloned().unwrap();
    let input = SpecInput {
        url: Some(url),
        host: None,
        port: None,
        config: &config,
    };
    CheckSpec::parse(MonitorKind::Http, &input).unwrap()
}

#[tokio::test]
async fn run_retries_until_up() {
    let s = spawn_http().await;
    let spec = check_spec(&s.url("/flaky/2"), json!({}));
    let o = tocsin_checks::run(
        &spec,
        &RunOptions {
            retries: 3,
            ..opts(2000)
        },
    )
    .await;
    assert_eq!(o.verdict, Verdict::Up, "{o:?}");
    assert_eq!(o.retry_count, 2);
    assert_eq!(s.hits.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn run_gives_up_after_retries() {
    let s = spawn_http().await;
    let spec = check_spec(&s.url("/flaky/5"), json!({}));
    let o = tocsin_checks::run(
        &spec,
        &RunOptions {
            retries: 1,
            ..opts(2000)
        },
    )
    .await;
    assert_down_with(&o, "got 503");
    assert_eq!(o.retry_count, 1);
    assert_eq!(s.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn run_honours_the_timeout() {
    let s = spawn_http().await;
    let spec = check_spec(&s.url("/delay/5000"), json!({}));
    let started = Instant::now();
    let o = tocsin_checks::run(&spec, &opts(400)).await;
    assert_down_with(&o, "timed out after 400 ms");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert!(o.latency >= Duration::from_millis(400));
}
