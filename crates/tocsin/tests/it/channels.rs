//! Notification channels over HTTP: CRUD with version locks, secrets masked in every read and a
//! generated webhook secret shown once, config validation with `config.<key>` paths,
//! capabilities and tenancy, and every provider's real message format as received by a
//! loopback receiver (email by a real SMTP sink), the Standard Webhooks signature checked by an
//! independent implementation, the private-address refusal and the same-host redirect rule.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::channels::{channel, history, settled, verify_signature, WAIT};
use common::receiver::{Received, Receiver};
use common::smtp;
use common::{expect_error, json_of, Bearer, Options, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::alerting::event::AlertEvent;
use tocsin::alerting::outbox::{self, Notification};

/// Waits until one of the channel's attempts has `status`; returns the newest such.
pub async fn with_status(u: &User, channel_id: &str, status: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let items = history(u, channel_id, &format!("?status={status}")).await;
        if let Some(first) = items.first() {
            return first.clone();
        }
        assert!(started.elapsed() < WAIT, "no {status} attempt");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn crud_masks_secrets_and_shows_the_generated_webhook_secret_once() {
    let srv = TestServer::start().await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let created = channel(
        &ada,
        json!({"name": "Ops hook", "type": "WEBHOOK",
               "config": {"url": rx.url("/hook"), "headers": {"Authorization": "Bearer s3cret"}}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["config"]["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["config"]["headers"]["Authorization"], "********");
    assert_eq!(created["type"], "WEBHOOK");
    assert_eq!(created["enabled"], true);
    assert_eq!(created["isDefault"], false);
    assert_eq!(created["events"].as_array().unwrap().len(), 15);
    assert_eq!(created["workspaceId"], ada.workspace_id.as_str());

    // Every later read masks it.
    let res = ada
        .call(Method::GET, &format!("/notification-channels/{id}"), None)
        .await;
    assert_eq!(res.headers()["etag"], "\"1\"");
    let got: Value = res.json().await.unwrap();
    assert_eq!(got["config"]["secret"], "********");
    let page = json_of(
        ada.call(Method::GET, "/notification-channels", None).await,
        200,
    )
    .await;
    assert_eq!(
        page["notificationChannels"][0]["config"]["secret"],
        "********"
    );
    assert!(page["nextCursor"].is_null());
    let audit = json_of(ada.call(Method::GET, "/audit-log", None).await, 200).await;
    assert!(
        !audit.to_string().contains(&secret) && !audit.to_string().contains("s3cret"),
        "secrets in the audit log: {audit}"
    );

    // A PATCH that sends the mask back keeps the stored secret: the next delivery is signed
    // with the secret shown at creation.
    let res = ada
        .client
        .patch(srv.url(&format!("/notification-channels/{id}")))
        .header("if-match", "\"1\"")
        .json(&json!({"name": "Ops", "events": ["alert.opened", "test"],
                      "config": {"url": rx.url("/hook2"), "secret": "********",
                                 "headers": {"Authorization": "********"}}}))
        .send()
        .await
        .unwrap();
    let patched = json_of(res, 200).await;
    assert_eq!(patched["name"], "Ops");
    assert_eq!(patched["config"]["url"], rx.url("/hook2"));
    assert_eq!(patched["config"]["secret"], "********");
    assert_eq!(patched["events"], json!(["alert.opened", "test"]));
    let test = json_of(
        ada.call(
            Method::POST,
            &format!("/notification-channels/{id}/test"),
            None,
        )
        .await,
        202,
    )
    .await;
    assert_eq!(test["status"], "PENDING");
    assert_eq!(test["event"], "test");
    assert_eq!(test["attempt"], 1);
    assert!(test["alertId"].is_null());
    let got = rx.wait_for(1, WAIT).await;
    assert_eq!(got[0].path, "/hook2");
    assert_eq!(got[0].header("authorization"), "Bearer s3cret");
    assert!(verify_signature(&secret, &got[0]), "signature");
    assert_eq!(got[0].json()["type"], "test");
    let done = settled(&ada, &id).await;
    assert_eq!(done["status"], "DELIVERED");
    assert_eq!(done["responseStatus"], 200);
    assert!(done["latencyMs"].is_number());
    assert!(done["deliveredAt"].is_string());

    // Stale version, then delete.
    let res = ada
        .client
        .patch(srv.url(&format!("/notification-channels/{id}")))
        .header("if-match", "\"1\"")
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = ada
        .call(
            Method::DELETE,
            &format!("/notification-channels/{id}"),
            None,
        )
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        ada.call(Method::GET, &format!("/notification-channels/{id}"), None)
            .await,
        404,
        "NOTIFICATION_CHANNEL_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn bad_configs_name_their_field_and_nothing_is_stored() {
    // With a relay, so that the EMAIL case is judged on its config.
    let (srv, _sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let cases = [
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {}}),
            "config.url",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "ftp://x"}}),
            "config.url",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "http://hooks.example.invalid/x"}}),
            "config.url",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "http://0.0.0.0:8080/x"}}),
            "config.url",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "http://10.0.0.1:0/x"}}),
            "config.url",
        ),
        (
            json!({"name": "x", "type": "GOTIFY", "config": {"serverUrl": "http://255.255.255.255", "appToken": "t"}}),
            "config.serverUrl",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "http://x", "secret": "plain"}}),
            "config.secret",
        ),
        (
            json!({"name": "x", "type": "WEBHOOK", "config": {"url": "http://x", "nope": 1}}),
            "config.nope",
        ),
        (
            json!({"name": "x", "type": "TELEGRAM", "config": {"botToken": "1:a"}}),
            "config.chatId",
        ),
        (
            json!({"name": "x", "type": "NTFY", "config": {"topic": "a b"}}),
            "config.topic",
        ),
        (
            json!({"name": "x", "type": "NTFY", "config": {"topic": "ab", "priority": 9}}),
            "config.priority",
        ),
        (
            json!({"name": "x", "type": "EMAIL", "config": {"to": ["not-an-address"]}}),
            "config.to.0",
        ),
        (
            json!({"name": "x", "type": "OPSGENIE", "config": {"apiKey": "k", "priority": "P9"}}),
            "config.priority",
        ),
        (
            json!({"name": "x", "type": "TWILIO_SMS", "config": {"accountSid": "AC1", "authToken": "t", "from": "+15551234567", "to": "+15557654321"}}),
            "config.accountSid",
        ),
        (
            json!({"name": "x", "type": "MATRIX", "config": {"homeserverUrl": "https://m.org", "accessToken": "t", "roomId": "general"}}),
            "config.roomId",
        ),
        (
            json!({"name": "x", "type": "SMOKE_SIGNAL", "config": {}}),
            "type",
        ),
        (
            json!({"name": "x", "type": "SLACK", "config": {"webhookUrl": "https://hooks.slack.com/x"}, "events": ["alert.opened", "alert.exploded"]}),
            "events.1",
        ),
        (
            json!({"name": "", "type": "SLACK", "config": {"webhookUrl": "https://hooks.slack.com/x"}}),
            "name",
        ),
        (
            json!({"name": "x", "type": "SLACK", "config": "https://hooks.slack.com/x"}),
            "config",
        ),
    ];
    for (body, field) in cases {
        let res = ada
            .call(Method::POST, "/notification-channels", Some(body.clone()))
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err["field"], field, "{body} -> {err}");
    }
    let page = json_of(
        ada.call(Method::GET, "/notification-channels", None).await,
        200,
    )
    .await;
    assert_eq!(page["notificationChannels"], json!([]));
    srv.stop().await;
}

