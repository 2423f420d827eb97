//! Push ingestion through the real `tocsin` binary: a `202` means the heartbeat is committed.
//! The server is killed with SIGKILL in the middle of a stream of pushes, restarted on the
//! same data, and every push that got a `202` must be there.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::binary::{self, free_port, wait_ready};
use serde_json::{json, Value};

#[tokio::test]
async fn every_acknowledged_push_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(
        dir.path(),
        "cron@example.com",
        "monitors:read,monitors:write",
    );

    let port = free_port();
    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut monitors = Vec::new();
    for i in 0..8 {
        let m: Value = client
            .post(format!("{base}/monitors"))
            .bearer_auth(&token)
            .json(&json!({"name": format!("job {i}"), "type": "PUSH", "interval": 3600}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        monitors.push((
            m["id"].as_str().unwrap().to_string(),
            m["pushToken"].as_str().unwrap().to_string(),
        ));
    }

    // Each monitor's job pushes as fast as it can, each push with a unique key that it also
    // sends as the message; what got a 202 is noted.
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut jobs = Vec::new();
    for (m, (_, push_token)) in monitors.iter().enumerate() {
        let (acked, sent, client, base, push_token) = (
            acked.clone(),
            sent.clone(),
            client.clone(),
            base.clone(),
            push_token.clone(),
        );
        jobs.push(tokio::spawn(async move {
            // Under the 60-a-minute limit per token.
            for i in 0..58 {
                let key = format!("m{m}-push{i}");
                sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let res = client
                    .post(format!("{base}/push/{push_token}?message={key}"))
                    .header("Idempotency-Key", &key)
                    .send()
                    .await;
                match res {
                    Ok(r) if r.status() == 202 => {
                        acked.lock().unwrap().insert(key);
                    }
                    Ok(r) => panic!("unexpected answer {}", r.status()),
                    Err(_) => return,
                }
            }
        }));
    }
    // Kill mid-stream.
    while acked.lock().unwrap().len() < 100 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for j in jobs {
        j.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
    assert!(acked.len() >= 100);
    assert!(
        acked.len() < 8 * 58,
        "the kill landed mid-stream ({sent} sent)"
    );

    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let mut stored = HashSet::new();
    for (id, _) in &monitors {
        let hbs: Vec<Value> = client
            .get(format!("{base}/monitors/{id}/heartbeats?limit=1000"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for hb in hbs {
            stored.insert(hb["message"].as_str().unwrap().to_string());
        }
    }
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // Retrying an acknowledged push after the restart still collapses into the stored one.
    let (id0, token0) = &monitors[0];
    let key = acked.iter().find(|k| k.starts_with("m0-")).cloned();
    if let Some(key) = key {
        let before = stored.len();
        let r = client
            .post(format!("{base}/push/{token0}?message={key}"))
            .header("Idempotency-Key", &key)
            .send()
            .await
            .unwrap();
        // The token's minute budget may be spent; either way nothing new is stored.
        assert!(r.status() == 202 || r.status() == 429, "{}", r.status());
        let hbs: Vec<Value> = client
            .get(format!("{base}/monitors/{id0}/heartbeats?limit=1000"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let count = hbs.iter().filter(|h| h["message"] == key.as_str()).count();
        assert_eq!(count, 1, "{before} stored before");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
