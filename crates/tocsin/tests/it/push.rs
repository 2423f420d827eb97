//! Push ingestion end to end, over real HTTP: `POST /push/{token}` and its answers, status and
//! message rules, Idempotency-Key retries, the per-token rate limit, token regeneration and
//! deletion, paused monitors, and missed check-ins found by the watcher with a driven clock
//! (`push::watcher::run_due`) and once on the real clock. The SIGKILL durability proof and the
//! real-binary checks live in `push_binary.rs`.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::clock::T0;
use common::monitors::{events, heartbeats, monitor, push, push_monitor};
use common::{expect_error, json_of, Options, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::Clock;
use tocsin::push::watcher;

async fn push_with_key(srv: &TestServer, token: &str, key: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(srv.url(&format!("/push/{token}")))
        .header("Idempotency-Key", key)
        .send()
        .await
        .unwrap()
}

async fn accepted(res: reqwest::Response) {
    assert_eq!(json_of(res, 202).await, json!({"ok": true}));
}

#[tokio::test]
async fn push_answers_202_and_records_a_heartbeat_with_its_message() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("push@example.com").await;
    let (id, token) = push_monitor(&u, json!({})).await;
    assert!(token.len() >= 43, "at least 32 random bytes: {token}");

    // The first push brings the monitor from PENDING to UP; unknown parameters are ignored
    // and a body is ignored too.
    let res = reqwest::Client::new()
        .post(srv.url(&format!(
            "/push/{token}?msg=backup%20ok&foo=bar&duration=12"
        )))
        .body("anything at all")
        .send()
        .await
        .unwrap();
    accepted(res).await;
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], "UP");
    assert_eq!(m["lastPushAt"], "2023-11-14T22:13:20.000Z");
    assert_eq!(m["pushToken"], Value::Null, "never shown again");
    let hbs = heartbeats(&u, &id, "?limit=1000").await;
    assert_eq!(hbs.len(), 1);
    assert_eq!(hbs[0]["status"], "UP");
    assert_eq!(hbs[0]["message"], "backup ok");

    // `message` wins over `msg`; status is case-insensitive.
    clock.advance_ms(1_000);
    accepted(push(&srv, &token, "?status=Up&msg=alias&message=primary").await).await;
    let hbs = heartbeats(&u, &id, "?limit=1000").await;
    assert_eq!(hbs[0]["message"], "primary");

    // A long message is cut, never refused.
    clock.advance_ms(1_000);
    let long = "x".repeat(10_000);
    accepted(push(&srv, &token, &format!("?message={long}")).await).await;
    let hbs = heartbeats(&u, &id, "?limit=1000").await;
    assert_eq!(hbs[0]["message"].as_str().unwrap().len(), 4096);
    assert_eq!(hbs.len(), 3);

    // Any other status value is a validation error on `status`, and records nothing.
    let body = expect_error(
        push(&srv, &token, "?status=failed").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "status");
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 3);
    srv.stop().await;
}

#[tokio::test]
async fn status_down_goes_down_at_once_and_up_recovers() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("down@example.com").await;
    // Confirmations and a minimum duration would delay a checked monitor; a push skips both.
    let (id, token) = push_monitor(
        &u,
        json!({"confirmationsRequired": 5, "minFailureDurationMs": 600000}),
    )
    .await;
    accepted(push(&srv, &token, "").await).await;
    clock.advance_ms(1_000);
    accepted(push(&srv, &token, "?status=DOWN&message=disk%20full").await).await;
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], "DOWN");
    assert_eq!(m["consecutiveFailures"], 1);
    let evs = events(&u, &id).await;
    let down = evs
        .iter()
        .find(|e| e["kind"] == "down")
        .expect("a down event");
    assert_eq!(down["message"], "disk full");
    assert_eq!(
        heartbeats(&u, &id, "?limit=1000").await[0]["status"],
        "DOWN"
    );

    clock.advance_ms(1_000);
    accepted(push(&srv, &token, "?status=up").await).await;
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], "UP");
    assert!(events(&u, &id).await.iter().any(|e| e["kind"] == "up"));
    srv.stop().await;
}

