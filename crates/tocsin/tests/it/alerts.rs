//! Alerts end to end through the real API, on the backend under test: a loopback target going
//! down on the manual clock opens exactly one alert and enqueues its deliveries to the right
//! channels (own, defaults, events filter, disabled), staying down or a repeated DOWN opens no
//! second one, recovery resolves it; push down and a missed deadline open one; DEGRADED and
//! stale notify without an alert; acknowledgement through the API and through the one-click
//! link (single use, expiry, bad signature as HTML); the monitor's alerting fields.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::alerting::{alerts, channel, pairs, queued, want, Chan, ALL_EVENTS};
use common::clock::{tick, INTERVAL_MS, T0};
use common::monitors::{self, create, get, http_monitor, monitor};
use common::target::Target;
use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::Clock;

#[tokio::test]
async fn an_outage_opens_one_alert_to_the_right_channels_and_recovery_resolves_it() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("alerts@example.com").await;
    let ws = u.workspace_id.clone();
    let own = channel(&srv, &ws, Chan::default()).await;
    let resolved_only = channel(
        &srv,
        &ws,
        Chan {
            events: &["alert.resolved"],
            ..Chan::default()
        },
    )
    .await;
    let disabled = channel(
        &srv,
        &ws,
        Chan {
            enabled: false,
            ..Chan::default()
        },
    )
    .await;
    // A default channel: not used by a monitor that names its own.
    let default = channel(
        &srv,
        &ws,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    let id = http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [own, resolved_only, disabled]}),
    )
    .await;

    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    assert!(queued(&srv, &ws).await.is_empty());
    assert!(alerts(&u, "").await.is_empty());

    target.set(500);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    let open = alerts(&u, "?status=open").await;
    assert_eq!(open.len(), 1, "{open:?}");
    let alert = &open[0];
    let alert_id = alert["id"].as_str().unwrap().to_string();
    assert_eq!(alert["monitorId"], json!(id));
    assert_eq!(alert["workspaceId"], json!(ws));
    assert_eq!(alert["status"], "OPEN");
    assert!(alert["cause"].as_str().unwrap().contains("500"), "{alert}");
    assert_eq!(alert["acknowledgedAt"], Value::Null);
    assert_eq!(alert["acknowledgedBy"], Value::Null);
    assert_eq!(alert["resolvedAt"], Value::Null);
    assert_eq!(alert["escalationStep"], Value::Null);
    assert_eq!(alert["nextEscalationAt"], Value::Null);
    assert_eq!(alert["rootCauseAlertId"], Value::Null);
    let keys: Vec<&String> = alert.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 12, "{keys:?}");
    assert_eq!(get(&u, &format!("/alerts/{alert_id}")).await, *alert);

    // Exactly one delivery: the own, enabled channel that takes alert.opened.
    let q = queued(&srv, &ws).await;
    assert_eq!(pairs(&q), want(&[(&own, "alert.opened")]));
    let d = &q[0];
    assert_eq!(d.alert_id.as_deref(), Some(alert_id.as_str()));
    // The delivery worker may already have tried it: the fixture channels cannot deliver
    // (no signing secret), so the first attempt is pending or failed, never retried.
    assert_eq!(d.attempt, 1);
    assert!(["PENDING", "FAILED"].contains(&d.status.as_str()), "{d:?}");
    assert_eq!(d.payload["type"], "alert.opened");
    assert!(d.payload["timestamp"].as_str().unwrap().ends_with('Z'));
    let data = &d.payload["data"];
    assert_eq!(data["alert"], *alert);
    assert_eq!(
        data["monitor"],
        json!({"id": id, "name": "api", "type": "HTTP",
               "url": format!("{}/health", target.base), "status": "DOWN"})
    );
    assert!(data["links"]["acknowledge"]
        .as_str()
        .unwrap()
        .starts_with(&srv.url("/alerts/ack?token=")));
    assert_eq!(
        data["links"]["alert"],
        json!(srv.url(&format!("/alerts/{alert_id}")))
    );
    // The per-alert history route shows the same attempt.
    let page = get(&u, &format!("/alerts/{alert_id}/deliveries")).await;
    let items = page["deliveries"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["channelId"], json!(own));
    assert_eq!(items[0]["event"], "alert.opened");
    assert!(
        items[0]["status"] == "PENDING" || items[0]["status"] == "FAILED",
        "{items:?}"
    );
    assert_eq!(items[0]["attempt"], 1);
    assert_eq!(page["nextCursor"], Value::Null);

    // Still down: no second alert, nothing more sent.
    tick(&srv, &clock).await;
    tick(&srv, &clock).await;
    assert_eq!(alerts(&u, "").await.len(), 1);
    assert_eq!(queued(&srv, &ws).await.len(), 1);

    // A DOWN event for a monitor with an open alert (a second node, a replay) coalesces: the
    // database keeps one open alert per monitor.
    let mut tx = srv.state.db().begin().await.unwrap();
    let down = tocsin::store::events::EventRow {
        id: "e".into(),
        monitor_id: id.clone(),
        workspace_id: ws.clone(),
        seq: 99,
        kind: tocsin::store::events::EventKind::Down,
        from_status: tocsin_core::Status::Up,
        to_status: tocsin_core::Status::Down,
        message: Some("again".into()),
        alert: 1,
        created_at: clock.now_ms(),
        monitor_name: String::new(),
    };
    let n =
        tocsin::alerting::alerts::react(&mut tx, srv.state.alert_links(), &[down], clock.now_ms())
            .await
            .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(n, 0);
    assert_eq!(alerts(&u, "").await.len(), 1);

    // Recovery resolves it and tells the channels that take alert.resolved.
    target.set(200);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &id).await["status"], "UP");
    let a = get(&u, &format!("/alerts/{alert_id}")).await;
    assert_eq!(a["status"], "RESOLVED");
    assert!(a["resolvedAt"].is_string());
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[
            (&own, "alert.opened"),
            (&own, "alert.resolved"),
            (&resolved_only, "alert.resolved"),
        ])
    );
    let resolved = queued(&srv, &ws).await;
    let last = resolved.last().unwrap();
    assert_eq!(last.payload["data"]["alert"]["status"], "RESOLVED");
    // Nothing to acknowledge once resolved.
    assert_eq!(last.payload["data"]["links"]["acknowledge"], Value::Null);
    assert!(alerts(&u, "?status=open").await.is_empty());
    assert_eq!(alerts(&u, "?status=resolved").await.len(), 1);
    assert_eq!(alerts(&u, &format!("?monitorId={id}")).await.len(), 1);
    assert!(alerts(&u, "?monitorId=nope").await.is_empty());

    // The next outage is a new alert.
    target.set(500);
    tick(&srv, &clock).await;
    let all = alerts(&u, "").await;
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["status"], "OPEN", "newest first");
    assert_ne!(all[0]["id"], json!(alert_id));
    // The default channel heard nothing all along.
    assert!(queued(&srv, &ws)
        .await
        .iter()
        .all(|d| d.channel_id != default));
    srv.stop().await;
}

