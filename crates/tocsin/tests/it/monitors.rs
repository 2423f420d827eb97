//! The monitor resource over HTTP: every type, the exact field set, push tokens, validation
//! paths, version locks, workspace isolation, capabilities, plan limits, pages and filters,
//! stats, pause/resume, DNS_DIFF baselines, the change feed and the audit trail.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::monitors::create;
use common::{expect_error, json_of, keys, Bearer, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::auth::secrets;
use tocsin::cluster::feed::ChangeKind;
use tocsin::config::PlanQuota;
use tocsin::monitoring::monitor::Monitor;
use tocsin::store::monitors::{self, StateUpdate};
use tocsin_core::Status;

/// The spec's Monitor fields, plus the two it allows after `pushToken`.
const MONITOR_FIELDS: &[&str] = &[
    "id",
    "workspaceId",
    "projectIds",
    "name",
    "type",
    "status",
    "url",
    "host",
    "port",
    "interval",
    "retries",
    "timeout",
    "tags",
    "description",
    "config",
    "regions",
    "regionStrategy",
    "confirmationsRequired",
    "recoveryConfirmationsRequired",
    "minFailureDurationMs",
    "flapDetection",
    "consecutiveFailures",
    "consecutiveSuccesses",
    "pendingFailureSince",
    "active",
    "pushToken",
    "gracePeriod",
    "lastPushAt",
    "notificationChannelIds",
    "escalationPolicyId",
    "dependsOn",
    "lastCheckAt",
    "staleSince",
    "flappingSince",
];

fn expected_keys() -> BTreeSet<String> {
    MONITOR_FIELDS.iter().map(|s| s.to_string()).collect()
}

fn http_body(name: &str) -> Value {
    json!({"name": name, "type": "HTTP", "url": "https://example.com/health"})
}

/// The field names of a validation error, from `flattened.fieldErrors`.
fn error_fields(body: &Value) -> BTreeSet<String> {
    body["flattened"]["fieldErrors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn get(u: &User, path: &str) -> reqwest::Response {
    u.call(Method::GET, path, None).await
}

async fn set_status(srv: &TestServer, id: &str, status: Status, failures: i64) {
    let rows = monitors::update_state(
        srv.state.db().writer(),
        id,
        &StateUpdate {
            status,
            consecutive_failures: failures,
            consecutive_successes: 0,
            pending_failure_since: (failures > 0).then_some(1_700_000_000_000),
            status_changed_at: 1_700_000_000_000,
            last_check_at: Some(1_700_000_000_000),
        },
    )
    .await
    .unwrap();
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn creates_every_type_with_the_exact_field_set() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("types@example.com").await;
    let bodies = [
        json!({"name": "Web", "type": "HTTP", "url": "https://example.com/health",
               "config": {"method": "GET", "expect": {"statusCodes": [200, "3xx"]},
                          "assertions": [{"target": "statusCode", "operator": "eq", "value": 200}]}}),
        json!({"name": "Port", "type": "TCP", "host": "example.com", "port": 443,
               "config": {"tls": {"enabled": true}, "send": "PING\r\n", "expect": "PONG"}}),
        json!({"name": "Ping", "type": "PING", "host": "127.0.0.1", "config": {"count": 3}}),
        json!({"name": "Dns", "type": "DNS", "host": "example.com",
               "config": {"recordType": "A", "expected": ["93.184.216.34"]}}),
        json!({"name": "Diff", "type": "DNS_DIFF", "host": "example.com", "config": {"recordType": "MX"}}),
        json!({"name": "Ws", "type": "WEBSOCKET", "url": "wss://echo.example.com/socket",
               "config": {"send": "ping", "expect": "pong"}}),
        json!({"name": "Cron job", "type": "PUSH", "gracePeriod": 300,
               "config": {"schedule": "0 2 * * 1-5", "timezone": "Europe/Berlin"}}),
    ];
    for body in bodies {
        let m = create(&u, body.clone()).await;
        assert_eq!(keys(&m), expected_keys(), "fields of {}", body["type"]);
        assert_eq!(m["type"], body["type"]);
        assert_eq!(m["status"], "PENDING");
        assert_eq!(m["workspaceId"], json!(u.workspace_id));
        assert_eq!(m["config"], body["config"]);
        assert_eq!(m["regions"], json!(["local"]));
        assert_eq!(m["regionStrategy"], "all");
        assert_eq!(m["interval"], 60);
        assert_eq!(m["timeout"], 30);
        assert_eq!(m["retries"], 0);
        assert_eq!(m["confirmationsRequired"], 1);
        assert_eq!(m["recoveryConfirmationsRequired"], 1);
        assert_eq!(m["minFailureDurationMs"], 0);
        assert_eq!(m["consecutiveFailures"], 0);
        assert_eq!(m["pendingFailureSince"], Value::Null);
        assert_eq!(m["active"], true);
        assert_eq!(m["tags"], json!([]));
        assert_eq!(m["lastPushAt"], Value::Null);
        assert_eq!(m["lastCheckAt"], Value::Null);
        assert_eq!(m["staleSince"], Value::Null);
        assert_eq!(m["lastPushAt"], Value::Null);
        if body["type"] == "PUSH" {
            assert!(m["pushToken"].as_str().unwrap().len() >= 43);
            assert_eq!(m["gracePeriod"], 300);
        } else {
            assert_eq!(m["pushToken"], Value::Null);
            assert_eq!(m["gracePeriod"], Value::Null);
        }
        let id = m["id"].as_str().unwrap();
        let res = u.call(Method::GET, &format!("/monitors/{id}"), None).await;
        assert_eq!(res.headers()["etag"], "\"1\"");
        let got = json_of(res, 200).await;
        assert_eq!(keys(&got), expected_keys());
        assert_eq!(got["pushToken"], Value::Null);
        assert_eq!(got["name"], body["name"]);
    }
    // Timestamps are RFC 3339 with Z; the quorum round-trips inside config.
    let m = create(
        &u,
        json!({"name": "Q", "type": "HTTP", "url": "https://example.com", "interval": 20,
               "config": {"quorum": 1}}),
    )
    .await;
    assert_eq!(m["config"], json!({"quorum": 1}));
    assert_eq!(
        m["timeout"], 19,
        "default timeout stays below a short interval"
    );
    srv.stop().await;
}

#[tokio::test]
async fn push_token_is_shown_once_and_regenerates() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("push@example.com").await;
    let m = create(
        &u,
        json!({"name": "Backup", "type": "PUSH", "interval": 3600}),
    )
    .await;
    assert_eq!(m["gracePeriod"], 60, "default grace");
    let id = m["id"].as_str().unwrap().to_string();
    let token = m["pushToken"].as_str().unwrap().to_string();
    let db = srv.state.db().reader();
    let found = monitors::get_by_push_token_hash(db, &secrets::hash(&token))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, id);
    assert!(found.push_schedule().is_some());

    // Every read hides it.
    let got = json_of(
        u.call(Method::GET, &format!("/monitors/{id}"), None).await,
        200,
    )
    .await;
    assert_eq!(got["pushToken"], Value::Null);
    let all = json_of(u.call(Method::GET, "/monitors", None).await, 200).await;
    assert_eq!(all[0]["pushToken"], Value::Null);
    let page = json_of(u.call(Method::GET, "/monitors/page", None).await, 200).await;
    assert_eq!(page["monitors"][0]["pushToken"], Value::Null);

    let res = u
        .call(
            Method::POST,
            &format!("/monitors/{id}/regenerate-push-token"),
            None,
        )
        .await;
    let fresh = json_of(res, 200).await;
    assert_eq!(keys(&fresh), set(&["pushToken"]));
    let new_token = fresh["pushToken"].as_str().unwrap();
    assert_ne!(new_token, token);
    assert!(monitors::get_by_push_token_hash(db, &secrets::hash(&token))
        .await
        .unwrap()
        .is_none());
    assert!(
        monitors::get_by_push_token_hash(db, &secrets::hash(new_token))
            .await
            .unwrap()
            .is_some()
    );

    let web = create(&u, http_body("Web")).await;
    let res = u
        .call(
            Method::POST,
            &format!(
                "/monitors/{}/regenerate-push-token",
                web["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    expect_error(res, 409, "WRONG_MONITOR_TYPE").await;

    // Push settings are validated where they live.
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "P", "type": "PUSH", "gracePeriod": 31_622_401,
                        "url": "https://example.com",
                        "config": {"schedule": "not cron", "timezone": "Mars/Olympus", "grace": 5}})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(
        error_fields(&body),
        set(&[
            "gracePeriod",
            "url",
            "config.schedule",
            "config.timezone",
            "config.grace"
        ])
    );
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "H", "type": "HTTP", "url": "https://example.com", "gracePeriod": 60})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "gracePeriod");
    srv.stop().await;
}

