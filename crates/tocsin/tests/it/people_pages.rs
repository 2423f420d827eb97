//! The pages people reach from a link wear one layout (`http::people_page`): styled for light
//! and dark schemes, a favicon, a CSP that admits exactly their style block and no script, the
//! status page's name and colour where the page belongs to one; and a notification's alert
//! link sends a browser to the dashboard's alert page while API clients keep the JSON record.

#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use reqwest::header::{ACCEPT, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use reqwest::{redirect, Method};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common;
use common::alerting::{alerts, channel, queued, Chan};
use common::clock::{tick, T0};
use common::monitors::http_monitor;
use common::pages::{components, create_page};
use common::smtp::{self, link, wait_mails};
use common::target::Target;
use common::{json_of, TestServer};

/// Checks the shared layout of a page answer; its body.
async fn layout(res: reqwest::Response) -> String {
    assert!(res.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert_eq!(res.headers()["referrer-policy"], "no-referrer");
    let csp = res.headers()[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    let body = res.text().await.unwrap();
    let style = body
        .split_once("<style>")
        .and_then(|(_, rest)| rest.split_once("</style>"))
        .map(|(s, _)| s)
        .unwrap_or_else(|| panic!("no style block: {body}"));
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    assert!(
        csp.starts_with("default-src 'none'")
            && csp.contains(&format!("style-src 'sha256-{hash}'"))
            && csp.contains("form-action 'self'")
            && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert!(style.contains("prefers-color-scheme:dark"), "{style}");
    assert!(body.contains("rel=\"icon\""), "{body}");
    assert!(!body.contains("<script"), "{body}");
    body
}

#[tokio::test]
async fn the_acknowledge_page_and_the_alert_link() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("people@example.com").await;
    let ws = u.workspace_id.clone();
    let ch = channel(&srv, &ws, Chan::default()).await;
    http_monitor(
        &u,
        &target.url("/health"),
        json!({"notificationChannelIds": [ch], "name": "Checkout <api>"}),
    )
    .await;
    target.set(500);
    tick(&srv, &clock).await;
    let alert_id = alerts(&u, "").await[0]["id"].as_str().unwrap().to_string();
    let opened = queued(&srv, &ws).await;
    let links = &opened
        .iter()
        .find(|d| d.event == "alert.opened")
        .unwrap()
        .payload["data"]["links"];
    let ack = links["acknowledge"].as_str().unwrap().to_string();
    let alert_link = links["alert"].as_str().unwrap().to_string();

    let body = layout(reqwest::get(&ack).await.unwrap()).await;
    assert!(body.contains("Acknowledge this alert?"), "{body}");
    assert!(body.contains("Checkout &lt;api&gt;"), "{body}");
    assert!(body.contains("<button type=\"submit\">Acknowledge</button>"));

    // A browser following the alert link lands on the dashboard's page of the alert ...
    let browser = reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap();
    let res = browser
        .get(&alert_link)
        .header(ACCEPT, "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()[LOCATION], format!("/app/alerts/{alert_id}"));
    // ... an API client gets the record, whether it names JSON or nothing.
    let json = u
        .call(Method::GET, &format!("/alerts/{alert_id}"), None)
        .await;
    assert_eq!(json_of(json, 200).await["id"], alert_id.as_str());
    let named = u
        .client
        .get(srv.url(&format!("/alerts/{alert_id}")))
        .header(ACCEPT, "application/json, text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(named, 200).await["status"], "OPEN");
    // Without a session a JSON client is still refused with the envelope.
    let anonymous = browser
        .get(&alert_link)
        .header(ACCEPT, "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    srv.stop().await;
}

#[tokio::test]
async fn subscription_pages_wear_the_status_page_look() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let page = create_page(
        &ada,
        json!({"name": "Acme Status", "slug": "acme",
               "branding": {"primaryColor": "#ffcc00", "language": "de"}}),
    )
    .await;
    let id = page["id"].as_str().unwrap();
    components(&ada, id, &["API"]).await;
    json_of(
        ada.call(Method::POST, &format!("/status-pages/{id}/publish"), None)
            .await,
        200,
    )
    .await;

    // The form's "check your inbox" answer.
    let form = reqwest::Client::new()
        .post(srv.url("/s/acme/subscribe"))
        .form(&[("email", "reader@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    let body = layout(form).await;
    // In the page's language.
    assert!(body.contains("<html lang=\"de\">"), "{body}");
    assert!(body.contains("Bitte prüfen Sie Ihren Posteingang") && body.contains("Acme Status"));
    assert!(body.contains("Zurück zur Statusseite"), "{body}");
    // A light brand colour gets dark text on it.
    assert!(body.contains("--brand:#ffcc00;--on-brand:#111"), "{body}");

    let mails = wait_mails(&sink, "reader@example.com", 1).await;
    let url = srv.url(&link(&mails[0], "/api/v1/subscribers/verify"));
    let body = layout(reqwest::get(&url).await.unwrap()).await;
    assert!(body.contains("Abonnement bestätigen?") && body.contains("Acme Status"));
    assert!(body.contains("<html lang=\"de\">"), "{body}");
    assert!(
        body.contains("href=\"http") && body.contains("/s/acme\""),
        "{body}"
    );

    // A broken link knows no page: the product's look.
    let bad = reqwest::get(srv.url("/api/v1/subscribers/verify?token=nope"))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body = layout(bad).await;
    assert!(body.contains("Tocsin") && !body.contains("Acme"));
    // So do the error pages standing in for a status page.
    let missing = reqwest::get(srv.url("/s/no-such-page")).await.unwrap();
    assert_eq!(missing.status(), 404);
    layout(missing).await;
    srv.stop().await;
}
