//! Monitor dependencies end to end, on the backend under test, with loopback targets and the
//! manual clock: `dependsOn` on the monitor record and its validation (another workspace,
//! itself, a cycle named monitor by monitor); a shared outage paging once per channel when the
//! dependents notice it first (their pages held in the outbox, then folded under the root,
//! whose page lists them), also across a restart during the hold; the root recovering first
//! while two dependents stay down (two pages, then); a dependent of a healthy monitor paging
//! normally once its hold runs out; chains and diamonds; suppressed alerts never escalating;
//! acknowledging a root acknowledging its dependents; `?rootOnly=true`.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::alerting::{alerts, queued, Queued};
use common::clock::{tick, T0};
use common::monitors::{create, get, http_body, http_monitor, merged, monitor};
use common::receiver::Receiver;
use common::target::Target;
use common::{field_error, json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::escalation;
use tocsin::clock::Clock;

/// Stores a WEBHOOK channel of `ws` sending to `url`, taking every alert event; its id.
async fn hook(srv: &TestServer, ws: &str, name: &str, url: &str) -> String {
    let id = uuid::Uuid::now_v7().to_string();
    let events = json!([
        "alert.opened",
        "alert.escalated",
        "alert.acknowledged",
        "alert.resolved"
    ]);
    sqlx::query(
        "INSERT INTO notification_channels (id, workspace_id, name, type, config, events, \
         is_default, enabled, version, created_at, updated_at) \
         VALUES ($1, $2, $3, 'WEBHOOK', $4, $5, 0, 1, 1, $6, $6)",
    )
    .bind(&id)
    .bind(ws)
    .bind(name)
    .bind(json!({ "url": url }).to_string())
    .bind(events.to_string())
    .bind(T0)
    .execute(srv.state.db().writer())
    .await
    .unwrap();
    id
}

/// First attempts of `event` (one per page), oldest first.
fn pages<'a>(q: &'a [Queued], event: &str) -> Vec<&'a Queued> {
    q.iter()
        .filter(|d| d.event == event && d.attempt == 1)
        .collect()
}