#[tokio::test]
async fn validation_reports_every_field_with_its_path() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("valid@example.com").await;
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({
                "name": "",
                "type": "HTTP",
                "url": "ftp://example.com",
                "port": 80,
                "interval": 5,
                "retries": 11,
                "regions": ["mars"],
                "tags": ["ok", "ok"],
                "confirmationsRequired": 0,
                "minFailureDurationMs": -1,
                "config": {"expect": {"statusCodes": []},
                           "assertions": [{"target": "nope", "operator": "eq", "value": 1}]}
            })),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(
        error_fields(&body),
        set(&[
            "name",
            "url",
            "port",
            "interval",
            "retries",
            "regions.0",
            "tags.1",
            "confirmationsRequired",
            "minFailureDurationMs",
            "config.expect.statusCodes",
            "config.assertions.0.target",
        ])
    );
    assert_eq!(body["field"], "name");

    // Unknown top-level field, missing type, wrong enum.
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "x", "type": "HTTP", "bogus": 1})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "bogus"
    );
    let res = u
        .call(Method::POST, "/monitors", Some(json!({"name": "x"})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "type"
    );
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "x", "type": "SMTP"})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "type"
    );

    // Cross-field rules.
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(
                json!({"name": "x", "type": "TCP", "host": "example.com", "port": 70000,
                        "interval": 30, "timeout": 30, "regionStrategy": "round_robin",
                        "config": {"quorum": 1}}),
            ),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(
        error_fields(&body),
        set(&["port", "timeout", "config.quorum"])
    );
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(
                json!({"name": "x", "type": "HTTP", "url": "https://example.com",
                        "interval": 86_401, "config": {"quorum": 2}}),
            ),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&body), set(&["interval", "config.quorum"]));
    let res = u
        .call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "x", "type": "PING", "host": "example.com",
                        "projectIds": ["0190aaaa-0000-7000-8000-000000000000"]})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "projectIds.0");
    // Nothing was created by any of the failures.
    let all = json_of(u.call(Method::GET, "/monitors", None).await, 200).await;
    assert_eq!(all, json!([]));
    srv.stop().await;
}