#[tokio::test]
async fn unknown_old_and_regenerated_tokens_are_not_found() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("tokens@example.com").await;
    let (id, token) = push_monitor(&u, json!({})).await;
    let body = expect_error(
        push(&srv, "no-such-token", "").await,
        404,
        "PUSH_TOKEN_NOT_FOUND",
    )
    .await;
    // Tokens cannot be listed (they are stored hashed): the message points to the monitor's
    // page, where the URL can be regenerated.
    let message = body["message"].as_str().unwrap();
    assert!(!message.contains("list"), "{message}");
    assert!(message.contains("monitor's page"), "{message}");
    accepted(push(&srv, &token, "").await).await;

    let res = u
        .call(
            Method::POST,
            &format!("/monitors/{id}/regenerate-push-token"),
            None,
        )
        .await;
    let new_token = json_of(res, 200).await["pushToken"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_token, token);
    // The old token was cached by the first push: it still stops at once.
    expect_error(push(&srv, &token, "").await, 404, "PUSH_TOKEN_NOT_FOUND").await;
    accepted(push(&srv, &new_token, "").await).await;

    let res = u
        .call(Method::DELETE, &format!("/monitors/{id}"), None)
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        push(&srv, &new_token, "").await,
        404,
        "PUSH_TOKEN_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn idempotency_key_collapses_retries_and_malformed_keys_are_ignored() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("idem@example.com").await;
    let (id, token) = push_monitor(&u, json!({})).await;
    let (other_id, other_token) = push_monitor(&u, json!({"name": "other"})).await;

    for _ in 0..3 {
        accepted(push_with_key(&srv, &token, "run-2023-11-14").await).await;
        clock.advance_ms(10);
    }
    assert_eq!(
        heartbeats(&u, &id, "?limit=1000").await.len(),
        1,
        "retries collapse"
    );
    // Concurrent retries collapse too.
    let tasks: Vec<_> = (0..5)
        .map(|_| push_with_key(&srv, &token, "concurrent-key"))
        .collect();
    for res in futures::future::join_all(tasks).await {
        accepted(res).await;
    }
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 2);
    // The same key on another monitor is another push.
    accepted(push_with_key(&srv, &other_token, "run-2023-11-14").await).await;
    assert_eq!(heartbeats(&u, &other_id, "?limit=1000").await.len(), 1);
    // Malformed keys (too long, not printable ASCII) are ignored: each push counts.
    let long = "k".repeat(201);
    accepted(push_with_key(&srv, &token, &long).await).await;
    accepted(push_with_key(&srv, &token, &long).await).await;
    let res = reqwest::Client::new()
        .post(srv.url(&format!("/push/{token}")))
        .header(
            "Idempotency-Key",
            reqwest::header::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        )
        .send()
        .await
        .unwrap();
    accepted(res).await;
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 5);
    // A 200-character key is honoured.
    let max = "m".repeat(200);
    accepted(push_with_key(&srv, &token, &max).await).await;
    accepted(push_with_key(&srv, &token, &max).await).await;
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 6);

    // Past the 24-hour window the key counts as new.
    clock.advance_ms(24 * 3_600_000 + 1_000);
    accepted(push_with_key(&srv, &token, "run-2023-11-14").await).await;
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 7);
    srv.stop().await;
}

#[tokio::test]
async fn the_61st_push_in_a_minute_is_rate_limited_and_not_recorded() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("rate@example.com").await;
    let (id, token) = push_monitor(&u, json!({})).await;
    let (_, other) = push_monitor(&u, json!({"name": "other"})).await;
    let client = reqwest::Client::new();
    // The budget refills one push a second on the wall clock, so the 60 go out together: sent
    // one after another on a loaded machine they could take long enough to earn the 61st.
    let sends = (0..60).map(|i| {
        client
            .post(srv.url(&format!("/push/{token}")))
            .header("Idempotency-Key", format!("k{i}"))
            .send()
    });
    for (i, res) in futures::future::join_all(sends)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(res.unwrap().status(), 202, "push {i}");
    }
    let res = client
        .post(srv.url(&format!("/push/{token}")))
        .header("Idempotency-Key", "k60")
        .send()
        .await
        .unwrap();
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    expect_error(res, 429, "RATE_LIMITED").await;
    assert_eq!(
        heartbeats(&u, &id, "?limit=1000").await.len(),
        60,
        "the 61st is not recorded"
    );
    // Another token has its own budget.
    accepted(push(&srv, &other, "").await).await;
    srv.stop().await;
}

