//! Region strategies under trouble, on the real server (the suite's, on either backend, with
//! its real scheduler and clock) with the built-in `local` region and two real `tocsin probe`
//! processes (`eu-west`, `us-east`), checking a loopback target that tells the processes apart
//! (it maps each connection's client port to its process through `/proc`) and so can hang or
//! answer slowly for one region only. Under each strategy (`all`, `round_robin`, `random`):
//! a target hanging for one region never pages, even while the others answer slowly; a real
//! outage (failing fast, or hanging everywhere) pages within interval x confirmations +
//! timeout; no slot is skipped; no monitor is reported stale while a region is live; and a
//! region whose probe is killed is never picked again (every slot still gets a result).
//! Intervals of 5 and 8 s, timeout 3 s.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::regions::wait_live;
use crate::common::{json_of, Options, TestServer, User};

const BIN: &str = env!("CARGO_BIN_EXE_tocsin");
const INTERVAL_S: i64 = 5;
const TIMEOUT_S: i64 = 3;
/// An interval with room for two answers in a row (2 x (timeout + 0.5 s) + 0.5 s).
const ROOMY_S: i64 = 8;
const STRATEGIES: [&str; 3] = ["all", "round_robin", "random"];

/// What the target does for the connections of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    /// `200 OK` after this many milliseconds.
    Answer(u64),
    /// `500` at once.
    Fail,
    /// Reads the request and never answers.
    Hang,
}

/// A loopback HTTP target whose answer depends on which process connected.
struct Target {
    url: String,
    acts: Arc<Mutex<HashMap<u32, Act>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The inode of the client end of a loopback TCP connection from `client_port` to
/// `server_port`, from the kernel's table of IPv4 sockets.
fn client_inode(client_port: u16, server_port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let port = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 9 && port(f[1]) == Some(client_port) && port(f[2]) == Some(server_port))
            .then(|| f[9].parse().ok())
            .flatten()
    })
}

/// Which of `pids` holds socket `inode`.
fn owner(inode: u64, pids: &[u32]) -> Option<u32> {
    let want = format!("socket:[{inode}]");
    pids.iter().copied().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|dir| {
                dir.filter_map(Result::ok).any(|e| {
                    std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy() == want)
                })
            })
            .unwrap_or(false)
    })
}