#[tokio::test]
async fn updates_are_version_locked_and_revalidated() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("patch@example.com").await;
    let m = create(&u, http_body("Web")).await;
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());

    let res = u
        .client
        .patch(srv.url(&path))
        .header("If-Match", "\"1\"")
        .json(&json!({"name": "Web 2", "interval": 120, "tags": ["prod"], "description": "main"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["etag"], "\"2\"");
    let got = json_of(res, 200).await;
    assert_eq!(got["name"], "Web 2");
    assert_eq!(got["interval"], 120);
    assert_eq!(got["tags"], json!(["prod"]));
    assert_eq!(got["description"], "main");
    assert_eq!(
        got["url"], "https://example.com/health",
        "untouched fields stay"
    );

    // A second write based on the same read loses.
    let res = u
        .client
        .patch(srv.url(&path))
        .header("If-Match", "\"1\"")
        .json(&json!({"name": "stale"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    // Without If-Match it applies; null clears a nullable field.
    let got = json_of(
        u.call(Method::PATCH, &path, Some(json!({"description": null})))
            .await,
        200,
    )
    .await;
    assert_eq!(got["description"], Value::Null);
    assert_eq!(got["name"], "Web 2");

    // The merged monitor is validated: timeout must stay below the new interval.
    let res = u
        .call(
            Method::PATCH,
            &path,
            Some(json!({"interval": 20, "timeout": 25})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "timeout"
    );
    let res = u
        .call(Method::PATCH, &path, Some(json!({"type": "TCP"})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "type"
    );
    let res = u
        .call(Method::PATCH, &path, Some(json!({"url": null})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "url"
    );
    let res = u
        .call(
            Method::PATCH,
            &path,
            Some(json!({"config": {"expect": {"statusCodes": "x"}}})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "config.expect.statusCodes"
    );
    let res = u
        .call(Method::PATCH, &path, Some(json!({"pushToken": "x"})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "pushToken"
    );
    // Same type is accepted; config is replaced as a whole.
    let res = u
        .call(
            Method::PATCH,
            &path,
            Some(json!({"type": "HTTP", "config": {"method": "HEAD"}})),
        )
        .await;
    assert_eq!(res.headers()["etag"], "\"4\"");
    assert_eq!(json_of(res, 200).await["config"], json!({"method": "HEAD"}));

    // Delete with a stale If-Match is refused; then it goes.
    let res = u
        .client
        .delete(srv.url(&path))
        .header("If-Match", "\"1\"")
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = u.call(Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    expect_error(
        u.call(Method::GET, &path, None).await,
        404,
        "MONITOR_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn another_workspace_sees_nothing() {
    let srv = TestServer::start().await;
    let a = srv.sign_up("a@example.com").await;
    let b = srv.sign_up("b@example.com").await;
    let m = create(&a, http_body("A's")).await;
    let id = m["id"].as_str().unwrap();
    let path = format!("/monitors/{id}");
    for (method, p, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"name": "mine"}))),
        (Method::DELETE, path.clone(), None),
        (Method::POST, format!("{path}/pause"), None),
        (Method::POST, format!("{path}/resume"), None),
        (Method::POST, format!("{path}/regenerate-push-token"), None),
        (Method::POST, format!("{path}/accept-baseline"), None),
    ] {
        let res = b.call(method.clone(), &p, body).await;
        expect_error(res, 404, "MONITOR_NOT_FOUND").await;
    }
    assert_eq!(
        json_of(b.call(Method::GET, "/monitors", None).await, 200).await,
        json!([])
    );
    let stats = json_of(b.call(Method::GET, "/monitors/stats", None).await, 200).await;
    assert_eq!(stats["total"], 0);
    // A's monitor is untouched.
    let got = json_of(a.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(got["name"], "A's");
    assert_eq!(got["active"], true);
    srv.stop().await;
}

#[tokio::test]
async fn capabilities_are_enforced() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("caps@example.com").await;
    let reader = Bearer::new(&srv.base, &u.token(&["monitors:read"]).await);
    let writer = Bearer::new(
        &srv.base,
        &u.token(&["monitors:read", "monitors:write"]).await,
    );
    let deleter = Bearer::new(&srv.base, &u.token(&["monitors:delete"]).await);

    let res = reader
        .call(Method::POST, "/monitors", Some(http_body("x")))
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let m = json_of(
        writer
            .call(Method::POST, "/monitors", Some(http_body("x")))
            .await,
        201,
    )
    .await;
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());
    json_of(reader.call(Method::GET, &path, None).await, 200).await;
    json_of(reader.call(Method::GET, "/monitors/page", None).await, 200).await;
    json_of(reader.call(Method::GET, "/monitors/stats", None).await, 200).await;
    for (method, p) in [
        (Method::PATCH, path.clone()),
        (Method::POST, format!("{path}/pause")),
        (Method::POST, format!("{path}/resume")),
    ] {
        let res = reader.call(method, &p, Some(json!({}))).await;
        expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    }
    expect_error(
        deleter.call(Method::GET, &path, None).await,
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
    assert_eq!(
        deleter.call(Method::DELETE, &path, None).await.status(),
        204
    );
    srv.stop().await;
}

#[tokio::test]
async fn plan_limits_answer_402() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.plans.default = "free".into();
            c.plans.quotas.insert(
                "free".into(),
                PlanQuota {
                    monitors: Some(2),
                    min_interval_seconds: Some(60),
                    ..PlanQuota::default()
                },
            );
        })),
    })
    .await;
    let u = srv.sign_up("plan@example.com").await;
    let mut fast = http_body("fast");
    fast["interval"] = json!(30);
    let res = u.call(Method::POST, "/monitors", Some(fast)).await;
    expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    // Below the server's own minimum is a validation error, not a plan matter.
    let mut too_fast = http_body("too fast");
    too_fast["interval"] = json!(5);
    let res = u.call(Method::POST, "/monitors", Some(too_fast)).await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "interval"
    );

    let m = create(&u, http_body("one")).await;
    // A push monitor's interval is its expected check-in period, not check load.
    create(&u, json!({"name": "two", "type": "PUSH", "interval": 30})).await;
    let res = u
        .call(Method::POST, "/monitors", Some(http_body("three")))
        .await;
    expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());
    let res = u
        .call(
            Method::PATCH,
            &path,
            Some(json!({"interval": 30, "timeout": 10})),
        )
        .await;
    expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    json_of(
        u.call(Method::PATCH, &path, Some(json!({"interval": 90})))
            .await,
        200,
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn pages_filter_and_stay_stable_under_inserts() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("pages@example.com").await;
    let mut ids = Vec::new();
    for i in 0..7 {
        let mut body = http_body(&format!("Service {i}"));
        body["tags"] = json!(if i % 2 == 0 {
            vec!["Prod", "eu"]
        } else {
            vec!["staging"]
        });
        ids.push(create(&u, body).await["id"].as_str().unwrap().to_string());
    }
    let ping = create(
        &u,
        json!({"name": "Router", "type": "PING", "host": "10.0.0.1", "tags": ["production"]}),
    )
    .await;
    ids.push(ping["id"].as_str().unwrap().to_string());
    set_status(&srv, &ids[1], Status::Down, 3).await;

    // Walk the pages, inserting a monitor between them.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut inserted = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/monitors/page?limit=3&cursor={c}"),
            None => "/monitors/page?limit=3".to_string(),
        };
        let page = json_of(u.call(Method::GET, &path, None).await, 200).await;
        assert_eq!(keys(&page), set(&["monitors", "nextCursor"]));
        for m in page["monitors"].as_array().unwrap() {
            seen.push(m["id"].as_str().unwrap().to_string());
        }
        if inserted.is_none() {
            inserted = Some(
                create(&u, http_body("Late")).await["id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut expected = ids.clone();
    expected.push(inserted.unwrap());
    assert_eq!(
        seen, expected,
        "every monitor once, in id order, the late one last"
    );

    let names = |v: &Value| -> Vec<String> {
        let items = v.get("monitors").unwrap_or(v);
        items
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    let page = json_of(get(&u, "/monitors/page?tag=prod").await, 200).await;
    assert_eq!(
        names(&page),
        ["Service 0", "Service 2", "Service 4", "Service 6"]
    );
    let page = json_of(get(&u, "/monitors/page?type=PING").await, 200).await;
    assert_eq!(names(&page), ["Router"]);
    let page = json_of(get(&u, "/monitors/page?status=DOWN").await, 200).await;
    assert_eq!(names(&page), ["Service 1"]);
    let page = json_of(get(&u, "/monitors/page?search=sERVICE%205").await, 200).await;
    assert_eq!(names(&page), ["Service 5"]);
    let page = json_of(get(&u, "/monitors/page?search=100%25").await, 200).await;
    assert_eq!(
        names(&page),
        Vec::<String>::new(),
        "LIKE wildcards are literal"
    );
    let list = json_of(get(&u, "/monitors?tag=staging&search=service").await, 200).await;
    assert_eq!(names(&list), ["Service 1", "Service 3", "Service 5"]);
    let page = json_of(get(&u, "/monitors/page?tag=staging&limit=2").await, 200).await;
    assert_eq!(names(&page), ["Service 1", "Service 3"]);
    let next = page["nextCursor"].as_str().unwrap();
    let page = json_of(
        get(
            &u,
            &format!("/monitors/page?tag=staging&limit=2&cursor={next}"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(names(&page), ["Service 5"]);
    assert_eq!(page["nextCursor"], Value::Null);

    let project = json_of(
        u.call(
            Method::POST,
            "/projects",
            Some(json!({"name": "Edge", "monitorIds": [ids[7], ids[3]]})),
        )
        .await,
        201,
    )
    .await;
    let pid = project["id"].as_str().unwrap();
    let page = json_of(
        get(&u, &format!("/monitors/page?projectId={pid}")).await,
        200,
    )
    .await;
    assert_eq!(names(&page), ["Service 3", "Router"]);
    assert_eq!(page["monitors"][0]["projectIds"], json!([pid]));

    for (p, field) in [
        ("/monitors/page?limit=0", "limit"),
        ("/monitors/page?limit=201", "limit"),
        ("/monitors/page?cursor=%%%", "cursor"),
        ("/monitors/page?status=SLEEPY", "status"),
        ("/monitors/page?colour=red", "colour"),
    ] {
        let body = expect_error(get(&u, p).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(body["field"], field, "{p}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn stats_count_active_monitors_by_status_and_paused_apart() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("stats@example.com").await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(
            create(&u, http_body(&format!("m{i}"))).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    set_status(&srv, &ids[0], Status::Up, 0).await;
    set_status(&srv, &ids[1], Status::Up, 0).await;
    set_status(&srv, &ids[2], Status::Down, 2).await;
    set_status(&srv, &ids[3], Status::Degraded, 0).await;
    set_status(&srv, &ids[4], Status::Down, 1).await;
    json_of(
        u.call(Method::POST, &format!("/monitors/{}/pause", ids[4]), None)
            .await,
        200,
    )
    .await;
    let stats = json_of(u.call(Method::GET, "/monitors/stats", None).await, 200).await;
    assert_eq!(
        stats,
        json!({"up": 2, "down": 1, "degraded": 1, "paused": 1, "pending": 1, "changed": 0,
               "maintenance": 0, "total": 6})
    );
    srv.stop().await;
}

#[tokio::test]
async fn pause_and_resume_restart_monitoring_and_announce_it() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("pause@example.com").await;
    let mut feed = srv.state.feed().subscribe();
    let m = create(&u, http_body("Web")).await;
    let id = m["id"].as_str().unwrap().to_string();
    let path = format!("/monitors/{id}");
    set_status(&srv, &id, Status::Down, 4).await;

    let res = u.call(Method::POST, &format!("{path}/pause"), None).await;
    assert_eq!(res.headers()["etag"], "\"2\"");
    let got = json_of(res, 200).await;
    assert_eq!(got["active"], false);
    assert_eq!(got["status"], "DOWN", "pausing keeps the status");
    // Results that land after the pause are dropped.
    let late = monitors::update_state(
        srv.state.db().writer(),
        &id,
        &StateUpdate {
            status: Status::Up,
            consecutive_failures: 0,
            consecutive_successes: 1,
            pending_failure_since: None,
            status_changed_at: 1,
            last_check_at: Some(1),
        },
    )
    .await
    .unwrap();
    assert_eq!(late, 0);
    assert!(
        monitors::list_active_for_scheduling(srv.state.db().reader())
            .await
            .unwrap()
            .iter()
            .all(|r| r.id != id)
    );
    // Pausing again changes nothing.
    let res = u.call(Method::POST, &format!("{path}/pause"), None).await;
    assert_eq!(res.headers()["etag"], "\"2\"");

    let got = json_of(
        u.call(Method::POST, &format!("{path}/resume"), None).await,
        200,
    )
    .await;
    assert_eq!(got["active"], true);
    assert_eq!(got["status"], "PENDING");
    assert_eq!(got["consecutiveFailures"], 0);
    assert_eq!(got["pendingFailureSince"], Value::Null);
    let row = monitors::get(srv.state.db().reader(), &u.workspace_id, &id)
        .await
        .unwrap()
        .unwrap();
    assert!(row.started_at >= row.created_at);
    assert!(
        monitors::list_active_for_scheduling(srv.state.db().reader())
            .await
            .unwrap()
            .iter()
            .any(|r| r.id == id && Monitor::from_row(r).is_ok_and(|m| m.settings.check.is_some()))
    );

    json_of(
        u.call(Method::PATCH, &path, Some(json!({"retries": 2})))
            .await,
        200,
    )
    .await;
    assert_eq!(u.call(Method::DELETE, &path, None).await.status(), 204);
    let mut kinds = Vec::new();
    while let Ok(change) = feed.try_recv() {
        assert_eq!(change.monitor_id, id);
        kinds.push(change.kind);
    }
    assert_eq!(
        kinds,
        [
            ChangeKind::Created,
            ChangeKind::Paused,
            ChangeKind::Resumed,
            ChangeKind::Updated,
            ChangeKind::Deleted
        ]
    );
    srv.stop().await;
}

#[tokio::test]
async fn accepting_a_dns_baseline_clears_it_and_returns_to_pending() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("dns@example.com").await;
    let m = create(
        &u,
        json!({"name": "MX", "type": "DNS_DIFF", "host": "example.com", "config": {"recordType": "MX"}}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    let w = srv.state.db().writer();
    monitors::set_dns_baseline(w, &id, Some(&["10 mx.example.com.".to_string()]))
        .await
        .unwrap();
    set_status(&srv, &id, Status::Changed, 0).await;
    let got = json_of(
        u.call(
            Method::POST,
            &format!("/monitors/{id}/accept-baseline"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(got["status"], "PENDING");
    // The status change is recorded as a non-alerting `pending` event.
    let events = json_of(get(&u, &format!("/monitors/{id}/events")).await, 200).await;
    assert_eq!(events.as_array().unwrap().len(), 1);
    assert_eq!(events[0]["kind"], "pending");
    assert_eq!(events[0]["from"], "CHANGED");
    assert_eq!(events[0]["alert"], false);
    let row = monitors::get(srv.state.db().reader(), &u.workspace_id, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.dns_baseline(), None);

    // Changing the query forgets the baseline too.
    monitors::set_dns_baseline(w, &id, Some(&["x".to_string()]))
        .await
        .unwrap();
    let path = format!("/monitors/{id}");
    json_of(
        u.call(Method::PATCH, &path, Some(json!({"name": "MX!"})))
            .await,
        200,
    )
    .await;
    let row = monitors::get(srv.state.db().reader(), &u.workspace_id, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.dns_baseline(),
        Some(vec!["x".to_string()]),
        "a rename keeps it"
    );
    json_of(
        u.call(
            Method::PATCH,
            &path,
            Some(json!({"config": {"recordType": "TXT"}})),
        )
        .await,
        200,
    )
    .await;
    let row = monitors::get(srv.state.db().reader(), &u.workspace_id, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.dns_baseline(), None);

    let web = create(&u, http_body("Web")).await;
    let res = u
        .call(
            Method::POST,
            &format!("/monitors/{}/accept-baseline", web["id"].as_str().unwrap()),
            None,
        )
        .await;
    expect_error(res, 409, "WRONG_MONITOR_TYPE").await;
    srv.stop().await;
}

#[tokio::test]
async fn every_write_is_audited_without_secrets() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("audit@example.com").await;
    let m = create(&u, json!({"name": "Job", "type": "PUSH"})).await;
    let token = m["pushToken"].as_str().unwrap().to_string();
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());
    json_of(
        u.call(Method::PATCH, &path, Some(json!({"name": "Job 2"})))
            .await,
        200,
    )
    .await;
    json_of(
        u.call(Method::POST, &format!("{path}/pause"), None).await,
        200,
    )
    .await;
    json_of(
        u.call(Method::POST, &format!("{path}/resume"), None).await,
        200,
    )
    .await;
    let fresh = json_of(
        u.call(Method::POST, &format!("{path}/regenerate-push-token"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(u.call(Method::DELETE, &path, None).await.status(), 204);
    let log = json_of(
        u.call(
            Method::GET,
            "/audit-log?resourceType=monitor&limit=200",
            None,
        )
        .await,
        200,
    )
    .await;
    let text = log.to_string();
    assert!(!text.contains(&token) && !text.contains(fresh["pushToken"].as_str().unwrap()));
    let mut actions: Vec<String> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["resourceId"], m["id"]);
            e["action"].as_str().unwrap().to_string()
        })
        .collect();
    actions.reverse();
    assert_eq!(
        actions,
        [
            "monitor.create",
            "monitor.update",
            "monitor.pause",
            "monitor.resume",
            "monitor.regenerate_push_token",
            "monitor.delete"
        ]
    );
    srv.stop().await;
}

#[tokio::test]
async fn reserved_seqs_are_a_block_the_next_monitor_follows() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("seq@example.com").await;
    let first = create(
        &u,
        json!({"name": "a", "type": "HTTP", "url": "http://127.0.0.1:9/"}),
    )
    .await;
    let a = monitors::get_by_id(srv.state.db().reader(), first["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    let mut tx = srv.state.db().begin().await.unwrap();
    let block = monitors::reserve_seqs(&mut *tx, 5).await.unwrap();
    let after = monitors::next_seq(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    // The block starts right after the last seq handed out and the next one skips past it.
    assert_eq!(block, a.seq + 1);
    assert_eq!(after, block + 5);
    srv.stop().await;
}

#[tokio::test]
async fn pause_and_resume_are_version_locked() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("lock@example.com").await;
    let m = create(&u, http_body("Web")).await;
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());
    let post = |action: &str, version: &str| {
        u.client
            .post(srv.url(&format!("{path}/{action}")))
            .header("If-Match", format!("\"{version}\""))
            .send()
    };
    let res = post("pause", "1").await.unwrap();
    assert_eq!(res.headers()["etag"], "\"2\"");
    assert_eq!(json_of(res, 200).await["active"], false);
    // Based on the read before the pause: stale.
    expect_error(post("resume", "1").await.unwrap(), 409, "VERSION_CONFLICT").await;
    let res = post("resume", "2").await.unwrap();
    assert_eq!(res.headers()["etag"], "\"3\"");
    assert_eq!(json_of(res, 200).await["active"], true);
    // A stale delete leaves the monitor; a current one removes it.
    let del = |version: &str| {
        u.client
            .delete(srv.url(&path))
            .header("If-Match", format!("\"{version}\""))
            .send()
    };
    expect_error(del("2").await.unwrap(), 409, "VERSION_CONFLICT").await;
    assert_eq!(del("3").await.unwrap().status(), 204);
    srv.stop().await;
}
