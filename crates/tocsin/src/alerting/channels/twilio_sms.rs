//! `TWILIO_SMS`: an SMS through Twilio's Messages API (`{"accountSid", "authToken", "from",
//! "to", "apiUrl"?}`; the auth token is a secret, sent as HTTP basic auth; `apiUrl` defaults
//! to `https://api.twilio.com`). Form-encoded `To`, `From`, `Body`: the title, the cause and
//! the Acknowledge link, within Twilio's 1,600 characters.
//!
//! `to` is one E.164 number, or an array of 1 to [`MAX_RECIPIENTS`] of them (an on-call
//! rotation). Twilio's API takes one recipient per message, so a notification renders one
//! request per number ([`Outgoing::HttpEach`]); the delivery is one attempt that succeeds only
//! when every number's request does. A failed attempt is retried as a whole: Twilio's Messages
//! API has no idempotency or deduplication key, so a retry sends the SMS again to every
//! number, and the numbers that did get it the first time get it twice. That is the price of
//! keeping one delivery (one row of history, one retry schedule) per notification; an alert
//! reaching someone twice is better than a partial retry bookkeeping per number.

use base64::Engine;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use super::{
    check_text, check_url, endpoint, finish, parse, parse_stored, ChannelType, ConfigError,
    HttpMethod, HttpRequest, Message, Outgoing, Provider, RenderError,
};

/// The most numbers one channel sends to.
pub const MAX_RECIPIENTS: usize = 10;

pub struct TwilioSms;

const DEFAULT_API: &str = "https://api.twilio.com";

/// The `config` of a TWILIO_SMS channel: one SMS per number through Twilio's Messages API.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "TwilioSmsChannelConfig", extend("x-channel-type" = "TWILIO_SMS"))]
struct Config {
    /// The account SID (AC...).
    #[schemars(title = "Account SID")]
    account_sid: String,
    /// The account's auth token.
    #[schemars(title = "Auth token", extend("format" = "password"))]
    auth_token: String,
    /// The sending number (E.164, +15551234567) or messaging service SID.
    #[schemars(title = "From")]
    from: String,
    /// One E.164 number or a list of 1 to 10 (one SMS each; a failed attempt is retried to every number).
    #[schemars(title = "To")]
    #[schemars(schema_with = "super::one_or_many_schema")]
    to: Value,
    /// Twilio's API address; https://api.twilio.com by default.
    #[schemars(title = "API URL")]
    api_url: Option<String>,
}

/// The numbers of `to` (one string, or an array of 1 to [`MAX_RECIPIENTS`] strings), each an
/// E.164 number; problems at `config.to` or `config.to.<i>`.
fn recipients(to: &Value) -> Result<Vec<String>, Vec<ConfigError>> {
    const NUMBER: &str = "must be an E.164 number like +15551234567";
    match to {
        Value::String(s) if e164(s) => Ok(vec![s.clone()]),
        Value::String(_) => Err(vec![ConfigError::new("config.to", NUMBER)]),
        Value::Array(items) => {
            if items.is_empty() || items.len() > MAX_RECIPIENTS {
                return Err(vec![ConfigError::new(
                    "config.to",
                    format!("must list 1 to {MAX_RECIPIENTS} numbers"),
                )]);
            }
            let mut numbers = Vec::with_capacity(items.len());
            let mut errors = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if e164(s) => {
                        if numbers.iter().any(|n| n == s) {
                            errors.push(ConfigError::new(format!("config.to.{i}"), "duplicate"));
                        } else {
                            numbers.push(s.to_string());
                        }
                    }
                    _ => errors.push(ConfigError::new(format!("config.to.{i}"), NUMBER)),
                }
            }
            finish(errors).map(|()| numbers)
        }
        _ => Err(vec![ConfigError::new(
            "config.to",
            format!("must be an E.164 number or an array of 1 to {MAX_RECIPIENTS} of them"),
        )]),
    }
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

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
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
        if let Err(e) = recipients(&c.to) {
            errors.extend(e);
        }
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let numbers = recipients(&c.to).map_err(|errors| {
            RenderError(
                errors
                    .into_iter()
                    .map(|e| format!("{}: {}", e.field, e.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let mut text = msg.title.clone();
        if let Some(cause) = &msg.cause {
            text.push_str(&format!(": {cause}"));
        }
        if let Some(ack) = &msg.acknowledge_url {
            text.push_str(&format!("\nAcknowledge: {ack}"));
        }
        let text: String = text.chars().take(1600).collect();
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", c.account_sid, c.auth_token));
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        let url = endpoint(
            base,
            &format!("/2010-04-01/Accounts/{}/Messages.json", c.account_sid),
        );
        let requests = numbers
            .into_iter()
            .map(|to| {
                let form = url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("To", &to)
                    .append_pair("From", &c.from)
                    .append_pair("Body", &text)
                    .finish();
                let request = HttpRequest {
                    method: HttpMethod::Post,
                    url: url.clone(),
                    headers: vec![
                        (
                            "content-type".into(),
                            "application/x-www-form-urlencoded".into(),
                        ),
                        ("authorization".into(), format!("Basic {auth}")),
                    ],
                    body: form.into_bytes(),
                };
                (to, request)
            })
            .collect();
        Ok(Outgoing::HttpEach(requests))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(to: Value) -> Value {
        json!({"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "t",
               "from": "+15551234567", "to": to})
    }

    fn fields(to: Value) -> Vec<String> {
        match TwilioSms.validate(&config(to)) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.into_iter().map(|e| e.field).collect(),
        }
    }

    #[test]
    fn to_is_one_number_or_an_array_of_one_to_ten() {
        assert!(fields(json!("+15557654321")).is_empty());
        assert!(fields(json!(["+15557654321"])).is_empty());
        let ten: Vec<String> = (0..10).map(|i| format!("+1555765432{i}")).collect();
        assert!(fields(json!(ten)).is_empty());
        let eleven: Vec<String> = (0..11).map(|i| format!("+155576543{i:02}")).collect();
        assert_eq!(fields(json!(eleven)), ["config.to"]);
        assert_eq!(fields(json!([])), ["config.to"]);
        assert_eq!(fields(json!("5557654321")), ["config.to"]);
        assert_eq!(fields(json!(42)), ["config.to"]);
        assert_eq!(
            fields(json!(["+15557654321", "nope", 7, "+15557654321"])),
            ["config.to.1", "config.to.2", "config.to.3"]
        );
    }

    #[test]
    fn one_request_per_number_and_old_single_number_configs_render_as_before() {
        let msg = Message::from_body(
            crate::alerting::event::AlertEvent::Test,
            "msg_1",
            &json!({"type": "test", "timestamp": "2026-01-01T00:00:00Z", "data": {"message": "hi"}})
                .to_string(),
            0,
        );
        let Outgoing::HttpEach(requests) = TwilioSms
            .render(&config(json!(["+15557654321", "+15557654322"])), &msg)
            .unwrap()
        else {
            panic!("not HTTP");
        };
        let to: Vec<&str> = requests.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(to, ["+15557654321", "+15557654322"]);
        for (number, r) in &requests {
            let form: Vec<(String, String)> =
                url::form_urlencoded::parse(&r.body).into_owned().collect();
            assert!(form.contains(&("To".into(), number.clone())));
        }
        let Outgoing::HttpEach(one) = TwilioSms
            .render(&config(json!("+15557654321")), &msg)
            .unwrap()
        else {
            panic!("not HTTP");
        };
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].0, "+15557654321");
    }
}
