//! Status pages, their components, incidents and subscriptions through the API, as the page,
//! incident, subscriber and news tests build them. Each call asserts the status it expects.

use reqwest::Method;
use serde_json::{json, Value};

use super::smtp::{header, link, wait_mails, Sink};
use super::{json_of, TestServer, User};

/// `POST /status-pages` with `body`, expecting 201; the page.
pub async fn create_page(u: &User, body: Value) -> Value {
    json_of(u.call(Method::POST, "/status-pages", Some(body)).await, 201).await
}

/// A status page `slug` of `u`'s workspace named `Status of {slug}` (unpublished); its id.
pub async fn page(u: &User, slug: &str) -> String {
    create_page(
        u,
        json!({"name": format!("Status of {slug}"), "slug": slug}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `PUT /status-pages/{page}/components` with `body`, expecting 200; the components.
pub async fn put_components(u: &User, page: &str, body: Value) -> Value {
    json_of(
        u.call(
            Method::PUT,
            &format!("/status-pages/{page}/components"),
            Some(body),
        )
        .await,
        200,
    )
    .await
}

/// Gives page `page_id` components named `names` (no monitor); their ids, in order.
pub async fn components(u: &User, page_id: &str, names: &[&str]) -> Vec<String> {
    let body: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "monitorId": null}))
        .collect();
    put_components(u, page_id, Value::Array(body))
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// Files an incident (`POST /incidents`, expecting 201); the `IncidentWithUpdates` answer.
pub async fn create_incident(u: &User, body: Value) -> Value {
    json_of(u.call(Method::POST, "/incidents", Some(body)).await, 201).await
}

/// Subscribes to page `slug` on its public API with `body`, unauthenticated as a reader
/// would; the answer.
pub async fn subscribe(srv: &TestServer, slug: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(srv.url(&format!("/api/v1/status-pages/{slug}/subscribers")))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Follows the verify link of the latest confirmation mail to `to` (its `n`-th mail): the
/// link's GET shows a button, only its POST confirms (mail scanners follow GETs).
pub async fn confirm_subscription(srv: &TestServer, sink: &Sink, to: &str, n: usize) {
    let mails = wait_mails(sink, to, n).await;
    let mail = mails.last().unwrap();
    assert!(
        header(mail, "Subject").unwrap().starts_with("Confirm"),
        "{mail}"
    );
    let url = srv.url(&link(mail, "/api/v1/subscribers/verify"));
    let shown = reqwest::get(&url).await.unwrap();
    assert_eq!(shown.status(), 200);
    let page = shown.text().await.unwrap();
    assert!(page.contains("Confirm your subscription?"), "{page}");
    assert!(
        page.contains(r#"<form method="post" action="/api/v1/subscribers/verify?token="#),
        "{page}"
    );
    let res = reqwest::Client::new().post(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("Subscription confirmed"));
}
