//! `TELEGRAM`: the Bot API's `sendMessage` (`{"botToken", "chatId", "apiUrl"?}`; the token is
//! a secret, `apiUrl` defaults to `https://api.telegram.org`) with `parse_mode: HTML` (only the
//! tags Telegram allows: `<b>`, `<a>`), and the Acknowledge link as an inline keyboard button.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    check_text, check_url, endpoint, escape_html, finish, parse, parse_stored, ChannelType,
    ConfigError, HttpRequest, Message, Outgoing, Provider, RenderError,
};

pub struct Telegram;

const DEFAULT_API: &str = "https://api.telegram.org";

/// The `config` of a TELEGRAM channel: a bot's `sendMessage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "TelegramChannelConfig", extend("x-channel-type" = "TELEGRAM"))]
struct Config {
    /// The bot's token, from @BotFather.
    #[schemars(title = "Bot token", extend("format" = "password"))]
    bot_token: String,
    /// A numeric chat id or `@channelusername`.
    #[schemars(title = "Chat")]
    #[schemars(schema_with = "super::integer_or_text_schema")]
    chat_id: Value,
    /// The Bot API's address; https://api.telegram.org by default.
    #[schemars(title = "API URL")]
    api_url: Option<String>,
}

fn chat_id(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) if n.is_i64() => Some(n.to_string()),
        Value::String(s)
            if (s.starts_with('@') && s.len() > 1 && s.len() <= 64) || s.parse::<i64>().is_ok() =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

impl Provider for Telegram {
    fn kind(&self) -> ChannelType {
        ChannelType::Telegram
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["botToken"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_text("config.botToken", &c.bot_token, 200, &mut errors);
        if c.bot_token.contains('/') {
            errors.push(ConfigError::new("config.botToken", "must not contain '/'"));
        }
        if chat_id(&c.chat_id).is_none() {
            errors.push(ConfigError::new(
                "config.chatId",
                "must be a numeric chat id or @channelusername",
            ));
        }
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let chat = chat_id(&c.chat_id).ok_or_else(|| RenderError("bad chat id".into()))?;
        let mut text = format!("<b>{}</b>", escape_html(&msg.title));
        for (k, v) in msg.facts() {
            text.push_str(&format!("\n<b>{k}:</b> {}", escape_html(&v)));
        }
        if let Some(url) = &msg.alert_url {
            text.push_str(&format!(
                "\n<a href=\"{}\">Open alert</a>",
                escape_html(url)
            ));
        }
        let mut body = json!({
            "chat_id": chat,
            "text": text,
            "parse_mode": "HTML",
            "disable_web_page_preview": true,
        });
        if let Some(ack) = &msg.acknowledge_url {
            body["reply_markup"] =
                json!({"inline_keyboard": [[{"text": "Acknowledge", "url": ack}]]});
        }
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        let url = endpoint(base, &format!("/bot{}/sendMessage", c.bot_token));
        Ok(Outgoing::Http(HttpRequest::json(url, &body)))
    }
}
