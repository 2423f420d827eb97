//! `GET /stream`, the dashboard's live stream, over real HTTP with a streaming client: a status
//! change arrives within a second, `Last-Event-ID` replays what a closed stream missed and then
//! goes on live without duplicates, another workspace's events never appear, the capability
//! and credential refusals are the JSON envelope, a client that stops reading is dropped, and
//! (PostgreSQL) a change made by the scheduling node reaches a stream on the other node, and
//! so does a heartbeat stored by the other node's writer.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use reqwest::{Method, Response};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common;
use common::monitors::{self, create, push_monitor};
use common::target::Target;
use common::{expect_error, json_of, pg_admin_url, Options, TestServer, User};

/// The clients of `tocsin bench streams`, a module of the binary (the library does not compile
/// the load generator): only std, serde and tokio, so the suite compiles the same file.
#[allow(dead_code)]
#[path = "../../src/bench/streams.rs"]
mod bench_streams;

/// One server-sent event (an `id:`-only frame has an empty `event`).
#[derive(Debug, Clone, PartialEq)]
struct Ev {
    event: String,
    id: String,
    data: Value,
}

/// A streaming reader of one `GET /stream` response.
struct Sse {
    res: Response,
    buf: String,
}

impl Sse {
    async fn open(res: Response) -> Sse {
        assert_eq!(res.status(), 200);
        let ct = res.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("text/event-stream"), "content-type {ct}");
        Sse {
            res,
            buf: String::new(),
        }
    }

    /// The next frame (comments skipped), or `None` at the end of the stream or after `within`.
    async fn next(&mut self, within: Duration) -> Option<Ev> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut ev = Ev {
                    event: String::new(),
                    id: String::new(),
                    data: Value::Null,
                };
                let mut any = false;
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        ev.event = v.trim().to_string();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("id:") {
                        ev.id = v.trim().to_string();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        ev.data = serde_json::from_str(v.trim()).unwrap();
                    }
                }
                if any {
                    return Some(ev);
                }
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.res.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.push_str(std::str::from_utf8(&bytes).unwrap()),
                Ok(_) => return None,
                Err(_) => return None,
            }
        }
    }

    /// The next frame named `event` within `within` (others skipped), with the frames skipped.
    async fn until(&mut self, event: &str, within: Duration) -> (Option<Ev>, Vec<Ev>) {
        let deadline = Instant::now() + within;
        let mut skipped = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(e) if e.event == event => return (Some(e), skipped),
                Some(e) => skipped.push(e),
                None => return (None, skipped),
            }
        }
    }

    /// Every frame that arrives within `within`.
    async fn drain(&mut self, within: Duration) -> Vec<Ev> {
        let deadline = Instant::now() + within;
        let mut out = Vec::new();
        while let Some(e) = self
            .next(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            out.push(e);
        }
        out
    }
}

async fn stream(u: &User, last_event_id: Option<&str>) -> Sse {
    let mut req = u.client.get(format!("{}/stream", u.base));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    Sse::open(req.send().await.unwrap()).await
}

/// Pushes `status` (with a message) to `token`; it must be accepted.
async fn push(srv: &TestServer, token: &str, status: &str) {
    let res = monitors::push(srv, token, &format!("?status={status}&msg=from%20test")).await;
    assert_eq!(json_of(res, 202).await, json!({"ok": true}));
}

