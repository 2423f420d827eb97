//! Accounts and sessions through the real server: sign-up, sign-in, sign-out, the session
//! read, cookie attributes, rate limits, the Origin check, expiry with a driven clock, and
//! email verification through a real SMTP sink.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::smtp::{self, Sink};
use common::{expect_error, json_of, TestServer};
use reqwest::{Client, Method};
use serde_json::json;
use tocsin::clock::ManualClock;

#[tokio::test]
async fn sign_up_sets_a_hardened_cookie_and_creates_a_workspace() {
    let srv = TestServer::start().await;
    let res = Client::new()
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "Ada@Example.com", "password": "correct horse battery", "name": "Ada"}))
        .send()
        .await
        .unwrap();
    let cookie = res
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("svc.session_token="), "{cookie}");
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attr), "{attr} missing in {cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "plain http public URL: no Secure"
    );
    let body = json_of(res, 200).await;
    assert_eq!(body["user"]["email"], "ada@example.com");
    assert_eq!(body["workspace"]["memberCount"], 1.0);
    assert_eq!(body["workspace"]["ownerId"], body["user"]["id"]);
    // The same address again, in another case, is taken.
    let res = Client::new()
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "ada@example.com", "password": "another password", "name": "Ada"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "EMAIL_TAKEN").await;
    srv.stop().await;
}

#[tokio::test]
async fn sign_up_validation_reports_every_field() {
    let srv = TestServer::start().await;
    let res = Client::new()
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "not-an-email", "password": "short"}))
        .send()
        .await
        .unwrap();
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "email");
    assert!(body["flattened"]["fieldErrors"]["email"].is_array());
    assert!(body["flattened"]["fieldErrors"]["password"].is_array());
    srv.stop().await;
}

