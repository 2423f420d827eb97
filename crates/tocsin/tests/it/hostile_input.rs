//! Hostile input through the real server, on whichever backend the run selects: a NUL
//! character anywhere in a request (path, query, JSON body, form body) is refused at the edge
//! with a 4xx naming what held it, never a 500; a JSON body must be exactly one JSON value;
//! and names shown to people refuse bidirectional overrides, noncharacters and private-use
//! code points.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::monitors::create;
use common::{expect_error, json_of, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

/// Sends `body` as it is, as JSON, with the person's session.
async fn raw(u: &User, method: Method, path: &str, body: &str) -> reqwest::Response {
    u.client
        .request(method, format!("{}{}", u.base, path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// Asserts 400 `VALIDATION_ERROR` on `field`; returns the message.
async fn refused_field(res: reqwest::Response, field: &str, what: &str) -> String {
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], field, "{what}: {body}");
    body["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_nul_character_is_refused_at_the_edge_never_a_500() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("nul@example.com").await;
    let push = create(&u, json!({"name": "job", "type": "PUSH", "interval": 3600})).await;
    let push_token = push["pushToken"].as_str().unwrap().to_string();
    let page = json_of(
        u.call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Acme", "slug": "acme", "published": true})),
        )
        .await,
        201,
    )
    .await;
    let page_id = page["id"].as_str().unwrap().to_string();
    let anonymous = reqwest::Client::new();

    // Links people open answer as pages, never the API's envelope.
    for (method, path) in [
        (Method::GET, "/api/v1/subscribers/unsubscribe?token=a%00b"),
        (Method::POST, "/api/v1/subscribers/verify?token=a%00b"),
        (Method::GET, "/s/acme?x=%00"),
    ] {
        let res = anonymous
            .request(method, srv.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400, "{path}");
        let ct = res.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("text/html"), "{path}: {ct}");
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    }

    // Path ids: the route's own not-found, as for any unknown id.
    for (path, code) in [
        (
            "/api/v1/status-pages/a%00b/summary",
            "STATUS_PAGE_NOT_FOUND",
        ),
        ("/api/v1/status-pages/%00/summary", "STATUS_PAGE_NOT_FOUND"),
        ("/monitors/a%00b", "MONITOR_NOT_FOUND"),
        ("/alerts/a%00b", "ALERT_NOT_FOUND"),
        ("/status-pages/a%00b", "STATUS_PAGE_NOT_FOUND"),
    ] {
        let res = u.call(Method::GET, path, None).await;
        expect_error(res, 404, code).await;
    }
    let unknown = anonymous
        .get(srv.url("/api/v1/status-pages/nothing-here/summary"))
        .send()
        .await
        .unwrap();
    let unknown_code = expect_error(unknown, 404, "STATUS_PAGE_NOT_FOUND").await;
    let res = anonymous
        .get(srv.url("/api/v1/status-pages/a%00b/summary"))
        .send()
        .await
        .unwrap();
    let nul_code = expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;
    assert_eq!(nul_code["message"], unknown_code["message"]);
    let res = anonymous.post(srv.url("/push/a%00b")).send().await.unwrap();
    expect_error(res, 404, "PUSH_TOKEN_NOT_FOUND").await;
    let res = anonymous.get(srv.url("/s/a%00b")).send().await.unwrap();
    assert_eq!(res.status(), 404);
    let res = u
        .call(
            Method::DELETE,
            &format!("/monitors/{}%00", push["id"].as_str().unwrap()),
            None,
        )
        .await;
    expect_error(res, 404, "MONITOR_NOT_FOUND").await;
    // ... and the monitor whose id the NUL followed is untouched.
    json_of(
        u.call(
            Method::GET,
            &format!("/monitors/{}", push["id"].as_str().unwrap()),
            None,
        )
        .await,
        200,
    )
    .await;

    // Query parameters: 400 naming the parameter.
    for (path, field) in [
        ("/alerts?monitorId=a%00b", "monitorId"),
        ("/monitors?tag=%00", "tag"),
        ("/incidents?statusPageId=x%00", "statusPageId"),
        ("/maintenance-windows?monitorId=%00", "monitorId"),
        ("/api/v1/status-pages/acme/incidents?limit=%00", "limit"),
        ("/audit-log?action=a%00", "action"),
    ] {
        let res = u.call(Method::GET, path, None).await;
        refused_field(res, field, path).await;
    }
    let res = anonymous
        .get(srv.url(&format!("/push/{push_token}?msg=done%00")))
        .send()
        .await
        .unwrap();
    refused_field(res, "msg", "push message").await;

    // JSON bodies: 400 naming the field, wherever it is.
    let res = anonymous
        .post(srv.url("/auth/sign-in/email"))
        .json(&json!({"email": "ada\u{0}@example.com", "password": "x"}))
        .send()
        .await
        .unwrap();
    refused_field(res, "email", "sign-in").await;
    let res = anonymous
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "eve@example.com", "password": "correct horse battery", "name": "\u{0}"}))
        .send()
        .await
        .unwrap();
    refused_field(res, "name", "sign-up").await;
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(
                json!({"name": "api", "type": "TCP", "host": "127.0.0.1", "port": 9,
                        "description": "a\u{0}b"}),
            ),
        )
        .await;
    refused_field(res, "description", "monitor description").await;
    let res = u
        .call(
            Method::PUT,
            &format!("/status-pages/{page_id}/components"),
            Some(json!([{"name": "API"}, {"name": "Docs", "group": "x\u{0}"}])),
        )
        .await;
    refused_field(res, "1.group", "component group").await;
    let res = u
        .call(
            Method::PATCH,
            &format!("/status-pages/{page_id}"),
            Some(json!({"branding": {"footerLinks": [{"label": "\u{0}", "url": "https://example.com"}]}})),
        )
        .await;
    refused_field(res, "branding.footerLinks.0.label", "nested").await;
    let res = u
        .call(Method::POST, "/projects", Some(json!({"na\u{0}me": "x"})))
        .await;
    refused_field(res, "name", "a key").await;
    let res = raw(&u, Method::POST, "/projects", "\"\\u0000\"").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    // An escaped backslash before `u0000` is text, not a NUL.
    let res = raw(&u, Method::POST, "/projects", r#"{"name": "C:\\u0000"}"#).await;
    assert_eq!(res.status(), 201);

    // Form bodies: 400 naming the parameter.
    let res = anonymous
        .post(srv.url("/auth/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=authorization_code&code=a%00b&client_id=c")
        .send()
        .await
        .unwrap();
    refused_field(res, "code", "OAuth form").await;
    let res = anonymous
        .post(srv.url("/s/acme/subscribe"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("email=a%00b%40example.com")
        .send()
        .await
        .unwrap();
    // The page's own form answers as a page, like its other refusals.
    assert_eq!(res.status(), 400);
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/html"), "subscribe form: {ct}");

    // Nothing above broke the server.
    json_of(u.call(Method::GET, "/monitors", None).await, 200).await;
    srv.stop().await;
}

#[tokio::test]
async fn a_json_body_must_be_exactly_one_json_value() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("trailing@example.com").await;
    let m = create(
        &u,
        json!({"name": "api", "type": "TCP", "host": "127.0.0.1", "port": 9}),
    )
    .await;
    let mid = m["id"].as_str().unwrap().to_string();
    let page = json_of(
        u.call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Acme", "slug": "acme"})),
        )
        .await,
        201,
    )
    .await;
    let pid = page["id"].as_str().unwrap().to_string();
    let writes: Vec<(Method, String, Value)> = vec![
        (Method::POST, "/projects".into(), json!({"name": "Core"})),
        (
            Method::POST,
            "/monitors".into(),
            json!({"name": "db", "type": "TCP", "host": "127.0.0.1", "port": 5}),
        ),
        (
            Method::PATCH,
            format!("/monitors/{mid}"),
            json!({"name": "renamed"}),
        ),
        (
            Method::POST,
            "/status-pages".into(),
            json!({"name": "Other", "slug": "other"}),
        ),
        (
            Method::PUT,
            format!("/status-pages/{pid}/components"),
            json!([{"name": "API"}]),
        ),
        (
            Method::POST,
            "/api-keys".into(),
            json!({"name": "ci", "permissions": ["identity:read"]}),
        ),
        (
            Method::POST,
            "/incidents".into(),
            json!({"statusPageId": pid, "title": "Down", "message": "Looking"}),
        ),
        (
            Method::PATCH,
            "/workspace/settings".into(),
            json!({"name": "Renamed"}),
        ),
    ];
    for (method, path, body) in &writes {
        let one = body.to_string();
        for bad in [
            format!("{one} trailing garbage {{"),
            format!("{one}{one}"),
            format!("{one} 1"),
            format!("{one}]"),
        ] {
            let res = raw(&u, method.clone(), path, &bad).await;
            let err = expect_error(res, 400, "VALIDATION_ERROR").await;
            assert!(
                err["message"]
                    .as_str()
                    .unwrap()
                    .contains("after the JSON document"),
                "{method} {path} {bad}: {err}"
            );
        }
    }
    // Nothing was written by the refused bodies.
    let projects = json_of(u.call(Method::GET, "/projects", None).await, 200).await;
    assert!(
        !projects.to_string().contains("Core"),
        "a refused body created a project: {projects}"
    );
    let monitor = json_of(
        u.call(Method::GET, &format!("/monitors/{mid}"), None).await,
        200,
    )
    .await;
    assert_eq!(monitor["name"], "api");
    // Whitespace around the one value is fine.
    for (method, path, body) in &writes {
        let res = raw(&u, method.clone(), path, &format!(" \n{body}\r\n\t ")).await;
        assert!(
            res.status().is_success(),
            "{method} {path}: {}",
            res.status()
        );
    }
    // The sign-in form's body too.
    let res = reqwest::Client::new()
        .post(srv.url("/auth/sign-in/email"))
        .header("content-type", "application/json")
        .body(r#"{"email": "trailing@example.com", "password": "correct horse battery"}{}"#)
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "VALIDATION_ERROR").await;
    srv.stop().await;
}

#[tokio::test]
async fn names_refuse_bidi_overrides_noncharacters_and_private_use() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("names@example.com").await;
    let m = create(
        &u,
        json!({"name": "api", "type": "TCP", "host": "127.0.0.1", "port": 9}),
    )
    .await;
    let mid = m["id"].as_str().unwrap().to_string();
    let page = json_of(
        u.call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Acme", "slug": "acme"})),
        )
        .await,
        201,
    )
    .await;
    let pid = page["id"].as_str().unwrap().to_string();
    let hook = json_of(
        u.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "hook", "type": "WEBHOOK", "config": {"url": "https://example.com/h"}})),
        )
        .await,
        201,
    )
    .await;
    let cid = hook["id"].as_str().unwrap().to_string();

    type Case = (Method, String, fn(&str) -> Value, &'static str);
    let cases: Vec<Case> = vec![
        (
            Method::POST,
            "/monitors".into(),
            |n| json!({"name": n, "type": "TCP", "host": "127.0.0.1", "port": 9}),
            "name",
        ),
        (
            Method::PATCH,
            format!("/monitors/{mid}"),
            |n| json!({"tags": ["ok", n]}),
            "tags.1",
        ),
        (
            Method::PUT,
            format!("/status-pages/{pid}/components"),
            |n| json!([{"name": n}]),
            "0.name",
        ),
        (
            Method::PUT,
            format!("/status-pages/{pid}/components"),
            |n| json!([{"name": "API", "group": n}]),
            "0.group",
        ),
        (
            Method::POST,
            "/status-pages".into(),
            |n| json!({"name": n, "slug": "spoof"}),
            "name",
        ),
        (
            Method::PATCH,
            format!("/status-pages/{pid}"),
            |n| json!({"name": n}),
            "name",
        ),
        (
            Method::POST,
            "/notification-channels".into(),
            |n| json!({"name": n, "type": "WEBHOOK", "config": {"url": "https://example.com/h"}}),
            "name",
        ),
        (
            Method::POST,
            "/projects".into(),
            |n| json!({"name": n}),
            "name",
        ),
        (
            Method::POST,
            "/escalation-policies".into(),
            |n| json!({"name": n, "steps": []}),
            "name",
        ),
        (
            Method::POST,
            "/incidents".into(),
            |n| json!({"statusPageId": "x", "title": n, "message": "m"}),
            "title",
        ),
        (
            Method::POST,
            "/api-keys".into(),
            |n| json!({"name": n, "permissions": ["identity:read"]}),
            "name",
        ),
        (
            Method::PATCH,
            "/workspace/settings".into(),
            |n| json!({"name": n}),
            "name",
        ),
    ];
    for bad in [
        "Status\u{202E}nwod",
        "API\u{FFFE}",
        "API\u{10FFFF}",
        "a\u{2066}b",
        "\u{E000}x",
    ] {
        for (method, path, body, field) in &cases {
            let res = u.call(method.clone(), path, Some(body(bad))).await;
            let message = refused_field(res, field, &format!("{method} {path} {bad:?}")).await;
            assert!(message.contains("printable"), "{message}");
        }
        let res = reqwest::Client::new()
            .post(srv.url("/auth/sign-up/email"))
            .json(&json!({"email": "bidi@example.com", "password": "correct horse battery", "name": bad}))
            .send()
            .await
            .unwrap();
        refused_field(res, "name", "user name").await;
    }
    let _ = cid;
    // Names in any script, with emoji and their joiners, stay welcome.
    for good in ["Zürich — 東京", "שלום API", "👩\u{200D}💻 on call"] {
        json_of(
            u.call(Method::POST, "/projects", Some(json!({"name": good})))
                .await,
            201,
        )
        .await;
    }
    srv.stop().await;
}
