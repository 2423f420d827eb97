//! Status page subscribers end to end through the real server and a real SMTP sink on
//! loopback: subscribe (same 202 for every address state), the confirmation email and its
//! verify link, incident news by email (created, updated, resolved) with the unsubscribe link
//! and RFC 8058 headers, the unsubscribe page and one-click POST (no mail after), unverified
//! subscribers getting nothing, per-component subscriptions, bad input with exact fields, rate
//! limits per client address and per email address, the admin list and removal, and the
//! `incident.*` webhook events to channels whose `events` list them.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::pages::{
    components, confirm_subscription, create_incident, create_page, page, subscribe,
};
use crate::common::receiver::Receiver;
use crate::common::smtp::{self, header, link, mails_to, wait_mails};
use crate::common::{expect_error, json_of, TestServer, User};

/// A published page `slug` of `u`'s workspace with components API and Web; (page id,
/// [api, web]).
async fn published_page(u: &User, slug: &str) -> (String, Vec<String>) {
    let id = page(u, slug).await;
    let comps = components(u, &id, &["API", "Web"]).await;
    json_of(
        u.call(Method::POST, &format!("/status-pages/{id}/publish"), None)
            .await,
        200,
    )
    .await;
    (id, comps)
}

async fn subscribers(u: &User, page_id: &str) -> Vec<Value> {
    let body = json_of(
        u.call(
            Method::GET,
            &format!("/status-pages/{page_id}/subscribers"),
            None,
        )
        .await,
        200,
    )
    .await;
    body["subscribers"].as_array().unwrap().clone()
}

