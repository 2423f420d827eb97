//! The error contract and operational endpoints: every status >= 400 is the JSON envelope
//! (unknown routes, wrong methods, malformed or mistyped JSON, wrong content type, oversized
//! bodies, bad query parameters), request ids, health, readiness and metrics, and the audit
//! log with its filters.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::{Client, Method};
use serde_json::json;

#[tokio::test]
async fn router_errors_are_enveloped() {
    let srv = TestServer::start().await;
    let c = Client::new();
    expect_error(
        c.get(srv.url("/no/such/route")).send().await.unwrap(),
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        c.delete(srv.url("/healthz")).send().await.unwrap(),
        405,
        "METHOD_NOT_ALLOWED",
    )
    .await;
    expect_error(
        c.put(srv.url("/api-keys")).send().await.unwrap(),
        405,
        "METHOD_NOT_ALLOWED",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn bodies_are_checked_in_order_type_size_syntax_schema() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let url = srv.url("/api-keys");
    let c = &ada.client;
    expect_error(
        c.post(&url)
            .header("content-type", "text/plain")
            .body("{}")
            .send()
            .await
            .unwrap(),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
    )
    .await;
    expect_error(
        c.post(&url).body("{}").send().await.unwrap(),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
    )
    .await;
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(1024 * 1024 + 10));
    expect_error(
        c.post(&url)
            .header("content-type", "application/json")
            .body(big)
            .send()
            .await
            .unwrap(),
        413,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    let body = expect_error(
        c.post(&url)
            .header("content-type", "application/json")
            .body("{\"name\": ")
            .send()
            .await
            .unwrap(),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(body["flattened"]["formErrors"][0]
        .as_str()
        .unwrap()
        .contains("The body ends before the JSON does"));
    let body = expect_error(
        c.post(&url)
            .json(&json!({"name": 5, "permissions": ["identity:read"]}))
            .send()
            .await
            .unwrap(),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "name");
    let body = expect_error(
        c.post(&url)
            .json(&json!({"permissions": ["identity:read"]}))
            .send()
            .await
            .unwrap(),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "name");
    let body = expect_error(
        c.post(&url)
            .json(&json!({"name": "k", "permissions": ["identity:read"], "extra": 1}))
            .send()
            .await
            .unwrap(),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "extra");
    let body = expect_error(
        c.post(&url).json(&json!([1, 2])).send().await.unwrap(),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(body["flattened"].is_object());
    // None of it stored anything.
    assert!(json_of(ada.call(Method::GET, "/api-keys", None).await, 200)
        .await
        .as_array()
        .unwrap()
        .is_empty());
    srv.stop().await;
}

#[tokio::test]
async fn query_parameters_are_validated() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    for (q, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=abc", "limit"),
        ("cursor=%%%", "cursor"),
    ] {
        let body = expect_error(
            ada.call(Method::GET, &format!("/workspace/members?{q}"), None)
                .await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(body["field"], field, "{q}");
    }
    let body = expect_error(
        ada.call(Method::GET, "/audit-log?from=yesterday", None)
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "from");
    srv.stop().await;
}

#[tokio::test]
async fn health_readiness_metrics_and_request_ids() {
    let srv = TestServer::start().await;
    let c = Client::new();
    let res = c.get(srv.url("/healthz")).send().await.unwrap();
    assert!(res.headers().get("x-request-id").is_some());
    assert_eq!(json_of(res, 200).await["status"], "ok");
    let res = c
        .get(srv.url("/readyz"))
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers().get("x-request-id").unwrap(), "trace-me-42");
    assert_eq!(res.status(), 200);
    c.get(srv.url("/nope")).send().await.unwrap();
    let text = c
        .get(srv.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(text.contains("route=\"/healthz\""));
    assert!(text.contains("http_request_duration_seconds_bucket"));
    assert!(text.contains("db_pool_connections"));
    srv.stop().await;
}

#[tokio::test]
async fn openapi_document_is_served() {
    let srv = TestServer::start().await;
    let doc = json_of(
        Client::new()
            .get(srv.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "0.1.0");
    assert!(doc["paths"]["/workspace"]["get"]["x-svc-required-capabilities"].is_array());
    srv.stop().await;
}

#[tokio::test]
async fn every_write_is_audited_and_the_log_filters_and_pages() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let issued = json_of(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "ci", "permissions": ["identity:read"]})),
        )
        .await,
        201,
    )
    .await;
    let id = issued["id"].as_str().unwrap();
    ada.call(
        Method::PATCH,
        &format!("/api-keys/{id}"),
        Some(json!({"name": "ci2"})),
    )
    .await;
    ada.call(Method::POST, &format!("/api-keys/{id}/rotate"), None)
        .await;
    ada.call(Method::POST, &format!("/api-keys/{id}/revoke"), None)
        .await;
    ada.call(
        Method::PATCH,
        "/workspace/settings",
        Some(json!({"name": "Renamed"})),
    )
    .await;
    // A token cannot read it; a session can.
    let t = ada.token(&["identity:read"]).await;
    expect_error(
        Bearer::new(&srv.base, &t)
            .call(Method::GET, "/audit-log", None)
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;

    let all = json_of(ada.call(Method::GET, "/audit-log", None).await, 200).await;
    let actions: Vec<&str> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "api_key.create",
            "workspace.update",
            "api_key.revoke",
            "api_key.rotate",
            "api_key.update",
            "api_key.create"
        ]
    );
    assert_eq!(all["total"], 6.0);
    let e = &all["entries"][2];
    let mut keys: Vec<&String> = e.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "action",
            "actorEmail",
            "createdAt",
            "id",
            "ipAddress",
            "metadata",
            "resourceId",
            "resourceType",
            "userAgent",
            "userId",
            "workspaceId"
        ]
    );
    assert_eq!(e["actorEmail"], "ada@example.com");
    assert_eq!(e["ipAddress"], "127.0.0.1");
    assert_eq!(e["resourceId"], id);
    assert_eq!(e["userId"], ada.user_id.as_str());
    // Secrets never reach the log.
    assert!(
        !all.to_string().contains("svc_"),
        "a token leaked into the audit log"
    );

    let revokes = json_of(
        ada.call(Method::GET, "/audit-log?action=api_key.revoke", None)
            .await,
        200,
    )
    .await;
    assert_eq!(revokes["total"], 1.0);
    let ws = json_of(
        ada.call(Method::GET, "/audit-log?resourceType=workspace", None)
            .await,
        200,
    )
    .await;
    assert_eq!(ws["entries"][0]["action"], "workspace.update");
    let by_actor = json_of(
        ada.call(
            Method::GET,
            &format!("/audit-log?actorId={}", ada.user_id),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(by_actor["total"], 6.0);
    let nobody = json_of(
        ada.call(Method::GET, "/audit-log?actorId=someone-else", None)
            .await,
        200,
    )
    .await;
    assert_eq!(nobody["total"], 0.0);
    let future = json_of(
        ada.call(Method::GET, "/audit-log?from=2999-01-01T00:00:00Z", None)
            .await,
        200,
    )
    .await;
    assert_eq!(future["total"], 0.0);

    // Paging newest first with `before`.
    let p1 = json_of(ada.call(Method::GET, "/audit-log?limit=4", None).await, 200).await;
    assert_eq!(p1["entries"].as_array().unwrap().len(), 4);
    let last = p1["entries"][3]["id"].as_str().unwrap();
    let p2 = json_of(
        ada.call(
            Method::GET,
            &format!("/audit-log?limit=4&before={last}"),
            None,
        )
        .await,
        200,
    )
    .await;
    let rest: Vec<&str> = p2["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(rest, ["api_key.update", "api_key.create"]);

    // Another workspace sees none of it.
    let bob = srv.sign_up("bob@example.com").await;
    assert_eq!(
        json_of(bob.call(Method::GET, "/audit-log", None).await, 200).await["total"],
        0.0
    );
    srv.stop().await;
}
