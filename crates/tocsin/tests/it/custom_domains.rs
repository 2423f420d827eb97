//! Custom domains of status pages through the real server: adding one (the exact record, its
//! TXT verification record, validation with the `domain` field, `DOMAIN_TAKEN` across
//! workspaces and pages, a stale unverified claim released after 7 days), verifying it against
//! a loopback authoritative DNS server the server is pointed at with `dns_resolver` (409
//! `DOMAIN_NOT_VERIFIED` saying what was expected and found, then success once the record is
//! served), `customDomain` on the page, and serving by `Host`: the page's HTML at `/` of the
//! domain, its feeds, a 404 page for other paths and for an unpublished page (the host cache
//! following publish/unpublish at once), the normal API unchanged for the server's own host;
//! deleting the domain; and (on PostgreSQL) a second node learning of changes through the feed.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::domains::{add, by_host, start, verify, TestDns, CHALLENGE, DOMAIN};
use common::pages;
use common::{expect_error, json_of, Bearer, Options, User};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tocsin::clock::ManualClock;

/// A page of `u` named `name` at `slug`, published or not; its id.
async fn create_page(u: &User, name: &str, slug: &str, published: bool) -> String {
    let body = json!({"name": name, "slug": slug, "published": published});
    pages::create_page(u, body).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Asserts a 400 on the `domain` field whose body mentions `message_part`.
async fn field_error(res: reqwest::Response, message_part: &str) {
    let body = common::field_error(res, "domain").await;
    assert!(
        body.to_string().contains(message_part),
        "{message_part:?} in {body}"
    );
}

#[tokio::test]
async fn add_verify_and_serve_a_page_at_its_domain() {
    let dns = TestDns::start().await;
    let srv = start(&dns, None).await;
    let u = srv.sign_up("domains@example.com").await;
    let page = create_page(&u, "Acme Cloud Status", "acme", true).await;

    // Adding: the exact record, unverified, with the TXT record to publish.
    let d = json_of(add(&u, &page, "Status.Example.com").await, 201).await;
    let mut keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "createdAt",
            "domain",
            "statusPageId",
            "verificationRecord",
            "verified",
            "verifiedAt"
        ]
    );
    assert_eq!(d["domain"], DOMAIN, "stored lowercase");
    assert_eq!(d["statusPageId"], page.as_str());
    assert_eq!(d["verified"], false);
    assert_eq!(d["verifiedAt"], Value::Null);
    assert_eq!(d["verificationRecord"]["type"], "TXT");
    assert_eq!(d["verificationRecord"]["name"], CHALLENGE);
    let value = d["verificationRecord"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    let token = value.strip_prefix("tocsin-verification=").unwrap();
    assert!(token.len() >= 32, "{value}");
    assert!(d["createdAt"].as_str().unwrap().ends_with('Z'));
    let listed = json_of(
        u.call(Method::GET, &format!("/status-pages/{page}/domains"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(listed, json!([d.clone()]));

    // Unverified, the domain serves nothing: the host is not one of ours yet.
    let page_json = json_of(
        u.call(Method::GET, &format!("/status-pages/{page}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(page_json["customDomain"], Value::Null);
    let (status, _, body) = by_host(&srv, DOMAIN, "/").await;
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains("Acme Cloud Status"));

    // Verifying before the record exists: 409 saying what was expected and what was found.
    let e = expect_error(verify(&u, &page, DOMAIN).await, 409, "DOMAIN_NOT_VERIFIED").await;
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains(CHALLENGE), "{msg}");
    assert!(msg.contains(&value), "{msg}");
    assert!(msg.contains("found no TXT record"), "{msg}");

    // A record with another value: named in the refusal.
    dns.set_txt(CHALLENGE, &["tocsin-verification=somebody-else"])
        .await;
    let e = expect_error(verify(&u, &page, DOMAIN).await, 409, "DOMAIN_NOT_VERIFIED").await;
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("somebody-else"), "{msg}");
    assert!(msg.contains(&value), "{msg}");

    // The right record (beside an unrelated one): verified.
    dns.set_txt(CHALLENGE, &["v=other", &value]).await;
    let v = json_of(verify(&u, &page, DOMAIN).await, 200).await;
    assert_eq!(v["verified"], true);
    assert!(v["verifiedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v["verificationRecord"], d["verificationRecord"]);
    // Verifying again answers the same record, even once the TXT record is gone.
    dns.set_txt(CHALLENGE, &[]).await;
    let again = json_of(verify(&u, &page, DOMAIN).await, 200).await;
    assert_eq!(again["verifiedAt"], v["verifiedAt"]);

    let page_json = json_of(
        u.call(Method::GET, &format!("/status-pages/{page}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(page_json["customDomain"], DOMAIN);

    // Served by Host: the page at `/`, with or without a port, in any case.
    for host in [DOMAIN, "status.example.com:8443", "STATUS.example.com"] {
        let (status, ct, body) = by_host(&srv, host, "/").await;
        assert_eq!(status, 200, "{host}: {body}");
        assert!(ct.starts_with("text/html"), "{ct}");
        assert!(body.contains("Acme Cloud Status"), "{body}");
    }
    let (status, ct, body) = by_host(&srv, DOMAIN, "/feed.rss").await;
    assert_eq!(status, 200, "{body}");
    assert!(ct.contains("rss"), "{ct}");
    assert!(body.contains("Acme Cloud Status"), "{body}");
    let (status, ct, _) = by_host(&srv, DOMAIN, "/feed.atom").await;
    assert_eq!(status, 200);
    assert!(ct.contains("atom"), "{ct}");
    // The page's own absolute links (`/s/{slug}/...`) work on the domain too.
    let (status, ct, _) = by_host(&srv, DOMAIN, "/s/acme/feed.rss").await;
    assert_eq!(status, 200);
    assert!(ct.contains("rss"), "{ct}");
    // Other paths of the domain are no API: a 404 page.
    for path in [
        "/monitors",
        "/app/",
        "/status-pages",
        "/s/other",
        "/openapi.json",
    ] {
        let (status, ct, body) = by_host(&srv, DOMAIN, path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(ct.starts_with("text/html"), "{path}: {ct}");
    }

    // The server's own host is untouched: the API and `/` as before.
    let (status, _, _) = by_host(&srv, &srv.base["http://".len()..], "/").await;
    assert_eq!(status, 307, "/ redirects to the dashboard");
    json_of(u.call(Method::GET, "/status-pages", None).await, 200).await;
    let (status, _, _) = by_host(&srv, "localhost", "/healthz").await;
    assert_eq!(
        status, 200,
        "a host that is no domain reaches the application"
    );

    // Unpublishing takes the page off its domain at once (the host cache follows the change).
    json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{page}/unpublish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let (status, ct, body) = by_host(&srv, DOMAIN, "/").await;
    assert_eq!(status, 404, "{body}");
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(!body.contains("Acme Cloud Status"));
    json_of(
        u.call(Method::POST, &format!("/status-pages/{page}/publish"), None)
            .await,
        200,
    )
    .await;
    let (status, _, body) = by_host(&srv, DOMAIN, "/").await;
    assert_eq!(status, 200);
    assert!(body.contains("Acme Cloud Status"));

    // Every write is audited.
    let audit = json_of(u.call(Method::GET, "/audit-log", None).await, 200)
        .await
        .to_string();
    for action in ["status_page.domain.add", "status_page.domain.verify"] {
        assert!(audit.contains(action), "{action}");
    }

    // Deleting: the domain no longer serves the page, and is gone from the page.
    let res = u
        .call(
            Method::DELETE,
            &format!("/status-pages/{page}/domains/{DOMAIN}"),
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let (status, _, body) = by_host(&srv, DOMAIN, "/").await;
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains("Acme Cloud Status"));
    let page_json = json_of(
        u.call(Method::GET, &format!("/status-pages/{page}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(page_json["customDomain"], Value::Null);
    expect_error(
        u.call(
            Method::DELETE,
            &format!("/status-pages/{page}/domains/{DOMAIN}"),
            None,
        )
        .await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    assert!(json_of(u.call(Method::GET, "/audit-log", None).await, 200)
        .await
        .to_string()
        .contains("status_page.domain.delete"));
    srv.stop().await;
}

#[tokio::test]
async fn an_unpublished_pages_verified_domain_is_a_404_page() {
    let dns = TestDns::start().await;
    let srv = start(&dns, None).await;
    let u = srv.sign_up("draft@example.com").await;
    let page = create_page(&u, "Draft Status", "draft-page", false).await;
    let d = json_of(add(&u, &page, "draft.example.com").await, 201).await;
    let value = d["verificationRecord"]["value"].as_str().unwrap();
    dns.set_txt("_tocsin-challenge.draft.example.com", &[value])
        .await;
    json_of(verify(&u, &page, "draft.example.com").await, 200).await;
    for path in ["/", "/feed.rss", "/monitors"] {
        let (status, ct, body) = by_host(&srv, "draft.example.com", path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(ct.starts_with("text/html"), "{ct}");
        assert!(!body.contains("Draft Status"), "{body}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn validation_uniqueness_tenancy_and_capabilities() {
    let dns = TestDns::start().await;
    let t0 = 1_700_000_000_000;
    let clock = ManualClock::new(t0);
    let srv = start(&dns, Some(clock.clone())).await;
    let u = srv.sign_up("owner@example.com").await;
    let page = create_page(&u, "Owner", "owner-page", true).await;
    let second = create_page(&u, "Second", "second-page", true).await;

    for (bad, why) in [
        ("localhost", "two labels"),
        ("127.0.0.1", "not an IP address"),
        ("[::1]", "not an IP address"),
        ("status.example.com:8443", "without a port"),
        ("https://status.example.com", "no scheme"),
        ("status.example.com/path", "no path"),
        ("-bad.example.com", "not a valid label"),
        ("under_score.example.com", "not a valid label"),
        ("", "host name"),
    ] {
        field_error(add(&u, &page, bad).await, why).await;
    }
    let long = format!("{}.com", ["abcdefghij"; 23].join("."));
    field_error(add(&u, &page, &long).await, "at most 253").await;
    let res = u
        .call(
            Method::POST,
            &format!("/status-pages/{page}/domains"),
            Some(json!({"domain": "a.example.com", "extra": 1})),
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;

    // Unique across the server: another page of the workspace, another workspace.
    json_of(add(&u, &page, "taken.example.com").await, 201).await;
    expect_error(
        add(&u, &page, "taken.example.com").await,
        409,
        "DOMAIN_TAKEN",
    )
    .await;
    expect_error(
        add(&u, &second, "TAKEN.example.com").await,
        409,
        "DOMAIN_TAKEN",
    )
    .await;
    let other = srv.sign_up("other@example.com").await;
    let theirs = create_page(&other, "Theirs", "their-page", true).await;
    let e = expect_error(
        add(&other, &theirs, "taken.example.com").await,
        409,
        "DOMAIN_TAKEN",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("unique"), "{e}");

    // Tenancy: another workspace's page and domain are not found.
    expect_error(
        add(&other, &page, "mine.example.com").await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;
    expect_error(
        verify(&other, &page, "taken.example.com").await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;
    expect_error(
        verify(&other, &theirs, "taken.example.com").await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    expect_error(
        verify(&u, &second, "taken.example.com").await,
        404,
        "DOMAIN_NOT_FOUND",
    )
    .await;
    expect_error(
        other
            .call(Method::GET, &format!("/status-pages/{page}/domains"), None)
            .await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;

    // A claim never verified blocks others for 7 days, then is released to a new claim.
    clock.set_ms(t0 + 6 * 86_400_000);
    expect_error(
        add(&other, &theirs, "taken.example.com").await,
        409,
        "DOMAIN_TAKEN",
    )
    .await;
    clock.set_ms(t0 + 8 * 86_400_000);
    let d = json_of(add(&other, &theirs, "taken.example.com").await, 201).await;
    assert_eq!(d["statusPageId"], theirs.as_str());
    let mine = json_of(
        u.call(Method::GET, &format!("/status-pages/{page}/domains"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(mine, json!([]));
    // A verified claim is never released.
    let value = d["verificationRecord"]["value"].as_str().unwrap();
    dns.set_txt("_tocsin-challenge.taken.example.com", &[value])
        .await;
    json_of(verify(&other, &theirs, "taken.example.com").await, 200).await;
    clock.set_ms(t0 + 10 * 86_400_000);
    expect_error(
        add(&u, &page, "taken.example.com").await,
        409,
        "DOMAIN_TAKEN",
    )
    .await;

    // Capabilities: reading needs status_pages:read, adding and verifying status_pages:write.
    let reader = Bearer::new(&srv.base, &u.token(&["status_pages:read"]).await);
    json_of(
        reader
            .call(Method::GET, &format!("/status-pages/{page}/domains"), None)
            .await,
        200,
    )
    .await;
    let res = reader
        .call(
            Method::POST,
            &format!("/status-pages/{page}/domains"),
            Some(json!({"domain": "reader.example.com"})),
        )
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let res = reader
        .call(
            Method::POST,
            &format!("/status-pages/{page}/domains/taken.example.com/verify"),
            None,
        )
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let writer = Bearer::new(&srv.base, &u.token(&["status_pages:write"]).await);
    json_of(
        writer
            .call(
                Method::POST,
                &format!("/status-pages/{page}/domains"),
                Some(json!({"domain": "writer.example.com"})),
            )
            .await,
        201,
    )
    .await;
    srv.stop().await;
}

/// Several nodes: a change made through one node reaches the other's host cache through the
/// change feed, well before the cache's own time limit.
#[tokio::test]
async fn another_node_follows_changes_through_the_feed() {
    if common::pg_admin_url().is_none() {
        return;
    }
    let dns = TestDns::start().await;
    let a = start(&dns, None).await;
    let resolver = dns.addr;
    let b = a
        .start_beside(Options {
            clock: None,
            tweak: Some(Box::new(move |c| c.dns_resolver = Some(resolver))),
        })
        .await
        .unwrap();
    let u = a.sign_up("nodes@example.com").await;
    let page = create_page(&u, "Cluster Status", "cluster", true).await;
    let d = json_of(add(&u, &page, "nodes.example.com").await, 201).await;
    let value = d["verificationRecord"]["value"].as_str().unwrap();
    dns.set_txt("_tocsin-challenge.nodes.example.com", &[value])
        .await;

    // Node b remembers "not one of ours" before the verification...
    let (status, _, _) = by_host(&b, "nodes.example.com", "/").await;
    assert_ne!(status, 200);
    json_of(verify(&u, &page, "nodes.example.com").await, 200).await;
    // ...and forgets it when node a announces the change.
    let until = Instant::now() + Duration::from_secs(4);
    loop {
        let (status, _, body) = by_host(&b, "nodes.example.com", "/").await;
        if status == 200 {
            assert!(body.contains("Cluster Status"));
            break;
        }
        assert!(Instant::now() < until, "node b still answers {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{page}/unpublish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let until = Instant::now() + Duration::from_secs(4);
    loop {
        let (status, _, _) = by_host(&b, "nodes.example.com", "/").await;
        if status == 404 {
            break;
        }
        assert!(Instant::now() < until, "node b still answers {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.stop().await;
    a.stop().await;
}