#[tokio::test]
async fn subscribe_confirm_receive_incident_news_and_unsubscribe() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let id = page(&ada, "acme").await;
    let comps = components(&ada, &id, &["API", "Web"]).await;

    // Not published yet: the page does not exist for the public.
    expect_error(
        subscribe(&srv, "acme", json!({"email": "reader@example.com"})).await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;
    json_of(
        ada.call(Method::POST, &format!("/status-pages/{id}/publish"), None)
            .await,
        200,
    )
    .await;

    let first = json_of(
        subscribe(&srv, "acme", json!({"email": "Reader@Example.com"})).await,
        202,
    )
    .await;
    assert_eq!(first["accepted"], true);
    // Another address that never confirms.
    json_of(
        subscribe(&srv, "acme", json!({"email": "lurker@example.com"})).await,
        202,
    )
    .await;

    let mails = wait_mails(&sink, "reader@example.com", 1).await;
    let confirm = &mails[0];
    assert_eq!(
        header(confirm, "Subject").as_deref(),
        Some("Confirm your subscription to Status of acme")
    );
    assert!(header(confirm, "List-Unsubscribe")
        .unwrap()
        .contains("/api/v1/subscribers/unsubscribe?token="));
    assert_eq!(
        header(confirm, "List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    let listed = subscribers(&ada, &id).await;
    assert_eq!(listed.len(), 2);
    let reader = listed
        .iter()
        .find(|s| s["email"] == "reader@example.com")
        .unwrap();
    assert_eq!(reader["verified"], false);
    assert_eq!(reader["verifiedAt"], Value::Null);
    assert_eq!(reader["state"], "PENDING");
    assert_eq!(reader["componentIds"], json!([]));
    for key in [
        "id",
        "statusPageId",
        "email",
        "componentIds",
        "verified",
        "verifiedAt",
        "state",
        "unsubscribedAt",
        "createdAt",
    ] {
        assert!(reader.get(key).is_some(), "{key} in {reader}");
    }

    // A broken or foreign token is an HTML page, not the JSON envelope.
    let bad = reqwest::get(srv.url("/api/v1/subscribers/verify?token=nope"))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(bad.text().await.unwrap().contains("Link not valid"));
    // An unsubscribe token does not verify.
    let unsub_as_verify =
        link(confirm, "/api/v1/subscribers/unsubscribe").replace("/unsubscribe?", "/verify?");
    assert_eq!(
        reqwest::get(srv.url(&unsub_as_verify))
            .await
            .unwrap()
            .status(),
        400
    );

    confirm_subscription(&srv, &sink, "reader@example.com", 1).await;
    let reader = subscribers(&ada, &id)
        .await
        .into_iter()
        .find(|s| s["email"] == "reader@example.com")
        .unwrap();
    assert_eq!(reader["verified"], true);
    assert!(reader["verifiedAt"].is_string());
    assert_eq!(reader["state"], "ACTIVE");

    // A known, active address: the very same answer, and nothing is sent or changed.
    let again = json_of(
        subscribe(
            &srv,
            "acme",
            json!({"email": "reader@example.com", "componentIds": [comps[1]]}),
        )
        .await,
        202,
    )
    .await;
    assert_eq!(again, first);

    // A draft incident is nobody's news.
    create_incident(
        &ada,
        json!({"statusPageId": id, "title": "Quiet draft", "message": "internal"}),
    )
    .await;
    // A published one is.
    let inc = create_incident(
        &ada,
        json!({"statusPageId": id, "title": "API errors", "visibility": "PUBLISHED",
               "message": "We are looking into elevated errors.", "affectedComponentIds": [comps[0]]}),
    )
    .await;
    let inc_id = inc["incident"]["id"].as_str().unwrap().to_string();
    let mails = wait_mails(&sink, "reader@example.com", 2).await;
    let news = &mails[1];
    assert_eq!(
        header(news, "Subject").as_deref(),
        Some("[Status of acme] API errors")
    );
    assert!(news.contains("We are looking into elevated errors."));
    assert!(news.contains(&format!("{}/s/acme", srv.base)));
    let unsubscribe = link(news, "/api/v1/subscribers/unsubscribe");
    assert!(header(news, "List-Unsubscribe")
        .unwrap()
        .contains(&unsubscribe));

    json_of(
        ada.call(
            Method::POST,
            &format!("/incidents/{inc_id}/updates"),
            Some(json!({"message": "A fix is rolling out.", "status": "MONITORING"})),
        )
        .await,
        200,
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 3).await;
    assert_eq!(
        header(&mails[2], "Subject").as_deref(),
        Some("[Status of acme] Update: API errors")
    );
    assert!(mails[2].contains("A fix is rolling out."));
    json_of(
        ada.call(
            Method::POST,
            &format!("/incidents/{inc_id}/resolve"),
            Some(json!({})),
        )
        .await,
        200,
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 4).await;
    assert_eq!(
        header(&mails[3], "Subject").as_deref(),
        Some("[Status of acme] Resolved: API errors")
    );

    // The mails went through the outbox and are its history: delivered, to the subscriber.
    // The sink has a mail as soon as it is sent; the worker records the attempt just after.
    let mut rows: Vec<(Option<String>, String, String)> = Vec::new();
    for _ in 0..100 {
        rows = sqlx::query_as(
            "SELECT channel_id, event, status FROM deliveries WHERE subscriber_id = $1 ORDER BY id",
        )
        .bind(reader["id"].as_str().unwrap())
        .fetch_all(srv.state.db().reader())
        .await
        .unwrap();
        if rows.iter().all(|r| r.2 == "DELIVERED") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let events: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        events,
        [
            "subscription.confirm",
            "incident.created",
            "incident.updated",
            "incident.resolved"
        ]
    );
    assert!(rows.iter().all(|(c, _, s)| c.is_none() && s == "DELIVERED"));

    // GET shows a button and changes nothing; POST (one-click, as mail clients send it)
    // unsubscribes.
    let shown = reqwest::get(srv.url(&unsubscribe)).await.unwrap();
    assert_eq!(shown.status(), 200);
    let body = shown.text().await.unwrap();
    assert!(body.contains("<form method=\"post\""), "{body}");
    assert_eq!(
        subscribers(&ada, &id)
            .await
            .into_iter()
            .find(|s| s["email"] == "reader@example.com")
            .unwrap()["state"],
        "ACTIVE"
    );
    let done = reqwest::Client::new()
        .post(srv.url(&unsubscribe))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("Unsubscribed"));
    let reader = subscribers(&ada, &id)
        .await
        .into_iter()
        .find(|s| s["email"] == "reader@example.com")
        .unwrap();
    assert_eq!(reader["state"], "UNSUBSCRIBED");
    assert!(reader["unsubscribedAt"].is_string());

    // Another subscriber, to know when the next incident's mail has gone out.
    json_of(
        subscribe(&srv, "acme", json!({"email": "witness@example.com"})).await,
        202,
    )
    .await;
    confirm_subscription(&srv, &sink, "witness@example.com", 1).await;
    create_incident(
        &ada,
        json!({"statusPageId": id, "title": "Second outage", "visibility": "PUBLISHED"}),
    )
    .await;
    let witnessed = wait_mails(&sink, "witness@example.com", 2).await;
    assert_eq!(
        header(&witnessed[1], "Subject").as_deref(),
        Some("[Status of acme] Second outage")
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        mails_to(&sink, "reader@example.com").len(),
        4,
        "after unsubscribing"
    );
    // The unverified address got its confirmation and nothing else.
    let lurker = mails_to(&sink, "lurker@example.com");
    assert_eq!(lurker.len(), 1);
    assert!(header(&lurker[0], "Subject")
        .unwrap()
        .starts_with("Confirm"));

    // Removal: gone from the list, with its history; a second removal is 404.
    let witness_id = subscribers(&ada, &id)
        .await
        .into_iter()
        .find(|s| s["email"] == "witness@example.com")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/status-pages/{id}/subscribers/{witness_id}");
    assert_eq!(ada.call(Method::DELETE, &path, None).await.status(), 204);
    expect_error(
        ada.call(Method::DELETE, &path, None).await,
        404,
        "SUBSCRIBER_NOT_FOUND",
    )
    .await;
    let left: Vec<Value> = subscribers(&ada, &id).await;
    assert_eq!(left.len(), 2, "{left:?}");
    srv.stop().await;
}

#[tokio::test]
async fn subscribers_of_components_hear_only_of_theirs() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, comps) = published_page(&ada, "parts").await;
    for (email, chosen) in [
        ("whole@example.com", json!([])),
        ("api@example.com", json!([comps[0]])),
        ("web@example.com", json!([comps[1]])),
    ] {
        json_of(
            subscribe(
                &srv,
                "parts",
                json!({"email": email, "componentIds": chosen}),
            )
            .await,
            202,
        )
        .await;
        confirm_subscription(&srv, &sink, email, 1).await;
    }
    let listed = subscribers(&ada, &id).await;
    let api = listed
        .iter()
        .find(|s| s["email"] == "api@example.com")
        .unwrap();
    assert_eq!(api["componentIds"], json!([comps[0]]));

    create_incident(
        &ada,
        json!({"statusPageId": id, "title": "API slow", "visibility": "PUBLISHED",
               "affectedComponentIds": [comps[0]]}),
    )
    .await;
    wait_mails(&sink, "whole@example.com", 2).await;
    wait_mails(&sink, "api@example.com", 2).await;
    // Published later: the news goes out at publication.
    let page_wide = create_incident(
        &ada,
        json!({"statusPageId": id, "title": "Everything slow"}),
    )
    .await;
    let pw = page_wide["incident"]["id"].as_str().unwrap();
    json_of(
        ada.call(Method::POST, &format!("/incidents/{pw}/publish"), None)
            .await,
        200,
    )
    .await;
    let whole = wait_mails(&sink, "whole@example.com", 3).await;
    assert_eq!(
        header(&whole[2], "Subject").as_deref(),
        Some("[Status of parts] Everything slow")
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mails_to(&sink, "whole@example.com").len(), 3);
    assert_eq!(mails_to(&sink, "api@example.com").len(), 2);
    assert_eq!(
        mails_to(&sink, "web@example.com").len(),
        1,
        "only the confirmation"
    );
    srv.stop().await;
}