#[tokio::test]
async fn defaults_serve_monitors_without_channels_or_policy() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("defaults@example.com").await;
    let ws = u.workspace_id.clone();
    let d1 = channel(
        &srv,
        &ws,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    let _disabled_default = channel(
        &srv,
        &ws,
        Chan {
            is_default: true,
            enabled: false,
            ..Chan::default()
        },
    )
    .await;
    let _plain = channel(&srv, &ws, Chan::default()).await;
    // Another workspace's default is never used.
    let other = srv.sign_up("other@example.com").await;
    let foreign = channel(
        &srv,
        &other.workspace_id,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    http_monitor(&u, &target.url("/health"), json!({})).await;
    tick(&srv, &clock).await;
    target.set(503);
    tick(&srv, &clock).await;
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[(&d1, "alert.opened")])
    );
    assert!(queued(&srv, &other.workspace_id)
        .await
        .iter()
        .all(|d| d.channel_id != foreign));

    // A monitor with a policy (and no channels of its own) does not fall back to defaults.
    let step_channel = channel(&srv, &ws, Chan::default()).await;
    let policy = json_of(
        u.call(
            Method::POST,
            "/escalation-policies",
            Some(json!({"name": "later", "steps": [
                {"delayMinutes": 10, "notificationChannelIds": [step_channel]}]})),
        )
        .await,
        201,
    )
    .await;
    let target2 = Target::start().await;
    http_monitor(
        &u,
        &target2.url("/health"),
        json!({"escalationPolicyId": policy["id"]}),
    )
    .await;
    target2.set(500);
    tick(&srv, &clock).await;
    // Two open alerts now, but the second sent nothing yet (its only step is 10 min away).
    assert_eq!(alerts(&u, "?status=open").await.len(), 2);
    assert_eq!(queued(&srv, &ws).await.len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn degraded_notifies_without_an_alert() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("degraded@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    let opened_only = channel(
        &srv,
        &ws,
        Chan {
            events: &["alert.opened"],
            ..Chan::default()
        },
    )
    .await;
    let id = http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [ch, opened_only],
               "config": {"assertions": [{"target": "statusCode", "operator": "eq",
                                          "value": 200, "severity": "warn"}]}}),
    )
    .await;
    target.set(201);
    tick(&srv, &clock).await;
    assert_eq!(monitor(&u, &id).await["status"], "DEGRADED");
    assert!(alerts(&u, "").await.is_empty());
    let q = queued(&srv, &ws).await;
    assert_eq!(pairs(&q), want(&[(&ch, "monitor.degraded")]));
    assert_eq!(q[0].alert_id, None);
    assert_eq!(q[0].payload["data"]["alert"], Value::Null);
    assert_eq!(q[0].payload["data"]["monitor"]["status"], "DEGRADED");
    assert!(q[0].payload["data"]["cause"].is_string());
    srv.stop().await;
}

