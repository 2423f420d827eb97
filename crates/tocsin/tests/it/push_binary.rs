//! Push ingestion through the real `tocsin` binary: a `202` means the heartbeat is committed.
//! The server is killed with SIGKILL in the middle of a stream of pushes, restarted on the
//! same data, and every push that got a `202` must be there.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::binary::{self, free_port, wait_ready};
use common::monitors::push_monitor;
use common::Bearer;
use serde_json::{json, Value};

#[tokio::test]
async fn every_acknowledged_push_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let token = binary::seed(
        dir.path(),
        "cron@example.com",
        "monitors:read,monitors:write",
    );

    let port = free_port();
    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut monitors = Vec::new();
    for i in 0..8 {
        let m: Value = client
            .post(format!("{base}/monitors"))
            .bearer_auth(&token)
            .json(&json!({"name": format!("job {i}"), "type": "PUSH", "interval": 3600}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        monitors.push((
            m["id"].as_str().unwrap().to_string(),
            m["pushToken"].as_str().unwrap().to_string(),
        ));
    }

    // Each monitor's job pushes as fast as it can, each push with a unique key that it also
    // sends as the message; what got a 202 is noted.
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut jobs = Vec::new();
    for (m, (_, push_token)) in monitors.iter().enumerate() {
        let (acked, sent, client, base, push_token) = (
            acked.clone(),
            sent.clone(),
            client.clone(),
            base.clone(),
            push_token.clone(),
        );
        jobs.push(tokio::spawn(async move {
            // Under the 60-a-minute limit per token.
            for i in 0..58 {
                let key = format!("m{m}-push{i}");
                sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let res = client
                    .post(format!("{base}/push/{push_token}?message={key}"))
                    .header("Idempotency-Key", &key)
                    .send()
                    .await;
                match res {
                    Ok(r) if r.status() == 202 => {
                        acked.lock().unwrap().insert(key);
                    }
                    Ok(r) => panic!("unexpected answer {}", r.status()),
                    Err(_) => return,
                }
            }
        }));
    }
    // Kill mid-stream.
    while acked.lock().unwrap().len() < 100 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    for j in jobs {
        j.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let sent = sent.load(std::sync::atomic::Ordering::SeqCst);
    assert!(acked.len() >= 100);
    assert!(
        acked.len() < 8 * 58,
        "the kill landed mid-stream ({sent} sent)"
    );

    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let mut stored = HashSet::new();
    for (id, _) in &monitors {
        let hbs: Vec<Value> = client
            .get(format!("{base}/monitors/{id}/heartbeats?limit=1000"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for hb in hbs {
            stored.insert(hb["message"].as_str().unwrap().to_string());
        }
    }
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // Retrying an acknowledged push after the restart still collapses into the stored one.
    let (id0, token0) = &monitors[0];
    let key = acked.iter().find(|k| k.starts_with("m0-")).cloned();
    if let Some(key) = key {
        let before = stored.len();
        let r = client
            .post(format!("{base}/push/{token0}?message={key}"))
            .header("Idempotency-Key", &key)
            .send()
            .await
            .unwrap();
        // The token's minute budget may be spent; either way nothing new is stored.
        assert!(r.status() == 202 || r.status() == 429, "{}", r.status());
        let hbs: Vec<Value> = client
            .get(format!("{base}/monitors/{id0}/heartbeats?limit=1000"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let count = hbs.iter().filter(|h| h["message"] == key.as_str()).count();
        assert_eq!(count, 1, "{before} stored before");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `tocsin serve` on `dir` with `extra` flags, its standard output and error both written to
/// `log`.
fn serve_logged(
    dir: &std::path::Path,
    port: u16,
    extra: &[&str],
    log: &std::path::Path,
) -> std::process::Child {
    let out = std::fs::File::create(log).unwrap();
    let err = out.try_clone().unwrap();
    binary::tocsin(dir)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn push_tokens_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let api = binary::seed(
        dir.path(),
        "cron@example.com",
        "monitors:read,monitors:write",
    );
    let port = free_port();
    let log = dir.path().join("server.log");
    // Debug: every request's line is written, not only failures.
    let mut child = serve_logged(
        dir.path(),
        port,
        &["--data-dir", "data", "--log-level", "debug"],
        &log,
    );
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let (_, token) = push_monitor(
        &Bearer::new(&base, &api),
        json!({"name": "backup", "interval": 3600}),
    )
    .await;
    let unknown = "tcpush_0123456789abcdefghijklmnopqrstuv";
    let client = reqwest::Client::new();
    for (url, status) in [
        (format!("{base}/push/{token}"), 202),
        (format!("{base}/push/{token}?status=sideways"), 400),
        (format!("{base}/push/{unknown}"), 404),
        (format!("{base}/push/{unknown}?msg=x"), 404),
    ] {
        let res = client.post(&url).send().await.unwrap();
        assert_eq!(res.status(), status, "{url}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("/push/{token}"),
        "the push requests were logged under their route: {text}"
    );
    for secret in [token.as_str(), unknown] {
        assert!(!text.contains(secret), "a push token in the log:\n{text}");
    }
}

/// A loopback TCP proxy in front of PostgreSQL that the test can cut: while cut, open
/// connections are dropped and new ones are closed as soon as they are accepted, as a
/// database host that went away would.
struct Proxy {
    port: u16,
    up: Arc<std::sync::atomic::AtomicBool>,
    links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(to: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let links: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (up2, links2) = (up.clone(), links.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(std::sync::atomic::Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let to = to.clone();
                let link = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                links2.lock().unwrap().push(link);
            }
        });
        Proxy {
            port,
            up,
            links,
            accept,
        }
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

/// Runs `tocsin ARGS` in `dir`; it must succeed; its output, trimmed.
fn run_ok_on(dir: &std::path::Path, args: &[&str], store: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend_from_slice(store);
    binary::run_ok(dir, &all)
}

// Several threads: the CLI runs below block theirs while the proxy task serves them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_during_a_database_outage_answer_503_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    // PostgreSQL (when the run selects it): a database of its own behind a proxy the test
    // cuts. SQLite: another process holds the database's write lock, so nothing can commit.
    let mut pg = None;
    let mut proxy = None;
    let store: Vec<String> = match common::pg_admin_url() {
        Some(admin) => {
            use sqlx::Connection;
            let name = format!("tocsin_t_{}", uuid::Uuid::now_v7().simple());
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut conn)
                .await
                .unwrap();
            conn.close().await.ok();
            let url = url::Url::parse(&admin).unwrap();
            let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
            let p = Proxy::start(target).await;
            let mut via = url.clone();
            via.set_port(Some(p.port)).unwrap();
            via.set_path(&format!("/{name}"));
            proxy = Some(p);
            pg = Some((admin, name));
            vec!["--database-url".into(), via.to_string()]
        }
        None => vec!["--data-dir".into(), "data".into()],
    };
    let store: Vec<&str> = store.iter().map(String::as_str).collect();
    run_ok_on(dir.path(), &["migrate"], &store);
    run_ok_on(
        dir.path(),
        &[
            "user",
            "create",
            "--email",
            "cron@example.com",
            "--password",
            binary::PASSWORD,
        ],
        &store,
    );
    let api = run_ok_on(
        dir.path(),
        &[
            "token",
            "create",
            "--email",
            "cron@example.com",
            "--permissions",
            "monitors:read,monitors:write",
        ],
        &store,
    );
    let port = free_port();
    let log = dir.path().join("server.log");
    let mut child = serve_logged(dir.path(), port, &store, &log);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let (_, token) = push_monitor(
        &Bearer::new(&base, &api),
        json!({"name": "backup", "interval": 3600}),
    )
    .await;
    let client = reqwest::Client::new();
    let push = |key: &'static str| {
        client
            .post(format!("{base}/push/{token}?msg={key}"))
            .header("Idempotency-Key", key)
            .send()
    };
    assert_eq!(push("before").await.unwrap().status(), 202);

    // The outage.
    let lock = match &proxy {
        Some(p) => {
            p.cut();
            None
        }
        None => {
            use sqlx::Connection;
            let file = dir.path().join("data").join("tocsin.db");
            let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
                .await
                .unwrap();
            sqlx::query("BEGIN EXCLUSIVE")
                .execute(&mut conn)
                .await
                .unwrap();
            Some(conn)
        }
    };
    for key in ["during-1", "during-2"] {
        let res = push(key).await.unwrap();
        let retry_after = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body: Value = res.json().await.unwrap_or(Value::Null);
        assert_eq!(body["statusCode"], 503, "{body}");
        assert_eq!(body["code"], "SERVICE_UNAVAILABLE", "{body}");
        let secs: u64 = retry_after.expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&secs), "Retry-After {secs}");
    }

    // The database is back: the same client retrying gets through.
    match (&proxy, lock) {
        (Some(p), _) => p.restore(),
        (None, Some(mut conn)) => {
            use sqlx::Connection;
            sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
            conn.close().await.ok();
        }
        (None, None) => unreachable!(),
    }
    let mut status = 0;
    for _ in 0..100 {
        status = push("during-1").await.unwrap().status().as_u16();
        if status == 202 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 202);
    child.kill().unwrap();
    child.wait().unwrap();

    // The failed pushes were logged, their token never.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("push not recorded"), "{text}");
    assert!(!text.contains(&token), "a push token in the log:\n{text}");
    drop(proxy);
    if let Some((admin, name)) = pg {
        use sqlx::Connection;
        if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await;
        }
    }
}
