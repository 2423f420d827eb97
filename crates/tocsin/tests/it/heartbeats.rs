//! Heartbeat storage end to end: the group-commit writer, the read API (heartbeats, hourly
//! stats, uptime, reports), retention and the on-disk cost of a heartbeat. Monitors are
//! created through SQL here, since the monitor API is built separately.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Instant;

use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::monitoring::heartbeats::{decode_id, NewHeartbeat, WriteError};
use tocsin::monitoring::retention;
use tocsin::store::Backend;
use tocsin_checks::assertions::Severity;
use tocsin_checks::{AssertionResult, Timings};
use tocsin_core::state::Status;

const MIN: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;
/// An hour boundary: 2023-11-14T22:00:00Z.
const H: i64 = 1_700_000_000_000 / HOUR * HOUR;

/// Inserts a monitor row for `workspace_id`; returns its id and seq.
async fn create_monitor(srv: &TestServer, workspace_id: &str) -> (String, i64) {
    let db = srv.state.db();
    let mut tx = db.begin().await.unwrap();
    sqlx::query("UPDATE sequences SET value = value + 1 WHERE name = 'monitor_seq'")
        .execute(&mut *tx)
        .await
        .unwrap();
    let seq: i64 = sqlx::query_scalar("SELECT value FROM sequences WHERE name = 'monitor_seq'")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let id = tocsin::ids::new_id();
    sqlx::query(
        "INSERT INTO monitors (id, seq, workspace_id, name, type, status, url, interval_s, \
         retries, timeout_s, tags, config, regions, region_strategy, confirmations_required, \
         recovery_confirmations_required, min_failure_duration_ms, status_changed_at, \
         started_at, created_at, updated_at) VALUES ($1, $2, $3, $4, 'HTTP', 'PENDING', \
         'https://example.com', 60, 0, 30, '[]', '{}', '[\"eu\"]', 'all', 1, 1, 0, 0, 0, 0, 0)",
    )
    .bind(&id)
    .bind(seq)
    .bind(workspace_id)
    .bind(format!("monitor {seq}"))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    (id, seq)
}

fn beat(id: &str, seq: i64, ts: i64, region: &str, status: Status, latency: f64) -> NewHeartbeat {
    NewHeartbeat::new(id, seq, ts, region, status, latency)
}

