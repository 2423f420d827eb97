//! `GOTIFY`: a self-hosted Gotify server's `POST /message` (`{"serverUrl", "appToken",
//! "priority"?}`; the application token is a secret, sent as `X-Gotify-Key`). Markdown text,
//! priority (0-10) by severity unless set, and the Acknowledge link (or the alert) opened when
//! the notification is clicked.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_text, check_url, endpoint, finish, parse, parse_stored, ChannelType, ConfigError,
    HttpRequest, Message, Outgoing, Provider, RenderError,
};

pub struct Gotify;

/// The `config` of a GOTIFY channel: a message to a Gotify server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "GotifyChannelConfig", extend("x-channel-type" = "GOTIFY"))]
struct Config {
    /// The Gotify server's address.
    #[schemars(title = "Server URL")]
    server_url: String,
    /// The application's token.
    #[schemars(title = "App token", extend("format" = "password"))]
    app_token: String,
    /// 0 to 10; by default it follows the severity.
    #[schemars(title = "Priority")]
    #[schemars(range(min = 0, max = 10))]
    priority: Option<u8>,
}

impl Provider for Gotify {
    fn kind(&self) -> ChannelType {
        ChannelType::Gotify
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["appToken"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_url("config.serverUrl", &c.server_url, &mut errors);
        check_text("config.appToken", &c.app_token, 200, &mut errors);
        if c.priority.is_some_and(|p| p > 10) {
            errors.push(ConfigError::new("config.priority", "must be 0 to 10"));
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let priority = c.priority.unwrap_or(match msg.severity {
            Severity::Critical => 8,
            Severity::Warning => 5,
            Severity::Info | Severity::Resolved => 4,
        });
        let mut lines: Vec<String> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| format!("**{k}:** {v}  "))
            .collect();
        if let Some(ack) = &msg.acknowledge_url {
            lines.push(format!("[Acknowledge]({ack})"));
        }
        let mut extras = json!({"client::display": {"contentType": "text/markdown"}});
        if let Some(url) = msg.acknowledge_url.as_ref().or(msg.alert_url.as_ref()) {
            extras["client::notification"] = json!({"click": {"url": url}});
        }
        let body = json!({
            "title": msg.title,
            "message": lines.join("\n"),
            "priority": priority,
            "extras": extras,
        });
        Ok(Outgoing::Http(
            HttpRequest::json(endpoint(&c.server_url, "/message"), &body)
                .header("x-gotify-key", c.app_token),
        ))
    }
}
