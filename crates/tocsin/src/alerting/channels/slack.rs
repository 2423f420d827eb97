//! `SLACK`: an incoming webhook (`{"webhookUrl"}`, a secret: the URL is the credential),
//! posted as Block Kit: a header, the facts as fields, and an Acknowledge button when the
//! notification carries the one-click link. `text` is the fallback Slack shows in
//! notifications.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest, Message,
    Outgoing, Provider, RenderError,
};

pub struct Slack;

/// The `config` of a SLACK channel: an incoming webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "SlackChannelConfig", extend("x-channel-type" = "SLACK"))]
struct Config {
    /// The incoming webhook's URL (https://hooks.slack.com/services/...); it is the credential.
    #[schemars(title = "Webhook URL", extend("format" = "password"))]
    webhook_url: String,
}

/// Slack's mrkdwn reserves `&`, `<` and `>`.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// The Block Kit message (shared with Mattermost's Slack-compatible fallback text).
pub fn blocks(msg: &Message) -> Value {
    let fields: Vec<Value> = msg
        .facts()
        .into_iter()
        .take(10)
        .map(|(k, v)| json!({"type": "mrkdwn", "text": clip(&format!("*{k}*\n{}", escape(&v)), 2000)}))
        .collect();
    let mut blocks = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": clip(&msg.title, 150), "emoji": true}
    })];
    if !fields.is_empty() {
        blocks.push(json!({"type": "section", "fields": fields}));
    }
    let mut buttons = Vec::new();
    if let Some(ack) = &msg.acknowledge_url {
        buttons.push(json!({
            "type": "button", "style": "primary", "action_id": "acknowledge",
            "text": {"type": "plain_text", "text": "Acknowledge"}, "url": ack
        }));
    }
    if let Some(alert) = &msg.alert_url {
        buttons.push(json!({
            "type": "button", "action_id": "open_alert",
            "text": {"type": "plain_text", "text": "Open alert"}, "url": alert
        }));
    }
    if !buttons.is_empty() {
        blocks.push(json!({"type": "actions", "elements": buttons}));
    }
    json!({"text": clip(&msg.title, 3000), "blocks": blocks})
}

impl Provider for Slack {
    fn kind(&self) -> ChannelType {
        ChannelType::Slack
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["webhookUrl"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_url("config.webhookUrl", &c.webhook_url, &mut errors);
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        Ok(Outgoing::Http(HttpRequest::json(
            c.webhook_url,
            &blocks(msg),
        )))
    }
}
