//! The HTTP edge under hostile or careless clients, on the real `tocsin serve` binary with
//! short timeouts: idle, slow-header, idle keep-alive and stalled-body connections are closed
//! within their timeouts; connections over the global cap or a client address's share are
//! refused at once; the descriptor limit is raised, and when it is scarce the cap refuses
//! connections instead of the process running out; SIGTERM finishes what is in flight within
//! the shutdown grace and closes the rest; and the refusals hyper writes itself (400, 414,
//! 431) carry the JSON error envelope. Raw TCP clients, since well-behaved HTTP clients
//! cannot send what these tests send.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::net::{IpAddr, SocketAddr};
use std::process::Child;
use std::time::{Duration, Instant};

use common::binary::{self, free_port, signal, tocsin, wait_exit, wait_ready, BIN};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

struct Server {
    child: Option<Child>,
    port: u16,
    log: std::path::PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// `tocsin serve` with `args`, optionally under a shell `ulimit` (e.g. `-Sn 256`).
    async fn start(args: &[&str], ulimit: Option<&str>) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut srv = Server::start_in(dir.path(), args, ulimit).await;
        srv._dir = Some(dir);
        srv
    }

    /// Serves the data under `dir`, which the caller keeps.
    async fn start_in(dir: &std::path::Path, args: &[&str], ulimit: Option<&str>) -> Server {
        let port = free_port();
        let log = dir.join(format!("server-{port}.log"));
        let listen = format!("127.0.0.1:{port}");
        let mut all = vec!["serve", "--data-dir", "data", "--listen", &listen];
        all.extend_from_slice(args);
        let stderr = std::fs::File::create(&log).unwrap();
        let stdout = stderr.try_clone().unwrap();
        let child = match ulimit {
            None => tocsin(dir)
                .args(&all)
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .unwrap(),
            // `exec` keeps the pid: signals and /proc reach the server itself.
            Some(limit) => std::process::Command::new("sh")
                .current_dir(dir)
                .env_remove("TOCSIN_DATABASE_URL")
                .env_remove("TOCSIN_LISTEN")
                .env_remove("TOCSIN_DATA_DIR")
                .arg("-c")
                .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
                .arg(BIN)
                .args(&all)
                .stdout(stdout)
                .stderr(stderr)
                .spawn()
                .unwrap(),
        };
        wait_ready(port).await;
        Server {
            child: Some(child),
            port,
            log,
            _dir: None,
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    async fn healthz_from(&self, ip: [u8; 4]) -> Result<String, String> {
        let mut s = connect_from(ip, self.addr()).await;
        s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .map_err(|e| e.to_string())?;
        let (text, _) = read_until_closed(&mut s, Duration::from_secs(5)).await;
        if text.starts_with("HTTP/1.1 200") {
            Ok(text)
        } else {
            Err(text)
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A connection from a given loopback address: Linux routes all of 127.0.0.0/8 to `lo`, so
/// several client addresses can be had on one machine.
async fn connect_from(ip: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(IpAddr::from(ip), 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// A keep-alive connection the server has accepted and counts: it answered a request on it.
/// A connection that closes only just after `wait_ready`'s probe (a busy machine) may still
/// hold a place for a moment, so a refused attempt is retried briefly.
async fn counted_connection(ip: [u8; 4], to: SocketAddr) -> TcpStream {
    let started = Instant::now();
    loop {
        let mut s = connect_from(ip, to).await;
        let _ = s
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await;
        let mut buf = [0u8; 8192];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
            if buf[..n].starts_with(b"HTTP/1.1 200") {
                return s;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no place for a connection under the cap"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads until the server closes the connection; panics if it is still open after `limit`.
async fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = limit.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => panic!(
                "connection still open after {limit:?}; got {:?}",
                String::from_utf8_lossy(&got)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    (
        String::from_utf8_lossy(&got).into_owned(),
        started.elapsed(),
    )
}

/// True if the server has not closed the connection within `wait`.
async fn still_open(s: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 1];
    tokio::time::timeout(wait, s.read(&mut buf)).await.is_err()
}

fn envelope_of(response: &str) -> Value {
    let (_, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {response:?}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: body {body:?}"))
}

fn status_of(response: &str) -> u16 {
    response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"))
}

// ---------------------------------------------------------------------------------------------
// Timeouts

#[tokio::test]
async fn silent_and_slow_header_connections_are_closed_after_the_header_read_timeout() {
    let srv = Server::start(
        &[
            "--header-read-timeout-seconds",
            "1",
            "--idle-timeout-seconds",
            "30",
        ],
        None,
    )
    .await;
    let mut silent = TcpStream::connect(srv.addr()).await.unwrap();
    let mut slow = TcpStream::connect(srv.addr()).await.unwrap();
    // Slowloris: a header line every 200 ms, never the blank line that ends the head.
    let dribble = async {
        slow.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        let started = Instant::now();
        let mut i = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            i += 1;
            if slow
                .write_all(format!("x-{i}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(6),
                "slow head never cut off"
            );
        }
    };
    let (slow_cut, (_, silent_cut)) = tokio::join!(
        dribble,
        read_until_closed(&mut silent, Duration::from_secs(6))
    );
    assert!(silent_cut >= Duration::from_millis(900), "{silent_cut:?}");
    assert!(silent_cut < Duration::from_secs(3), "{silent_cut:?}");
    assert!(slow_cut < Duration::from_secs(4), "{slow_cut:?}");
    // The server is fine.
    srv.healthz_from([127, 0, 0, 1]).await.unwrap();
}

#[tokio::test]
async fn a_keep_alive_connection_is_closed_after_the_idle_timeout_not_the_header_one() {
    let srv = Server::start(
        &[
            "--header-read-timeout-seconds",
            "1",
            "--idle-timeout-seconds",
            "3",
        ],
        None,
    )
    .await;
    let mut s = TcpStream::connect(srv.addr()).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let idle_from = Instant::now();
    // Past the header-read timeout, the idle connection is still there ...
    assert!(still_open(&mut s, Duration::from_millis(2_000)).await);
    // ... and usable.
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let n = s.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let idle_from_2 = Instant::now();
    let (_, waited) = read_until_closed(&mut s, Duration::from_secs(8)).await;
    assert!(
        waited >= Duration::from_millis(2_800),
        "closed after {waited:?}"
    );
    assert!(idle_from.elapsed() >= idle_from_2.elapsed());
}

#[tokio::test]
async fn a_stalled_or_dribbling_body_gets_408_request_timeout_and_the_connection_closes() {
    let srv = Server::start(&["--body-timeout-seconds", "1"], None).await;
    let head = b"POST /auth/sign-in/email HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n";
    let mut stalled = TcpStream::connect(srv.addr()).await.unwrap();
    stalled.write_all(head).await.unwrap();
    stalled.write_all(b"{\"email\":").await.unwrap();
    let mut dribbling = TcpStream::connect(srv.addr()).await.unwrap();
    dribbling.write_all(head).await.unwrap();
    let (mut reader, mut writer) = dribbling.into_split();
    // A byte every 150 ms: never a stall long enough for a per-read timeout.
    let dribble = tokio::spawn(async move {
        for _ in 0..60 {
            if writer.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    });
    let (text, took) = read_until_closed(&mut stalled, Duration::from_secs(5)).await;
    assert_eq!(status_of(&text), 408, "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert_eq!(envelope_of(&text)["code"], "REQUEST_TIMEOUT");
    assert!(took < Duration::from_secs(3), "{took:?}");
    let mut got = Vec::new();
    let started = Instant::now();
    let _ = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    assert_eq!(status_of(&text), 408, "{text}");
    assert_eq!(envelope_of(&text)["code"], "REQUEST_TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(3));
    dribble.abort();
}

// ---------------------------------------------------------------------------------------------
// The connection cap

#[tokio::test]
async fn connections_over_an_address_share_or_the_cap_are_refused_at_once() {
    let srv = Server::start(
        &["--max-connections", "6", "--max-connections-per-ip", "3"],
        None,
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from([127, 0, 0, 2], srv.addr()).await);
    }
    // The address's fourth: a 503 envelope and closed, without waiting for any timeout.
    let mut fourth = connect_from([127, 0, 0, 2], srv.addr()).await;
    let (text, took) = read_until_closed(&mut fourth, Duration::from_secs(2)).await;
    assert_eq!(status_of(&text), 503, "{text}");
    assert_eq!(envelope_of(&text)["code"], "SERVICE_UNAVAILABLE");
    assert!(took < Duration::from_secs(1));
    // Another address still gets in, up to the global cap ...
    for _ in 0..3 {
        held.push(connect_from([127, 0, 0, 3], srv.addr()).await);
    }
    // ... which is now reached for everyone.
    let refused = srv.healthz_from([127, 0, 0, 1]).await.unwrap_err();
    assert_eq!(status_of(&refused), 503, "{refused}");
    // Closing one gives its place back.
    drop(held.pop());
    let started = Instant::now();
    loop {
        if srv.healthz_from([127, 0, 0, 1]).await.is_ok() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "place never freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for s in &mut held {
        assert!(still_open(s, Duration::from_millis(10)).await);
    }
}

/// Sends one `GET /healthz` over HTTP/2 with prior knowledge (h2c) on a fresh connection
/// from `ip`: the status, or the error the client saw.
async fn h2_healthz_from(ip: [u8; 4], to: SocketAddr) -> Result<u16, String> {
    let io = hyper_util::rt::TokioIo::new(connect_from(ip, to).await);
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let req = hyper::Request::get(format!("http://{to}/healthz"))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let res = send.send_request(req).await.map_err(|e| e.to_string())?;
    Ok(res.status().as_u16())
}

#[tokio::test]
async fn over_the_cap_an_http2_client_sees_its_connection_closed_at_once() {
    let srv = Server::start(
        &["--max-connections", "2", "--max-connections-per-ip", "0"],
        None,
    )
    .await;
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(counted_connection([127, 0, 0, 2], srv.addr()).await);
    }
    // Over it, an HTTP/2 client's connection fails before any stream, promptly (never held
    // open waiting for a timeout) ...
    let started = Instant::now();
    let refused = tokio::time::timeout(
        Duration::from_secs(2),
        h2_healthz_from([127, 0, 0, 1], srv.addr()),
    )
    .await
    .expect("the refused HTTP/2 connection was left hanging");
    assert!(refused.is_err(), "{refused:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    // ... and what it was sent is the HTTP/1 503 envelope, then the close.
    let mut raw = connect_from([127, 0, 0, 1], srv.addr()).await;
    let _ = raw.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
    let (text, _) = read_until_closed(&mut raw, Duration::from_secs(2)).await;
    assert_eq!(status_of(&text), 503, "{text}");
    assert_eq!(envelope_of(&text)["code"], "SERVICE_UNAVAILABLE");
    // A place given back serves HTTP/2 (with prior knowledge) again.
    drop(held.pop());
    let started = Instant::now();
    while h2_healthz_from([127, 0, 0, 1], srv.addr()).await != Ok(200) {
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "place never freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn soft_and_hard_open_files(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

#[tokio::test]
async fn the_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let (_, hard) = soft_and_hard_open_files(std::process::id());
    if hard < 1024 {
        return;
    }
    let srv = Server::start(&[], Some("-Sn 256")).await;
    let pid = srv.child.as_ref().unwrap().id();
    let (soft, hard_now) = soft_and_hard_open_files(pid);
    assert_eq!(soft, hard_now, "soft limit left at {soft}");
    // 300 idle sockets no longer exhaust a server started with a soft limit of 256.
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(connect_from([127, 0, 0, 2], srv.addr()).await);
    }
    srv.healthz_from([127, 0, 0, 1]).await.unwrap();
    for s in &mut idle {
        assert!(still_open(s, Duration::from_millis(1)).await);
    }
    assert!(!srv.log().contains("Too many open files"), "{}", srv.log());
}

#[tokio::test]
async fn with_few_descriptors_the_cap_refuses_connections_before_the_process_runs_out() {
    // Soft and hard limit 256: the cap comes down to fit (192), and an address's share of 100
    // leaves the rest to other clients.
    let srv = Server::start(&["--max-connections-per-ip", "100"], Some("-n 256")).await;
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(connect_from([127, 0, 0, 2], srv.addr()).await);
    }
    for _ in 0..20 {
        srv.healthz_from([127, 0, 0, 1]).await.unwrap();
    }
    let mut open = 0;
    for s in &mut idle {
        if still_open(s, Duration::from_millis(1)).await {
            open += 1;
        }
    }
    assert_eq!(open, 100);
    let log = srv.log();
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(log.contains("lowered to fit the descriptor limit"), "{log}");
}

// ---------------------------------------------------------------------------------------------
// Shutdown

#[tokio::test]
async fn sigterm_finishes_requests_in_flight_and_cuts_stalled_ones_after_the_grace() {
    let mut srv = Server::start(
        &[
            "--shutdown-grace-seconds",
            "2",
            "--header-read-timeout-seconds",
            "60",
            "--body-timeout-seconds",
            "60",
        ],
        None,
    )
    .await;
    // Partial heads: one too short for hyper to tell HTTP/1 from HTTP/2, one past that.
    let mut short = TcpStream::connect(srv.addr()).await.unwrap();
    short.write_all(b"GET /heal").await.unwrap();
    let mut partial = TcpStream::connect(srv.addr()).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-a: b\r\n")
        .await
        .unwrap();
    // A request whose body is still arriving when the signal comes.
    let body = br#"{"email":"nobody@example.com","password":"not the password"}"#;
    let mut in_flight = TcpStream::connect(srv.addr()).await.unwrap();
    in_flight
        .write_all(
            format!(
                "POST /auth/sign-in/email HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    in_flight.write_all(&body[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let child = srv.child.take().unwrap();
    signal(&child, "-TERM");
    let signalled = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // New connections are no longer accepted ...
    assert!(TcpStream::connect(srv.addr()).await.is_err());
    // ... but the request in flight completes and is answered.
    in_flight.write_all(&body[10..]).await.unwrap();
    let (text, _) = read_until_closed(&mut in_flight, Duration::from_secs(3)).await;
    assert_eq!(status_of(&text), 401, "{text}");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    let took = signalled.elapsed();
    assert!(status.success(), "{status:?}\n{}", srv.log());
    assert!(took >= Duration::from_millis(1_800), "{took:?}");
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    read_until_closed(&mut short, Duration::from_secs(1)).await;
    read_until_closed(&mut partial, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn once_sigterm_arrives_the_push_watcher_marks_nothing_down() {
    let dir = tempfile::tempdir().unwrap();
    let email = "cron@example.com";
    let token = binary::seed(dir.path(), email, "monitors:read,monitors:write");
    std::fs::write(dir.path().join("serve.toml"), "min_interval_seconds = 1\n").unwrap();
    std::fs::write(
        dir.path().join("read.toml"),
        "min_interval_seconds = 1\nscheduler = false\n",
    )
    .unwrap();
    let mut srv = Server::start_in(
        dir.path(),
        &[
            "--config",
            "serve.toml",
            "--shutdown-grace-seconds",
            "3",
            "--header-read-timeout-seconds",
            "60",
        ],
        None,
    )
    .await;
    let base = format!("http://127.0.0.1:{}", srv.port);
    let client = reqwest::Client::new();
    let m: Value = client
        .post(format!("{base}/monitors"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"name": "job", "type": "PUSH", "interval": 1, "gracePeriod": 0}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = m["id"].as_str().unwrap().to_string();
    let push_token = m["pushToken"].as_str().unwrap();
    let res = client
        .post(format!("{base}/push/{push_token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    // A client holds the server in its grace past the monitor's deadline (1 s after the push).
    let mut partial = TcpStream::connect(srv.addr()).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let child = srv.child.take().unwrap();
    signal(&child, "-TERM");
    let status = tokio::task::spawn_blocking(move || wait_exit(child))
        .await
        .unwrap();
    assert!(status.success(), "{}", srv.log());
    let log = srv.log();
    drop(partial);

    // Read back with the scheduler off: still UP, no missed push recorded.
    let srv = Server::start_in(dir.path(), &["--config", "read.toml"], None).await;
    let m: Value = client
        .get(format!("http://127.0.0.1:{}/monitors/{id}", srv.port))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(m["status"], "UP", "{m}\n{log}");
}

// ---------------------------------------------------------------------------------------------
// Protocol errors

#[tokio::test]
async fn refusals_hyper_writes_itself_carry_the_error_envelope() {
    let srv = Server::start(&[], None).await;
    let long_path = format!(
        "GET /{} HTTP/1.1\r\nhost: x\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let big_header = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "b".repeat(1024 * 1024)
    );
    let many_headers = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\n{}\r\n",
        (0..200)
            .map(|i| format!("x-h{i}: v\r\n"))
            .collect::<String>()
    );
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("100 KB path", long_path.into_bytes(), 414, "URI_TOO_LONG"),
        ("1 MB header", big_header.into_bytes(), 431, "HEADERS_TOO_LARGE"),
        ("200 headers", many_headers.into_bytes(), 431, "HEADERS_TOO_LARGE"),
        (
            "NUL in a header",
            b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-a: a\0b\r\n\r\n".to_vec(),
            400,
            "BAD_REQUEST",
        ),
        (
            "duplicate Content-Length",
            b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab".to_vec(),
            400,
            "BAD_REQUEST",
        ),
        (
            "negative Content-Length",
            b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n".to_vec(),
            400,
            "BAD_REQUEST",
        ),
        (
            "garbage request line",
            b"\x01\x02 what is this\r\n\r\n".to_vec(),
            400,
            "BAD_REQUEST",
        ),
    ];
    for (what, request, status, code) in cases {
        let s = TcpStream::connect(srv.addr()).await.unwrap();
        let (mut reader, mut writer) = s.into_split();
        // Written beside the read: the server answers before it has read a huge request.
        let write = tokio::spawn(async move {
            let _ = writer.write_all(&request).await;
            writer
        });
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), reader.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Err(_) => panic!("{what}: no answer"),
            }
        }
        let _ = write.await;
        let text = String::from_utf8_lossy(&got);
        assert_eq!(status_of(&text), status, "{what}: {text}");
        assert!(
            text.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{what}: {text}"
        );
        let env = envelope_of(&text);
        assert_eq!(env["code"], code, "{what}: {text}");
        assert_eq!(env["statusCode"], status, "{what}");
    }
    srv.healthz_from([127, 0, 0, 1]).await.unwrap();
}