fn monitor_events(evs: &[Ev]) -> Vec<(String, String)> {
    evs.iter()
        .filter(|e| e.event == "monitor")
        .map(|e| {
            (
                e.data["previousStatus"].as_str().unwrap().to_string(),
                e.data["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_status_change_arrives_within_a_second_and_resume_replays_what_was_missed() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("live@example.com").await;
    let (id, token) = push_monitor(&u, json!({"interval": 3600})).await;

    // The dashboard's EventSource: the session cookie alone.
    let mut s = stream(&u, None).await;
    let first = s.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.event, "", "a resume point comes first: {first:?}");

    let sent = Instant::now();
    push(&srv, &token, "up").await;
    let (ev, before) = s.until("monitor", Duration::from_secs(1)).await;
    let ev = ev.expect("no status change within 1 s");
    assert!(sent.elapsed() <= Duration::from_secs(1));
    assert_eq!(ev.data["monitorId"], json!(id));
    assert_eq!(ev.data["previousStatus"], "PENDING");
    assert_eq!(ev.data["status"], "UP");
    assert_eq!(ev.data["cause"], "from test");
    assert!(ev.data["at"].as_str().unwrap().ends_with('Z'));
    assert!(!ev.id.is_empty());
    // The heartbeat and the status change come from one commit through two paths (the
    // writer's hand-off and the event log), so either may be sent first.
    let hb = match before.into_iter().find(|e| e.event == "heartbeat") {
        Some(hb) => hb,
        None => {
            let (hb, _) = s.until("heartbeat", Duration::from_secs(3)).await;
            hb.expect("no heartbeat frame")
        }
    };
    assert_eq!(hb.data["monitorId"], json!(id));
    assert_eq!(hb.data["status"], "UP");
    assert!(hb.data["latencyMs"].is_number());
    assert!(hb.data["region"].is_string());

    // An outage opens an alert: both frames arrive.
    push(&srv, &token, "down").await;
    let (ev, _) = s.until("monitor", Duration::from_secs(2)).await;
    assert_eq!(ev.unwrap().data["status"], "DOWN");
    let (alert, _) = s.until("alert", Duration::from_secs(2)).await;
    let alert = alert.expect("no alert frame");
    assert_eq!(alert.data["monitorId"], json!(id));
    assert_eq!(alert.data["status"], "OPEN");
    let rest = json_of(
        u.call(
            Method::GET,
            &format!("/alerts/{}", alert.data["id"].as_str().unwrap()),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(alert.data, rest, "the alert frame is the REST record");
    let last_seen = alert.id.clone();
    drop(s);

    // While no stream is open: recovery and a second outage.
    push(&srv, &token, "up").await;
    push(&srv, &token, "down").await;

    // Resuming from the last id seen replays exactly those, in order, then goes on live.
    let mut s = stream(&u, Some(&last_seen)).await;
    let replayed = s.drain(Duration::from_millis(800)).await;
    assert_eq!(
        monitor_events(&replayed),
        vec![
            ("DOWN".to_string(), "UP".to_string()),
            ("UP".to_string(), "DOWN".to_string())
        ],
        "replayed: {replayed:?}"
    );
    push(&srv, &token, "up").await;
    let live = s.drain(Duration::from_millis(1500)).await;
    assert_eq!(
        monitor_events(&live),
        vec![("DOWN".to_string(), "UP".to_string())],
        "live after the replay, no duplicate: {live:?}"
    );
    let resolved = live
        .iter()
        .find(|e| e.event == "alert")
        .expect("the alert's resolution");
    assert_eq!(resolved.data["status"], "RESOLVED");

    // `?lastEventId=` does the same for clients that cannot set the header.
    let res = u
        .client
        .get(srv.url(&format!("/stream?lastEventId={last_seen}")))
        .send()
        .await
        .unwrap();
    let mut q = Sse::open(res).await;
    let replayed = q.drain(Duration::from_millis(800)).await;
    assert_eq!(monitor_events(&replayed).len(), 3, "{replayed:?}");

    // Edits announce the monitor so lists can refetch it.
    let res = u
        .call(
            Method::PATCH,
            &format!("/monitors/{id}"),
            Some(json!({"name": "Renamed"})),
        )
        .await;
    assert_eq!(res.status(), 200);
    let (changed, _) = q.until("monitor.changed", Duration::from_secs(2)).await;
    assert_eq!(
        changed.expect("no monitor.changed").data,
        json!({"monitorId": id, "op": "updated"})
    );
    drop((s, q));
    srv.stop().await;
}

#[tokio::test]
async fn another_workspace_never_sees_events_and_refusals_are_the_envelope() {
    let srv = TestServer::start().await;
    let a = srv.sign_up("a@example.com").await;
    let b = srv.sign_up("b@example.com").await;
    let (_, token) = push_monitor(&a, json!({"interval": 3600})).await;
    let mut sa = stream(&a, None).await;
    // b holds a key with monitors:read: it may stream its own workspace.
    let key = b.token(&["monitors:read"]).await;
    let res = reqwest::Client::new()
        .get(srv.url("/stream"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let mut sb = Sse::open(res).await;
    push(&srv, &token, "up").await;
    push(&srv, &token, "down").await;
    let (seen, _) = sa.until("alert", Duration::from_secs(3)).await;
    assert!(seen.is_some(), "a sees its own alert");
    let leaked: Vec<Ev> = sb
        .drain(Duration::from_millis(1500))
        .await
        .into_iter()
        .filter(|e| !e.event.is_empty())
        .collect();
    assert!(leaked.is_empty(), "b saw a's events: {leaked:?}");

    // A key without monitors:read, no credential at all.
    let key = b.token(&["incidents:read"]).await;
    let res = reqwest::Client::new()
        .get(srv.url("/stream"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let res = reqwest::Client::new()
        .get(srv.url("/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    drop((sa, sb));
    srv.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_and_streams_are_capped() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.streams.buffer = 8;
            c.streams.per_ip = 3;
        })),
    })
    .await;
    let u = srv.sign_up("slow@example.com").await;
    let m = create(&u, json!({"name": "n", "type": "PUSH", "interval": 3600})).await;
    let id = m["id"].as_str().unwrap().to_string();
    let key = u.token(&["monitors:read"]).await;

    // A client with a tiny receive window that reads the head, then nothing.
    let addr: std::net::SocketAddr = srv.base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(2048).unwrap();
    let mut conn = socket.connect(addr).await.unwrap();
    conn.write_all(
        format!("GET /stream HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = [0u8; 512];
    let n = conn.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));
    let hub = srv.state.live().clone();
    assert_eq!(hub.open_streams(), 1);

    // Far more than its buffer while it does not read: frames of 4 KiB straight into the
    // node's fan-out (what the log readers publish), several MiB, more than the sockets hold.
    let sent = 2000;
    let big = json!({"monitorId": id, "op": "updated", "pad": "x".repeat(4096)}).to_string();
    for _ in 0..sent {
        hub.publish(&u.workspace_id, "monitor.changed", &big);
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // It reads again: what was in flight, then the end of the stream, far short of every
    // frame.
    let mut got = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = [0u8; 8192];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
            // The chunked body's last chunk: the stream ended (the connection may stay).
            if got.ends_with(b"\r\n0\r\n\r\n") {
                return;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&got);
    let frames = text.matches("event: monitor.changed").count();
    assert!(
        ended.is_ok(),
        "the slow stream was never closed ({frames} frames read)"
    );
    assert!(frames < sent, "{frames} of {sent} frames: not dropped");
    let deadline = Instant::now() + Duration::from_secs(3);
    while hub.open_streams() > 0 {
        assert!(
            Instant::now() < deadline,
            "the dropped stream is still counted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // At most three streams from one address: the fourth is refused with the envelope.
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(stream(&u, None).await);
    }
    let res = u.call(Method::GET, "/stream", None).await;
    expect_error(res, 429, "RATE_LIMITED").await;
    drop(open);
    srv.stop().await;
}

#[tokio::test]
async fn a_change_made_by_the_scheduling_node_reaches_a_stream_on_the_other() {
    if pg_admin_url().is_none() {
        return;
    }
    let target = Target::start().await;
    // a serves the API only; b schedules.
    let a = TestServer::start().await;
    let b = a
        .start_beside(Options {
            clock: None,
            tweak: Some(Box::new(|c| c.scheduler_enabled = true)),
        })
        .await
        .unwrap();
    let u = a.sign_up("cluster-live@example.com").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !b.state.scheduler_role().is_held() {
        assert!(Instant::now() < deadline, "b never took the scheduler role");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut s = stream(&u, None).await;
    let m = create(
        &u,
        json!({"name": "api", "type": "HTTP", "url": format!("{}/health", target.base),
               "interval": 10, "timeout": 5}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    let (changed, _) = s.until("monitor.changed", Duration::from_secs(2)).await;
    assert_eq!(changed.unwrap().data["op"], "created");
    let (ev, _) = s.until("monitor", Duration::from_secs(20)).await;
    let ev = ev.expect("the first check's status change never reached node a's stream");
    assert_eq!(ev.data["monitorId"], json!(id));
    assert_eq!(ev.data["status"], "UP");
    assert!(!a.state.config().scheduler_enabled, "a runs no scheduler");
    drop(s);
    b.stop().await;
    a.stop().await;
}

#[tokio::test]
async fn a_heartbeat_stored_on_one_node_reaches_a_stream_on_the_other() {
    if pg_admin_url().is_none() {
        return;
    }
    let a = TestServer::start().await;
    let b = a
        .start_beside(Options {
            clock: None,
            tweak: None,
        })
        .await
        .unwrap();
    let u = a.sign_up("relay-live@example.com").await;
    let (id, token) = push_monitor(&u, json!({"interval": 3600})).await;
    assert!(
        !a.state.live().relay().wanted(),
        "no stream open anywhere, yet a relays"
    );
    // The dashboard is connected to b.
    let key = u.token(&["monitors:read"]).await;
    let res = reqwest::Client::new()
        .get(b.url("/stream"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    let mut s = Sse::open(res).await;
    // b announces the workspace it streams; a relays once the announcement arrived.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !a.state.live().relay().streamed_elsewhere(&u.workspace_id) {
        assert!(Instant::now() < deadline, "a never learnt that b streams");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A check-in stored by a's writer.
    let sent = Instant::now();
    push(&a, &token, "up").await;
    let (hb, _) = s.until("heartbeat", Duration::from_secs(2)).await;
    let hb = hb.expect("a's heartbeat never reached the stream on b within 2 s");
    assert!(sent.elapsed() <= Duration::from_secs(2));
    assert_eq!(hb.data["monitorId"], json!(id));
    assert_eq!(hb.data["status"], "UP");
    assert!(hb.data["latencyMs"].is_number());
    assert!(hb.data["region"].is_string());
    assert!(hb.data["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(a.state.heartbeats().counts().written, 1);
    assert_eq!(
        b.state.heartbeats().counts().written,
        0,
        "b stored it itself"
    );

    // Later results too (one frame per monitor per second at most).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    push(&a, &token, "down").await;
    let (hb, _) = s.until("heartbeat", Duration::from_secs(2)).await;
    assert_eq!(hb.expect("the second heartbeat").data["status"], "DOWN");

    // Another workspace's results are not relayed: nobody streams it.
    let other = a.sign_up("relay-other@example.com").await;
    assert!(!a
        .state
        .live()
        .relay()
        .streamed_elsewhere(&other.workspace_id));
    let (_, other_token) = push_monitor(&other, json!({"interval": 3600})).await;
    push(&a, &other_token, "up").await;
    let leaked: Vec<Ev> = s
        .drain(Duration::from_millis(1000))
        .await
        .into_iter()
        .filter(|e| e.event == "heartbeat")
        .collect();
    assert!(
        leaked.is_empty(),
        "another workspace's heartbeat: {leaked:?}"
    );
    drop(s);
    b.stop().await;
    a.stop().await;
}

#[tokio::test]
async fn the_bench_clients_hold_their_streams_open() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("bench-live@example.com").await;
    let token = u.token(&["monitors:read"]).await;
    let addr: std::net::SocketAddr = srv.base.trim_start_matches("http://").parse().unwrap();
    let streams = tokio::task::spawn_blocking(move || {
        bench_streams::Streams::open(addr, &token, 40).unwrap()
    })
    .await
    .unwrap();
    assert_eq!(streams.open_now(), 40);
    assert_eq!(streams.ended(), 0);
    assert_eq!(srv.state.live().open_streams(), 40);
    tokio::task::spawn_blocking(move || streams.stop())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while srv.state.live().open_streams() > 0 {
        assert!(
            Instant::now() < deadline,
            "streams still counted after closing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    srv.stop().await;
}
