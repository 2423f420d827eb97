//! Durable delivery: the retry schedule on the driven clock (RETRYING attempts, then
//! DELIVERED, one webhook-id throughout), the schedule running out (FAILED), the history's
//! filters and pages, disabled channels, the metrics, and two servers on one PostgreSQL
//! sharing the queue without sending anything twice.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::channels::{channel, history, settled, webhook, WAIT};
use common::receiver::Receiver;
use common::{expect_error, json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::deliver::RETRY_SCHEDULE_SECS;
use tocsin::alerting::event::AlertEvent;
use tocsin::alerting::outbox::{self, Notification};

const START_MS: i64 = 1_767_225_600_000;

/// Waits until the channel's history has `n` items and the newest is not PENDING when
/// `settled`, or is PENDING otherwise.
async fn history_of(u: &User, channel_id: &str, n: usize) -> Vec<Value> {
    let started = std::time::Instant::now();
    loop {
        let items = history(u, channel_id, "").await;
        if items.len() == n {
            return items;
        }
        assert!(
            started.elapsed() < WAIT,
            "wanted {n} attempts, have {items:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_failing_receiver_is_retried_on_schedule_then_delivered() {
    let (srv, clock) = TestServer::with_clock(START_MS).await;
    let rx = Receiver::start().await;
    rx.then(&[500, 503]);
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = webhook(&ada, &rx).await;
    json_of(
        ada.call(
            Method::POST,
            &format!("/notification-channels/{id}/test"),
            None,
        )
        .await,
        202,
    )
    .await;
    rx.wait_for(1, WAIT).await;
    let items = history_of(&ada, &id, 2).await;
    assert_eq!(
        (items[0]["status"].as_str(), items[0]["attempt"].as_i64()),
        (Some("PENDING"), Some(2))
    );
    assert_eq!(items[1]["status"], "RETRYING");
    assert_eq!(items[1]["responseStatus"], 500);
    assert!(items[1]["error"].as_str().unwrap().starts_with("HTTP 500"));

    // The first wait is 5 s ± 10 %: nothing at 4 s, the retry by 6 s.
    clock.advance_ms(4_000);
    srv.state.wake_deliveries();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), 1, "retried early");
    clock.advance_ms(2_000);
    srv.state.wake_deliveries();
    rx.wait_for(2, WAIT).await;
    let items = history_of(&ada, &id, 3).await;
    assert_eq!(items[1]["status"], "RETRYING");
    assert_eq!(items[1]["responseStatus"], 503);
    // The second wait is 30 s ± 10 %.
    clock.advance_ms(26_000);
    srv.state.wake_deliveries();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), 2, "retried early");
    clock.advance_ms(8_000);
    srv.state.wake_deliveries();
    rx.wait_for(3, WAIT).await;
    let started = std::time::Instant::now();
    let items = loop {
        let items = history(&ada, &id, "").await;
        if items[0]["status"] == "DELIVERED" {
            break items;
        }
        assert!(started.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let statuses: Vec<_> = items
        .iter()
        .map(|d| {
            (
                d["status"].as_str().unwrap(),
                d["attempt"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [("DELIVERED", 3), ("RETRYING", 2), ("RETRYING", 1)]
    );
    let got = rx.received();
    assert!(got
        .iter()
        .all(|r| r.header("webhook-id") == got[0].header("webhook-id")));
    assert_eq!(rx.effects(), 1);

    // Filters and pages.
    assert_eq!(history(&ada, &id, "?status=RETRYING").await.len(), 2);
    assert_eq!(history(&ada, &id, "?event=test").await.len(), 3);
    assert_eq!(history(&ada, &id, "?event=alert.opened").await.len(), 0);
    let page = json_of(
        ada.call(
            Method::GET,
            &format!("/notification-channels/{id}/deliveries?limit=2"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(page["deliveries"].as_array().unwrap().len(), 2);
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = history(&ada, &id, &format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0]["attempt"], 1);
    expect_error(
        ada.call(
            Method::GET,
            &format!("/notification-channels/{id}/deliveries?status=LOST"),
            None,
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let err = expect_error(
        ada.call(
            Method::GET,
            &format!("/notification-channels/{id}/deliveries?event=alert.exploded"),
            None,
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["field"], "event");
    srv.stop().await;
}

#[tokio::test]
async fn the_schedule_runs_out_in_failed() {
    let (srv, clock) = TestServer::with_clock(START_MS).await;
    let rx = Receiver::start().await;
    rx.set_default(500);
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = webhook(&ada, &rx).await;
    ada.call(
        Method::POST,
        &format!("/notification-channels/{id}/test"),
        None,
    )
    .await;
    for (i, wait) in RETRY_SCHEDULE_SECS.iter().enumerate() {
        rx.wait_for(i + 1, WAIT).await;
        history_of(&ada, &id, i + 2).await;
        clock.advance_ms(i64::try_from(*wait).unwrap() * 1_100 + 1_000);
        srv.state.wake_deliveries();
    }
    rx.wait_for(RETRY_SCHEDULE_SECS.len() + 1, WAIT).await;
    let started = std::time::Instant::now();
    loop {
        let items = history(&ada, &id, "").await;
        if items[0]["status"] == "FAILED" {
            assert_eq!(items[0]["attempt"], RETRY_SCHEDULE_SECS.len() + 1);
            assert_eq!(items.len(), RETRY_SCHEDULE_SECS.len() + 1);
            break;
        }
        assert!(started.elapsed() < WAIT, "{items:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing more is queued.
    clock.advance_ms(86_400_000);
    srv.state.wake_deliveries();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), RETRY_SCHEDULE_SECS.len() + 1);
    srv.stop().await;
}

#[tokio::test]
async fn a_disabled_channel_fails_queued_alerts_but_still_takes_a_test() {
    let srv = TestServer::start().await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let ch = channel(
        &ada,
        json!({"name": "off", "type": "WEBHOOK", "enabled": false, "config": {"url": rx.url("/h")}}),
    )
    .await;
    let id = ch["id"].as_str().unwrap().to_string();
    let mut tx = srv.state.db().begin().await.unwrap();
    outbox::enqueue(
        &mut tx,
        &Notification {
            workspace_id: &ada.workspace_id,
            channel_id: &id,
            alert_id: None,
            event: AlertEvent::AlertOpened,
            data: &json!({"monitor": {"name": "x"}}),
            at_ms: srv.state.clock().now_ms(),
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    srv.state.wake_deliveries();
    let items = history_of(&ada, &id, 1).await;
    let started = std::time::Instant::now();
    let mut first = items[0].clone();
    while first["status"] == "PENDING" {
        assert!(started.elapsed() < WAIT);
        tokio::time::sleep(Duration::from_millis(20)).await;
        first = history(&ada, &id, "").await[0].clone();
    }
    assert_eq!(first["status"], "FAILED");
    assert_eq!(first["error"], "the channel is disabled");
    ada.call(
        Method::POST,
        &format!("/notification-channels/{id}/test"),
        None,
    )
    .await;
    rx.wait_for(1, WAIT).await;
    assert_eq!(rx.received()[0].json()["type"], "test");
    srv.stop().await;
}

#[tokio::test]
async fn metrics_count_attempts_and_show_the_queue() {
    let srv = TestServer::start().await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = webhook(&ada, &rx).await;
    ada.call(
        Method::POST,
        &format!("/notification-channels/{id}/test"),
        None,
    )
    .await;
    rx.wait_for(1, WAIT).await;
    settled(&ada, &id).await;
    let text = reqwest::get(srv.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(
            "notification_deliveries_total{channel_type=\"WEBHOOK\",outcome=\"delivered\"}"
        ),
        "{text}"
    );
    assert!(text.contains("notification_queue_depth "), "{text}");
    assert!(
        text.contains("notification_oldest_pending_seconds "),
        "{text}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn two_servers_on_one_database_share_the_queue_and_send_nothing_twice() {
    let srv = TestServer::start().await;
    let Some(other) = srv.start_beside(Options::default()).await else {
        // SQLite: one process owns the database.
        srv.stop().await;
        return;
    };
    let rx = Receiver::start().await;
    rx.set_delay(Duration::from_millis(5));
    let ada = srv.sign_up("ada@example.com").await;
    let (id, _) = webhook(&ada, &rx).await;
    const N: usize = 400;
    let mut tx = srv.state.db().begin().await.unwrap();
    for i in 0..N {
        outbox::enqueue(
            &mut tx,
            &Notification {
                workspace_id: &ada.workspace_id,
                channel_id: &id,
                alert_id: None,
                event: AlertEvent::MonitorDegraded,
                data: &json!({"monitor": {"name": format!("m{i}")}}),
                at_ms: srv.state.clock().now_ms(),
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    srv.state.wake_deliveries();
    other.state.wake_deliveries();
    rx.wait_for(N, Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    loop {
        let delivered: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM deliveries WHERE status = 'DELIVERED' AND channel_id = $1",
        )
        .bind(&id)
        .fetch_one(srv.state.db().reader())
        .await
        .unwrap();
        if delivered == N as i64 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{delivered}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), N, "a message was sent twice");
    assert_eq!(rx.effects(), N);
    other.stop().await;
    srv.stop().await;
}
