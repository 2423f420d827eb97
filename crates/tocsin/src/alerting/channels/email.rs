//! `EMAIL`: a message to 1-20 addresses (`{"to": [...]}`) through the server's SMTP settings
//! (`--smtp-url`, `--smtp-from`; STARTTLS or TLS as the URL says), as HTML and plain text
//! alternatives: the facts, an Acknowledge button when the one-click link is present, and a
//! link to the alert. A server without SMTP settings refuses to create or enable an EMAIL
//! channel (`domain::channels`): its mails could never leave.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use super::{
    escape_html, finish, parse, parse_stored, ChannelType, ConfigError, EmailMessage, Message,
    Outgoing, Provider, RenderError,
};

pub struct Email;

/// The `config` of an EMAIL channel: sent with the server's SMTP relay (a server without one refuses EMAIL channels).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EmailChannelConfig", extend("x-channel-type" = "EMAIL"))]
struct Config {
    /// 1 to 20 email addresses; each gets the message.
    #[schemars(title = "Send to")]
    to: Vec<String>,
}

/// One `@`, something before it, a dot after it, no spaces.
fn address(s: &str) -> bool {
    s.len() <= 254
        && s.split_once('@').is_some_and(|(l, d)| {
            !l.is_empty() && d.contains('.') && !d.starts_with('.') && !d.ends_with('.')
        })
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>')
        && s.parse::<lettre::Address>().is_ok()
}

impl Provider for Email {
    fn kind(&self) -> ChannelType {
        ChannelType::Email
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        if c.to.is_empty() || c.to.len() > 20 {
            errors.push(ConfigError::new("config.to", "must list 1 to 20 addresses"));
        }
        for (i, a) in c.to.iter().enumerate() {
            if !address(a) {
                errors.push(ConfigError::new(
                    format!("config.to.{i}"),
                    "must be an email address",
                ));
            }
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let mut html = format!(
            "<!doctype html><html><body style=\"font-family:sans-serif\">\
             <h2 style=\"color:{}\">{}</h2><table cellpadding=\"4\">",
            msg.color_hex(),
            escape_html(&msg.title)
        );
        for (k, v) in msg.facts() {
            html.push_str(&format!(
                "<tr><th align=\"left\">{k}</th><td>{}</td></tr>",
                escape_html(&v)
            ));
        }
        html.push_str("</table>");
        if let Some(ack) = &msg.acknowledge_url {
            html.push_str(&format!(
                "<p><a href=\"{}\" style=\"display:inline-block;padding:10px 18px;background:#1e6fd9;color:#fff;text-decoration:none;border-radius:4px\">Acknowledge</a></p>",
                escape_html(ack)
            ));
        }
        if let Some(url) = &msg.alert_url {
            html.push_str(&format!(
                "<p><a href=\"{}\">Open the alert in Tocsin</a></p>",
                escape_html(url)
            ));
        }
        html.push_str("</body></html>");
        Ok(Outgoing::Email(EmailMessage {
            to: c.to,
            subject: format!("[Tocsin] {}", msg.title),
            text: format!("{}\n\n{}\n", msg.title, msg.plain()),
            html,
        }))
    }
}
