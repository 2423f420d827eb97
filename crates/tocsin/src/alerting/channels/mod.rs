//! Notification channel types: one provider per file, all behind [`Provider`].
//!
//! A provider owns three things about its type and nothing else: its `config` (parsed into a
//! typed config, with `config.<key>` paths on errors, and which keys are secrets), and how one
//! notification is rendered into its provider's real message format ([`Outgoing`]: an HTTP
//! request, several that succeed or fail together, or an email). Rendering is pure; the delivery worker (`alerting::deliver`) sends
//! what a provider renders through the one outbound client (`outbound.rs`) or the mailer, and
//! records the attempt. Every provider takes a base URL in its config (defaulting to the
//! public service), so self-hosted servers work and tests can point any type at a loopback
//! receiver.
//!
//! Adding a type: a file here with a unit struct implementing [`Provider`], its variant in
//! [`ChannelType`], and its arm in [`provider`].

pub mod discord;
pub mod email;
pub mod google_chat;
pub mod gotify;
pub mod matrix;
pub mod mattermost;
pub mod message;
pub mod ntfy;
pub mod opsgenie;
pub mod outbound;
pub mod pagerduty;
pub mod pushover;
pub mod slack;
pub mod teams;
pub mod telegram;
pub mod twilio_sms;
pub mod webhook;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use message::Message;

/// The channel types of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChannelType {
    Email,
    Webhook,
    Slack,
    Discord,
    Teams,
    Telegram,
    Pagerduty,
    Opsgenie,
    Ntfy,
    Pushover,
    Gotify,
    Matrix,
    GoogleChat,
    Mattermost,
    TwilioSms,
}

crate::store::corrupt::stored_text!(ChannelType, "channel type");

impl ChannelType {
    pub const ALL: [ChannelType; 15] = [
        ChannelType::Email,
        ChannelType::Webhook,
        ChannelType::Slack,
        ChannelType::Discord,
        ChannelType::Teams,
        ChannelType::Telegram,
        ChannelType::Pagerduty,
        ChannelType::Opsgenie,
        ChannelType::Ntfy,
        ChannelType::Pushover,
        ChannelType::Gotify,
        ChannelType::Matrix,
        ChannelType::GoogleChat,
        ChannelType::Mattermost,
        ChannelType::TwilioSms,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelType::Email => "EMAIL",
            ChannelType::Webhook => "WEBHOOK",
            ChannelType::Slack => "SLACK",
            ChannelType::Discord => "DISCORD",
            ChannelType::Teams => "TEAMS",
            ChannelType::Telegram => "TELEGRAM",
            ChannelType::Pagerduty => "PAGERDUTY",
            ChannelType::Opsgenie => "OPSGENIE",
            ChannelType::Ntfy => "NTFY",
            ChannelType::Pushover => "PUSHOVER",
            ChannelType::Gotify => "GOTIFY",
            ChannelType::Matrix => "MATRIX",
            ChannelType::GoogleChat => "GOOGLE_CHAT",
            ChannelType::Mattermost => "MATTERMOST",
            ChannelType::TwilioSms => "TWILIO_SMS",
        }
    }

    /// The type a text names, `None` for anything else (see the `FromStr`).
    pub fn parse(s: &str) -> Option<ChannelType> {
        s.parse().ok()
    }
}

/// One problem with a channel's `config`: `field` is the dotted path from the body root
/// (`config.url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// What one delivery sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Http(HttpRequest),
    /// Several requests making up one delivery (an SMS to each number of a list), each with
    /// what it is for (the number) for the attempt's error: sent at once, and delivered only
    /// when every one is answered 2xx.
    HttpEach(Vec<(String, HttpRequest)>),
    Email(EmailMessage),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    Post,
    Put,
}

