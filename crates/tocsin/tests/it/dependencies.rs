//! Monitor dependencies end to end, on the backend under test, with loopback targets and the
//! manual clock: `dependsOn` on the monitor record and its validation (another workspace,
//! itself, a cycle named monitor by monitor); a shared outage paging once per channel when the
//! dependents notice it first (their pages held in the outbox, then folded under the root,
//! whose page lists them), also across a restart during the hold; the root recovering first
//! while two dependents stay down (two pages, then); a dependent of a healthy monitor paging
//! normally once its hold runs out; chains and diamonds; suppressed alerts never escalating;
//! acknowledging a root acknowledging its dependents; `?rootOnly=true`; status pages showing
//! one automatic incident for the outage (the root's, naming its dependents and counting their
//! components as affected, also on a page without the root) and a held dependent's own
//! incident only once its hold is over; maintenance of a root silencing its dependents; a root
//! and its dependent going down in two transactions at once (PostgreSQL's READ COMMITTED)
//! still paging once; SIGKILL of the real binary during a hold; a held page falling due under
//! an open root folding there when the fold after the root's page never ran; a root listing
//! more than it folds in its own transaction folding them beside its page.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::alerting::{alerts, queued, Queued};
use common::clock::{tick, T0};
use common::monitors::{create, get, http_body, http_monitor, merged, monitor};
use common::pages::{create_page, put_components};
use common::receiver::Receiver;
use common::target::Target;
use common::{field_error, json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::{auto_incidents, escalation};
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

/// Waits (up to 10 s) until every alert of `monitors` is under `root`: the fold follows the
/// root's page, beside its first attempt (`alerting::deliver`), a moment after the root's
/// transaction.
async fn folded_under(u: &User, monitors: &[String], root: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for m in monitors {
        loop {
            let a = alert_of(u, m).await;
            if a["rootCauseAlertId"] == json!(root) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{m} not folded under {root}: {a}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
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
    folded_under(&s.u, &s.dependents, &root_alert).await;
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
async fn a_root_listing_more_than_it_folds_in_place_pages_first_then_folds_them() {
    let n = tocsin::alerting::root_cause::FOLD_IN_PLACE + 10;
    let s = storm("deps-many@example.com", n).await;
    s.root_target.set(503);
    s.deps_target.set(503);
    tick(&s.srv, &s.clock).await;
    assert_eq!(
        pages(&queued(&s.srv, &s.ws).await, "alert.opened").len(),
        2 * n
    );
    // The root's transaction lists them and commits its pages; the delivery worker folds
    // them beside the first attempt (the clock does not move: no hold runs out meanwhile).
    tick(&s.srv, &s.clock).await;
    let root_alert = id_of(&alert_of(&s.u, &s.root).await);
    folded_under(&s.u, &s.dependents, &root_alert).await;
    let q = queued(&s.srv, &s.ws).await;
    let opened = pages(&q, "alert.opened");
    assert_eq!(opened.len(), 2, "{opened:?}");
    for d in &opened {
        assert_eq!(d.alert_id.as_deref(), Some(root_alert.as_str()));
        let listed = d.payload["data"]["dependents"].as_array().unwrap();
        assert_eq!(listed.len(), n);
        assert!(listed.iter().all(|x| s.dependents.contains(&id_of(x))));
    }
    assert_eq!(alerts(&s.u, "?rootOnly=true").await.len(), 1);
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
    let below: Vec<String> = s.dependents.iter().chain(&stuck).cloned().collect();
    folded_under(&s.u, &below, &root_alert).await;
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
async fn a_held_page_falling_due_under_an_open_root_folds_even_if_the_fold_never_ran() {
    let s = storm("deps-settle@example.com", 3).await;
    s.root_target.set(503);
    s.deps_target.set(503);
    tick(&s.srv, &s.clock).await;
    assert_eq!(pages(&queued(&s.srv, &s.ws).await, "alert.opened").len(), 6);
    // The root's transaction committed (its alert open), and the process died before the
    // fold that follows its page: the root's alert is there, nothing is under it.
    let root = tocsin::store::alerts::AlertRow {
        id: tocsin::ids::new_id(),
        workspace_id: s.ws.clone(),
        monitor_id: s.root.clone(),
        status: "OPEN".into(),
        cause: "HTTP 503".into(),
        escalation_policy_id: None,
        escalation_step: None,
        next_escalation_at: None,
        opened_at: s.clock.now_ms(),
        acknowledged_at: None,
        acknowledged_by: None,
        resolved_at: None,
        updated_at: s.clock.now_ms(),
        version: 1,
        root_cause_alert_id: None,
    };
    let mut tx = s.srv.state.db().begin().await.unwrap();
    assert!(tocsin::store::alerts::open(&mut tx, &root).await.unwrap());
    tx.commit().await.unwrap();
    for d in &s.dependents {
        assert_eq!(alert_of(&s.u, d).await["rootCauseAlertId"], Value::Null);
    }
    // Past the hold, the delivery worker finds the held pages due: each is judged again,
    // folds under the open root, and is dropped unsent.
    s.clock.advance_ms(60_000);
    folded_under(&s.u, &s.dependents, &root.id).await;
    let q = queued(&s.srv, &s.ws).await;
    assert!(pages(&q, "alert.opened").is_empty(), "{q:?}");
    s.srv.stop().await;
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

/// The public summary of `slug`.
async fn summary(srv: &TestServer, slug: &str) -> Value {
    let res = reqwest::Client::new()
        .get(srv.url(&format!("/api/v1/status-pages/{slug}/summary")))
        .send()
        .await
        .unwrap();
    json_of(res, 200).await
}

/// Polls `slug`'s summary (the public pages follow changes within a second) until `ok`.
async fn summary_until(srv: &TestServer, slug: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let started = std::time::Instant::now();
    loop {
        let s = summary(srv, slug).await;
        if ok(&s) {
            return s;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The incidents of page `page_id`, as the API lists them.
async fn incidents_of(u: &User, page_id: &str) -> Vec<Value> {
    let list = json_of(
        u.call(
            Method::GET,
            &format!("/incidents?statusPageId={page_id}"),
            None,
        )
        .await,
        200,
    )
    .await;
    list["incidents"].as_array().unwrap().clone()
}

fn component_status<'a>(s: &'a Value, name: &str) -> &'a Value {
    &s["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no component {name}: {s}"))["status"]
}

#[tokio::test]
async fn a_status_page_shows_one_incident_for_the_root_naming_its_dependents() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-page@example.com").await;
    let ch = hook(&srv, &u.workspace_id, "ops", "http://127.0.0.1:9/h").await;
    let root_target = Target::start().await;
    let deps_target = Target::start().await;
    let calm_target = Target::start().await;
    let own = json!({"notificationChannelIds": [ch]});
    let db = mon(
        &u,
        "db",
        &root_target,
        merged(own.clone(), json!({"confirmationsRequired": 2})),
    )
    .await;
    // A chain (website -> api -> db), and docs, which stays up through the outage.
    let api = mon(
        &u,
        "api",
        &deps_target,
        merged(own.clone(), json!({"dependsOn": [db]})),
    )
    .await;
    let web = mon(
        &u,
        "web",
        &deps_target,
        merged(own.clone(), json!({"dependsOn": [api]})),
    )
    .await;
    let docs = mon(
        &u,
        "docs",
        &calm_target,
        merged(own.clone(), json!({"dependsOn": [db]})),
    )
    .await;
    let page = create_page(
        &u,
        json!({"name": "Status", "slug": "deps-status", "published": true,
               "autoIncidents": "PUBLISHED"}),
    )
    .await;
    let pid = id_of(&page);
    let comps = put_components(
        &u,
        &pid,
        json!([{"name": "Database", "monitorId": db}, {"name": "API", "monitorId": api},
               {"name": "Website", "monitorId": web}, {"name": "Docs", "monitorId": docs}]),
    )
    .await;
    let mut comp_ids: Vec<String> = comps.as_array().unwrap().iter().map(id_of).collect();
    comp_ids.sort();
    // A public page that does not show the database at all.
    let public = create_page(
        &u,
        json!({"name": "Public", "slug": "deps-public", "published": true,
               "autoIncidents": "PUBLISHED"}),
    )
    .await;
    let public_id = id_of(&public);
    put_components(
        &u,
        &public_id,
        json!([{"name": "API", "monitorId": api}, {"name": "Website", "monitorId": web}]),
    )
    .await;
    tick(&srv, &clock).await;

    // The dependents notice first: their pages are held, and so are their incidents.
    root_target.set(503);
    deps_target.set(503);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &api).await["status"], "DOWN");
    assert_eq!(monitor(&u, &db).await["status"], "UP");
    assert!(incidents_of(&u, &pid).await.is_empty());
    assert!(incidents_of(&u, &public_id).await.is_empty());

    // The root notices: one incident per page, naming what depends on it.
    tick(&srv, &clock).await;
    let root = alert_of(&u, &db).await;
    folded_under(&u, std::slice::from_ref(&web), root["id"].as_str().unwrap()).await;
    // Past every hold, the folded dependents still open nothing of their own.
    for _ in 0..3 {
        tick(&srv, &clock).await;
        auto_incidents::open_after_holds(srv.state.cx(), clock.now_ms())
            .await
            .unwrap();
    }
    let list = incidents_of(&u, &pid).await;
    assert_eq!(list.len(), 1, "one outage, one incident: {list:?}");
    let inc = &list[0];
    assert_eq!(inc["sourceMonitorId"], json!(db));
    assert_eq!(inc["title"], "Database is unavailable");
    let mut affected: Vec<String> = inc["affectedComponentIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    affected.sort();
    assert_eq!(affected, comp_ids);
    let s = summary_until(&srv, "deps-status", |s| {
        s["activeIncidents"].as_array().unwrap().len() == 1
    })
    .await;
    let first = &s["activeIncidents"][0]["updates"][0]["message"];
    let text = first.as_str().unwrap();
    for name in ["API", "Website", "Docs"] {
        assert!(text.contains(name), "{text}");
    }
    assert_eq!(component_status(&s, "Database"), "MAJOR_OUTAGE");
    assert_eq!(component_status(&s, "API"), "MAJOR_OUTAGE");
    // Up by its own checks, affected by what it depends on.
    assert_eq!(monitor(&u, &docs).await["status"], "UP");
    assert_eq!(component_status(&s, "Docs"), "PARTIAL_OUTAGE");

    // The page without the database names what it shows, not the root's cause.
    let list = incidents_of(&u, &public_id).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["sourceMonitorId"], json!(db));
    assert_eq!(list[0]["title"], "API and Website are unavailable");
    let s = summary_until(&srv, "deps-public", |s| {
        s["activeIncidents"].as_array().unwrap().len() == 1
    })
    .await;
    let text = s["activeIncidents"][0]["updates"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("API and Website"), "{text}");
    assert!(!text.contains("503"), "{text}");

    // Recovery resolves the one incident.
    root_target.set(200);
    deps_target.set(200);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &db).await["status"], "UP");
    let s = summary_until(&srv, "deps-status", |s| {
        s["activeIncidents"].as_array().unwrap().is_empty()
    })
    .await;
    assert_eq!(component_status(&s, "Docs"), "OPERATIONAL");
    assert_eq!(incidents_of(&u, &pid).await[0]["status"], "RESOLVED");
    assert_eq!(incidents_of(&u, &public_id).await[0]["status"], "RESOLVED");
    srv.stop().await;
}

#[tokio::test]
async fn a_dependent_of_a_healthy_monitor_opens_its_own_incident_once_its_hold_is_over() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-own-incident@example.com").await;
    let db_target = Target::start().await;
    let api_target = Target::start().await;
    let db = mon(&u, "db", &db_target, json!({})).await;
    let api = mon(&u, "api", &api_target, json!({"dependsOn": [db]})).await;
    let page = create_page(
        &u,
        json!({"name": "Own", "slug": "deps-own", "published": true,
               "autoIncidents": "PUBLISHED"}),
    )
    .await;
    let pid = id_of(&page);
    put_components(&u, &pid, json!([{"name": "API", "monitorId": api}])).await;
    tick(&srv, &clock).await;
    api_target.set(500);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &api).await["status"], "DOWN");
    let opened_at = clock.now_ms();
    // Within db's detection time (10 s x 1 + 5 s): nothing yet.
    let n = auto_incidents::open_after_holds(srv.state.cx(), opened_at + 14_000)
        .await
        .unwrap();
    assert_eq!(n, 0);
    assert!(incidents_of(&u, &pid).await.is_empty());
    let n = auto_incidents::open_after_holds(srv.state.cx(), opened_at + 15_000)
        .await
        .unwrap();
    assert_eq!(n, 1);
    let list = incidents_of(&u, &pid).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["sourceMonitorId"], json!(api));
    assert_eq!(list[0]["title"], "API is unavailable");
    // Once only.
    let n = auto_incidents::open_after_holds(srv.state.cx(), opened_at + 30_000)
        .await
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(incidents_of(&u, &pid).await.len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn maintenance_of_a_root_suppresses_its_dependents_alerts() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-maintenance@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = hook(&srv, &ws, "ops", "http://127.0.0.1:9/m").await;
    let db_target = Target::start().await;
    let api_target = Target::start().await;
    let own = json!({"notificationChannelIds": [ch]});
    let db = mon(&u, "db", &db_target, own.clone()).await;
    let api = mon(
        &u,
        "api",
        &api_target,
        merged(own.clone(), json!({"dependsOn": [db]})),
    )
    .await;
    // Behind api, so through it.
    let web = mon(
        &u,
        "web",
        &api_target,
        merged(own.clone(), json!({"dependsOn": [api]})),
    )
    .await;
    tick(&srv, &clock).await;
    let start = clock.now_ms() + 1_000;
    json_of(
        u.call(
            Method::POST,
            "/maintenance-windows",
            Some(json!({"monitorId": db, "title": "Database upgrade",
                        "startsAt": common::clock::rfc(start),
                        "endsAt": common::clock::rfc(start + 3_600_000),
                        "excludeFromUptime": false})),
        )
        .await,
        201,
    )
    .await;
    clock.set_ms(start);
    tocsin::monitoring::maintenance::run_due(srv.state.runner(), start)
        .await
        .unwrap();
    assert_eq!(monitor(&u, &db).await["status"], "MAINTENANCE");

    // The upgrade takes the database and what is behind it down: nobody is paged.
    db_target.set(503);
    api_target.set(503);
    for _ in 0..4 {
        tick(&srv, &clock).await;
    }
    assert_eq!(monitor(&u, &api).await["status"], "DOWN");
    assert_eq!(monitor(&u, &web).await["status"], "DOWN");
    assert!(alerts(&u, "").await.is_empty());
    let q = queued(&srv, &ws).await;
    assert!(q.iter().all(|d| !d.event.starts_with("alert.")), "{q:?}");
    srv.stop().await;
}

