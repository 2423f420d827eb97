//! The real `tocsin` binary: `serve` starting on the embedded SQLite default and stopping
//! cleanly on SIGTERM and SIGINT, `migrate`, `user create`, `token create`, configuration
//! errors, and JSON logs.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::binary::{free_port, signal, tocsin, wait_exit, wait_ready};

#[tokio::test]
async fn serve_starts_on_embedded_sqlite_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // No flags at all: the address comes from the environment, everything else is default.
    let child = tocsin(dir.path())
        .arg("serve")
        .env("TOCSIN_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let took = wait_ready(port).await;
    assert!(took < Duration::from_secs(5), "took {took:?} to answer");
    assert!(
        dir.path().join("tocsin-data/tocsin.db").exists(),
        "default data dir is ./tocsin-data"
    );
    let ready = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    signal(&child, "-TERM");
    let status = wait_exit(child);
    assert_eq!(status.code(), Some(0), "SIGTERM exits 0");
}

#[tokio::test]
async fn sigint_finishes_in_flight_requests_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = tocsin(dir.path())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    // A sign-up spends real time hashing the password: it is in flight when the signal lands.
    let client = reqwest::Client::new();
    let request = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .post(format!("http://127.0.0.1:{port}/auth/sign-up/email"))
                .json(&serde_json::json!({"email": "ada@example.com", "password": "correct horse battery"}))
                .send()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    signal(&child, "-INT");
    let res = request.await.unwrap().unwrap();
    assert_eq!(res.status(), 200, "the in-flight request completed");
    assert_eq!(wait_exit(child).code(), Some(0));
}

