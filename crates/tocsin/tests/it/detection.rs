//! Detection that stays honest when a region or a probe fails, through the real `tocsin serve`
//! binary with probes speaking the probe protocol by hand over a real WebSocket (so each test
//! decides what a region sees): a region that sees the target down while another sees it up
//! never pages under `round_robin` or `random`; a frozen region does not cost the others their
//! slot; a probe (remote, or the server's own built-in one held to its open descriptors with
//! `prlimit`) that runs out of descriptors is a probe error, not an outage; a monitor whose
//! only region lost its probe says it is stale and says so again when results return; a status
//! change is stamped when it was decided; and a frozen probe's `lastSeenAt` stands still.
//! Real time: intervals of 2 to 3 s.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::common::binary::{self, free_port, run_ok, tocsin, wait_ready};
use crate::common::target::Target;

/// A `tocsin serve` process on a fresh SQLite data directory, with a user, an API token and
/// a probe key for `eu-west`; killed when dropped.
struct Server {
    child: Child,
    base: String,
    token: String,
    probe_key: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tocsin.toml"),
            "min_interval_seconds = 1\nprobe_ping_seconds = 1\n",
        )
        .unwrap();
        let d = dir.path();
        let token = binary::seed(d, "ops@example.com", "all");
        let probe_key = run_ok(
            d,
            &[
                "probe-key",
                "create",
                "--region",
                "eu-west",
                "--data-dir",
                "data",
            ],
        );
        let port = free_port();
        let child = tocsin(d)
            .args([
                "serve",
                "--config",
                "tocsin.toml",
                "--data-dir",
                "data",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .stdout(std::fs::File::create(d.join("server.log")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_ready(port).await;
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            token,
            probe_key,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.call(Method::GET, path, None).await;
        assert_eq!(status, 200, "{path}: {body}");
        body
    }

    async fn create(&self, body: Value) -> String {
        let (status, m) = self.call(Method::POST, "/monitors", Some(body)).await;
        assert_eq!(status, 201, "{m}");
        m["id"].as_str().unwrap().to_string()
    }

    async fn events(&self, id: &str) -> Vec<Value> {
        let mut events = self
            .get(&format!("/monitors/{id}/events"))
            .await
            .as_array()
            .cloned()
            .unwrap();
        events.reverse();
        events
    }

    async fn heartbeats(&self, id: &str) -> Vec<Value> {
        self.get(&format!("/monitors/{id}/heartbeats?limit=1000"))
            .await
            .as_array()
            .cloned()
            .unwrap()
    }

    async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a hand-driven probe does with each job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Answer {
    /// The target is down from here.
    Down,
    /// The target is up from here.
    Up,
    /// Never answers a job (but keeps the connection alive).
    Never,
    /// Reports that it ran out of descriptors.
    Fault,
}

/// A probe of `eu-west` speaking the protocol by hand. `answer` can be changed while it runs;
/// `read` false stops it reading the socket at all (a frozen process: no pongs either).
struct HandProbe {
    answer: Arc<Mutex<Answer>>,
    jobs: Arc<Mutex<u32>>,
    task: tokio::task::JoinHandle<()>,
}

impl HandProbe {
    async fn connect(srv: &Server, answer: Answer) -> HandProbe {
        let mut req = format!("{}/probe/v1/connect", srv.base.replacen("http", "ws", 1))
            .into_client_request()
            .unwrap();
        req.headers_mut().insert(
            "authorization",
            format!("Bearer {}", srv.probe_key).parse().unwrap(),
        );
        let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        let (mut tx, mut rx) = ws.split();
        let answer = Arc::new(Mutex::new(answer));
        let jobs = Arc::new(Mutex::new(0));
        let (a, j) = (answer.clone(), jobs.clone());
        let task = tokio::spawn(async move {
            while let Some(Ok(frame)) = rx.next().await {
                let Message::Text(text) = frame else { continue };
                let msg: Value = serde_json::from_str(text.as_str()).unwrap();
                if msg["type"] != json!("job") {
                    continue;
                }
                *j.lock().unwrap() += 1;
                let id = msg["job"]["id"].clone();
                let outcome = match *a.lock().unwrap() {
                    Answer::Never => continue,
                    Answer::Down => json!({"verdict": "DOWN", "latencyUs": 1500,
                        "message": "HTTP 500 from eu-west", "statusCode": 500,
                        "assertionResults": [], "retryCount": 0}),
                    Answer::Up => json!({"verdict": "UP", "latencyUs": 1500, "statusCode": 200,
                        "assertionResults": [], "retryCount": 0}),
                    Answer::Fault => json!({"verdict": "DOWN", "latencyUs": 10,
                        "message": "probe could not run the check: too many open files (EMFILE)",
                        "probeFault": "probe could not run the check: too many open files (EMFILE)",
                        "assertionResults": [], "retryCount": 0}),
                };
                let reply = json!({"type": "results", "results": [{"id": id, "outcome": outcome}]});
                if tx
                    .send(Message::Text(reply.to_string().into()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        HandProbe { answer, jobs, task }
    }

    fn set(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    fn jobs(&self) -> u32 {
        *self.jobs.lock().unwrap()
    }
}

impl Drop for HandProbe {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn wait_live(srv: &Server) {
    let started = Instant::now();
    loop {
        let regions = srv.get("/regions").await;
        let live = regions
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["name"] == json!("eu-west") && r["live"] == json!(true));
        if live {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{regions}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test]
async fn one_failing_region_never_pages_under_round_robin_or_random() {
    let srv = Server::start().await;
    let target = Target::start().await;
    let url = target.url("/");
    let probe = HandProbe::connect(&srv, Answer::Down).await;
    wait_live(&srv).await;
    let monitor = |name: &str, strategy: &str| {
        json!({"name": name, "type": "HTTP", "url": url, "interval": 2, "timeout": 1,
               "regions": ["local", "eu-west"], "regionStrategy": strategy})
    };
    let rr = srv.create(monitor("rr", "round_robin")).await;
    let rnd = srv.create(monitor("rnd", "random")).await;
    // Long enough for eu-west to be asked (and fail) several times under both strategies,
    // however busy the machine.
    let started = Instant::now();
    loop {
        let mut failed_from_eu = 0;
        for id in [&rr, &rnd] {
            let hbs = srv.heartbeats(id).await;
            failed_from_eu += usize::from(
                hbs.iter()
                    .filter(|h| h["region"] == json!("eu-west") && h["status"] == json!("DOWN"))
                    .count()
                    >= 2,
            );
        }
        if failed_from_eu == 2 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "eu-west was asked {} times",
            probe.jobs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in [&rr, &rnd] {
        let events = srv.events(id).await;
        assert_eq!(kinds(&events), ["up"], "{events:?}");
        let m = srv.get(&format!("/monitors/{id}")).await;
        assert_eq!(m["status"], json!("UP"), "{m}");
        // eu-west's failures are stored as its own heartbeats, each confirmed from `local`.
        let hbs = srv.heartbeats(id).await;
        assert!(
            hbs.iter()
                .any(|h| h["region"] == json!("eu-west") && h["status"] == json!("DOWN")),
            "{hbs:?}"
        );
    }

    // Both regions fail: now it is an outage, and it pages.
    drop(probe);
    let probe = HandProbe::connect(&srv, Answer::Down).await;
    wait_live(&srv).await;
    let (status, _) = srv
        .call(
            Method::PATCH,
            &format!("/monitors/{rr}"),
            Some(json!({"url": "http://127.0.0.1:9/"})),
        )
        .await;
    assert_eq!(status, 200);
    let started = Instant::now();
    loop {
        let m = srv.get(&format!("/monitors/{rr}")).await;
        if m["status"] == json!("DOWN") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(probe);
}

#[tokio::test]
async fn a_frozen_region_costs_the_others_no_slot_and_a_probe_fault_is_no_outage() {
    let srv = Server::start().await;
    let target = Target::start().await;
    let url = target.url("/");
    let probe = HandProbe::connect(&srv, Answer::Never).await;
    wait_live(&srv).await;
    // The remote round trip may take timeout + 3 s = 4 s, twice the interval.
    let id = srv
        .create(
            json!({"name": "both", "type": "HTTP", "url": url, "interval": 2,
                       "timeout": 1, "regions": ["local", "eu-west"]}),
        )
        .await;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(13)).await;
    let local: Vec<Value> = srv
        .heartbeats(&id)
        .await
        .into_iter()
        .filter(|h| h["region"] == json!("local"))
        .collect();
    // A slot every 2 s: 6 or 7 in 13 s. Waiting out the frozen region would give 3 or 4.
    assert!(
        local.len() >= 5,
        "{} local heartbeats in {:?}",
        local.len(),
        started.elapsed()
    );
    assert!(probe.jobs() >= 5, "{}", probe.jobs());

    // The probe now reports that it ran out of descriptors: a probe error, never a failure.
    probe.set(Answer::Fault);
    let eu_only = srv
        .create(
            json!({"name": "eu", "type": "HTTP", "url": url, "interval": 2,
                       "timeout": 1, "regions": ["eu-west"]}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let m = srv.get(&format!("/monitors/{eu_only}")).await;
    assert_eq!(m["status"], json!("PENDING"), "{m}");
    assert!(srv.events(&eu_only).await.is_empty());
    assert!(srv.heartbeats(&eu_only).await.is_empty());
    let metrics = srv.metrics().await;
    let errors = metrics
        .lines()
        .find(|l| {
            l.starts_with("probe_errors_total{")
                && l.contains("region=\"eu-west\"")
                && l.contains("reason=\"resource\"")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    let n: f64 = errors.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n >= 2.0, "{errors}");
}

#[tokio::test]
async fn a_monitor_nobody_checks_says_it_is_stale_and_fresh_again() {
    let srv = Server::start().await;
    let target = Target::start().await;
    let url = target.url("/");
    let probe = HandProbe::connect(&srv, Answer::Up).await;
    wait_live(&srv).await;
    let id = srv
        .create(
            json!({"name": "eu", "type": "HTTP", "url": url, "interval": 2,
                       "timeout": 1, "regions": ["eu-west"]}),
        )
        .await;
    let wait_for = |want: &'static str| {
        let srv = &srv;
        let id = id.clone();
        async move {
            let started = Instant::now();
            loop {
                // Events first: the state is written in the event's transaction, so a read
                // after the event is seen shows it (the other order can see the event only).
                let events = kinds(&srv.events(&id).await);
                let m = srv.get(&format!("/monitors/{id}")).await;
                if events.last().map(String::as_str) == Some(want) {
                    return (m, events);
                }
                assert!(
                    started.elapsed() < Duration::from_secs(15),
                    "{m} {events:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let (m, _) = wait_for("up").await;
    assert_eq!(m["staleSince"], Value::Null);

    // The only probe of its only region goes away: the monitor stays UP but says it is stale.
    drop(probe);
    let (m, events) = wait_for("stale").await;
    assert_eq!(m["status"], json!("UP"));
    assert!(m["staleSince"].is_string(), "{m}");
    assert_eq!(events, ["up", "stale"]);
    let list = srv.get("/monitors").await;
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(id))
        .unwrap()
        .clone();
    assert_eq!(listed["staleSince"], m["staleSince"]);
    let metrics = srv.metrics().await;
    assert!(
        metrics.lines().any(|l| l == "monitors_stale 1"),
        "{metrics}"
    );
    let stale_event = srv.events(&id).await.pop().unwrap();
    assert_eq!(stale_event["alert"], json!(true));
    assert!(
        stale_event["message"].as_str().unwrap().contains("eu-west"),
        "{stale_event}"
    );

    // A probe comes back: results reach the monitor again.
    let _probe = HandProbe::connect(&srv, Answer::Up).await;
    let (m, events) = wait_for("fresh").await;
    assert_eq!(m["staleSince"], Value::Null);
    assert_eq!(events, ["up", "stale", "fresh"]);

    // Each change is logged at info with the monitor's id, name, old and new status and the
    // cause, and a log that is not a terminal has no colour codes.
    let log = std::fs::read_to_string(srv._dir.path().join("server.log")).unwrap();
    assert!(!log.contains('\u{1b}'), "ANSI codes in a log file");
    let changes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("monitor status changed") && l.contains(&id))
        .collect();
    assert_eq!(changes.len(), 3, "{log}");
    assert!(changes
        .iter()
        .all(|l| l.contains("INFO") && l.contains("name=eu")));
    assert!(changes[0].contains("from=PENDING") && changes[0].contains("to=UP"));
    assert!(changes[1].contains("kind=stale") && changes[1].contains("eu-west"));
}

#[tokio::test]
async fn a_status_change_is_stamped_when_decided_and_a_frozen_probe_is_not_seen() {
    let srv = Server::start().await;
    // A target that accepts and never answers: each check times out after 1 s.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let h = held.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = silent.accept().await {
            h.lock().unwrap().push(s);
        }
    });
    let id = srv
        .create(
            json!({"name": "slow", "type": "HTTP", "url": url, "interval": 3,
                       "timeout": 1}),
        )
        .await;
    let started = Instant::now();
    let down = loop {
        let events = srv.events(&id).await;
        if let Some(e) = events.iter().find(|e| e["kind"] == json!("down")) {
            break e.clone();
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{events:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The cycle commits its status change before the heartbeat writer stores the check's
    // result, so the heartbeat may follow the event by a moment.
    let first = loop {
        let hbs = srv.heartbeats(&id).await;
        if let Some(first) = hbs
            .iter()
            .map(|h| h["createdAt"].as_str().unwrap().to_string())
            .min()
        {
            break first;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no heartbeat");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let ms = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    };
    let lag = ms(down["createdAt"].as_str().unwrap()) - ms(&first);
    // The check began at the heartbeat's time; the verdict came a whole timeout later.
    assert!(lag >= 900, "event stamped {lag} ms after the check began");

    // A probe that stops reading (frozen): its region's lastSeenAt stands still.
    let mut req = format!("{}/probe/v1/connect", srv.base.replacen("http", "ws", 1))
        .into_client_request()
        .unwrap();
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {}", srv.probe_key).parse().unwrap(),
    );
    let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
    wait_live(&srv).await;
    let seen = |regions: &Value| {
        regions
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == json!("eu-west"))
            .unwrap()["lastSeenAt"]
            .clone()
    };
    let before = seen(&srv.get("/regions").await);
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let after = seen(&srv.get("/regions").await);
    assert_eq!(before, after, "lastSeenAt moved while the probe was frozen");
    drop(ws);
}

/// The lowest descriptor number free in process `pid` (a new descriptor takes the lowest free
/// number, and fails with EMFILE when that is not below the limit); the lowest of a few looks,
/// so a check's socket open at one look does not count.
async fn lowest_free_fd(pid: u32) -> usize {
    let mut lowest = usize::MAX;
    for _ in 0..8 {
        let used: std::collections::HashSet<usize> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        let free = (0..).find(|n| !used.contains(n)).unwrap();
        lowest = lowest.min(free);
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    lowest
}

#[tokio::test]
async fn the_servers_own_descriptor_exhaustion_is_a_probe_error_not_an_outage() {
    if !Path::new("/proc/self/fd").exists() {
        return;
    }
    let srv = Server::start().await;
    let target = Target::start().await;
    let url = target.url("/");
    let id = srv
        .create(json!({"name": "web", "type": "HTTP", "url": url, "interval": 2, "timeout": 1}))
        .await;
    let started = Instant::now();
    while srv.get(&format!("/monitors/{id}")).await["status"] != json!("UP") {
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // From now on the server cannot open one more descriptor: the next check's socket fails
    // with EMFILE. The test keeps talking over the connection its client already holds.
    let pid = srv.child.id();
    let n = lowest_free_fd(pid).await;
    let limited = std::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--nofile={n}:{n}")])
        .status();
    let Ok(status) = limited else {
        return; // no prlimit on this machine
    };
    assert!(status.success());
    tokio::time::sleep(Duration::from_secs(7)).await;
    let m = srv.get(&format!("/monitors/{id}")).await;
    assert_eq!(m["status"], json!("UP"), "{m}");
    // Never DOWN; after three intervals without a result it says nobody could check it.
    let events = kinds(&srv.events(&id).await);
    assert!(events == ["up"] || events == ["up", "stale"], "{events:?}");
    let metrics = srv.metrics().await;
    let errors = metrics
        .lines()
        .find(|l| {
            l.starts_with("probe_errors_total{")
                && l.contains("region=\"local\"")
                && l.contains("reason=\"resource\"")
        })
        .unwrap_or_else(|| {
            let log =
                std::fs::read_to_string(srv._dir.path().join("server.log")).unwrap_or_default();
            panic!("{metrics}\n{log}")
        });
    let count: f64 = errors.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count >= 2.0, "{errors}");
}