#[tokio::test]
async fn paused_monitors_record_pushes_without_changing_status() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("paused@example.com").await;
    let (id, token) = push_monitor(&u, json!({"gracePeriod": 0})).await;
    let res = u
        .call(Method::POST, &format!("/monitors/{id}/pause"), None)
        .await;
    assert_eq!(res.status(), 200);
    accepted(push(&srv, &token, "?status=down").await).await;
    let m = monitor(&u, &id).await;
    assert_eq!(m["active"], false);
    assert_eq!(m["status"], "PENDING");
    assert!(m["lastPushAt"].is_string());
    assert!(events(&u, &id).await.is_empty());
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 1);
    // Silence while paused never pages.
    clock.advance_ms(3_600_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    assert_eq!(monitor(&u, &id).await["status"], "PENDING");

    // Resuming starts the expectation afresh from that moment.
    let res = u
        .call(Method::POST, &format!("/monitors/{id}/resume"), None)
        .await;
    assert_eq!(res.status(), 200);
    clock.advance_ms(59_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.advance_ms(2_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    srv.stop().await;
}

#[tokio::test]
async fn missed_check_in_goes_down_after_the_grace_period() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("missed@example.com").await;
    let (id, token) = push_monitor(&u, json!({"interval": 60, "gracePeriod": 30})).await;
    accepted(push(&srv, &token, "").await).await;
    assert_eq!(monitor(&u, &id).await["status"], "UP");

    // Expected at T0+60 s, grace until T0+90 s: nothing before, DOWN after.
    clock.set_ms(T0 + 90_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    clock.set_ms(T0 + 90_001);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], "DOWN");
    let evs = events(&u, &id).await;
    let down: Vec<_> = evs.iter().filter(|e| e["kind"] == "down").collect();
    assert_eq!(down.len(), 1);
    assert_eq!(
        down[0]["message"],
        "no push received within the grace period"
    );
    let hbs = heartbeats(&u, &id, "?limit=1000").await;
    assert_eq!(hbs[0]["status"], "DOWN");
    assert_eq!(
        hbs[0]["message"],
        "no push received within the grace period"
    );

    // A second pass at the same moment records nothing more.
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    // Still silent at the next expected check-in: another DOWN heartbeat, no second event.
    clock.set_ms(T0 + 150_001);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(heartbeats(&u, &id, "?limit=1000").await.len(), 3);
    assert_eq!(
        events(&u, &id)
            .await
            .iter()
            .filter(|e| e["kind"] == "down")
            .count(),
        1
    );
    // A long silence is one more heartbeat, not one per missed minute.
    clock.set_ms(T0 + 24 * 3_600_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );

    // The job comes back: UP, and the deadline counts from that push.
    clock.advance_ms(1_000);
    accepted(push(&srv, &token, "").await).await;
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    clock.advance_ms(90_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.advance_ms(1);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_monitor_that_never_pushed_goes_down_after_interval_and_grace() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("never@example.com").await;
    let (id, _) = push_monitor(&u, json!({"interval": 60})).await;
    // Default grace: 60 s.
    clock.set_ms(T0 + 120_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.set_ms(T0 + 120_001);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    srv.stop().await;
}

#[tokio::test]
async fn weekday_cron_jobs_do_not_page_on_the_weekend() {
    // Friday 2023-11-17 00:00 UTC.
    let friday = 1_700_179_200_000;
    let (srv, clock) = TestServer::with_clock(friday).await;
    let u = srv.sign_up("cron@example.com").await;
    let (id, token) = push_monitor(
        &u,
        json!({"config": {"schedule": "0 2 * * 1-5", "timezone": "Europe/Berlin"}, "gracePeriod": 1800}),
    )
    .await;
    // Friday's run: 02:00 Berlin = 01:00 UTC; it pushes at 01:05 UTC.
    clock.set_ms(friday + 65 * 60_000);
    accepted(push(&srv, &token, "").await).await;
    // The whole weekend passes in silence: nobody is paged.
    for hours in [6, 24, 30, 48, 60, 71] {
        clock.set_ms(friday + hours * 3_600_000);
        assert_eq!(
            watcher::run_due(srv.state.runner(), clock.now_ms())
                .await
                .unwrap(),
            0,
            "{hours} h after Friday 00:00"
        );
    }
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    // Monday's run is expected at 01:00 UTC with 30 min grace: 01:30 passes, it is DOWN.
    let monday = friday + 3 * 24 * 3_600_000;
    clock.set_ms(monday + 90 * 60_000);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.set_ms(monday + 90 * 60_000 + 1);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    srv.stop().await;
}

#[tokio::test]
async fn a_push_racing_the_deadline_wins_over_the_miss() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("race@example.com").await;
    let (id, token) = push_monitor(&u, json!({"interval": 60, "gracePeriod": 0})).await;
    accepted(push(&srv, &token, "").await).await;
    // The watcher loaded its deadlines, then the job pushed just before the miss was written.
    let mut deadlines = watcher::load(srv.state.cx()).await.unwrap();
    clock.set_ms(T0 + 60_500);
    accepted(push(&srv, &token, "").await).await;
    assert_eq!(
        watcher::fire_due(srv.state.runner(), &mut deadlines, clock.now_ms())
            .await
            .unwrap(),
        0
    );
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    srv.stop().await;
}

#[tokio::test]
async fn real_time_missed_check_in_with_zero_grace() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.scheduler_enabled = true;
            c.min_interval_seconds = 1;
        })),
    })
    .await;
    let u = srv.sign_up("realtime@example.com").await;
    let (id, token) = push_monitor(&u, json!({"interval": 1, "gracePeriod": 0})).await;
    accepted(push(&srv, &token, "").await).await;
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    // Keep pushing: the monitor stays UP.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        accepted(push(&srv, &token, "").await).await;
    }
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    // Fall silent: DOWN a little after one second, with the down event.
    let silent = Instant::now();
    let mut status = Value::Null;
    while silent.elapsed() < Duration::from_secs(10) {
        status = monitor(&u, &id).await["status"].clone();
        if status == "DOWN" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "DOWN");
    assert!(
        silent.elapsed() >= Duration::from_millis(900),
        "not before the deadline"
    );
    assert!(events(&u, &id).await.iter().any(|e| e["kind"] == "down"));
    srv.stop().await;
}

#[tokio::test]
async fn get_and_head_check_in_like_post() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("curl@example.com").await;
    let (id, token) = push_monitor(&u, json!({})).await;
    let client = reqwest::Client::new();
    // `curl -fsS URL`: a GET with the query's message.
    let res = client
        .get(srv.url(&format!("/push/{token}?msg=from%20curl")))
        .send()
        .await
        .unwrap();
    accepted(res).await;
    clock.advance_ms(1_000);
    // HEAD: the same check-in, answered without a body.
    let res = client
        .head(srv.url(&format!("/push/{token}?status=down&message=head")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 202);
    assert!(res.bytes().await.unwrap().is_empty());
    let hbs = heartbeats(&u, &id, "?limit=10").await;
    let messages: Vec<&str> = hbs.iter().map(|h| h["message"].as_str().unwrap()).collect();
    assert_eq!(messages, ["head", "from curl"]);
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    // An unknown token answers GET as it answers POST.
    let res = client
        .get(srv.url("/push/no-such-token"))
        .send()
        .await
        .unwrap();
    expect_error(res, 404, "PUSH_TOKEN_NOT_FOUND").await;
    srv.stop().await;
}