/// The unresolved alert of `monitor_id`.
async fn alert_of(u: &User, monitor_id: &str) -> Value {
    let list = alerts(u, &format!("?monitorId={monitor_id}")).await;
    list.into_iter()
        .find(|a| a["status"] != "RESOLVED")
        .unwrap_or_else(|| panic!("no unresolved alert of {monitor_id}"))
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A monitor named `name` checking `target` (interval 10 s, timeout 5 s) with `extra`.
async fn mon(u: &User, name: &str, target: &Target, extra: Value) -> String {
    http_monitor(u, &target.url("/"), merged(json!({ "name": name }), extra)).await
}

#[tokio::test]
async fn depends_on_is_on_the_record_and_refuses_strangers_itself_and_cycles() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("deps-record@example.com").await;
    let other = srv.sign_up("deps-other@example.com").await;
    let target = Target::start().await;
    let db = mon(&u, "db", &target, json!({})).await;
    let m = create(
        &u,
        merged(
            http_body(&target.url("/")),
            json!({"name": "api", "dependsOn": [db]}),
        ),
    )
    .await;
    let api = id_of(&m);
    assert_eq!(m["dependsOn"], json!([db]));
    // After lastPushAt, with the other alerting fields.
    let raw = u
        .call(Method::GET, &format!("/monitors/{api}"), None)
        .await
        .text()
        .await
        .unwrap();
    let at = |k: &str| raw.find(&format!("\"{k}\":")).unwrap();
    assert!(at("dependsOn") > at("escalationPolicyId"), "{raw}");
    assert!(at("dependsOn") > at("lastPushAt"), "{raw}");
    assert_eq!(monitor(&u, &api).await["dependsOn"], json!([db]));
    assert_eq!(monitor(&u, &db).await["dependsOn"], json!([]));
    let listed = get(&u, "/monitors").await;
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(api))
        .unwrap()
        .clone();
    assert_eq!(row["dependsOn"], json!([db]));

    // Another workspace's monitor is no monitor at all.
    let foreign = mon(&other, "theirs", &target, json!({})).await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{api}"),
            Some(json!({"dependsOn": [foreign]})),
        )
        .await;
    field_error(res, "dependsOn").await;
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(merged(
                http_body(&target.url("/")),
                json!({"dependsOn": ["nope"]}),
            )),
        )
        .await;
    field_error(res, "dependsOn").await;
    // Itself.
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{api}"),
            Some(json!({"dependsOn": [api]})),
        )
        .await;
    field_error(res, "dependsOn").await;
    // A cycle through three monitors, named.
    let edge = mon(&u, "edge", &target, json!({"dependsOn": [api]})).await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{db}"),
            Some(json!({"dependsOn": [edge]})),
        )
        .await;
    let body = field_error(res, "dependsOn").await;
    let text = body.to_string();
    assert!(text.contains("db -> edge -> api -> db"), "{body}");
    assert_eq!(monitor(&u, &db).await["dependsOn"], json!([]));

    // A PATCH replaces the list; deleting a dependency removes the edge.
    let m = json_of(
        u.call(
            Method::PATCH,
            &format!("/monitors/{api}"),
            Some(json!({"dependsOn": [db, edge]})),
        )
        .await,
        400,
    )
    .await;
    assert_eq!(m["field"], "dependsOn", "edge depends on api: {m}");
    let cache = mon(&u, "cache", &target, json!({})).await;
    json_of(
        u.call(
            Method::PATCH,
            &format!("/monitors/{api}"),
            Some(json!({"dependsOn": [db, cache]})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(monitor(&u, &api).await["dependsOn"], json!([db, cache]));
    json_of(
        u.call(Method::DELETE, &format!("/monitors/{db}"), None)
            .await,
        204,
    )
    .await;
    assert_eq!(monitor(&u, &api).await["dependsOn"], json!([cache]));
    srv.stop().await;
}

/// One root (2 confirmations: it notices an outage one check after its dependents) and
/// `n` dependents on two targets, with two channels.
struct Storm {
    srv: TestServer,
    clock: std::sync::Arc<tocsin::clock::ManualClock>,
    u: User,
    ws: String,
    root_target: Target,
    deps_target: Target,
    root: String,
    dependents: Vec<String>,
    channels: [String; 2],
}

async fn storm(email: &str, n: usize) -> Storm {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up(email).await;
    let ws = u.workspace_id.clone();
    let channels = [
        hook(&srv, &ws, "ops", "http://127.0.0.1:9/a").await,
        hook(&srv, &ws, "chat", "http://127.0.0.1:9/b").await,
    ];
    let root_target = Target::start().await;
    let deps_target = Target::start().await;
    let root = mon(
        &u,
        "db",
        &root_target,
        json!({"confirmationsRequired": 2, "notificationChannelIds": channels}),
    )
    .await;
    let mut dependents = Vec::new();
    for i in 0..n {
        dependents.push(
            mon(
                &u,
                &format!("svc-{i:02}"),
                &deps_target,
                json!({"dependsOn": [root], "notificationChannelIds": channels}),
            )
            .await,
        );
    }
    tick(&srv, &clock).await;
    Storm {
        srv,
        clock,
        u,
        ws,
        root_target,
        deps_target,
        root,
        dependents,
        channels,
    }
}

#[tokio::test]
async fn a_shared_outage_noticed_first_by_dependents_pages_once_per_channel() {
    let s = storm("deps-storm@example.com", 20).await;
    assert_eq!(monitor(&s.u, &s.root).await["status"], "UP");
    s.root_target.set(503);
    s.deps_target.set(503);

    // The dependents notice first: their alerts open as roots, their pages held.
    tick(&s.srv, &s.clock).await;
    assert_eq!(monitor(&s.u, &s.dependents[0]).await["status"], "DOWN");
    assert_eq!(monitor(&s.u, &s.root).await["status"], "UP");
    let q = queued(&s.srv, &s.ws).await;
    let held = pages(&q, "alert.opened");
    assert_eq!(held.len(), 40, "held, not sent");
    assert!(held.iter().all(|d| d.status == "PENDING"));

    // The root notices within its detection time: one page per channel, listing all 20.
    tick(&s.srv, &s.clock).await;
    assert_eq!(monitor(&s.u, &s.root).await["status"], "DOWN");
    let root_alert = id_of(&alert_of(&s.u, &s.root).await);
    let q = queued(&s.srv, &s.ws).await;
    let opened = pages(&q, "alert.opened");
    assert_eq!(opened.len(), 2, "{:?}", opened);
    let mut chans: Vec<&str> = opened.iter().map(|d| d.channel_id.as_str()).collect();
    chans.sort();
    let mut want: Vec<&str> = s.channels.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(chans, want);
    for d in &opened {
        assert_eq!(d.alert_id.as_deref(), Some(root_alert.as_str()));
        let listed = d.payload["data"]["dependents"].as_array().unwrap();
        assert_eq!(listed.len(), 20, "{}", d.payload);
        assert_eq!(listed[0]["name"], "svc-00");
        assert_eq!(listed[0]["status"], "DOWN");
        assert!(listed.iter().all(|x| s.dependents.contains(&id_of(x))));
    }
    for d in &s.dependents {
        assert_eq!(
            alert_of(&s.u, d).await["rootCauseAlertId"],
            json!(root_alert)
        );
    }
    let roots = alerts(&s.u, "?rootOnly=true").await;
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0]["rootCauseAlertId"], Value::Null);
    assert_eq!(alerts(&s.u, "").await.len(), 21);

    // Long past every hold: still the one page per channel.
    for _ in 0..4 {
        tick(&s.srv, &s.clock).await;
    }
    let q = queued(&s.srv, &s.ws).await;
    assert_eq!(pages(&q, "alert.opened").len(), 2);
    s.srv.stop().await;
}

