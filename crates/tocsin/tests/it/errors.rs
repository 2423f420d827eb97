//! Error messages a person can act on, through the real server: no message repeats its code,
//! every refusal says what to do, a malformed `If-Match` is a validation error, and 401/403
//! name what was wrong with the credential (without telling anyone whether another key exists).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::{Client, Method};
use serde_json::{json, Value};

/// Asserts the envelope's message is a sentence of its own: not the code, not empty, and
/// ending with a full stop (each one names what to do before it).
fn assert_actionable(body: &Value) {
    let code = body["code"].as_str().unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(!message.trim().is_empty(), "empty message in {body}");
    assert_ne!(message, code, "message repeats the code in {body}");
    assert!(
        !message.contains(code),
        "message names the code instead of saying what happened in {body}"
    );
    assert!(message.ends_with('.'), "not a full sentence in {body}");
    assert!(
        message.contains(':') || message.contains(';') || message.contains(", "),
        "says what happened but not what to do in {body}"
    );
}

async fn refused(res: reqwest::Response, status: u16, code: &str) -> Value {
    let body = expect_error(res, status, code).await;
    assert_actionable(&body);
    body
}

#[tokio::test]
async fn refusals_say_what_happened_and_what_to_do() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;

    // WRONG_MONITOR_TYPE: a baseline on an HTTP monitor, a push token on one, a check of a push one.
    let http = json_of(
        ada.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "web", "type": "HTTP", "url": "https://example.com/health"})),
        )
        .await,
        201,
    )
    .await;
    let id = http["id"].as_str().unwrap();
    let body = refused(
        ada.call(
            Method::POST,
            &format!("/monitors/{id}/accept-baseline"),
            None,
        )
        .await,
        409,
        "WRONG_MONITOR_TYPE",
    )
    .await;
    assert!(body["message"].as_str().unwrap().contains("DNS_DIFF"));
    refused(
        ada.call(
            Method::POST,
            &format!("/monitors/{id}/regenerate-push-token"),
            None,
        )
        .await,
        409,
        "WRONG_MONITOR_TYPE",
    )
    .await;

    let push = json_of(
        ada.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "cron", "type": "PUSH"})),
        )
        .await,
        201,
    )
    .await;
    refused(
        ada.call(
            Method::POST,
            &format!("/monitors/{}/check", push["id"].as_str().unwrap()),
            None,
        )
        .await,
        409,
        "WRONG_MONITOR_TYPE",
    )
    .await;

    // ALREADY_MEMBER, SURFACE_NOT_ALLOWED.
    refused(
        ada.call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "ada@example.com", "role": "member"})),
        )
        .await,
        409,
        "ALREADY_MEMBER",
    )
    .await;
    let mcp_only = Bearer::new(&srv.base, &ada.token_on(&["monitors:read"], &["mcp"]).await);
    refused(
        mcp_only.call(Method::GET, "/monitors", None).await,
        403,
        "SURFACE_NOT_ALLOWED",
    )
    .await;

    // EMAIL_TAKEN.
    let res = Client::new()
        .post(srv.url("/auth/sign-up/email"))
        .json(&json!({"email": "ada@example.com", "password": "another password", "name": "Ada"}))
        .send()
        .await
        .unwrap();
    let body = refused(res, 409, "EMAIL_TAKEN").await;
    assert!(body["message"].as_str().unwrap().contains("sign in"));

    // API_KEY_REVOKED on rotate and on update.
    let key = json_of(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "ci", "permissions": ["monitors:read"]})),
        )
        .await,
        201,
    )
    .await;
    let key_id = key["id"].as_str().unwrap();
    json_of(
        ada.call(Method::POST, &format!("/api-keys/{key_id}/revoke"), None)
            .await,
        200,
    )
    .await;
    refused(
        ada.call(Method::POST, &format!("/api-keys/{key_id}/rotate"), None)
            .await,
        409,
        "API_KEY_REVOKED",
    )
    .await;
    refused(
        ada.call(
            Method::PATCH,
            &format!("/api-keys/{key_id}"),
            Some(json!({"name": "renamed"})),
        )
        .await,
        409,
        "API_KEY_REVOKED",
    )
    .await;

    // LAST_OWNER: the only owner cannot step down.
    refused(
        ada.call(
            Method::PATCH,
            &format!("/workspace/members/{}", ada.user_id),
            Some(json!({"role": "admin"})),
        )
        .await,
        409,
        "LAST_OWNER",
    )
    .await;

    // Not found, unknown route, version conflict, wrong credentials, wrong media type.
    refused(
        ada.call(Method::GET, "/monitors/0000000000000000000000000", None)
            .await,
        404,
        "MONITOR_NOT_FOUND",
    )
    .await;
    refused(
        ada.call(Method::GET, "/no-such-route", None).await,
        404,
        "NOT_FOUND",
    )
    .await;
    let res = ada
        .client
        .patch(srv.url(&format!("/monitors/{id}")))
        .header("If-Match", "\"99\"")
        .json(&json!({"name": "renamed"}))
        .send()
        .await
        .unwrap();
    refused(res, 409, "VERSION_CONFLICT").await;
    let res = Client::new()
        .post(srv.url("/auth/sign-in/email"))
        .json(&json!({"email": "ada@example.com", "password": "wrong password"}))
        .send()
        .await
        .unwrap();
    refused(res, 401, "INVALID_CREDENTIALS").await;
    let res = ada
        .client
        .post(srv.url("/monitors"))
        .header("content-type", "text/plain")
        .body("name=web")
        .send()
        .await
        .unwrap();
    refused(res, 415, "UNSUPPORTED_MEDIA_TYPE").await;
    refused(
        ada.call(Method::PUT, "/workspace", Some(json!({}))).await,
        405,
        "METHOD_NOT_ALLOWED",
    )
    .await;

    // No credential at all.
    let res = Client::new()
        .get(srv.url("/monitors"))
        .send()
        .await
        .unwrap();
    refused(res, 401, "UNAUTHORIZED").await;

    // A validation error never repeats its code either.
    let body = expect_error(
        ada.call(Method::POST, "/monitors", Some(json!({"name": "x"})))
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_ne!(body["message"], "VALIDATION_ERROR");
    srv.stop().await;
}

