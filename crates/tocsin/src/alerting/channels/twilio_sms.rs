//! `TWILIO_SMS`: one SMS through Twilio's Messages API (`{"accountSid", "authToken", "from",
//! "to", "apiUrl"?}`; the auth token is a secret, sent as HTTP basic auth; `apiUrl` defaults
//! to `https://api.twilio.com`). Form-encoded `To`, `From`, `Body`: the title, the cause and
//! the Acknowledge link, within Twilio's 1,600 characters.

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use super::{
    check_text, check_url, endpoint, finish, parse, parse_stored, ChannelType, ConfigError,
    HttpMethod, HttpRequest, Message, Outgoing, Provider, RenderError,
};

pub struct TwilioSms;

const DEFAULT_API: &str = "https://api.twilio.com";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    account_sid: String,
    auth_token: String,
    from: String,
    to: String,
    api_url: Option<String>,
}

/// `+` and 6 to 15 digits.
fn e164(s: &str) -> bool {
    s.strip_prefix('+')
        .is_some_and(|d| (6..=15).contains(&d.len()) && d.chars().all(|c| c.is_ascii_digit()))
}

impl Provider for TwilioSms {
    fn kind(&self) -> ChannelType {
        ChannelType::TwilioSms
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["authToken"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        let sid_ok = c.account_sid.len() == 34
            && c.account_sid.starts_with("AC")
            && c.account_sid.chars().all(|ch| ch.is_ascii_alphanumeric());
        if !sid_ok {
            errors.push(ConfigError::new(
                "config.accountSid",
                "must be a Twilio account SID (AC followed by 32 characters)",
            ));
        }
        check_text("config.authToken", &c.auth_token, 100, &mut errors);
        // A sender may be a number or an alphanumeric sender id; a recipient is a number.
        if !e164(&c.from) && !(1..=11).contains(&c.from.len()) {
            errors.push(ConfigError::new(
                "config.from",
                "must be an E.164 number like +15551234567 or a sender id of at most 11 characters",
            ));
        }
        if !e164(&c.to) {
            errors.push(ConfigError::new(
                "config.to",
                "must be an E.164 number like +15551234567",
            ));
        }
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let mut text = msg.title.clone();
        if let Some(cause) = &msg.cause {
            text.push_str(&format!(": {cause}"));
        }
        if let Some(ack) = &msg.acknowledge_url {
            text.push_str(&format!("\nAcknowledge: {ack}"));
        }
        let text: String = text.chars().take(1600).collect();
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("To", &c.to)
            .append_pair("From", &c.from)
            .append_pair("Body", &text)
            .finish();
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", c.account_sid, c.auth_token));
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        Ok(Outgoing::Http(HttpRequest {
            method: HttpMethod::Post,
            url: endpoint(
                base,
                &format!("/2010-04-01/Accounts/{}/Messages.json", c.account_sid),
            ),
            headers: vec![
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
                ("authorization".into(), format!("Basic {auth}")),
            ],
            body: form.into_bytes(),
        }))
    }
}
