//! Personal access tokens end to end: minting, the one-time secret, listing, version-locked
//! updates, rotation, revocation, expiry, surfaces, capability limits and `lastUsedAt`.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

const KEY_FIELDS: [&str; 11] = [
    "id",
    "name",
    "tokenHint",
    "surfaces",
    "permissions",
    "status",
    "expiresAt",
    "lastUsedAt",
    "createdBy",
    "createdAt",
    "updatedAt",
];

fn keys_of(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(fields: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

#[tokio::test]
async fn mint_shows_the_secret_once_and_stores_only_a_hash() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let res = ada.call(Method::POST, "/api-keys", Some(json!({"name": "ci", "permissions": ["monitors:read", "identity:read"], "surfaces": ["rest", "mcp"]}))).await;
    let issued = json_of(res, 201).await;
    let token = issued["token"].as_str().unwrap().to_string();
    assert!(
        token.starts_with("svc_") && token.len() >= 4 + 43,
        "{token}"
    );
    let mut expected = sorted(&KEY_FIELDS);
    expected.push("token".into());
    expected.sort();
    assert_eq!(keys_of(&issued), expected);
    assert_eq!(issued["status"], "ACTIVE");
    assert_eq!(issued["createdBy"], ada.user_id.as_str());
    assert!(issued["tokenHint"]
        .as_str()
        .unwrap()
        .ends_with(&token[token.len() - 4..]));
    let id = issued["id"].as_str().unwrap();

    // Reads never show it again.
    let one = ada
        .call(Method::GET, &format!("/api-keys/{id}"), None)
        .await;
    assert!(one.headers().get("etag").is_some());
    let one = json_of(one, 200).await;
    assert_eq!(keys_of(&one), sorted(&KEY_FIELDS));
    let list = json_of(ada.call(Method::GET, "/api-keys", None).await, 200).await;
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k.get("token").is_none()));
    // The database holds no copy of the secret.
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM api_keys")
        .fetch_all(srv.state.db().reader())
        .await
        .unwrap();
    assert!(stored
        .iter()
        .all(|h| h != &token && !h.contains(&token[4..])));

    let bearer = Bearer::new(&srv.base, &token);
    assert_eq!(
        json_of(bearer.call(Method::GET, "/workspace", None).await, 200).await["id"],
        ada.workspace_id.as_str()
    );
    srv.stop().await;
}

#[tokio::test]
async fn permissions_are_validated_and_enforced() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    // Session-only capabilities cannot go on a token.
    let res = ada
        .call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "x", "permissions": ["monitors:read", "audit:read"]})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "permissions.1");
    // Unknown capability: a type error at its index.
    let res = ada
        .call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "x", "permissions": ["monitors:fly"]})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "permissions.0"
    );
    let res = ada
        .call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "", "permissions": []})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        body["flattened"]["fieldErrors"]["name"].is_array()
            && body["flattened"]["fieldErrors"]["permissions"].is_array()
    );

    // A key holds exactly its permissions.
    let token = ada.token(&["monitors:read"]).await;
    let b = Bearer::new(&srv.base, &token);
    let body = expect_error(
        b.call(Method::GET, "/workspace", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    assert!(body["message"].as_str().unwrap().contains("identity:read"));
    // Session-only operations refuse tokens, even all-permission ones.
    let all = ada.token(&["identity:read", "monitors:read"]).await;
    let b = Bearer::new(&srv.base, &all);
    expect_error(
        b.call(Method::GET, "/audit-log", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    expect_error(
        b.call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"name": "x"})),
        )
        .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    // A token cannot mint tokens.
    expect_error(
        b.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "x", "permissions": ["identity:read"]})),
        )
        .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn surfaces_are_enforced() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let mcp_only = ada.token_on(&["identity:read"], &["mcp"]).await;
    let res = Bearer::new(&srv.base, &mcp_only)
        .call(Method::GET, "/workspace", None)
        .await;
    expect_error(res, 403, "SURFACE_NOT_ALLOWED").await;
    srv.stop().await;
}

