//! `PUSHOVER`: the Messages API (`{"userKey", "apiToken", "apiUrl"?, "priority"?, "sound"?}`;
//! both keys are secrets, `apiUrl` defaults to `https://api.pushover.net`). Priority -2..2
//! follows the severity unless set (outages 1: high, bypassing quiet hours); emergency (2)
//! repeats every 60 s for an hour until acknowledged in Pushover. HTML text, and the
//! Acknowledge link as the supplementary URL.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_text, check_url, endpoint, escape_html, finish, parse, parse_stored, ChannelType,
    ConfigError, HttpRequest, Message, Outgoing, Provider, RenderError,
};

pub struct Pushover;

const DEFAULT_API: &str = "https://api.pushover.net";

/// The `config` of a PUSHOVER channel: the Messages API.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "PushoverChannelConfig", extend("x-channel-type" = "PUSHOVER"))]
struct Config {
    /// The user or group key to send to.
    #[schemars(title = "User key", extend("format" = "password"))]
    user_key: String,
    /// The application's API token.
    #[schemars(title = "API token", extend("format" = "password"))]
    api_token: String,
    /// The Messages API's address; https://api.pushover.net by default.
    #[schemars(title = "API URL")]
    api_url: Option<String>,
    /// -2 (lowest) to 2 (emergency, repeated until acknowledged in Pushover); by default it follows the severity.
    #[schemars(title = "Priority")]
    #[schemars(range(min = -2, max = 2))]
    priority: Option<i8>,
    /// A Pushover sound name; the user's default otherwise.
    #[schemars(title = "Sound")]
    sound: Option<String>,
}

impl Provider for Pushover {
    fn kind(&self) -> ChannelType {
        ChannelType::Pushover
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["userKey", "apiToken"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_text("config.userKey", &c.user_key, 50, &mut errors);
        check_text("config.apiToken", &c.api_token, 50, &mut errors);
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        if c.priority.is_some_and(|p| !(-2..=2).contains(&p)) {
            errors.push(ConfigError::new("config.priority", "must be -2 to 2"));
        }
        if let Some(s) = &c.sound {
            check_text("config.sound", s, 50, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let priority = c.priority.unwrap_or(match msg.severity {
            Severity::Critical => 1,
            Severity::Warning | Severity::Info | Severity::Resolved => 0,
        });
        let text: Vec<String> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| format!("<b>{k}:</b> {}", escape_html(&v)))
            .collect();
        let mut body = json!({
            "token": c.api_token,
            "user": c.user_key,
            "title": msg.title.chars().take(250).collect::<String>(),
            "message": text.join("\n").chars().take(1024).collect::<String>(),
            "html": 1,
            "priority": priority,
            "timestamp": msg.now_ms.div_euclid(1000),
        });
        if priority == 2 {
            body["retry"] = json!(60);
            body["expire"] = json!(3600);
        }
        if let Some(s) = c.sound {
            body["sound"] = json!(s);
        }
        if let Some(ack) = &msg.acknowledge_url {
            body["url"] = json!(ack);
            body["url_title"] = json!("Acknowledge");
        } else if let Some(url) = &msg.alert_url {
            body["url"] = json!(url);
            body["url_title"] = json!("Open alert");
        }
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        Ok(Outgoing::Http(HttpRequest::json(
            endpoint(base, "/1/messages.json"),
            &body,
        )))
    }
}
