//! Check cycles end to end, against a real HTTP target on loopback whose answer the test
//! flips: the state machine's confirmations, minimum failure duration and recovery as the API
//! shows them, status-change events, pause and edits, regions without a probe, on-demand
//! checks, and one run of the real scheduler on the real clock. Cycles are driven with a
//! manual clock and `scheduler::run_due` (the background scheduler is off in tests unless a
//! test turns it on).

#![allow(clippy::unwrap_used)]

use crate::common;
use common::target::Target;

use std::time::{Duration, Instant};

use common::clock::{run_due, tick, INTERVAL_MS, T0};
use common::monitors::{create, events, heartbeats, monitor};
use common::{expect_error, json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::ManualClock;
use tocsin::monitoring::monitor::Monitor;
use tocsin::monitoring::scheduler;

fn clock_now(clock: &ManualClock) -> i64 {
    use tocsin::clock::Clock;
    clock.now_ms()
}

fn counters(m: &Value) -> (String, i64, i64, bool) {
    (
        m["status"].as_str().unwrap().to_string(),
        m["consecutiveFailures"].as_i64().unwrap(),
        m["consecutiveSuccesses"].as_i64().unwrap(),
        m["pendingFailureSince"].is_string(),
    )
}

fn st(status: &str, f: i64, s: i64, pending: bool) -> (String, i64, i64, bool) {
    (status.to_string(), f, s, pending)
}

#[tokio::test]
async fn confirmations_duration_and_recovery_with_events() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("ops@example.com").await;
    let m = create(
        &u,
        json!({"name": "api", "type": "HTTP", "url": format!("{}/health", target.base),
               "interval": 10, "timeout": 5, "confirmationsRequired": 2,
               "minFailureDurationMs": 15_000, "recoveryConfirmationsRequired": 2}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(counters(&m), st("PENDING", 0, 0, false));

    // Up: PENDING -> UP, recorded but not alerting.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(counters(&monitor(&u, &id).await), st("UP", 0, 1, false));

    // Failing: two failures in 10 s are confirmed but shorter than 15 s: still UP.
    target.set(500);
    tick(&srv, &clock).await;
    assert_eq!(counters(&monitor(&u, &id).await), st("UP", 1, 0, true));
    tick(&srv, &clock).await;
    assert_eq!(counters(&monitor(&u, &id).await), st("UP", 2, 0, true));
    // Third failure, 20 s after the first: DOWN.
    tick(&srv, &clock).await;
    assert_eq!(counters(&monitor(&u, &id).await), st("DOWN", 3, 0, true));

    // Recovery needs two successes.
    target.set(200);
    tick(&srv, &clock).await;
    assert_eq!(counters(&monitor(&u, &id).await), st("DOWN", 0, 1, false));
    tick(&srv, &clock).await;
    assert_eq!(counters(&monitor(&u, &id).await), st("UP", 0, 2, false));

    // Events, newest first, with exact fields.
    let evs = events(&u, &id).await;
    let summary: Vec<(i64, &str, &str, &str, bool)> = evs
        .iter()
        .map(|e| {
            (
                e["seq"].as_i64().unwrap(),
                e["kind"].as_str().unwrap(),
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
                e["alert"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (3, "up", "DOWN", "UP", true),
            (2, "down", "UP", "DOWN", true),
            (1, "up", "PENDING", "UP", false),
        ]
    );
    let down = &evs[1];
    assert!(down["message"].as_str().unwrap().contains("500"), "{down}");
    assert_eq!(down["monitorId"], json!(id));
    assert_eq!(
        down["createdAt"],
        json!(tocsin::clock::rfc3339(T0 + 4 * INTERVAL_MS))
    );
    let mut keys: Vec<&String> = down.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "alert",
            "createdAt",
            "from",
            "id",
            "kind",
            "message",
            "monitorId",
            "seq",
            "to"
        ]
    );
    // Paging: older than seq 3.
    let older = json_of(
        u.call(
            Method::GET,
            &format!("/monitors/{id}/events?before=3&limit=1"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(older[0]["seq"], json!(2));
    assert_eq!(older.as_array().unwrap().len(), 1);

    // One heartbeat per cycle, each with its region's own verdict.
    let hbs = heartbeats(&u, &id, "").await;
    let statuses: Vec<&str> = hbs.iter().map(|h| h["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["UP", "UP", "DOWN", "DOWN", "DOWN", "UP"]);
    assert!(hbs.iter().all(|h| h["region"] == json!("local")));

    // The events are durable rows, in order, beside the state they describe.
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, kind FROM monitor_events WHERE monitor_id = $1 ORDER BY seq")
            .bind(&id)
            .fetch_all(srv.state.db().reader())
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![(1, "up".into()), (2, "down".into()), (3, "up".into())]
    );
    // They survive a restart, and numbering carries on where it stopped.
    let srv = srv
        .restart(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
    let u = User {
        base: srv.base.clone(),
        ..u
    };
    assert_eq!(events(&u, &id).await.len(), 3);
    target.set(500);
    tick(&srv, &clock).await;
    tick(&srv, &clock).await;
    tick(&srv, &clock).await;
    let evs = events(&u, &id).await;
    assert_eq!(evs[0]["seq"], json!(4));
    assert_eq!(evs[0]["kind"], json!("down"));
    // Another workspace cannot read them.
    let other = srv.sign_up("other@example.com").await;
    expect_error(
        other
            .call(Method::GET, &format!("/monitors/{id}/events"), None)
            .await,
        404,
        "MONITOR_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn paused_never_run_edits_apply_at_once_and_probeless_regions_report_nothing() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let ok = Target::start().await;
    let broken = Target::start().await;
    broken.set(503);
    let u = srv.sign_up("ops@example.com").await;
    let m = create(
        &u,
        json!({"name": "site", "type": "HTTP", "url": format!("{}/", ok.base),
               "interval": 10, "timeout": 5}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));

    // Paused: never runs.
    json_of(
        u.call(Method::POST, &format!("/monitors/{id}/pause"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(tick(&srv, &clock).await, 0);
    assert_eq!(tick(&srv, &clock).await, 0);
    assert_eq!(heartbeats(&u, &id, "").await.len(), 1);

    // Resumed and pointed at the broken target: the very next cycle checks the new URL.
    json_of(
        u.call(Method::POST, &format!("/monitors/{id}/resume"), None)
            .await,
        200,
    )
    .await;
    json_of(
        u.call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"url": format!("{}/", broken.base)})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(tick(&srv, &clock).await, 1);
    let now = monitor(&u, &id).await;
    assert_eq!(counters(&now), st("DOWN", 1, 0, true));
    let evs = events(&u, &id).await;
    assert_eq!(evs[0]["kind"], json!("down"));
    assert_eq!(evs[0]["from"], json!("PENDING"));
    assert_eq!(heartbeats(&u, &id, "").await[0]["statusCode"], json!(503));

    // A region with no live probe reports nothing: no heartbeat, no step, no false DOWN.
    // (`eu-west` has no probe key, so the API would refuse it: the row is edited directly.)
    sqlx::query("UPDATE monitors SET regions = '[\"eu-west\"]' WHERE id = $1")
        .bind(&id)
        .execute(srv.state.db().writer())
        .await
        .unwrap();
    ok.set(200);
    let before = heartbeats(&u, &id, "").await.len();
    let reports = {
        clock.advance_ms(INTERVAL_MS);
        run_due(&srv, clock_now(&clock)).await
    };
    assert_eq!(reports.len(), 1);
    assert!(reports[0].1.verdict.is_none());
    assert_eq!(heartbeats(&u, &id, "").await.len(), before);
    assert_eq!(counters(&monitor(&u, &id).await), st("DOWN", 1, 0, true));
    srv.stop().await;
}

#[tokio::test]
async fn on_demand_check_records_heartbeats_and_leaves_status() {
    let (srv, _clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    target.set(500);
    let u = srv.sign_up("ops@example.com").await;
    let m = create(
        &u,
        json!({"name": "site", "type": "HTTP", "url": format!("{}/", target.base),
               "interval": 10, "timeout": 5}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    let res = u
        .call(Method::POST, &format!("/monitors/{id}/check"), None)
        .await;
    let body = json_of(res, 202).await;
    assert_eq!(body.as_object().unwrap().len(), 1);
    let cid = body["correlationId"].as_str().unwrap().to_string();

    let deadline = Instant::now() + Duration::from_secs(15);
    let found = loop {
        let hbs = heartbeats(&u, &id, &format!("?correlationId={cid}")).await;
        if !hbs.is_empty() || Instant::now() > deadline {
            break hbs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(found.len(), 1, "the on-demand heartbeat arrived");
    assert_eq!(found[0]["status"], json!("DOWN"));
    // The filter found it by its correlation id; on-demand results keep their details.
    assert!(found[0]["message"].as_str().unwrap().contains("500"));
    assert_eq!(found[0]["region"], json!("local"));
    // The state machine was not stepped.
    assert_eq!(
        counters(&monitor(&u, &id).await),
        st("PENDING", 0, 0, false)
    );
    assert!(events(&u, &id).await.is_empty());

    // Paused monitors may be checked by hand; PUSH monitors cannot.
    json_of(
        u.call(Method::POST, &format!("/monitors/{id}/pause"), None)
            .await,
        200,
    )
    .await;
    json_of(
        u.call(Method::POST, &format!("/monitors/{id}/check"), None)
            .await,
        202,
    )
    .await;
    let push = create(&u, json!({"name": "cron", "type": "PUSH"})).await;
    expect_error(
        u.call(
            Method::POST,
            &format!("/monitors/{}/check", push["id"].as_str().unwrap()),
            None,
        )
        .await,
        409,
        "WRONG_MONITOR_TYPE",
    )
    .await;
    expect_error(
        u.call(Method::POST, "/monitors/nope/check", None).await,
        404,
        "MONITOR_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

/// Polls the monitor until `want`, for at most `secs` seconds; returns the last view.
async fn wait_for_status(u: &User, id: &str, want: &str, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let m = monitor(u, id).await;
        if m["status"] == json!(want) || Instant::now() > deadline {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_real_scheduler_takes_a_monitor_down_and_up_again() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.min_interval_seconds = 1;
            c.scheduler_enabled = true;
        })),
    })
    .await;
    let target = Target::start().await;
    let u = srv.sign_up("ops@example.com").await;
    // The timeout must be below the interval, so 2 s is the shortest interval with a timeout.
    let m = create(
        &u,
        json!({"name": "fast", "type": "HTTP", "url": format!("{}/", target.base),
               "interval": 2, "timeout": 1, "confirmationsRequired": 1}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    let up = wait_for_status(&u, &id, "UP", 15).await;
    assert_eq!(up["status"], json!("UP"), "{up}");
    // The scheduler reports what it holds and how late its runs started.
    let stats = srv.state.scheduler_stats();
    assert_eq!(stats.scheduled(), 1);
    let late = stats.lateness();
    assert!(late.runs >= 1, "{late:?}");
    assert!(late.max_ms < 1_000, "{late:?}");
    let metrics = reqwest::get(srv.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("scheduler_start_lateness_seconds_bucket"),
        "{metrics}"
    );

    target.set(500);
    let down = wait_for_status(&u, &id, "DOWN", 15).await;
    assert_eq!(down["status"], json!("DOWN"), "{down}");
    assert_eq!(events(&u, &id).await[0]["kind"], json!("down"));

    target.set(200);
    let back = wait_for_status(&u, &id, "UP", 15).await;
    assert_eq!(back["status"], json!("UP"), "{back}");
    let kinds: Vec<Value> = events(&u, &id)
        .await
        .iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("up"), json!("down"), json!("up")]);
    srv.stop().await;
}

/// Staleness on the backend under test: three silent intervals mark a monitor stale (column,
/// event, both reads), a later result clears it with a `fresh` event, and a monitor that has
/// results is never marked.
#[tokio::test]
async fn three_silent_intervals_make_a_monitor_stale_until_a_result_comes() {
    use tocsin::monitoring::staleness;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("stale@example.com").await;
    let body = |name: &str| {
        json!({"name": name, "type": "HTTP", "url": format!("{}/", target.base),
               "interval": 10, "timeout": 5})
    };
    let quiet = create(&u, body("quiet")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Two intervals of silence: not yet.
    clock.advance_ms(2 * INTERVAL_MS);
    assert_eq!(
        staleness::scan_store(srv.state.runner(), clock_now(&clock), T0)
            .await
            .unwrap(),
        0
    );
    // A busy monitor created now, checked every interval from here on.
    let busy = create(&u, body("busy")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cycles = |n| {
        let (srv, clock, busy) = (&srv, &clock, &busy);
        async move {
            for _ in 0..n {
                clock.advance_ms(INTERVAL_MS);
                let m = tocsin::store::monitors::get_by_id(srv.state.db().reader(), busy)
                    .await
                    .unwrap()
                    .unwrap();
                scheduler::run_cycle(
                    srv.state.runner(),
                    &Monitor::from_row(&m).unwrap(),
                    clock_now(clock),
                )
                .await
                .unwrap()
                .unwrap();
            }
        }
    };
    cycles(2).await;
    assert_eq!(
        staleness::scan_store(srv.state.runner(), clock_now(&clock), T0)
            .await
            .unwrap(),
        1
    );
    let m = monitor(&u, &quiet).await;
    assert!(m["staleSince"].is_string(), "{m}");
    assert_eq!(m["status"], json!("PENDING"));
    let evs = events(&u, &quiet).await;
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["kind"], json!("stale"));
    assert_eq!(
        (evs[0]["from"].clone(), evs[0]["to"].clone()),
        (json!("PENDING"), json!("PENDING"))
    );
    let listed = common::monitors::array(&u, "/monitors").await;
    let q = listed.iter().find(|x| x["id"] == json!(quiet)).unwrap();
    assert_eq!(q["staleSince"], m["staleSince"]);
    let b = monitor(&u, &busy).await;
    assert_eq!(b["staleSince"], Value::Null);
    // lastCheckAt is when the last stored check began, in both reads.
    let at = chrono::DateTime::from_timestamp_millis(clock_now(&clock)).unwrap();
    assert_eq!(
        b["lastCheckAt"],
        json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    );
    let listed_busy = listed.iter().find(|x| x["id"] == json!(busy)).unwrap();
    assert_eq!(listed_busy["lastCheckAt"], b["lastCheckAt"]);
    assert_eq!(q["lastCheckAt"], Value::Null);
    // Marked once, not at every scan.
    assert_eq!(
        staleness::scan_store(srv.state.runner(), clock_now(&clock), T0)
            .await
            .unwrap(),
        0
    );

    // A result comes in: fresh again, with its event after the status change.
    let row = tocsin::store::monitors::get_by_id(srv.state.db().reader(), &quiet)
        .await
        .unwrap()
        .unwrap();
    scheduler::run_cycle(
        srv.state.runner(),
        &Monitor::from_row(&row).unwrap(),
        clock_now(&clock),
    )
    .await
    .unwrap()
    .unwrap();
    let m = monitor(&u, &quiet).await;
    assert_eq!(m["staleSince"], Value::Null);
    assert_eq!(m["status"], json!("UP"));
    let kinds: Vec<Value> = events(&u, &quiet)
        .await
        .iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("fresh"), json!("up"), json!("stale")]);
}

/// The value of the first `/metrics` line that starts with `family{` and holds every one of
/// `labels`.
fn metric(text: &str, family: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test]
async fn per_monitor_metrics_follow_checks_and_the_token_guards_them() {
    let srv = TestServer::start_with(Options {
        clock: Some(ManualClock::new(T0)),
        tweak: Some(Box::new(|c| c.metrics_token = Some("s3cret-scrape".into()))),
    })
    .await;
    let target = Target::start().await;
    let u = srv.sign_up("metrics@example.com").await;
    let m = create(
        &u,
        json!({"name": "api \"edge\"", "type": "HTTP", "url": format!("{}/", target.base),
               "interval": 10, "timeout": 5}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();
    let scrape = |token: Option<&'static str>| {
        let client = client.clone();
        let url = srv.url("/metrics");
        async move {
            let mut req = client.get(url);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            req.send().await.unwrap()
        }
    };
    // The token is required once set.
    expect_error(scrape(None).await, 401, "UNAUTHORIZED").await;
    expect_error(scrape(Some("wrong")).await, 401, "UNAUTHORIZED").await;
    let text = scrape(Some("s3cret-scrape")).await.text().await.unwrap();
    let me = format!("monitor_id=\"{id}\"");
    // Present before the first check: PENDING is 2; named metrics at zero, not absent.
    assert_eq!(
        metric(
            &text,
            "monitor_status",
            &[
                &me,
                "monitor_name=\"api \\\"edge\\\"\"",
                "monitor_type=\"HTTP\""
            ]
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "probe_errors_total", &["region=\"local\""]),
        Some(0.0),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "monitors_stale 0"), "{text}");
    // Every metric the README names is there from the first scrape.
    let readme = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    for name in [
        "scheduler_start_lateness_seconds",
        "scheduler_monitors",
        "scheduler_runs_shed_total",
        "scheduler_leader",
        "probes_connected",
        "probe_errors_total",
        "monitors_stale",
        "monitor_status",
        "monitor_response_time_ms",
        "monitor_checks_total",
        "monitor_cert_days_remaining",
    ] {
        assert!(
            readme.contains(&format!("`{name}")),
            "README does not name {name}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with(name) || l.starts_with(&format!("# TYPE {name} "))),
            "{name} missing from the first scrape"
        );
    }
    assert_eq!(
        metric(&text, "probes_connected", &["region=\"local\""]),
        Some(1.0)
    );

    let row = tocsin::store::monitors::get_by_id(srv.state.db().reader(), &id)
        .await
        .unwrap()
        .unwrap();
    scheduler::run_cycle(srv.state.runner(), &Monitor::from_row(&row).unwrap(), T0)
        .await
        .unwrap()
        .unwrap();
    target.set(500);
    let row = tocsin::store::monitors::get_by_id(srv.state.db().reader(), &id)
        .await
        .unwrap()
        .unwrap();
    scheduler::run_cycle(
        srv.state.runner(),
        &Monitor::from_row(&row).unwrap(),
        T0 + INTERVAL_MS,
    )
    .await
    .unwrap()
    .unwrap();
    let text = scrape(Some("s3cret-scrape")).await.text().await.unwrap();
    let local = "region=\"local\"";
    assert_eq!(metric(&text, "monitor_status", &[&me]), Some(0.0), "{text}");
    assert_eq!(
        metric(
            &text,
            "monitor_checks_total",
            &[&me, local, "result=\"up\""]
        ),
        Some(1.0)
    );
    assert_eq!(
        metric(
            &text,
            "monitor_checks_total",
            &[&me, local, "result=\"down\""]
        ),
        Some(1.0)
    );
    assert!(
        metric(&text, "monitor_response_time_ms", &[&me, local]).is_some(),
        "{text}"
    );

    // A deleted monitor's series leave with it.
    let res = u
        .call(Method::DELETE, &format!("/monitors/{id}"), None)
        .await;
    assert_eq!(res.status().as_u16(), 204);
    let text = scrape(Some("s3cret-scrape")).await.text().await.unwrap();
    assert!(!text.contains(&me), "{text}");
    srv.stop().await;
}

/// `monitors_skipped_corrupt_total` as `/metrics` shows it (process-wide: tests share it).
async fn skipped_corrupt(srv: &TestServer) -> f64 {
    let text = reqwest::get(srv.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("monitors_skipped_corrupt_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no monitors_skipped_corrupt_total in {text}"))
}

#[tokio::test]
async fn a_corrupt_stored_monitor_is_skipped_and_counted_never_given_a_default() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("ops@example.com").await;
    let mut ids = Vec::new();
    for name in ["good", "bad"] {
        let m = create(
            &u,
            json!({"name": name, "type": "HTTP", "url": format!("{}/", target.base),
                   "interval": 10, "timeout": 5}),
        )
        .await;
        ids.push(m["id"].as_str().unwrap().to_string());
    }
    let (good, bad) = (&ids[0], &ids[1]);
    // A value no strategy spells, written around the API as a damaged row would be: it used
    // to be read as the default strategy.
    sqlx::query("UPDATE monitors SET region_strategy = 'sideways' WHERE id = $1")
        .bind(bad)
        .execute(srv.state.db().writer())
        .await
        .unwrap();
    let row = tocsin::store::monitors::get_by_id(srv.state.db().reader(), bad)
        .await
        .unwrap()
        .unwrap();
    let e = Monitor::from_row(&row).unwrap_err();
    assert_eq!(e.field, "region_strategy", "{e}");
    assert_eq!(&e.monitor_id, bad);

    let before = skipped_corrupt(&srv).await;
    clock.advance_ms(INTERVAL_MS);
    let reports = run_due(&srv, clock_now(&clock)).await;
    // Only the good one ran; the corrupt one was skipped, not checked under a guessed setting.
    assert_eq!(reports.len(), 1);
    assert_eq!(&reports[0].0, good);
    assert_eq!(heartbeats(&u, good, "").await.len(), 1);
    assert!(heartbeats(&u, bad, "").await.is_empty());
    let row = tocsin::store::monitors::get_by_id(srv.state.db().reader(), bad)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.last_check_at, None);
    assert!(skipped_corrupt(&srv).await >= before + 1.0);

    // Repaired, it is checked again.
    sqlx::query("UPDATE monitors SET region_strategy = 'all' WHERE id = $1")
        .bind(bad)
        .execute(srv.state.db().writer())
        .await
        .unwrap();
    clock.advance_ms(INTERVAL_MS);
    let reports = run_due(&srv, clock_now(&clock)).await;
    assert_eq!(reports.len(), 2);
    assert_eq!(heartbeats(&u, bad, "").await.len(), 1);
}
