//! Remote probes and regions, end to end: probe keys through the real binary (create, list,
//! revoke) and the regions monitors may name; a real `tocsin probe` process checking a loopback
//! target, riding out a server restart on the same port, and its disappearance making no false
//! DOWN; `round_robin` and `random` taking one region per cycle (with an in-process probe client
//! over a real WebSocket); on-demand checks in every live region; refused keys and regions; a
//! hand-driven probe that answers late or with an error; probes of one region taking its jobs
//! in turn; `tocsin probe` exiting cleanly on SIGTERM; a probe leaving a silent server; a
//! `tocsin probe` frozen with SIGSTOP: its region's `lastSeenAt` stands still and the region
//! stops being live within two and a half ping intervals, and thawed it is heard again.
//! Cycles are driven with a manual clock and `scheduler::run_due`.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::clock::{rfc, tick_reports, T0};
use common::monitors::{create_id, heartbeats, http_body, merged};
use common::regions::{region, regions, wait_live, wait_region};
use common::target::Target;
use common::{expect_error, json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::clock::{Clock, ManualClock};
use tocsin::probes::client::{self, ProbeOptions};
use tokio_util::sync::CancellationToken;

const BIN: &str = env!("CARGO_BIN_EXE_tocsin");

/// Runs `tocsin probe-key ARGS` on the server's database: (success, stdout, stderr).
fn probe_key(srv: &TestServer, args: &[&str]) -> (bool, String, String) {
    // Subcommand flags come after the subcommand: build `probe-key <args> --data-dir ...`.
    let config = srv.state.config();
    let mut c = Command::new(BIN);
    c.env_remove("TOCSIN_DATABASE_URL")
        .env_remove("TOCSIN_DATA_DIR")
        .arg("probe-key")
        .args(args)
        .arg("--data-dir")
        .arg(&config.data_dir);
    if let Some(url) = &config.database_url {
        c.arg("--database-url").arg(url);
    }
    let out = c.output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn create_key(srv: &TestServer, region: &str) -> String {
    let (ok, out, err) = probe_key(srv, &["create", "--region", region]);
    assert!(ok, "probe-key create failed: {err}");
    out.trim().to_string()
}

/// A `tocsin probe` process, killed when dropped (so a failing test leaves none behind).
struct ProbeProcess(Option<Child>);

impl ProbeProcess {
    fn kill(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn take(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for ProbeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn_probe(base: &str, region: &str, key: &str) -> ProbeProcess {
    let child = Command::new(BIN)
        .args(["probe", "--server", base, "--region", region])
        .env("TOCSIN_KEY", key)
        .env("TOCSIN_LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ProbeProcess(Some(child))
}

/// An HTTP monitor body (`name`, checking `url`) run from `regions` by `strategy`.
fn regional(name: &str, url: &str, regions: &[&str], strategy: &str) -> Value {
    merged(
        http_body(url),
        json!({"name": name, "regions": regions, "regionStrategy": strategy}),
    )
}

/// The regions of the heartbeats stored at the clock's current time.
async fn regions_now(u: &User, id: &str, clock: &ManualClock) -> Vec<String> {
    let now = rfc(clock.now_ms());
    let mut out: Vec<String> = heartbeats(u, id, "?limit=100")
        .await
        .into_iter()
        .filter(|h| h["createdAt"] == json!(now))
        .map(|h| h["region"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn probe_keys_through_the_binary_decide_the_known_regions() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("keys@example.com").await;
    let body = |regions: &[&str]| json!({"name": "r", "type": "HTTP", "url": "http://127.0.0.1:9/", "regions": regions});

    // Unknown until a key exists.
    let err = expect_error(
        u.call(Method::POST, "/monitors", Some(body(&["local", "eu-west"])))
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(err.to_string().contains("regions.1"), "{err}");
    assert_eq!(regions(&u).await.len(), 1);

    // Bad regions are refused by the command.
    for bad in ["local", "EU", "eu_west", ""] {
        let (ok, out, err) = probe_key(&srv, &["create", "--region", bad]);
        assert!(!ok, "region {bad:?} accepted");
        assert!(out.is_empty() && err.contains("region"), "{out} / {err}");
    }

    // `create` prints the key and nothing else.
    let (ok, out, err) = probe_key(&srv, &["create", "--region", "eu-west", "--name", "fra-1"]);
    assert!(ok, "{err}");
    let key = out.trim();
    assert_eq!(out.lines().count(), 1);
    assert!(key.starts_with("prb_") && key.len() >= 4 + 43, "{key}");
    let second = create_key(&srv, "eu-west");
    assert_ne!(second, key);

    // Now the region is known (and listed as such, with nobody connected).
    create_id(&u, body(&["local", "eu-west"])).await;
    let listed = regions(&u).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        listed[0],
        json!({"name": "local", "live": true, "probes": 1, "probeNames": ["built-in"], "lastSeenAt": listed[0]["lastSeenAt"]})
    );
    assert!(listed[0]["lastSeenAt"].is_string());
    assert_eq!(
        listed[1],
        json!({"name": "eu-west", "live": false, "probes": 0, "probeNames": [], "lastSeenAt": null})
    );

    // Reading regions takes `monitors:read`.
    let reader = common::Bearer::new(&srv.base, &u.token(&["monitors:read"]).await);
    let seen = json_of(reader.call(Method::GET, "/regions", None).await, 200).await;
    assert_eq!(seen[1], listed[1]);
    assert_eq!(seen[0]["name"], json!("local"));
    let other = common::Bearer::new(&srv.base, &u.token(&["identity:read"]).await);
    expect_error(
        other.call(Method::GET, "/regions", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    expect_error(
        reqwest::get(srv.url("/regions")).await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;

    // `list` shows both keys (never the secret); `revoke` takes them away one by one.
    let (ok, out, _) = probe_key(&srv, &["list"]);
    assert!(ok);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["region"], json!("eu-west"));
    assert_eq!(rows[0]["name"], json!("fra-1"));
    assert_eq!(rows[1]["name"], json!("eu-west"));
    assert!(rows.iter().all(|r| r["revokedAt"].is_null()));
    assert!(!out.contains(key) && !out.contains(&second));
    for r in &rows {
        let (ok, _, err) = probe_key(&srv, &["revoke", r["id"].as_str().unwrap()]);
        assert!(ok, "{err}");
    }
    let (ok, _, err) = probe_key(&srv, &["revoke", rows[0]["id"].as_str().unwrap()]);
    assert!(!ok && err.contains("no unrevoked probe key"), "{err}");
    let (_, out, _) = probe_key(&srv, &["list"]);
    assert!(out
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).unwrap()["revokedAt"].is_string()));

    // Every key revoked: the region is unknown again.
    expect_error(
        u.call(Method::POST, "/monitors", Some(body(&["eu-west"])))
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(regions(&u).await.len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn a_real_probe_checks_survives_a_server_restart_and_its_absence_is_no_false_down() {
    let target = Target::start().await;
    let target_base = &target.base;
    let clock = ManualClock::new(T0);
    let srv = TestServer::start_with(Options {
        clock: Some(clock.clone()),
        tweak: None,
    })
    .await;
    let u = srv.sign_up("probe@example.com").await;
    let key = create_key(&srv, "eu-west");
    let mut probe = spawn_probe(&srv.base, "eu-west", &key);
    let r = wait_live(&u, "eu-west", true).await;
    assert_eq!(r["probes"], json!(1));
    assert_eq!(r["probeNames"], json!(["eu-west"]));
    assert!(r["lastSeenAt"].is_string());

    let id = create_id(
        &u,
        regional(
            "both",
            &format!("{target_base}/"),
            &["local", "eu-west"],
            "all",
        ),
    )
    .await;
    let reports = tick_reports(&srv, &clock).await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].1.heartbeats, 2);
    assert_eq!(regions_now(&u, &id, &clock).await, ["eu-west", "local"]);
    let remote = heartbeats(&u, &id, "?region=eu-west").await;
    assert_eq!(remote.len(), 1);
    assert_eq!(remote[0]["status"], json!("UP"));
    assert_eq!(remote[0]["statusCode"], json!(200));

    // The server goes away and comes back on the same port: the probe reconnects by itself.
    let srv = srv
        .restart_same_port(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
    wait_live(&u, "eu-west", true).await;
    tick_reports(&srv, &clock).await;
    assert_eq!(regions_now(&u, &id, &clock).await, ["eu-west", "local"]);
    assert_eq!(heartbeats(&u, &id, "?region=eu-west").await.len(), 2);

    // The probe dies: the server carries on, the region shows as not live, and a cycle in
    // which only `local` reports (UP) keeps the monitor UP.
    probe.kill();
    let r = wait_live(&u, "eu-west", false).await;
    assert_eq!(r["probes"], json!(0));
    assert!(r["lastSeenAt"].is_string());
    for _ in 0..3 {
        let reports = tick_reports(&srv, &clock).await;
        assert_eq!(reports[0].1.heartbeats, 1);
        assert_eq!(regions_now(&u, &id, &clock).await, ["local"]);
    }
    let m = json_of(
        u.call(Method::GET, &format!("/monitors/{id}"), None).await,
        200,
    )
    .await;
    assert_eq!(m["status"], json!("UP"));
    assert_eq!(m["consecutiveFailures"], json!(0));
    assert_eq!(heartbeats(&u, &id, "?region=eu-west").await.len(), 2);
    let metrics = reqwest::get(srv.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("probes_connected{region=\"eu-west\"} 0")),
        "{metrics}"
    );
    srv.stop().await;
}

/// An in-process probe (the same client `tocsin probe` runs) until the token fires.
fn in_process_probe(
    base: &str,
    region: &str,
    key: &str,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), client::ProbeError>>,
) {
    let cancel = CancellationToken::new();
    let opts = ProbeOptions {
        server: url::Url::parse(base).unwrap(),
        region: region.to_string(),
        key: key.to_string(),
        max_in_flight: 16,
    };
    let task = tokio::spawn(client::run(opts, cancel.clone()));
    (cancel, task)
}

async fn mint(srv: &TestServer, region: &str) -> String {
    tocsin::probes::keys::create(srv.state.db(), region, None, T0)
        .await
        .unwrap()
        .key
}

#[tokio::test]
async fn round_robin_alternates_random_takes_one_region_and_checks_run_everywhere() {
    let target = Target::start().await;
    let target_base = &target.base;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("rr@example.com").await;
    let key = mint(&srv, "eu-west").await;
    let (cancel, probe) = in_process_probe(&srv.base, "eu-west", &key);
    wait_live(&u, "eu-west", true).await;
    let url = format!("{target_base}/");
    // Two confirmations and a slot with room for two answers in a row: while nothing fails
    // one region checks each cycle (with one confirmation, or no such room, a second region
    // checks beside the picked one from the start).
    let spread = |name: &str, strategy: &str| {
        let mut body = regional(name, &url, &["local", "eu-west"], strategy);
        body["confirmationsRequired"] = json!(2);
        body["timeout"] = json!(1);
        body
    };
    let rr = create_id(&u, spread("rr", "round_robin")).await;
    let rnd = create_id(&u, spread("rnd", "random")).await;

    let mut rr_seen = Vec::new();
    let mut rnd_seen = BTreeSet::new();
    for cycle in 0..30 {
        let reports = tick_reports(&srv, &clock).await;
        assert_eq!(reports.len(), 2, "cycle {cycle}");
        assert!(
            reports.iter().all(|(_, r)| r.heartbeats == 1),
            "cycle {cycle}"
        );
        let got = regions_now(&u, &rr, &clock).await;
        assert_eq!(got.len(), 1, "cycle {cycle}: {got:?}");
        rr_seen.push(got[0].clone());
        let got = regions_now(&u, &rnd, &clock).await;
        assert_eq!(got.len(), 1, "cycle {cycle}: {got:?}");
        rnd_seen.insert(got[0].clone());
        if cycle >= 3 && rnd_seen.len() == 2 {
            break;
        }
    }
    for pair in rr_seen.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "round_robin repeated a region: {rr_seen:?}"
        );
    }
    assert_eq!(rnd_seen.len(), 2, "random never used one of the regions");

    // An on-demand check runs in every region of the monitor.
    let res = json_of(
        u.call(Method::POST, &format!("/monitors/{rr}/check"), None)
            .await,
        202,
    )
    .await;
    let corr = res["correlationId"].as_str().unwrap();
    let started = Instant::now();
    loop {
        let hbs = heartbeats(&u, &rr, &format!("?correlationId={corr}")).await;
        let mut got: Vec<&str> = hbs.iter().map(|h| h["region"].as_str().unwrap()).collect();
        got.sort();
        if got == ["eu-west", "local"] {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "on-demand heartbeats: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    cancel.cancel();
    assert!(probe.await.unwrap().is_ok());
    wait_live(&u, "eu-west", false).await;
    srv.stop().await;
}

#[tokio::test]
async fn wrong_revoked_and_misplaced_keys_are_refused() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.probe_ping_interval = Duration::from_millis(200);
        })),
    })
    .await;
    let u = srv.sign_up("refused@example.com").await;
    let key = mint(&srv, "eu-west").await;
    let connect = format!("{}/probe/v1/connect", srv.base.replacen("http", "ws", 1));
    let attempt = |bearer: Option<String>, region: Option<&'static str>| {
        let connect = connect.clone();
        async move {
            use tokio_tungstenite::tungstenite::client::IntoClientRequest;
            let mut req = connect.into_client_request().unwrap();
            if let Some(b) = bearer {
                req.headers_mut()
                    .insert("authorization", format!("Bearer {b}").parse().unwrap());
            }
            if let Some(r) = region {
                req.headers_mut()
                    .insert("x-tocsin-probe-region", r.parse().unwrap());
            }
            match tokio_tungstenite::connect_async(req).await {
                Ok(_) => 101,
                Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status().as_u16(),
                Err(e) => panic!("{e}"),
            }
        }
    };
    assert_eq!(attempt(None, None).await, 401);
    assert_eq!(
        attempt(Some("prb_wrong".into()), Some("eu-west")).await,
        401
    );
    assert_eq!(attempt(Some(format!("{key}x")), Some("eu-west")).await, 401);
    assert_eq!(attempt(Some(key.clone()), Some("us-east")).await, 403);
    assert_eq!(attempt(Some(key.clone()), Some("eu-west")).await, 101);
    // Without a WebSocket upgrade the endpoint is just an error.
    let plain = reqwest::Client::new()
        .get(srv.url("/probe/v1/connect"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_error(plain, 400, "VALIDATION_ERROR").await;

    // The real binary with a wrong key or a wrong region stops with a message.
    for (region, k) in [
        ("eu-west", "prb_wrong".to_string()),
        ("us-east", key.clone()),
    ] {
        let child = spawn_probe(&srv.base, region, &k).take();
        // Off the runtime: the server answering the probe runs on this test's thread.
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("refused"), "{err}");
    }

    // A key revoked while its probe is connected: dropped within a ping, then refused.
    let (_cancel, probe) = in_process_probe(&srv.base, "eu-west", &key);
    wait_live(&u, "eu-west", true).await;
    let id = tocsin::store::probes::list(srv.state.db().reader())
        .await
        .unwrap()[0]
        .id
        .clone();
    tocsin::probes::keys::revoke(srv.state.db(), &id, T0)
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(15), probe)
        .await
        .expect("the probe was not dropped")
        .unwrap();
    assert!(
        matches!(ended, Err(client::ProbeError::Refused { status: 401, .. })),
        "{ended:?}"
    );
    assert!(regions(&u)
        .await
        .iter()
        .all(|r| r["name"] != json!("eu-west")));
    let health = reqwest::get(srv.url("/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    srv.stop().await;
}

#[tokio::test]
async fn a_probe_that_is_late_or_cannot_run_a_check_costs_its_report_not_a_false_down() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let target = Target::start().await;
    let target_base = &target.base;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("late@example.com").await;
    let key = mint(&srv, "eu-west").await;
    // A probe speaking the protocol by hand: it ignores its first job and answers the others
    // with an error, and tells the test what it received.
    let mut req = format!("{}/probe/v1/connect", srv.base.replacen("http", "ws", 1))
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    let (mut tx, mut rx) = ws.split();
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let probe = tokio::spawn(async move {
        let mut jobs = 0;
        while let Some(Ok(frame)) = rx.next().await {
            let Message::Text(text) = frame else { continue };
            let msg: Value = serde_json::from_str(text.as_str()).unwrap();
            seen_tx.send(msg.clone()).unwrap();
            if msg["type"] == json!("job") {
                jobs += 1;
                if jobs > 1 {
                    let answer = json!({"type": "results", "results": [
                        {"id": msg["job"]["id"], "outcome": null, "error": "cannot run this here"}
                    ]});
                    tx.send(Message::Text(answer.to_string().into()))
                        .await
                        .unwrap();
                }
            }
        }
    });
    let welcome = seen.recv().await.unwrap();
    assert_eq!(welcome["type"], json!("welcome"));
    assert_eq!(welcome["region"], json!("eu-west"));

    let mut body = regional(
        "late",
        &format!("{target_base}/"),
        &["local", "eu-west"],
        "all",
    );
    body["timeout"] = json!(1);
    let id = create_id(&u, body).await;

    // No answer: the cycle waits out its deadline (at least the check's timeout, at most
    // timeout + slack, and only until shortly before the next slot), then only `local` counts.
    let started = Instant::now();
    let reports = tick_reports(&srv, &clock).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_millis(4_500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reports[0].1.heartbeats, 1);
    assert_eq!(regions_now(&u, &id, &clock).await, ["local"]);
    let job = seen.recv().await.unwrap();
    assert_eq!(job["type"], json!("job"));
    assert_eq!(job["job"]["monitorId"], json!(id));
    assert_eq!(job["job"]["type"], json!("HTTP"));
    assert_eq!(job["job"]["timeoutMs"], json!(1000));

    // An error instead of an outcome: no waiting, and again only `local` counts.
    let started = Instant::now();
    let reports = tick_reports(&srv, &clock).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reports[0].1.heartbeats, 1);
    assert_eq!(regions_now(&u, &id, &clock).await, ["local"]);
    let m = json_of(
        u.call(Method::GET, &format!("/monitors/{id}"), None).await,
        200,
    )
    .await;
    assert_eq!(m["status"], json!("UP"));
    assert_eq!(region(&u, "eu-west").await["live"], json!(true));
    probe.abort();
    srv.stop().await;
}

#[tokio::test]
async fn a_probe_leaves_a_silent_server_and_reconnects() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    // A WebSocket server that welcomes the probe, announcing 100 ms pings, then says nothing
    // while keeping the connection open (a host that vanished without closing it).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (cancel, probe) = in_process_probe(&base, "eu-west", "prb_any");
    let (first, _) = listener.accept().await.unwrap();
    let mut ws = tokio_tungstenite::accept_async(first).await.unwrap();
    let welcome =
        json!({"type": "welcome", "region": "eu-west", "name": "p", "pingIntervalMs": 100});
    ws.send(Message::Text(welcome.to_string().into()))
        .await
        .unwrap();
    let started = Instant::now();
    let (second, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the probe never gave up on the silent connection")
        .unwrap();
    // Three missed pings (300 ms) at least, then a reconnect.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    tokio_tungstenite::accept_async(second).await.unwrap();
    drop(ws);
    cancel.cancel();
    assert!(probe.await.unwrap().is_ok());
}

#[tokio::test]
async fn probes_of_one_region_take_its_jobs_in_turn_and_a_terminated_probe_exits_cleanly() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let target = Target::start().await;
    let target_base = &target.base;
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("turns@example.com").await;
    // Two hand-driven probes of eu-west, each answering every job with an error and counting.
    let mut counters = Vec::new();
    let mut tasks = Vec::new();
    for name in ["a", "b"] {
        let key = tocsin::probes::keys::create(srv.state.db(), "eu-west", Some(name), T0)
            .await
            .unwrap()
            .key;
        let mut req = format!("{}/probe/v1/connect", srv.base.replacen("http", "ws", 1))
            .into_client_request()
            .unwrap();
        req.headers_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
        let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        let (mut tx, mut rx) = ws.split();
        let jobs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = jobs.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(Ok(frame)) = rx.next().await {
                let Message::Text(text) = frame else { continue };
                let msg: Value = serde_json::from_str(text.as_str()).unwrap();
                if msg["type"] == json!("job") {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let answer = json!({"type": "results", "results": [
                        {"id": msg["job"]["id"], "outcome": null, "error": "counting only"}
                    ]});
                    tx.send(Message::Text(answer.to_string().into()))
                        .await
                        .unwrap();
                }
            }
        }));
        counters.push(jobs);
    }
    let r = wait_region(&u, "eu-west", |r| r["probes"] == json!(2)).await;
    let mut names: Vec<&str> = r["probeNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);

    create_id(
        &u,
        regional("turns", &format!("{target_base}/"), &["eu-west"], "all"),
    )
    .await;
    for _ in 0..4 {
        let reports = tick_reports(&srv, &clock).await;
        // An error is no result: nothing reported, nothing stepped.
        assert!(reports[0].1.verdict.is_none());
    }
    let counts: Vec<usize> = counters
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::SeqCst))
        .collect();
    assert_eq!(counts, [2, 2]);
    for t in tasks {
        t.abort();
    }

    // SIGTERM: the probe process says goodbye and exits 0; the server notices at once.
    let key = mint(&srv, "us-east").await;
    let probe = spawn_probe(&srv.base, "us-east", &key);
    wait_live(&u, "us-east", true).await;
    let child = probe.take();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_live(&u, "us-east", false).await;
    srv.stop().await;
}