/// An HTTP request to the provider.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    pub method: HttpMethod,
    pub url: String,
    /// Content type included.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A JSON `POST`.
    pub fn json(url: String, body: &Value) -> HttpRequest {
        HttpRequest {
            method: HttpMethod::Post,
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> HttpRequest {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

/// An email, sent with the server's SMTP settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailMessage {
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// A stored config that can no longer be rendered (it was valid when stored, so this is a
/// corrupt row or a type whose rules tightened): the attempt fails without retries.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct RenderError(pub String);

/// One channel type.
pub trait Provider: Sync {
    fn kind(&self) -> ChannelType;

    /// The config keys holding secrets, masked as `********` in every read: a key of the
    /// config, or `key.*` for every value of an object (a webhook's extra headers).
    fn secrets(&self) -> &'static [&'static str] {
        &[]
    }

    /// The documented shape of its `config`: the schema of the same typed config `validate`
    /// parses (so the document names exactly the keys it accepts), named `<Type>ChannelConfig`
    /// and marked with `x-channel-type`; secret keys carry `format: password` (checked
    /// against [`Provider::secrets`] by a test), so a form can mask them.
    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema;

    /// Checks a config; problems carry `config.<key>` paths.
    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>>;

    /// The request (or email) carrying `msg` to this channel.
    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError>;
}

/// The provider of a type.
pub fn provider(kind: ChannelType) -> &'static dyn Provider {
    match kind {
        ChannelType::Email => &email::Email,
        ChannelType::Webhook => &webhook::Webhook,
        ChannelType::Slack => &slack::Slack,
        ChannelType::Discord => &discord::Discord,
        ChannelType::Teams => &teams::Teams,
        ChannelType::Telegram => &telegram::Telegram,
        ChannelType::Pagerduty => &pagerduty::PagerDuty,
        ChannelType::Opsgenie => &opsgenie::Opsgenie,
        ChannelType::Ntfy => &ntfy::Ntfy,
        ChannelType::Pushover => &pushover::Pushover,
        ChannelType::Gotify => &gotify::Gotify,
        ChannelType::Matrix => &matrix::Matrix,
        ChannelType::GoogleChat => &google_chat::GoogleChat,
        ChannelType::Mattermost => &mattermost::Mattermost,
        ChannelType::TwilioSms => &twilio_sms::TwilioSms,
    }
}

/// The per-type config schemas, one for each type in [`ChannelType::ALL`] order.
pub fn config_schemas(generator: &mut SchemaGenerator) -> Vec<Schema> {
    ChannelType::ALL
        .iter()
        .map(|t| provider(*t).config_schema(generator))
        .collect()
}

/// The schema of a key that takes one text or a list of them (`to` of `TWILIO_SMS`).
pub(crate) fn one_or_many_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 10}
        ]
    })
}

/// The schema of a key that takes an integer or its text (`chatId` of `TELEGRAM`).
pub(crate) fn integer_or_text_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["integer", "string"]})
}

/// What every read shows in place of a secret.
pub const MASK: &str = "********";

/// `config` with its secrets replaced by [`MASK`].
pub fn mask(kind: ChannelType, config: &Value) -> Value {
    let mut out = config.clone();
    for path in provider(kind).secrets() {
        for slot in secret_slots(&mut out, path) {
            if !slot.is_null() {
                *slot = Value::String(MASK.into());
            }
        }
    }
    out
}

/// `config` as written by an update, where a secret sent back as [`MASK`] (as every read shows
/// it) keeps the stored value.
pub fn keep_secrets(kind: ChannelType, new: &Value, stored: &Value) -> Value {
    let mut out = new.clone();
    for path in provider(kind).secrets() {
        let (key, all) = match path.strip_suffix(".*") {
            Some(k) => (k, true),
            None => (*path, false),
        };
        let Some(obj) = out.as_object_mut() else {
            continue;
        };
        if all {
            if let Some(Value::Object(values)) = obj.get_mut(key) {
                for (name, v) in values.iter_mut() {
                    if v.as_str() == Some(MASK) {
                        if let Some(old) = stored.get(key).and_then(|o| o.get(name)) {
                            *v = old.clone();
                        }
                    }
                }
            }
        } else if obj.get(key).and_then(Value::as_str) == Some(MASK) {
            if let Some(old) = stored.get(key) {
                obj.insert(key.to_string(), old.clone());
            }
        }
    }
    out
}

