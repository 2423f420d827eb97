//! Private status pages through the real server. A `PASSWORD` page shows nothing of itself
//! without access on any public path (summary, incidents, postmortem JSON: the draft's 404;
//! the HTML page and postmortem page: a sign-in form naming nothing; the feeds: 404), and
//! every answer about it is `private, no-store`. A wrong password is refused, a right one sets
//! a signed, HttpOnly, SameSite=Lax page cookie that opens every path; a new password makes
//! that cookie worthless; attempts are limited per IP. A publishable key still reads it (an
//! explicit grant). An `EMAIL_DOMAINS` page admits signed-in people at an allowed domain and
//! the workspace's members, and tells others how to get in. At a custom domain the same
//! holds, and the password form sends the reader back to `/`. Bad access settings name their
//! field.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::domains::{self, by_host, TestDns, CHALLENGE, DOMAIN};
use common::pages::{create_incident, create_page, put_components};
use common::{expect_error, json_of, no_redirects, Options, TestServer, User};
use reqwest::header::{CACHE_CONTROL, COOKIE, HOST, LOCATION, SET_COOKIE};
use reqwest::{Method, Response};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";
const NAME: &str = "Hidden Corp";
const COMPONENT: &str = "Secret Database";

/// `GET path` with an optional `Cookie` header.
async fn get(srv: &TestServer, path: &str, cookie: Option<&str>) -> Response {
    let mut req = no_redirects().get(srv.url(path));
    if let Some(c) = cookie {
        req = req.header(COOKIE, c);
    }
    req.send().await.unwrap()
}

/// Posts the password form.
async fn enter(srv: &TestServer, slug: &str, password: &str, host: Option<&str>) -> Response {
    let mut req = no_redirects()
        .post(srv.url(&format!("/s/{slug}/access")))
        .form(&[("password", password)]);
    if let Some(h) = host {
        req = req.header(HOST, h);
    }
    req.send().await.unwrap()
}

/// The `name=value` of a Set-Cookie answer, after checking its attributes.
fn page_cookie(res: &Response, page_id: &str) -> String {
    let set = res.headers()[SET_COOKIE].to_str().unwrap().to_string();
    let (pair, attrs) = set.split_once(';').unwrap();
    assert!(
        pair.starts_with(&format!("tocsin_page_{page_id}=")),
        "{set}"
    );
    for a in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age="] {
        assert!(attrs.contains(a), "{a} in {set}");
    }
    pair.to_string()
}

fn cache_control(res: &Response) -> String {
    res.headers()[CACHE_CONTROL].to_str().unwrap().to_string()
}

/// A published PASSWORD page with a component, a resolved incident and its published
/// postmortem: `(page id, postmortem id)`.
async fn private_page(u: &User, slug: &str) -> (String, String) {
    let page = create_page(
        u,
        json!({"name": NAME, "slug": slug, "published": true,
               "access": {"visibility": "PASSWORD", "password": PASSWORD}}),
    )
    .await;
    let id = page["id"].as_str().unwrap().to_string();
    put_components(u, &id, json!([{"name": COMPONENT}])).await;
    let incident = create_incident(
        u,
        json!({"statusPageId": id, "title": "Secret outage", "visibility": "PUBLISHED",
               "status": "RESOLVED"}),
    )
    .await;
    let pm = json_of(
        u.call(
            Method::POST,
            "/postmortems",
            Some(
                json!({"incidentId": incident["incident"]["id"], "title": "Secret write-up",
                        "body": "It broke."}),
            ),
        )
        .await,
        201,
    )
    .await;
    let pm_id = pm["id"].as_str().unwrap().to_string();
    json_of(
        u.call(Method::POST, &format!("/postmortems/{pm_id}/publish"), None)
            .await,
        200,
    )
    .await;
    (id, pm_id)
}