#[tokio::test]
async fn the_root_recovering_first_pages_for_the_dependents_still_down_then() {
    let s = storm("deps-recover@example.com", 20).await;
    // Two dependents on a target of their own, which stays down.
    let stuck_target = Target::start().await;
    let mut stuck = Vec::new();
    for name in ["stuck-a", "stuck-b"] {
        stuck.push(
            mon(
                &s.u,
                name,
                &stuck_target,
                json!({"dependsOn": [s.root], "notificationChannelIds": s.channels}),
            )
            .await,
        );
    }
    tick(&s.srv, &s.clock).await;
    s.root_target.set(503);
    s.deps_target.set(503);
    stuck_target.set(503);
    tick(&s.srv, &s.clock).await;
    tick(&s.srv, &s.clock).await;
    let root_alert = id_of(&alert_of(&s.u, &s.root).await);
    assert_eq!(pages(&queued(&s.srv, &s.ws).await, "alert.opened").len(), 2);

    // The root and 20 dependents recover together; the two stay down.
    s.root_target.set(200);
    s.deps_target.set(200);
    tick(&s.srv, &s.clock).await;
    assert_eq!(monitor(&s.u, &s.root).await["status"], "UP");
    // The root's page, then one per channel for each of the two, held for the time their own
    // recovery would take to confirm (10 s x 1 + 5 s), then sent.
    tick(&s.srv, &s.clock).await;
    tick(&s.srv, &s.clock).await;
    let q = queued(&s.srv, &s.ws).await;
    let opened = pages(&q, "alert.opened");
    assert_eq!(opened.len(), 2 + 4, "{opened:?}");
    for m in &stuck {
        let a = alert_of(&s.u, m).await;
        assert_eq!(a["rootCauseAlertId"], Value::Null, "{a}");
        let aid = id_of(&a);
        assert_eq!(
            opened
                .iter()
                .filter(|d| d.alert_id.as_deref() == Some(aid.as_str()))
                .count(),
            2
        );
    }
    let resolved = pages(&q, "alert.resolved");
    assert_eq!(
        resolved.len(),
        2,
        "only the root's resolution: {resolved:?}"
    );
    for d in &resolved {
        assert_eq!(d.alert_id.as_deref(), Some(root_alert.as_str()));
        assert_eq!(
            d.payload["data"]["dependents"].as_array().unwrap().len(),
            22
        );
    }
    s.srv.stop().await;
}

#[tokio::test]
async fn a_dependent_of_a_healthy_monitor_pages_once_its_hold_runs_out() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-healthy@example.com").await;
    let rx = Receiver::start().await;
    let ch = json_of(
        u.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "ops", "type": "WEBHOOK", "config": {"url": rx.url("/hook")}})),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let db_target = Target::start().await;
    let api_target = Target::start().await;
    let db = mon(
        &u,
        "db",
        &db_target,
        json!({"notificationChannelIds": [ch]}),
    )
    .await;
    let api = mon(
        &u,
        "api",
        &api_target,
        json!({"dependsOn": [db], "notificationChannelIds": [ch]}),
    )
    .await;
    tick(&srv, &clock).await;
    api_target.set(500);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &api).await["status"], "DOWN");
    // Held for db's detection time (10 s x 1 + 5 s): nothing is sent yet.
    assert_eq!(
        pages(&queued(&srv, &u.workspace_id).await, "alert.opened")[0].status,
        "PENDING"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(rx.count(), 0);
    tick(&srv, &clock).await;
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &db).await["status"], "UP");
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 1);
    let body = got[0].json();
    assert_eq!(body["type"], "alert.opened");
    assert_eq!(body["data"]["monitor"]["id"], json!(api));
    assert_eq!(body["data"]["alert"]["rootCauseAlertId"], Value::Null);
    assert_eq!(body["data"]["dependents"], json!([]));
    srv.stop().await;
}

