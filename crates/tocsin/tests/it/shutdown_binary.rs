//! Stopping the real `tocsin` binary with on-demand checks in flight: an accepted check is
//! never silently dropped. A check that ends within the shutdown grace is stored as usual; one
//! still running when the grace ends is stored as a PENDING heartbeat carrying its
//! `correlationId` and saying the server shut down, and the process still exits cleanly
//! within the grace and a few seconds. Both are read back after a restart on the same data.
//! Requests still draining and checks still running share **one** deadline, the grace from
//! the signal: a slow partial request and a slow check together still end within it.
//!
//! Judging stops at the signal: a scheduled check that finishes after it is stored as an
//! unjudged PENDING heartbeat and opens no alert. Notifications queued before it still go out
//! before the process exits: an alert opened just before the signal, queued behind a backlog,
//! reaches its webhook within the grace.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::binary::{self, free_port, signal, wait_exit, wait_ready};
use common::receiver::Receiver;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const GRACE_SECS: u64 = 3;

/// A loopback HTTP target that reads each request, then answers `200` after `delay`, or
/// never (holding the connection open) when `delay` is `None`. Counts requests received.
async fn slow_target(delay: Option<Duration>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                s.fetch_add(1, Ordering::SeqCst);
                match delay {
                    Some(d) => {
                        tokio::time::sleep(d).await;
                        let _ = sock
                            .write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                            )
                            .await;
                    }
                    None => {
                        // Hold the request until the client gives up.
                        let _ = sock.read(&mut buf).await;
                    }
                }
            });
        }
    });
    (base, seen)
}