#[tokio::test]
async fn bad_requests_name_their_field_and_unknown_pages_are_not_found() {
    let (srv, _sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (_, comps) = published_page(&ada, "strict").await;
    let (_, other_comps) = published_page(&ada, "other").await;
    for email in ["not-an-address", "a@b", "two words@example.com", ""] {
        let err = expect_error(
            subscribe(&srv, "strict", json!({"email": email})).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(err["field"], "email", "{email}: {err}");
    }
    let err = expect_error(
        subscribe(
            &srv,
            "strict",
            json!({"email": "x@example.com", "componentIds": [comps[0], other_comps[0]]}),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["field"], "componentIds.1", "{err}");
    let err = expect_error(
        subscribe(
            &srv,
            "strict",
            json!({"email": "x@example.com", "componentIds": [comps[0], comps[0]]}),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["field"], "componentIds.1", "{err}");
    expect_error(
        subscribe(&srv, "nowhere", json!({"email": "x@example.com"})).await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;
    // The admin routes need a member of the page's workspace.
    let eve = srv.sign_up("eve@example.com").await;
    let (mine, _) = published_page(&ada, "mine").await;
    expect_error(
        eve.call(
            Method::GET,
            &format!("/status-pages/{mine}/subscribers"),
            None,
        )
        .await,
        404,
        "STATUS_PAGE_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn subscription_requests_are_limited_per_client_and_per_address() {
    let (srv, _sink) = smtp::server_with(None, |c| {
        let r = &mut c.rate_limits;
        r.subscribe_per_ip = 4;
        r.subscribe_per_email_hour = 2;
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    published_page(&ada, "one").await;
    published_page(&ada, "two").await;
    // Per address, across pages.
    for slug in ["one", "two"] {
        json_of(
            subscribe(&srv, slug, json!({"email": "Flood@Example.com"})).await,
            202,
        )
        .await;
    }
    let res = subscribe(&srv, "one", json!({"email": "flood@example.com"})).await;
    let retry: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 60, "an hour's budget waits minutes: {retry}");
    expect_error(res, 429, "RATE_LIMITED").await;
    // Another address still goes through, until the client's budget is spent.
    json_of(
        subscribe(&srv, "one", json!({"email": "calm@example.com"})).await,
        202,
    )
    .await;
    let res = subscribe(&srv, "one", json!({"email": "third@example.com"})).await;
    assert!(res.headers().get("retry-after").is_some());
    expect_error(res, 429, "RATE_LIMITED").await;
    srv.stop().await;
}

#[tokio::test]
async fn channels_taking_incident_events_get_them_as_webhooks() {
    let srv = TestServer::start().await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, comps) = published_page(&ada, "hooks").await;
    let hook = json_of(
        ada.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "incidents", "type": "WEBHOOK",
                        "config": {"url": rx.url("/incidents")},
                        "events": ["incident.created", "incident.updated", "incident.resolved"]})),
        )
        .await,
        201,
    )
    .await;
    let hook_id = hook["id"].as_str().unwrap().to_string();
    json_of(
        ada.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "alerts only", "type": "WEBHOOK",
                        "config": {"url": rx.url("/alerts")}, "events": ["alert.opened"]})),
        )
        .await,
        201,
    )
    .await;

    let inc = create_incident(
        &ada,
        json!({"statusPageId": id, "title": "Database failover", "affectedComponentIds": [comps[0]]}),
    )
    .await;
    let inc_id = inc["incident"]["id"].as_str().unwrap().to_string();
    json_of(
        ada.call(
            Method::POST,
            &format!("/incidents/{inc_id}/updates"),
            Some(json!({"message": "Replica promoted.", "status": "IDENTIFIED"})),
        )
        .await,
        200,
    )
    .await;
    json_of(
        ada.call(
            Method::POST,
            &format!("/incidents/{inc_id}/resolve"),
            Some(json!({})),
        )
        .await,
        200,
    )
    .await;
    let got = rx.wait_for(3, Duration::from_secs(10)).await;
    let mut bodies: Vec<Value> = got.iter().map(|r| r.json()).collect();
    bodies.sort_by_key(|b| b["timestamp"].as_str().unwrap_or_default().to_string());
    assert!(got.iter().all(|r| r.path == "/incidents"));
    let types: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    let mut sorted = types.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["incident.created", "incident.resolved", "incident.updated"]
    );
    for b in &bodies {
        assert_eq!(b["data"]["incident"]["id"], inc_id.as_str());
        assert_eq!(b["data"]["statusPage"]["slug"], "hooks");
    }
    let updated = bodies
        .iter()
        .find(|b| b["type"] == "incident.updated")
        .unwrap();
    assert_eq!(updated["data"]["update"]["message"], "Replica promoted.");
    assert_eq!(updated["data"]["incident"]["status"], "IDENTIFIED");
    let resolved = bodies
        .iter()
        .find(|b| b["type"] == "incident.resolved")
        .unwrap();
    assert_eq!(resolved["data"]["incident"]["status"], "RESOLVED");
    // Signed like every webhook.
    assert!(got[0].header("webhook-signature").starts_with("v1,"));
    // Their history is the channel's.
    let history = json_of(
        ada.call(
            Method::GET,
            &format!("/notification-channels/{hook_id}/deliveries"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(history["deliveries"].as_array().unwrap().len(), 3);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), 3, "the alert-only channel got nothing");
    srv.stop().await;
}

