//! Escalation policies through the real API: CRUD with the exact record, version locks and
//! validation with exact fields; steps firing on the driven clock (counted from the alert's
//! opening), stopping on acknowledgement, the reached channels told of acknowledgement and
//! resolution; and a restart (a new server on the same database) escalating on schedule.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::alerting::{channel, pairs, queued, want, Chan};
use common::clock::{tick, T0};
use common::monitors::{create, get};
use common::target::Target;
use common::{expect_error, json_of, Bearer, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::escalation;
use tocsin::clock::Clock;

const MINUTE: i64 = 60_000;

async fn create_policy(u: &User, body: Value) -> Value {
    json_of(
        u.call(Method::POST, "/escalation-policies", Some(body))
            .await,
        201,
    )
    .await
}

async fn field_errors(res: reqwest::Response) -> Vec<String> {
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    let mut f: Vec<String> = body["flattened"]["fieldErrors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    f.sort();
    f
}

#[tokio::test]
async fn policy_crud_with_the_exact_record_version_locks_and_validation() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("policies@example.com").await;
    let ws = u.workspace_id.clone();
    let a = channel(&srv, &ws, Chan::default()).await;
    let b = channel(&srv, &ws, Chan::default()).await;

    let p = create_policy(
        &u,
        json!({"name": "  On call  ", "steps": [
            {"delayMinutes": 0, "notificationChannelIds": [a]},
            {"delayMinutes": 15, "notificationChannelIds": [a, b]}]}),
    )
    .await;
    let id = p["id"].as_str().unwrap().to_string();
    let mut keys: Vec<&String> = p.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "createdAt",
            "id",
            "name",
            "steps",
            "updatedAt",
            "workspaceId"
        ]
    );
    assert_eq!(p["workspaceId"], json!(ws));
    assert_eq!(p["name"], "On call");
    let steps = p["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for (i, s) in steps.iter().enumerate() {
        let mut k: Vec<&String> = s.as_object().unwrap().keys().collect();
        k.sort();
        assert_eq!(
            k,
            ["delayMinutes", "id", "notificationChannelIds", "stepOrder"]
        );
        assert_eq!(s["stepOrder"], json!(i + 1));
        assert!(s["id"].is_string());
    }
    assert_eq!(steps[1]["delayMinutes"], 15);
    assert_eq!(steps[1]["notificationChannelIds"], json!([a, b]));

    // GET with its ETag; the list is a plain array.
    let res = u
        .call(Method::GET, &format!("/escalation-policies/{id}"), None)
        .await;
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(json_of(res, 200).await, p);
    let list = get(&u, "/escalation-policies").await;
    assert_eq!(list, json!([p]));

    // PATCH replaces the steps; a stale If-Match is a conflict.
    let res = u
        .client
        .patch(srv.url(&format!("/escalation-policies/{id}")))
        .header("If-Match", &etag)
        .json(&json!({"steps": [{"delayMinutes": 5, "notificationChannelIds": [b]}]}))
        .send()
        .await
        .unwrap();
    let new_etag = res.headers()["etag"].to_str().unwrap().to_string();
    assert_ne!(new_etag, etag);
    let patched = json_of(res, 200).await;
    assert_eq!(patched["name"], "On call");
    assert_eq!(
        patched["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["stepOrder"].clone(), s["delayMinutes"].clone()))
            .collect::<Vec<_>>(),
        [(json!(1), json!(5))]
    );
    let res = u
        .client
        .patch(srv.url(&format!("/escalation-policies/{id}")))
        .header("If-Match", &etag)
        .json(&json!({"name": "late"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;

    // Validation, with exact fields, and nothing stored.
    let post = |body: Value| u.call(Method::POST, "/escalation-policies", Some(body));
    assert_eq!(
        field_errors(post(json!({"name": "x", "steps": []})).await).await,
        ["steps"]
    );
    assert_eq!(
        field_errors(
            post(json!({"name": "x", "steps": [
                {"delayMinutes": 0, "notificationChannelIds": [a]},
                {"delayMinutes": 10, "notificationChannelIds": [a, "nope"]}]}))
            .await
        )
        .await,
        ["steps.1.notificationChannelIds.1"]
    );
    assert_eq!(
        field_errors(
            post(
                json!({"name": " ", "steps": [{"delayMinutes": 0, "notificationChannelIds": [a]}]})
            )
            .await
        )
        .await,
        ["name"]
    );
    assert_eq!(
        field_errors(
            post(json!({"name": "x", "steps": [
                {"delayMinutes": -1, "notificationChannelIds": [a]},
                {"delayMinutes": 10, "notificationChannelIds": []},
                {"delayMinutes": 10, "notificationChannelIds": [b, b]}]}))
            .await
        )
        .await,
        [
            "steps.0.delayMinutes",
            "steps.1.notificationChannelIds",
            "steps.2.delayMinutes"
        ]
    );
    assert_eq!(
        field_errors(
            post(json!({"name": "x", "steps": [{"delayMinutes": 0, "notificationChannelIds": [b, b]}]}))
                .await
        )
        .await,
        ["steps.0.notificationChannelIds.1"]
    );
    let many: Vec<Value> = (0..11)
        .map(|i| json!({"delayMinutes": i, "notificationChannelIds": [a]}))
        .collect();
    assert_eq!(
        field_errors(post(json!({"name": "x", "steps": many})).await).await,
        ["steps"]
    );
    assert_eq!(
        field_errors(post(json!({"name": "x"})).await).await,
        ["steps"]
    );
    // A channel of another workspace is unknown here.
    let other = srv.sign_up("policies-other@example.com").await;
    let foreign = channel(&srv, &other.workspace_id, Chan::default()).await;
    assert_eq!(
        field_errors(
            post(json!({"name": "x", "steps": [{"delayMinutes": 0, "notificationChannelIds": [foreign]}]}))
                .await
        )
        .await,
        ["steps.0.notificationChannelIds.0"]
    );
    assert_eq!(
        get(&u, "/escalation-policies")
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );
    expect_error(
        other
            .call(Method::GET, &format!("/escalation-policies/{id}"), None)
            .await,
        404,
        "ESCALATION_POLICY_NOT_FOUND",
    )
    .await;

    // Capabilities: notifications:read / write / delete.
    let reader = Bearer::new(&srv.base, &u.token(&["notifications:read"]).await);
    assert_eq!(
        reader
            .call(Method::GET, "/escalation-policies", None)
            .await
            .status(),
        200
    );
    expect_error(
        reader
            .call(Method::DELETE, &format!("/escalation-policies/{id}"), None)
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let monitors_only = Bearer::new(&srv.base, &u.token(&["monitors:read"]).await);
    expect_error(
        monitors_only
            .call(Method::GET, "/escalation-policies", None)
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;

    // DELETE 204, then not found.
    let res = u
        .call(Method::DELETE, &format!("/escalation-policies/{id}"), None)
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        u.call(Method::GET, &format!("/escalation-policies/{id}"), None)
            .await,
        404,
        "ESCALATION_POLICY_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

/// One HTTP monitor with its own channel and a policy of three steps (0, 5 and 15 minutes);
/// returns (own, step1, step2, step3 channel ids, monitor id).
async fn escalating(srv: &TestServer, u: &User, target: &Target) -> [String; 5] {
    let ws = &u.workspace_id;
    let own = channel(srv, ws, Chan::default()).await;
    let s1 = channel(srv, ws, Chan::default()).await;
    let s2 = channel(srv, ws, Chan::default()).await;
    let s3 = channel(srv, ws, Chan::default()).await;
    let policy = create_policy(
        u,
        json!({"name": "night", "steps": [
            {"delayMinutes": 0, "notificationChannelIds": [s1]},
            {"delayMinutes": 5, "notificationChannelIds": [s2]},
            {"delayMinutes": 15, "notificationChannelIds": [s3]}]}),
    )
    .await;
    let m = create(
        u,
        json!({"name": "api", "type": "HTTP", "url": format!("{}/", target.base),
               "interval": 10, "timeout": 5, "notificationChannelIds": [own],
               "escalationPolicyId": policy["id"]}),
    )
    .await;
    [own, s1, s2, s3, m["id"].as_str().unwrap().to_string()]
}

fn at(ms: i64) -> Value {
    json!(tocsin::clock::rfc3339(ms))
}

#[tokio::test]
async fn steps_fire_on_the_clock_and_stop_on_acknowledgement() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("escalate@example.com").await;
    let ws = u.workspace_id.clone();
    let [own, s1, s2, s3, _] = escalating(&srv, &u, &target).await;
    target.set(500);
    tick(&srv, &clock).await;
    let opened = clock.now_ms();
    let alert = get(&u, "/alerts").await["alerts"][0].clone();
    let alert_id = alert["id"].as_str().unwrap().to_string();
    assert_eq!(alert["openedAt"], at(opened));
    // Step 1 (delay 0) is notified with the opening.
    assert_eq!(alert["escalationStep"], 1);
    assert_eq!(alert["nextEscalationAt"], at(opened + 5 * MINUTE));
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[(&own, "alert.opened"), (&s1, "alert.opened")])
    );

    // Nothing before its time; step 2 at opened + 5 min.
    clock.set_ms(opened + 5 * MINUTE - 1);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.set_ms(opened + 5 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    let a = get(&u, &format!("/alerts/{alert_id}")).await;
    assert_eq!(a["escalationStep"], 2);
    assert_eq!(a["nextEscalationAt"], at(opened + 15 * MINUTE));
    let q = queued(&srv, &ws).await;
    assert_eq!(
        pairs(&q),
        want(&[
            (&own, "alert.opened"),
            (&s1, "alert.opened"),
            (&s2, "alert.escalated"),
        ])
    );
    let escalated = q.iter().find(|d| d.event == "alert.escalated").unwrap();
    assert_eq!(escalated.payload["data"]["alert"]["escalationStep"], 2);
    assert_eq!(escalated.alert_id.as_deref(), Some(alert_id.as_str()));

    // Acknowledged: escalation stops, and the channels reached hear of it.
    clock.advance_ms(MINUTE);
    let acked = json_of(
        u.call(
            Method::POST,
            &format!("/alerts/{alert_id}/acknowledge"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(acked["nextEscalationAt"], Value::Null);
    assert_eq!(acked["escalationStep"], 2);
    clock.set_ms(opened + 60 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    let reached = want(&[
        (&own, "alert.opened"),
        (&s1, "alert.opened"),
        (&s2, "alert.escalated"),
        (&own, "alert.acknowledged"),
        (&s1, "alert.acknowledged"),
        (&s2, "alert.acknowledged"),
    ]);
    assert_eq!(pairs(&queued(&srv, &ws).await), reached);
    assert!(queued(&srv, &ws).await.iter().all(|d| d.channel_id != s3));

    // Resolution tells the same channels.
    target.set(200);
    tick(&srv, &clock).await;
    let mut resolved = reached.clone();
    resolved.extend(want(&[
        (&own, "alert.resolved"),
        (&s1, "alert.resolved"),
        (&s2, "alert.resolved"),
    ]));
    resolved.sort();
    assert_eq!(pairs(&queued(&srv, &ws).await), resolved);
    srv.stop().await;
}

#[tokio::test]
async fn an_unacknowledged_alert_walks_every_step_and_resolution_stops_it() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("walk@example.com").await;
    let ws = u.workspace_id.clone();
    let [own, s1, s2, s3, _] = escalating(&srv, &u, &target).await;
    target.set(500);
    tick(&srv, &clock).await;
    let opened = clock.now_ms();
    // A worker that was away for an hour owes both later steps: each fires once.
    clock.set_ms(opened + 60 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        2
    );
    let a = get(&u, "/alerts").await["alerts"][0].clone();
    assert_eq!(a["escalationStep"], 3);
    assert_eq!(a["nextEscalationAt"], Value::Null);
    target.set(200);
    tick(&srv, &clock).await;
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[
            (&own, "alert.opened"),
            (&s1, "alert.opened"),
            (&s2, "alert.escalated"),
            (&s3, "alert.escalated"),
            (&own, "alert.resolved"),
            (&s1, "alert.resolved"),
            (&s2, "alert.resolved"),
            (&s3, "alert.resolved"),
        ])
    );

    // An alert resolved before its next step never escalates.
    target.set(500);
    tick(&srv, &clock).await;
    target.set(200);
    tick(&srv, &clock).await;
    clock.advance_ms(60 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_restarted_server_keeps_escalating_on_schedule() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("restart@example.com").await;
    let ws = u.workspace_id.clone();
    let [_, _, s2, s3, _] = escalating(&srv, &u, &target).await;
    target.set(500);
    tick(&srv, &clock).await;
    let opened = clock.now_ms();

    let srv = srv
        .restart(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
    clock.set_ms(opened + 5 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    let srv = srv
        .restart(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
    clock.set_ms(opened + 15 * MINUTE - 1);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        0
    );
    clock.set_ms(opened + 15 * MINUTE);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    let escalated: Vec<String> = queued(&srv, &ws)
        .await
        .into_iter()
        .filter(|d| d.event == "alert.escalated")
        .map(|d| d.channel_id)
        .collect();
    assert_eq!(escalated, [s2, s3]);
    srv.stop().await;
}
