//! Notification channels through the API, as the channel, delivery and flapping tests use
//! them: creating one, a webhook channel pointed at a loopback [`Receiver`], the channel's
//! delivery history and waits on it, and an independent check of the Standard Webhooks
//! signature (HMAC-SHA256 written here, not the server's crate, so a wrong signature fails).

use std::time::{Duration, Instant};

use base64::Engine;
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{json, Value};

use super::receiver::{Received, Receiver};
use super::{json_of, User};

/// How long the waits here poll before failing the test.
pub const WAIT: Duration = Duration::from_secs(10);

/// `POST /notification-channels`, expecting 201; the channel (its secret shown this once).
pub async fn channel(u: &User, body: Value) -> Value {
    json_of(
        u.call(Method::POST, "/notification-channels", Some(body))
            .await,
        201,
    )
    .await
}

/// A webhook channel of `u`'s workspace (`hook`, every event) delivering to `rx`'s `/hook`;
/// its id and signing secret.
pub async fn webhook(u: &User, rx: &Receiver) -> (String, String) {
    let ch = channel(
        u,
        json!({"name": "hook", "type": "WEBHOOK", "config": {"url": rx.url("/hook")}}),
    )
    .await;
    let secret = ch["config"]["secret"].as_str().unwrap().to_string();
    (ch["id"].as_str().unwrap().to_string(), secret)
}

/// Verifies a Standard Webhooks request with HMAC-SHA256 written here, not the server's crate.
pub fn verify_signature(secret: &str, r: &Received) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let signed = format!(
        "{}.{}.{}",
        r.header("webhook-id"),
        r.header("webhook-timestamp"),
        r.text()
    );
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(signed.as_bytes());
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    r.header("webhook-signature")
        .split(' ')
        .any(|s| s == format!("v1,{expected}"))
}

/// The channel's attempts, newest first; `query` is appended to the path (`""` or `?...`).
pub async fn history(u: &User, channel_id: &str, query: &str) -> Vec<Value> {
    let page = json_of(
        u.call(
            Method::GET,
            &format!("/notification-channels/{channel_id}/deliveries{query}"),
            None,
        )
        .await,
        200,
    )
    .await;
    page["deliveries"].as_array().unwrap().clone()
}

/// Waits until the channel's newest attempt is no longer PENDING; returns it.
pub async fn settled(u: &User, channel_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let items = history(u, channel_id, "").await;
        if let Some(first) = items.first() {
            if first["status"] != "PENDING" {
                return first.clone();
            }
        }
        assert!(started.elapsed() < WAIT, "still pending: {items:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