#[tokio::test]
async fn the_public_page_has_an_email_form_that_subscribes_like_the_api() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, comps) = published_page(&ada, "acme").await;
    let page = reqwest::get(srv.url("/s/acme"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"<form method="post" action="/s/acme/subscribe">"#),
        "{page}"
    );
    assert!(page.contains(&format!(r#"name="component" value="{}""#, comps[1])));
    let form = |body: &'static str| {
        let url = srv.url("/s/acme/subscribe");
        async move {
            reqwest::Client::new()
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    // A bad address: an HTML page saying so, nothing stored.
    let res = form("email=not-an-address").await;
    assert_eq!(res.status(), 400);
    assert!(res
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(res.text().await.unwrap().contains("not an email address"));
    assert!(subscribers(&ada, &id).await.is_empty());
    // A good one, for one component: the confirmation email, and the subscriber listed
    // with that component once confirmed.
    let body: &'static str =
        Box::leak(format!("email=bea%40example.com&component={}", comps[1]).into_boxed_str());
    let res = form(body).await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.contains("Check your inbox"), "{text}");
    assert!(text.contains(r#"href="/s/acme""#), "{text}");
    confirm_subscription(&srv, &sink, "bea@example.com", 1).await;
    let subs = subscribers(&ada, &id).await;
    assert_eq!(subs.len(), 1, "{subs:?}");
    assert_eq!(subs[0]["email"], "bea@example.com");
    assert_eq!(subs[0]["componentIds"], json!([comps[1]]));
    // The same address again: the same answer (nothing tells whether it was subscribed).
    let again = form(body).await;
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("Check your inbox"));
    // An unknown page: the HTML 404.
    let res = reqwest::Client::new()
        .post(srv.url("/s/nope/subscribe"))
        .body("email=x%40example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    srv.stop().await;
}

/// The `Error` body of a refusal, without what differs between any two requests.
async fn refusal(res: reqwest::Response) -> Value {
    let mut body = expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;
    if let Some(o) = body.as_object_mut() {
        o.remove("requestId");
    }
    body
}

/// Posts the page's subscription form with `cookie`.
async fn subscribe_form(
    srv: &TestServer,
    slug: &str,
    email: &str,
    cookie: Option<&str>,
) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(srv.url(&format!("/s/{slug}/subscribe")))
        .form(&[("email", email)]);
    if let Some(c) = cookie {
        req = req.header("Cookie", c);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn private_pages_take_subscribers_only_with_access_and_turning_private_suspends_them() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let open = create_page(
        &ada,
        json!({"name": "Open", "slug": "open", "published": true}),
    )
    .await;
    let open_id = open["id"].as_str().unwrap().to_string();
    create_page(
        &ada,
        json!({"name": "Hidden", "slug": "hidden", "published": true,
               "access": {"visibility": "PASSWORD", "password": "correct horse battery"}}),
    )
    .await;
    create_page(
        &ada,
        json!({"name": "Staff", "slug": "staff", "published": true,
               "access": {"visibility": "EMAIL_DOMAINS", "allowedEmailDomains": ["corp.example"]}}),
    )
    .await;

    // Without access a private page takes no subscriber, and says so exactly as for a slug
    // that does not exist.
    let unknown =
        refusal(subscribe(&srv, "no-such-page", json!({"email": "eve@example.com"})).await).await;
    for slug in ["hidden", "staff"] {
        let got = refusal(subscribe(&srv, slug, json!({"email": "eve@example.com"})).await).await;
        assert_eq!(got, unknown, "{slug}");
        let form = subscribe_form(&srv, slug, "eve@example.com", None).await;
        assert_eq!(form.status(), 404, "{slug}");
        let unknown_form = subscribe_form(&srv, "no-such-page", "eve@example.com", None).await;
        assert_eq!(
            form.text().await.unwrap(),
            unknown_form.text().await.unwrap()
        );
    }
    // With the page's cookie it does.
    let entered = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(srv.url("/s/hidden/access"))
        .form(&[("password", "correct horse battery")])
        .send()
        .await
        .unwrap();
    assert_eq!(entered.status(), 303);
    let cookie = entered.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let res = reqwest::Client::new()
        .post(srv.url("/api/v1/status-pages/hidden/subscribers"))
        .header("Cookie", &cookie)
        .json(&json!({"email": "friend@example.com"}))
        .send()
        .await
        .unwrap();
    json_of(res, 202).await;
    confirm_subscription(&srv, &sink, "friend@example.com", 1).await;
    assert_eq!(
        subscribe_form(&srv, "hidden", "pal@example.com", Some(&cookie))
            .await
            .status(),
        200
    );
    assert!(mails_to(&sink, "eve@example.com").is_empty());

    // A public page's subscriber, then the page turns private: suspended, sent nothing.
    json_of(
        subscribe(&srv, "open", json!({"email": "reader@example.com"})).await,
        202,
    )
    .await;
    confirm_subscription(&srv, &sink, "reader@example.com", 1).await;
    json_of(
        ada.call(
            Method::PATCH,
            &format!("/status-pages/{open_id}"),
            Some(json!({"access": {"visibility": "PASSWORD", "password": "another good one"}})),
        )
        .await,
        200,
    )
    .await;
    let listed = subscribers(&ada, &open_id).await;
    let reader = listed
        .iter()
        .find(|s| s["email"] == "reader@example.com")
        .unwrap();
    assert_eq!(reader["state"], "SUSPENDED", "{reader}");
    assert!(reader["suspendedAt"].is_string(), "{reader}");
    assert_eq!(reader["verified"], true);
    create_incident(
        &ada,
        json!({"statusPageId": open_id, "title": "Quiet outage", "visibility": "PUBLISHED",
               "message": "Nobody outside hears of this."}),
    )
    .await;

    // An admin re-admits the subscriber: the next incident reaches it, the one before never.
    let sid = reader["id"].as_str().unwrap();
    let readmitted = json_of(
        ada.call(
            Method::POST,
            &format!("/status-pages/{open_id}/subscribers/{sid}/readmit"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(readmitted["state"], "ACTIVE");
    assert_eq!(readmitted["suspendedAt"], Value::Null);
    create_incident(
        &ada,
        json!({"statusPageId": open_id, "title": "Told outage", "visibility": "PUBLISHED",
               "message": "Readers hear of this."}),
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mails_now = mails_to(&sink, "reader@example.com");
    assert_eq!(mails_now.len(), 2, "{mails_now:?}");
    assert!(mails[1].contains("Told outage"));
    assert!(mails_now.iter().all(|m| !m.contains("Quiet outage")));
    // Readmitting is write-capability work and names a subscriber of the page.
    expect_error(
        ada.call(
            Method::POST,
            &format!("/status-pages/{open_id}/subscribers/nope/readmit"),
            None,
        )
        .await,
        404,
        "SUBSCRIBER_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn a_verify_link_followed_by_a_scanner_confirms_nothing() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = published_page(&ada, "scanned").await;
    json_of(
        subscribe(&srv, "scanned", json!({"email": "reader@example.com"})).await,
        202,
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 1).await;
    let url = srv.url(&link(&mails[0], "/api/v1/subscribers/verify"));
    for _ in 0..2 {
        let res = reqwest::get(&url).await.unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        assert!(res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("form-action 'self'"));
    }
    assert_eq!(subscribers(&ada, &id).await[0]["state"], "PENDING");
    let res = reqwest::Client::new().post(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("Subscription confirmed"));
    assert_eq!(subscribers(&ada, &id).await[0]["state"], "ACTIVE");
    // Once confirmed, the link says so.
    let again = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(again.contains("Subscription confirmed"), "{again}");
    srv.stop().await;
}

#[tokio::test]
async fn variants_of_one_address_share_its_limit_and_its_daily_confirmations() {
    let (srv, sink) = smtp::server_with(None, |c| {
        let r = &mut c.rate_limits;
        r.subscribe_per_ip = 100;
        r.subscribe_per_email_hour = 2;
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    published_page(&ada, "one").await;
    json_of(
        subscribe(&srv, "one", json!({"email": "victim@example.com"})).await,
        202,
    )
    .await;
    json_of(
        subscribe(&srv, "one", json!({"email": "Victim+1@Example.com"})).await,
        202,
    )
    .await;
    for variant in [
        "victim+2@example.com",
        "\"victim\"@example.com",
        "VICTIM@example.com",
    ] {
        expect_error(
            subscribe(&srv, "one", json!({"email": variant})).await,
            429,
            "RATE_LIMITED",
        )
        .await;
    }
    srv.stop().await;
    drop(sink);

    // The daily cap, across pages: three confirmations reach the mailbox, then nothing,
    // though every request is answered alike.
    let (srv, sink) = smtp::server_with(None, |c| {
        let r = &mut c.rate_limits;
        r.subscribe_per_ip = 100;
        r.subscribe_per_email_hour = 100;
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    published_page(&ada, "one").await;
    published_page(&ada, "two").await;
    let mut answers = Vec::new();
    for (i, slug) in ["one", "two", "one", "two", "one", "two"]
        .iter()
        .enumerate()
    {
        let body = json_of(
            subscribe(
                &srv,
                slug,
                json!({"email": format!("victim+{i}@example.com")}),
            )
            .await,
            202,
        )
        .await;
        answers.push(body);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]));
    // Only the victim's mailbox counts: Ada's own sign-up sends her a verification mail.
    let to_victim = || {
        sink.messages
            .lock()
            .unwrap()
            .iter()
            .filter(|(rcpt, _)| rcpt.iter().any(|r| r.starts_with("victim")))
            .count()
    };
    for _ in 0..100 {
        if to_victim() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        to_victim(),
        3,
        "confirmation emails to one mailbox in a day"
    );
    srv.stop().await;
}