#[tokio::test]
async fn a_stale_monitor_notifies_the_default_channels() {
    use tocsin::monitoring::staleness;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("stale@example.com").await;
    let ws = u.workspace_id.clone();
    let own = channel(&srv, &ws, Chan::default()).await;
    let default = channel(
        &srv,
        &ws,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    let id = http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [own]}),
    )
    .await;
    clock.advance_ms(3 * INTERVAL_MS);
    assert_eq!(
        staleness::scan_store(srv.state.runner(), clock.now_ms(), T0)
            .await
            .unwrap(),
        1
    );
    let q = queued(&srv, &ws).await;
    assert_eq!(pairs(&q), want(&[(&default, "monitor.stale")]));
    assert_eq!(q[0].payload["data"]["monitor"]["id"], json!(id));
    assert!(alerts(&u, "").await.is_empty());
    srv.stop().await;
}

#[tokio::test]
async fn push_down_and_a_missed_deadline_each_open_one_alert() {
    use tocsin::push::watcher;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("push-alerts@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    let m = create(
        &u,
        json!({"name": "backup", "type": "PUSH", "interval": 60, "gracePeriod": 30,
               "notificationChannelIds": [ch]}),
    )
    .await;
    let (id, token) = (
        m["id"].as_str().unwrap().to_string(),
        m["pushToken"].as_str().unwrap().to_string(),
    );
    let (srv_ref, token_ref) = (&srv, &token);
    let push = |query: &'static str| {
        clock.advance_ms(1_000);
        async move {
            let res = monitors::push(srv_ref, token_ref, query).await;
            assert_eq!(res.status(), 202);
        }
    };
    push("").await;
    push("?status=down").await;
    assert_eq!(monitor(&u, &id).await["status"], "DOWN");
    push("?status=down").await;
    let open = alerts(&u, "?status=open").await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["cause"], "the job reported status=down");
    push("").await;
    assert!(alerts(&u, "?status=open").await.is_empty());

    // Silence past interval + grace: the watcher's miss opens a new alert.
    let last = clock.now_ms();
    clock.set_ms(last + 90_001);
    assert_eq!(
        watcher::run_due(srv.state.runner(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    let open = alerts(&u, "?status=open").await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["cause"], "no push received within the grace period");
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[
            (&ch, "alert.opened"),
            (&ch, "alert.resolved"),
            (&ch, "alert.opened"),
        ])
    );
    srv.stop().await;
}

