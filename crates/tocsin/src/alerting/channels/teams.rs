//! `TEAMS`: a Microsoft Teams incoming webhook or Workflows URL (`{"webhookUrl"}`; the URL is
//! the credential), posted as a message with one Adaptive Card (1.4): the title in the
//! severity's colour, the facts as a FactSet, and Acknowledge / Open alert as `Action.OpenUrl`.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest, Message,
    Outgoing, Provider, RenderError,
};

pub struct Teams;

/// The `config` of a TEAMS channel: an incoming webhook or Workflows URL.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "TeamsChannelConfig", extend("x-channel-type" = "TEAMS"))]
struct Config {
    /// The incoming webhook's or workflow's URL; it is the credential.
    #[schemars(title = "Webhook URL", extend("format" = "password"))]
    webhook_url: String,
}

impl Provider for Teams {
    fn kind(&self) -> ChannelType {
        ChannelType::Teams
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
        let color = match msg.severity {
            Severity::Critical => "Attention",
            Severity::Warning => "Warning",
            Severity::Resolved => "Good",
            Severity::Info => "Accent",
        };
        let facts: Vec<Value> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| json!({"title": k, "value": v}))
            .collect();
        let mut actions = Vec::new();
        if let Some(ack) = &msg.acknowledge_url {
            actions.push(json!({"type": "Action.OpenUrl", "title": "Acknowledge", "url": ack, "style": "positive"}));
        }
        if let Some(alert) = &msg.alert_url {
            actions.push(json!({"type": "Action.OpenUrl", "title": "Open alert", "url": alert}));
        }
        let card = json!({
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": [
                {"type": "TextBlock", "text": msg.title, "weight": "Bolder", "size": "Medium", "color": color, "wrap": true},
                {"type": "FactSet", "facts": facts}
            ],
            "actions": actions,
        });
        let body = json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": card
            }]
        });
        Ok(Outgoing::Http(HttpRequest::json(c.webhook_url, &body)))
    }
}