async fn create_paused(client: &reqwest::Client, base: &str, token: &str, url: &str) -> String {
    let m: Value = client
        .post(format!("{base}/monitors"))
        .bearer_auth(token)
        .json(
            &json!({"name": url, "type": "HTTP", "url": url, "interval": 300,
                      "timeout": 60, "active": false}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    m["id"].as_str().unwrap().to_string()
}

async fn check_now(client: &reqwest::Client, base: &str, token: &str, id: &str) -> String {
    let res = client
        .post(format!("{base}/monitors/{id}/check"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    let body: Value = res.json().await.unwrap();
    body["correlationId"].as_str().unwrap().to_string()
}

async fn get(client: &reqwest::Client, url: String, token: &str) -> Value {
    let res = client.get(url).bearer_auth(token).send().await.unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_checks_finish_or_are_stored_as_cancelled_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(
        dir.path(),
        "ops@example.com",
        "monitors:read,monitors:write",
    );
    let (late_url, late_seen) = slow_target(Some(Duration::from_millis(1500))).await;
    let (hold_url, hold_seen) = slow_target(None).await;

    let port = free_port();
    let child = binary::serve(
        dir.path(),
        port,
        &["--shutdown-grace-seconds", &GRACE_SECS.to_string()],
    );
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let late = create_paused(&client, &base, &token, &late_url).await;
    let hold = create_paused(&client, &base, &token, &hold_url).await;
    let late_cid = check_now(&client, &base, &token, &late).await;
    let hold_cid = check_now(&client, &base, &token, &hold).await;
    // Both checks have reached their targets: they are in flight.
    let started = Instant::now();
    while late_seen.load(Ordering::SeqCst) == 0 || hold_seen.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "checks never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let stopping = Instant::now();
    signal(&child, "-TERM");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    let took = stopping.elapsed();
    assert!(status.success(), "exit status {status}");
    assert!(
        took >= Duration::from_millis(1000),
        "the finishing check was waited for ({took:?})"
    );
    assert!(
        took < Duration::from_secs(GRACE_SECS + 4),
        "stopped within the grace and a few seconds ({took:?})"
    );

    // Restarted on the same data, both checks are there.
    let mut child = binary::serve(
        dir.path(),
        port,
        &["--shutdown-grace-seconds", &GRACE_SECS.to_string()],
    );
    wait_ready(port).await;
    let hbs = get(
        &client,
        format!("{base}/monitors/{late}/heartbeats?correlationId={late_cid}"),
        &token,
    )
    .await;
    let hbs = hbs.as_array().unwrap();
    assert_eq!(hbs.len(), 1, "{hbs:?}");
    assert_eq!(hbs[0]["status"], "UP");

    let hbs = get(
        &client,
        format!("{base}/monitors/{hold}/heartbeats?correlationId={hold_cid}"),
        &token,
    )
    .await;
    let hbs = hbs.as_array().unwrap();
    assert_eq!(hbs.len(), 1, "{hbs:?}");
    assert_eq!(hbs[0]["status"], "PENDING");
    let message = hbs[0]["message"].as_str().unwrap();
    assert!(message.contains("cancelled"), "{message}");
    assert!(message.contains("shut down"), "{message}");
    assert_eq!(hbs[0]["region"], "local");
    // The cancelled check moved nothing on its monitor.
    let m = get(&client, format!("{base}/monitors/{hold}"), &token).await;
    assert_eq!(m["status"], "PENDING");
    assert_eq!(m["consecutiveFailures"], 0);
    assert_eq!(m["consecutiveSuccesses"], 0);

    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_and_a_slow_check_share_one_shutdown_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(
        dir.path(),
        "ops@example.com",
        "monitors:read,monitors:write",
    );
    let (hold_url, hold_seen) = slow_target(None).await;
    let port = free_port();
    // Long request timeouts, so only the shutdown deadline can end the partial request.
    let args = [
        "--shutdown-grace-seconds",
        &GRACE_SECS.to_string(),
        "--header-read-timeout-seconds",
        "60",
        "--body-timeout-seconds",
        "60",
    ];
    let child = binary::serve(dir.path(), port, &args);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let hold = create_paused(&client, &base, &token, &hold_url).await;
    let hold_cid = check_now(&client, &base, &token, &hold).await;
    let started = Instant::now();
    while hold_seen.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "check never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A request whose body never finishes arriving: it holds its connection busy until the
    // shutdown deadline closes it.
    let mut partial = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    partial
        .write_all(
            format!(
                "POST /monitors HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\n\
                 content-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"name\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let stopping = Instant::now();
    signal(&child, "-TERM");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    let took = stopping.elapsed();
    assert!(status.success(), "exit status {status}");
    // Both were waited for until the deadline ...
    assert!(
        took >= Duration::from_millis(GRACE_SECS * 1000 - 200),
        "the grace was given ({took:?})"
    );
    // ... which they shared: one grace, not one after the other.
    assert!(
        took < Duration::from_secs(GRACE_SECS + 2),
        "stopped within one grace and a little closing time ({took:?})"
    );
    // The partial request's connection was closed.
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(1), partial.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "partial request still open: {closed:?}"
    );

    // The check that ran into the deadline is stored as cancelled.
    let mut child = binary::serve(dir.path(), port, &args);
    wait_ready(port).await;
    let hbs = get(
        &client,
        format!("{base}/monitors/{hold}/heartbeats?correlationId={hold_cid}"),
        &token,
    )
    .await;
    let hbs = hbs.as_array().unwrap();
    assert_eq!(hbs.len(), 1, "{hbs:?}");
    assert_eq!(hbs[0]["status"], "PENDING");
    let message = hbs[0]["message"].as_str().unwrap();
    assert!(message.contains("cancelled"), "{message}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A loopback HTTP target that answers every request `500` after `delay`; counts requests.
async fn slow_failing_target(delay: Duration) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                let _ = sock
                    .write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfail",
                    )
                    .await;
            });
        }
    });
    (base, seen)
}

