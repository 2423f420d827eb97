//! `DISCORD`: a channel webhook (`{"webhookUrl", "username"?}`; the URL is the credential),
//! posted as one embed: the title in the severity's colour, the facts as inline fields, the
//! Acknowledge link in the description (webhooks cannot carry link buttons), the event's time.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_text, check_url, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest,
    Message, Outgoing, Provider, RenderError,
};

pub struct Discord;

/// The `config` of a DISCORD channel: a channel webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "DiscordChannelConfig", extend("x-channel-type" = "DISCORD"))]
struct Config {
    /// The channel webhook's URL (https://discord.com/api/webhooks/...); it is the credential.
    #[schemars(title = "Webhook URL", extend("format" = "password"))]
    webhook_url: String,
    /// The name the messages are posted under (1 to 80 characters); the webhook's own by default.
    #[schemars(title = "Post as")]
    username: Option<String>,
}

impl Provider for Discord {
    fn kind(&self) -> ChannelType {
        ChannelType::Discord
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
        if let Some(u) = &c.username {
            check_text("config.username", u, 80, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let fields: Vec<Value> = msg
            .facts()
            .into_iter()
            .map(|(k, v)| json!({"name": k, "value": v.chars().take(1024).collect::<String>(), "inline": k != "Cause"}))
            .collect();
        let mut description = String::new();
        if let Some(ack) = &msg.acknowledge_url {
            description.push_str(&format!("**[Acknowledge]({ack})**"));
        }
        let mut embed = json!({
            "title": msg.title.chars().take(256).collect::<String>(),
            "color": msg.color(),
            "fields": fields,
            "footer": {"text": "Tocsin"},
        });
        if !description.is_empty() {
            embed["description"] = json!(description);
        }
        if let Some(url) = &msg.alert_url {
            embed["url"] = json!(url);
        }
        if !msg.timestamp.is_empty() {
            embed["timestamp"] = json!(msg.timestamp);
        }
        let body = json!({
            "username": c.username.unwrap_or_else(|| "Tocsin".into()),
            "content": msg.title.chars().take(2000).collect::<String>(),
            "embeds": [embed],
            "allowed_mentions": {"parse": []},
        });
        Ok(Outgoing::Http(HttpRequest::json(c.webhook_url, &body)))
    }
}
