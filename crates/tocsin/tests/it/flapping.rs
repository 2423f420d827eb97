//! Flap detection through the real server, on the backend under test and the manual clock: a
//! loopback target failing every third check pages by the rule until its fifth change, then
//! sends one `monitor.flapping`, nothing for the rest of its 30 flapping minutes, and one
//! `monitor.stable` once a whole window passes with at most one change (ended by the
//! scheduling node's pass, with no status change), all signed and delivered to a loopback
//! webhook receiver; its heartbeats stay exact and `flappingSince` is set, then cleared. A
//! monitor that settles DOWN (across a server restart) opens its alert with `monitor.stable`. `flapDetection: null`
//! keeps the old behaviour (every change pages), and the settings are validated.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::alerting::{alerts, queued};
use common::channels::{verify_signature, webhook};
use common::clock::{tick, T0};
use common::monitors::{array, get, heartbeats, http_monitor, merged, monitor};
use common::receiver::Receiver;
use common::target::Target;
use common::{expect_error, Options, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::{Clock, ManualClock};
use tocsin::monitoring::flapping;

const MINUTE_TICKS: usize = 6;

/// The fields of the monitor every test here checks: `flaky`, paging on every change (one
/// confirmation each way), notifying `channel`; `extra` set over them.
fn flaky(channel: &str, extra: Value) -> Value {
    merged(
        json!({"name": "flaky", "confirmationsRequired": 1,
               "recoveryConfirmationsRequired": 1, "notificationChannelIds": [channel]}),
        extra,
    )
}

/// One interval on: the target answers `code`, the due check runs, then the scheduling
/// node's flapping pass. Returns the status the check saw.
async fn step(srv: &TestServer, clock: &ManualClock, target: &Target, code: u16) -> &'static str {
    target.set(code);
    assert_eq!(tick(srv, clock).await, 1);
    flapping::run_due(srv.state.cx(), clock.now_ms())
        .await
        .unwrap();
    if code == 200 {
        "UP"
    } else {
        "DOWN"
    }
}

/// The delivery events enqueued for the workspace, in order.
async fn sent(srv: &TestServer, ws: &str) -> Vec<String> {
    queued(srv, ws).await.into_iter().map(|d| d.event).collect()
}

/// The webhook types the receiver got, once it has `n`.
async fn received(srv: &TestServer, rx: &Receiver, n: usize) -> Vec<String> {
    srv.state.wake_deliveries();
    let got = rx.wait_for(n, Duration::from_secs(15)).await;
    let mut types: Vec<String> = got
        .iter()
        .map(|r| r.json()["type"].as_str().unwrap().to_string())
        .collect();
    types.sort();
    types
}

fn listed(list: &[Value], id: &str) -> Value {
    list.iter().find(|m| m["id"] == id).cloned().unwrap()
}