#[tokio::test]
async fn acknowledge_through_the_api() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("ack@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [ch]}),
    )
    .await;
    target.set(500);
    tick(&srv, &clock).await;
    let alert_id = alerts(&u, "").await[0]["id"].as_str().unwrap().to_string();
    let path = format!("/alerts/{alert_id}/acknowledge");

    // Reading is not enough.
    let reader = Bearer::new(&srv.base, &u.token(&["monitors:read"]).await);
    expect_error(
        reader.call(Method::POST, &path, None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    // Another workspace does not see it.
    let stranger = srv.sign_up("stranger@example.com").await;
    expect_error(
        stranger.call(Method::POST, &path, None).await,
        404,
        "ALERT_NOT_FOUND",
    )
    .await;
    expect_error(
        stranger
            .call(Method::GET, &format!("/alerts/{alert_id}"), None)
            .await,
        404,
        "ALERT_NOT_FOUND",
    )
    .await;

    clock.advance_ms(5_000);
    let acked = json_of(u.call(Method::POST, &path, None).await, 200).await;
    assert_eq!(acked["status"], "ACKNOWLEDGED");
    assert_eq!(acked["acknowledgedBy"], json!(u.user_id));
    assert_eq!(
        acked["acknowledgedAt"],
        json!(tocsin::clock::rfc3339(clock.now_ms()))
    );
    assert_eq!(get(&u, &format!("/alerts/{alert_id}")).await, acked);
    assert_eq!(alerts(&u, "?status=acknowledged").await.len(), 1);
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[(&ch, "alert.opened"), (&ch, "alert.acknowledged")])
    );
    // Audited.
    let audit = get(&u, "/audit-log").await;
    let text = audit.to_string();
    assert!(text.contains("alert.acknowledge"), "{text}");

    // Twice is a conflict; so is acknowledging a resolved alert.
    let again = expect_error(
        u.call(Method::POST, &path, None).await,
        409,
        "ALERT_NOT_OPEN",
    )
    .await;
    assert!(again["message"].as_str().unwrap().contains("acknowledged"));
    target.set(200);
    tick(&srv, &clock).await;
    assert_eq!(
        get(&u, &format!("/alerts/{alert_id}")).await["status"],
        "RESOLVED"
    );
    let done = expect_error(
        u.call(Method::POST, &path, None).await,
        409,
        "ALERT_NOT_OPEN",
    )
    .await;
    assert!(done["message"].as_str().unwrap().contains("resolved"));
    // Resolving an acknowledged alert tells the same channels.
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[
            (&ch, "alert.opened"),
            (&ch, "alert.acknowledged"),
            (&ch, "alert.resolved"),
        ])
    );
    expect_error(
        u.call(Method::GET, "/alerts/nope", None).await,
        404,
        "ALERT_NOT_FOUND",
    )
    .await;
    expect_error(
        u.call(Method::GET, "/alerts?status=bogus", None).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    srv.stop().await;
}

