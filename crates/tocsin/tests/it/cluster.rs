//! Several nodes on one PostgreSQL database: the scheduler lease (one holder; expiry hands it
//! over), the change feed crossing nodes (in-process servers on one database), and two real
//! `tocsin serve` processes with the scheduler enabled on both: checks run once per slot,
//! edits, push-token and API-key changes made on one node hold on the other within a second,
//! and checks go on from the other node after `kill -9` of the one holding the scheduler role.
//! PostgreSQL only: on SQLite (one node) every test returns at once.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashMap;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::Uri;
use common::binary::{free_port, tocsin, wait_ready};
use common::{json_of, pg_admin_url, Options, TestServer, User};
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};
use sqlx::Connection;
use tocsin::cluster::feed::{ChangeKind, MonitorChange, Notice};
use tocsin::cluster::lease::{self, Lease, Role, Timing};
use tocsin_core::Grid;

// ---------------------------------------------------------------------------------------------
// The lease

fn quick() -> Timing {
    Timing {
        ttl: Duration::from_millis(1_500),
        renew_every: Duration::from_millis(250),
        margin: Duration::from_millis(300),
    }
}

#[tokio::test]
async fn one_contender_holds_the_lease_until_it_expires() {
    if pg_admin_url().is_none() {
        return;
    }
    let srv = TestServer::start().await;
    let db = srv.state.db().clone();
    let a = Lease::new(db.clone(), "test", "node-a", quick());
    let b = Lease::new(db.clone(), "test", "node-b", quick());
    let term = a.try_acquire().await.unwrap();
    assert_eq!(term, Some(1));
    assert_eq!(b.try_acquire().await.unwrap(), None, "held by a");
    assert_eq!(a.try_acquire().await.unwrap(), Some(1), "a renews");
    // Both at once: exactly one wins.
    let (ra, rb) = tokio::join!(a.try_acquire(), b.try_acquire());
    assert_eq!((ra.unwrap(), rb.unwrap()), (Some(1), None));
    // a stops renewing: b takes over once the lease expired, with a new term.
    tokio::time::sleep(Duration::from_millis(1_700)).await;
    assert_eq!(b.try_acquire().await.unwrap(), Some(2));
    assert_eq!(a.try_acquire().await.unwrap(), None);
    // A release hands it over at once.
    b.release().await.unwrap();
    assert_eq!(a.try_acquire().await.unwrap(), Some(3));
    srv.stop().await;
}

