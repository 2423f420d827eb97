//! Maintenance windows end to end: the `/maintenance-windows` API (CRUD, version lock,
//! capabilities, validation with exact codes and fields, absent `recurring` keys), and the
//! engine on a manual clock against a real loopback HTTP target: a monitor goes MAINTENANCE at
//! the window's start without a check at that instant, its checks are stored as MAINTENANCE
//! heartbeats, nothing alerts, and at the end the check run at once gives its status (an
//! outage still going on surfaces as MAINTENANCE -> DOWN); a weekly window in Europe/Berlin
//! recurring on the driven clock and kept out of uptime figures; a push monitor whose down
//! push and missed deadline inside the window change nothing but the heartbeat, and which
//! leaves MAINTENANCE when the window ends for what its job last said (DOWN with its alert,
//! UP) or, having heard nothing that stands, PENDING until its next push or deadline; and (on
//! PostgreSQL) a window written through one node taking effect on the node that schedules.

#![allow(clippy::unwrap_used)]

use crate::common;
use common::target::Target;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use common::clock::{rfc, run_due, INTERVAL_MS, T0};
use common::monitors::{self, array, events, heartbeats, http_monitor, monitor};
use common::{expect_error, json_of, pg_admin_url, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::ManualClock;
use tocsin::monitoring::maintenance::{self, Synced};

fn utc_ms(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .timestamp_millis()
}

async fn create_window(u: &User, body: Value) -> Value {
    json_of(
        u.call(Method::POST, "/maintenance-windows", Some(body))
            .await,
        201,
    )
    .await
}

/// Moves the clock to `ms` and runs the checks due then.
async fn checks_at(srv: &TestServer, clock: &ManualClock, ms: i64) -> usize {
    clock.set_ms(ms);
    run_due(srv, ms).await.len()
}

/// Moves the clock to `ms` and lets the maintenance engine act; what it did, by monitor.
async fn engine_at(srv: &TestServer, clock: &ManualClock, ms: i64) -> Vec<(String, Synced)> {
    clock.set_ms(ms);
    maintenance::run_due(srv.state.runner(), ms).await.unwrap()
}

async fn status(u: &User, id: &str) -> String {
    monitor(u, id).await["status"].as_str().unwrap().to_string()
}

/// (kind, from, to, alert) of each event, newest first.
async fn event_list(u: &User, id: &str) -> Vec<(String, String, String, bool)> {
    events(u, id)
        .await
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["from"].as_str().unwrap().to_string(),
                e["to"].as_str().unwrap().to_string(),
                e["alert"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn ev(kind: &str, from: &str, to: &str, alert: bool) -> (String, String, String, bool) {
    (kind.into(), from.into(), to.into(), alert)
}

/// Heartbeat statuses, newest first.
async fn beat_statuses(u: &User, id: &str) -> Vec<String> {
    heartbeats(u, id, "")
        .await
        .iter()
        .map(|h| h["status"].as_str().unwrap().to_string())
        .collect()
}

/// (total, down) checks of the hourly stats in `[from, to)`.
async fn counted(u: &User, id: &str, from: i64, to: i64) -> (i64, i64) {
    let rows = array(
        u,
        &format!(
            "/monitors/{id}/stats/hourly?from={}&to={}",
            rfc(from),
            rfc(to)
        ),
    )
    .await;
    rows.iter().fold((0, 0), |(t, d), r| {
        (
            t + r["totalChecks"].as_i64().unwrap(),
            d + r["downChecks"].as_i64().unwrap(),
        )
    })
}

// ---------------------------------------------------------------------------------------------
// The API

#[tokio::test]
async fn crud_version_lock_and_capabilities() {
    let (srv, _clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("maint@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    let other = http_monitor(&u, &target.url("/health"), json!({})).await;

    let w = create_window(
        &u,
        json!({"monitorId": id, "title": "DB upgrade", "description": "v16",
               "startsAt": "2023-11-15T01:00:00Z", "endsAt": "2023-11-15T02:30:00Z",
               "timezone": "Europe/Berlin", "recurring": {"frequency": "weekly", "dayOfWeek": 3},
               "excludeFromUptime": true}),
    )
    .await;
    let wid = w["id"].as_str().unwrap().to_string();
    assert_eq!(w["workspaceId"], u.workspace_id.as_str());
    assert_eq!(w["monitorId"], id.as_str());
    assert_eq!(w["startsAt"], "2023-11-15T01:00:00.000Z");
    assert_eq!(w["endsAt"], "2023-11-15T02:30:00.000Z");
    assert_eq!(w["timezone"], "Europe/Berlin");
    // Keys that do not apply are absent, not null.
    assert_eq!(
        w["recurring"],
        json!({"frequency": "weekly", "dayOfWeek": 3})
    );
    assert_eq!(w["excludeFromUptime"], true);
    let mut keys: Vec<&str> = w.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "createdAt",
            "description",
            "endsAt",
            "excludeFromUptime",
            "id",
            "monitorId",
            "recurring",
            "startsAt",
            "timezone",
            "title",
            "updatedAt",
            "workspaceId"
        ]
    );

    // A one-off window with defaults: UTC, not excluded, recurring null.
    let once = create_window(
        &u,
        json!({"monitorId": other, "title": "Move", "startsAt": "2023-11-20T10:00:00Z",
               "endsAt": "2023-11-20T11:00:00Z"}),
    )
    .await;
    assert_eq!(once["recurring"], Value::Null);
    assert_eq!(once["timezone"], "UTC");
    assert_eq!(once["excludeFromUptime"], false);
    assert_eq!(once["description"], Value::Null);

    // Lists: a plain array; `monitorId` filters.
    let all = array(&u, "/maintenance-windows").await;
    assert_eq!(all.len(), 2);
    let mine = array(&u, &format!("/maintenance-windows?monitorId={id}")).await;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["id"], wid.as_str());

    // GET with ETag; PATCH with a stale If-Match is refused and changes nothing.
    let res = u
        .call(Method::GET, &format!("/maintenance-windows/{wid}"), None)
        .await;
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    json_of(res, 200).await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/maintenance-windows/{wid}"),
            Some(json!({"recurring": {"frequency": "monthly", "dayOfMonth": 31}})),
        )
        .await;
    let patched = json_of(res, 200).await;
    assert_eq!(
        patched["recurring"],
        json!({"frequency": "monthly", "dayOfMonth": 31})
    );
    let stale = srv.url(&format!("/maintenance-windows/{wid}"));
    let res = reqwest::Client::new()
        .patch(stale)
        .bearer_auth(u.token(&["maintenance:write"]).await)
        .header("If-Match", etag)
        .json(&json!({"title": "lost"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let got = json_of(
        u.call(Method::GET, &format!("/maintenance-windows/{wid}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(got["title"], "DB upgrade");
    // recurring: null makes it one-off; description: null clears it.
    let res = u
        .call(
            Method::PATCH,
            &format!("/maintenance-windows/{wid}"),
            Some(json!({"recurring": null, "description": null})),
        )
        .await;
    let patched = json_of(res, 200).await;
    assert_eq!(patched["recurring"], Value::Null);
    assert_eq!(patched["description"], Value::Null);

    // Capabilities: reading needs monitors:read, writing maintenance:write.
    let reader = common::Bearer::new(&srv.base, &u.token(&["monitors:read"]).await);
    assert_eq!(
        reader
            .call(Method::GET, "/maintenance-windows", None)
            .await
            .status(),
        200
    );
    expect_error(
        reader
            .call(Method::DELETE, &format!("/maintenance-windows/{wid}"), None)
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let writer = common::Bearer::new(&srv.base, &u.token(&["maintenance:write"]).await);
    expect_error(
        writer.call(Method::GET, "/maintenance-windows", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;

    // Another workspace sees nothing: not found, never forbidden.
    let stranger = srv.sign_up("stranger@example.com").await;
    expect_error(
        stranger
            .call(Method::GET, &format!("/maintenance-windows/{wid}"), None)
            .await,
        404,
        "MAINTENANCE_WINDOW_NOT_FOUND",
    )
    .await;
    assert!(array(&stranger, "/maintenance-windows").await.is_empty());

    // Delete: 204, then gone.
    let res = writer
        .call(Method::DELETE, &format!("/maintenance-windows/{wid}"), None)
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        u.call(Method::GET, &format!("/maintenance-windows/{wid}"), None)
            .await,
        404,
        "MAINTENANCE_WINDOW_NOT_FOUND",
    )
    .await;

    // Every write was audited.
    let audit = json_of(u.call(Method::GET, "/audit-log", None).await, 200).await;
    let text = audit.to_string();
    for action in [
        "maintenance_window.create",
        "maintenance_window.update",
        "maintenance_window.delete",
    ] {
        assert!(text.contains(action), "{action} missing from {text}");
    }
}

#[tokio::test]
async fn bad_input_gets_the_exact_field() {
    let srv = TestServer::start().await;
    let target = Target::start().await;
    let u = srv.sign_up("bad@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    let stranger = srv.sign_up("other@example.com").await;
    let theirs = http_monitor(&stranger, &target.url("/health"), json!({})).await;

    let base = json!({"monitorId": id, "title": "w", "startsAt": "2026-03-01T02:00:00Z",
                      "endsAt": "2026-03-01T03:00:00Z"});
    let with = |extra: Value| {
        let mut b = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (with(json!({"monitorId": "nope"})), "monitorId"),
        // Another workspace's monitor is unknown here.
        (with(json!({"monitorId": theirs})), "monitorId"),
        (with(json!({"timezone": "Mars/Olympus"})), "timezone"),
        (with(json!({"endsAt": "2026-03-01T02:00:00Z"})), "endsAt"),
        (with(json!({"endsAt": "2026-03-01T01:00:00Z"})), "endsAt"),
        (with(json!({"title": ""})), "title"),
        (
            with(json!({"recurring": {"frequency": "weekly"}})),
            "recurring.dayOfWeek",
        ),
        (
            with(json!({"recurring": {"frequency": "monthly"}})),
            "recurring.dayOfMonth",
        ),
        (
            with(json!({"recurring": {"frequency": "cron"}})),
            "recurring.expression",
        ),
        (
            with(json!({"recurring": {"frequency": "daily", "dayOfMonth": 3}})),
            "recurring.dayOfMonth",
        ),
        (
            with(
                json!({"recurring": {"frequency": "weekly", "dayOfWeek": 1, "expression": "* * * * *"}}),
            ),
            "recurring.expression",
        ),
        (
            with(json!({"recurring": {"frequency": "weekly", "dayOfWeek": 7}})),
            "recurring.dayOfWeek",
        ),
        (
            with(json!({"recurring": {"frequency": "weekly", "dayOfWeek": -1}})),
            "recurring.dayOfWeek",
        ),
        (
            with(json!({"recurring": {"frequency": "monthly", "dayOfMonth": 32}})),
            "recurring.dayOfMonth",
        ),
        (
            with(json!({"recurring": {"frequency": "monthly", "dayOfMonth": 0}})),
            "recurring.dayOfMonth",
        ),
        (
            with(json!({"recurring": {"frequency": "cron", "expression": "61 * * * *"}})),
            "recurring.expression",
        ),
        (
            with(
                json!({"recurring": {"frequency": "cron", "expression": format!("0 2 * * *{}", " ".repeat(95))}}),
            ),
            "recurring.expression",
        ),
        (
            with(json!({"recurring": {"frequency": "hourly"}})),
            "recurring.frequency",
        ),
        // An occurrence longer than its period.
        (
            with(json!({"endsAt": "2026-03-02T02:00:01Z", "recurring": {"frequency": "daily"}})),
            "endsAt",
        ),
        (
            with(
                json!({"endsAt": "2026-03-01T03:01:00Z", "recurring": {"frequency": "cron", "expression": "0 * * * *"}}),
            ),
            "endsAt",
        ),
        (with(json!({"startsAt": "yesterday"})), "startsAt"),
        (with(json!({"color": "red"})), "color"),
    ];
    for (body, field) in cases {
        let res = u
            .call(Method::POST, "/maintenance-windows", Some(body.clone()))
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err["field"], field, "{body} gave {err}");
    }
    // Nothing was stored.
    assert!(array(&u, "/maintenance-windows").await.is_empty());

    // PATCH validates the merged window.
    let w = create_window(&u, base.clone()).await;
    let wid = w["id"].as_str().unwrap();
    let res = u
        .call(
            Method::PATCH,
            &format!("/maintenance-windows/{wid}"),
            Some(json!({"endsAt": "2026-03-01T01:00:00Z"})),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err["field"], "endsAt");
    expect_error(
        u.call(Method::GET, "/maintenance-windows/nope", None).await,
        404,
        "MAINTENANCE_WINDOW_NOT_FOUND",
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// The engine

#[tokio::test]
async fn a_window_holds_the_monitor_and_an_outage_surfaces_when_it_ends() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("engine@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    assert_eq!(checks_at(&srv, &clock, T0 + INTERVAL_MS).await, 1);
    assert_eq!(status(&u, &id).await, "UP");

    let (start, end) = (T0 + 25_000, T0 + 65_000);
    create_window(
        &u,
        json!({"monitorId": id, "title": "Failover drill", "startsAt": rfc(start),
               "endsAt": rfc(end), "excludeFromUptime": false}),
    )
    .await;
    // Not yet.
    assert!(engine_at(&srv, &clock, start - 1).await.is_empty());
    assert_eq!(status(&u, &id).await, "UP");
    // At the start, with no check at that instant.
    assert_eq!(
        engine_at(&srv, &clock, start).await,
        vec![(id.clone(), Synced::Held)]
    );
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], "MAINTENANCE");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("maintenance", "UP", "MAINTENANCE", false)
    );
    // Running it again changes nothing.
    assert!(engine_at(&srv, &clock, start + 1).await.is_empty());

    // Checks still run and are stored as MAINTENANCE; a failing target alerts nobody.
    target.set(500);
    for k in 1..=3 {
        assert_eq!(checks_at(&srv, &clock, start + k * INTERVAL_MS).await, 1);
        assert_eq!(status(&u, &id).await, "MAINTENANCE");
    }
    assert_eq!(
        beat_statuses(&u, &id).await,
        vec!["MAINTENANCE", "MAINTENANCE", "MAINTENANCE", "UP"]
    );
    let maintenance_beats = heartbeats(&u, &id, "?status=MAINTENANCE").await;
    assert_eq!(maintenance_beats.len(), 3);
    assert_eq!(maintenance_beats[0]["statusCode"], 500);
    assert!(event_list(&u, &id)
        .await
        .iter()
        .all(|e| !e.3 || e.0 != "down"));
    assert_eq!(event_list(&u, &id).await.len(), 2);

    // The end: the check runs at once and the outage still going on surfaces.
    assert_eq!(
        engine_at(&srv, &clock, end).await,
        vec![(id.clone(), Synced::Released { check: true })]
    );
    assert_eq!(status(&u, &id).await, "DOWN");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("down", "MAINTENANCE", "DOWN", true)
    );
    assert_eq!(beat_statuses(&u, &id).await[0], "DOWN");

    // Not excluded from uptime: the window's checks count by their own result.
    assert_eq!(counted(&u, &id, T0 - 3_600_000, end + 1).await, (5, 4));

    target.set(200);
    checks_at(&srv, &clock, end + INTERVAL_MS).await;
    assert_eq!(status(&u, &id).await, "UP");
    srv.stop().await;
}

#[tokio::test]
async fn a_window_that_ends_on_a_healthy_target_gives_up_and_a_deleted_one_releases() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("release@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    checks_at(&srv, &clock, T0 + INTERVAL_MS).await;
    let w = create_window(
        &u,
        json!({"monitorId": id, "title": "w", "startsAt": rfc(T0 + 20_000),
               "endsAt": rfc(T0 + 3_600_000)}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 20_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    // Deleting the window ends it now: the next check (run at once) decides.
    let wid = w["id"].as_str().unwrap();
    let res = u
        .call(Method::DELETE, &format!("/maintenance-windows/{wid}"), None)
        .await;
    assert_eq!(res.status(), 204);
    assert_eq!(
        engine_at(&srv, &clock, T0 + 21_000).await,
        vec![(id.clone(), Synced::Released { check: true })]
    );
    assert_eq!(status(&u, &id).await, "UP");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("up", "MAINTENANCE", "UP", false)
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_weekly_window_recurs_in_its_zone_and_stays_out_of_uptime() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("weekly@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    checks_at(&srv, &clock, T0 + INTERVAL_MS).await;
    // Wednesdays 01:00-02:00 in Berlin (00:00-01:00Z in winter).
    create_window(
        &u,
        json!({"monitorId": id, "title": "Weekly patching",
               "startsAt": "2023-11-15T00:00:00Z", "endsAt": "2023-11-15T01:00:00Z",
               "timezone": "Europe/Berlin", "excludeFromUptime": true,
               "recurring": {"frequency": "weekly", "dayOfWeek": 3}}),
    )
    .await;

    let wed = utc_ms(2023, 11, 15, 0, 0);
    assert_eq!(
        engine_at(&srv, &clock, wed).await,
        vec![(id.clone(), Synced::Held)]
    );
    target.set(500);
    checks_at(&srv, &clock, wed + 600_000).await;
    checks_at(&srv, &clock, wed + 1_200_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    // Excluded: the hour of the window holds no counted check, though its heartbeats exist.
    assert_eq!(counted(&u, &id, wed, wed + 3_600_000).await, (0, 0));
    let beats = heartbeats(
        &u,
        &id,
        &format!("?from={}&to={}", rfc(wed), rfc(wed + 3_600_000)),
    )
    .await;
    assert_eq!(beats.len(), 2);
    assert!(beats.iter().all(|b| b["status"] == "MAINTENANCE"));

    // 01:00Z: over; the target is still failing.
    engine_at(&srv, &clock, wed + 3_600_000).await;
    assert_eq!(status(&u, &id).await, "DOWN");
    target.set(200);
    // Thursday: no window.
    let thu = utc_ms(2023, 11, 16, 0, 0);
    checks_at(&srv, &clock, thu).await;
    assert!(engine_at(&srv, &clock, thu).await.is_empty());
    assert_eq!(status(&u, &id).await, "UP");

    // The next Wednesday, same wall-clock time.
    let next = utc_ms(2023, 11, 22, 0, 0);
    assert!(engine_at(&srv, &clock, next - 1).await.is_empty());
    assert_eq!(
        engine_at(&srv, &clock, next).await,
        vec![(id.clone(), Synced::Held)]
    );
    checks_at(&srv, &clock, next + 1_800_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    assert_eq!(beat_statuses(&u, &id).await[0], "MAINTENANCE");
    assert_eq!(
        engine_at(&srv, &clock, next + 3_600_000).await,
        vec![(id.clone(), Synced::Released { check: true })]
    );
    assert_eq!(status(&u, &id).await, "UP");
    let kinds: Vec<String> = event_list(&u, &id).await.into_iter().map(|e| e.0).collect();
    assert_eq!(
        kinds,
        vec!["up", "maintenance", "up", "down", "maintenance", "up"]
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_push_monitor_in_a_window_changes_nothing_but_the_heartbeat() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("push@example.com").await;
    let (id, push) = push_monitor(&srv, &u, 60).await;
    assert_eq!(push("").await, 202);
    assert_eq!(status(&u, &id).await, "UP");
    create_window(
        &u,
        json!({"monitorId": id, "title": "w", "startsAt": rfc(T0 + 10_000),
               "endsAt": rfc(T0 + 600_000)}),
    )
    .await;
    assert_eq!(
        engine_at(&srv, &clock, T0 + 10_000).await,
        vec![(id.clone(), Synced::Held)]
    );
    assert_eq!(status(&u, &id).await, "MAINTENANCE");

    // A down push: heartbeat only.
    clock.set_ms(T0 + 20_000);
    assert_eq!(push("?status=down").await, 202);
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    assert_eq!(beat_statuses(&u, &id).await[0], "MAINTENANCE");
    // A missed deadline (T0+20 s + 60 s + 60 s): heartbeat only.
    clock.set_ms(T0 + 145_000);
    assert_eq!(
        tocsin::push::watcher::run_due(srv.state.runner(), T0 + 145_000)
            .await
            .unwrap(),
        1
    );
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    assert_eq!(
        beat_statuses(&u, &id).await,
        vec!["MAINTENANCE", "MAINTENANCE", "UP"]
    );
    assert!(event_list(&u, &id).await.iter().all(|e| e.0 != "down"));

    // When the window ends the monitor leaves MAINTENANCE at once: a check-in was missed
    // after the job's last push, so nothing it said stands and it waits (PENDING) ...
    assert_eq!(
        engine_at(&srv, &clock, T0 + 600_000).await,
        vec![(id.clone(), Synced::Released { check: false })]
    );
    assert_eq!(status(&u, &id).await, "PENDING");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("pending", "MAINTENANCE", "PENDING", false)
    );
    // ... and the next miss is an outage.
    clock.set_ms(T0 + 601_000);
    tocsin::push::watcher::run_due(srv.state.runner(), T0 + 601_000)
        .await
        .unwrap();
    assert_eq!(status(&u, &id).await, "DOWN");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("down", "PENDING", "DOWN", true)
    );
    srv.stop().await;
}

/// A push monitor (`backup`, expected every `interval` s, grace 60 s) and a function that
/// pushes to it with a query string, answering the status.
/// (The function owns its URL rather than borrowing the server, so the test can stop the
/// server while it is in scope.)
async fn push_monitor(
    srv: &TestServer,
    u: &User,
    interval: i64,
) -> (String, impl Fn(&str) -> Pin<Box<dyn Future<Output = u16>>>) {
    let (id, token) = monitors::push_monitor(
        u,
        json!({"name": "backup", "interval": interval, "gracePeriod": 60}),
    )
    .await;
    let base = srv.url(&format!("/push/{token}"));
    let push = move |query: &str| {
        let url = format!("{base}{query}");
        Box::pin(async move {
            reqwest::Client::new()
                .post(url)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }) as Pin<Box<dyn Future<Output = u16>>>
    };
    (id, push)
}

async fn open_alerts(u: &User, id: &str) -> Vec<Value> {
    let page = json_of(
        u.call(
            Method::GET,
            &format!("/alerts?status=open&monitorId={id}"),
            None,
        )
        .await,
        200,
    )
    .await;
    page["alerts"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_push_monitor_takes_its_last_pushs_status_when_a_window_ends() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("push-end@example.com").await;
    let (id, push) = push_monitor(&srv, &u, 300).await;
    assert_eq!(push("").await, 202);
    assert_eq!(status(&u, &id).await, "UP");
    create_window(
        &u,
        json!({"monitorId": id, "title": "w", "startsAt": rfc(T0 + 10_000),
               "endsAt": rfc(T0 + 100_000)}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 10_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");

    // Inside the window the job says down, up, then down again: nothing alerts yet.
    for (at, query) in [
        (20_000, "?status=down"),
        (30_000, ""),
        (40_000, "?status=down&msg=disk%20full"),
    ] {
        clock.set_ms(T0 + at);
        assert_eq!(push(query).await, 202);
        assert_eq!(status(&u, &id).await, "MAINTENANCE");
    }
    assert!(open_alerts(&u, &id).await.is_empty());

    // The end: its last word was down, so it is DOWN now, with its alert and the job's cause,
    // without waiting for another push.
    assert_eq!(
        engine_at(&srv, &clock, T0 + 100_000).await,
        vec![(id.clone(), Synced::Released { check: false })]
    );
    assert_eq!(status(&u, &id).await, "DOWN");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("down", "MAINTENANCE", "DOWN", true)
    );
    let alerts = open_alerts(&u, &id).await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["cause"], "disk full");
    // Running the engine again changes nothing.
    assert!(engine_at(&srv, &clock, T0 + 101_000).await.is_empty());

    // Another window, in which the job reports up: UP when it ends.
    create_window(
        &u,
        json!({"monitorId": id, "title": "w2", "startsAt": rfc(T0 + 200_000),
               "endsAt": rfc(T0 + 260_000)}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 200_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    clock.set_ms(T0 + 230_000);
    assert_eq!(push("").await, 202);
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    engine_at(&srv, &clock, T0 + 260_000).await;
    assert_eq!(status(&u, &id).await, "UP");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("up", "MAINTENANCE", "UP", false)
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_push_monitor_that_heard_nothing_in_a_window_is_pending_when_it_ends() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("push-quiet@example.com").await;
    let (id, push) = push_monitor(&srv, &u, 60).await;
    assert_eq!(push("").await, 202);
    create_window(
        &u,
        json!({"monitorId": id, "title": "w", "startsAt": rfc(T0 + 10_000),
               "endsAt": rfc(T0 + 50_000)}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 10_000).await;
    assert_eq!(status(&u, &id).await, "MAINTENANCE");
    // No push in the window, and its deadline (T0 + 120 s) is still ahead: PENDING, quietly.
    assert_eq!(
        engine_at(&srv, &clock, T0 + 50_000).await,
        vec![(id.clone(), Synced::Released { check: false })]
    );
    assert_eq!(status(&u, &id).await, "PENDING");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("pending", "MAINTENANCE", "PENDING", false)
    );
    // The deadline passes: DOWN, alerting.
    clock.set_ms(T0 + 121_000);
    assert_eq!(
        tocsin::push::watcher::run_due(srv.state.runner(), T0 + 121_000)
            .await
            .unwrap(),
        1
    );
    assert_eq!(status(&u, &id).await, "DOWN");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("down", "PENDING", "DOWN", true)
    );

    // A window kept out of uptime counts its pushes in no figure but keeps what the job
    // said: the monitor leaves it with the status of that last push.
    clock.set_ms(T0 + 130_000);
    assert_eq!(push("").await, 202);
    create_window(
        &u,
        json!({"monitorId": id, "title": "x", "startsAt": rfc(T0 + 140_000),
               "endsAt": rfc(T0 + 170_000), "excludeFromUptime": true}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 140_000).await;
    clock.set_ms(T0 + 150_000);
    assert_eq!(push("").await, 202);
    engine_at(&srv, &clock, T0 + 170_000).await;
    assert_eq!(status(&u, &id).await, "UP");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("up", "MAINTENANCE", "UP", false)
    );
    // The same with a job that said `down` inside the excluded window: DOWN, alerting.
    create_window(
        &u,
        json!({"monitorId": id, "title": "y", "startsAt": rfc(T0 + 180_000),
               "endsAt": rfc(T0 + 200_000), "excludeFromUptime": true}),
    )
    .await;
    engine_at(&srv, &clock, T0 + 180_000).await;
    clock.set_ms(T0 + 190_000);
    assert_eq!(push("?status=down").await, 202);
    engine_at(&srv, &clock, T0 + 200_000).await;
    assert_eq!(status(&u, &id).await, "DOWN");
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("down", "MAINTENANCE", "DOWN", true)
    );
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Two nodes on one PostgreSQL

#[tokio::test]
async fn a_window_written_on_one_node_applies_on_the_scheduling_node() {
    if pg_admin_url().is_none() {
        return;
    }
    let target = Target::start().await;
    // a serves the API only; b schedules (the real engine on the real clock).
    let a = TestServer::start().await;
    let b = a
        .start_beside(Options {
            clock: None,
            tweak: Some(Box::new(|c| c.scheduler_enabled = true)),
        })
        .await
        .unwrap();
    let u = a.sign_up("cluster@example.com").await;
    let id = http_monitor(&u, &target.url("/health"), json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !b.state.scheduler_role().is_held() {
        assert!(Instant::now() < deadline, "b never took the scheduler role");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let wait_for = |want: &'static str| {
        let (u, id) = (&u, &id);
        async move {
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let now = status(u, id).await;
                if now == want {
                    return;
                }
                assert!(Instant::now() < deadline, "still {now}, never {want}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    wait_for("UP").await;

    let now = Utc::now().timestamp_millis();
    let w = create_window(
        &u,
        json!({"monitorId": id, "title": "cluster", "startsAt": rfc(now - 1_000),
               "endsAt": rfc(now + 3_600_000)}),
    )
    .await;
    wait_for("MAINTENANCE").await;
    // Moved to tomorrow through a: b releases it, and its check at once makes it UP.
    let wid = w["id"].as_str().unwrap();
    let res = u
        .call(
            Method::PATCH,
            &format!("/maintenance-windows/{wid}"),
            Some(json!({"startsAt": rfc(now + 86_400_000), "endsAt": rfc(now + 90_000_000)})),
        )
        .await;
    json_of(res, 200).await;
    wait_for("UP").await;
    assert_eq!(
        event_list(&u, &id).await[0],
        ev("up", "MAINTENANCE", "UP", false)
    );
    b.stop().await;
    a.stop().await;
}