/// The acknowledge link of the newest alert.opened delivery.
async fn ack_link(srv: &TestServer, ws: &str) -> String {
    queued(srv, ws)
        .await
        .iter()
        .rev()
        .find(|d| d.event == "alert.opened")
        .unwrap()
        .payload["data"]["links"]["acknowledge"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn page(method: Method, url: &str) -> (u16, String, String) {
    let res = reqwest::Client::new()
        .request(method, url)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (status, ct, res.text().await.unwrap())
}

#[tokio::test]
async fn the_one_click_link_confirms_acknowledges_once_and_expires() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("link@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [ch]}),
    )
    .await;
    target.set(500);
    tick(&srv, &clock).await;
    let alert_id = alerts(&u, "").await[0]["id"].as_str().unwrap().to_string();
    let link = ack_link(&srv, &ws).await;

    // Opening the link (what a chat preview does) changes nothing.
    let (status, ct, body) = page(Method::GET, &link).await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(body.contains("<form method=\"post\""), "{body}");
    assert!(body.contains("api"), "{body}");
    // A page for people: no script, no loads, its one form posting back here; never sniffed.
    let res = reqwest::get(&link).await.unwrap();
    let csp = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        get(&u, &format!("/alerts/{alert_id}")).await["status"],
        "OPEN"
    );

    // The form's POST acknowledges.
    let (status, ct, body) = page(Method::POST, &link).await;
    assert_eq!(status, 200, "{body}");
    assert!(ct.starts_with("text/html"));
    assert!(body.contains("acknowledged"), "{body}");
    let a = get(&u, &format!("/alerts/{alert_id}")).await;
    assert_eq!(a["status"], "ACKNOWLEDGED");
    assert_eq!(a["acknowledgedBy"], "link");
    assert_eq!(
        pairs(&queued(&srv, &ws).await),
        want(&[(&ch, "alert.opened"), (&ch, "alert.acknowledged")])
    );
    assert!(get(&u, "/audit-log")
        .await
        .to_string()
        .contains("alert.acknowledge"));

    // Single use: the second POST is refused, as a page.
    let (status, ct, body) = page(Method::POST, &link).await;
    assert_eq!(status, 409);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(body.contains("already acknowledged"), "{body}");
    assert_eq!(queued(&srv, &ws).await.len(), 2);

    // A tampered or missing token is an HTML error, not the JSON envelope.
    let (status, ct, _) = page(Method::POST, &format!("{link}x")).await;
    assert_eq!((status, ct.starts_with("text/html")), (400, true));
    let (status, ct, _) = page(Method::GET, &srv.url("/alerts/ack")).await;
    assert_eq!((status, ct.starts_with("text/html")), (400, true));
    let other = tocsin::alerting::ack_link::Links::new(&srv.base, b"not the server's secret");
    let (status, _, _) = page(Method::POST, &other.acknowledge(&alert_id, clock.now_ms())).await;
    assert_eq!(status, 400);

    // Expiry: a fresh outage's link, used a day later.
    target.set(200);
    tick(&srv, &clock).await;
    target.set(500);
    tick(&srv, &clock).await;
    let link = ack_link(&srv, &ws).await;
    clock.advance_ms(tocsin::alerting::ack_link::LIFETIME_MS);
    let (status, ct, body) = page(Method::POST, &link).await;
    assert_eq!((status, ct.starts_with("text/html")), (410, true), "{body}");
    assert!(body.contains("expired"));
    assert_eq!(alerts(&u, "?status=open").await.len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn monitor_alerting_fields_round_trip_and_are_validated() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("fields@example.com").await;
    let ws = u.workspace_id.clone();
    let a = channel(&srv, &ws, Chan::default()).await;
    let b = channel(&srv, &ws, Chan::default()).await;
    let other = srv.sign_up("fields-other@example.com").await;
    let foreign = channel(&srv, &other.workspace_id, Chan::default()).await;
    let policy = json_of(
        u.call(
            Method::POST,
            "/escalation-policies",
            Some(
                json!({"name": "p", "steps": [{"delayMinutes": 0, "notificationChannelIds": [a]}]}),
            ),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Defaults: none.
    let plain = create(&u, json!({"name": "plain", "type": "PUSH"})).await;
    assert_eq!(plain["notificationChannelIds"], json!([]));
    assert_eq!(plain["escalationPolicyId"], Value::Null);
    // Right after lastPushAt, in the document as sent.
    let raw = u
        .call(
            Method::GET,
            &format!("/monitors/{}", plain["id"].as_str().unwrap()),
            None,
        )
        .await
        .text()
        .await
        .unwrap();
    let pos = |k: &str| raw.find(&format!("\"{k}\":")).unwrap();
    assert!(pos("lastPushAt") < pos("notificationChannelIds"), "{raw}");
    assert!(
        pos("notificationChannelIds") < pos("escalationPolicyId"),
        "{raw}"
    );
    assert!(pos("escalationPolicyId") < pos("lastCheckAt"), "{raw}");

    let m = create(
        &u,
        json!({"name": "m", "type": "PUSH", "notificationChannelIds": [b, a],
               "escalationPolicyId": policy}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["notificationChannelIds"], json!([b, a]));
    assert_eq!(m["escalationPolicyId"], json!(policy));
    let read = monitor(&u, &id).await;
    assert_eq!(read["notificationChannelIds"], json!([b, a]));
    assert_eq!(read["escalationPolicyId"], json!(policy));
    // The cached list and the page show them too.
    let list = get(&u, "/monitors").await;
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(id))
        .unwrap();
    assert_eq!(*listed, read);
    let paged = get(&u, "/monitors/page").await;
    let p = paged["monitors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(id))
        .unwrap();
    assert_eq!(*p, read);

    // PATCH replaces the channels; null removes the policy.
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"notificationChannelIds": [a], "escalationPolicyId": null})),
        )
        .await;
    let patched = json_of(res, 200).await;
    assert_eq!(patched["notificationChannelIds"], json!([a]));
    assert_eq!(patched["escalationPolicyId"], Value::Null);
    let list = get(&u, "/monitors").await;
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(id))
        .unwrap();
    assert_eq!(listed["notificationChannelIds"], json!([a]));
    assert_eq!(listed["escalationPolicyId"], Value::Null);

    // Unknown, foreign and repeated channels; unknown policy: exact fields, nothing stored.
    let bad = expect_error(
        u.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "x", "type": "PUSH", "notificationChannelIds": ["nope", a, a, foreign],
                        "escalationPolicyId": "nope"})),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let mut fields: Vec<&str> = bad["flattened"]["fieldErrors"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "escalationPolicyId",
            "notificationChannelIds.0",
            "notificationChannelIds.2",
            "notificationChannelIds.3"
        ]
    );
    assert_eq!(get(&u, "/monitors").await.as_array().unwrap().len(), 2);
    let bad = expect_error(
        u.call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"escalationPolicyId": "nope"})),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(bad["field"], "escalationPolicyId");

    // Deleting the policy detaches it from its monitors, in every read.
    let m2 = create(
        &u,
        json!({"name": "m2", "type": "PUSH", "escalationPolicyId": policy}),
    )
    .await;
    let id2 = m2["id"].as_str().unwrap().to_string();
    let _ = get(&u, "/monitors").await; // caches the part
    let res = u
        .call(
            Method::DELETE,
            &format!("/escalation-policies/{policy}"),
            None,
        )
        .await;
    assert_eq!(res.status(), 204);
    assert_eq!(monitor(&u, &id2).await["escalationPolicyId"], Value::Null);
    let list = get(&u, "/monitors").await;
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(id2))
        .unwrap();
    assert_eq!(listed["escalationPolicyId"], Value::Null);
    srv.stop().await;
}

