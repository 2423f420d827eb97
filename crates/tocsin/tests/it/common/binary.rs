//! Running the real `tocsin` binary from tests: a free port, a command with the test's own
//! working directory and none of the caller's `TOCSIN_*` database settings, readiness polling,
//! signals and waiting for exit.

#![allow(clippy::unwrap_used)]

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The `tocsin` binary Cargo built for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_tocsin");

/// A loopback port free right now (the binary is told to listen on it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A `tocsin` command run in `dir`, without the caller's `TOCSIN_*` database and listen settings.
pub fn tocsin(dir: &std::path::Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env_remove("TOCSIN_DATABASE_URL")
        .env_remove("TOCSIN_LISTEN")
        .env_remove("TOCSIN_DATA_DIR");
    c
}

/// Polls until the server answers /healthz; returns how long it took.
pub async fn wait_ready(port: u16) -> Duration {
    let started = Instant::now();
    let client = reqwest::Client::new();
    while started.elapsed() < Duration::from_secs(20) {
        if let Ok(r) = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
        {
            if r.status() == 200 {
                return started.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("server on {port} never became ready");
}

/// Sends `sig` (`-TERM`, `-INT`, ...) to `child` with `kill`; it must be delivered.
pub fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (15 s at most) for `child` to exit; its status.
pub fn wait_exit(mut child: Child) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "server did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `tocsin ARGS` in `dir`; it must succeed. Returns its standard output, trimmed.
pub fn run_ok(dir: &std::path::Path, args: &[&str]) -> String {
    let out = tocsin(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The password every seeded user gets.
pub const PASSWORD: &str = "correct horse battery";

/// Prepares `dir/data` as an installation would be: migrations applied, a user `email` (with
/// [`PASSWORD`]) and their workspace. Returns an API token of that user with `permissions`
/// (`all` or a comma-separated list).
pub fn seed(dir: &std::path::Path, email: &str, permissions: &str) -> String {
    run_ok(dir, &["migrate", "--data-dir", "data"]);
    run_ok(
        dir,
        &[
            "user",
            "create",
            "--email",
            email,
            "--password",
            PASSWORD,
            "--data-dir",
            "data",
        ],
    );
    run_ok(
        dir,
        &[
            "token",
            "create",
            "--email",
            email,
            "--permissions",
            permissions,
            "--data-dir",
            "data",
        ],
    )
}

/// `tocsin serve` on `dir/data` at `127.0.0.1:port` with `extra` flags, output discarded.
pub fn serve(dir: &std::path::Path, port: u16, extra: &[&str]) -> Child {
    tocsin(dir)
        .args(["serve", "--data-dir", "data"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}