#[tokio::test]
async fn a_flapping_target_pages_twice_in_thirty_minutes_while_its_heartbeats_stay_exact() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let rx = Receiver::start().await;
    let u = srv.sign_up("flap@example.com").await;
    let ws = u.workspace_id.clone();
    let (ch, secret) = webhook(&u, &rx).await;
    let id = http_monitor(&u, &target.url("/health"), flaky(&ch, json!({}))).await;
    let m = monitor(&u, &id).await;
    assert_eq!(
        m["flapDetection"],
        json!({"transitions": 5, "windowMinutes": 30})
    );
    assert_eq!(m["flappingSince"], Value::Null);

    // 30 minutes failing every third check: two changes every 30 s.
    let mut expected = Vec::new();
    let mut flapping_from = None;
    for i in 0..30 * MINUTE_TICKS {
        let code = if i % 3 == 2 { 500 } else { 200 };
        expected.push(step(&srv, &clock, &target, code).await);
        if flapping_from.is_none() && !monitor(&u, &id).await["flappingSince"].is_null() {
            flapping_from = Some(i);
        }
    }
    // The 5th change (DOWN at the 9th check) starts it; the four before paged by the rule.
    assert_eq!(flapping_from, Some(8));
    let m = monitor(&u, &id).await;
    let since = m["flappingSince"].as_str().unwrap().to_string();
    assert_eq!(
        listed(&array(&u, "/monitors").await, &id)["flappingSince"],
        json!(since)
    );
    assert_eq!(
        sent(&srv, &ws).await,
        [
            "alert.opened",
            "alert.resolved",
            "alert.opened",
            "alert.resolved",
            "monitor.flapping"
        ]
    );
    let all = alerts(&u, "").await;
    assert_eq!(all.len(), 2, "no alert while flapping: {all:?}");
    assert!(all.iter().all(|a| a["status"] == "RESOLVED"));

    // Steady from here: 30 more minutes hold the last change, then it is stable (UP), with no
    // status change to carry it.
    for _ in 0..29 * MINUTE_TICKS {
        expected.push(step(&srv, &clock, &target, 200).await);
    }
    assert!(!monitor(&u, &id).await["flappingSince"].is_null());
    for _ in 0..2 * MINUTE_TICKS {
        expected.push(step(&srv, &clock, &target, 200).await);
    }
    let m = monitor(&u, &id).await;
    assert_eq!(m["flappingSince"], Value::Null);
    assert_eq!(m["status"], "UP");
    assert_eq!(
        listed(&array(&u, "/monitors").await, &id)["flappingSince"],
        Value::Null
    );
    let events = sent(&srv, &ws).await;
    assert_eq!(&events[4..], ["monitor.flapping", "monitor.stable"]);
    assert_eq!(alerts(&u, "").await.len(), 2, "settled UP: nothing to open");

    // Every check's real status, in order.
    let beats = heartbeats(&u, &id, "?limit=1000").await;
    let mut statuses: Vec<&str> = beats
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    statuses.reverse();
    assert_eq!(statuses, expected);

    // The events tell the story; the changes while flapping are kept but alert nobody.
    let evs = array(&u, &format!("/monitors/{id}/events?limit=1000")).await;
    let kinds: Vec<&str> = evs.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "flapping").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "stable").count(), 1);
    assert_eq!(evs[0]["kind"], "stable");
    assert_eq!(evs[0]["to"], "UP");
    let quiet = evs
        .iter()
        .filter(|e| matches!(e["kind"].as_str(), Some("up" | "down")) && e["alert"] == false)
        .count();
    assert!(quiet > 100, "{quiet} changes while flapping");

    // The receiver got exactly these six, signed bodies with the flapping facts.
    let mut want = events.clone();
    want.sort();
    assert_eq!(received(&srv, &rx, 6).await, want);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.count(), 6);
    assert!(rx.received().iter().all(|r| verify_signature(&secret, r)));
    let bodies: Vec<Value> = rx.received().iter().map(|r| r.json()).collect();
    let flap = bodies
        .iter()
        .find(|b| b["type"] == "monitor.flapping")
        .unwrap();
    assert_eq!(flap["data"]["monitor"]["id"], json!(id));
    assert_eq!(flap["data"]["flapping"]["changes"], 5);
    assert_eq!(flap["data"]["flapping"]["windowMinutes"], 30);
    assert_eq!(flap["data"]["flapping"]["since"], json!(since));
    let stable = bodies
        .iter()
        .find(|b| b["type"] == "monitor.stable")
        .unwrap();
    assert_eq!(stable["data"]["status"], "UP");
    assert_eq!(stable["data"]["flapping"]["since"], json!(since));
    srv.stop().await;
}

