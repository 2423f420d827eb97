//! Email readiness: the read that says whether the server sends email and what of the
//! workspace needs it, on a server without an SMTP relay (the status page offers no subscribe
//! form, and both the API and the page's form refuse subscriptions precisely, after the page
//! and the input are checked) and on one with a relay (the form, and every count). Also the
//! per-type channel config schemas of the API document the dashboard builds its forms from.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::pages::{create_page, subscribe};
use common::smtp;
use common::{expect_error, json_of, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

async fn readiness(u: &User) -> Value {
    json_of(
        u.call(Method::GET, "/workspace/email-readiness", None)
            .await,
        200,
    )
    .await
}

async fn public_html(srv: &TestServer, slug: &str) -> String {
    let res = reqwest::get(srv.url(&format!("/s/{slug}"))).await.unwrap();
    assert_eq!(res.status(), 200);
    res.text().await.unwrap()
}

async fn form_post(srv: &TestServer, slug: &str, email: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(srv.url(&format!("/s/{slug}/subscribe")))
        .form(&[("email", email)])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn without_smtp_the_page_offers_no_form_and_subscribing_is_refused_precisely() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    assert_eq!(
        readiness(&ada).await,
        json!({"smtpConfigured": false, "subscribers": 0, "emailChannels": 0,
               "pendingInvitations": 0, "publishedStatusPages": 0})
    );
    let page = create_page(
        &ada,
        json!({"name": "Acme status", "slug": "acme", "published": true}),
    )
    .await;
    json_of(
        ada.call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "grace@example.com", "role": "member"})),
        )
        .await,
        201,
    )
    .await;
    let r = readiness(&ada).await;
    assert_eq!(r["publishedStatusPages"], 1);
    assert_eq!(r["pendingInvitations"], 1);

    // The page says email is unavailable and points at the feeds, with no form.
    let html = public_html(&srv, "acme").await;
    assert!(!html.contains(r#"action="/s/acme/subscribe""#), "{html}");
    assert!(
        html.contains("Updates by email are not available"),
        "{html}"
    );
    assert!(html.contains(r#"href="/s/acme/feed.rss""#));

    // The API: the page and the input are checked first, then the missing relay.
    let refused = expect_error(
        subscribe(&srv, "acme", json!({"email": "reader@example.com"})).await,
        409,
        "SMTP_NOT_CONFIGURED",
    )
    .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("sends no email"),
        "{refused}"
    );
    expect_error(
        subscribe(&srv, "acme", json!({"email": "not an address"})).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    expect_error(
        subscribe(&srv, "nowhere", json!({"email": "reader@example.com"})).await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;

    // The page's own form answers as a page, saying why rather than "check your inbox".
    let res = form_post(&srv, "acme", "reader@example.com").await;
    assert_eq!(res.status(), 409);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let text = res.text().await.unwrap();
    assert!(text.contains("Email updates are not available"), "{text}");
    assert!(!text.contains("inbox"), "{text}");

    // Nothing was stored.
    let id = page["id"].as_str().unwrap();
    let listed = json_of(
        ada.call(
            Method::GET,
            &format!("/status-pages/{id}/subscribers"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(listed["subscribers"], json!([]));
    assert_eq!(readiness(&ada).await["subscribers"], 0);

    // Any member may read it; another workspace's things are not counted.
    let bob = srv.sign_up("bob@example.com").await;
    assert_eq!(readiness(&bob).await["publishedStatusPages"], 0);
    let anonymous = reqwest::get(srv.url("/workspace/email-readiness"))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    srv.stop().await;
}

#[tokio::test]
async fn with_smtp_the_page_has_its_form_and_the_counts_follow_the_workspace() {
    let (srv, _sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    create_page(
        &ada,
        json!({"name": "Acme status", "slug": "acme", "published": true}),
    )
    .await;
    let html = public_html(&srv, "acme").await;
    assert!(html.contains(r#"action="/s/acme/subscribe""#), "{html}");
    json_of(
        subscribe(&srv, "acme", json!({"email": "reader@example.com"})).await,
        202,
    )
    .await;
    let channel = json_of(
        ada.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "Ops mail", "type": "EMAIL",
                        "config": {"to": ["ops@example.com"]}})),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(
        readiness(&ada).await,
        json!({"smtpConfigured": true, "subscribers": 1, "emailChannels": 1,
               "pendingInvitations": 0, "publishedStatusPages": 1})
    );
    // A disabled EMAIL channel needs nothing.
    let id = channel["id"].as_str().unwrap();
    json_of(
        ada.call(
            Method::PATCH,
            &format!("/notification-channels/{id}"),
            Some(json!({"enabled": false})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(readiness(&ada).await["emailChannels"], 0);
    srv.stop().await;
}

#[tokio::test]
async fn the_document_describes_each_channel_types_config_with_its_secrets_marked() {
    let srv = TestServer::start().await;
    let doc: Value = reqwest::get(srv.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut types: Vec<&str> = schemas
        .values()
        .filter_map(|s| s["x-channel-type"].as_str())
        .collect();
    types.sort();
    assert_eq!(types.len(), 15, "{types:?}");
    let telegram = &schemas["TelegramChannelConfig"];
    assert_eq!(telegram["x-channel-type"], "TELEGRAM");
    assert_eq!(telegram["required"], json!(["botToken", "chatId"]));
    assert_eq!(telegram["properties"]["botToken"]["format"], "password");
    assert_eq!(telegram["properties"]["botToken"]["title"], "Bot token");
    assert!(telegram["properties"]["chatId"]["description"]
        .as_str()
        .unwrap()
        .contains("@channelusername"));
    assert!(telegram["properties"]["apiUrl"].get("format").is_none());
    let opsgenie = &schemas["OpsgenieChannelConfig"]["properties"]["priority"];
    assert_eq!(
        opsgenie["enum"],
        json!(["P1", "P2", "P3", "P4", "P5", null])
    );
    let ntfy = &schemas["NtfyChannelConfig"]["properties"]["priority"];
    assert_eq!(
        (ntfy["minimum"].clone(), ntfy["maximum"].clone()),
        (json!(1), json!(5))
    );
    // The channel's `config` names them all.
    let create = &schemas["CreateChannel"]["properties"]["config"];
    assert_eq!(create["anyOf"].as_array().unwrap().len(), 15);
    srv.stop().await;
}
