//! Postmortems end to end over HTTP: refused for an incident that is not resolved, written,
//! edited under the version lock, published, listed and deleted, with the exact record keys;
//! Markdown kept as written while `bodyHtml` renders it with scripts, event handlers and
//! `javascript:` links made inert; validation fields, capabilities and tenancy; deleting the
//! incident takes its postmortems; and the public pages' reads
//! (`store::postmortems::published_for_page`, `published_on_page`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::clock::{rfc, T0};
use common::pages::{create_incident, page};
use common::{expect_error, ids, json_of, Bearer, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

const MINUTE: i64 = 60_000;

const MARKDOWN: &str = "# What happened\n\n\
    The **primary database** ran out of disk.\n\n\
    <script>alert('pwned')</script>\n\n\
    <img src=\"x\" onerror=\"alert(1)\">\n\n\
    [a trap](javascript:alert(2)) and [the runbook](https://example.com/runbook)\n\n\
    - [x] grow the volume\n- [ ] alert on disk\n";

async fn resolved_incident(u: &User, page_id: &str) -> String {
    let v = create_incident(
        u,
        json!({"statusPageId": page_id, "title": "Database full", "status": "RESOLVED"}),
    )
    .await;
    v["incident"]["id"].as_str().unwrap().to_string()
}

async fn create(u: &User, body: Value) -> Value {
    json_of(u.call(Method::POST, "/postmortems", Some(body)).await, 201).await
}

#[tokio::test]
async fn written_for_a_resolved_incident_edited_published_and_deleted() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("postmortems@example.com").await;
    let pid = page(&u, "pm-life").await;
    let v = create_incident(&u, json!({"statusPageId": pid, "title": "Disk full"})).await;
    let incident = v["incident"]["id"].as_str().unwrap().to_string();

    // Not resolved yet: refused, with the precise code.
    let body = json!({"incidentId": incident, "title": "Disk full", "body": MARKDOWN});
    let err = expect_error(
        u.call(Method::POST, "/postmortems", Some(body.clone()))
            .await,
        409,
        "INCIDENT_NOT_RESOLVED",
    )
    .await;
    assert!(err["message"].as_str().unwrap().contains("INVESTIGATING"));
    json_of(
        u.call(
            Method::POST,
            &format!("/incidents/{incident}/resolve"),
            None,
        )
        .await,
        200,
    )
    .await;

    clock.advance_ms(MINUTE);
    let pm = create(&u, body).await;
    let keys: BTreeSet<&str> = pm.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "id",
            "workspaceId",
            "incidentId",
            "statusPageId",
            "title",
            "body",
            "bodyHtml",
            "published",
            "publishedAt",
            "createdAt",
            "updatedAt"
        ])
    );
    let id = pm["id"].as_str().unwrap().to_string();
    let path = format!("/postmortems/{id}");
    assert_eq!(pm["workspaceId"], u.workspace_id.as_str());
    assert_eq!(pm["incidentId"], incident.as_str());
    assert_eq!(pm["statusPageId"], pid.as_str());
    assert_eq!(pm["body"], MARKDOWN, "the Markdown is kept as written");
    assert_eq!(pm["published"], false);
    assert_eq!(pm["publishedAt"], Value::Null);
    assert_eq!(pm["createdAt"], rfc(T0 + MINUTE));

    // bodyHtml: rendered, and nothing in it can run.
    let html = pm["bodyHtml"].as_str().unwrap();
    assert!(html.contains("<h1>What happened</h1>"), "{html}");
    assert!(html.contains("<strong>primary database</strong>"), "{html}");
    assert!(
        html.contains("href=\"https://example.com/runbook\""),
        "{html}"
    );
    let lower = html.to_lowercase();
    for inert in ["<script", "onerror", "javascript:", "alert('pwned')"] {
        assert!(!lower.contains(inert), "{inert} in {html}");
    }

    // GET with ETag; PATCH under the version lock.
    let res = u.call(Method::GET, &path, None).await;
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(etag, "\"1\"");
    assert_eq!(json_of(res, 200).await, pm);
    clock.advance_ms(MINUTE);
    let res = u
        .client
        .patch(format!("{}{path}", u.base))
        .header("If-Match", &etag)
        .json(&json!({"title": "Primary database full", "body": "Plain *text* now."}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["etag"], "\"2\"");
    let edited = json_of(res, 200).await;
    assert_eq!(edited["title"], "Primary database full");
    assert_eq!(
        edited["bodyHtml"].as_str().unwrap().trim(),
        "<p>Plain <em>text</em> now.</p>"
    );
    assert_eq!(edited["updatedAt"], rfc(T0 + 2 * MINUTE));
    let res = u
        .client
        .patch(format!("{}{path}", u.base))
        .header("If-Match", &etag)
        .json(&json!({"title": "lost"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = u
        .client
        .post(format!("{}{path}/publish", u.base))
        .header("If-Match", &etag)
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let got = json_of(u.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(got["title"], "Primary database full");
    assert_eq!(got["published"], false);

    // Publish; publishing again keeps the first time.
    clock.advance_ms(MINUTE);
    let res = u.call(Method::POST, &format!("{path}/publish"), None).await;
    assert_eq!(res.headers()["etag"], "\"3\"");
    let published = json_of(res, 200).await;
    assert_eq!(published["published"], true);
    assert_eq!(published["publishedAt"], rfc(T0 + 3 * MINUTE));
    clock.advance_ms(MINUTE);
    let res = u.call(Method::POST, &format!("{path}/publish"), None).await;
    assert_eq!(res.headers()["etag"], "\"3\"");
    assert_eq!(json_of(res, 200).await["publishedAt"], rfc(T0 + 3 * MINUTE));

    // Lists: newest first, `incidentId` filters.
    let second_incident = resolved_incident(&u, &pid).await;
    let second = create(
        &u,
        json!({"incidentId": second_incident, "title": "Second", "body": ""}),
    )
    .await;
    let second_id = second["id"].as_str().unwrap().to_string();
    let all = json_of(u.call(Method::GET, "/postmortems", None).await, 200).await;
    assert_eq!(ids(&all), vec![second_id.clone(), id.clone()]);
    let one = json_of(
        u.call(
            Method::GET,
            &format!("/postmortems?incidentId={incident}"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&one), vec![id.clone()]);
    // A reopened incident keeps its postmortem.
    json_of(
        u.call(Method::POST, &format!("/incidents/{incident}/reopen"), None)
            .await,
        200,
    )
    .await;
    json_of(u.call(Method::GET, &path, None).await, 200).await;

    // Delete: 204, then gone.
    let res = u.call(Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    expect_error(
        u.call(Method::GET, &path, None).await,
        404,
        "POSTMORTEM_NOT_FOUND",
    )
    .await;
    // Deleting an incident deletes its postmortems.
    let res = u
        .call(
            Method::DELETE,
            &format!("/incidents/{second_incident}"),
            None,
        )
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        u.call(Method::GET, &format!("/postmortems/{second_id}"), None)
            .await,
        404,
        "POSTMORTEM_NOT_FOUND",
    )
    .await;
    let all = json_of(u.call(Method::GET, "/postmortems", None).await, 200).await;
    assert_eq!(all, json!([]));

    let audit = json_of(u.call(Method::GET, "/audit-log", None).await, 200).await;
    let text = audit.to_string();
    for action in [
        "postmortem.create",
        "postmortem.update",
        "postmortem.publish",
        "postmortem.delete",
    ] {
        assert!(
            text.contains(&format!("\"{action}\"")),
            "{action} missing from {text}"
        );
    }
    srv.stop().await;
}

#[tokio::test]
async fn validation_capabilities_and_other_workspaces() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("pm-bad@example.com").await;
    let pid = page(&u, "pm-bad").await;
    let incident = resolved_incident(&u, &pid).await;
    let stranger = srv.sign_up("pm-stranger@example.com").await;
    let their_page = page(&stranger, "pm-theirs").await;
    let theirs = resolved_incident(&stranger, &their_page).await;

    let base = json!({"incidentId": incident, "title": "t", "body": "b"});
    let with = |extra: Value| {
        let mut b = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    for (body, field) in [
        (with(json!({"incidentId": "nope"})), "incidentId"),
        (with(json!({"incidentId": theirs})), "incidentId"),
        (with(json!({"title": ""})), "title"),
        (with(json!({"title": "x".repeat(201)})), "title"),
        (with(json!({"body": "b".repeat(100_001)})), "body"),
        (with(json!({"body": 3})), "body"),
        (json!({"incidentId": incident, "title": "t"}), "body"),
        (with(json!({"published": true})), "published"),
    ] {
        let err = expect_error(
            u.call(Method::POST, "/postmortems", Some(body.clone()))
                .await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(err["field"], field, "{err}");
    }
    assert_eq!(
        json_of(u.call(Method::GET, "/postmortems", None).await, 200).await,
        json!([]),
        "nothing was stored"
    );
    // The bound itself is accepted.
    let pm = create(&u, with(json!({"body": "b".repeat(100_000)}))).await;
    let id = pm["id"].as_str().unwrap().to_string();
    let path = format!("/postmortems/{id}");
    for (body, field) in [
        (json!({"title": " "}), "title"),
        (json!({"body": "b".repeat(100_001)}), "body"),
        (json!({"incidentId": incident}), "incidentId"),
    ] {
        let err = expect_error(
            u.call(Method::PATCH, &path, Some(body)).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(err["field"], field, "{err}");
    }

    // Capabilities.
    let reader = Bearer::new(&srv.base, &u.token(&["postmortems:read"]).await);
    assert_eq!(
        reader
            .call(Method::GET, "/postmortems", None)
            .await
            .status(),
        200
    );
    assert_eq!(reader.call(Method::GET, &path, None).await.status(), 200);
    for (method, p, body) in [
        (Method::POST, "/postmortems".to_string(), Some(base.clone())),
        (Method::PATCH, path.clone(), Some(json!({"title": "x"}))),
        (Method::POST, format!("{path}/publish"), None),
        (Method::DELETE, path.clone(), None),
    ] {
        expect_error(
            reader.call(method, &p, body).await,
            403,
            "INSUFFICIENT_CAPABILITY",
        )
        .await;
    }
    let writer = Bearer::new(&srv.base, &u.token(&["postmortems:write"]).await);
    expect_error(
        writer.call(Method::GET, &path, None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    expect_error(
        writer.call(Method::DELETE, &path, None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    // Incident capabilities are not postmortem capabilities.
    let incidents_only = Bearer::new(
        &srv.base,
        &u.token(&["incidents:read", "incidents:write"]).await,
    );
    expect_error(
        incidents_only
            .call(Method::POST, "/postmortems", Some(base.clone()))
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let res = writer
        .call(Method::PATCH, &path, Some(json!({"title": "By key"})))
        .await;
    assert_eq!(json_of(res, 200).await["title"], "By key");

    // Another workspace: not found, whatever the operation.
    for (method, p, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"title": "mine"}))),
        (Method::POST, format!("{path}/publish"), None),
        (Method::DELETE, path.clone(), None),
    ] {
        expect_error(
            stranger.call(method, &p, body).await,
            404,
            "POSTMORTEM_NOT_FOUND",
        )
        .await;
    }
    assert_eq!(
        json_of(stranger.call(Method::GET, "/postmortems", None).await, 200).await,
        json!([])
    );
    let got = json_of(u.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(got["title"], "By key");
    assert_eq!(got["published"], false);
    srv.stop().await;
}

#[tokio::test]
async fn public_reads_show_only_published_postmortems_of_the_page() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("pm-public@example.com").await;
    let pid = page(&u, "pm-public").await;
    let other = page(&u, "pm-public-other").await;
    let incident = resolved_incident(&u, &pid).await;
    let elsewhere = resolved_incident(&u, &other).await;

    let draft = create(
        &u,
        json!({"incidentId": incident, "title": "Draft", "body": "d"}),
    )
    .await;
    let shown = create(
        &u,
        json!({"incidentId": incident, "title": "Shown", "body": "<script>x()</script>\n\n**ok**"}),
    )
    .await;
    let foreign = create(
        &u,
        json!({"incidentId": elsewhere, "title": "Other", "body": "o"}),
    )
    .await;
    for p in [&shown, &foreign] {
        json_of(
            u.call(
                Method::POST,
                &format!("/postmortems/{}/publish", p["id"].as_str().unwrap()),
                None,
            )
            .await,
            200,
        )
        .await;
    }
    let db = srv.state.db().reader();
    let rows = tocsin::store::postmortems::published_for_page(db, &pid)
        .await
        .unwrap();
    let got: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, vec![shown["id"].as_str().unwrap()]);
    let view = tocsin::domain::postmortems::postmortem_view(&rows[0]);
    assert!(view.published);
    assert_eq!(view.body_html.trim(), "<p><strong>ok</strong></p>");

    let one = |id: &Value| {
        let id = id.as_str().unwrap().to_string();
        let pid = pid.clone();
        async move {
            tocsin::store::postmortems::published_on_page(db, &pid, &id)
                .await
                .unwrap()
        }
    };
    assert!(one(&shown["id"]).await.is_some());
    assert!(one(&draft["id"]).await.is_none(), "unpublished");
    assert!(one(&foreign["id"]).await.is_none(), "another page's");
    srv.stop().await;
}
