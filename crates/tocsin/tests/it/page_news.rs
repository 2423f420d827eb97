//! What status page subscribers and channels hear beyond the incidents written through the API,
//! through the real server, a real SMTP sink and a loopback webhook receiver: scheduled
//! maintenance announced once per window schedule (at the write when it is within the horizon,
//! else by the scheduling node's worker; unverified and other-component subscribers get
//! nothing; no duplicate after a restart or from a second node), the incidents a monitor's
//! alert opens and resolves on its own (the same emails and `incident.*` events as the API's),
//! and the sign-in page of a private page in the page's language.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::maintenance_notice;
use tocsin::clock::ManualClock;

use crate::common::clock::{rfc, run_due, T0};
use crate::common::monitors::{http_monitor, monitor};
use crate::common::pages::{confirm_subscription, create_page, put_components, subscribe};
use crate::common::receiver::Receiver;
use crate::common::smtp::{self, header, mails_to, wait_mails, Sink};
use crate::common::target::Target;
use crate::common::{json_of, Options, TestServer, User};
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// A published page over `monitor` (component API) and a component Web without one; returns
/// (page id, [api, web] component ids).
async fn page_over(u: &User, slug: &str, monitor: &str, extra: Value) -> (String, Vec<String>) {
    let mut body = json!({"name": "Acme", "slug": slug, "published": true});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let page = create_page(u, body).await;
    let id = page["id"].as_str().unwrap().to_string();
    let comps = put_components(
        u,
        &id,
        json!([{"name": "API", "monitorId": monitor}, {"name": "Web"}]),
    )
    .await;
    let ids = comps
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    (id, ids)
}

/// Subscribes `email` (to `components`, or the whole page) and, when `confirm`, follows the
/// confirmation link (the address's first mail).
async fn subscriber(
    srv: &TestServer,
    sink: &Sink,
    slug: &str,
    email: &str,
    components: Option<&[String]>,
    confirm: bool,
) {
    let mut body = json!({"email": email});
    if let Some(c) = components {
        body["componentIds"] = json!(c);
    }
    json_of(subscribe(srv, slug, body).await, 202).await;
    wait_mails(sink, email, 1).await;
    if confirm {
        confirm_subscription(srv, sink, email, 1).await;
    }
}

/// The subjects of the mails `to` received so far.
fn subjects(sink: &Sink, to: &str) -> Vec<String> {
    mails_to(sink, to)
        .iter()
        .map(|m| header(m, "Subject").unwrap_or_default())
        .collect()
}

/// Lets the delivery worker send anything queued, then reads the subjects.
async fn settle(sink: &Sink, to: &str) -> Vec<String> {
    tokio::time::sleep(Duration::from_millis(600)).await;
    subjects(sink, to)
}

fn maintenance_mails(subjects: &[String]) -> usize {
    subjects
        .iter()
        .filter(|s| s.contains("Scheduled maintenance"))
        .count()
}

async fn window(u: &User, body: Value) -> Value {
    json_of(
        u.call(Method::POST, "/maintenance-windows", Some(body))
            .await,
        201,
    )
    .await
}

