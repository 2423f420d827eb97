//! Alerting end to end in real time, on the backend under test: the real scheduler checks a
//! loopback target; when it fails, a Standard Webhooks-signed `alert.opened` reaches a loopback
//! receiver; acknowledging it through the API notifies the same channel and stops the
//! escalation policy's next step (whose channel hears nothing even after its delay); when the
//! target recovers, `alert.resolved` arrives. Nothing here is driven: it is the one real-time
//! test of the alerting path (about 70 s, for the one-minute escalation step to pass).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::channels::verify_signature;
use common::monitors::create;
use common::receiver::Receiver;
use common::target::Target;
use common::{json_of, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

async fn post(u: &User, path: &str, body: Value) -> Value {
    let res = u.call(Method::POST, path, Some(body)).await;
    let status = res.status().as_u16();
    let v: Value = res.json().await.unwrap_or(Value::Null);
    assert!((200..300).contains(&status), "{path}: {status} {v}");
    v
}

/// The webhook bodies the receiver got, as (type, body).
fn events(r: &Receiver) -> Vec<(String, Value)> {
    r.received()
        .iter()
        .map(|x| {
            let body = x.json();
            (body["type"].as_str().unwrap_or("").to_string(), body)
        })
        .collect()
}

async fn wait_event(r: &Receiver, event: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        if let Some((_, body)) = events(r).into_iter().find(|(t, _)| t == event) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "no {event} within {within:?}: {:?}",
            events(r).iter().map(|(t, _)| t.clone()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_real_outage_is_signed_acknowledged_not_escalated_and_resolved() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.min_interval_seconds = 1;
            c.scheduler_enabled = true;
        })),
    })
    .await;
    let target = Target::start().await;
    let oncall = Receiver::start().await;
    let manager = Receiver::start().await;
    let u = srv.sign_up("oncall@example.com").await;

    let first = json_of(
        u.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "on-call", "type": "WEBHOOK",
                        "config": {"url": oncall.url("/hooks")}})),
        )
        .await,
        201,
    )
    .await;
    let secret = first["config"]["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{first}");
    let second = post(
        &u,
        "/notification-channels",
        json!({"name": "manager", "type": "WEBHOOK", "config": {"url": manager.url("/hooks")}}),
    )
    .await;
    let policy = post(
        &u,
        "/escalation-policies",
        json!({"name": "page then manager", "steps": [
            {"delayMinutes": 0, "notificationChannelIds": [first["id"]]},
            {"delayMinutes": 1, "notificationChannelIds": [second["id"]]},
        ]}),
    )
    .await;
    let m = create(
        &u,
        json!({"name": "api", "type": "HTTP", "url": format!("{}/health", target.base),
               "interval": 2, "timeout": 1, "confirmationsRequired": 1,
               "recoveryConfirmationsRequired": 1, "escalationPolicyId": policy["id"]}),
    )
    .await;
    let monitor_id = m["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        oncall.received().is_empty(),
        "nothing is sent while the target is up"
    );

    // Down: one signed alert.opened, for this monitor, from the check's failure.
    target.set(500);
    let failed_at = Instant::now();
    let opened = wait_event(&oncall, "alert.opened", Duration::from_secs(15)).await;
    let delivered_in = failed_at.elapsed();
    let request = oncall.received()[0].clone();
    assert!(verify_signature(&secret, &request), "bad signature");
    assert!(request.header("webhook-id").starts_with("msg_"));
    assert_eq!(
        opened["data"]["monitor"]["id"],
        json!(monitor_id),
        "{opened}"
    );
    assert_eq!(opened["data"]["alert"]["status"], json!("OPEN"), "{opened}");
    let alert_id = opened["data"]["alert"]["id"].as_str().unwrap().to_string();
    assert!(delivered_in < Duration::from_secs(6), "{delivered_in:?}");

    // Acknowledged through the API: the channel already reached hears of it, escalation stops.
    let acked = post(&u, &format!("/alerts/{alert_id}/acknowledge"), json!({})).await;
    assert_eq!(acked["status"], json!("ACKNOWLEDGED"), "{acked}");
    assert_eq!(acked["nextEscalationAt"], Value::Null, "{acked}");
    wait_event(&oncall, "alert.acknowledged", Duration::from_secs(5)).await;
    // Past the second step's minute: the manager was never paged.
    let opened_at = failed_at;
    let step_two = Duration::from_secs(60) + Duration::from_secs(4);
    if let Some(left) = step_two.checked_sub(opened_at.elapsed()) {
        tokio::time::sleep(left).await;
    }
    assert!(
        manager.received().is_empty(),
        "escalated after acknowledgement: {:?}",
        events(&manager)
    );

    // Up again: the alert resolves and the channel hears it, once.
    target.set(200);
    let resolved = wait_event(&oncall, "alert.resolved", Duration::from_secs(15)).await;
    assert_eq!(
        resolved["data"]["alert"]["id"],
        json!(alert_id),
        "{resolved}"
    );
    assert_eq!(
        resolved["data"]["alert"]["status"],
        json!("RESOLVED"),
        "{resolved}"
    );
    let kinds: Vec<String> = events(&oncall).into_iter().map(|(t, _)| t).collect();
    assert_eq!(
        kinds,
        ["alert.opened", "alert.acknowledged", "alert.resolved"],
        "one of each, in order"
    );
    assert!(manager.received().is_empty());
    srv.stop().await;
}
