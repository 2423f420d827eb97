//! Sign-in guessing through the real `tocsin` binary, behind a trusted proxy so that
//! `X-Forwarded-For` plays several client addresses: the guessing address is refused with
//! `429` and `Retry-After`, while the person's own address still signs in, an address that
//! has failed too backs off once the email has had its free failures, and a burst of
//! concurrent guesses gets one judged.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::process::Stdio;

use common::binary::{free_port, signal, tocsin, wait_exit, wait_ready};
use serde_json::json;

const EMAIL: &str = "ada@example.com";
const PASSWORD: &str = "correct horse battery";

async fn sign_in(base: &str, from: &str, password: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/auth/sign-in/email"))
        .header("X-Forwarded-For", from)
        .json(&json!({"email": EMAIL, "password": password}))
        .send()
        .await
        .unwrap()
}

fn retry_after(res: &reqwest::Response) -> u64 {
    res.headers()
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn guessing_from_one_address_does_not_lock_the_owner_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = tocsin(dir.path())
        .args(["migrate", "--data-dir", "data"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = tocsin(dir.path())
        .args(["user", "create", "--email", EMAIL, "--password", PASSWORD])
        .args(["--data-dir", "data"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let child = tocsin(dir.path())
        .args([
            "serve",
            "--data-dir",
            "data",
            "--trust-forwarded-for",
            "true",
        ])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");

    // The defaults: 10 failures a minute per email and address, 10 free failures per email.
    for _ in 0..10 {
        assert_eq!(
            sign_in(&base, "203.0.113.7", "wrong guess").await.status(),
            401
        );
    }
    // The guessing address is refused, even with the right password.
    let res = sign_in(&base, "203.0.113.7", PASSWORD).await;
    assert_eq!(res.status(), 429);
    let wait = retry_after(&res);
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    // The owner, from an address that has not failed, signs in.
    assert_eq!(sign_in(&base, "198.51.100.1", PASSWORD).await.status(), 200);
    // A second guessing address gets one try; having failed, it waits out the email's
    // back-off (the email is past its free failures).
    assert_eq!(
        sign_in(&base, "203.0.113.8", "wrong guess").await.status(),
        401
    );
    let res = sign_in(&base, "203.0.113.8", "another guess").await;
    assert_eq!(res.status(), 429);
    let wait = retry_after(&res);
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    // And the owner still signs in, again.
    assert_eq!(sign_in(&base, "198.51.100.1", PASSWORD).await.status(), 200);
    // A burst of concurrent guesses from a fresh address: one is judged, the rest wait.
    let burst = (0..5).map(|i| {
        let base = base.clone();
        async move {
            sign_in(&base, "203.0.113.9", &format!("guess {i}"))
                .await
                .status()
        }
    });
    let mut statuses: Vec<u16> = futures::future::join_all(burst)
        .await
        .into_iter()
        .map(|s| s.as_u16())
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [401, 429, 429, 429, 429]);
    assert_eq!(sign_in(&base, "198.51.100.1", PASSWORD).await.status(), 200);

    signal(&child, "-TERM");
    assert!(wait_exit(child).success());
}