#[tokio::test]
async fn a_monitor_that_settles_down_opens_its_alert_with_stable() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let rx = Receiver::start().await;
    let u = srv.sign_up("settle@example.com").await;
    let ws = u.workspace_id.clone();
    let (ch, _) = webhook(&u, &rx).await;
    let id = http_monitor(
        &u,
        &target.url("/health"),
        flaky(
            &ch,
            json!({"flapDetection": {"transitions": 3, "windowMinutes": 2}}),
        ),
    )
    .await;
    // UP, DOWN (pages), UP (pages), DOWN: the third change starts flapping.
    for code in [200, 500, 200, 500] {
        step(&srv, &clock, &target, code).await;
    }
    assert!(!monitor(&u, &id).await["flappingSince"].is_null());
    assert_eq!(
        sent(&srv, &ws).await,
        ["alert.opened", "alert.resolved", "monitor.flapping"]
    );
    // The flap state is the database's: a restart goes on where it stopped.
    let srv = srv
        .restart_same_port(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
    // Down for good: two minutes after the last change the window holds one.
    for _ in 0..13 {
        step(&srv, &clock, &target, 500).await;
    }
    let m = monitor(&u, &id).await;
    assert_eq!(m["flappingSince"], Value::Null);
    assert_eq!(m["status"], "DOWN");
    assert_eq!(
        sent(&srv, &ws).await,
        [
            "alert.opened",
            "alert.resolved",
            "monitor.flapping",
            "monitor.stable",
            "alert.opened"
        ]
    );
    let open = get(&u, "/alerts?status=open").await["alerts"].clone();
    assert_eq!(open.as_array().unwrap().len(), 1, "{open}");
    assert!(
        open[0]["cause"].as_str().unwrap().contains("500"),
        "the last failure is the cause: {open}"
    );
    assert_eq!(received(&srv, &rx, 5).await.len(), 5);
    // Recovery resolves it as usual (one change: not flapping again).
    step(&srv, &clock, &target, 200).await;
    assert_eq!(sent(&srv, &ws).await.last().unwrap(), "alert.resolved");
    srv.stop().await;
}

#[tokio::test]
async fn null_turns_flap_detection_off_and_every_change_pages() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let rx = Receiver::start().await;
    let u = srv.sign_up("off@example.com").await;
    let ws = u.workspace_id.clone();
    let (ch, _) = webhook(&u, &rx).await;
    let id = http_monitor(
        &u,
        &target.url("/health"),
        flaky(&ch, json!({"flapDetection": null})),
    )
    .await;
    let m = monitor(&u, &id).await;
    assert_eq!(m["flapDetection"], Value::Null);
    assert_eq!(
        listed(&array(&u, "/monitors").await, &id)["flapDetection"],
        Value::Null
    );
    for i in 0..24 {
        step(&srv, &clock, &target, if i % 2 == 1 { 500 } else { 200 }).await;
    }
    let events = sent(&srv, &ws).await;
    assert_eq!(events.len(), 24 - 1, "every change pages: {events:?}");
    assert!(events.iter().all(|e| e.starts_with("alert.")));
    assert_eq!(monitor(&u, &id).await["flappingSince"], Value::Null);
    assert_eq!(received(&srv, &rx, 23).await.len(), 23);

    // Turning it on (PATCH) validates the settings and shows them.
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"flapDetection": {"transitions": 1, "windowMinutes": 30}})),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err["field"], "flapDetection.transitions", "{err}");
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"flapDetection": {"transitions": 5, "windowMinutes": 1441}})),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err["field"], "flapDetection.windowMinutes", "{err}");
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"flapDetection": {"transitions": 4}})),
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"flapDetection": {"transitions": 100, "windowMinutes": 1440}})),
        )
        .await;
    assert_eq!(res.status(), 200);
    let m = monitor(&u, &id).await;
    assert_eq!(
        m["flapDetection"],
        json!({"transitions": 100, "windowMinutes": 1440})
    );
    assert_eq!(
        listed(&array(&u, "/monitors").await, &id)["flapDetection"],
        m["flapDetection"]
    );
    srv.stop().await;
}