#[tokio::test]
async fn migrate_user_create_and_token_create_work_with_serve() {
    let dir = tempfile::tempdir().unwrap();
    let out = tocsin(dir.path())
        .args(["migrate", "--data-dir", "data"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tocsin(dir.path())
        .args([
            "user",
            "create",
            "--email",
            "ops@example.com",
            "--password",
            "correct horse battery",
            "--name",
            "Ops",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = tocsin(dir.path())
        .args([
            "token",
            "create",
            "--email",
            "ops@example.com",
            "--permissions",
            "identity:read,monitors:read",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.trim();
    assert!(
        token.starts_with("svc_") && !token.contains(char::is_whitespace),
        "stdout is the token alone: {stdout:?}"
    );
    assert_eq!(stdout.lines().count(), 1);

    // Refusals: session-only capability, unknown user.
    let out = tocsin(dir.path())
        .args([
            "token",
            "create",
            "--email",
            "ops@example.com",
            "--permissions",
            "audit:read",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("session-only"));
    let out = tocsin(dir.path())
        .args([
            "token",
            "create",
            "--email",
            "ghost@example.com",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    // A user the operator made is verified already; `user verify` says so, and knows no ghost.
    let out = tocsin(dir.path())
        .args([
            "user",
            "verify",
            "--email",
            "ops@example.com",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verified: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verified["emailVerified"], true);
    assert_eq!(verified["changed"], false, "verified when created");
    let out = tocsin(dir.path())
        .args([
            "user",
            "verify",
            "--email",
            "ghost@example.com",
            "--data-dir",
            "data",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ghost@example.com"));

    let port = free_port();
    let child = tocsin(dir.path())
        .args([
            "serve",
            "--data-dir",
            "data",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    let ws: serde_json::Value = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/workspace"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ws["id"], created["workspaceId"]);
    let signed_in: serde_json::Value = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/auth/sign-in/email"))
        .json(&serde_json::json!({"email": "ops@example.com", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(signed_in["user"]["emailVerified"], true, "{signed_in}");
    signal(&child, "-TERM");
    assert_eq!(wait_exit(child).code(), Some(0));
}

#[test]
fn bad_configuration_stops_with_a_message_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let out = tocsin(dir.path())
        .args(["serve", "--listen", "not-an-address"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("listen"));
    let out = tocsin(dir.path())
        .args(["serve", "--database-url", "mysql://x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("database-url"));
    std::fs::write(
        dir.path().join("c.toml"),
        "listen = \"127.0.0.1:1\"\nunknown_key = 1\n",
    )
    .unwrap();
    let out = tocsin(dir.path())
        .args(["serve", "--config", "c.toml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown_key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn json_logs_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = tocsin(dir.path())
        .args([
            "serve",
            "--log-format",
            "json",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    signal(&child, "-TERM");
    let stdout = child.stdout.take().unwrap();
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    assert_eq!(wait_exit(child).code(), Some(0));
    assert!(!lines.is_empty());
    for l in &lines {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}"));
        assert!(v["level"].is_string());
    }
}

#[tokio::test]
async fn commands_on_an_installation_refuse_where_there_is_none_and_take_the_password_privately() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // A mistyped data directory: refused, and nothing is created there.
    for args in [
        &[
            "user",
            "create",
            "--email",
            "a@example.com",
            "--password",
            "correct horse battery",
        ][..],
        &["token", "create", "--email", "a@example.com"][..],
        &["probe-key", "create", "--region", "eu-west"][..],
        &["probe-key", "list"][..],
    ] {
        let out = tocsin(dir.path())
            .args(args)
            .args(["--data-dir", "typo"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("no Tocsin database at typo")
                && err.contains("--data-dir or --database-url"),
            "{args:?}: {err}"
        );
        assert!(
            !dir.path().join("typo").join("tocsin.db").exists(),
            "{args:?} created a database"
        );
    }

    let migrated = tocsin(dir.path())
        .args(["migrate", "--data-dir", "data"])
        .output()
        .unwrap();
    assert!(migrated.status.success());
    // The password from the environment...
    let out = tocsin(dir.path())
        .args([
            "user",
            "create",
            "--email",
            "env@example.com",
            "--data-dir",
            "data",
        ])
        .env("TOCSIN_PASSWORD", "correct horse battery")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... or from standard input.
    let mut child = tocsin(dir.path())
        .args([
            "user",
            "create",
            "--email",
            "stdin@example.com",
            "--data-dir",
            "data",
        ])
        .env_remove("TOCSIN_PASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"correct horse battery\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Both can sign in with it.
    let port = free_port();
    let mut server = tocsin(dir.path())
        .args([
            "serve",
            "--data-dir",
            "data",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    for email in ["env@example.com", "stdin@example.com"] {
        let res = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/auth/sign-in/email"))
            .header("origin", format!("http://127.0.0.1:{port}"))
            .json(&serde_json::json!({"email": email, "password": "correct horse battery"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{email}");
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// `tocsin serve ARGS` with the given config file: must stop at once, naming `setting`.
fn refuses(dir: &std::path::Path, toml: &str, args: &[&str], setting: &str) -> String {
    std::fs::write(dir.join("bad.toml"), toml).unwrap();
    let started = std::time::Instant::now();
    let out = tocsin(dir)
        .args(["serve", "--config", "bad.toml", "--data-dir", "data"])
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?} {toml:?} started");
    assert!(err.contains(setting), "{args:?} {toml:?}: {err}");
    assert!(started.elapsed() < Duration::from_secs(15), "{args:?}");
    err
}

#[tokio::test]
async fn settings_that_cannot_work_stop_the_server_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    refuses(d, "", &["--log-level", "loud"], "log-level");
    refuses(d, "[plans]\ndefault = \"gold\"\n", &[], "plans.default");
    let err = refuses(d, "", &["--smtp-url", "smtp://127.0.0.1:2525"], "smtp-from");
    assert!(err.contains("--smtp-url"), "{err}");
    // An unreachable PostgreSQL: where it was tried and why, within the connect timeout.
    let err = refuses(
        d,
        "",
        &[
            "--database-url",
            "postgres://postgres:hunter2@127.0.0.1:1/tocsin",
        ],
        "127.0.0.1:1/tocsin",
    );
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.to_lowercase().contains("refused"), "{err}");

    // `--trust-forwarded-for` is a plain flag.
    let port = free_port();
    let mut child = tocsin(d)
        .args(["serve", "--data-dir", "data", "--trust-forwarded-for"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    let _ = child.kill();
    let _ = child.wait();
}

/// The options of `tocsin ARGS --help` (long help), each with its description.
fn help_options(args: &[&str]) -> Vec<(String, String)> {
    let out = tocsin(std::path::Path::new("."))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut options = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let is_option = (t.starts_with("--") || t.starts_with("-h") || t.starts_with('<'))
            && (2..=6).contains(&indent);
        if is_option {
            let next = lines.get(i + 1).copied().unwrap_or("");
            // Long help puts the description on the next, deeper-indented line; short help on
            // the same line after the name.
            let same_line = t.split_once("  ").map(|(_, d)| d.trim()).unwrap_or("");
            let desc = if same_line.is_empty() && next.len() - next.trim_start().len() > indent {
                next.trim()
            } else {
                same_line
            };
            options.push((
                t.split_whitespace().next().unwrap_or("").to_string(),
                desc.to_string(),
            ));
        }
    }
    options
}

#[test]
fn every_flag_of_every_command_says_what_it_does_and_serve_says_its_defaults() {
    for cmd in [
        &["serve"][..],
        &["migrate"],
        &["user", "create"],
        &["token", "create"],
        &["probe"],
        &["probe-key", "create"],
        &["probe-key", "list"],
        &["probe-key", "revoke"],
        &["bench"],
    ] {
        let options = help_options(cmd);
        assert!(options.len() >= 2, "{cmd:?}: {options:?}");
        for (name, desc) in options.iter().filter(|(n, _)| n != "-h,") {
            assert!(desc.len() > 10, "{cmd:?} {name}: no sentence ({desc:?})");
        }
        if cmd == ["serve"] {
            for (name, desc) in options.iter().filter(|(n, _)| n != "-h,") {
                let d = desc.to_lowercase();
                assert!(
                    d.contains("default") || d.contains("required"),
                    "serve {name}: no default in {desc:?}"
                );
            }
        }
    }
}