fn secret_slots<'v>(config: &'v mut Value, path: &str) -> Vec<&'v mut Value> {
    let Some(obj) = config.as_object_mut() else {
        return Vec::new();
    };
    match path.strip_suffix(".*") {
        Some(key) => match obj.get_mut(key) {
            Some(Value::Object(values)) => values.values_mut().collect(),
            _ => Vec::new(),
        },
        None => obj.get_mut(path).into_iter().collect(),
    }
}

/// Parses a config into the provider's typed config; serde's complaints become `config.<path>`
/// errors in the API's words.
pub fn parse<T: DeserializeOwned>(config: &Value) -> Result<T, Vec<ConfigError>> {
    if !config.is_object() {
        return Err(vec![ConfigError::new("config", "must be an object")]);
    }
    serde_path_to_error::deserialize::<_, T>(config).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let (field, message) = if let Some(name) = between(&inner, "missing field `", "`") {
            (join("config", &path, Some(name)), "is required".to_string())
        } else if let Some(name) = between(&inner, "unknown field `", "`") {
            (
                join("config", &path, None),
                format!("is not a key of this channel type ({name})"),
            )
        } else {
            let msg = inner
                .split(" at line")
                .next()
                .unwrap_or(&inner)
                .replace("invalid type: ", "");
            (join("config", &path, None), msg)
        };
        vec![ConfigError::new(field, message)]
    })
}