/// Every public path of the page, read with `cookie`: asserts all are hidden (nothing of the
/// page in any body, the draft's 404 for JSON and feeds, the sign-in page for HTML).
async fn assert_hidden(srv: &TestServer, slug: &str, pm: &str, cookie: Option<&str>) {
    for path in [
        format!("/api/v1/status-pages/{slug}/summary"),
        format!("/api/v1/status-pages/{slug}/incidents"),
        format!("/api/v1/status-pages/{slug}/postmortems/{pm}"),
    ] {
        expect_error(get(srv, &path, cookie).await, 404, "STATUS_PAGE_NOT_FOUND").await;
    }
    for path in [
        format!("/s/{slug}/feed.rss"),
        format!("/s/{slug}/feed.atom"),
    ] {
        let res = get(srv, &path, cookie).await;
        assert_eq!(res.status().as_u16(), 404, "{path}");
        let body = res.text().await.unwrap();
        assert!(!body.contains(NAME) && !body.contains("Secret"), "{body}");
    }
    for path in [format!("/s/{slug}"), format!("/s/{slug}/postmortems/{pm}")] {
        let res = get(srv, &path, cookie).await;
        assert_eq!(res.status().as_u16(), 401, "{path}");
        assert_eq!(cache_control(&res), "private, no-store", "{path}");
        let body = res.text().await.unwrap();
        assert!(body.contains("Private status page"), "{body}");
        assert!(
            body.contains(&format!("action=\"/s/{slug}/access\"")),
            "{body}"
        );
        assert!(
            !body.contains(NAME) && !body.contains(COMPONENT) && !body.contains("Secret"),
            "{path} leaks: {body}"
        );
    }
}

/// Every public path of the page, read with `cookie`: asserts all show it, privately.
async fn assert_shown(srv: &TestServer, slug: &str, pm: &str, cookie: Option<&str>) {
    let s = json_of(
        get(srv, &format!("/api/v1/status-pages/{slug}/summary"), cookie).await,
        200,
    )
    .await;
    assert_eq!(s["page"]["name"], NAME);
    assert_eq!(s["components"][0]["name"], COMPONENT);
    for (path, needle) in [
        (format!("/s/{slug}"), COMPONENT),
        (format!("/s/{slug}/feed.rss"), "Secret outage"),
        (format!("/s/{slug}/feed.atom"), "Secret outage"),
        (format!("/s/{slug}/postmortems/{pm}"), "Secret write-up"),
        (
            format!("/api/v1/status-pages/{slug}/incidents"),
            "Secret outage",
        ),
        (
            format!("/api/v1/status-pages/{slug}/postmortems/{pm}"),
            "Secret write-up",
        ),
    ] {
        let res = get(srv, &path, cookie).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
        assert_eq!(cache_control(&res), "private, no-store", "{path}");
        let body = res.text().await.unwrap();
        assert!(body.contains(needle), "{path}: {body}");
    }
}