/// Records `monitor_id` going from UP to DOWN at `at`, as a failing check would, in a
/// transaction of its own; commits once `commit` fires (at once without one).
async fn down_in_tx(
    srv: &TestServer,
    monitor_id: &str,
    at: i64,
    commit: Option<tokio::sync::oneshot::Receiver<()>>,
) {
    use tocsin::alerting::ack_link::Links;
    use tocsin::monitoring::transition::{record_transition, ChangeEvent, StatusChange};
    use tocsin::store::monitors::StateUpdate;
    use tocsin_core::{Event, EventKind, Status};
    let seq: i64 = sqlx::query_scalar("SELECT seq FROM monitors WHERE id = $1")
        .bind(monitor_id)
        .fetch_one(srv.state.db().writer())
        .await
        .unwrap();
    let change = StatusChange {
        monitor_id,
        monitor_seq: seq,
        state: StateUpdate {
            status: Status::Down,
            consecutive_failures: 1,
            consecutive_successes: 0,
            pending_failure_since: None,
            status_changed_at: at,
            last_check_at: Some(at),
        },
        events: vec![ChangeEvent::new(
            Event {
                kind: EventKind::Down,
                from: Status::Up,
                to: Status::Down,
            },
            at,
            Some("HTTP 503".into()),
        )],
        last_push_at: None,
        even_paused: false,
    };
    let mut tx = srv.state.db().begin().await.unwrap();
    record_transition(&mut tx, &Links::of(srv.state.cx()), &change)
        .await
        .unwrap();
    if let Some(c) = commit {
        let _ = c.await;
    }
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn a_root_and_its_dependent_going_down_in_two_transactions_at_once_page_once() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("deps-race@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = hook(&srv, &ws, "ops", "http://127.0.0.1:9/r").await;
    let t = Target::start().await;
    let own = json!({"notificationChannelIds": [ch]});
    // Both orders: the dependent's transaction first, then the root's first.
    for (round, dependent_first) in [(0, true), (1, false)] {
        let db = mon(&u, &format!("db-{round}"), &t, own.clone()).await;
        let api = mon(
            &u,
            &format!("api-{round}"),
            &t,
            merged(own.clone(), json!({"dependsOn": [db]})),
        )
        .await;
        tick(&srv, &clock).await;
        let at = clock.now_ms() + 1;
        let (first, second) = if dependent_first {
            (&api, &db)
        } else {
            (&db, &api)
        };
        // The first decides and stays open; the second decides meanwhile and commits (on
        // PostgreSQL it could, under READ COMMITTED, before the first commits); then the first
        // commits.
        let (go, wait) = tokio::sync::oneshot::channel();
        tokio::join!(
            down_in_tx(&srv, first, at, Some(wait)),
            async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                down_in_tx(&srv, second, at, None).await;
            },
            async {
                tokio::time::sleep(Duration::from_millis(800)).await;
                let _ = go.send(());
            }
        );

        let root = alert_of(&u, &db).await;
        assert_eq!(root["rootCauseAlertId"], Value::Null, "{root}");
        folded_under(&u, std::slice::from_ref(&api), root["id"].as_str().unwrap()).await;
        let dep = alert_of(&u, &api).await;
        assert_eq!(dep["rootCauseAlertId"], root["id"], "round {round}: {dep}");
        let q = queued(&srv, &ws).await;
        let opened: Vec<&Queued> = pages(&q, "alert.opened")
            .into_iter()
            .filter(|d| {
                d.alert_id.as_deref() == root["id"].as_str()
                    || d.alert_id.as_deref() == dep["id"].as_str()
            })
            .collect();
        assert_eq!(opened.len(), 1, "round {round}: {opened:?}");
        assert_eq!(opened[0].alert_id.as_deref(), root["id"].as_str());
    }
    srv.stop().await;
}

