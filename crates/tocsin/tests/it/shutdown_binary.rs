//! Stopping the real `tocsin` binary with on-demand checks in flight: an accepted check is
//! never silently dropped. A check that ends within the shutdown grace is stored as usual; one
//! still running when the grace ends is stored as a PENDING heartbeat carrying its
//! `correlationId` and saying the server shut down, and the process still exits cleanly
//! within the grace and a few seconds. Both are read back after a restart on the same data.
//! Requests still draining and checks still running share **one** deadline, the grace from
//! the signal: a slow partial request and a slow check together still end within it.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::binary::{self, free_port, signal, wait_exit, wait_ready};
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