#[tokio::test]
async fn a_password_page_opens_only_with_its_cookie_until_the_password_changes() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("owner@hidden.example").await;
    let (id, pm) = private_page(&u, "hidden-pw").await;

    // The API shows the setting, never the password or its hash.
    let page = json_of(
        u.call(Method::GET, &format!("/status-pages/{id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(
        page["access"],
        json!({"visibility": "PASSWORD", "passwordSet": true, "allowedEmailDomains": []})
    );
    assert!(!page.to_string().contains(PASSWORD));
    assert!(!page.to_string().contains("argon2"));

    // Without access: nothing, on every path.
    assert_hidden(&srv, "hidden-pw", &pm, None).await;
    assert_hidden(&srv, "hidden-pw", &pm, Some("tocsin_page_x=forged")).await;

    // A wrong password: the form again, saying so, and no cookie.
    let res = enter(&srv, "hidden-pw", "not the password", None).await;
    assert_eq!(res.status().as_u16(), 401);
    assert!(res.headers().get(SET_COOKIE).is_none());
    assert!(res.text().await.unwrap().contains("not right"));

    // The right one: the page's cookie, and back to the page.
    let res = enter(&srv, "hidden-pw", PASSWORD, None).await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()[LOCATION], "/s/hidden-pw");
    let cookie = page_cookie(&res, &id);
    assert_shown(&srv, "hidden-pw", &pm, Some(&cookie)).await;
    // A cookie altered by one character is worthless.
    let mut forged = cookie.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert_hidden(&srv, "hidden-pw", &pm, Some(&forged)).await;

    // A publishable key is the owner's grant: the embed API still reads the page, privately.
    let k = json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{id}/publishable-keys"),
            Some(json!({"name": "site"})),
        )
        .await,
        201,
    )
    .await;
    let key = k["key"].as_str().unwrap();
    let res = get(&srv, &format!("/api/v1/embed/status?token={key}"), None).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(cache_control(&res), "private, no-store");
    assert_eq!(res.json::<Value>().await.unwrap()["page"]["name"], NAME);

    // A new password: the old cookie opens nothing any more; the new password does.
    json_of(
        u.call(
            Method::PATCH,
            &format!("/status-pages/{id}"),
            Some(json!({"access": {"password": "a brand new secret"}})),
        )
        .await,
        200,
    )
    .await;
    assert_hidden(&srv, "hidden-pw", &pm, Some(&cookie)).await;
    assert_eq!(
        enter(&srv, "hidden-pw", PASSWORD, None)
            .await
            .status()
            .as_u16(),
        401
    );
    let res = enter(&srv, "hidden-pw", "a brand new secret", None).await;
    assert_eq!(res.status().as_u16(), 303);
    let fresh = page_cookie(&res, &id);
    assert_shown(&srv, "hidden-pw", &pm, Some(&fresh)).await;

    // Public again: anyone reads it, and caches may keep it.
    let page = json_of(
        u.call(
            Method::PATCH,
            &format!("/status-pages/{id}"),
            Some(json!({"access": {"visibility": "PUBLIC"}})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(page["access"]["visibility"], "PUBLIC");
    let res = get(&srv, "/s/hidden-pw", None).await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(cache_control(&res).starts_with("public"));
    // The form has nothing to open on a public page.
    assert_eq!(
        enter(&srv, "hidden-pw", "a brand new secret", None)
            .await
            .status()
            .as_u16(),
        404
    );
    srv.stop().await;
}

#[tokio::test]
async fn password_attempts_are_limited_per_address() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| c.rate_limits.sign_in_per_ip = 3)),
    })
    .await;
    let u = srv.sign_up("limits@hidden.example").await;
    private_page(&u, "hidden-limit").await;
    for _ in 0..3 {
        let res = enter(&srv, "hidden-limit", "guess", None).await;
        assert_eq!(res.status().as_u16(), 401);
    }
    // The budget is spent: even the right password waits, told how long.
    let res = enter(&srv, "hidden-limit", PASSWORD, None).await;
    assert_eq!(res.status().as_u16(), 429);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(res.headers().get(SET_COOKIE).is_none());
    srv.stop().await;
}

