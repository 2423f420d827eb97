//! `WEBHOOK`: the Standard Webhooks specification. The body is the stored envelope
//! `{"type", "timestamp", "data"}` as is; headers `webhook-id` (the delivery's message id,
//! the same on every attempt, so receivers drop duplicates), `webhook-timestamp` (Unix
//! seconds of this attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
//! "{id}.{timestamp}.{body}">`, keyed with the base64 part of the `whsec_` secret). Signing
//! is the `standardwebhooks` crate's, the specification's reference implementation.
//!
//! Config: `{"url", "secret"?, "headers"?}`. A secret is generated when none is given (24
//! random bytes); `secret` and every extra header value are secrets (headers usually carry
//! credentials).

use std::collections::BTreeMap;

use base64::Engine;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use super::{
    check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest, Message,
    Outgoing, Provider, RenderError,
};

pub struct Webhook;

/// The `config` of a WEBHOOK channel: a signed Standard Webhooks POST.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WebhookChannelConfig", extend("x-channel-type" = "WEBHOOK"))]
struct Config {
    /// The http(s) URL the notification is POSTed to.
    #[schemars(title = "URL")]
    url: String,
    /// The signing secret, `whsec_` and the base64 of 24 to 64 bytes; generated when absent (and shown only in the create response).
    #[schemars(title = "Signing secret", extend("format" = "password"))]
    secret: Option<String>,
    /// Extra request headers, at most 20, name to value (their values are secrets: they usually carry credentials).
    #[schemars(title = "Headers", extend("additionalProperties" = {"type": "string", "format": "password"}))]
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Headers the signature scheme and the transport own.
const RESERVED: [&str; 6] = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "content-type",
    "content-length",
    "host",
];

/// A fresh `whsec_` secret: 24 random bytes, base64.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::RngCore::fill_bytes(&mut rand::thread_rng(), &mut bytes);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// Whether `s` is `whsec_` + base64 of 24 to 64 bytes.
fn valid_secret(s: &str) -> bool {
    s.strip_prefix("whsec_")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .is_some_and(|k| (24..=64).contains(&k.len()))
}

/// `v1,<signature>` of one attempt.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, RenderError> {
    standardwebhooks::Webhook::new(secret)
        .and_then(|w| w.sign(id, timestamp, body))
        .map_err(|e| RenderError(format!("signing: {e}")))
}

impl Provider for Webhook {
    fn kind(&self) -> ChannelType {
        ChannelType::Webhook
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["secret", "headers.*"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_url("config.url", &c.url, &mut errors);
        if let Some(s) = &c.secret {
            if !valid_secret(s) {
                errors.push(ConfigError::new(
                    "config.secret",
                    "must be whsec_ followed by the base64 of 24 to 64 bytes (or leave it out to have one generated)",
                ));
            }
        }
        if c.headers.len() > 20 {
            errors.push(ConfigError::new("config.headers", "at most 20 headers"));
        }
        for (name, value) in &c.headers {
            let field = format!("config.headers.{name}");
            if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
                errors.push(ConfigError::new(field, "is set by Tocsin"));
            } else if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                errors.push(ConfigError::new(field, "is not a valid header name"));
            } else if value.len() > 1_000 || reqwest::header::HeaderValue::from_str(value).is_err()
            {
                errors.push(ConfigError::new(
                    field,
                    "must be at most 1,000 visible ASCII characters",
                ));
            }
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let secret = c
            .secret
            .ok_or_else(|| RenderError("the channel has no signing secret".into()))?;
        // The attempt's own time: receivers reject stale timestamps, and a retry hours later
        // must still be accepted.
        let timestamp = msg.now_ms.div_euclid(1000);
        let signature = sign(&secret, &msg.message_id, timestamp, msg.body.as_bytes())?;
        let mut req = HttpRequest {
            method: super::HttpMethod::Post,
            url: c.url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: msg.body.clone().into_bytes(),
        };
        for (name, value) in c.headers {
            req = req.header(&name, value);
        }
        Ok(Outgoing::Http(
            req.header("webhook-id", msg.message_id.clone())
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", signature),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_secrets_are_valid_and_distinct() {
        let a = generate_secret();
        assert!(valid_secret(&a), "{a}");
        assert_ne!(a, generate_secret());
        assert!(!valid_secret("whsec_c2hvcnQ="));
        assert!(!valid_secret("nope"));
    }

    #[test]
    fn reserved_and_bad_headers_are_refused_by_name() {
        let e = Webhook
            .validate(&json!({"url": "ftp://x", "headers": {"webhook-id": "1", "X-Ok": "v"}}))
            .unwrap_err();
        let fields: Vec<_> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["config.url", "config.headers.webhook-id"]);
    }

    #[test]
    fn render_signs_id_timestamp_and_body() {
        let secret = generate_secret();
        let msg = Message::from_body(
            crate::alerting::event::AlertEvent::Test,
            "msg_1",
            r#"{"type":"test","timestamp":"2026-01-01T00:00:00Z","data":{}}"#,
            1_767_225_600_000,
        );
        let Outgoing::Http(req) = Webhook
            .render(
                &json!({"url": "http://127.0.0.1:1/h", "secret": secret, "headers": {"X-A": "b"}}),
                &msg,
            )
            .unwrap()
        else {
            panic!("http");
        };
        let h = |n: &str| {
            req.headers
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(h("webhook-id"), "msg_1");
        assert_eq!(h("X-A"), "b");
        let ts: i64 = h("webhook-timestamp").parse().unwrap();
        assert_eq!(
            h("webhook-signature"),
            sign(&secret, "msg_1", ts, &req.body).unwrap()
        );
        assert!(h("webhook-signature").starts_with("v1,"));
    }
}