/// Milliseconds of an RFC 3339 timestamp.
fn ms_of(v: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

#[tokio::test]
async fn a_frozen_probe_is_not_seen_and_its_region_stops_being_live_in_time() {
    // Pings every 2 s: a probe silent for 5 s (two and a half intervals) is gone.
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.probe_ping_interval = Duration::from_secs(2);
        })),
    })
    .await;
    let u = srv.sign_up("frozen@example.com").await;
    let key = create_key(&srv, "eu-west");
    let probe = spawn_probe(&srv.base, "eu-west", &key);
    let pid = probe.0.as_ref().unwrap().id().to_string();
    wait_live(&u, "eu-west", true).await;
    // Freeze the probe right after it was heard (lastSeenAt moved with a pong).
    let connected = ms_of(&region(&u, "eu-west").await["lastSeenAt"]);
    let r = wait_region(&u, "eu-west", |r| ms_of(&r["lastSeenAt"]) > connected).await;
    assert_eq!(r["live"], json!(true));
    let stop = Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    assert!(stop.success());
    let frozen = Instant::now();
    let frozen_ms = chrono::Utc::now().timestamp_millis();
    // A frame the probe sent just before may land a moment later; after that, lastSeenAt
    // stands still: until the region reads not live, and for a while after.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let settled = region(&u, "eu-west").await["lastSeenAt"].clone();
    assert!(ms_of(&settled) <= frozen_ms + 300, "{settled}");
    let mut gone_after = None;
    while frozen.elapsed() < Duration::from_secs(9) {
        let r = region(&u, "eu-west").await;
        assert_eq!(
            r["lastSeenAt"],
            settled,
            "lastSeenAt moved {:?} after the probe froze",
            frozen.elapsed()
        );
        if gone_after.is_none() && r["live"] == json!(false) {
            gone_after = Some(frozen.elapsed());
            assert_eq!(r["probes"], json!(0));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gone_after = gone_after.expect("the frozen probe's region stayed live");
    assert!(
        gone_after <= Duration::from_millis(5_500),
        "the region read live {gone_after:?} after the probe froze"
    );

    // Thawed, the probe finds its connection closed, reconnects and is heard again.
    let cont = Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    assert!(cont.success());
    let r = wait_live(&u, "eu-west", true).await;
    assert!(ms_of(&r["lastSeenAt"]) > frozen_ms, "{r}");
    drop(probe);
    srv.stop().await;
}