fn full_down(id: &str, seq: i64, ts: i64) -> NewHeartbeat {
    let mut hb = beat(id, seq, ts, "eu-west", Status::Down, 1234.5);
    hb.status_code = Some(503);
    hb.message = Some("expected status 200, got 503".into());
    hb.retry_count = 2;
    hb.timings = Some(Timings {
        dns: 1.2,
        tcp: 10.5,
        tls: Some(20.1),
        first_byte: 1200.0,
        transfer: 2.7,
    });
    hb.response_headers = Some(BTreeMap::from([(
        "content-type".to_string(),
        vec!["text/html".to_string()],
    )]));
    hb.response_body = Some("x".repeat(70 * 1024));
    hb.resolved_ip = Some("93.184.216.34".parse().unwrap());
    hb.assertion_results = Some(vec![AssertionResult {
        index: 0,
        passed: false,
        actual: Some("503".into()),
        message: "status code 503 is not 200".into(),
        severity: Severity::Fail,
    }]);
    hb
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

const HEARTBEAT_FIELDS: [&str; 14] = [
    "assertionResults",
    "createdAt",
    "id",
    "latency",
    "message",
    "monitorId",
    "region",
    "resolvedIP",
    "responseBody",
    "responseHeaders",
    "retryCount",
    "status",
    "statusCode",
    "timings",
];

#[tokio::test]
async fn submit_resolves_after_commit_with_exact_fields() {
    let (srv, _clock) = TestServer::with_clock(H).await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let writer = srv.state.heartbeats();

    let r = writer.submit(full_down(&mid, seq, H - 1000)).await.unwrap();
    assert_eq!(decode_id(&r.id), Some((seq, H - 1000, r.region_id)));
    // Readable the moment submit resolved: no flush, no sleep.
    let list = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/heartbeats"), None)
            .await,
        200,
    )
    .await;
    let items = list.as_array().unwrap();
    assert_eq!(items.len(), 1);
    let h = &items[0];
    assert_eq!(keys(h), HEARTBEAT_FIELDS);
    assert_eq!(h["id"], json!(r.id));
    assert_eq!(h["monitorId"], json!(mid));
    assert_eq!(h["status"], json!("DOWN"));
    assert_eq!(h["latency"], json!(1234.5));
    assert_eq!(h["statusCode"], json!(503));
    assert_eq!(h["message"], json!("expected status 200, got 503"));
    assert_eq!(h["retryCount"], json!(2));
    assert_eq!(
        h["timings"],
        json!({"dns": 1.2, "tcp": 10.5, "tls": 20.1, "firstByte": 1200.0, "transfer": 2.7})
    );
    assert_eq!(h["region"], json!("eu-west"));
    assert_eq!(h["responseHeaders"], json!({"content-type": ["text/html"]}));
    assert_eq!(h["responseBody"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(h["resolvedIP"], json!("93.184.216.34"));
    assert_eq!(
        h["assertionResults"],
        json!([{"index": 0, "passed": false, "actual": "503", "message": "status code 503 is not 200", "severity": "fail"}])
    );
    assert_eq!(h["createdAt"], json!("2023-11-14T21:59:59.000Z"));

    // A plain UP result keeps the small parts only.
    let mut up = beat(&mid, seq, H - 500, "eu-west", Status::Up, 87.25);
    up.status_code = Some(200);
    up.timings = Some(Timings {
        dns: 0.0,
        tcp: 3.0,
        tls: None,
        first_byte: 80.0,
        transfer: 4.2,
    });
    up.response_body = Some("ok".into());
    up.resolved_ip = Some("10.0.0.1".parse().unwrap());
    writer.submit(up).await.unwrap();
    // An UP with a message (a push check-in) keeps its message.
    let mut push = beat(&mid, seq, H - 400, "eu-west", Status::Up, 0.0);
    push.message = Some("backup done".into());
    writer.submit(push).await.unwrap();

    let list = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/heartbeats"), None)
            .await,
        200,
    )
    .await;
    let items = list.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["message"], json!("backup done"));
    assert_eq!(items[0]["timings"], Value::Null);
    assert_eq!(items[0]["statusCode"], Value::Null);
    let u = &items[1];
    assert_eq!(keys(u), HEARTBEAT_FIELDS);
    assert_eq!(u["status"], json!("UP"));
    assert_eq!(u["latency"], json!(87.3)); // 0.1 ms resolution
    assert_eq!(u["statusCode"], json!(200));
    assert_eq!(
        u["timings"],
        json!({"dns": 0.0, "tcp": 3.0, "tls": null, "firstByte": 80.0, "transfer": 4.2})
    );
    for f in [
        "message",
        "responseHeaders",
        "responseBody",
        "resolvedIP",
        "assertionResults",
    ] {
        assert_eq!(u[f], Value::Null, "{f} of a plain UP heartbeat");
    }

    // Same monitor, region and millisecond: the second moves forward, nothing is lost.
    let a = writer
        .submit(beat(&mid, seq, H - 100, "eu-west", Status::Up, 1.0))
        .await
        .unwrap();
    let b = writer
        .submit(beat(&mid, seq, H - 100, "eu-west", Status::Up, 1.0))
        .await
        .unwrap();
    assert_eq!((a.ts_ms, b.ts_ms), (H - 100, H - 99));
    let bad = writer
        .submit(beat(&mid, seq, -5, "eu-west", Status::Up, 1.0))
        .await;
    assert!(matches!(bad, Err(WriteError::Invalid(_))), "{bad:?}");
    srv.stop().await;
}

