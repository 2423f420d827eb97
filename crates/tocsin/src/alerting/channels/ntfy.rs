//! `NTFY`: publish as JSON to an ntfy server (`{"topic", "serverUrl"?, "token"?,
//! "priority"?}`; `serverUrl` defaults to `https://ntfy.sh`, for self-hosted servers; the
//! access token is a secret). Priority (1-5) and tags follow the severity unless set; the
//! alert link is the click action and Acknowledge a `view` action button.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_text, check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest,
    Message, Outgoing, Provider, RenderError,
};

pub struct Ntfy;

const DEFAULT_SERVER: &str = "https://ntfy.sh";

/// The `config` of an NTFY channel: a JSON publish to an ntfy server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "NtfyChannelConfig", extend("x-channel-type" = "NTFY"))]
struct Config {
    /// The topic to publish to: 1 to 64 characters of A-Z, a-z, 0-9, - and _.
    #[schemars(title = "Topic")]
    topic: String,
    /// The ntfy server; https://ntfy.sh by default.
    #[schemars(title = "Server URL")]
    server_url: Option<String>,
    /// An access token, for topics that need one.
    #[schemars(title = "Access token", extend("format" = "password"))]
    token: Option<String>,
    /// 1 (min) to 5 (max); by default it follows the severity.
    #[schemars(title = "Priority")]
    #[schemars(range(min = 1, max = 5))]
    priority: Option<u8>,
}

impl Provider for Ntfy {
    fn kind(&self) -> ChannelType {
        ChannelType::Ntfy
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["token"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        let topic_ok = (1..=64).contains(&c.topic.len())
            && c.topic
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_');
        if !topic_ok {
            errors.push(ConfigError::new(
                "config.topic",
                "must be 1 to 64 characters of A-Z, a-z, 0-9, - and _",
            ));
        }
        if let Some(u) = &c.server_url {
            check_url("config.serverUrl", u, &mut errors);
        }
        if let Some(t) = &c.token {
            check_text("config.token", t, 200, &mut errors);
        }
        if c.priority.is_some_and(|p| !(1..=5).contains(&p)) {
            errors.push(ConfigError::new("config.priority", "must be 1 to 5"));
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let (priority, tag) = match msg.severity {
            Severity::Critical => (5, "rotating_light"),
            Severity::Warning => (4, "warning"),
            Severity::Info => (3, "information_source"),
            Severity::Resolved => (3, "white_check_mark"),
        };
        let mut body = json!({
            "topic": c.topic,
            "title": msg.title,
            "message": msg.plain(),
            "priority": c.priority.unwrap_or(priority),
            "tags": [tag, msg.event.as_str()],
        });
        if let Some(url) = &msg.alert_url {
            body["click"] = json!(url);
        }
        if let Some(ack) = &msg.acknowledge_url {
            body["actions"] =
                json!([{"action": "view", "label": "Acknowledge", "url": ack, "clear": true}]);
        }
        let url = c.server_url.as_deref().unwrap_or(DEFAULT_SERVER);
        let mut req = HttpRequest::json(url.trim_end_matches('/').to_string(), &body);
        if let Some(t) = c.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        Ok(Outgoing::Http(req))
    }
}