#[tokio::test]
async fn if_match_that_is_not_an_entity_tag_is_a_validation_error() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let m = json_of(
        ada.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "web", "type": "HTTP", "url": "https://example.com/health"})),
        )
        .await,
        201,
    )
    .await;
    let path = srv.url(&format!("/monitors/{}", m["id"].as_str().unwrap()));
    for bad in ["banana", "1", "\"1", "W/1", "\"1\", banana"] {
        let res = ada
            .client
            .patch(&path)
            .header("If-Match", bad)
            .json(&json!({"name": "renamed"}))
            .send()
            .await
            .unwrap();
        let body = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(body["field"], "If-Match", "{bad}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("\"3\""),
            "{bad}: {body}"
        );
    }
    // A well-formed tag this server never issued is merely stale.
    let res = ada
        .client
        .patch(&path)
        .header("If-Match", "\"banana\"")
        .json(&json!({"name": "renamed"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    // Weak and listed tags still match.
    let res = ada
        .client
        .patch(&path)
        .header("If-Match", "W/\"1\", \"7\"")
        .json(&json!({"name": "renamed"}))
        .send()
        .await
        .unwrap();
    json_of(res, 200).await;
    srv.stop().await;
}

#[tokio::test]
async fn invalid_origin_names_the_expected_origin_and_the_fix() {
    let srv = TestServer::start().await;
    srv.sign_up("ada@example.com").await;
    let client = Client::builder().cookie_store(true).build().unwrap();
    json_of(
        client
            .post(srv.url("/auth/sign-in/email"))
            .json(&json!({"email": "ada@example.com", "password": "correct horse battery"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let res = client
        .post(srv.url("/monitors"))
        .header("Origin", "https://evil.example")
        .json(&json!({"name": "web", "type": "HTTP", "url": "https://example.com/health"}))
        .send()
        .await
        .unwrap();
    let body = refused(res, 403, "INVALID_ORIGIN").await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(&srv.base), "{message}");
    assert!(message.contains("--public-url"), "{message}");
    srv.stop().await;
}

#[tokio::test]
async fn unauthorized_says_what_was_wrong_with_the_credential() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let get = |auth: Option<String>| {
        let mut req = Client::new().get(srv.url("/monitors"));
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        req.send()
    };
    let message = |b: &Value| b["message"].as_str().unwrap().to_lowercase();

    let body = refused(get(None).await.unwrap(), 401, "UNAUTHORIZED").await;
    assert!(message(&body).contains("authentication required"), "{body}");
    let body = refused(
        get(Some("Basic YWRhOnB3".into())).await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(message(&body).contains("malformed"), "{body}");
    let body = refused(
        get(Some("Bearer not-a-key".into())).await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(message(&body).contains("not an api key"), "{body}");

    // A well-formed key nobody issued and another person's rotated-away key read the same.
    let unknown = refused(
        get(Some("Bearer svc_0000000000000000000000000000000000".into()))
            .await
            .unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(message(&unknown).contains("not recognised"), "{unknown}");
    let key = json_of(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "ci", "permissions": ["monitors:read"]})),
        )
        .await,
        201,
    )
    .await;
    let (id, old) = (key["id"].as_str().unwrap(), key["token"].as_str().unwrap());
    let rotated = json_of(
        ada.call(Method::POST, &format!("/api-keys/{id}/rotate"), None)
            .await,
        200,
    )
    .await;
    let rotated_away = expect_error(
        get(Some(format!("Bearer {old}"))).await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert_eq!(rotated_away["message"], unknown["message"]);

    // The holder of a revoked key's whole secret is told it was revoked.
    json_of(
        ada.call(Method::POST, &format!("/api-keys/{id}/revoke"), None)
            .await,
        200,
    )
    .await;
    let new = rotated["token"].as_str().unwrap();
    let body = refused(
        get(Some(format!("Bearer {new}"))).await.unwrap(),
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(message(&body).contains("revoked"), "{body}");

    // An unknown session cookie.
    let res = Client::new()
        .get(srv.url("/monitors"))
        .header("Cookie", "svc.session_token=nonsense")
        .send()
        .await
        .unwrap();
    let body = refused(res, 401, "UNAUTHORIZED").await;
    assert!(message(&body).contains("sign in again"), "{body}");
    srv.stop().await;
}

#[tokio::test]
async fn expired_keys_and_sessions_are_told_they_expired() {
    let start = 1_800_000_000_000;
    let (srv, clock) = TestServer::with_clock(start).await;
    let ada = srv.sign_up("ada@example.com").await;
    let expires = tocsin::clock::rfc3339(start + 3_600_000);
    let key = json_of(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "ci", "permissions": ["monitors:read"], "expiresAt": expires})),
        )
        .await,
        201,
    )
    .await;
    let b = Bearer::new(&srv.base, key["token"].as_str().unwrap());
    json_of(b.call(Method::GET, "/monitors", None).await, 200).await;
    clock.advance_ms(2 * 3_600_000);
    let body = refused(
        b.call(Method::GET, "/monitors", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("API key has expired"),
        "{body}"
    );
    // A session past its lifetime is told to sign in again.
    clock.advance_ms(tocsin::auth::SESSION_TTL_MS);
    let body = refused(
        ada.call(Method::GET, "/monitors", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("session has expired"),
        "{body}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn missing_capabilities_are_named_with_where_they_come_from() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let b = Bearer::new(&srv.base, &ada.token(&["monitors:read"]).await);
    let body = refused(
        b.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "web", "type": "HTTP", "url": "https://example.com/health"})),
        )
        .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("monitors:write"), "{message}");
    assert!(message.contains("API key"), "{message}");

    // A session-only capability is never a token's, and the message says so.
    let all = Bearer::new(
        &srv.base,
        &ada.token(&["identity:read", "monitors:read"]).await,
    );
    let body = refused(
        all.call(Method::GET, "/audit-log", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("audit:read"), "{message}");
    assert!(message.contains("signed-in session"), "{message}");
    assert!(message.contains("never"), "{message}");
    // A person-only operation with no capability of its own names none.
    let body = refused(
        all.call(Method::GET, "/api-keys", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("signed-in person"), "{message}");
    assert!(!message.contains("audit:read"), "{message}");
    srv.stop().await;
}

/// The one field error of a 400, as (field, message).
async fn field_error(res: reqwest::Response) -> (String, String) {
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    let field = body["field"].as_str().unwrap_or_default().to_string();
    let message = body["flattened"]["fieldErrors"][&field][0]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for rust in [
        "expected",
        "i64",
        "u32",
        "struct",
        "invalid type",
        "invalid digit",
    ] {
        assert!(
            !body["message"].as_str().unwrap().contains(rust),
            "Rust words in {body}"
        );
    }
    (field, message)
}

#[tokio::test]
async fn validation_messages_speak_the_apis_words() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let monitor = |extra: Value| {
        let mut body = json!({"name": "web", "type": "HTTP", "url": "https://example.com/health"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        ada.call(Method::POST, "/monitors", Some(body))
    };

    let (field, message) = field_error(monitor(json!({"interval": "60"})).await).await;
    assert_eq!(field, "interval");
    assert!(
        message.starts_with("must be an integer number of seconds"),
        "{message}"
    );
    let (field, message) = field_error(monitor(json!({"retries": true})).await).await;
    assert_eq!(field, "retries");
    assert!(message.starts_with("must be an integer"), "{message}");
    let (field, message) = field_error(monitor(json!({"tags": "prod"})).await).await;
    assert_eq!(field, "tags");
    assert!(message.starts_with("must be an array"), "{message}");
    let (field, message) = field_error(monitor(json!({"type": "FTP"})).await).await;
    assert_eq!(field, "type");
    assert!(
        message.starts_with("must be one of") && message.contains("HTTP"),
        "{message}"
    );

    // A body that is not an object.
    let body = expect_error(
        ada.call(Method::POST, "/monitors", Some(json!([]))).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("must be a JSON object"), "{body}");
    assert!(!message.contains("CreateMonitor"), "{body}");
    let res = ada
        .client
        .post(srv.url("/monitors"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        body["message"].as_str().unwrap().contains("ends before"),
        "{body}"
    );

    // A bad interval blames the interval alone, not the timeout derived from it.
    let body = expect_error(
        monitor(json!({"interval": -1})).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let fields: Vec<&String> = body["flattened"]["fieldErrors"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(fields, ["interval"], "{body}");

    // One wording for a missing field, whether serde or the domain notices.
    let (field, message) = field_error(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"permissions": ["monitors:read"]})),
        )
        .await,
    )
    .await;
    assert_eq!((field.as_str(), message.as_str()), ("name", "is required"));
    let (field, message) = field_error(
        ada.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "web", "type": "HTTP"})),
        )
        .await,
    )
    .await;
    assert_eq!((field.as_str(), message.as_str()), ("url", "is required"));

    // Query strings.
    let (field, message) = field_error(
        ada.call(Method::GET, "/monitors/page?limit=abc", None)
            .await,
    )
    .await;
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("limit", "must be an integer")
    );
    let m = json_of(monitor(json!({})).await, 201).await;
    let id = m["id"].as_str().unwrap();
    let (field, message) = field_error(
        ada.call(
            Method::GET,
            &format!("/monitors/{id}/heartbeats?from=yesterday"),
            None,
        )
        .await,
    )
    .await;
    assert_eq!(field, "from");
    assert!(message.contains("RFC 3339"), "{message}");
    assert!(message.contains("2026-01-31T12:00:00Z"), "{message}");
    srv.stop().await;
}

#[tokio::test]
async fn unknown_query_parameters_are_named_once() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (field, message) =
        field_error(ada.call(Method::GET, "/monitors?limit=5", None).await).await;
    assert_eq!(field, "limit");
    assert!(message.starts_with("is not a known field"), "{message}");
    assert!(message.contains("search"), "{message}");
    srv.stop().await;
}

#[tokio::test]
async fn an_unknown_probe_key_is_told_to_use_a_current_one() {
    let srv = TestServer::start().await;
    let res = Client::new()
        .get(srv.url("/probe/v1/connect"))
        .bearer_auth("prb_wrong")
        .send()
        .await
        .unwrap();
    let body = refused(res, 401, "UNAUTHORIZED").await;
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("probe key"), "{message}");
    assert!(message.contains("tocsin probe-key create"), "{message}");
    srv.stop().await;
}