#[tokio::test]
async fn an_email_domain_page_admits_people_of_allowed_domains_and_members() {
    let srv = TestServer::start().await;
    let owner = srv.sign_up("owner@acme.example").await;
    let page = create_page(
        &owner,
        json!({"name": NAME, "slug": "hidden-domains", "published": true,
               "access": {"visibility": "EMAIL_DOMAINS",
                          "allowedEmailDomains": ["acme.example", "partner.example"]}}),
    )
    .await;
    assert_eq!(
        page["access"],
        json!({"visibility": "EMAIL_DOMAINS", "passwordSet": false,
               "allowedEmailDomains": ["acme.example", "partner.example"]})
    );
    let id = page["id"].as_str().unwrap();
    put_components(&owner, id, json!([{"name": COMPONENT}])).await;

    // Anonymous: the sign-in page explains how to get in; the JSON and feeds are 404.
    let res = get(&srv, "/s/hidden-domains", None).await;
    assert_eq!(res.status().as_u16(), 401);
    assert_eq!(cache_control(&res), "private, no-store");
    let body = res.text().await.unwrap();
    assert!(body.contains("work email address"), "{body}");
    assert!(
        !body.contains(NAME) && !body.contains("acme.example"),
        "{body}"
    );
    assert!(!body.contains("<form"), "{body}");
    expect_error(
        get(&srv, "/api/v1/status-pages/hidden-domains/summary", None).await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;

    // Signed-in people, each in a workspace of their own: by their verified email's domain.
    // Until verified, an address at an allowed domain proves nothing and admits nobody.
    let colleague = srv.sign_up("ann@partner.example").await;
    let stranger = srv.sign_up("eve@acme.example.evil.example").await;
    let res = colleague
        .client
        .get(srv.url("/s/hidden-domains"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 401, "an unverified address");
    assert!(!res.text().await.unwrap().contains(COMPONENT));
    srv.verify_email("ann@partner.example").await;
    srv.verify_email("eve@acme.example.evil.example").await;
    for (who, admitted) in [(&owner, true), (&colleague, true), (&stranger, false)] {
        let res = who
            .client
            .get(srv.url("/s/hidden-domains"))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let body = res.text().await.unwrap();
        if admitted {
            assert_eq!(status, 200, "{}", who.email);
            assert!(body.contains(COMPONENT), "{}", who.email);
        } else {
            assert_eq!(status, 401, "{}", who.email);
            assert!(!body.contains(COMPONENT), "{}", who.email);
        }
        let res = who
            .client
            .get(srv.url("/api/v1/status-pages/hidden-domains/summary"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status().as_u16(),
            if admitted { 200 } else { 404 },
            "{}",
            who.email
        );
    }
    // There is no password to enter on such a page.
    assert_eq!(
        enter(&srv, "hidden-domains", "anything at all", None)
            .await
            .status()
            .as_u16(),
        404
    );

    // A member of the workspace is let in whatever their address: the stranger, invited.
    common::join(&owner, &stranger, "member").await;
    let res = stranger
        .client
        .get(srv.url("/s/hidden-domains"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "a member is let in");
    srv.stop().await;
}

#[tokio::test]
async fn bad_access_settings_name_their_field() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("fields@hidden.example").await;
    let page = create_page(&u, json!({"name": "x", "slug": "hidden-fields"})).await;
    let id = page["id"].as_str().unwrap();
    assert_eq!(
        page["access"],
        json!({"visibility": "PUBLIC", "passwordSet": false, "allowedEmailDomains": []})
    );
    for (access, field) in [
        (json!({"visibility": "PASSWORD"}), "access.password"),
        (
            json!({"visibility": "PASSWORD", "password": "short"}),
            "access.password",
        ),
        (
            json!({"visibility": "EMAIL_DOMAINS"}),
            "access.allowedEmailDomains",
        ),
        (
            json!({"visibility": "EMAIL_DOMAINS", "allowedEmailDomains": ["ok.example", "Not A Domain"]}),
            "access.allowedEmailDomains.1",
        ),
        (json!({"visibility": "SECRET"}), "access.visibility"),
        (json!({"passwordHash": "x"}), "access.passwordHash"),
    ] {
        let res = u
            .call(
                Method::PATCH,
                &format!("/status-pages/{id}"),
                Some(json!({ "access": access })),
            )
            .await;
        let body = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(body["field"], field, "{access}: {body}");
    }
    // Nothing changed.
    let page = json_of(
        u.call(Method::GET, &format!("/status-pages/{id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(page["access"]["visibility"], "PUBLIC");
    srv.stop().await;
}

#[tokio::test]
async fn at_a_custom_domain_a_private_page_asks_for_its_password_and_returns_to_slash() {
    let dns = TestDns::start().await;
    let srv = domains::start(&dns, None).await;
    let u = srv.sign_up("domain@hidden.example").await;
    let (id, _pm) = private_page(&u, "hidden-domain").await;
    let d = json_of(domains::add(&u, &id, DOMAIN).await, 201).await;
    let value = d["verificationRecord"]["value"].as_str().unwrap();
    dns.set_txt(CHALLENGE, &[value]).await;
    json_of(domains::verify(&u, &id, DOMAIN).await, 200).await;

    let (status, _, body) = by_host(&srv, DOMAIN, "/").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body.contains("Private status page") && !body.contains(NAME),
        "{body}"
    );
    for path in ["/feed.rss", "/feed.atom"] {
        let (status, _, body) = by_host(&srv, DOMAIN, path).await;
        assert_eq!(status, 404, "{path}");
        assert!(!body.contains("Secret"), "{body}");
    }

    // The form posts to the page's own path, which the domain serves; back to `/` after.
    let res = enter(&srv, "hidden-domain", PASSWORD, Some(DOMAIN)).await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(res.headers()[LOCATION], "/");
    let cookie = page_cookie(&res, &id);
    let res = no_redirects()
        .get(srv.url("/"))
        .header(HOST, DOMAIN)
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(cache_control(&res), "private, no-store");
    assert!(res.text().await.unwrap().contains(COMPONENT));
    srv.stop().await;
}