#[tokio::test]
async fn chains_and_diamonds_fall_under_the_one_root() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-graph@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = hook(&srv, &ws, "ops", "http://127.0.0.1:9/h").await;
    let t = Target::start().await;
    let tb = Target::start().await;
    let own = json!({"notificationChannelIds": [ch]});
    // Chain: c -> b -> a. Diamond: d -> (b, e), e -> a.
    let a = mon(&u, "a", &t, own.clone()).await;
    let b = mon(&u, "b", &tb, merged(own.clone(), json!({"dependsOn": [a]}))).await;
    let c = mon(&u, "c", &tb, merged(own.clone(), json!({"dependsOn": [b]}))).await;
    let e = mon(&u, "e", &tb, merged(own.clone(), json!({"dependsOn": [a]}))).await;
    let d = mon(
        &u,
        "d",
        &tb,
        merged(own.clone(), json!({"dependsOn": [b, e]})),
    )
    .await;
    tick(&srv, &clock).await;
    // The root goes first this time; the others follow a check later.
    t.set(500);
    tick(&srv, &clock).await;
    let root = id_of(&alert_of(&u, &a).await);
    tb.set(500);
    tick(&srv, &clock).await;
    for m in [&b, &c, &d, &e] {
        assert_eq!(monitor(&u, m).await["status"], "DOWN");
        assert_eq!(alert_of(&u, m).await["rootCauseAlertId"], json!(root));
    }
    for _ in 0..3 {
        tick(&srv, &clock).await;
    }
    let q = queued(&srv, &ws).await;
    let opened = pages(&q, "alert.opened");
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].alert_id.as_deref(), Some(root.as_str()));
    srv.stop().await;
}

#[tokio::test]
async fn a_restart_during_the_hold_still_pages_once() {
    let s = storm("deps-restart@example.com", 3).await;
    s.root_target.set(503);
    s.deps_target.set(503);
    tick(&s.srv, &s.clock).await;
    assert_eq!(pages(&queued(&s.srv, &s.ws).await, "alert.opened").len(), 6);
    // The process stops with the pages held; a new one starts on the same database.
    let srv = s
        .srv
        .restart(Options {
            clock: Some(s.clock.clone()),
            tweak: None,
        })
        .await;
    tick(&srv, &s.clock).await;
    let q = queued(&srv, &s.ws).await;
    let opened = pages(&q, "alert.opened");
    assert_eq!(opened.len(), 2, "{opened:?}");
    assert_eq!(
        opened[0].payload["data"]["dependents"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    srv.stop().await;
}

#[tokio::test]
async fn suppressed_alerts_never_escalate_and_follow_their_roots_acknowledgement() {
    let s = storm("deps-escalate@example.com", 3).await;
    let late = hook(&s.srv, &s.ws, "late", "http://127.0.0.1:9/late").await;
    let policy = json_of(
        s.u.call(
            Method::POST,
            "/escalation-policies",
            Some(json!({"name": "night", "steps": [
                {"delayMinutes": 0, "notificationChannelIds": [s.channels[0]]},
                {"delayMinutes": 1, "notificationChannelIds": [late]}]})),
        )
        .await,
        201,
    )
    .await;
    for m in s.dependents.iter().chain([&s.root]) {
        json_of(
            s.u.call(
                Method::PATCH,
                &format!("/monitors/{m}"),
                Some(json!({"escalationPolicyId": policy["id"]})),
            )
            .await,
            200,
        )
        .await;
    }
    s.root_target.set(503);
    tick(&s.srv, &s.clock).await;
    tick(&s.srv, &s.clock).await;
    let root = alert_of(&s.u, &s.root).await;
    // The dependents go down under the open root.
    s.deps_target.set(503);
    tick(&s.srv, &s.clock).await;
    for d in &s.dependents {
        let a = alert_of(&s.u, d).await;
        assert_eq!(a["rootCauseAlertId"], root["id"]);
        assert_eq!(a["nextEscalationAt"], Value::Null);
        assert_eq!(a["escalationStep"], Value::Null);
    }
    s.clock.advance_ms(120_000);
    escalation::run_due(s.srv.state.cx(), s.clock.now_ms())
        .await
        .unwrap();
    let q = queued(&s.srv, &s.ws).await;
    let escalated = pages(&q, "alert.escalated");
    assert_eq!(escalated.len(), 1, "only the root escalates: {escalated:?}");
    assert_eq!(escalated[0].alert_id.as_deref(), root["id"].as_str());
    assert_eq!(
        escalated[0].payload["data"]["dependents"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    for d in &s.dependents {
        assert_eq!(alert_of(&s.u, d).await["escalationStep"], Value::Null);
    }

    let root_id = root["id"].as_str().unwrap();
    json_of(
        s.u.call(
            Method::POST,
            &format!("/alerts/{root_id}/acknowledge"),
            None,
        )
        .await,
        200,
    )
    .await;
    for d in &s.dependents {
        let a = alert_of(&s.u, d).await;
        assert_eq!(a["status"], "ACKNOWLEDGED", "{a}");
        assert_eq!(a["acknowledgedBy"], json!(s.u.user_id));
    }
    let q = queued(&s.srv, &s.ws).await;
    let acked = pages(&q, "alert.acknowledged");
    assert!(acked.iter().all(|d| d.alert_id.as_deref() == Some(root_id)));
    s.srv.stop().await;
}
