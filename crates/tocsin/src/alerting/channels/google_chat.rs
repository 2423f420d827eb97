//! `GOOGLE_CHAT`: a space's incoming webhook (`{"webhookUrl"}`; the URL, with its key and
//! token, is the credential), posted as a `cardsV2` card: header, the facts as decorated text,
//! and Acknowledge / Open alert buttons. `text` is the notification's fallback line.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest, Message,
    Outgoing, Provider, RenderError,
};

pub struct GoogleChat;

/// The `config` of a GOOGLE_CHAT channel: a space's incoming webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "GoogleChatChannelConfig", extend("x-channel-type" = "GOOGLE_CHAT"))]
struct Config {
    /// The space's incoming webhook URL (https://chat.googleapis.com/v1/spaces/...); with its key and token it is the credential.
    #[schemars(title = "Webhook URL", extend("format" = "password"))]
    webhook_url: String,
}

impl Provider for GoogleChat {
    fn kind(&self) -> ChannelType {
        ChannelType::GoogleChat
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
        let mut widgets: Vec<Value> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| json!({"decoratedText": {"topLabel": k, "text": super::escape_html(&v), "wrapText": true}}))
            .collect();
        let mut buttons = Vec::new();
        if let Some(ack) = &msg.acknowledge_url {
            buttons.push(json!({"text": "Acknowledge", "onClick": {"openLink": {"url": ack}}}));
        }
        if let Some(alert) = &msg.alert_url {
            buttons.push(json!({"text": "Open alert", "onClick": {"openLink": {"url": alert}}}));
        }
        if !buttons.is_empty() {
            widgets.push(json!({"buttonList": {"buttons": buttons}}));
        }
        let body = json!({
            "text": msg.title,
            "cardsV2": [{
                "cardId": format!("tocsin-{}", msg.message_id),
                "card": {
                    "header": {"title": msg.title, "subtitle": msg.status.clone().unwrap_or_else(|| "Tocsin".into())},
                    "sections": [{"widgets": widgets}]
                }
            }]
        });
        Ok(Outgoing::Http(HttpRequest::json(c.webhook_url, &body)))
    }
}