#[tokio::test]
async fn a_maintenance_window_is_announced_once_to_the_subscribers_it_concerns() {
    let (sink, port) = Sink::start();
    let clock = ManualClock::new(T0);
    let srv = TestServer::start_with(smtp::options(port, Some(clock.clone()))).await;
    let ada = srv.sign_up("ada@example.com").await;
    let mid = http_monitor(&ada, "http://127.0.0.1:9/health", json!({})).await;
    let (_page, comps) = page_over(&ada, "maint", &mid, json!({})).await;
    subscriber(&srv, &sink, "maint", "reader@example.com", None, true).await;
    subscriber(
        &srv,
        &sink,
        "maint",
        "api@example.com",
        Some(&comps[..1]),
        true,
    )
    .await;
    subscriber(
        &srv,
        &sink,
        "maint",
        "web@example.com",
        Some(&comps[1..]),
        true,
    )
    .await;
    subscriber(&srv, &sink, "maint", "lazy@example.com", None, false).await;

    // Within the horizon: announced with the write.
    let w = window(
        &ada,
        json!({"monitorId": mid, "title": "Database upgrade", "description": "Read-only for an hour.",
               "startsAt": rfc(T0 + HOUR), "endsAt": rfc(T0 + 2 * HOUR), "timezone": "Europe/Berlin"}),
    )
    .await;
    let wid = w["id"].as_str().unwrap().to_string();
    let mails = wait_mails(&sink, "reader@example.com", 2).await;
    let mail = &mails[1];
    assert_eq!(
        header(mail, "Subject").unwrap(),
        "[Acme] Scheduled maintenance: Database upgrade"
    );
    // 2023-11-14T23:13:20Z is 00:13 the next day in Berlin.
    assert!(
        mail.contains("From Wed 15 Nov 2023 00:13 CET to Wed 15 Nov 2023 01:13 CET"),
        "{mail}"
    );
    assert!(mail.contains("Affected: API") && mail.contains("Read-only for an hour."));
    assert!(header(mail, "List-Unsubscribe").is_some());
    wait_mails(&sink, "api@example.com", 2).await;
    assert_eq!(
        maintenance_mails(&settle(&sink, "web@example.com").await),
        0
    );
    assert_eq!(
        subjects(&sink, "lazy@example.com").len(),
        1,
        "only the confirmation"
    );

    // Editing the words mails nobody; setting the same times again neither.
    for patch in [
        json!({"title": "Database upgrade (v16)"}),
        json!({"startsAt": rfc(T0 + HOUR), "endsAt": rfc(T0 + 2 * HOUR)}),
    ] {
        json_of(
            ada.call(
                Method::PATCH,
                &format!("/maintenance-windows/{wid}"),
                Some(patch),
            )
            .await,
            200,
        )
        .await;
    }
    assert_eq!(
        maintenance_mails(&settle(&sink, "reader@example.com").await),
        1
    );
    // Moving it is news.
    json_of(
        ada.call(
            Method::PATCH,
            &format!("/maintenance-windows/{wid}"),
            Some(json!({"startsAt": rfc(T0 + 3 * HOUR), "endsAt": rfc(T0 + 4 * HOUR)})),
        )
        .await,
        200,
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 3).await;
    assert!(mails[2].contains("Database upgrade (v16)"));

    // A month ahead: nothing now; the worker announces it once it is 14 days away.
    window(
        &ada,
        json!({"monitorId": mid, "title": "Datacenter move",
               "startsAt": rfc(T0 + 30 * DAY), "endsAt": rfc(T0 + 30 * DAY + 4 * HOUR)}),
    )
    .await;
    assert_eq!(
        maintenance_notice::run_due(srv.state.cx(), T0)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        maintenance_mails(&settle(&sink, "reader@example.com").await),
        2
    );
    let t = T0 + 17 * DAY;
    clock.set_ms(t);
    // Two subscribers concerned, the whole page's and the API component's (the worker on this
    // node may get there first: then this run finds it done).
    let queued = maintenance_notice::run_due(srv.state.cx(), t)
        .await
        .unwrap();
    assert!(queued == 2 || queued == 0, "{queued}");
    let mails = wait_mails(&sink, "reader@example.com", 4).await;
    assert_eq!(
        header(&mails[3], "Subject").unwrap(),
        "[Acme] Scheduled maintenance: Datacenter move"
    );
    assert_eq!(
        maintenance_notice::run_due(srv.state.cx(), t)
            .await
            .unwrap(),
        0
    );

    // Another node on the same database, and a restart, find the announcements made.
    let srv = match srv
        .start_beside(smtp::options(port, Some(clock.clone())))
        .await
    {
        Some(other) => {
            assert_eq!(
                maintenance_notice::run_due(other.state.cx(), t)
                    .await
                    .unwrap(),
                0
            );
            other.stop().await;
            srv
        }
        None => srv,
    };
    let srv = srv.restart(smtp::options(port, Some(clock.clone()))).await;
    assert_eq!(
        maintenance_notice::run_due(srv.state.cx(), t)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        maintenance_notice::run_due(srv.state.cx(), t + HOUR)
            .await
            .unwrap(),
        0
    );
    let reader = settle(&sink, "reader@example.com").await;
    assert_eq!(maintenance_mails(&reader), 3, "{reader:?}");
    assert_eq!(maintenance_mails(&subjects(&sink, "api@example.com")), 3);
    assert_eq!(maintenance_mails(&subjects(&sink, "web@example.com")), 0);
    assert_eq!(subjects(&sink, "lazy@example.com").len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn a_recurring_window_is_announced_once_saying_how_it_repeats() {
    let (sink, port) = Sink::start();
    let clock = ManualClock::new(T0);
    let srv = TestServer::start_with(smtp::options(port, Some(clock.clone()))).await;
    let ada = srv.sign_up("ada@example.com").await;
    let mid = http_monitor(&ada, "http://127.0.0.1:9/health", json!({})).await;
    page_over(&ada, "nightly", &mid, json!({})).await;
    subscriber(&srv, &sink, "nightly", "reader@example.com", None, true).await;
    window(
        &ada,
        json!({"monitorId": mid, "title": "Nightly backup",
               "startsAt": rfc(T0 + HOUR), "endsAt": rfc(T0 + 2 * HOUR),
               "recurring": {"frequency": "daily"}}),
    )
    .await;
    let mails = wait_mails(&sink, "reader@example.com", 2).await;
    assert!(mails[1].contains("repeats every day"), "{}", mails[1]);
    // Night after night the worker finds it announced.
    for day in 1..4 {
        let t = T0 + day * DAY;
        clock.set_ms(t);
        assert_eq!(
            maintenance_notice::run_due(srv.state.cx(), t)
                .await
                .unwrap(),
            0
        );
    }
    assert_eq!(
        maintenance_mails(&settle(&sink, "reader@example.com").await),
        1
    );
    srv.stop().await;
}

#[tokio::test]
async fn an_automatic_incident_is_emailed_and_sent_to_channels_like_the_apis() {
    let (sink, port) = Sink::start();
    let clock = ManualClock::new(T0);
    let srv = TestServer::start_with(smtp::options(port, Some(clock.clone()))).await;
    let rx = Receiver::start().await;
    let target = Target::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let mid = http_monitor(&ada, &format!("{}/health", target.base), json!({})).await;
    let (pid, _) = page_over(&ada, "auto", &mid, json!({"autoIncidents": "PUBLISHED"})).await;
    subscriber(&srv, &sink, "auto", "reader@example.com", None, true).await;
    subscriber(&srv, &sink, "auto", "lazy@example.com", None, false).await;
    json_of(
        ada.call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "incidents", "type": "WEBHOOK",
                        "config": {"url": rx.url("/incidents")},
                        "events": ["incident.created", "incident.updated", "incident.resolved"]})),
        )
        .await,
        201,
    )
    .await;

    let mut t = T0;
    run_due(&srv, t).await;
    target.set(500);
    while monitor(&ada, &mid).await["status"] != "DOWN" {
        t += 10_000;
        clock.set_ms(t);
        run_due(&srv, t).await;
        assert!(t < T0 + 300_000, "the monitor never went DOWN");
    }
    let mails = wait_mails(&sink, "reader@example.com", 2).await;
    assert_eq!(
        header(&mails[1], "Subject").unwrap(),
        "[Acme] API is unavailable"
    );
    assert!(mails[1].contains("New incident") && mails[1].contains("We are investigating"));
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let created = got[0].json();
    assert_eq!(created["type"], "incident.created");
    assert_eq!(created["data"]["incident"]["autoGenerated"], true);
    assert_eq!(created["data"]["incident"]["sourceMonitorId"], mid.as_str());
    assert_eq!(created["data"]["incident"]["statusPageId"], pid.as_str());
    assert_eq!(created["data"]["statusPage"]["slug"], "auto");
    assert_eq!(created["data"]["update"]["systemGenerated"], true);

    target.set(200);
    while monitor(&ada, &mid).await["status"] != "UP" {
        t += 10_000;
        clock.set_ms(t);
        run_due(&srv, t).await;
        assert!(t < T0 + 600_000, "the monitor never recovered");
    }
    let mails = wait_mails(&sink, "reader@example.com", 3).await;
    assert_eq!(
        header(&mails[2], "Subject").unwrap(),
        "[Acme] Resolved: API is unavailable"
    );
    let got = rx.wait_for(2, Duration::from_secs(10)).await;
    let resolved = got
        .iter()
        .map(|r| r.json())
        .find(|b| b["type"] == "incident.resolved")
        .unwrap();
    assert_eq!(resolved["data"]["incident"]["status"], "RESOLVED");
    assert_eq!(
        resolved["data"]["incident"]["id"],
        created["data"]["incident"]["id"]
    );
    // Exactly those: one email each way, two events, nothing for the unconfirmed address.
    assert_eq!(settle(&sink, "reader@example.com").await.len(), 3);
    assert_eq!(rx.count(), 2);
    assert_eq!(subjects(&sink, "lazy@example.com").len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn the_sign_in_page_of_a_private_page_speaks_its_language() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| c.rate_limits.sign_in_per_ip = 2)),
    })
    .await;
    let u = srv.sign_up("owner@acme.example").await;
    create_page(
        &u,
        json!({"name": "Cachée", "slug": "cachee", "published": true,
               "branding": {"language": "fr"},
               "access": {"visibility": "PASSWORD", "password": "correct horse battery"}}),
    )
    .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client.get(srv.url("/s/cachee")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 401);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let page = res.text().await.unwrap();
    for s in [
        "<html lang=\"fr\">",
        "<title>Page de statut privée</title>",
        "Saisissez son mot de passe",
        "Mot de passe",
        "Voir la page",
    ] {
        assert!(page.contains(s), "{s} in {page}");
    }
    assert!(
        !page.contains("Password") && !page.contains("Cachée"),
        "{page}"
    );

    let wrong = |pw: &'static str| {
        client
            .post(srv.url("/s/cachee/access"))
            .form(&[("password", pw)])
            .send()
    };
    let res = wrong("guess").await.unwrap();
    assert_eq!(res.status().as_u16(), 401);
    assert!(res
        .text()
        .await
        .unwrap()
        .contains("Ce mot de passe n’est pas correct"));
    wrong("again").await.unwrap();
    let res = wrong("third").await.unwrap();
    assert_eq!(res.status().as_u16(), 429);
    let page = res.text().await.unwrap();
    assert!(
        page.contains("<html lang=\"fr\">") && page.contains("Trop de tentatives"),
        "{page}"
    );

    // A page for people of allowed domains, in German.
    create_page(
        &u,
        json!({"name": "Intern", "slug": "intern", "published": true,
               "branding": {"language": "de"},
               "access": {"visibility": "EMAIL_DOMAINS", "allowedEmailDomains": ["acme.example"]}}),
    )
    .await;
    let page = client
        .get(srv.url("/s/intern"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for s in [
        "<html lang=\"de\">",
        "Private Statusseite",
        "Melden Sie sich mit Ihrer beruflichen E-Mail-Adresse",
        "/s/intern",
    ] {
        assert!(page.contains(s), "{s} in {page}");
    }
    srv.stop().await;
}