#[tokio::test]
async fn concurrent_submits_share_transactions() {
    let srv = TestServer::start().await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let writer = srv.state.heartbeats().clone();
    let before = writer.counts();
    let n = 2_000;
    let started = Instant::now();
    let futures: Vec<_> = (0..n)
        .map(|i| {
            writer.submit(beat(
                &mid,
                seq,
                H + i * 1000,
                ["eu", "us"][(i % 2) as usize],
                Status::Up,
                12.0,
            ))
        })
        .collect();
    let results = futures::future::join_all(futures).await;
    let elapsed = started.elapsed();
    assert!(results.iter().all(|r| r.is_ok()));
    let after = writer.counts();
    let txs = after.transactions - before.transactions;
    println!(
        "{n} concurrent submits: {txs} transactions, {:.0} heartbeats/s",
        n as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(after.written - before.written, n as u64);
    assert!(
        txs * 20 <= n as u64,
        "{txs} transactions for {n} heartbeats"
    );

    // Fire-and-forget, then shutdown: everything queued is committed first.
    for i in 0..300 {
        writer.submit_detached(beat(&mid, seq, H + DAY + i, "eu", Status::Up, 5.0));
    }
    writer.shutdown().await;
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats WHERE monitor_seq = $1")
        .bind(seq)
        .fetch_one(srv.state.db().reader())
        .await
        .unwrap();
    assert_eq!(count, n + 300);
    let late = writer
        .submit(beat(&mid, seq, H + 2 * DAY, "eu", Status::Up, 5.0))
        .await;
    assert_eq!(late, Err(WriteError::Closed));
    srv.stop().await;
}

#[tokio::test]
async fn list_filters_paging_and_access() {
    let (srv, _clock) = TestServer::with_clock(H + DAY).await;
    let alice = srv.sign_up("alice@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let (bob_mid, _) = create_monitor(&srv, &bob.workspace_id).await;
    let w = srv.state.heartbeats();
    // 30 heartbeats, one a minute, alternating regions; every 5th DOWN; one on-demand check.
    for i in 0..30 {
        let status = if i % 5 == 0 { Status::Down } else { Status::Up };
        let mut hb = beat(
            &mid,
            seq,
            H + i * MIN,
            ["eu", "us"][(i % 2) as usize],
            status,
            10.0,
        );
        if i == 7 {
            hb.correlation_id = Some("corr-7".into());
        }
        w.submit_detached(hb);
    }
    w.flush().await;
    let base = format!("/monitors/{mid}/heartbeats");
    let get = |q: String| {
        let alice = &alice;
        let base = &base;
        async move {
            json_of(
                alice.call(Method::GET, &format!("{base}{q}"), None).await,
                200,
            )
            .await
        }
    };
    let all = get(String::new()).await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 30);
    let ts: Vec<&str> = all
        .iter()
        .map(|h| h["createdAt"].as_str().unwrap())
        .collect();
    let mut sorted = ts.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ts, sorted, "newest first");

    let down = get("?status=DOWN".into()).await;
    assert_eq!(down.as_array().unwrap().len(), 6);
    assert!(down
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["status"] == "DOWN"));
    let eu = get("?region=eu".into()).await;
    assert_eq!(eu.as_array().unwrap().len(), 15);
    assert_eq!(get("?region=mars".into()).await, json!([]));
    let corr = get("?correlationId=corr-7".into()).await;
    assert_eq!(corr.as_array().unwrap().len(), 1);
    assert_eq!(
        corr[0]["createdAt"],
        json!(tocsin::clock::rfc3339(H + 7 * MIN))
    );
    let from = tocsin::clock::rfc3339(H + 10 * MIN);
    let to = tocsin::clock::rfc3339(H + 20 * MIN);
    let window = get(format!("?from={from}&to={to}")).await;
    assert_eq!(window.as_array().unwrap().len(), 10);
    assert_eq!(
        window[0]["createdAt"],
        json!(tocsin::clock::rfc3339(H + 19 * MIN))
    );

    // Keyset paging: 4 pages of 8, no overlap, no gap.
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let q = match &before {
            Some(b) => format!("?limit=8&before={b}"),
            None => "?limit=8".to_string(),
        };
        let page = get(q).await;
        let page = page.as_array().unwrap().clone();
        seen.extend(page.iter().map(|h| h["id"].as_str().unwrap().to_string()));
        if page.len() < 8 {
            break;
        }
        before = Some(page[7]["id"].as_str().unwrap().to_string());
    }
    let expected: Vec<String> = all
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(seen, expected);

    // Validation.
    for q in [
        "?limit=0",
        "?limit=1001",
        "?before=nope",
        "?status=BROKEN",
        "?from=yesterday",
    ] {
        expect_error(
            alice.call(Method::GET, &format!("{base}{q}"), None).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
    }
    // A heartbeat id of another monitor is not a cursor here.
    let (other, other_seq) = create_monitor(&srv, &alice.workspace_id).await;
    let r = w
        .submit(beat(&other, other_seq, H, "eu", Status::Up, 1.0))
        .await
        .unwrap();
    let body = expect_error(
        alice
            .call(Method::GET, &format!("{base}?before={}", r.id), None)
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], json!("before"));

    // Another workspace's monitor, or none at all: not found, on every endpoint.
    for path in ["heartbeats", "stats/hourly", "uptime", "report"] {
        expect_error(
            bob.call(Method::GET, &format!("/monitors/{mid}/{path}"), None)
                .await,
            404,
            "MONITOR_NOT_FOUND",
        )
        .await;
        expect_error(
            alice
                .call(Method::GET, &format!("/monitors/{bob_mid}/{path}"), None)
                .await,
            404,
            "MONITOR_NOT_FOUND",
        )
        .await;
        expect_error(
            alice
                .call(Method::GET, &format!("/monitors/nope/{path}"), None)
                .await,
            404,
            "MONITOR_NOT_FOUND",
        )
        .await;
    }
    // Tokens: monitors:read is required.
    let reader = Bearer::new(&srv.base, &alice.token(&["monitors:read"]).await);
    json_of(reader.call(Method::GET, &base, None).await, 200).await;
    let other_cap = Bearer::new(&srv.base, &alice.token(&["incidents:read"]).await);
    expect_error(
        other_cap.call(Method::GET, &base, None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    srv.stop().await;
}

/// 150 checks, one a minute from H-2h to H+29m, region eu: DOWN at minutes 20-29 and
/// 100-104, DEGRADED at 50-59 (1.5 ms), UP otherwise (1.0 ms). Now is H+30m.
async fn crafted_history(srv: &TestServer, mid: &str, seq: i64) {
    let w = srv.state.heartbeats();
    for i in 0..150 {
        let (status, latency) = match i {
            20..=29 | 100..=104 => (Status::Down, 5000.0),
            50..=59 => (Status::Degraded, 1.5),
            _ => (Status::Up, 1.0),
        };
        w.submit_detached(beat(
            mid,
            seq,
            H - 2 * HOUR + i * MIN,
            "eu",
            status,
            latency,
        ));
    }
    w.flush().await;
}

#[tokio::test]
async fn hourly_stats_uptime_and_reports() {
    let (srv, _clock) = TestServer::with_clock(H + 30 * MIN).await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    crafted_history(&srv, &mid, seq).await;
    let rfc = tocsin::clock::rfc3339;

    // Hourly stats: default range is the last 24 hours.
    let stats = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/stats/hourly"), None)
            .await,
        200,
    )
    .await;
    let stats = stats.as_array().unwrap();
    assert_eq!(stats.len(), 3);
    let k: Vec<String> = keys(&stats[0]);
    assert_eq!(
        k,
        [
            "avgLatency",
            "bucket",
            "degradedChecks",
            "downChecks",
            "maxLatency",
            "minLatency",
            "p95Latency",
            "totalChecks",
            "upChecks"
        ]
    );
    assert_eq!(
        stats[0],
        json!({"bucket": rfc(H - 2 * HOUR), "totalChecks": 60, "upChecks": 40, "downChecks": 10,
               "degradedChecks": 10, "avgLatency": 1.1, "maxLatency": 1.5, "minLatency": 1.0,
               "p95Latency": 1.5})
    );
    assert_eq!(stats[1]["bucket"], json!(rfc(H - HOUR)));
    assert_eq!(
        (
            stats[1]["totalChecks"].clone(),
            stats[1]["downChecks"].clone(),
            stats[1]["p95Latency"].clone()
        ),
        (json!(60), json!(5), json!(1.0))
    );
    assert_eq!(stats[2]["totalChecks"], json!(30));
    let one = json_of(
        alice
            .call(
                Method::GET,
                &format!(
                    "/monitors/{mid}/stats/hourly?from={}&to={}",
                    rfc(H - HOUR + 5),
                    rfc(H)
                ),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(one.as_array().unwrap().len(), 1);

    // Uptime: 15 DOWN of 150 in every window; custom = the hour before H: 5 DOWN of 60.
    let up = json_of(
        alice
            .call(
                Method::GET,
                &format!(
                    "/monitors/{mid}/uptime?from={}&to={}",
                    rfc(H - HOUR),
                    rfc(H)
                ),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(
        up,
        json!({"24h": 90.0, "7d": 90.0, "30d": 90.0, "90d": 90.0, "custom": 91.6667})
    );
    let plain = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/uptime"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(plain["custom"], Value::Null);

    // Report over everything: two outages of 10 and 5 minutes.
    let rep = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/report?from={}", rfc(H - 3 * HOUR)),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(rep["uptime"], json!(90.0));
    assert_eq!(rep["outages"], json!(2));
    assert_eq!(rep["downtimeMs"], json!(15 * MIN));
    assert_eq!(rep["mttrMs"], json!(7.5 * MIN as f64));
    assert_eq!(
        (
            rep["totalChecks"].clone(),
            rep["upChecks"].clone(),
            rep["downChecks"].clone(),
            rep["degradedChecks"].clone()
        ),
        (json!(150), json!(125), json!(15), json!(10))
    );
    assert_eq!(rep["p50Latency"], json!(1.0));
    assert_eq!(rep["p95Latency"], json!(1.5));
    assert_eq!(rep["p99Latency"], json!(1.5));

    // A range that starts inside the first outage and ends inside the second: both clipped.
    let from = H - 2 * HOUR + 25 * MIN;
    let to = H - 2 * HOUR + 102 * MIN + 30_000;
    let rep = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/report?from={}&to={}", rfc(from), rfc(to)),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(rep["outages"], json!(2));
    assert_eq!(rep["downtimeMs"], json!(5 * MIN + 150_000));
    assert_eq!(rep["mttrMs"], json!(225_000.0));
    assert_eq!(rep["totalChecks"], json!(78));
    assert_eq!(rep["downChecks"], json!(8));
    assert_eq!(rep["uptime"], json!(89.7436));
    assert_eq!(rep["from"], json!(rfc(from)));
    assert_eq!(rep["outageDataFrom"], json!(rfc(from)));

    // CSV: a header row and one data row with the same columns, as text/csv.
    let res = alice
        .call(
            Method::GET,
            &format!(
                "/monitors/{mid}/report?from={}&to={}&format=csv",
                rfc(from),
                rfc(to)
            ),
            None,
        )
        .await;
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let text = res.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len());
    assert_eq!(header[0], "monitorId");
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("monitorId"), mid);
    assert_eq!(col("outages"), "2");
    assert_eq!(col("downtimeMs"), "450000");
    assert_eq!(col("uptime"), "89.7436");
    let rep_keys = keys(&rep);
    let mut h_sorted: Vec<String> = header.iter().map(|s| s.to_string()).collect();
    h_sorted.sort();
    assert_eq!(rep_keys, h_sorted, "CSV columns are the JSON fields");
    expect_error(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/report?format=xml"),
                None,
            )
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn p95_comes_from_the_hourly_histogram() {
    let (srv, _clock) = TestServer::with_clock(H + HOUR).await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let w = srv.state.heartbeats();
    // 95 samples of 10 ms and 5 of 500 ms: the nearest-rank p95 is 10 ms.
    for i in 0..100 {
        let latency = if i < 95 { 10.0 } else { 500.0 };
        w.submit_detached(beat(&mid, seq, H + i * 1000, "eu", Status::Up, latency));
    }
    // DOWN checks count, but not in latency figures.
    w.submit_detached(beat(&mid, seq, H + 200_000, "eu", Status::Down, 30_000.0));
    w.flush().await;
    let stats = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/stats/hourly"), None)
            .await,
        200,
    )
    .await;
    let s = &stats[0];
    assert_eq!(s["totalChecks"], json!(101));
    assert_eq!(s["downChecks"], json!(1));
    assert_eq!(s["avgLatency"], json!(34.5));
    assert_eq!(s["minLatency"], json!(10.0));
    assert_eq!(s["maxLatency"], json!(500.0));
    let p95 = s["p95Latency"].as_f64().unwrap();
    println!("p95 of 95 x 10 ms + 5 x 500 ms: {p95} ms");
    assert!((10.0..=10.0 * 1.0325).contains(&p95), "{p95}");
    srv.stop().await;
}

#[tokio::test]
async fn retention_prunes_raw_rollups_and_orphans() {
    let (srv, clock) = TestServer::with_clock(H).await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let w = srv.state.heartbeats();
    for ts in [H - 500 * DAY, H - 20 * DAY, H - 10 * DAY, H - MIN] {
        w.submit(full_down(&mid, seq, ts)).await.unwrap();
        w.submit(beat(&mid, seq, ts + 1, "eu", Status::Up, 3.0))
            .await
            .unwrap();
    }
    // Heartbeats of a monitor that no longer exists.
    w.submit(beat("gone", 9_999, H - MIN, "eu", Status::Up, 3.0))
        .await
        .unwrap();
    let db = srv.state.db();
    let count = |table: &'static str, col: &'static str| async move {
        let rows: Vec<i64> = sqlx::query_scalar(&format!(
            "SELECT {col} FROM {table} WHERE monitor_seq = {seq} ORDER BY {col}"
        ))
        .fetch_all(db.reader())
        .await
        .unwrap();
        rows
    };
    let p = retention::prune_once(srv.state.cx()).await.unwrap();
    assert_eq!(p.heartbeats, 4 + 1);
    assert_eq!(p.details, 2);
    assert_eq!(
        count("heartbeats", "ts").await,
        vec![H - 10 * DAY, H - 10 * DAY + 1, H - MIN, H - MIN + 1]
    );
    assert_eq!(
        count("heartbeat_details", "ts").await,
        vec![H - 10 * DAY, H - MIN]
    );
    let hours = count("heartbeat_hourly", "bucket_start").await;
    assert_eq!(hours.len(), 3, "the 500-day-old rollup is gone: {hours:?}");
    let orphans: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats WHERE monitor_seq = 9999")
            .fetch_one(db.reader())
            .await
            .unwrap();
    assert_eq!(orphans, 0);

    // Five days on, the 10-day-old heartbeats pass 14 days; their rollup stays.
    clock.advance_ms(5 * DAY);
    let p = retention::prune_once(srv.state.cx()).await.unwrap();
    assert_eq!((p.heartbeats, p.details, p.hourly), (2, 1, 0));
    assert_eq!(count("heartbeats", "ts").await, vec![H - MIN, H - MIN + 1]);
    assert_eq!(count("heartbeat_hourly", "bucket_start").await.len(), 3);
    // Nothing left to do: a second pass deletes nothing.
    assert_eq!(
        retention::prune_once(srv.state.cx()).await.unwrap(),
        Default::default()
    );
    srv.stop().await;
}

#[tokio::test]
async fn postgres_keeps_heartbeats_by_day_and_retention_drops_a_day_whole() {
    use tocsin::store::heartbeat_partitions::{self as parts, day_name};
    // A day a month ahead of the wall clock: start-up made no partition for it.
    let d = (chrono::Utc::now().timestamp_millis() / DAY + 30) * DAY;
    let (srv, clock) = TestServer::with_clock(d + HOUR).await;
    let db = srv.state.db();
    if db.backend() != Backend::Postgres {
        srv.stop().await;
        return;
    }
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let names =
        |list: Vec<parts::Partition>| -> Vec<String> { list.into_iter().map(|p| p.name).collect() };
    // A retention pass (the server's own first one, and this one) makes the coming days'
    // partitions by the server's clock.
    let p = retention::prune_once(srv.state.cx()).await.unwrap();
    assert_eq!(p.heartbeats, 0);
    let made = names(parts::list(db.reader()).await.unwrap());
    for day in 0..=parts::AHEAD_DAYS {
        assert!(made.contains(&day_name(d + day * DAY)), "{made:?}");
    }
    let w = srv.state.heartbeats();
    for ts in [d + HOUR, d + 3 * DAY + HOUR] {
        w.submit(beat(&mid, seq, ts, "eu", Status::Up, 3.0))
            .await
            .unwrap();
    }
    let placed: Vec<(String, i64)> = sqlx::query_as(
        "SELECT CAST(tableoid::regclass AS TEXT), ts FROM heartbeats WHERE monitor_seq = $1 \
         ORDER BY ts",
    )
    .bind(seq)
    .fetch_all(db.reader())
    .await
    .unwrap();
    assert_eq!(
        placed,
        vec![
            (day_name(d), d + HOUR),
            (day_name(d + 3 * DAY), d + 3 * DAY + HOUR)
        ]
    );

    // 16 days on the cutoff is d + 2 days and an hour: the first day goes whole, no row is
    // deleted one by one, the fourth day stays.
    clock.advance_ms(16 * DAY);
    let p = retention::prune_once(srv.state.cx()).await.unwrap();
    assert_eq!(p.heartbeats, 0);
    assert!(p.partitions >= 2, "{p:?}");
    let left = names(parts::list(db.reader()).await.unwrap());
    assert!(!left.contains(&day_name(d)), "{left:?}");
    assert!(!left.contains(&day_name(d + DAY)), "{left:?}");
    assert!(left.contains(&day_name(d + 3 * DAY)), "{left:?}");
    assert!(left.contains(&day_name(d + 16 * DAY + parts::AHEAD_DAYS * DAY)));
    let ts: Vec<i64> =
        sqlx::query_scalar("SELECT ts FROM heartbeats WHERE monitor_seq = $1 ORDER BY ts")
            .bind(seq)
            .fetch_all(db.reader())
            .await
            .unwrap();
    assert_eq!(ts, vec![d + 3 * DAY + HOUR]);
    let stray: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats_default")
        .fetch_one(db.reader())
        .await
        .unwrap();
    assert_eq!(stray, 0);
    srv.stop().await;
}

#[tokio::test]
async fn sqlite_uses_incremental_auto_vacuum_and_up_heartbeats_are_small() {
    let srv = TestServer::start().await;
    let db = srv.state.db();
    if db.backend() != Backend::Sqlite {
        srv.stop().await;
        return;
    }
    let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
        .fetch_one(db.writer())
        .await
        .unwrap();
    assert_eq!(mode, 2, "a fresh database has auto_vacuum = INCREMENTAL");

    let alice = srv.sign_up("alice@example.com").await;
    let mut monitors = Vec::new();
    for _ in 0..10 {
        monitors.push(create_monitor(&srv, &alice.workspace_id).await);
    }
    let size = || async {
        sqlx::query("VACUUM").execute(db.writer()).await.unwrap();
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(db.writer())
            .await
            .unwrap();
        let page: i64 = sqlx::query_scalar("PRAGMA page_size")
            .fetch_one(db.writer())
            .await
            .unwrap();
        pages * page
    };
    let empty = size().await;
    let n: i64 = 100_000;
    let w = srv.state.heartbeats();
    let started = Instant::now();
    for i in 0..n {
        let (mid, seq) = &monitors[(i % 10) as usize];
        // Realistic: a 30 s interval, HTTPS timings, a 200 answer, latency near 120 ms.
        let mut hb = beat(
            mid,
            *seq,
            H + (i / 10) * 30_000,
            "local",
            Status::Up,
            118.0 + (i % 37) as f64 * 0.7,
        );
        hb.status_code = Some(200);
        hb.timings = Some(Timings {
            dns: 2.1,
            tcp: 14.3,
            tls: Some(31.7),
            first_byte: 64.9 + (i % 11) as f64,
            transfer: 1.2,
        });
        w.submit_detached(hb);
    }
    w.flush().await;
    let rate = n as f64 / started.elapsed().as_secs_f64();
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats")
        .fetch_one(db.reader())
        .await
        .unwrap();
    assert_eq!(stored, n);
    // As written (pages split by interleaved inserts), then compacted.
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(db.writer())
        .await
        .unwrap();
    let page: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(db.writer())
        .await
        .unwrap();
    let as_written = (pages * page - empty) as f64 / n as f64;
    let full = size().await;
    let per = (full - empty) as f64 / n as f64;
    println!("SQLite: {per:.1} bytes per UP heartbeat after VACUUM ({as_written:.1} as written), rollups included; writer {rate:.0} heartbeats/s");
    assert!(per <= 48.0, "{per} bytes per heartbeat");
    srv.stop().await;
}

#[tokio::test]
async fn openapi_documents_the_heartbeat_endpoints() {
    let srv = TestServer::start().await;
    let doc: Value = reqwest::get(srv.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    if std::env::var("DUMP_SCHEMAS").is_ok() {
        for s in ["Heartbeat", "HourlyStat", "Uptime", "Report"] {
            println!("{s}: {}", doc["components"]["schemas"][s]);
        }
        println!("{}", doc["paths"]["/monitors/{monitor_id}/report"]);
    }
    let schemas = &doc["components"]["schemas"];
    let required = |name: &str| {
        let mut r: Vec<String> = schemas[name]["required"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        r.sort();
        r
    };
    assert_eq!(required("Heartbeat"), HEARTBEAT_FIELDS);
    assert_eq!(required("HourlyStat").len(), 9);
    assert_eq!(required("Uptime"), ["24h", "30d", "7d", "90d", "custom"]);
    assert_eq!(required("HeartbeatTimings").len(), 5);
    assert_eq!(required("HeartbeatAssertion").len(), 5);
    for s in ["Heartbeat", "HourlyStat", "Uptime", "Report"] {
        assert_eq!(schemas[s]["additionalProperties"], json!(false), "{s}");
    }
    for (path, op) in [
        ("/monitors/{monitor_id}/heartbeats", "listHeartbeats"),
        ("/monitors/{monitor_id}/stats/hourly", "listHourlyStats"),
        ("/monitors/{monitor_id}/uptime", "getMonitorUptime"),
        ("/monitors/{monitor_id}/report", "getMonitorReport"),
    ] {
        let o = &doc["paths"][path]["get"];
        assert_eq!(o["operationId"], json!(op));
        assert_eq!(o["x-svc-required-capabilities"], json!(["monitors:read"]));
        assert!(o["responses"]["404"].is_object(), "{path} documents 404");
    }
    let report =
        &doc["paths"]["/monitors/{monitor_id}/report"]["get"]["responses"]["200"]["content"];
    assert!(report["text/csv"].is_object() && report["application/json"].is_object());
    srv.stop().await;
}

/// A cycle's counters ride with its heartbeats: stored together in the writer's transaction
/// for an active monitor, neither for a paused one, and many monitors' counters share one
/// transaction.
#[tokio::test]
async fn cycle_counters_are_written_with_their_heartbeats_and_only_while_active() {
    use std::sync::Arc;
    use tocsin::store::monitors::StateUpdate;

    let (srv, _clock) = TestServer::with_clock(H).await;
    let alice = srv.sign_up("alice@example.com").await;
    let writer = srv.state.heartbeats();
    let mut monitors = Vec::new();
    for _ in 0..5 {
        monitors.push(create_monitor(&srv, &alice.workspace_id).await);
    }
    let (paused_id, paused_seq) = create_monitor(&srv, &alice.workspace_id).await;
    sqlx::query("UPDATE monitors SET active = 0 WHERE id = $1")
        .bind(&paused_id)
        .execute(srv.state.db().writer())
        .await
        .unwrap();

    let update = |successes: i64| {
        Arc::new(StateUpdate {
            status: Status::Up,
            consecutive_failures: 0,
            consecutive_successes: successes,
            pending_failure_since: None,
            status_changed_at: H - 5_000,
            last_check_at: Some(H - 1_000),
        })
    };
    let before = writer.counts().transactions;
    // Two regions of one cycle carry the same update; every monitor gets its own.
    let mut submissions = Vec::new();
    for (i, (id, seq)) in monitors.iter().enumerate() {
        for region in ["eu", "us"] {
            let mut hb = beat(id, *seq, H - 1_000, region, Status::Up, 12.0);
            hb.state = Some(update(i as i64 + 1));
            submissions.push(writer.submit(hb));
        }
    }
    let mut gone = beat(&paused_id, paused_seq, H - 1_000, "eu", Status::Down, 12.0);
    gone.state = Some(update(99));
    submissions.push(writer.submit(gone));
    let results = futures::future::join_all(submissions).await;
    let (last, ok) = results.split_last().unwrap();
    assert!(ok.iter().all(Result::is_ok), "{ok:?}");
    assert_eq!(last, &Err(WriteError::MonitorGone));
    // Submitted together, written together (the writer takes what queued during a commit).
    assert!(writer.counts().transactions - before <= 3);

    for (i, (id, _)) in monitors.iter().enumerate() {
        let m = json_of(
            alice
                .call(Method::GET, &format!("/monitors/{id}"), None)
                .await,
            200,
        )
        .await;
        assert_eq!(m["status"], json!("UP"));
        assert_eq!(m["consecutiveSuccesses"], json!(i + 1));
        let beats = json_of(
            alice
                .call(Method::GET, &format!("/monitors/{id}/heartbeats"), None)
                .await,
            200,
        )
        .await;
        assert_eq!(beats.as_array().unwrap().len(), 2);
    }
    let m = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{paused_id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(m["status"], json!("PENDING"));
    assert_eq!(m["consecutiveSuccesses"], json!(0));
    let beats = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{paused_id}/heartbeats"),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(beats, json!([]));
}

/// PENDING heartbeats (an on-demand check cancelled by a shutdown: no verdict) are stored and
/// listed, but count in no figure: not in the hourly counts or latencies, not in uptime, and
/// they neither end an outage nor hide the DOWN before a report's start.
#[tokio::test]
async fn pending_heartbeats_count_in_no_stats_uptime_or_outage() {
    let (srv, _clock) = TestServer::with_clock(H + 30 * MIN).await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    crafted_history(&srv, &mid, seq).await;
    let w = srv.state.heartbeats();
    // Inside the first outage (DOWN from minute 20 to 29), and in quiet minutes.
    for at in [25 * MIN + 30_000, 70 * MIN + 30_000, 130 * MIN + 30_000] {
        w.submit(beat(
            &mid,
            seq,
            H - 2 * HOUR + at,
            "eu",
            Status::Pending,
            9_000.0,
        ))
        .await
        .unwrap();
    }
    let rfc = tocsin::clock::rfc3339;
    let listed = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/heartbeats?status=PENDING"),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(listed.as_array().unwrap().len(), 3);

    let stats = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/stats/hourly"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(
        stats[0],
        json!({"bucket": rfc(H - 2 * HOUR), "totalChecks": 60, "upChecks": 40, "downChecks": 10,
               "degradedChecks": 10, "avgLatency": 1.1, "maxLatency": 1.5, "minLatency": 1.0,
               "p95Latency": 1.5})
    );
    assert_eq!(stats[1]["totalChecks"], json!(60));
    assert_eq!(stats[2]["totalChecks"], json!(30));
    let up = json_of(
        alice
            .call(Method::GET, &format!("/monitors/{mid}/uptime"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(up["24h"], json!(90.0));

    let rep = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/report?from={}", rfc(H - 3 * HOUR)),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(rep["outages"], json!(2));
    assert_eq!(rep["downtimeMs"], json!(15 * MIN));
    assert_eq!(rep["totalChecks"], json!(150));
    assert_eq!(rep["uptime"], json!(90.0));
    assert_eq!(rep["p99Latency"], json!(1.5));

    // A report starting just after the PENDING heartbeat inside the first outage: the monitor
    // was DOWN before it (the PENDING one says nothing), so the outage counts from the start.
    let from = H - 2 * HOUR + 25 * MIN + 45_000;
    let to = H - 2 * HOUR + 102 * MIN + 30_000;
    let rep = json_of(
        alice
            .call(
                Method::GET,
                &format!("/monitors/{mid}/report?from={}&to={}", rfc(from), rfc(to)),
                None,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(rep["outages"], json!(2));
    assert_eq!(rep["downtimeMs"], json!(255_000 + 150_000));
    srv.stop().await;
}

/// A writer with patience: patient results wait to share a commit, and the wait ends at once
/// for a result someone waits on or a full batch. The patience is long (2 s) so the bounds
/// below hold on a loaded machine.
#[tokio::test]
async fn patient_results_share_a_commit_and_never_hold_back_one_that_is_waited_on() {
    use std::time::Duration;
    use tocsin::monitoring::heartbeats::{HeartbeatWriter, WriterOptions};

    let srv = TestServer::start().await;
    let alice = srv.sign_up("alice@example.com").await;
    let (mid, seq) = create_monitor(&srv, &alice.workspace_id).await;
    let writer = HeartbeatWriter::start(
        srv.state.db().clone(),
        WriterOptions {
            patience: Duration::from_secs(2),
            ..WriterOptions::default()
        },
    );

    // Two patient results, the second a moment later: one commit, after the patience.
    let before = writer.counts();
    let started = Instant::now();
    let first = tokio::spawn(writer.submit_patient(beat(&mid, seq, H, "eu", Status::Up, 1.0)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = writer.submit_patient(beat(&mid, seq, H + 1_000, "eu", Status::Up, 1.0));
    assert!(second.await.is_ok());
    assert!(first.await.unwrap().is_ok());
    assert!(
        started.elapsed() >= Duration::from_millis(1_500),
        "patient results waited for company: {:?}",
        started.elapsed()
    );
    assert_eq!(writer.counts().transactions - before.transactions, 1);
    assert_eq!(writer.counts().written - before.written, 2);

    // A result someone waits on ends the wait: both commit together, long before the patience.
    let before = writer.counts();
    let started = Instant::now();
    let patient =
        tokio::spawn(writer.submit_patient(beat(&mid, seq, H + 2_000, "eu", Status::Up, 1.0)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(writer
        .submit(beat(&mid, seq, H + 3_000, "eu", Status::Down, 1.0))
        .await
        .is_ok());
    assert!(patient.await.unwrap().is_ok());
    assert!(
        started.elapsed() < Duration::from_millis(1_200),
        "an impatient result was held back: {:?}",
        started.elapsed()
    );
    assert_eq!(writer.counts().transactions - before.transactions, 1);

    // A full batch of patient results commits without waiting.
    let started = Instant::now();
    let batch: Vec<_> = (0..40)
        .map(|i| {
            writer.submit_patient(beat(
                &mid,
                seq,
                H + 10_000 + i * 1_000,
                "eu",
                Status::Up,
                1.0,
            ))
        })
        .collect();
    assert!(futures::future::join_all(batch)
        .await
        .iter()
        .all(|r| r.is_ok()));
    assert!(
        started.elapsed() < Duration::from_millis(1_200),
        "a full batch waited: {:?}",
        started.elapsed()
    );

    // A flush ends the wait too.
    let started = Instant::now();
    let waiting =
        tokio::spawn(writer.submit_patient(beat(&mid, seq, H + 100_000, "eu", Status::Up, 1.0)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    writer.flush().await;
    assert!(waiting.await.unwrap().is_ok());
    assert!(
        started.elapsed() < Duration::from_millis(1_200),
        "{:?}",
        started.elapsed()
    );
    writer.shutdown().await;
    srv.stop().await;
}
