//! Stored values this build cannot read, written straight into the database as a damaged or
//! foreign row would be: each is reported (counted in `tocsin_corrupt_rows_total{table,column}`
//! on `/metrics`, and logged) and the read does what `store::corrupt` decides — a list leaves
//! the row out and answers the rest, a single-record read answers 500 `INTERNAL`, a credential
//! is refused — never a default (a `member` role, an INVESTIGATING incident, a dropped
//! capability, an HTTP monitor, the `all` strategy, a rendered email).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::monitors::{create as create_monitor, events};
use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// The corrupt values counted so far in `table.column` (the registry is process-wide: tests
/// share it, so callers compare with a count taken before).
async fn corrupt_count(srv: &TestServer, table: &str, column: &str) -> f64 {
    let text = reqwest::get(srv.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let (t, c) = (format!("table=\"{table}\""), format!("column=\"{column}\""));
    text.lines()
        .filter(|l| l.starts_with("tocsin_corrupt_rows_total{") && l.contains(&t) && l.contains(&c))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn write(srv: &TestServer, sql: &str, binds: &[&str]) {
    let mut q = sqlx::query(sql);
    for b in binds {
        q = q.bind(*b);
    }
    let done = q.execute(srv.state.db().writer()).await.unwrap();
    assert_eq!(done.rows_affected(), 1, "{sql}");
}

#[tokio::test]
async fn a_corrupt_role_is_counted_left_out_of_the_list_and_an_error_on_its_own() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    srv.verify_email(&bob.email).await;
    common::join(&ada, &bob, "member").await;
    let before = corrupt_count(&srv, "memberships", "role").await;
    write(
        &srv,
        "UPDATE memberships SET role = 'overlord' WHERE workspace_id = $1 AND user_id = $2",
        &[&ada.workspace_id, &bob.user_id],
    )
    .await;

    // The list answers, without the row it cannot read (it used to show Bob as a member).
    let members = json_of(ada.call(Method::GET, "/workspace/members", None).await, 200).await;
    let ids: Vec<&str> = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["userId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ada.user_id.as_str()]);
    assert!(corrupt_count(&srv, "memberships", "role").await >= before + 1.0);

    // The record alone, and a change that starts from it, are errors, not a guessed role.
    let path = format!("/workspace/members/{}", bob.user_id);
    expect_error(ada.call(Method::GET, &path, None).await, 500, "INTERNAL").await;
    expect_error(
        ada.call(Method::PATCH, &path, Some(json!({"role": "admin"})))
            .await,
        500,
        "INTERNAL",
    )
    .await;
    assert!(corrupt_count(&srv, "memberships", "role").await >= before + 3.0);

    // Repaired, it reads again.
    write(
        &srv,
        "UPDATE memberships SET role = 'member' WHERE workspace_id = $1 AND user_id = $2",
        &[&ada.workspace_id, &bob.user_id],
    )
    .await;
    let m = json_of(ada.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(m["role"], "member");
    srv.stop().await;
}

#[tokio::test]
async fn an_api_key_with_an_unknown_capability_is_refused_not_trimmed() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token(&["identity:read", "monitors:read"]).await;
    let keys = json_of(ada.call(Method::GET, "/api-keys", None).await, 200).await;
    let id = keys[0]["id"].as_str().unwrap().to_string();
    let before = corrupt_count(&srv, "api_keys", "permissions").await;
    write(
        &srv,
        "UPDATE api_keys SET permissions = permissions || ',monitors:explode' WHERE id = $1",
        &[&id],
    )
    .await;

    // Dropping the unknown word would leave a key that quietly does something else.
    let bearer = Bearer::new(&srv.base, &token);
    expect_error(
        bearer.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(corrupt_count(&srv, "api_keys", "permissions").await >= before + 1.0);
    // The key list leaves it out and answers; the key alone is an error.
    let keys = json_of(ada.call(Method::GET, "/api-keys", None).await, 200).await;
    assert_eq!(keys.as_array().unwrap().len(), 0, "{keys}");
    expect_error(
        ada.call(Method::GET, &format!("/api-keys/{id}"), None)
            .await,
        500,
        "INTERNAL",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn a_corrupt_incident_status_is_counted_not_read_as_investigating() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let page = json_of(
        ada.call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Status", "slug": "corrupt-incidents"})),
        )
        .await,
        201,
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let mut ids = Vec::new();
    for title in ["good", "bad"] {
        let v = json_of(
            ada.call(
                Method::POST,
                "/incidents",
                Some(json!({"statusPageId": pid, "title": title})),
            )
            .await,
            201,
        )
        .await;
        ids.push(v["incident"]["id"].as_str().unwrap().to_string());
    }
    let before = corrupt_count(&srv, "incidents", "status").await;
    write(
        &srv,
        "UPDATE incidents SET status = 'PANICKING' WHERE id = $1",
        &[&ids[1]],
    )
    .await;

    let list = json_of(ada.call(Method::GET, "/incidents", None).await, 200).await;
    let titles: Vec<&Value> = list["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["title"])
        .collect();
    assert_eq!(titles, [&json!("good")]);
    assert!(corrupt_count(&srv, "incidents", "status").await >= before + 1.0);
    let path = format!("/incidents/{}", ids[1]);
    expect_error(ada.call(Method::GET, &path, None).await, 500, "INTERNAL").await;
    // Resolving starts from the status: it cannot take the row for unresolved.
    expect_error(
        ada.call(Method::POST, &format!("{path}/resolve"), None)
            .await,
        500,
        "INTERNAL",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn an_event_of_an_unknown_kind_is_counted_and_left_out_of_the_events() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let m = create_monitor(
        &ada,
        json!({"name": "api", "type": "HTTP", "url": "http://127.0.0.1:9/",
               "interval": 3600, "timeout": 5}),
    )
    .await;
    let id = m["id"].as_str().unwrap();
    let before = corrupt_count(&srv, "monitor_events", "kind").await;
    write(
        &srv,
        "INSERT INTO monitor_events (id, monitor_id, workspace_id, seq, kind, from_status, \
         to_status, message, alert, created_at) \
         VALUES ('zzzz-corrupt-event', $1, $2, 1000000, 'exploded', 'UP', 'DOWN', NULL, 1, 0)",
        &[id, &ada.workspace_id],
    )
    .await;
    let listed = events(&ada, id).await;
    assert!(
        listed.iter().all(|e| e["id"] != "zzzz-corrupt-event"),
        "{listed:?}"
    );
    assert!(corrupt_count(&srv, "monitor_events", "kind").await >= before + 1.0);
    srv.stop().await;
}

#[tokio::test]
async fn a_corrupt_monitor_status_is_counted_and_an_error_not_read_as_pending() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = common::monitors::push_monitor(&ada, json!({})).await;
    let before = corrupt_count(&srv, "monitors", "status").await;
    write(
        &srv,
        "UPDATE monitors SET status = 'EXPLODED' WHERE id = $1",
        &[&id],
    )
    .await;
    let path = format!("/monitors/{id}");
    expect_error(ada.call(Method::GET, &path, None).await, 500, "INTERNAL").await;
    expect_error(
        ada.call(Method::GET, "/monitors", None).await,
        500,
        "INTERNAL",
    )
    .await;
    assert!(corrupt_count(&srv, "monitors", "status").await >= before + 2.0);
    srv.stop().await;
}

#[tokio::test]
async fn a_heartbeat_with_an_unknown_status_code_is_counted_and_left_out() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, token) = common::monitors::push_monitor(&ada, json!({})).await;
    for status in ["up", "down"] {
        let res = common::monitors::push(&srv, &token, &format!("?status={status}")).await;
        assert_eq!(res.status(), 202);
        // Two distinct timestamps, so the newest alone can be damaged.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let all = common::monitors::heartbeats(&ada, &id, "").await;
    assert_eq!(all.len(), 2, "{all:?}");
    let before = corrupt_count(&srv, "heartbeats", "status").await;
    write(
        &srv,
        "UPDATE heartbeats SET status = 99 WHERE ts = (SELECT MAX(ts) FROM heartbeats)",
        &[],
    )
    .await;
    let left = common::monitors::heartbeats(&ada, &id, "").await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["status"], json!("UP"));
    assert!(corrupt_count(&srv, "heartbeats", "status").await >= before + 1.0);
    srv.stop().await;
}

#[tokio::test]
async fn a_corrupt_monitor_type_or_region_strategy_is_counted_and_an_error_not_a_default() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let path_of = |id: &str| format!("/monitors/{id}");
    for (column, bad, good) in [
        ("type", "TELEPATHY", "PUSH"),
        ("region_strategy", "sideways", "all"),
    ] {
        let (id, _) = common::monitors::push_monitor(&ada, json!({})).await;
        let before = corrupt_count(&srv, "monitors", column).await;
        write(
            &srv,
            &format!("UPDATE monitors SET {column} = $1 WHERE id = $2"),
            &[bad, &id],
        )
        .await;
        // Neither an HTTP monitor nor the `all` strategy is guessed: the record, the list
        // and an edit that keeps the stored value are errors.
        let path = path_of(&id);
        expect_error(ada.call(Method::GET, &path, None).await, 500, "INTERNAL").await;
        expect_error(
            ada.call(Method::GET, "/monitors", None).await,
            500,
            "INTERNAL",
        )
        .await;
        expect_error(
            ada.call(Method::PATCH, &path, Some(json!({"name": "renamed"})))
                .await,
            500,
            "INTERNAL",
        )
        .await;
        assert!(
            corrupt_count(&srv, "monitors", column).await >= before + 3.0,
            "{column}"
        );
        // Repaired, it reads again.
        write(
            &srv,
            &format!("UPDATE monitors SET {column} = $1 WHERE id = $2"),
            &[good, &id],
        )
        .await;
        let m = json_of(ada.call(Method::GET, &path, None).await, 200).await;
        assert_eq!(m["type"], "PUSH");
        assert_eq!(m["regionStrategy"], "all");
    }
    srv.stop().await;
}

/// The status and error of delivery `id` once the worker has settled it (not PENDING).
async fn settled(srv: &TestServer, id: &str) -> (String, Option<String>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let row: (String, Option<String>) =
            sqlx::query_as("SELECT status, error FROM deliveries WHERE id = $1")
                .bind(id)
                .fetch_one(srv.state.db().reader())
                .await
                .unwrap();
        if row.0 != "PENDING" {
            return row;
        }
        assert!(std::time::Instant::now() < deadline, "{id} still pending");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_subscriber_email_of_an_unknown_event_or_unreadable_payload_fails_and_is_counted() {
    let (srv, _sink) = common::smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let page_id = common::pages::page(&ada, "corrupt-mail").await;
    json_of(
        ada.call(
            Method::POST,
            &format!("/status-pages/{page_id}/publish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let res =
        common::pages::subscribe(&srv, "corrupt-mail", json!({"email": "r@example.com"})).await;
    assert_eq!(res.status(), 202);
    let (subscriber,): (String,) =
        sqlx::query_as("SELECT id FROM subscribers WHERE email = 'r@example.com'")
            .fetch_one(srv.state.db().reader())
            .await
            .unwrap();
    let (events_before, payloads_before) = (
        corrupt_count(&srv, "deliveries", "event").await,
        corrupt_count(&srv, "deliveries", "payload").await,
    );
    for (id, event, payload) in [
        ("zzzz-corrupt-event", "subscription.explode", "{}"),
        ("zzzz-corrupt-payload", "subscription.confirm", "{not json"),
    ] {
        write(
            &srv,
            "INSERT INTO deliveries (id, workspace_id, channel_id, alert_id, event, message_id, \
             payload, status, attempt, due_at, created_at, subscriber_id) \
             VALUES ($1, $2, NULL, NULL, $3, $1, $4, 'PENDING', 1, 0, 0, $5)",
            &[id, &ada.workspace_id, event, payload, &subscriber],
        )
        .await;
    }
    // Neither is rendered as something else, nor retried: waiting will not make it readable.
    let (status, error) = settled(&srv, "zzzz-corrupt-event").await;
    assert_eq!(status, "FAILED");
    assert_eq!(
        error.as_deref(),
        Some("no subscriber email for \"subscription.explode\"")
    );
    let (status, error) = settled(&srv, "zzzz-corrupt-payload").await;
    assert_eq!(status, "FAILED");
    assert!(
        error
            .as_deref()
            .unwrap()
            .starts_with("the stored payload is not JSON"),
        "{error:?}"
    );
    assert!(corrupt_count(&srv, "deliveries", "event").await >= events_before + 1.0);
    assert!(corrupt_count(&srv, "deliveries", "payload").await >= payloads_before + 1.0);
    srv.stop().await;
}