impl Target {
    async fn start() -> Target {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acts: Arc<Mutex<HashMap<u32, Act>>> = Arc::default();
        let a = acts.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut sock, peer)) = listener.accept().await {
                let acts = a.clone();
                tokio::spawn(async move {
                    let pids: Vec<u32> = acts.lock().unwrap().keys().copied().collect();
                    let act = client_inode(peer.port(), addr.port())
                        .and_then(|inode| owner(inode, &pids))
                        .and_then(|pid| acts.lock().unwrap().get(&pid).copied())
                        .unwrap_or(Act::Answer(0));
                    let mut buf = vec![0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let status = match act {
                        Act::Hang => {
                            // Held open until the client gives up.
                            let _ = sock.read(&mut buf).await;
                            return;
                        }
                        Act::Fail => "500 Internal Server Error",
                        Act::Answer(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            "200 OK"
                        }
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    let _ = sock.write_all(reply.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Target {
            url: format!("http://{addr}/"),
            acts,
            task,
        }
    }

    fn set(&self, pid: u32, act: Act) {
        self.acts.lock().unwrap().insert(pid, act);
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A `tocsin probe` process, killed when dropped.
struct Probe(Option<Child>);

impl Probe {
    fn spawn(base: &str, region: &str, key: &str) -> Probe {
        let child = Command::new(BIN)
            .args(["probe", "--server", base, "--region", region])
            .env("TOCSIN_KEY", key)
            .env("TOCSIN_LOG_LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Probe(Some(child))
    }

    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A monitor of a test, and how it is set.
#[derive(Debug, Clone)]
struct Mon {
    strategy: &'static str,
    id: String,
    confirmations: i64,
    interval: i64,
}

/// The server, its user, the target and the two probes.
struct Rig {
    srv: TestServer,
    u: User,
    target: Target,
    eu: Probe,
    us: Probe,
}

impl Rig {
    async fn start(email: &str) -> Rig {
        let srv = TestServer::start_with(Options {
            clock: None,
            tweak: Some(Box::new(|c| {
                c.min_interval_seconds = 1;
                c.scheduler_enabled = true;
                c.probe_ping_interval = Duration::from_millis(500);
            })),
        })
        .await;
        let u = srv.sign_up(email).await;
        let now = chrono::Utc::now().timestamp_millis();
        let mut keys = Vec::new();
        for region in ["eu-west", "us-east"] {
            let key = tocsin::probes::keys::create(srv.state.db(), region, None, now)
                .await
                .unwrap()
                .key;
            keys.push(key);
        }
        let eu = Probe::spawn(&srv.base, "eu-west", &keys[0]);
        let us = Probe::spawn(&srv.base, "us-east", &keys[1]);
        wait_live(&u, "eu-west", true).await;
        wait_live(&u, "us-east", true).await;
        let target = Target::start().await;
        Rig {
            srv,
            u,
            target,
            eu,
            us,
        }
    }

    /// One monitor per strategy with `confirmations`, every `interval` s.
    async fn monitors(&self, confirmations: i64, interval: i64) -> Vec<Mon> {
        let mut out = Vec::new();
        for s in STRATEGIES {
            let body = json!({"name": format!("{s}-{confirmations}-{interval}"), "type": "HTTP",
                "url": self.target.url, "interval": interval, "timeout": TIMEOUT_S,
                "regions": ["local", "eu-west", "us-east"], "regionStrategy": s,
                "confirmationsRequired": confirmations});
            let m = json_of(
                self.u.call(Method::POST, "/monitors", Some(body)).await,
                201,
            )
            .await;
            out.push(Mon {
                strategy: s,
                id: m["id"].as_str().unwrap().to_string(),
                confirmations,
                interval,
            });
        }
        out
    }

    async fn get(&self, path: &str) -> Value {
        json_of(self.u.call(Method::GET, path, None).await, 200).await
    }

    async fn kinds(&self, id: &str) -> Vec<String> {
        let mut events: Vec<Value> = self
            .get(&format!("/monitors/{id}/events"))
            .await
            .as_array()
            .unwrap()
            .clone();
        events.reverse();
        events
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect()
    }

    async fn heartbeats(&self, id: &str) -> Vec<Value> {
        self.get(&format!("/monitors/{id}/heartbeats?limit=1000"))
            .await
            .as_array()
            .unwrap()
            .clone()
    }

    /// Waits until every monitor has status `want`.
    async fn wait_status(&self, ids: &[Mon], want: &str, within: Duration) {
        let started = Instant::now();
        for mon in ids {
            loop {
                let m = self.get(&format!("/monitors/{}", mon.id)).await;
                if m["status"] == json!(want) {
                    break;
                }
                assert!(started.elapsed() < within, "{mon:?}: {m}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// The cycles of `id` with a stored result at or after `since` (its heartbeats carry
    /// their cycle's start), with the regions that reported in each.
    async fn cycles_since(&self, id: &str, since: &str) -> Vec<(String, BTreeSet<String>)> {
        let mut cycles: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
        for h in self.heartbeats(id).await {
            let at = h["createdAt"].as_str().unwrap().to_string();
            if at.as_str() >= since {
                cycles
                    .entry(at)
                    .or_default()
                    .insert(h["region"].as_str().unwrap().to_string());
            }
        }
        cycles.into_iter().collect()
    }

    /// No slot skipped or shed on this server so far.
    fn no_slot_lost(&self) {
        let stats = self.srv.state.scheduler_stats();
        assert_eq!(stats.skipped(), 0, "slots skipped");
        assert_eq!(stats.shed(), 0, "runs shed");
    }
}

fn now_rfc3339() -> String {
    tocsin::clock::rfc3339(chrono::Utc::now().timestamp_millis())
}

fn ms(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap()
        .timestamp_millis()
}

/// Every monitor got a result in (nearly) every slot of the window from `since`, lasting
/// `window`: none was skipped, none went to a region that could not answer.
async fn every_slot_has_a_result(rig: &Rig, ids: &[Mon], since: &str, window: Duration) {
    for mon in ids {
        let slots = window.as_secs() / mon.interval as u64;
        let cycles = rig.cycles_since(&mon.id, since).await;
        assert!(
            cycles.len() as u64 + 1 >= slots,
            "{mon:?}: {} cycles with a result in {slots} slots: {cycles:?}",
            cycles.len()
        );
    }
}

#[tokio::test]
async fn one_regions_hang_never_pages_under_any_strategy() {
    let rig = Rig::start("hang@example.com").await;
    let local = std::process::id();
    // The remote regions answer slowly (most of the timeout), as far-away regions do.
    let slow = Act::Answer(1_700);
    rig.target.set(rig.eu.pid(), slow);
    rig.target.set(rig.us.pid(), slow);
    // Every 5 s the slot has no room for two answers in a row (a confirmer checks from the
    // start); every 8 s with two confirmations it has (a confirmer is asked on trouble).
    let mut ids = rig.monitors(1, INTERVAL_S).await;
    ids.extend(rig.monitors(2, INTERVAL_S).await);
    ids.extend(rig.monitors(2, ROOMY_S).await);
    rig.wait_status(&ids, "UP", Duration::from_secs(20)).await;

    // The target hangs for the server's own probe only, then for one remote probe only.
    for (who, pid) in [("local", local), ("eu-west", rig.eu.pid())] {
        rig.target.set(pid, Act::Hang);
        let since = now_rfc3339();
        let window = Duration::from_secs(5 * INTERVAL_S as u64);
        tokio::time::sleep(window).await;
        for mon in &ids {
            let kinds = rig.kinds(&mon.id).await;
            assert_eq!(kinds, ["up"], "{mon:?} paged while only {who} hung");
            let m = rig.get(&format!("/monitors/{}", mon.id)).await;
            assert_eq!(m["status"], json!("UP"), "{mon:?}: {m}");
            assert_eq!(m["staleSince"], Value::Null, "{mon:?}: {m}");
        }
        every_slot_has_a_result(&rig, &ids, &since, window).await;
        // The hanging region did fail its checks (its trouble was seen, and outvoted).
        let all = ids.iter().find(|m| m.strategy == "all").unwrap();
        let hbs = rig.heartbeats(&all.id).await;
        assert!(
            hbs.iter()
                .any(|h| h["region"] == json!(who) && h["status"] == json!("DOWN")),
            "{who} never failed"
        );
        rig.target.set(pid, slow);
    }
    rig.no_slot_lost();
    rig.srv.stop().await;
}

#[tokio::test]
async fn a_real_outage_pages_in_time_under_any_strategy() {
    let rig = Rig::start("outage@example.com").await;
    let local = std::process::id();
    let pids = [local, rig.eu.pid(), rig.us.pid()];
    for pid in pids {
        rig.target.set(pid, Act::Answer(300));
    }
    let mut ids = rig.monitors(1, INTERVAL_S).await;
    ids.extend(rig.monitors(2, INTERVAL_S).await);
    ids.extend(rig.monitors(2, ROOMY_S).await);
    rig.wait_status(&ids, "UP", Duration::from_secs(20)).await;

    // Fast failures everywhere, then a target hanging everywhere.
    for (round, act) in [Act::Fail, Act::Hang].into_iter().enumerate() {
        let since = now_rfc3339();
        let began = chrono::Utc::now().timestamp_millis();
        for pid in pids {
            rig.target.set(pid, act);
        }
        rig.wait_status(&ids, "DOWN", Duration::from_secs(30)).await;
        for mon in &ids {
            let events: Vec<Value> = rig
                .get(&format!("/monitors/{}/events", mon.id))
                .await
                .as_array()
                .unwrap()
                .clone();
            let down = events
                .iter()
                .filter(|e| e["kind"] == json!("down"))
                .map(|e| ms(e["createdAt"].as_str().unwrap()))
                .max()
                .unwrap();
            let took = down - began;
            // interval x confirmations + timeout, and a little for the round trip.
            let bound = mon.interval * 1000 * mon.confirmations + TIMEOUT_S * 1000 + 300;
            assert!(
                took <= bound,
                "{act:?}: {mon:?} paged after {took} ms (bound {bound})"
            );
            // Exactly one page per outage.
            let downs = events.iter().filter(|e| e["kind"] == json!("down")).count();
            assert_eq!(downs, round + 1, "{mon:?}: {events:?}");
        }
        let window = Duration::from_millis(
            u64::try_from(chrono::Utc::now().timestamp_millis() - began).unwrap(),
        );
        every_slot_has_a_result(&rig, &ids, &since, window).await;
        if act == Act::Hang {
            // A cycle of a target hanging everywhere still fits in its slot: the regions of a
            // cycle wait their timeouts side by side, not one after the other.
            let since = now_rfc3339();
            let window = Duration::from_secs(5 * INTERVAL_S as u64);
            tokio::time::sleep(window).await;
            every_slot_has_a_result(&rig, &ids, &since, window).await;
        }
        for pid in pids {
            rig.target.set(pid, Act::Answer(300));
        }
        rig.wait_status(&ids, "UP", Duration::from_secs(30)).await;
    }
    for mon in &ids {
        let m = rig.get(&format!("/monitors/{}", mon.id)).await;
        assert_eq!(m["staleSince"], Value::Null, "{mon:?}: {m}");
        assert!(!rig.kinds(&mon.id).await.contains(&"stale".to_string()));
    }
    rig.no_slot_lost();
    rig.srv.stop().await;
}

#[tokio::test]
async fn a_region_whose_probe_died_is_never_picked_and_nothing_is_stale() {
    let mut rig = Rig::start("dead@example.com").await;
    let mut ids = rig.monitors(1, INTERVAL_S).await;
    ids.extend(rig.monitors(2, ROOMY_S).await);
    rig.wait_status(&ids, "UP", Duration::from_secs(20)).await;

    rig.us.kill();
    wait_live(&rig.u, "us-east", false).await;
    let since = now_rfc3339();
    let window = Duration::from_secs(24);
    tokio::time::sleep(window).await;
    every_slot_has_a_result(&rig, &ids, &since, window).await;
    for mon in &ids {
        let cycles = rig.cycles_since(&mon.id, &since).await;
        let regions: HashSet<&String> = cycles.iter().flat_map(|(_, r)| r).collect();
        assert!(
            !regions.iter().any(|r| r.as_str() == "us-east"),
            "{mon:?}: {cycles:?}"
        );
        let m = rig.get(&format!("/monitors/{}", mon.id)).await;
        assert_eq!(m["status"], json!("UP"), "{mon:?}: {m}");
        assert_eq!(m["staleSince"], Value::Null, "{mon:?}: {m}");
        assert_eq!(rig.kinds(&mon.id).await, ["up"], "{mon:?}");
    }
    // Under round_robin with room for one region a cycle, the two live regions take the
    // slots in turn.
    let rr = ids
        .iter()
        .find(|m| m.strategy == "round_robin" && m.interval == ROOMY_S)
        .unwrap();
    let cycles = rig.cycles_since(&rr.id, &since).await;
    assert!(cycles.iter().all(|(_, r)| r.len() == 1), "{cycles:?}");
    for pair in cycles.windows(2) {
        assert_ne!(pair[0].1, pair[1].1, "{cycles:?}");
    }
    rig.no_slot_lost();
    rig.srv.stop().await;
}