#[tokio::test]
async fn alert_pages_follow_the_cursor() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("pages@example.com").await;
    let mut targets = Vec::new();
    for _ in 0..3 {
        let t = Target::start().await;
        http_monitor(&u, &t.url("/health"), json!({})).await;
        t.set(500);
        targets.push(t);
    }
    tick(&srv, &clock).await;
    let first = get(&u, "/alerts?limit=2").await;
    assert_eq!(first["alerts"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = get(&u, &format!("/alerts?limit=2&cursor={cursor}")).await;
    assert_eq!(second["alerts"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextCursor"], Value::Null);
    let ids: Vec<Value> = first["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["alerts"].as_array().unwrap())
        .map(|a| a["id"].clone())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.as_str().cmp(&a.as_str()));
    assert_eq!(ids, sorted, "newest first");
    expect_error(
        u.call(Method::GET, "/alerts?limit=0", None).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let _ = ALL_EVENTS;
    srv.stop().await;
}

#[tokio::test]
async fn a_region_losing_its_last_probe_notifies_the_default_channels_once() {
    use tocsin::monitoring::staleness::{watch_regions, RegionWatch};
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("region@example.com").await;
    let ws = u.workspace_id.clone();
    let default = channel(
        &srv,
        &ws,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    let bystander = srv.sign_up("elsewhere@example.com").await;
    let their_default = channel(
        &srv,
        &bystander.workspace_id,
        Chan {
            is_default: true,
            ..Chan::default()
        },
    )
    .await;
    let target = Target::start().await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    http_monitor(&bystander, &target.url("/health"), json!({})).await;
    // The region is known once a probe key exists; the row says where the monitor checks from.
    sqlx::query("UPDATE monitors SET regions = $1 WHERE id = $2")
        .bind(r#"["local","eu-west"]"#)
        .bind(&id)
        .execute(srv.state.db().writer())
        .await
        .unwrap();

    let mut watch = RegionWatch::default();
    let probes = srv.state.probes();
    let (a, _rx_a) = probes.register("eu-west", "fra-1", clock.now_ms());
    let (b, _rx_b) = probes.register("eu-west", "fra-2", clock.now_ms());
    assert!(
        watch_regions(srv.state.runner(), &mut watch, clock.now_ms())
            .await
            .unwrap()
            .is_empty()
    );
    drop(a);
    assert!(
        watch_regions(srv.state.runner(), &mut watch, clock.now_ms())
            .await
            .unwrap()
            .is_empty()
    );
    drop(b);
    assert_eq!(
        watch_regions(srv.state.runner(), &mut watch, clock.now_ms())
            .await
            .unwrap(),
        ["eu-west"]
    );
    assert!(
        watch_regions(srv.state.runner(), &mut watch, clock.now_ms())
            .await
            .unwrap()
            .is_empty()
    );
    let q = queued(&srv, &ws).await;
    assert_eq!(pairs(&q), want(&[(&default, "region.down")]));
    assert_eq!(q[0].payload["data"]["region"], "eu-west");
    assert!(queued(&srv, &bystander.workspace_id)
        .await
        .iter()
        .all(|d| d.channel_id != their_default));
    srv.stop().await;
}

/// The `ETag` of a response, without its quotes.
fn etag(res: &reqwest::Response) -> String {
    res.headers()
        .get("etag")
        .unwrap_or_else(|| panic!("no ETag on {}", res.url()))
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn an_alert_carries_an_etag_that_acknowledge_honours_in_if_match() {
    use tocsin::alerting::escalation;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("alert-etag@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    let policy = json_of(
        u.call(
            Method::POST,
            "/escalation-policies",
            Some(json!({"name": "On call", "steps": [
                {"delayMinutes": 0, "notificationChannelIds": [ch]},
                {"delayMinutes": 5, "notificationChannelIds": [ch]}]})),
        )
        .await,
        201,
    )
    .await;
    let m = create(
        &u,
        json!({"name": "backup", "type": "PUSH", "interval": 3600,
               "escalationPolicyId": policy["id"]}),
    )
    .await;
    let token = m["pushToken"].as_str().unwrap().to_string();
    let (srv_ref, token_ref) = (&srv, &token);
    let push = |query: &'static str| {
        clock.advance_ms(1_000);
        async move {
            let res = monitors::push(srv_ref, token_ref, query).await;
            assert_eq!(res.status(), 202);
        }
    };
    push("?status=down").await;
    let alert_id = alerts(&u, "?status=open").await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/alerts/{alert_id}");
    let read = |path: String| {
        let u = &u;
        async move {
            let res = u.call(Method::GET, &path, None).await;
            assert_eq!(res.status(), 200);
            let tag = etag(&res);
            (tag, res.json::<Value>().await.unwrap())
        }
    };
    let (opened, _) = read(path.clone()).await;
    assert!(opened.starts_with('"') && opened.ends_with('"'), "{opened}");

    // An escalation step changes the alert: a new ETag.
    clock.advance_ms(5 * 60_000);
    assert_eq!(
        escalation::run_due(srv.state.cx(), clock.now_ms())
            .await
            .unwrap(),
        1
    );
    let (escalated, a) = read(path.clone()).await;
    assert_eq!(a["escalationStep"], 2);
    assert_ne!(escalated, opened);

    // A stale If-Match: 409 VERSION_CONFLICT, and nothing changes.
    let ack = |tag: Option<String>| {
        let mut req = u
            .client
            .post(srv.url(&format!("/alerts/{alert_id}/acknowledge")));
        if let Some(t) = tag {
            req = req.header("if-match", t);
        }
        async move { req.send().await.unwrap() }
    };
    let res = ack(Some(opened.clone())).await;
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let (still, a) = read(path.clone()).await;
    assert_eq!(a["status"], "OPEN");
    assert_eq!(still, escalated);

    // The current one acknowledges; the answer carries the new version.
    let res = ack(Some(escalated.clone())).await;
    assert_eq!(res.status(), 200);
    let acked = etag(&res);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "ACKNOWLEDGED");
    assert_ne!(acked, escalated);
    let (read_back, _) = read(path.clone()).await;
    assert_eq!(read_back, acked);

    // Acknowledging again: stale tag first, then the current one finds it not open.
    let res = ack(Some(escalated)).await;
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = ack(Some(acked.clone())).await;
    expect_error(res, 409, "ALERT_NOT_OPEN").await;
    let res = ack(Some("*".into())).await;
    expect_error(res, 409, "ALERT_NOT_OPEN").await;

    // Recovery resolves it: a new ETag again.
    push("").await;
    let (resolved, a) = read(path).await;
    assert_eq!(a["status"], "RESOLVED");
    assert_ne!(resolved, acked);
    srv.stop().await;
}