/// `tocsin serve` on `dir`'s data (checks as often as every second) at a free port.
async fn serve_binary(dir: &std::path::Path) -> (std::process::Child, String) {
    let port = common::binary::free_port();
    let child = common::binary::tocsin(dir)
        .args(["serve", "--config", "tocsin.toml", "--data-dir", "data"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::binary::wait_ready(port).await;
    (child, format!("http://127.0.0.1:{port}"))
}

/// Polls `id`'s status through `api` until it is `want` (within `within`).
async fn status_becomes(api: &common::Bearer, id: &str, want: &str, within: Duration) {
    let started = std::time::Instant::now();
    while monitor(api, id).await["status"] != want {
        assert!(started.elapsed() < within, "{id} never became {want}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn sigkill_during_the_hold_and_a_restart_still_page_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tocsin.toml"), "min_interval_seconds = 1\n").unwrap();
    let token = common::binary::seed(dir.path(), "deps-kill@example.com", "all");
    let rx = Receiver::start().await;
    let root_target = Target::start().await;
    let deps_target = Target::start().await;
    let (child, base) = serve_binary(dir.path()).await;
    let api = common::Bearer::new(&base, &token);
    let ch = json_of(
        api.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "ops", "type": "WEBHOOK", "config": {"url": rx.url("/hook")}})),
        )
        .await,
        201,
    )
    .await;
    let ch = id_of(&ch);
    // The root confirms an outage over two checks 5 s apart: its detection time (5 s x 2 +
    // 4 s + 4 s) is the dependents' hold, well past when it will notice (within ~12 s even
    // with the restart in between). The dependents notice within 2 s.
    let db = http_monitor(
        &api,
        &root_target.url("/"),
        json!({"name": "db", "interval": 5, "timeout": 4, "confirmationsRequired": 2,
               "minFailureDurationMs": 4000, "notificationChannelIds": [ch]}),
    )
    .await;
    let mut dependents = Vec::new();
    for name in ["api", "web"] {
        dependents.push(
            http_monitor(
                &api,
                &deps_target.url("/"),
                json!({"name": name, "interval": 2, "timeout": 1, "dependsOn": [db],
                       "notificationChannelIds": [ch]}),
            )
            .await,
        );
    }
    for m in dependents.iter().chain([&db]) {
        status_becomes(&api, m, "UP", Duration::from_secs(15)).await;
    }

    root_target.set(503);
    deps_target.set(503);
    for m in &dependents {
        status_becomes(&api, m, "DOWN", Duration::from_secs(10)).await;
    }
    // Their pages are held in the outbox; the root has not confirmed yet. SIGKILL now.
    assert_eq!(monitor(&api, &db).await["status"], "UP");
    common::binary::signal(&child, "-KILL");
    let _ = common::binary::wait_exit(child);
    assert_eq!(rx.count(), 0);

    let (child, base) = serve_binary(dir.path()).await;
    let api = common::Bearer::new(&base, &token);
    status_becomes(&api, &db, "DOWN", Duration::from_secs(20)).await;
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let body = got[0].json();
    assert_eq!(body["type"], "alert.opened");
    assert_eq!(body["data"]["monitor"]["id"], json!(db));
    assert_eq!(
        body["data"]["dependents"].as_array().unwrap().len(),
        2,
        "{body}"
    );
    // Past every hold: still that one page.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let all = rx.received();
    let pages: Vec<Value> = all
        .iter()
        .map(|r| r.json())
        .filter(|b| b["type"] == "alert.opened")
        .collect();
    assert_eq!(pages.len(), 1, "{pages:?}");
    common::binary::signal(&child, "-TERM");
    common::binary::wait_exit(child);
}