#[tokio::test]
async fn lease_tasks_never_overlap_and_take_over_when_the_holder_stops() {
    if pg_admin_url().is_none() {
        return;
    }
    let srv = TestServer::start().await;
    let db = srv.state.db().clone();
    let start = |holder: &str| {
        let role = Role::default();
        role.contend();
        let cancel = tokio_util::sync::CancellationToken::new();
        let lease = Lease::new(db.clone(), "scheduler-test", holder, quick());
        let task = tokio::spawn(lease::run(lease, role.clone(), cancel.clone()));
        (role, cancel, task)
    };
    let (ra, ca, ta) = start("node-a");
    let (rb, cb, tb) = start("node-b");
    // Exactly one holds it at every look, and someone does soon.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen_held = false;
    while Instant::now() < deadline {
        let (a, b) = (ra.is_held(), rb.is_held());
        assert!(!(a && b), "both held the role");
        seen_held |= a || b;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen_held);
    // Stop the holder without releasing (as a crash would): the task is aborted.
    let (holder, other, other_cancel, other_task) = if ra.is_held() {
        ta.abort();
        (ra, rb, cb, tb)
    } else {
        tb.abort();
        (rb, ra, ca, ta)
    };
    let stopped = Instant::now();
    while !other.is_held() {
        assert!(
            !holder.is_held() || stopped.elapsed() < Duration::from_secs(2),
            "an unrenewed role must end"
        );
        assert!(stopped.elapsed() < Duration::from_secs(10), "no takeover");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !holder.is_held(),
        "the old holder stopped before the takeover"
    );
    other_cancel.cancel();
    other_task.await.unwrap();
    assert!(!other.is_held(), "a stopped task gives the role up");
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The feed between in-process nodes

#[tokio::test]
async fn a_notice_published_on_one_node_reaches_the_other() {
    if pg_admin_url().is_none() {
        return;
    }
    let a = TestServer::start().await;
    let b = a.start_beside(Options::default()).await.unwrap();
    let mut on_b = b.state.feed().subscribe_all();
    let mut changes_on_b = b.state.feed().subscribe();
    let mut on_a = a.state.feed().subscribe_all();
    // Wait until b listens (its listener says so with a Resync), then publish on a.
    wait_for(&mut on_b, |n| *n == Notice::Resync).await;
    a.state.feed().publish("m1", ChangeKind::Updated);
    a.state.feed().announce(Notice::ApiKeyChanged {
        key_id: "k1".into(),
    });
    let got = wait_for(&mut on_b, |n| matches!(n, Notice::Monitor(_))).await;
    assert!(got.remote);
    assert_eq!(
        got.notice,
        Notice::Monitor(MonitorChange {
            monitor_id: "m1".into(),
            kind: ChangeKind::Updated
        })
    );
    let got = wait_for(&mut on_b, |n| matches!(n, Notice::ApiKeyChanged { .. })).await;
    assert_eq!(
        got.notice,
        Notice::ApiKeyChanged {
            key_id: "k1".into()
        }
    );
    assert_eq!(changes_on_b.recv().await.unwrap().monitor_id, "m1");
    // a delivered its own notices once, locally, and ignores the echo.
    let mut own = Vec::new();
    let quiet = Instant::now() + Duration::from_millis(500);
    while let Ok(Ok(d)) = tokio::time::timeout_at(quiet.into(), on_a.recv()).await {
        if d.notice != Notice::Resync {
            own.push(d);
        }
    }
    assert_eq!(own.len(), 2, "{own:?}");
    assert!(own.iter().all(|d| !d.remote));

    // Through the API: a key revoked on a is refused on b at once.
    let u = a.sign_up("feed@example.com").await;
    let token = u.token(&["monitors:read"]).await;
    let on_b_client = common::Bearer::new(&b.base, &token);
    assert_eq!(
        on_b_client
            .call(Method::GET, "/monitors", None)
            .await
            .status(),
        200
    );
    let keys = common::monitors::array(&u, "/api-keys").await;
    let id = keys[0]["id"].as_str().unwrap().to_string();
    let res = u
        .call(Method::POST, &format!("/api-keys/{id}/revoke"), None)
        .await;
    assert_eq!(res.status(), 200);
    let revoked = Instant::now();
    loop {
        let status = on_b_client
            .call(Method::GET, "/monitors", None)
            .await
            .status();
        if status == 401 {
            break;
        }
        assert!(
            revoked.elapsed() < Duration::from_secs(1),
            "still {status} on the other node"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.stop().await;
    a.stop().await;
}

#[tokio::test]
async fn a_removed_members_key_is_refused_on_the_other_node_even_after_they_rejoin() {
    if pg_admin_url().is_none() {
        return;
    }
    let a = TestServer::start().await;
    let b = a.start_beside(Options::default()).await.unwrap();
    let mut on_b = b.state.feed().subscribe_all();
    wait_for(&mut on_b, |n| *n == Notice::Resync).await;
    let ada = a.sign_up("ada@example.com").await;
    let bob = a.sign_up("bob@example.com").await;
    a.verify_email("bob@example.com").await;
    common::join(&ada, &bob, "member").await;
    // Bob's key in Ada's workspace, held in node b's memory.
    let token = bob.token(&["monitors:read"]).await;
    let on_b_client = common::Bearer::new(&b.base, &token);
    assert_eq!(
        on_b_client
            .call(Method::GET, "/monitors", None)
            .await
            .status(),
        200
    );
    // Bob's session (the acceptance moved it into Ada's workspace), used on node b.
    let session_on_b = User {
        client: bob.client.clone(),
        base: b.base.clone(),
        user_id: bob.user_id.clone(),
        workspace_id: bob.workspace_id.clone(),
        email: bob.email.clone(),
    };
    let acting_in = |v: Value| v["id"].as_str().unwrap_or_default().to_string();
    let before = json_of(
        session_on_b.call(Method::GET, "/workspace", None).await,
        200,
    )
    .await;
    assert_eq!(acting_in(before), ada.workspace_id);
    let res = ada
        .call(
            Method::DELETE,
            &format!("/workspace/members/{}", bob.user_id),
            None,
        )
        .await;
    assert_eq!(res.status(), 204);
    // His session stops acting in Ada's workspace on the other node at once (its very next
    // request): it is read from the database with the membership, never from a cache.
    let after = json_of(
        session_on_b.call(Method::GET, "/workspace", None).await,
        200,
    )
    .await;
    assert_eq!(acting_in(after), bob.workspace_id);
    // Well within the key cache's 5 s: only the feed's notice can have dropped it on b.
    let removed = Instant::now();
    loop {
        let status = on_b_client
            .call(Method::GET, "/monitors", None)
            .await
            .status();
        if status == 401 {
            break;
        }
        assert!(
            removed.elapsed() < Duration::from_secs(1),
            "still {status} on the other node"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Invited and joining again (on node a), the key stays revoked on node b.
    common::join(&ada, &bob, "member").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        on_b_client
            .call(Method::GET, "/monitors", None)
            .await
            .status(),
        401
    );
    b.stop().await;
    a.stop().await;
}

/// Each node's connections to the database that `LISTEN` (or last ran `UNLISTEN`), as
/// (application name, last statement), read from `pg_stat_activity` on `url`'s database.
async fn listening_connections(url: &str) -> Vec<(String, String)> {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT application_name, query FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND (query LIKE 'LISTEN%' OR query LIKE 'UNLISTEN%')",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    rows
}

#[tokio::test]
async fn each_node_listens_on_one_connection_for_the_feed_probes_and_streams() {
    if pg_admin_url().is_none() {
        return;
    }
    let a = TestServer::start().await;
    let b = a.start_beside(Options::default()).await.unwrap();
    let url = a.state.config().database_url.clone().unwrap();
    let mut on_b = b.state.feed().subscribe_all();
    wait_for(&mut on_b, |n| *n == Notice::Resync).await;
    // A live stream open on each node: the live relay listens too, on the same connection.
    let u = a.sign_up("listen@example.com").await;
    let token = u.token(&["monitors:read"]).await;
    let stream_a = common::Bearer::new(&a.base, &token)
        .call(Method::GET, "/stream", None)
        .await;
    let stream_b = common::Bearer::new(&b.base, &token)
        .call(Method::GET, "/stream", None)
        .await;
    assert_eq!(
        (stream_a.status(), stream_b.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows = loop {
        let rows = listening_connections(&url).await;
        let live = rows
            .iter()
            .filter(|(_, q)| q.starts_with("LISTEN") && q.contains("tocsin_live_beats"))
            .count();
        if live == 2 {
            break rows;
        }
        assert!(
            Instant::now() < deadline,
            "streams not listened to: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(rows.len(), 2, "one listening connection per node: {rows:?}");
    assert!(
        rows.iter()
            .all(|(app, _)| app == tocsin::cluster::listen::APPLICATION_NAME),
        "{rows:?}"
    );
    // The other channels are still heard on that connection: a notice crosses over.
    a.state.feed().announce(Notice::ApiKeyChanged {
        key_id: "k-listen".into(),
    });
    wait_for(
        &mut on_b,
        |n| matches!(n, Notice::ApiKeyChanged { key_id } if key_id == "k-listen"),
    )
    .await;
    // With its streams closed, a node stops listening for relayed results (same connection).
    drop(stream_a);
    drop(stream_b);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = listening_connections(&url).await;
        let unlistened = rows
            .iter()
            .filter(|(_, q)| q.starts_with("UNLISTEN") && q.contains("tocsin_live_beats"))
            .count();
        if unlistened == 2 {
            assert_eq!(rows.len(), 2, "{rows:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "streams still listened to: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.stop().await;
    a.stop().await;
}

#[tokio::test]
async fn a_node_whose_listening_connection_drops_resyncs_and_hears_again() {
    if pg_admin_url().is_none() {
        return;
    }
    let a = TestServer::start().await;
    let b = a.start_beside(Options::default()).await.unwrap();
    let url = a.state.config().database_url.clone().unwrap();
    let mut on_b = b.state.feed().subscribe_all();
    wait_for(&mut on_b, |n| *n == Notice::Resync).await;
    // Both nodes' listening connections are cut, as a database restart or a proxy would.
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    let cut: Vec<(bool,)> = sqlx::query_as(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = $1",
    )
    .bind(tocsin::cluster::listen::APPLICATION_NAME)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    assert_eq!(cut.len(), 2, "{cut:?}");
    // Told it may have missed notices, then hearing the other node's again.
    wait_for(&mut on_b, |n| *n == Notice::Resync).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let key_id = format!("k-{n}");
        a.state.feed().announce(Notice::ApiKeyChanged {
            key_id: key_id.clone(),
        });
        let heard = tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                match on_b.recv().await {
                    Ok(d)
                        if d.notice
                            == (Notice::ApiKeyChanged {
                                key_id: key_id.clone(),
                            }) =>
                    {
                        return d
                    }
                    Ok(_) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        })
        .await;
        if let Ok(d) = heard {
            assert!(d.remote);
            break;
        }
        // The first notices may race a's own reconnection of its sending side.
        assert!(Instant::now() < deadline, "b hears a no more");
    }
    b.stop().await;
    a.stop().await;
}

async fn wait_for(
    rx: &mut tokio::sync::broadcast::Receiver<tocsin::cluster::feed::Delivery>,
    want: impl Fn(&Notice) -> bool,
) -> tocsin::cluster::feed::Delivery {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline.into(), rx.recv()).await {
            Ok(Ok(d)) if want(&d.notice) => return d,
            Ok(_) => {}
            Err(_) => panic!("no such notice within 10 s"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Two real nodes

/// A fresh PostgreSQL database, dropped when this goes (even when the test fails).
struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    async fn create(admin: &str) -> PgDatabase {
        let name = format!("tocsin_c_{}", uuid::Uuid::now_v7().simple());
        let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.ok();
        let (prefix, _) = admin.rsplit_once('/').unwrap();
        PgDatabase {
            admin: admin.to_string(),
            url: format!("{prefix}/{name}"),
            name,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (admin, name) = (self.admin.clone(), self.name.clone());
        // Drop cannot await: a thread with a runtime of its own does the job.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut conn)
                        .await;
                }
            });
        })
        .join();
    }
}

/// A `tocsin serve` process, killed when this goes.
struct Node {
    child: Child,
    base: String,
}

impl Node {
    async fn start(dir: &std::path::Path, url: &str) -> Node {
        let port = free_port();
        let child = tocsin(dir)
            .args([
                "serve",
                "--database-url",
                url,
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--public-url",
                PUBLIC_URL,
                "--config",
                "tocsin.toml",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let node = Node {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        wait_ready(port).await;
        node
    }

    async fn leads(&self) -> bool {
        let Ok(res) = reqwest::get(format!("{}/metrics", self.base)).await else {
            return false;
        };
        let text = res.text().await.unwrap_or_default();
        text.lines().any(|l| l.trim() == "scheduler_leader 1")
    }

    fn kill9(&mut self) {
        common::binary::signal(&self.child, "-9");
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Both nodes answer as one service behind one public address.
const PUBLIC_URL: &str = "http://tocsin.test";

/// A loopback HTTP target that notes every request: (wall-clock ms, path).
#[derive(Clone, Default)]
struct Hits(Arc<Mutex<Vec<(i64, String)>>>);

impl Hits {
    async fn serve(&self) -> (String, tokio::task::JoinHandle<()>) {
        let app = axum::Router::new()
            .fallback(|State(h): State<Hits>, uri: Uri| async move {
                h.0.lock().unwrap().push((now_ms(), uri.path().to_string()));
                "ok"
            })
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (base, task)
    }

    fn on(&self, path: &str, since_ms: i64) -> Vec<i64> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, p)| p == path && *at >= since_ms)
            .map(|(at, _)| *at)
            .collect()
    }
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

const INTERVAL_S: u64 = 2;

/// Hits per grid slot of monitor `id`.
fn per_slot(id: &str, hits: &[i64]) -> HashMap<i64, usize> {
    let grid = Grid::for_monitor(id, INTERVAL_S * 1000);
    let mut slots = HashMap::new();
    for at in hits {
        *slots
            .entry(grid.last_run_at_or_before(*at).unwrap())
            .or_default() += 1;
    }
    slots
}

/// Polls `f` every 50 ms until it is true; false if `within` passed first.
async fn within<F, Fut>(within: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn call(
    c: &Client,
    token: &str,
    method: Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = c.request(method, url).bearer_auth(token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// A person signed up on `base` (the cookie works on every node: one database, one public URL).
async fn sign_up(base: &str) -> Client {
    let person = Client::builder()
        .cookie_store(true)
        .default_headers({
            let mut h = reqwest::header::HeaderMap::new();
            h.insert(reqwest::header::ORIGIN, PUBLIC_URL.parse().unwrap());
            h
        })
        .build()
        .unwrap();
    let res = person
        .post(format!("{base}/auth/sign-up/email"))
        .json(&json!({"email": "ops@example.com", "password": "correct horse battery", "name": "ops"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    person
}

/// An API key with the monitor permissions: (id, token).
async fn mint_key(person: &Client, base: &str, name: &str) -> (String, String) {
    let k: Value = person
        .post(format!("{base}/api-keys"))
        .json(&json!({"name": name, "permissions": ["monitors:read", "monitors:write", "monitors:delete"], "surfaces": ["rest"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        k["id"].as_str().unwrap().to_string(),
        k["token"].as_str().unwrap().to_string(),
    )
}

/// Writes the nodes' configuration file (2 s monitors allowed) into `dir` and migrates `db`.
fn migrated(dir: &std::path::Path, db: &PgDatabase) {
    std::fs::write(dir.join("tocsin.toml"), "min_interval_seconds = 2\n").unwrap();
    let out = tocsin(dir)
        .args(["migrate", "--database-url", &db.url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two migrated nodes on a fresh database, and the index of the one holding the scheduler role.
async fn two_nodes(dir: &std::path::Path, db: &PgDatabase) -> (Vec<Node>, usize) {
    migrated(dir, db);
    let nodes = vec![
        Node::start(dir, &db.url).await,
        Node::start(dir, &db.url).await,
    ];
    let mut leader = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while leader.is_none() && Instant::now() < deadline {
        match (nodes[0].leads().await, nodes[1].leads().await) {
            (true, false) => leader = Some(0),
            (false, true) => leader = Some(1),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    (
        nodes,
        leader.expect("one node should hold the scheduler role"),
    )
}

async fn region_view(c: &Client, token: &str, base: &str, name: &str) -> Value {
    let (status, all) = call(c, token, Method::GET, format!("{base}/regions"), None).await;
    assert_eq!(status, 200, "{all}");
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_probe_connected_to_the_node_without_the_scheduler_checks_for_the_cluster() {
    let Some(admin) = pg_admin_url() else {
        return;
    };
    let db = PgDatabase::create(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut nodes, leader) = two_nodes(dir.path(), &db).await;
    let other = 1 - leader;
    let (lead, away) = (nodes[leader].base.clone(), nodes[other].base.clone());

    let out = tocsin(dir.path())
        .args([
            "probe-key",
            "create",
            "--region",
            "eu-west",
            "--name",
            "fra-1",
            "--database-url",
            &db.url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    // The probe reaches the node that does NOT run the scheduler.
    let mut probe = tocsin(dir.path())
        .args(["probe", "--server", &away, "--region", "eu-west"])
        .env("TOCSIN_KEY", &key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    let person = sign_up(&lead).await;
    let (_, token) = mint_key(&person, &lead, "ops").await;
    let c = Client::new();
    // Every node sees the region live, with its probe, whichever node the probe reached.
    for base in [&lead, &away] {
        assert!(
            within(Duration::from_secs(10), || async {
                let r = region_view(&c, &token, base, "eu-west").await;
                r["live"] == true && r["probeNames"] == json!(["fra-1"])
            })
            .await,
            "eu-west not live on {base}: {}",
            region_view(&c, &token, base, "eu-west").await
        );
    }

    // A monitor checked from eu-west only: the scheduling node relays its checks.
    let hits = Hits::default();
    let (target, _server) = hits.serve().await;
    let started = now_ms();
    let (status, m) = call(
        &c,
        &token,
        Method::POST,
        format!("{lead}/monitors"),
        Some(
            json!({"name": "web", "type": "HTTP", "url": format!("{target}/eu"),
                    "interval": INTERVAL_S, "timeout": 1, "regions": ["eu-west"]}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{m}");
    let id = m["id"].as_str().unwrap().to_string();
    assert!(
        within(Duration::from_secs(3 * INTERVAL_S + 2), || async {
            hits.on("/eu", started).len() >= 2
        })
        .await,
        "the probe on the other node never checked"
    );
    let (status, page) = call(
        &c,
        &token,
        Method::GET,
        format!("{lead}/monitors/{id}/heartbeats"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let beats = page.as_array().cloned().unwrap_or_default();
    assert!(!beats.is_empty(), "{page}");
    assert!(
        beats
            .iter()
            .all(|b| b["region"] == "eu-west" && b["status"] == "UP"),
        "{page}"
    );
    let slots = per_slot(&id, &hits.on("/eu", started));
    assert!(
        slots.values().all(|n| *n == 1),
        "a slot ran twice: {slots:?}"
    );

    // The node holding the probe dies: the region goes dark everywhere (no false DOWN), and
    // the scheduling node stops relaying to it.
    nodes[other].kill9();
    let _ = probe.kill();
    let _ = probe.wait();
    assert!(
        within(Duration::from_secs(25), || async {
            region_view(&c, &token, &lead, "eu-west").await["live"] == false
        })
        .await,
        "eu-west still live after its node died"
    );
    let (_, after) = call(
        &c,
        &token,
        Method::GET,
        format!("{lead}/monitors/{id}"),
        None,
    )
    .await;
    assert_ne!(after["status"], "DOWN", "{after}");
}

#[tokio::test]
async fn two_nodes_share_one_scheduler_and_follow_each_others_writes() {
    let Some(admin) = pg_admin_url() else {
        return;
    };
    let db = PgDatabase::create(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    migrated(dir.path(), &db);
    let mut nodes = vec![
        Node::start(dir.path(), &db.url).await,
        Node::start(dir.path(), &db.url).await,
    ];
    let (a, b) = (nodes[0].base.clone(), nodes[1].base.clone());

    // A person signs up on a; cookies work on both nodes (one database, one public URL).
    let person = sign_up(&a).await;
    let mint = |name: &'static str| {
        let person = person.clone();
        let a = a.clone();
        async move { mint_key(&person, &a, name).await }
    };
    let (_, token) = mint("ops").await;
    let c = Client::new();

    // Exactly one node leads.
    assert!(
        within(Duration::from_secs(20), || async {
            nodes[0].leads().await != nodes[1].leads().await
        })
        .await,
        "one node should hold the scheduler role"
    );

    // A monitor created on a is checked within its interval + 2 s, once per slot.
    let hits = Hits::default();
    let (target, _server) = hits.serve().await;
    let started = now_ms();
    let (status, m) = call(
        &c,
        &token,
        Method::POST,
        format!("{a}/monitors"),
        Some(
            json!({"name": "web", "type": "HTTP", "url": format!("{target}/one"),
                    "interval": INTERVAL_S, "timeout": 1}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{m}");
    let id = m["id"].as_str().unwrap().to_string();
    assert!(
        within(Duration::from_secs(INTERVAL_S + 2), || async {
            !hits.on("/one", started).is_empty()
        })
        .await,
        "not checked within interval + 2 s"
    );
    tokio::time::sleep(Duration::from_secs(5 * INTERVAL_S)).await;
    let one = hits.on("/one", started);
    let slots = per_slot(&id, &one);
    assert!(
        slots.values().all(|n| *n == 1),
        "a slot ran twice: {slots:?}"
    );
    assert!(slots.len() >= 4, "too few slots ran: {slots:?}");

    // Edited on b: the next slot checks the new path, and the old one no more.
    let (status, _) = call(
        &c,
        &token,
        Method::PATCH,
        format!("{b}/monitors/{id}"),
        Some(json!({"url": format!("{target}/two")})),
    )
    .await;
    assert_eq!(status, 200);
    let edited = now_ms();
    assert!(
        within(Duration::from_secs(INTERVAL_S + 2), || async {
            !hits.on("/two", edited).is_empty()
        })
        .await,
        "the edit made on the other node was not checked on the next slot"
    );
    let first_new = hits.on("/two", edited)[0];
    tokio::time::sleep(Duration::from_secs(2 * INTERVAL_S)).await;
    assert!(
        hits.on("/one", first_new + 1).is_empty(),
        "the old settings were checked after the new ones"
    );
    let slots = per_slot(&id, &hits.on("/two", edited));
    assert!(
        slots.values().all(|n| *n == 1),
        "a slot ran twice: {slots:?}"
    );

    // Push tokens: regenerated on a, refused on b within a second; deleted likewise.
    let (status, p) = call(
        &c,
        &token,
        Method::POST,
        format!("{a}/monitors"),
        Some(json!({"name": "job", "type": "PUSH", "interval": 3600})),
    )
    .await;
    assert_eq!(status, 201, "{p}");
    let push_id = p["id"].as_str().unwrap().to_string();
    let old = p["pushToken"].as_str().unwrap().to_string();
    let push = |base: String, t: String| {
        let c = c.clone();
        async move {
            c.post(format!("{base}/push/{t}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(push(b.clone(), old.clone()).await, 202, "b knows the token");
    let (status, fresh) = call(
        &c,
        &token,
        Method::POST,
        format!("{a}/monitors/{push_id}/regenerate-push-token"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let new = fresh["pushToken"].as_str().unwrap().to_string();
    assert!(
        within(Duration::from_secs(1), || push(b.clone(), old.clone())
            .map_404())
        .await,
        "the old token still worked on the other node after 1 s"
    );
    assert_eq!(push(b.clone(), new.clone()).await, 202);
    let (status, _) = call(
        &c,
        &token,
        Method::DELETE,
        format!("{a}/monitors/{push_id}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(
        within(Duration::from_secs(1), || push(b.clone(), new.clone())
            .map_404())
        .await,
        "a deleted monitor's token still worked on the other node after 1 s"
    );

    // An API key revoked on a is refused on b within a second.
    let (key_id, doomed) = mint("doomed").await;
    let (status, _) = call(&c, &doomed, Method::GET, format!("{b}/monitors"), None).await;
    assert_eq!(status, 200, "b caches the key");
    let res = person
        .post(format!("{a}/api-keys/{key_id}/revoke"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        within(Duration::from_secs(1), || async {
            call(&c, &doomed, Method::GET, format!("{b}/monitors"), None)
                .await
                .0
                == 401
        })
        .await,
        "a revoked key still worked on the other node after 1 s"
    );

    // kill -9 of the leader: checks go on from the other node within 30 s.
    let leader = if nodes[0].leads().await { 0 } else { 1 };
    nodes[leader].kill9();
    let killed = now_ms();
    let survivor = &nodes[1 - leader];
    assert!(
        within(Duration::from_secs(30), || async {
            !hits.on("/two", killed + 500).is_empty()
        })
        .await,
        "no check within 30 s of the scheduler node's death"
    );
    assert!(survivor.leads().await);
    // Once per slot there too.
    tokio::time::sleep(Duration::from_secs(2 * INTERVAL_S)).await;
    let slots = per_slot(&id, &hits.on("/two", killed + 500));
    assert!(
        slots.values().all(|n| *n == 1),
        "a slot ran twice: {slots:?}"
    );
    drop(nodes);
    drop(db);
}

/// Turns a push's status into "was it refused".
trait Map404 {
    fn map_404(self) -> impl std::future::Future<Output = bool>;
}

impl<F: std::future::Future<Output = u16>> Map404 for F {
    async fn map_404(self) -> bool {
        self.await == 404
    }
}

// ---------------------------------------------------------------------------------------------
// Partitioned scheduling: several nodes share the monitors

/// A figure of a node's `/metrics` (0 when absent or unreachable).
async fn gauge(base: &str, name: &str) -> f64 {
    let Ok(res) = reqwest::get(format!("{base}/metrics")).await else {
        return 0.0;
    };
    let text = res.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

/// Waits until the live nodes hold every partition between them, and their monitors add up
/// to `monitors`, five looks in a row a second apart (the shares have settled: longer than
/// two partition rounds, so a recount a round away is not mistaken for the end); the shares.
async fn settled(nodes: &[&Node], monitors: f64, within_s: u64) -> Option<Vec<f64>> {
    let deadline = Instant::now() + Duration::from_secs(within_s);
    let mut same = 0;
    let mut last = Vec::new();
    while Instant::now() < deadline {
        let mut parts = 0.0;
        let mut shares = Vec::new();
        for n in nodes {
            parts += gauge(&n.base, "scheduler_partitions").await;
            shares.push(gauge(&n.base, "scheduler_monitors").await);
        }
        let whole = parts == 256.0 && shares.iter().sum::<f64>() == monitors;
        same = if whole && shares == last { same + 1 } else { 0 };
        if same >= 4 {
            return Some(shares);
        }
        last = shares;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    None
}

fn within_a_fifth(shares: &[f64]) -> bool {
    let lo = shares.iter().copied().fold(f64::MAX, f64::min);
    let hi = shares.iter().copied().fold(0.0, f64::max);
    lo > 0.0 && hi <= lo * 1.2
}

const SHARED_INTERVAL_MS: i64 = 10_000;

/// Hits per slot of each monitor (path `/m/<i>` is monitor `ids[i]`) whose slot lies in
/// `[from, to)`.
fn slots_between(hits: &Hits, ids: &[String], from: i64, to: i64) -> Vec<HashMap<i64, usize>> {
    let all = hits.0.lock().unwrap().clone();
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let grid = Grid::for_monitor(id, SHARED_INTERVAL_MS as u64);
            let path = format!("/m/{i}");
            let mut slots: HashMap<i64, usize> = HashMap::new();
            // Every slot of the window, checked or not.
            let mut s = grid.next_run_after(from - 1);
            while s < to {
                slots.insert(s, 0);
                s = grid.next_run_after(s);
            }
            for (at, p) in &all {
                if *p == path {
                    if let Some(slot) = grid.last_run_at_or_before(*at) {
                        if let Some(n) = slots.get_mut(&slot) {
                            *n += 1;
                        }
                    }
                }
            }
            slots
        })
        .collect()
}

/// No slot of any monitor checked twice over the whole run.
fn never_twice(hits: &Hits, ids: &[String]) {
    let all = hits.0.lock().unwrap().clone();
    for (i, id) in ids.iter().enumerate() {
        let grid = Grid::for_monitor(id, SHARED_INTERVAL_MS as u64);
        let path = format!("/m/{i}");
        let mut seen: HashMap<i64, usize> = HashMap::new();
        for (at, p) in &all {
            if *p == path {
                *seen
                    .entry(grid.last_run_at_or_before(*at).unwrap())
                    .or_default() += 1;
            }
        }
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "monitor {i} ({id}): slots checked twice {twice:?}"
        );
    }
}

/// `n` HTTP monitors every 10 s, monitor `i` checking `{target}/m/{i}` and created through
/// `bases[i % bases.len()]`; their ids, in that order.
async fn http_monitors(
    c: &Client,
    token: &str,
    bases: &[String],
    target: &str,
    n: usize,
) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let (status, m) = call(
            c,
            token,
            Method::POST,
            format!("{}/monitors", bases[i % bases.len()]),
            Some(json!({"name": format!("m{i}"), "type": "HTTP",
                        "url": format!("{target}/m/{i}"), "interval": 10, "timeout": 2})),
        )
        .await;
        assert_eq!(status, 201, "{m}");
        ids.push(m["id"].as_str().unwrap().to_string());
    }
    ids
}

async fn open_alerts(c: &Client, token: &str, base: &str) -> Vec<Value> {
    let (status, page) = call(
        c,
        token,
        Method::GET,
        format!("{base}/alerts?limit=200"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    page["alerts"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn nodes_share_the_monitors_and_take_over_a_dead_nodes_share() {
    let Some(admin) = pg_admin_url() else {
        return;
    };
    let db = PgDatabase::create(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    migrated(dir.path(), &db);
    let mut nodes = vec![
        Node::start(dir.path(), &db.url).await,
        Node::start(dir.path(), &db.url).await,
        Node::start(dir.path(), &db.url).await,
    ];
    let a = nodes[0].base.clone();
    let person = sign_up(&a).await;
    let (_, token) = mint_key(&person, &a, "ops").await;
    let c = Client::new();

    // 300 monitors every 10 s, each on its own path of a target that notes every request.
    let hits = Hits::default();
    let (target, _server) = hits.serve().await;
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let ids = http_monitors(&c, &token, &bases, &target, 300).await;

    // The three share them: every partition held, shares within 20% of each other. The
    // shares follow the monitors just created once every node has counted them again (at the
    // round after it hears of new monitors, every 30 s anyway, and whenever a node joins or
    // leaves): room for that, on a loaded machine.
    let three: Vec<&Node> = nodes.iter().collect();
    let shares = settled(&three, 300.0, 90)
        .await
        .expect("the shares never settled");
    assert!(within_a_fifth(&shares), "uneven shares {shares:?}");
    // Then every slot of every monitor is checked exactly once.
    let from = now_ms() + 1_000;
    tokio::time::sleep(Duration::from_millis(2 * SHARED_INTERVAL_MS as u64 + 4_000)).await;
    let to = now_ms() - 3_000;
    for (i, slots) in slots_between(&hits, &ids, from, to).iter().enumerate() {
        assert!(
            !slots.is_empty() && slots.values().all(|n| *n == 1),
            "monitor {i}: {slots:?}"
        );
    }

    // kill -9 of a node: within 15 s its monitors are checked by the others, every slot once.
    nodes[1].kill9();
    let killed = now_ms();
    let living: Vec<&Node> = vec![&nodes[0], &nodes[2]];
    assert!(
        settled(&living, 300.0, 40).await.is_some(),
        "the dead node's share was not taken over"
    );
    let from = killed + 15_000;
    let now = now_ms();
    if now < from + 2 * SHARED_INTERVAL_MS + 3_000 {
        tokio::time::sleep(Duration::from_millis(
            u64::try_from(from + 2 * SHARED_INTERVAL_MS + 3_000 - now).unwrap(),
        ))
        .await;
    }
    for (i, slots) in slots_between(&hits, &ids, from, from + 2 * SHARED_INTERVAL_MS)
        .iter()
        .enumerate()
    {
        assert!(
            slots.values().all(|n| *n == 1),
            "monitor {i} after the kill: {slots:?}"
        );
    }

    // A fourth node joins and takes a share within 15 s.
    nodes.push(Node::start(dir.path(), &db.url).await);
    let joined = Instant::now();
    assert!(
        within(Duration::from_secs(15), || async {
            gauge(&nodes[3].base, "scheduler_monitors").await > 0.0
        })
        .await,
        "the new node took no share within 15 s"
    );
    assert!(joined.elapsed() <= Duration::from_secs(15));
    let three: Vec<&Node> = vec![&nodes[0], &nodes[2], &nodes[3]];
    let shares = settled(&three, 300.0, 90)
        .await
        .expect("the shares never settled");
    assert!(
        within_a_fifth(&shares),
        "uneven shares after the join {shares:?}"
    );

    // Through all of it: no slot checked twice, and no alert.
    never_twice(&hits, &ids);
    assert!(open_alerts(&c, &token, &a).await.is_empty());
    drop(nodes);
    drop(db);
}

impl Node {
    /// Stops the node as an orchestrator would (SIGTERM) and waits for it to exit.
    fn stop(mut self) {
        common::binary::signal(&self.child, "-TERM");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("a node did not stop within 30 s of SIGTERM");
    }
}

#[tokio::test]
async fn a_rolling_restart_loses_no_push_deadline_and_opens_no_false_alert() {
    let Some(admin) = pg_admin_url() else {
        return;
    };
    let db = PgDatabase::create(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    migrated(dir.path(), &db);
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(Node::start(dir.path(), &db.url).await);
    }
    let a = nodes[0].base.clone();
    let person = sign_up(&a).await;
    let (_, token) = mint_key(&person, &a, "ops").await;
    let c = Client::new();
    let hits = Hits::default();
    let (target, _server) = hits.serve().await;
    let ids = http_monitors(&c, &token, std::slice::from_ref(&a), &target, 30).await;
    // Push monitors every 10 s with 5 s of grace: half are pushed every 2 s throughout, half
    // stop being pushed while the nodes restart, and each of those must still be judged.
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for i in 0..20 {
        let (status, p) = call(
            &c,
            &token,
            Method::POST,
            format!("{a}/monitors"),
            Some(json!({"name": format!("job{i}"), "type": "PUSH", "interval": 10, "gracePeriod": 5})),
        )
        .await;
        assert_eq!(status, 201, "{p}");
        let entry = (
            p["id"].as_str().unwrap().to_string(),
            p["pushToken"].as_str().unwrap().to_string(),
        );
        if i % 2 == 0 {
            kept.push(entry);
        } else {
            dropped.push(entry);
        }
    }
    let pushing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let stop_dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bases: Arc<Mutex<Vec<String>>> =
        Arc::new(Mutex::new(nodes.iter().map(|n| n.base.clone()).collect()));
    let pusher = {
        let (c, kept, dropped) = (c.clone(), kept.clone(), dropped.clone());
        let (pushing, stop_dropped, bases) = (pushing.clone(), stop_dropped.clone(), bases.clone());
        tokio::spawn(async move {
            let mut round = 0usize;
            while pushing.load(std::sync::atomic::Ordering::SeqCst) {
                let list: Vec<String> = bases.lock().unwrap().clone();
                let which = if stop_dropped.load(std::sync::atomic::Ordering::SeqCst) {
                    kept.clone()
                } else {
                    kept.iter().chain(dropped.iter()).cloned().collect()
                };
                for (_, t) in &which {
                    // Any live node takes a push; one restarting refuses, so try the others.
                    for k in 0..list.len() {
                        let base = &list[(round + k) % list.len()];
                        if let Ok(r) = c.post(format!("{base}/push/{t}")).send().await {
                            if r.status().as_u16() == 202 {
                                break;
                            }
                        }
                    }
                }
                round += 1;
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    };
    let all: Vec<&Node> = nodes.iter().collect();
    assert!(
        settled(&all, 30.0, 90).await.is_some(),
        "the shares never settled"
    );
    tokio::time::sleep(Duration::from_secs(12)).await;

    // The dropped ones stop hearing from their jobs as the restarts begin.
    stop_dropped.store(true, std::sync::atomic::Ordering::SeqCst);
    for i in 0..3 {
        let old = nodes.remove(0);
        old.stop();
        let fresh = Node::start(dir.path(), &db.url).await;
        bases.lock().unwrap()[i] = fresh.base.clone();
        nodes.push(fresh);
        let all: Vec<&Node> = nodes.iter().collect();
        assert!(
            settled(&all, 30.0, 90).await.is_some(),
            "restart {i}: the shares never settled"
        );
    }
    // Every dropped job was judged late: each is DOWN, within its deadline and a takeover.
    let judged = within(Duration::from_secs(20), || async {
        let mut down = 0;
        for (id, _) in &dropped {
            let (_, m) = call(
                &c,
                &token,
                Method::GET,
                format!("{}/monitors/{id}", nodes[0].base),
                None,
            )
            .await;
            down += usize::from(m["status"] == "DOWN");
        }
        down == dropped.len()
    })
    .await;
    assert!(judged, "a missed push deadline was lost in the restarts");
    pushing.store(false, std::sync::atomic::Ordering::SeqCst);
    let _ = pusher.await;
    // The alerts are the dropped jobs' own, one each, and none opened before they stopped.
    let alerts = open_alerts(&c, &token, &nodes[0].base).await;
    let dropped_ids: Vec<&str> = dropped.iter().map(|(id, _)| id.as_str()).collect();
    for al in &alerts {
        assert!(
            dropped_ids.contains(&al["monitorId"].as_str().unwrap_or_default()),
            "a false alert: {al}"
        );
    }
    assert_eq!(alerts.len(), dropped.len(), "{alerts:?}");
    never_twice(&hits, &ids);
    drop(nodes);
    drop(db);
}