#[tokio::test]
async fn update_is_version_locked_and_rotate_and_revoke_kill_the_old_secret_at_once() {
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
    let id = issued["id"].as_str().unwrap().to_string();
    let old = issued["token"].as_str().unwrap().to_string();
    let b = Bearer::new(&srv.base, &old);
    assert_eq!(
        b.call(Method::GET, "/workspace", None).await.status(),
        200,
        "warm the key cache"
    );

    let res = ada
        .call(Method::GET, &format!("/api-keys/{id}"), None)
        .await;
    let etag = res
        .headers()
        .get("etag")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let res = ada
        .client
        .patch(format!("{}/api-keys/{id}", srv.base))
        .header("if-match", &etag)
        .json(&json!({"name": "renamed", "permissions": ["identity:read", "monitors:read"]}))
        .send()
        .await
        .unwrap();
    let updated = json_of(res, 200).await;
    assert_eq!(updated["name"], "renamed");
    assert_eq!(
        updated["permissions"],
        json!(["identity:read", "monitors:read"])
    );
    // The same (now stale) ETag again: conflict, nothing changes.
    let res = ada
        .client
        .patch(format!("{}/api-keys/{id}", srv.base))
        .header("if-match", &etag)
        .json(&json!({"name": "lost update"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    assert_eq!(
        json_of(
            ada.call(Method::GET, &format!("/api-keys/{id}"), None)
                .await,
            200
        )
        .await["name"],
        "renamed"
    );
    // Without If-Match the write applies.
    assert_eq!(
        ada.call(
            Method::PATCH,
            &format!("/api-keys/{id}"),
            Some(json!({"name": "applied"}))
        )
        .await
        .status(),
        200
    );

    let rotated = json_of(
        ada.call(Method::POST, &format!("/api-keys/{id}/rotate"), None)
            .await,
        200,
    )
    .await;
    let new = rotated["token"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(rotated["id"], id.as_str());
    expect_error(
        b.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    let b2 = Bearer::new(&srv.base, &new);
    assert_eq!(b2.call(Method::GET, "/workspace", None).await.status(), 200);

    let revoked = json_of(
        ada.call(Method::POST, &format!("/api-keys/{id}/revoke"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(revoked["status"], "REVOKED");
    expect_error(
        b2.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(
        ada.call(Method::POST, &format!("/api-keys/{id}/rotate"), None)
            .await,
        409,
        "API_KEY_REVOKED",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn expiry_and_last_used_follow_the_clock() {
    let start = 1_800_000_000_000;
    let (srv, clock) = TestServer::with_clock(start).await;
    let ada = srv.sign_up("ada@example.com").await;
    let expires = tocsin::clock::rfc3339(start + 3_600_000);
    let issued = json_of(
        ada.call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "short", "permissions": ["identity:read"], "expiresAt": expires})),
        )
        .await,
        201,
    )
    .await;
    let id = issued["id"].as_str().unwrap().to_string();
    let b = Bearer::new(&srv.base, issued["token"].as_str().unwrap());
    // Past expiry dates are refused.
    let res = ada.call(Method::POST, "/api-keys", Some(json!({"name": "x", "permissions": ["identity:read"], "expiresAt": tocsin::clock::rfc3339(start - 1000)}))).await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "expiresAt"
    );

    assert_eq!(b.call(Method::GET, "/workspace", None).await.status(), 200);
    let wait_for_last_used = |expect: i64| {
        let ada = &ada;
        let id = id.clone();
        async move {
            for _ in 0..50 {
                let k = json_of(
                    ada.call(Method::GET, &format!("/api-keys/{id}"), None)
                        .await,
                    200,
                )
                .await;
                if k["lastUsedAt"] == json!(tocsin::clock::rfc3339(expect)) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            panic!("lastUsedAt never became {}", tocsin::clock::rfc3339(expect));
        }
    };
    wait_for_last_used(start).await;
    // Uses within the minute do not write again.
    clock.advance_ms(30_000);
    assert_eq!(b.call(Method::GET, "/workspace", None).await.status(), 200);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    wait_for_last_used(start).await;
    clock.advance_ms(31_000);
    assert_eq!(b.call(Method::GET, "/workspace", None).await.status(), 200);
    wait_for_last_used(start + 61_000).await;

    clock.advance_ms(3_600_000);
    expect_error(
        b.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn other_workspaces_keys_are_not_found() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
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
    for (m, p) in [
        (Method::GET, format!("/api-keys/{id}")),
        (Method::PATCH, format!("/api-keys/{id}")),
        (Method::POST, format!("/api-keys/{id}/rotate")),
        (Method::POST, format!("/api-keys/{id}/revoke")),
    ] {
        let body = if m == Method::PATCH {
            Some(json!({"name": "mine now"}))
        } else {
            None
        };
        expect_error(bob.call(m, &p, body).await, 404, "API_KEY_NOT_FOUND").await;
    }
    assert!(json_of(bob.call(Method::GET, "/api-keys", None).await, 200)
        .await
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        json_of(
            ada.call(Method::GET, &format!("/api-keys/{id}"), None)
                .await,
            200
        )
        .await["status"],
        "ACTIVE"
    );
    srv.stop().await;
}

#[tokio::test]
async fn api_key_quota_answers_402_and_existing_keys_keep_working() {
    let srv = TestServer::start_with(common::Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.plans.quotas.insert(
                "self-hosted".into(),
                tocsin::config::PlanQuota {
                    api_keys: Some(1),
                    ..Default::default()
                },
            );
        })),
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    let first = ada.token(&["identity:read"]).await;
    let res = ada
        .call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "two", "permissions": ["identity:read"]})),
        )
        .await;
    expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    assert_eq!(
        Bearer::new(&srv.base, &first)
            .call(Method::GET, "/workspace", None)
            .await
            .status(),
        200
    );
    srv.stop().await;
}
