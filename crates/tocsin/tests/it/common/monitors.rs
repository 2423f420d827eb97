//! Monitors through the API: the factories every area's tests build their monitors with (an
//! HTTP check, a push monitor), the reads they assert on (the monitor, its events and
//! heartbeats), and pushing a heartbeat. Each call asserts the status it expects and returns
//! the JSON, so a test reads as the scenario it checks; any [`Caller`] (a signed-in user or an
//! API token) may make them.

use reqwest::Method;
use serde_json::{json, Value};

use super::{json_of, Caller, TestServer};

/// `base` with every field of `extra` (an object) set over it: a factory's defaults with the
/// fields one test needs changed.
pub fn merged(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

/// The body of an HTTP monitor named `api` checking `url` every 10 s (timeout 5 s).
pub fn http_body(url: &str) -> Value {
    json!({"name": "api", "type": "HTTP", "url": url, "interval": 10, "timeout": 5})
}

/// `POST /monitors`, expecting 201; the monitor.
pub async fn create(u: &impl Caller, body: Value) -> Value {
    json_of(u.call(Method::POST, "/monitors", Some(body)).await, 201).await
}

/// `POST /monitors`, expecting 201; the new monitor's id.
pub async fn create_id(u: &impl Caller, body: Value) -> String {
    create(u, body).await["id"].as_str().unwrap().to_string()
}

/// An HTTP monitor of `u` checking `url` ([`http_body`] with `extra` set over it); its id.
pub async fn http_monitor(u: &impl Caller, url: &str, extra: Value) -> String {
    create_id(u, merged(http_body(url), extra)).await
}

/// A push monitor of `u` (`Nightly backup`, expected every 60 s, with `extra` set over
/// that); its (id, push token).
pub async fn push_monitor(u: &impl Caller, extra: Value) -> (String, String) {
    let body = merged(
        json!({"name": "Nightly backup", "type": "PUSH", "interval": 60}),
        extra,
    );
    let m = create(u, body).await;
    (
        m["id"].as_str().unwrap().to_string(),
        m["pushToken"].as_str().unwrap().to_string(),
    )
}

/// Pushes to `token` with `query` appended (`""` or `?...`), unauthenticated as a cron job
/// would; the answer.
pub async fn push(srv: &TestServer, token: &str, query: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(srv.url(&format!("/push/{token}{query}")))
        .send()
        .await
        .unwrap()
}

/// `GET /monitors/{id}`.
pub async fn monitor(u: &impl Caller, id: &str) -> Value {
    get(u, &format!("/monitors/{id}")).await
}

/// The monitor's events, newest first.
pub async fn events(u: &impl Caller, id: &str) -> Vec<Value> {
    array(u, &format!("/monitors/{id}/events")).await
}

/// The monitor's heartbeats (newest first); `query` is appended to the path (`""` or `?...`).
pub async fn heartbeats(u: &impl Caller, id: &str, query: &str) -> Vec<Value> {
    array(u, &format!("/monitors/{id}/heartbeats{query}")).await
}

/// A GET expecting 200.
pub async fn get(u: &impl Caller, path: &str) -> Value {
    json_of(u.call(Method::GET, path, None).await, 200).await
}

/// A GET expecting 200 and a JSON array.
pub async fn array(u: &impl Caller, path: &str) -> Vec<Value> {
    match get(u, path).await {
        Value::Array(items) => items,
        other => panic!("{path}: expected an array, got {other}"),
    }
}