#[tokio::test]
async fn capabilities_and_tenancy_are_enforced() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    let ch = channel(
        &ada,
        json!({"name": "s", "type": "SLACK", "config": {"webhookUrl": "https://hooks.slack.com/services/T/B/X"}}),
    )
    .await;
    assert_eq!(ch["config"]["webhookUrl"], "********");
    let id = ch["id"].as_str().unwrap();
    expect_error(
        bob.call(Method::GET, &format!("/notification-channels/{id}"), None)
            .await,
        404,
        "NOTIFICATION_CHANNEL_NOT_FOUND",
    )
    .await;
    expect_error(
        bob.call(
            Method::POST,
            &format!("/notification-channels/{id}/test"),
            None,
        )
        .await,
        404,
        "NOTIFICATION_CHANNEL_NOT_FOUND",
    )
    .await;
    let reader = Bearer::new(&srv.base, &ada.token(&["notifications:read"]).await);
    let res = reader
        .call(Method::GET, &format!("/notification-channels/{id}"), None)
        .await;
    assert_eq!(res.status(), 200);
    expect_error(
        reader
            .call(
                Method::POST,
                "/notification-channels",
                Some(json!({"name": "n", "type": "NTFY", "config": {"topic": "t"}})),
            )
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    expect_error(
        reader
            .call(
                Method::DELETE,
                &format!("/notification-channels/{id}"),
                None,
            )
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    let writer = Bearer::new(&srv.base, &ada.token(&["notifications:write"]).await);
    expect_error(
        writer
            .call(
                Method::DELETE,
                &format!("/notification-channels/{id}"),
                None,
            )
            .await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    srv.stop().await;
}

/// An alert notification, as the alerts code enqueues it, for every provider test.
fn alert_data(ack: &str) -> Value {
    json!({
        "alert": {"id": "alert-7", "monitorId": "m1", "status": "OPEN", "cause": "HTTP 503 Service Unavailable",
                  "openedAt": "2026-01-01T00:00:00Z", "acknowledgedAt": null, "acknowledgedBy": null,
                  "resolvedAt": null, "escalationStep": null, "nextEscalationAt": null},
        "monitor": {"id": "m1", "name": "Checkout API", "type": "HTTP", "url": "https://shop.example.com", "status": "DOWN"},
        "links": {"acknowledge": ack, "alert": "http://tocsin.test/alerts/alert-7"}
    })
}

async fn enqueue(srv: &TestServer, ws: &str, channel_id: &str, event: AlertEvent, data: Value) {
    let mut tx = srv.state.db().begin().await.unwrap();
    outbox::enqueue(
        &mut tx,
        &Notification {
            workspace_id: ws,
            channel_id,
            alert_id: None,
            event,
            data: &data,
            at_ms: srv.state.clock().now_ms(),
        },
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    srv.state.wake_deliveries();
}

#[tokio::test]
async fn every_provider_sends_its_real_format_to_a_loopback_receiver() {
    let srv = TestServer::start().await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let ack = "http://tocsin.test/ack?token=abc";
    let b = rx.base.clone();
    let configs = [
        ("SLACK", json!({"webhookUrl": format!("{b}/slack")})),
        ("DISCORD", json!({"webhookUrl": format!("{b}/discord")})),
        ("TEAMS", json!({"webhookUrl": format!("{b}/teams")})),
        (
            "TELEGRAM",
            json!({"botToken": "123:abc", "chatId": -1001, "apiUrl": b}),
        ),
        ("PAGERDUTY", json!({"routingKey": "rk123", "apiUrl": b})),
        ("OPSGENIE", json!({"apiKey": "og-key", "apiUrl": b})),
        (
            "NTFY",
            json!({"topic": "alerts", "serverUrl": b, "token": "tk_1"}),
        ),
        (
            "PUSHOVER",
            json!({"userKey": "u1", "apiToken": "a1", "apiUrl": b}),
        ),
        ("GOTIFY", json!({"serverUrl": b, "appToken": "g1"})),
        (
            "MATRIX",
            json!({"homeserverUrl": b, "accessToken": "mx", "roomId": "!room:example.org"}),
        ),
        ("GOOGLE_CHAT", json!({"webhookUrl": format!("{b}/gchat")})),
        (
            "MATTERMOST",
            json!({"webhookUrl": format!("{b}/mm"), "channel": "ops"}),
        ),
        (
            "TWILIO_SMS",
            json!({"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "tw", "from": "+15551234567", "to": "+15557654321", "apiUrl": b}),
        ),
    ];
    for (kind, config) in configs {
        let ch = channel(&ada, json!({"name": kind, "type": kind, "config": config})).await;
        let id = ch["id"].as_str().unwrap().to_string();
        let before = rx.count();
        enqueue(
            &srv,
            &ada.workspace_id,
            &id,
            AlertEvent::AlertOpened,
            alert_data(ack),
        )
        .await;
        let got = rx.wait_for(before + 1, WAIT).await;
        let r = &got[before];
        let body = r.json();
        let text = if kind == "TWILIO_SMS" {
            url::form_urlencoded::parse(&r.body)
                .map(|(_, v)| v.into_owned())
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            r.text()
        };
        assert!(
            text.contains("Checkout API") && text.contains("503"),
            "{kind}: monitor and cause in {text}"
        );
        match kind {
            "SLACK" => {
                assert_eq!(r.path, "/slack");
                assert_eq!(body["blocks"][0]["type"], "header");
                let actions = body["blocks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|b| b["type"] == "actions")
                    .unwrap();
                assert_eq!(actions["elements"][0]["url"], ack);
            }
            "DISCORD" => {
                assert_eq!(body["embeds"][0]["title"], "Checkout API is DOWN");
                assert!(body["embeds"][0]["color"].is_number());
                assert!(body["embeds"][0]["description"]
                    .as_str()
                    .unwrap()
                    .contains(ack));
            }
            "TEAMS" => {
                assert_eq!(body["type"], "message");
                let a = &body["attachments"][0];
                assert_eq!(a["contentType"], "application/vnd.microsoft.card.adaptive");
                assert_eq!(a["content"]["type"], "AdaptiveCard");
                assert_eq!(a["content"]["actions"][0]["url"], ack);
            }
            "TELEGRAM" => {
                assert_eq!(r.path, "/bot123:abc/sendMessage");
                assert_eq!(body["parse_mode"], "HTML");
                assert_eq!(body["chat_id"], "-1001");
                assert!(body["text"].as_str().unwrap().starts_with("<b>"));
                assert_eq!(body["reply_markup"]["inline_keyboard"][0][0]["url"], ack);
            }
            "PAGERDUTY" => {
                assert_eq!(r.path, "/v2/enqueue");
                assert_eq!(body["routing_key"], "rk123");
                assert_eq!(body["event_action"], "trigger");
                assert_eq!(body["dedup_key"], "alert-7");
                assert_eq!(body["payload"]["severity"], "critical");
                assert_eq!(body["links"][0]["href"], ack);
                // Acknowledge and resolve land on the same incident.
                for (event, action) in [
                    (AlertEvent::AlertAcknowledged, "acknowledge"),
                    (AlertEvent::AlertResolved, "resolve"),
                ] {
                    let n = rx.count();
                    enqueue(&srv, &ada.workspace_id, &id, event, alert_data(ack)).await;
                    let follow = rx.wait_for(n + 1, WAIT).await[n].json();
                    assert_eq!(follow["event_action"], action);
                    assert_eq!(follow["dedup_key"], "alert-7");
                }
            }
            "OPSGENIE" => {
                assert_eq!(r.path, "/v2/alerts");
                assert_eq!(r.header("authorization"), "GenieKey og-key");
                assert_eq!(body["alias"], "alert-7");
                assert_eq!(body["priority"], "P1");
                for (event, verb) in [
                    (AlertEvent::AlertAcknowledged, "acknowledge"),
                    (AlertEvent::AlertResolved, "close"),
                ] {
                    let n = rx.count();
                    enqueue(&srv, &ada.workspace_id, &id, event, alert_data(ack)).await;
                    let follow = &rx.wait_for(n + 1, WAIT).await[n];
                    assert_eq!(
                        follow.path,
                        format!("/v2/alerts/alert-7/{verb}?identifierType=alias")
                    );
                }
            }
            "NTFY" => {
                assert_eq!(r.path, "/");
                assert_eq!(r.header("authorization"), "Bearer tk_1");
                assert_eq!(body["topic"], "alerts");
                assert_eq!(body["priority"], 5);
                assert_eq!(body["tags"][0], "rotating_light");
                assert_eq!(body["actions"][0]["url"], ack);
            }
            "PUSHOVER" => {
                assert_eq!(r.path, "/1/messages.json");
                assert_eq!(
                    (body["token"].as_str(), body["user"].as_str()),
                    (Some("a1"), Some("u1"))
                );
                assert_eq!(body["priority"], 1);
                assert_eq!(body["url"], ack);
            }
            "GOTIFY" => {
                assert_eq!(r.path, "/message");
                assert_eq!(r.header("x-gotify-key"), "g1");
                assert_eq!(body["priority"], 8);
                assert_eq!(body["extras"]["client::notification"]["click"]["url"], ack);
            }
            "MATRIX" => {
                assert_eq!(r.method, "PUT");
                assert!(
                    r.path.starts_with(
                        "/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/msg_"
                    ),
                    "{}",
                    r.path
                );
                assert_eq!(r.header("authorization"), "Bearer mx");
                assert_eq!(body["msgtype"], "m.text");
                assert_eq!(body["format"], "org.matrix.custom.html");
                assert!(body["formatted_body"].as_str().unwrap().contains(ack));
            }
            "GOOGLE_CHAT" => {
                let card = &body["cardsV2"][0]["card"];
                assert_eq!(card["header"]["title"], "Checkout API is DOWN");
                assert!(card.to_string().contains(ack));
            }
            "MATTERMOST" => {
                assert_eq!(body["channel"], "ops");
                assert!(body["attachments"][0]["fields"].is_array());
                assert!(body["text"].as_str().unwrap().contains(ack));
            }
            "TWILIO_SMS" => {
                assert_eq!(
                    r.path,
                    "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages.json"
                );
                assert!(r
                    .header("content-type")
                    .starts_with("application/x-www-form-urlencoded"));
                assert!(r.header("authorization").starts_with("Basic "));
                let form: Vec<(String, String)> =
                    url::form_urlencoded::parse(&r.body).into_owned().collect();
                assert!(form.contains(&("To".into(), "+15557654321".into())));
                assert!(form.iter().any(|(k, v)| k == "Body" && v.contains(ack)));
            }
            other => panic!("untested {other}"),
        }
        let done = settled(&ada, &id).await;
        assert_eq!(done["status"], "DELIVERED", "{kind}: {done}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn email_goes_out_as_html_and_text_through_the_servers_smtp() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let ch = channel(
        &ada,
        json!({"name": "oncall", "type": "EMAIL", "config": {"to": ["oncall@example.com", "lead@example.com"]}}),
    )
    .await;
    let id = ch["id"].as_str().unwrap().to_string();
    enqueue(
        &srv,
        &ada.workspace_id,
        &id,
        AlertEvent::AlertOpened,
        alert_data("http://tocsin.test/ack?token=xyz"),
    )
    .await;
    let done = settled(&ada, &id).await;
    assert_eq!(done["status"], "DELIVERED", "{done}");
    assert!(done["responseStatus"].is_null());
    // Ada's sign-up emailed her a verification link; the channel's mail is the other one.
    let mut messages = sink.messages.lock().unwrap().clone();
    messages.retain(|(to, _)| to != &["ada@example.com"]);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].0, ["oncall@example.com", "lead@example.com"]);
    let raw = messages[0].1.replace("=\r\n", "").replace("=3D", "=");
    assert!(raw.contains("multipart/alternative"), "{raw}");
    assert!(
        raw.contains("text/plain") && raw.contains("text/html"),
        "{raw}"
    );
    assert!(
        raw.contains("Subject: [Tocsin] Checkout API is DOWN"),
        "{raw}"
    );
    assert!(raw.contains("HTTP 503 Service Unavailable"));
    assert!(
        raw.contains("href=\"http://tocsin.test/ack?token=xyz\""),
        "{raw}"
    );
    srv.stop().await;
}

/// A channel as stored before this server lost its relay (written below the API, which would
/// refuse it now).
async fn stored_email_channel(srv: &TestServer, u: &User, enabled: bool) -> String {
    let id = tocsin::ids::new_id();
    let now = srv.state.clock().now_ms();
    tocsin::store::channels::insert(
        srv.state.db().writer(),
        &tocsin::store::channels::ChannelRow {
            id: id.clone(),
            workspace_id: u.workspace_id.clone(),
            name: "oncall".into(),
            kind: "EMAIL".into(),
            config: json!({"to": ["oncall@example.com"]}).to_string(),
            events: json!(["alert.opened"]).to_string(),
            is_default: 0,
            enabled: i64::from(enabled),
            version: 1,
            created_at: now,
            updated_at: now,
        },
    )
    .await
    .unwrap();
    id
}

#[tokio::test]
async fn email_channels_are_refused_on_a_server_without_an_smtp_relay() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    // Creating one, enabled or not.
    for body in [
        json!({"name": "oncall", "type": "EMAIL", "config": {"to": ["oncall@example.com"]}}),
        json!({"name": "oncall", "type": "EMAIL", "config": {"to": ["oncall@example.com"]}, "enabled": false}),
    ] {
        let res = ada
            .call(Method::POST, "/notification-channels", Some(body))
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err["field"], "type", "{err}");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains("no SMTP relay"), "{message}");
        assert!(err["flattened"]["fieldErrors"]["type"].is_array(), "{err}");
    }
    let page = json_of(
        ada.call(Method::GET, "/notification-channels", None).await,
        200,
    )
    .await;
    assert_eq!(page["notificationChannels"], json!([]));
    // Other types are not concerned.
    channel(
        &ada,
        json!({"name": "s", "type": "SLACK", "config": {"webhookUrl": "https://hooks.slack.com/services/T/B/X"}}),
    )
    .await;

    // A disabled one left from when the server had a relay cannot be enabled ...
    let off = stored_email_channel(&srv, &ada, false).await;
    let path = format!("/notification-channels/{off}");
    let err = expect_error(
        ada.call(Method::PATCH, &path, Some(json!({"enabled": true})))
            .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["field"], "type", "{err}");
    let got = json_of(ada.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(got["enabled"], false);
    // ... but can be edited while it stays disabled, and deleted.
    let got = json_of(
        ada.call(
            Method::PATCH,
            &path,
            Some(json!({"name": "old", "config": {"to": ["lead@example.com"]}})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(got["name"], "old");
    // An enabled one cannot be given a new config, but can be renamed and disabled.
    let on = stored_email_channel(&srv, &ada, true).await;
    let path = format!("/notification-channels/{on}");
    let err = expect_error(
        ada.call(
            Method::PATCH,
            &path,
            Some(json!({"config": {"to": ["lead@example.com"]}})),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err["field"], "type", "{err}");
    json_of(
        ada.call(Method::PATCH, &path, Some(json!({"name": "renamed"})))
            .await,
        200,
    )
    .await;
    let got = json_of(
        ada.call(Method::PATCH, &path, Some(json!({"enabled": false})))
            .await,
        200,
    )
    .await;
    assert_eq!(got["enabled"], false);
    assert_eq!(got["config"]["to"], json!(["oncall@example.com"]));
    let res = ada.call(Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    srv.stop().await;
}

#[tokio::test]
async fn email_channels_are_accepted_and_enabled_where_a_relay_is_configured() {
    let (srv, _sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let ch = channel(
        &ada,
        json!({"name": "oncall", "type": "EMAIL", "config": {"to": ["oncall@example.com"]}, "enabled": false}),
    )
    .await;
    let path = format!("/notification-channels/{}", ch["id"].as_str().unwrap());
    let got = json_of(
        ada.call(Method::PATCH, &path, Some(json!({"enabled": true})))
            .await,
        200,
    )
    .await;
    assert_eq!(got["enabled"], true);
    srv.stop().await;
}

#[tokio::test]
async fn an_sms_goes_to_every_number_of_a_list_and_a_failure_retries_them_all() {
    let (srv, clock) = TestServer::with_clock(1_767_225_600_000).await;
    let rx = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let numbers = ["+15557654321", "+15557654322", "+15557654323"];
    let ch = channel(
        &ada,
        json!({"name": "rotation", "type": "TWILIO_SMS",
               "config": {"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "tw",
                          "from": "+15551234567", "to": numbers, "apiUrl": rx.base}}),
    )
    .await;
    assert_eq!(ch["config"]["to"], json!(numbers));
    assert_eq!(ch["config"]["authToken"], "********");
    let id = ch["id"].as_str().unwrap().to_string();

    // One of the three requests fails: the attempt fails as a whole, naming the number.
    rx.then(&[503]);
    enqueue(
        &srv,
        &ada.workspace_id,
        &id,
        AlertEvent::AlertOpened,
        alert_data("http://tocsin.test/ack?token=abc"),
    )
    .await;
    let first = rx.wait_for(3, WAIT).await;
    let to_of = |r: &Received| {
        url::form_urlencoded::parse(&r.body)
            .into_owned()
            .find(|(k, _)| k == "To")
            .map(|(_, v)| v)
            .unwrap()
    };
    let mut got: Vec<String> = first.iter().map(to_of).collect();
    got.sort();
    assert_eq!(got, numbers);
    let failed = with_status(&ada, &id, "RETRYING").await;
    assert_eq!(failed["attempt"], 1);
    assert_eq!(failed["responseStatus"], 503);
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("1 of 3 failed: +1555765432"), "{error}");
    assert!(error.contains("HTTP 503"), "{error}");

    // The retry sends to every number again (Twilio cannot deduplicate), and delivers.
    clock.advance_ms(6_000);
    srv.state.wake_deliveries();
    let all = rx.wait_for(6, WAIT).await;
    let mut again: Vec<String> = all[3..].iter().map(to_of).collect();
    again.sort();
    assert_eq!(again, numbers);
    let done = settled(&ada, &id).await;
    assert_eq!(done["status"], "DELIVERED", "{done}");
    assert_eq!(done["attempt"], 2);
    assert_eq!(done["responseStatus"], 200);
    srv.stop().await;
}

#[tokio::test]
async fn sms_number_lists_are_checked_number_by_number() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let config = |to: Value| {
        json!({"name": "x", "type": "TWILIO_SMS",
               "config": {"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "t",
                          "from": "+15551234567", "to": to}})
    };
    let eleven: Vec<String> = (0..11).map(|i| format!("+155576543{i:02}")).collect();
    for (to, field) in [
        (json!(["+15557654321", "555-0100"]), "config.to.1"),
        (json!(["+15557654321", 7]), "config.to.1"),
        (json!([]), "config.to"),
        (json!(eleven), "config.to"),
        (json!("555-0100"), "config.to"),
        (json!({"a": "+15557654321"}), "config.to"),
    ] {
        let res = ada
            .call(
                Method::POST,
                "/notification-channels",
                Some(config(to.clone())),
            )
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err["field"], field, "{to} -> {err}");
    }
    // A single number, as before, and a list of ten.
    channel(&ada, config(json!("+15557654321"))).await;
    let ten: Vec<String> = (0..10).map(|i| format!("+155576543{i:02}")).collect();
    let ch = channel(&ada, config(json!(ten))).await;
    assert_eq!(ch["config"]["to"].as_array().unwrap().len(), 10);
    srv.stop().await;
}

#[tokio::test]
async fn private_addresses_are_refused_when_the_operator_says_so() {
    let rx = Receiver::start().await;
    // Channels stored before the operator turned the setting on ...
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let urls = [
        rx.url("/hook"),
        format!("http://localhost:{}/hook", rx.addr.port()),
    ];
    let mut ids = Vec::new();
    for url in &urls {
        let ch = channel(
            &ada,
            json!({"name": "lan", "type": "WEBHOOK", "config": {"url": url}}),
        )
        .await;
        ids.push(ch["id"].as_str().unwrap().to_string());
    }
    let srv = srv
        .restart_same_port(Options {
            clock: None,
            tweak: Some(Box::new(|c| c.notify_deny_private_addresses = true)),
        })
        .await;
    // ... are refused at every send: a literal loopback address, and a name that resolves to
    // one (judged by the resolver, so a name that changed its address is caught too).
    for (url, id) in urls.iter().zip(&ids) {
        ada.call(
            Method::POST,
            &format!("/notification-channels/{id}/test"),
            None,
        )
        .await;
        let done = settled(&ada, id).await;
        assert_eq!(done["status"], "FAILED", "{url}: {done}");
        let error = done["error"].as_str().unwrap();
        assert!(
            error.contains("--notify-deny-private-addresses"),
            "{url}: {error}"
        );
    }
    assert_eq!(rx.count(), 0, "nothing reached the private address");
    // New ones, and edits, are refused on the field that names the address; nothing is
    // stored or changed.
    for url in &urls {
        let res = ada
            .call(
                Method::POST,
                "/notification-channels",
                Some(json!({"name": "lan", "type": "WEBHOOK", "config": {"url": url}})),
            )
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err["field"], "config.url", "{url}: {err}");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("--notify-deny-private-addresses"),
            "{err}"
        );
    }
    let res = ada
        .call(
            Method::POST,
            "/notification-channels",
            Some(json!({"name": "lan", "type": "NTFY",
                "config": {"topic": "ops", "serverUrl": "http://10.0.0.7:8080"}})),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err["field"], "config.serverUrl", "{err}");
    let res = ada
        .call(
            Method::PATCH,
            &format!("/notification-channels/{}", ids[0]),
            Some(json!({"config": {"url": "http://192.168.1.20/hook"}})),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err["field"], "config.url", "{err}");
    let page = json_of(
        ada.call(Method::GET, "/notification-channels", None).await,
        200,
    )
    .await;
    let stored = page["notificationChannels"].as_array().unwrap();
    assert_eq!(stored.len(), 2, "{page}");
    assert!(
        stored
            .iter()
            .all(|c| c["config"]["url"] != "http://192.168.1.20/hook"),
        "{page}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn redirects_are_followed_on_the_same_host_only() {
    let srv = TestServer::start().await;
    let a = Receiver::start().await;
    let b = Receiver::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let ch = channel(
        &ada,
        json!({"name": "r", "type": "WEBHOOK", "config": {"url": a.url("/start")}}),
    )
    .await;
    let id = ch["id"].as_str().unwrap();
    // Same host: followed.
    a.then_redirect(307, &a.url("/moved"));
    ada.call(
        Method::POST,
        &format!("/notification-channels/{id}/test"),
        None,
    )
    .await;
    let done = settled(&ada, id).await;
    assert_eq!(done["status"], "DELIVERED", "{done}");
    assert_eq!(a.received()[1].path, "/moved");
    // Another host (same machine, another name and port): refused, the attempt fails.
    a.then_redirect(
        307,
        &format!("http://localhost:{}/elsewhere", b.addr.port()),
    );
    ada.call(
        Method::POST,
        &format!("/notification-channels/{id}/test"),
        None,
    )
    .await;
    let done = with_status(&ada, id, "RETRYING").await;
    assert_eq!(done["responseStatus"], 307);
    assert!(
        done["error"].as_str().unwrap().contains("redirect"),
        "{done}"
    );
    assert_eq!(b.count(), 0, "the other host was never called");
    srv.stop().await;
}
