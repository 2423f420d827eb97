//! `MATTERMOST`: an incoming webhook (`{"webhookUrl", "channel"?, "username"?}`; the URL is
//! the credential), posted as Markdown text with one message attachment: the severity's
//! colour, the facts as short fields, the title linking to the alert, and the Acknowledge link.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_text, check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest,
    Message, Outgoing, Provider, RenderError,
};

pub struct Mattermost;

/// The `config` of a MATTERMOST channel: an incoming webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "MattermostChannelConfig", extend("x-channel-type" = "MATTERMOST"))]
struct Config {
    /// The incoming webhook's URL; it is the credential.
    #[schemars(title = "Webhook URL", extend("format" = "password"))]
    webhook_url: String,
    /// The channel to post in instead of the webhook's own (1 to 64 characters).
    #[schemars(title = "Channel")]
    channel: Option<String>,
    /// The name the messages are posted under (1 to 64 characters).
    #[schemars(title = "Post as")]
    username: Option<String>,
}

impl Provider for Mattermost {
    fn kind(&self) -> ChannelType {
        ChannelType::Mattermost
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
        if let Some(ch) = &c.channel {
            check_text("config.channel", ch, 64, &mut errors);
        }
        if let Some(u) = &c.username {
            check_text("config.username", u, 64, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let mut text = format!("#### {}", msg.title);
        if let Some(ack) = &msg.acknowledge_url {
            text.push_str(&format!("\n[Acknowledge]({ack})"));
        }
        let fields: Vec<Value> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| json!({"short": k != "Cause", "title": k, "value": v}))
            .collect();
        let mut attachment = json!({
            "fallback": msg.title,
            "color": msg.color_hex(),
            "title": msg.title,
            "fields": fields,
        });
        if let Some(url) = &msg.alert_url {
            attachment["title_link"] = json!(url);
        }
        let mut body = json!({
            "text": text,
            "username": c.username.unwrap_or_else(|| "Tocsin".into()),
            "attachments": [attachment],
        });
        if let Some(ch) = c.channel {
            body["channel"] = json!(ch);
        }
        Ok(Outgoing::Http(HttpRequest::json(c.webhook_url, &body)))
    }
}