async fn webhook_channel(client: &reqwest::Client, base: &str, token: &str, url: &str) -> String {
    let res = client
        .post(format!("{base}/notification-channels"))
        .bearer_auth(token)
        .json(&json!({"name": "hook", "type": "WEBHOOK", "config": {"url": url}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let ch: Value = res.json().await.unwrap();
    ch["id"].as_str().unwrap().to_string()
}

/// The `alert.opened` webhooks the receiver got.
fn alerts_received(rx: &Receiver) -> Vec<Value> {
    rx.received()
        .iter()
        .map(|r| r.json())
        .filter(|b| b["type"] == "alert.opened")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_finishing_after_sigterm_is_stored_unjudged_and_opens_no_alert() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(dir.path(), "ops@example.com", "all");
    std::fs::write(dir.path().join("read.toml"), "scheduler = false\n").unwrap();
    let rx = Receiver::start().await;
    let (target, seen) = slow_failing_target(Duration::from_millis(2_000)).await;
    let port = free_port();
    let child = binary::serve(dir.path(), port, &["--shutdown-grace-seconds", "6"]);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let ch = webhook_channel(&client, &base, &token, &rx.url("/hook")).await;
    let res = client
        .post(format!("{base}/monitors"))
        .bearer_auth(&token)
        .json(
            &json!({"name": "slow", "type": "HTTP", "url": target, "interval": 10,
                      "timeout": 5, "confirmationsRequired": 1,
                      "notificationChannelIds": [ch]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The first scheduled check reaches the target within one interval; it fails 2 s later.
    let started = Instant::now();
    while seen.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the check never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal(&child, "-TERM");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    assert!(status.success(), "exit status {status}");
    assert!(
        alerts_received(&rx).is_empty(),
        "no alert sent: {:?}",
        rx.received().len()
    );

    // Read back without a scheduler, so nothing is checked again.
    let mut child = binary::serve(dir.path(), port, &["--config", "read.toml"]);
    wait_ready(port).await;
    let alerts = get(&client, format!("{base}/alerts"), &token).await["alerts"].clone();
    let alerts = alerts.as_array().unwrap();
    assert!(
        alerts.is_empty(),
        "no alert opened after the signal: {alerts:?}"
    );
    let m = get(&client, format!("{base}/monitors/{id}"), &token).await;
    assert_eq!(m["status"], "PENDING", "{m}");
    assert_eq!(m["consecutiveFailures"], 0);
    let hbs = get(&client, format!("{base}/monitors/{id}/heartbeats"), &token).await;
    let hbs = hbs.as_array().unwrap();
    assert_eq!(hbs.len(), 1, "the check cut short is kept: {hbs:?}");
    assert_eq!(hbs[0]["status"], "PENDING");
    let message = hbs[0]["message"].as_str().unwrap();
    assert!(message.contains("not judged"), "{message}");
    assert!(message.contains("DOWN"), "what it saw: {message}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_opened_just_before_sigterm_is_delivered_before_exit() {
    const BACKLOG: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(dir.path(), "ops@example.com", "all");
    let rx = Receiver::start().await;
    // Each answer takes a while: the backlog below outlasts the moment of the signal.
    rx.set_delay(Duration::from_millis(1_500));
    let port = free_port();
    let child = binary::serve(dir.path(), port, &["--shutdown-grace-seconds", "8"]);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let ch = webhook_channel(&client, &base, &token, &rx.url("/hook")).await;
    let res = client
        .post(format!("{base}/monitors"))
        .bearer_auth(&token)
        .json(&json!({"name": "job", "type": "PUSH", "interval": 3600,
                      "notificationChannelIds": [ch]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let push_token = res.json::<Value>().await.unwrap()["pushToken"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..BACKLOG {
        let res = client
            .post(format!("{base}/notification-channels/{ch}/test"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202);
    }
    // The job reports failure: the alert opens, its notification queued behind the backlog.
    let res = client
        .post(format!(
            "{base}/push/{push_token}?status=down&msg=backup%20failed"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    signal(&child, "-TERM");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    assert!(status.success(), "exit status {status}");
    let opened = alerts_received(&rx);
    assert_eq!(
        opened.len(),
        1,
        "the alert went out before exit ({} requests received)",
        rx.count()
    );
    assert_eq!(
        rx.effects(),
        BACKLOG + 1,
        "everything queued before the signal went out"
    );
}
