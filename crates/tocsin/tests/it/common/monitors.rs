//! Monitor API calls the scheduler, push and cycle tests share: each asserts the status it
//! expects and returns the JSON.

use reqwest::Method;
use serde_json::Value;

use super::{json_of, User};

/// `POST /monitors`, expecting 201.
pub async fn create(u: &User, body: Value) -> Value {
    json_of(u.call(Method::POST, "/monitors", Some(body)).await, 201).await
}

/// `GET /monitors/{id}`.
pub async fn monitor(u: &User, id: &str) -> Value {
    get(u, &format!("/monitors/{id}")).await
}

/// The monitor's events, newest first.
pub async fn events(u: &User, id: &str) -> Vec<Value> {
    array(u, &format!("/monitors/{id}/events")).await
}

/// The monitor's heartbeats (newest first); `query` is appended to the path (`""` or `?...`).
pub async fn heartbeats(u: &User, id: &str, query: &str) -> Vec<Value> {
    array(u, &format!("/monitors/{id}/heartbeats{query}")).await
}

/// A GET expecting 200.
pub async fn get(u: &User, path: &str) -> Value {
    json_of(u.call(Method::GET, path, None).await, 200).await
}

/// A GET expecting 200 and a JSON array.
pub async fn array(u: &User, path: &str) -> Vec<Value> {
    match get(u, path).await {
        Value::Array(items) => items,
        other => panic!("{path}: expected an array, got {other}"),
    }
}
