//! Durable delivery through the real `tocsin` binary: notifications are queued, their first
//! attempts fail, the server is killed with SIGKILL while the retries are in flight (sent, not
//! yet recorded), and a restart on the same data delivers every one of them. The receiver
//! deduplicates by `webhook-id`, as Standard Webhooks receivers do: every notification has
//! exactly one effect, and the history shows each one DELIVERED once.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use common::binary::{self, free_port, wait_ready};
use common::receiver::Receiver;
use common::Bearer;
use reqwest::Method;
use serde_json::{json, Value};

const N: usize = 30;

async fn delivered(api: &Bearer, channel_id: &str) -> Vec<Value> {
    let page: Value = api
        .call(
            Method::GET,
            &format!("/notification-channels/{channel_id}/deliveries?status=DELIVERED&limit=200"),
            None,
        )
        .await
        .json()
        .await
        .unwrap();
    page["deliveries"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn sigkill_mid_queue_loses_nothing_and_a_restart_resumes_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(dir.path(), "ada@example.com", "all");
    let rx = Receiver::start().await;
    rx.set_default(500);

    let port = free_port();
    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let api = Bearer::new(&format!("http://127.0.0.1:{port}"), &token);
    let ch: Value = api
        .call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "hook", "type": "WEBHOOK", "config": {"url": rx.url("/hook")}})),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = ch["id"].as_str().unwrap().to_string();
    let secret = ch["config"]["secret"].as_str().unwrap().to_string();
    for _ in 0..N {
        let res = api
            .call(
                Method::POST,
                &format!("/notification-channels/{id}/test"),
                None,
            )
            .await;
        assert_eq!(res.status(), 202);
    }
    // Every first attempt fails; the retries fall due about 5 s later. They are answered 200,
    // slowly, and the server dies while they are in flight.
    rx.wait_for(N, Duration::from_secs(10)).await;
    rx.set_delay(Duration::from_millis(400));
    rx.set_default(200);
    rx.wait_for(N + 5, Duration::from_secs(15)).await;
    binary::signal(&child, "-KILL");
    let _ = child.wait();

    let port = free_port();
    child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let api = Bearer::new(&format!("http://127.0.0.1:{port}"), &token);
    // Claims of the attempts cut short lapse after 30 s; then they are made again.
    let started = Instant::now();
    loop {
        let done = delivered(&api, &id).await;
        if done.len() >= N && rx.effects() == N {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} delivered, {} effects",
            done.len(),
            rx.effects()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let done = delivered(&api, &id).await;
    assert_eq!(
        done.len(),
        N,
        "each notification is recorded DELIVERED once"
    );
    let got = rx.received();
    let ids: HashSet<String> = got.iter().map(|r| r.header("webhook-id")).collect();
    assert_eq!(
        ids.len(),
        N,
        "one webhook-id per notification, on every attempt"
    );
    assert!(
        got.len() > 2 * N,
        "attempts cut short by the kill were made again ({} requests)",
        got.len()
    );
    assert!(got
        .iter()
        .all(|r| common::channels::verify_signature(&secret, r)));
    let pending: Value = api
        .call(
            Method::GET,
            &format!("/notification-channels/{id}/deliveries?status=PENDING"),
            None,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(pending["deliveries"], json!([]));
    binary::signal(&child, "-TERM");
    binary::wait_exit(child);
}
