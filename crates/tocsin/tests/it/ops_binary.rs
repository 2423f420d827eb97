//! Operating the real `tocsin` binary: one server per embedded data directory (a second one
//! is refused, naming the directory and the first one's PID, while the short commands still
//! run beside it, and a crash leaves no stale lock); a data directory that cannot be created
//! or written stops the server at once with its path and "permission denied"; a second Ctrl-C
//! during the shutdown grace exits at once with code 130.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::binary::{self, free_port, signal, tocsin, wait_ready};
use tokio::io::AsyncWriteExt;

/// Waits up to `within` for `child` to exit and returns its output; kills it and fails if
/// it is still running then.
fn exits_within(mut child: Child, within: Duration, what: &str) -> (Output, Duration) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > within {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {within:?}; stdout: {} stderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn piped(mut c: Command) -> Child {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn a_second_server_on_one_data_directory_is_refused_naming_it_and_the_first() {
    let dir = tempfile::tempdir().unwrap();
    binary::seed(dir.path(), "ops@example.com", "all");
    let port = free_port();
    let first = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;

    let mut second = tocsin(dir.path());
    second.args([
        "serve",
        "--data-dir",
        "data",
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    let (out, _) = exits_within(piped(second), Duration::from_secs(10), "second server");
    assert_eq!(out.status.code(), Some(1), "refused with a failure status");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let data = dir.path().join("data").canonicalize().unwrap();
    assert!(
        stderr.contains(&data.display().to_string()),
        "names the directory: {stderr}"
    );
    assert!(
        stderr.contains(&format!("PID {}", first.id())),
        "names the other server: {stderr}"
    );
    assert!(stderr.contains("in use"), "{stderr}");
    let lock = std::fs::read_to_string(dir.path().join("data/tocsin.lock")).unwrap();
    assert_eq!(
        lock.trim(),
        first.id().to_string(),
        "the lock file holds the PID"
    );

    // The first server is untouched, and the short commands still run beside it.
    let health = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    binary::run_ok(dir.path(), &["migrate", "--data-dir", "data"]);
    let token = binary::run_ok(
        dir.path(),
        &[
            "token",
            "create",
            "--email",
            "ops@example.com",
            "--data-dir",
            "data",
        ],
    );
    assert!(token.starts_with("svc_"), "{token}");

    // A server killed outright leaves no stale lock behind.
    signal(&first, "-KILL");
    let _ = tokio::task::spawn_blocking(move || {
        let mut first = first;
        first.wait()
    })
    .await
    .unwrap();
    let port = free_port();
    let again = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    signal(&again, "-TERM");
    assert_eq!(binary::wait_exit(again).code(), Some(0));
}

/// Whether this process may write where permissions say it may not (root, or a capability
/// that overrides file permissions): then the refusals below must be seen by another user.
fn privileged(scratch: &Path) -> bool {
    let probe = scratch.join("privilege-probe");
    std::fs::create_dir(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let writes = std::fs::write(probe.join("x"), b"x").is_ok();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    writes
}

/// `tocsin ARGS` in `dir`, as the unprivileged `nobody` (uid 65534) when this process
/// would write through any permission.
fn unprivileged(dir: &Path, as_nobody: bool, args: &[&str]) -> Child {
    let mut c = tocsin(dir);
    c.args(args);
    if as_nobody {
        c.uid(65534).gid(65534);
    }
    piped(c)
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn a_data_directory_that_cannot_be_written_stops_the_server_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // Every user may enter the test's directory and run from it.
    chmod(dir.path(), 0o755);
    let as_nobody = privileged(dir.path());
    let root = dir.path().canonicalize().unwrap();

    // (1) A directory that cannot be created: its parent is read-only.
    std::fs::create_dir(root.join("locked")).unwrap();
    // (2) A directory that exists but cannot be written in.
    std::fs::create_dir(root.join("readonly")).unwrap();
    // (3) A database file that cannot be written, in a directory that can.
    binary::run_ok(&root, &["migrate", "--data-dir", "dbro"]);
    chmod(&root.join("dbro"), 0o777);
    for entry in std::fs::read_dir(root.join("dbro")).unwrap() {
        chmod(&entry.unwrap().path(), 0o444);
    }
    chmod(&root.join("locked"), 0o555);
    chmod(&root.join("readonly"), 0o555);

    let cases = [
        ("locked/data", root.join("locked/data")),
        ("readonly", root.join("readonly")),
        ("dbro", root.join("dbro")),
    ];
    for (arg, path) in &cases {
        for command in [&["serve"][..], &["migrate"][..]] {
            let mut args = command.to_vec();
            args.extend(["--data-dir", arg]);
            let listen = format!("127.0.0.1:{}", free_port());
            if command[0] == "serve" {
                args.extend(["--listen", &listen]);
            }
            let child = unprivileged(&root, as_nobody, &args);
            let (out, took) = exits_within(child, Duration::from_secs(10), arg);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?}: {stderr}");
            assert!(
                took < Duration::from_secs(5),
                "{args:?} said so at once ({took:?}): {stderr}"
            );
            assert!(
                stderr.contains(&path.display().to_string()),
                "{args:?} names the path {}: {stderr}",
                path.display()
            );
            assert!(
                stderr.to_lowercase().contains("permission denied"),
                "{args:?} says it is a permission problem: {stderr}"
            );
        }
    }
    // Let the temporary directory be removed.
    chmod(&root.join("locked"), 0o755);
    chmod(&root.join("readonly"), 0o755);
}

#[tokio::test]
async fn a_second_ctrl_c_during_the_shutdown_grace_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    binary::seed(dir.path(), "ops@example.com", "all");
    let port = free_port();
    // A long grace and long request timeouts: only a second Ctrl-C can end this quickly.
    let child = tocsin(dir.path())
        .args(["serve", "--data-dir", "data"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--shutdown-grace-seconds", "60"])
        .args(["--header-read-timeout-seconds", "120"])
        .args(["--body-timeout-seconds", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    // A request whose body never finishes arriving keeps the grace going.
    let mut partial = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    partial
        .write_all(
            b"POST /auth/sign-in/email HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"email\"",
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    signal(&child, "-INT");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut child = child;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C starts the grace"
    );
    let stopping = Instant::now();
    signal(&child, "-INT");
    let (out, _) = tokio::task::spawn_blocking(move || {
        exits_within(child, Duration::from_secs(5), "interrupted twice")
    })
    .await
    .unwrap();
    let took = stopping.elapsed();
    assert_eq!(out.status.code(), Some(130), "exit code of an interrupt");
    assert!(took < Duration::from_secs(2), "exited at once ({took:?})");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains("interrupted again"), "says why: {log}");
}
