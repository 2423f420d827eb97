//! `GET /monitors`, the full list, against its cached settings parts: every element is byte
//! for byte the single-monitor read, and the list follows every committed write at once —
//! edits through the API, edits that bypass this process (as another API node's would),
//! state written by check cycles and by pushes through the heartbeat writer, project
//! memberships, deletes — with and without filters.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::clock::{run_due, T0};
use common::monitors::create;
use common::target::Target;
use common::{json_of, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::Clock;
use tocsin::store::monitors;

async fn text(u: &User, path: &str) -> String {
    let res = u.call(Method::GET, path, None).await;
    assert_eq!(res.status().as_u16(), 200, "{path}");
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    res.text().await.unwrap()
}

async fn list(u: &User, query: &str) -> Vec<Value> {
    let body = text(u, &format!("/monitors{query}")).await;
    serde_json::from_str::<Value>(&body)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

fn find<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items.iter().find(|m| m["id"] == json!(id)).unwrap()
}

/// The list's body is exactly `[` + each monitor's own `GET /monitors/{id}` body + `]`.
async fn assert_list_is_the_single_reads(u: &User, query: &str) {
    let body = text(u, &format!("/monitors{query}")).await;
    let items: Value = serde_json::from_str(&body).unwrap();
    let mut expected = Vec::new();
    for id in ids(items.as_array().unwrap()) {
        expected.push(text(u, &format!("/monitors/{id}")).await);
    }
    assert_eq!(body, format!("[{}]", expected.join(",")));
}

#[tokio::test]
async fn list_is_byte_for_byte_the_single_reads_and_follows_every_write() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("list@example.com").await;
    let target = Target::start().await;
    let base = &target.base;

    let http = create(
        &u,
        json!({"name": "Caf\u{e9} \"API\"", "type": "HTTP", "url": format!("{base}/health"),
               "tags": ["Prod", "eu"], "description": "line\nbreak",
               "config": {"method": "GET", "headers": {"X-A": "1"}, "quorum": 1},
               "confirmationsRequired": 2}),
    )
    .await;
    let tcp = create(
        &u,
        json!({"name": "Database", "type": "TCP", "host": "127.0.0.1", "port": 1, "tags": ["staging"]}),
    )
    .await;
    let push = create(
        &u,
        json!({"name": "Nightly backup", "type": "PUSH", "interval": 3600, "gracePeriod": 120}),
    )
    .await;
    let dns = create(
        &u,
        json!({"name": "Records", "type": "DNS_DIFF", "host": "example.com", "timeout": 1, "config": {"recordType": "A"}}),
    )
    .await;
    let id = |m: &Value| m["id"].as_str().unwrap().to_string();
    let (http_id, tcp_id, push_id, dns_id) = (id(&http), id(&tcp), id(&push), id(&dns));
    // Paused, so the cycles below reach no real resolver.
    let res = u
        .call(Method::POST, &format!("/monitors/{dns_id}/pause"), None)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let project = json_of(
        u.call(Method::POST, "/projects", Some(json!({"name": "Core"})))
            .await,
        201,
    )
    .await;
    let project_id = project["id"].as_str().unwrap().to_string();

    // Cold, then warm: the same bytes as the single reads, in id order.
    assert_list_is_the_single_reads(&u, "").await;
    assert_list_is_the_single_reads(&u, "").await;
    assert_eq!(
        ids(&list(&u, "").await),
        vec![
            http_id.clone(),
            tcp_id.clone(),
            push_id.clone(),
            dns_id.clone()
        ]
    );

    // An edit through the API.
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{tcp_id}"),
            Some(json!({"name": "Primary database", "port": 2, "tags": ["prod"]})),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let all = list(&u, "").await;
    assert_eq!(find(&all, &tcp_id)["name"], json!("Primary database"));
    assert_eq!(find(&all, &tcp_id)["port"], json!(2));
    assert_list_is_the_single_reads(&u, "").await;

    // An edit that bypasses this process, as another API node sharing the database would
    // make it: no change notice, only the committed row and its version.
    let mut row = monitors::get(srv.state.db().reader(), &u.workspace_id, &http_id)
        .await
        .unwrap()
        .unwrap();
    row.name = "Renamed elsewhere".into();
    row.interval_s = 120;
    let rows = monitors::update_settings(srv.state.db().writer(), &row, false, None)
        .await
        .unwrap();
    assert_eq!(rows, 1);
    let all = list(&u, "").await;
    assert_eq!(find(&all, &http_id)["name"], json!("Renamed elsewhere"));
    assert_eq!(find(&all, &http_id)["interval"], json!(120));
    assert_list_is_the_single_reads(&u, "").await;

    // State written by check cycles: a failing target takes the HTTP monitor down after two
    // confirmations, with the counters and the failing run's start as the list shows them
    // (the TCP monitor's port is closed: it goes down at once).
    target.set(500);
    for _ in 0..2 {
        clock.advance_ms(120_000);
        run_due(&srv, clock.now_ms()).await;
    }
    let all = list(&u, "").await;
    let m = find(&all, &http_id);
    assert_eq!(m["status"], json!("DOWN"), "{m}");
    assert_eq!(m["consecutiveFailures"], json!(2));
    assert!(m["pendingFailureSince"].is_string(), "{m}");
    assert_list_is_the_single_reads(&u, "").await;
    assert_eq!(
        ids(&list(&u, "?status=DOWN").await),
        vec![http_id.clone(), tcp_id.clone()]
    );
    target.set(200);
    clock.advance_ms(120_000);
    run_due(&srv, clock.now_ms()).await;
    let all = list(&u, "").await;
    assert_eq!(find(&all, &http_id)["consecutiveSuccesses"], json!(1));
    assert_eq!(find(&all, &http_id)["consecutiveFailures"], json!(0));
    assert!(find(&all, &http_id)["pendingFailureSince"].is_null());

    // State written by a push through the heartbeat writer: UP and lastPushAt.
    let token = push["pushToken"].as_str().unwrap();
    let res = reqwest::Client::new()
        .post(srv.url(&format!("/push/{token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    let all = list(&u, "").await;
    assert_eq!(find(&all, &push_id)["status"], json!("UP"));
    assert_eq!(
        find(&all, &push_id)["lastPushAt"],
        json!(tocsin::clock::rfc3339(clock.now_ms()))
    );
    assert_list_is_the_single_reads(&u, "").await;

    // Project memberships change without a monitor edit.
    let res = u
        .call(
            Method::PUT,
            &format!("/projects/{project_id}/monitors"),
            Some(json!({"monitorIds": [dns_id, tcp_id]})),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let all = list(&u, "").await;
    assert_eq!(find(&all, &dns_id)["projectIds"], json!([project_id]));
    assert_eq!(find(&all, &http_id)["projectIds"], json!([]));
    assert_list_is_the_single_reads(&u, "").await;

    // Filters, on a warm cache.
    assert_eq!(
        ids(&list(&u, &format!("?projectId={project_id}")).await),
        vec![tcp_id.clone(), dns_id.clone()]
    );
    assert_eq!(
        ids(&list(&u, "?tag=prod").await),
        vec![http_id.clone(), tcp_id.clone()]
    );
    assert_eq!(ids(&list(&u, "?type=PUSH").await), vec![push_id.clone()]);
    assert_eq!(ids(&list(&u, "?search=ECORD").await), vec![dns_id.clone()]);
    assert_eq!(ids(&list(&u, "?search=nothing-like-it").await).len(), 0);
    assert_list_is_the_single_reads(&u, "?tag=prod").await;

    // Resume (an edit that also resets state) and delete.
    assert_eq!(find(&list(&u, "").await, &dns_id)["active"], json!(false));
    let res = u
        .call(Method::POST, &format!("/monitors/{push_id}/pause"), None)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let res = u
        .call(Method::POST, &format!("/monitors/{push_id}/resume"), None)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let m = find(&list(&u, "").await, &push_id).clone();
    assert_eq!(
        (m["active"].clone(), m["status"].clone()),
        (json!(true), json!("PENDING"))
    );
    let res = u
        .call(Method::DELETE, &format!("/monitors/{tcp_id}"), None)
        .await;
    assert_eq!(res.status().as_u16(), 204);
    assert_eq!(
        ids(&list(&u, "").await),
        vec![http_id.clone(), push_id.clone(), dns_id.clone()]
    );
    assert_eq!(
        ids(&list(&u, &format!("?projectId={project_id}")).await),
        vec![dns_id.clone()]
    );
    assert_list_is_the_single_reads(&u, "").await;

    // Another workspace sees none of it, and an empty list is `[]`.
    let other = srv.sign_up("other@example.com").await;
    assert_eq!(text(&other, "/monitors").await, "[]");

    drop(target);
    srv.stop().await;
}

/// Inserts `n` PING monitors through the store in one transaction (the API would take
/// minutes for this many); returns `(id, i)` pairs.
async fn bulk_insert(srv: &TestServer, u: &User, n: i64) -> Vec<(String, i64)> {
    // Inserted through the store in one transaction: the API would take minutes for this many.
    let now = srv.state.clock().now_ms();
    let mut tx = srv.state.db().begin().await.unwrap();
    let first = monitors::reserve_seqs(&mut *tx, n).await.unwrap();
    let mut expected = Vec::new();
    for i in 0..n {
        let id = tocsin::ids::new_id();
        let row = monitors::MonitorRow {
            id: id.clone(),
            seq: first + i,
            workspace_id: u.workspace_id.clone(),
            name: format!("m{i}"),
            kind_text: "PING".into(),
            status_text: if i % 7 == 0 { "DOWN" } else { "UP" }.into(),
            url: None,
            host: Some("127.0.0.1".into()),
            port: None,
            interval_s: 60,
            retries: 0,
            timeout_s: 5,
            tags: "[]".into(),
            description: None,
            config: "{}".into(),
            regions: r#"["local"]"#.into(),
            region_strategy: "all".into(),
            quorum: None,
            confirmations_required: 1,
            recovery_confirmations_required: 1,
            min_failure_duration_ms: 0,
            consecutive_failures: i % 3,
            consecutive_successes: 0,
            pending_failure_since: None,
            active: 1,
            grace_s: None,
            last_push_at: None,
            dns_baseline: None,
            status_changed_at: now,
            last_check_at: None,
            started_at: now,
            stale_since: None,
            maintenance_until: None,
            maintenance_excluded: 0,
            flap_transitions: Some(5),
            flap_window_minutes: Some(30),
            flapping_since: None,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        monitors::insert(&mut *tx, &row, None).await.unwrap();
        expected.push((id, i));
    }
    tx.commit().await.unwrap();
    expected
}

#[tokio::test]
async fn a_list_longer_than_one_slice_keeps_id_order() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("long@example.com").await;
    let n = 5_203;
    let mut expected = bulk_insert(&srv, &u, n).await;
    expected.sort();

    for _ in 0..2 {
        let all = list(&u, "").await;
        assert_eq!(all.len(), expected.len());
        for (m, (id, i)) in all.iter().zip(&expected) {
            assert_eq!(m["id"], json!(id));
            let status = if i % 7 == 0 { "DOWN" } else { "UP" };
            assert_eq!(m["status"], json!(status));
            assert_eq!(m["consecutiveFailures"], json!(i % 3));
        }
    }
    let down = list(&u, "?status=DOWN").await;
    assert_eq!(down.len(), expected.len().div_ceil(7));
    srv.stop().await;
}

// Several threads and a list that takes a few milliseconds to build, so that requests do
// arrive while a build that began before the latest write is still running: none of them may
// share that build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_lists_never_answer_from_before_the_request() {
    let srv = TestServer::start().await;
    let u = Arc::new(srv.sign_up("busy@example.com").await);
    let m = create(
        &u,
        json!({"name": "n0", "type": "HTTP", "url": "https://example.com/health"}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    bulk_insert(&srv, &u, 3_000).await;
    // Readers that keep a build running or pending at every moment.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut background = Vec::new();
    for _ in 0..3 {
        let (u, stop) = (u.clone(), stop.clone());
        background.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                list(&u, "").await;
            }
        }));
    }
    for i in 1..=15 {
        let res = u
            .call(
                Method::PATCH,
                &format!("/monitors/{id}"),
                Some(json!({"name": format!("n{i}")})),
            )
            .await;
        assert_eq!(res.status().as_u16(), 200);
        let reads = (0..3).map(|_| list(&u, ""));
        for all in futures::future::join_all(reads).await {
            assert_eq!(find(&all, &id)["name"], json!(format!("n{i}")));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for b in background {
        b.await.unwrap();
    }
    srv.stop().await;
}