fn between<'s>(s: &'s str, start: &str, end: &str) -> Option<&'s str> {
    let rest = &s[s.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

/// `config` + serde_path_to_error's `a.b[0]` path (as `a.b.0`) + a missing key.
fn join(root: &str, path: &str, last: Option<&str>) -> String {
    let mut out = root.to_string();
    let path = path.replace('[', ".").replace(']', "");
    if !path.is_empty() && path != "." {
        out.push('.');
        out.push_str(path.trim_start_matches('.'));
    }
    if let Some(l) = last {
        out.push('.');
        out.push_str(l);
    }
    out
}

/// Parses for rendering: a stored config was valid when written.
pub fn parse_stored<T: DeserializeOwned>(config: &Value) -> Result<T, RenderError> {
    parse(config).map_err(|errors| {
        RenderError(
            errors
                .into_iter()
                .map(|e| format!("{}: {}", e.field, e.message))
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

/// An absolute `http`/`https` URL with a host, at most 2,000 characters, that some server
/// could answer: not port 0, not an unspecified, broadcast or multicast address, not a name
/// under `.invalid` (RFC 6761 guarantees it never resolves). Whether the receiver is up is
/// not judged here (it may be down for a minute while the channel is set up): the test send
/// and the delivery history say that.
pub fn check_url(field: &str, url: &str, errors: &mut Vec<ConfigError>) {
    let parsed = (url.len() <= 2_000)
        .then(|| url::Url::parse(url).ok())
        .flatten()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    let Some(u) = parsed else {
        errors.push(ConfigError::new(
            field,
            "must be an absolute http:// or https:// URL",
        ));
        return;
    };
    if let Some(why) = unreachable(&u) {
        errors.push(ConfigError::new(field, why));
    }
}

/// Why no request to `u` could ever be answered, if that is so.
fn unreachable(u: &url::Url) -> Option<&'static str> {
    use std::net::IpAddr;
    if u.port() == Some(0) {
        return Some("cannot be reached: port 0 is not a port a server listens on");
    }
    let ip = match u.host()? {
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            if d == "invalid" || d.ends_with(".invalid") {
                return Some("cannot be reached: names under .invalid never resolve");
            }
            return None;
        }
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
    };
    let never = match ip {
        IpAddr::V4(v4) => v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast(),
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast(),
    };
    never.then_some(
        "cannot be reached: an unspecified, broadcast or multicast address is no destination",
    )
}

/// The URLs a config names itself (`url` and every `...Url` key), with their field paths:
/// the destinations a request of this channel may go to besides the provider's own host.
pub fn written_urls(config: &Value) -> Vec<(String, String)> {
    let Some(obj) = config.as_object() else {
        return Vec::new();
    };
    obj.iter()
        .filter(|(k, _)| *k == "url" || k.ends_with("Url"))
        .filter_map(|(k, v)| Some((format!("config.{k}"), v.as_str()?.to_string())))
        .collect()
}

/// 1 to `max` characters, none of them control characters.
pub fn check_text(field: &str, value: &str, max: usize, errors: &mut Vec<ConfigError>) {
    let n = value.trim().chars().count();
    if n == 0 || n > max || value.chars().any(|c| !crate::text::printable(c)) {
        errors.push(ConfigError::new(
            field,
            format!("must be 1 to {max} printable characters"),
        ));
    }
}

/// `base` without a trailing slash, then `path`.
pub fn endpoint(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
}

/// Text for HTML bodies (email, Telegram's HTML mode, Matrix's formatted body).
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The errors as a `Result`.
pub fn finish(errors: Vec<ConfigError>) -> Result<(), Vec<ConfigError>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_type_round_trips_and_has_a_provider_of_its_kind() {
        crate::store::corrupt::assert_round_trip(&ChannelType::ALL, ChannelType::as_str);
        for t in ChannelType::ALL {
            assert_eq!(ChannelType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), json!(t.as_str()), "{t:?}");
            assert_eq!(provider(t).kind(), t);
        }
    }

    #[test]
    fn secrets_are_masked_and_a_mask_sent_back_keeps_the_stored_value() {
        let stored = json!({"url": "http://x", "secret": "whsec_abc", "headers": {"Authorization": "Bearer t", "X-A": "1"}});
        let masked = mask(ChannelType::Webhook, &stored);
        assert_eq!(masked["secret"], MASK);
        assert_eq!(masked["headers"]["Authorization"], MASK);
        assert_eq!(masked["url"], "http://x");
        let back = keep_secrets(ChannelType::Webhook, &masked, &stored);
        assert_eq!(back, stored);
        let changed =
            json!({"url": "http://y", "secret": "whsec_new", "headers": {"Authorization": MASK}});
        let kept = keep_secrets(ChannelType::Webhook, &changed, &stored);
        assert_eq!(kept["secret"], "whsec_new");
        assert_eq!(kept["headers"]["Authorization"], "Bearer t");
    }

    /// The keys each schema marks `format: password`, `key.*` for an object's values.
    fn masked_keys(schema: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for (key, prop) in schema["properties"].as_object().unwrap() {
            if prop["format"] == "password" {
                out.push(key.clone());
            }
            if prop["additionalProperties"]["format"] == "password" {
                out.push(format!("{key}.*"));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_schema_names_its_type_and_marks_exactly_the_masked_keys() {
        let mut generator = schemars::SchemaGenerator::default();
        let refs = config_schemas(&mut generator);
        let defs = generator.definitions().clone();
        for (t, r) in ChannelType::ALL.iter().zip(refs) {
            let name = r.as_value()["$ref"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string();
            assert!(name.ends_with("ChannelConfig"), "{name}");
            let schema = &defs[&name];
            assert_eq!(schema["x-channel-type"], json!(t.as_str()), "{name}");
            assert_eq!(schema["additionalProperties"], json!(false), "{name}");
            let mut secrets: Vec<String> = provider(*t)
                .secrets()
                .iter()
                .map(|s| s.to_string())
                .collect();
            secrets.sort();
            assert_eq!(masked_keys(schema), secrets, "{name}");
            for (key, prop) in schema["properties"].as_object().unwrap() {
                assert!(prop["title"].is_string(), "{name}.{key} has no title");
                assert!(
                    prop["description"].is_string(),
                    "{name}.{key} has no description"
                );
            }
        }
    }

    #[test]
    fn parse_errors_name_the_config_key() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct C {
            url: String,
            n: Option<u8>,
        }
        let e = parse::<C>(&json!({})).unwrap_err();
        assert_eq!(e[0].field, "config.url");
        assert_eq!(e[0].message, "is required");
        let e = parse::<C>(&json!({"url": "x", "n": "a"})).unwrap_err();
        assert_eq!(e[0].field, "config.n");
        let e = parse::<C>(&json!({"url": "x", "zz": 1})).unwrap_err();
        assert_eq!(e[0].field, "config.zz");
        let e = parse::<C>(&json!([])).unwrap_err();
        assert_eq!(e[0].field, "config");
    }
}