#[tokio::test]
async fn sign_in_sign_out_and_session() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let session = json_of(ada.call(Method::GET, "/auth/get-session", None).await, 200).await;
    assert_eq!(session["user"]["id"], ada.user_id.as_str());
    assert_eq!(
        session["session"]["activeWorkspaceId"],
        ada.workspace_id.as_str()
    );

    // Wrong password and unknown email answer the same way.
    let c = Client::new();
    for (email, pw) in [
        ("ada@example.com", "wrong password"),
        ("nobody@example.com", "whatever pw"),
    ] {
        let res = c
            .post(srv.url("/auth/sign-in/email"))
            .json(&json!({"email": email, "password": pw}))
            .send()
            .await
            .unwrap();
        expect_error(res, 401, "INVALID_CREDENTIALS").await;
    }
    let fresh = Client::builder().cookie_store(true).build().unwrap();
    let res = fresh
        .post(srv.url("/auth/sign-in/email"))
        .json(&json!({"email": "ADA@example.com", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(res, 200).await["workspace"]["id"],
        ada.workspace_id.as_str()
    );
    assert_eq!(
        fresh
            .get(srv.url("/workspace"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    // Sign-out revokes the session server-side: the old cookie value stops working.
    let res = ada.call(Method::POST, "/auth/sign-out", None).await;
    assert_eq!(res.status(), 200);
    expect_error(
        ada.call(Method::GET, "/auth/get-session", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(
        ada.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    // The other session is unaffected.
    assert_eq!(
        fresh
            .get(srv.url("/workspace"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    srv.stop().await;
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_email_and_address_with_retry_after() {
    let srv = TestServer::start().await;
    srv.sign_up("ada@example.com").await;
    let c = Client::new();
    let limit = srv.state.config().rate_limits.sign_in_failures_per_email_ip;
    for _ in 0..limit {
        let res = c
            .post(srv.url("/auth/sign-in/email"))
            .json(&json!({"email": "ada@example.com", "password": "bad password"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
    }
    let res = c
        .post(srv.url("/auth/sign-in/email"))
        .json(&json!({"email": "ada@example.com", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    let retry: u64 = res
        .headers()
        .get("retry-after")
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    expect_error(res, 429, "RATE_LIMITED").await;
    srv.stop().await;
}

#[tokio::test]
async fn cookie_writes_need_a_matching_origin() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let cookie = ada.client.get(srv.url("/workspace")).build().unwrap();
    drop(cookie);
    // The same session, without the Origin header the harness adds.
    let token_cookie = {
        let res = Client::new()
            .post(srv.url("/auth/sign-in/email"))
            .json(&json!({"email": "ada@example.com", "password": "correct horse battery"}))
            .send()
            .await
            .unwrap();
        let raw = res
            .headers()
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        raw.split(';').next().unwrap().to_string()
    };
    let plain = Client::new();
    let body = json!({"name": "k", "permissions": ["identity:read"]});
    let res = plain
        .post(srv.url("/api-keys"))
        .header("cookie", &token_cookie)
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "INVALID_ORIGIN").await;
    let res = plain
        .post(srv.url("/api-keys"))
        .header("cookie", &token_cookie)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "INVALID_ORIGIN").await;
    let res = plain
        .post(srv.url("/api-keys"))
        .header("cookie", &token_cookie)
        .header("origin", &srv.base)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    // Reads need no Origin.
    let res = plain
        .get(srv.url("/workspace"))
        .header("cookie", &token_cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    srv.stop().await;
}

#[tokio::test]
async fn sessions_expire_and_slide() {
    let start = 1_800_000_000_000;
    let (srv, clock) = TestServer::with_clock(start).await;
    let ada = srv.sign_up("ada@example.com").await;
    let day = 24 * 3600 * 1000;
    // Used on day 20: the 30-day window slides from there.
    clock.advance_ms(20 * day);
    assert_eq!(
        ada.call(Method::GET, "/workspace", None).await.status(),
        200
    );
    clock.advance_ms(25 * day);
    assert_eq!(
        ada.call(Method::GET, "/workspace", None).await.status(),
        200,
        "slid past the first 30 days"
    );
    clock.advance_ms(31 * day);
    expect_error(
        ada.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn bad_credentials_never_reach_data() {
    let srv = TestServer::start().await;
    let c = Client::new();
    for auth in [
        "Bearer svc_nope",
        "Bearer ",
        "Basic abc",
        "Bearer not-a-svc-token",
    ] {
        let res = c
            .get(srv.url("/workspace"))
            .header("authorization", auth)
            .send()
            .await
            .unwrap();
        expect_error(res, 401, "UNAUTHORIZED").await;
    }
    let res = c
        .get(srv.url("/workspace"))
        .header("cookie", "svc.session_token=forged")
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "UNAUTHORIZED").await;
    expect_error(
        c.get(srv.url("/workspace")).send().await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Email verification

/// The raw mails to `to` so far, quoted-printable soft breaks and `=3D` undone.
fn mails_to(sink: &Sink, to: &str) -> Vec<String> {
    sink.messages
        .lock()
        .unwrap()
        .iter()
        .filter(|(rcpt, _)| rcpt.iter().any(|r| r == to))
        .map(|(_, raw)| raw.replace("=\r\n", "").replace("=3D", "="))
        .collect()
}

/// Waits until `to` has `n` mails (10 s at most); returns the path and query of the verify
/// link in the `n`-th.
async fn verify_link(sink: &Sink, to: &str, n: usize) -> String {
    for _ in 0..200 {
        let mails = mails_to(sink, to);
        if mails.len() >= n {
            let mail = &mails[n - 1];
            assert!(
                mail.contains("Subject: Confirm your email address"),
                "{mail}"
            );
            let start = mail.find("/auth/verify-email?token=").expect(mail);
            let rest = &mail[start..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/?=_-.".contains(c)))
                .unwrap_or(rest.len());
            return rest[..end].to_string();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{to} has {} mails, expected {n}", mails_to(sink, to).len());
}

/// GETs (the link as a mail scanner would follow it) or POSTs (the page's button) `link`:
/// the status and the page.
async fn follow(srv: &TestServer, link: &str, press: bool) -> (u16, String) {
    let c = Client::new();
    let req = if press {
        c.post(srv.url(link))
    } else {
        c.get(srv.url(link))
    };
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/html"), "{ct}");
    assert_eq!(res.headers()["referrer-policy"], "no-referrer");
    (status, res.text().await.unwrap())
}

async fn reads_page(srv: &TestServer, who: &common::User, slug: &str) -> bool {
    let res = who
        .client
        .get(srv.url(&format!("/s/{slug}")))
        .send()
        .await
        .unwrap();
    let summary = who
        .client
        .get(srv.url(&format!("/api/v1/status-pages/{slug}/summary")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status() == 200,
        summary.status() == 200,
        "the page and its summary agree"
    );
    res.status() == 200
}

#[tokio::test]
async fn an_email_domain_page_opens_only_to_an_address_verified_by_its_emailed_link() {
    let clock = ManualClock::new(1_800_000_000_000);
    let (srv, sink) = smtp::server_with(Some(clock.clone()), |_| {}).await;
    let owner = srv.sign_up("owner@corp.example").await;
    json_of(
        owner
            .call(
                Method::POST,
                "/status-pages",
                Some(json!({"name": "Corp internal", "slug": "corp", "published": true,
                    "access": {"visibility": "EMAIL_DOMAINS", "allowedEmailDomains": ["corp.example"]}})),
            )
            .await,
        201,
    )
    .await;

    // Anyone can type an address at the domain: signing up with it opens nothing.
    let res = Client::new()
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "eve@corp.example", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(res, 200).await["user"]["emailVerified"], false);
    let eve = srv.sign_up("eve2@corp.example").await;
    let session = json_of(eve.call(Method::GET, "/auth/get-session", None).await, 200).await;
    assert_eq!(session["user"]["emailVerified"], false);
    assert!(!reads_page(&srv, &eve, "corp").await);
    // Meanwhile the account works in its own workspace.
    json_of(eve.call(Method::GET, "/workspace", None).await, 200).await;

    // The link's GET only shows a button: a mail scanner verifies nothing.
    let link = verify_link(&sink, "eve2@corp.example", 1).await;
    let (status, page) = follow(&srv, &link, false).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("eve2@corp.example") && page.contains("<form method=\"post\""),
        "{page}"
    );
    assert!(!reads_page(&srv, &eve, "corp").await);
    // The button verifies; the page opens.
    let (status, page) = follow(&srv, &link, true).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("confirmed"), "{page}");
    assert!(reads_page(&srv, &eve, "corp").await);
    let session = json_of(eve.call(Method::GET, "/auth/get-session", None).await, 200).await;
    assert_eq!(session["user"]["emailVerified"], true);
    // A link works once.
    let (status, page) = follow(&srv, &link, true).await;
    assert_eq!(status, 410);
    assert!(page.contains("already used"), "{page}");
    expect_error(
        eve.call(Method::POST, "/auth/verify-email/resend", None)
            .await,
        409,
        "EMAIL_ALREADY_VERIFIED",
    )
    .await;
    // A forged token is no link at all.
    let (status, _) = follow(&srv, "/auth/verify-email?token=forged", true).await;
    assert_eq!(status, 400);

    // A link expires after 24 hours; a new one can be asked for, three times an hour.
    let bob = srv.sign_up("bob@corp.example").await;
    let first = verify_link(&sink, "bob@corp.example", 1).await;
    clock.advance_ms(24 * 3_600_000 + 1);
    let (status, page) = follow(&srv, &first, true).await;
    assert_eq!(status, 410);
    assert!(page.contains("expired"), "{page}");
    assert!(!reads_page(&srv, &bob, "corp").await);
    for n in 2..=4 {
        let res = bob
            .call(Method::POST, "/auth/verify-email/resend", None)
            .await;
        assert_eq!(json_of(res, 200).await["success"], true);
        verify_link(&sink, "bob@corp.example", n).await;
        clock.advance_ms(60_000);
    }
    let res = bob
        .call(Method::POST, "/auth/verify-email/resend", None)
        .await;
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // The first resend leaves the hour 57 minutes from now.
    assert!((3_400..=3_500).contains(&wait), "{wait}");
    expect_error(res, 429, "RATE_LIMITED").await;
    // Only a signed-in person may ask.
    let res = Client::new()
        .post(srv.url("/auth/verify-email/resend"))
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "UNAUTHORIZED").await;
    let latest = verify_link(&sink, "bob@corp.example", 4).await;
    assert_eq!(follow(&srv, &latest, true).await.0, 200);
    assert!(reads_page(&srv, &bob, "corp").await);
    // An hour on, resending is allowed again (and refused only because there is no need).
    clock.advance_ms(3_600_000);
    expect_error(
        bob.call(Method::POST, "/auth/verify-email/resend", None)
            .await,
        409,
        "EMAIL_ALREADY_VERIFIED",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn an_invitation_is_accepted_only_by_a_verified_address() {
    let clock = ManualClock::new(1_800_000_000_000);
    let (srv, sink) = smtp::server_with(Some(clock), |_| {}).await;
    let ada = srv.sign_up("ada@example.com").await;
    let inv = json_of(
        ada.call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "carol@example.com"})),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(inv["emailed"], true);
    let mail = loop {
        let mails = mails_to(&sink, "carol@example.com");
        if let Some(m) = mails.into_iter().find(|m| m.contains("invitations/accept")) {
            break m;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let token = mail
        .split("token=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();

    // Someone signing up with Carol's address cannot take her place in the workspace.
    let carol = srv.sign_up("carol@example.com").await;
    let accept = || {
        carol.call(
            Method::POST,
            "/invitations/accept",
            Some(json!({"token": token})),
        )
    };
    expect_error(accept().await, 403, "EMAIL_NOT_VERIFIED").await;
    let members = json_of(ada.call(Method::GET, "/workspace/members", None).await, 200).await;
    assert_eq!(members["members"].as_array().unwrap().len(), 1);
    // Once the address is shown to be hers (her verification mail, beside the invitation),
    // the same invitation is accepted.
    let link = verify_link(&sink, "carol@example.com", 2).await;
    assert_eq!(follow(&srv, &link, true).await.0, 200);
    let ws = json_of(accept().await, 200).await;
    assert_eq!(ws["id"], ada.workspace_id.as_str());
    srv.stop().await;
}

/// A fresh session cookie (`name=value`) of `email`, taken without the harness's Origin.
async fn session_cookie(srv: &TestServer, email: &str) -> String {
    let res = Client::new()
        .post(srv.url("/auth/sign-in/email"))
        .json(&json!({"email": email, "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    let raw = res.headers().get("set-cookie").unwrap().to_str().unwrap();
    raw.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn the_origin_check_compares_the_scheme_and_guards_sign_out() {
    let srv = TestServer::start().await;
    srv.sign_up("ada@example.com").await;
    let cookie = session_cookie(&srv, "ada@example.com").await;
    let plain = Client::new();
    // The server is http://127.0.0.1:port: the same host and port under https is another
    // origin, with the Origin header or the Referer.
    let https = srv.base.replacen("http://", "https://", 1);
    let body = json!({"name": "k", "permissions": ["identity:read"]});
    for (header, value) in [
        ("origin", https.clone()),
        ("referer", format!("{https}/app/api-keys")),
        ("origin", srv.base.replacen("http://", "ws://", 1)),
    ] {
        let res = plain
            .post(srv.url("/api-keys"))
            .header("cookie", &cookie)
            .header(header, &value)
            .json(&body)
            .send()
            .await
            .unwrap();
        expect_error(res, 403, "INVALID_ORIGIN").await;
    }

    // Sign-out is a cookie write like any other: another site (or no Origin) cannot end the
    // session, which stays valid.
    let sign_out = |origin: Option<String>| {
        let mut req = plain
            .post(srv.url("/auth/sign-out"))
            .header("cookie", &cookie);
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        async move { req.send().await.unwrap() }
    };
    for origin in [None, Some("https://evil.example".to_string()), Some(https)] {
        let res = sign_out(origin).await;
        expect_error(res, 403, "INVALID_ORIGIN").await;
        let res = plain
            .get(srv.url("/auth/get-session"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
    let res = sign_out(Some(srv.base.clone())).await;
    assert_eq!(res.status(), 200);
    let res = plain
        .get(srv.url("/auth/get-session"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "UNAUTHORIZED").await;
    // Without a session there is nothing to guard: clearing the cookie is always allowed.
    let res = plain.post(srv.url("/auth/sign-out")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    srv.stop().await;
}
