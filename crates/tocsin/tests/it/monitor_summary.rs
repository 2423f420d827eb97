//! `GET /monitors/summary`: every monitor's last 40 checks (oldest first), 24-hour uptime and
//! latest response time in one answer, as the dashboard's monitor list draws them; only the
//! caller's workspace, and monitors never checked left out.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::monitors::{self, array, get};
use common::{TestServer, User};
use serde_json::{json, Value};

/// A push monitor of `u` named `name`; its (id, push token).
async fn push_monitor(u: &User, name: &str) -> (String, String) {
    monitors::push_monitor(u, json!({"name": name})).await
}

async fn push(srv: &TestServer, token: &str, down: bool) {
    let q = if down { "?status=down" } else { "" };
    let res = monitors::push(srv, token, q).await;
    assert!(res.status().is_success(), "{}", res.status());
}

fn of<'a>(items: &'a [Value], id: &str) -> Option<&'a Value> {
    items.iter().find(|s| s["monitorId"] == json!(id))
}

#[tokio::test]
async fn the_list_summary_holds_the_last_checks_uptime_and_latency_of_each_monitor() {
    let (srv, clock) = TestServer::with_clock(1_700_000_000_000).await;
    let u = srv.sign_up("summary@example.com").await;
    let other = srv.sign_up("summary-other@example.com").await;
    let (a, a_token) = push_monitor(&u, "backup").await;
    let (b, b_token) = push_monitor(&u, "report").await;
    let (quiet, _) = push_monitor(&u, "never pushed").await;
    let (theirs, their_token) = push_monitor(&other, "theirs").await;

    // 45 check-ins for `a`, every third one DOWN (the first one is UP); 2 for `b`.
    for i in 0..45 {
        clock.advance_ms(1_000);
        push(&srv, &a_token, i % 3 == 2).await;
    }
    push(&srv, &b_token, false).await;
    clock.advance_ms(1_000);
    push(&srv, &b_token, true).await;
    push(&srv, &their_token, false).await;

    let all = array(&u, "/monitors/summary").await;
    assert!(of(&all, &quiet).is_none(), "never checked: left out");
    assert!(of(&all, &theirs).is_none(), "another workspace's monitor");
    assert_eq!(all.len(), 2);

    let sa = of(&all, &a).unwrap();
    let recent = sa["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 40, "the last 40 of 45");
    // Oldest first, and they are the newest 40 heartbeats, in the same order reversed.
    let hbs = array(&u, &format!("/monitors/{a}/heartbeats?limit=40")).await;
    let newest_first: Vec<&Value> = recent.iter().rev().collect();
    for (r, h) in newest_first.iter().zip(&hbs) {
        assert_eq!(r["status"], h["status"]);
        assert_eq!(r["at"], h["createdAt"]);
        assert_eq!(r["latency"], h["latency"]);
    }
    assert_eq!(recent[39]["status"], "DOWN", "push 45 (i = 44) is DOWN");
    assert_eq!(recent[38]["status"], "UP");
    // The same uptime as the monitor's own 24-hour figure: 15 of 45 checks DOWN.
    let uptime = get(&u, &format!("/monitors/{a}/uptime")).await;
    assert_eq!(sa["uptime24h"], uptime["24h"]);
    assert_eq!(sa["uptime24h"], json!(66.6667));
    assert_eq!(sa["latency"], recent[39]["latency"]);

    let sb = of(&all, &b).unwrap();
    let statuses: Vec<&Value> = sb["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(statuses, [&json!("UP"), &json!("DOWN")]);
    assert_eq!(sb["uptime24h"], json!(50.0));

    let theirs_view = array(&other, "/monitors/summary").await;
    assert_eq!(theirs_view.len(), 1);
    assert_eq!(theirs_view[0]["monitorId"], json!(theirs));
    srv.stop().await;
}
