//! Time on the public page through the real server, on a manual clock: dates are written in
//! the page's language and zone (a German page in Berlin writes `15. November 2023, 00:13 CET`
//! for 23:13 UTC on the 14th, and no English month), and a SCHEDULED incident appears on the
//! cached page within a second of its `scheduledFor` although no row changes then.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;
use common::clock::{rfc, T0};
use common::pages::{create_incident, create_page, put_components};
use common::{json_of, TestServer};
use reqwest::Method;
use serde_json::json;

const MINUTE: i64 = 60_000;

async fn html(srv: &TestServer, slug: &str) -> String {
    let res = reqwest::get(srv.url(&format!("/s/{slug}"))).await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.text().await.unwrap()
}

#[tokio::test]
async fn a_german_page_writes_its_dates_in_german_in_its_zone() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("dates@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Beispiel", "slug": "beispiel", "published": true,
               "branding": {"language": "de", "timezone": "Europe/Berlin"}}),
    )
    .await;
    let id = page["id"].as_str().unwrap();
    put_components(&u, id, json!([{"name": "API"}])).await;
    // 23:13 UTC on Nov 14 is 00:13 on Nov 15 in Berlin.
    clock.set_ms(T0 + 60 * MINUTE);
    create_incident(
        &u,
        json!({"statusPageId": id, "title": "Störung", "visibility": "PUBLISHED",
               "status": "RESOLVED", "message": "Behoben."}),
    )
    .await;
    let body = html(&srv, "beispiel").await;
    assert!(body.contains("<html lang=\"de\">"), "{body}");
    // The update's time, the day heading of past incidents, the days before it.
    assert!(body.contains("15. November 2023, 00:13 CET"), "{body}");
    assert!(
        body.contains("<h3 class=\"day\">15. November 2023</h3>"),
        "{body}"
    );
    assert!(
        body.contains("<h3 class=\"day\">14. November 2023</h3>"),
        "{body}"
    );
    // The uptime bar's title: 90 days without data, Aug 18 to Nov 15.
    assert!(
        body.contains("18. August – 15. November 2023: no data"),
        "{body}"
    );
    for english in ["Nov 1", "Nov 14", "Nov 15"] {
        assert!(!body.contains(english), "{english} in {body}");
    }

    // Another language, another table; an unknown one falls back to English.
    for (language, want) in [
        ("fr", "15 novembre 2023 à 00:13 CET"),
        ("es", "15 de noviembre de 2023, 00:13 CET"),
        ("ja", "Nov 15, 2023 00:13 CET"),
    ] {
        json_of(
            u.call(
                Method::PATCH,
                &format!("/status-pages/{id}"),
                Some(json!({"branding": {"language": language}})),
            )
            .await,
            200,
        )
        .await;
        let body = html(&srv, "beispiel").await;
        assert!(body.contains(want), "{language}: {body}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn a_scheduled_incident_shows_within_a_second_of_its_time() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("planned@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Planned", "slug": "planned", "published": true}),
    )
    .await;
    let id = page["id"].as_str().unwrap();
    put_components(&u, id, json!([{"name": "API"}])).await;
    create_incident(
        &u,
        json!({"statusPageId": id, "title": "Database upgrade", "visibility": "SCHEDULED",
               "scheduledFor": rfc(T0 + 10 * MINUTE), "message": "Planned work."}),
    )
    .await;

    // Before its time: not shown, and the rendered copy is cached and fresh.
    for _ in 0..3 {
        assert!(!html(&srv, "planned").await.contains("Database upgrade"));
    }
    let summary = json_of(
        reqwest::get(srv.url("/api/v1/status-pages/planned/summary"))
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(summary["activeIncidents"], json!([]));

    // Its time comes: no row changes, yet the page shows it within a second.
    clock.set_ms(T0 + 10 * MINUTE);
    let started = Instant::now();
    loop {
        if html(&srv, "planned").await.contains("Database upgrade") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the scheduled incident did not show within a second"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let summary = json_of(
        reqwest::get(srv.url("/api/v1/status-pages/planned/summary"))
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        summary["activeIncidents"][0]["incident"]["title"],
        "Database upgrade"
    );
    srv.stop().await;
}
