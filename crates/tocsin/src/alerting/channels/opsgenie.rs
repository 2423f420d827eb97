//! `OPSGENIE`: the Alert API (`{"apiKey", "apiUrl"?, "priority"?}`; the key is a secret and
//! goes in `Authorization: GenieKey`, `apiUrl` defaults to `https://api.opsgenie.com`, use
//! `https://api.eu.opsgenie.com` in the EU). One Opsgenie alert per Tocsin alert, by `alias`
//! = the alert id: opening and escalating create it (Opsgenie deduplicates open alerts by
//! alias), acknowledging and resolving call `acknowledge` and `close` on that alias.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_url, endpoint, finish, parse, parse_stored, ChannelType, ConfigError, HttpRequest,
    Message, Outgoing, Provider, RenderError,
};
use crate::alerting::event::AlertEvent;

pub struct Opsgenie;

const DEFAULT_API: &str = "https://api.opsgenie.com";

/// The `config` of an OPSGENIE channel: the Alert API, one Opsgenie alert per alert.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "OpsgenieChannelConfig", extend("x-channel-type" = "OPSGENIE"))]
struct Config {
    /// An API integration's key (sent as `Authorization: GenieKey`).
    #[schemars(title = "API key", extend("format" = "password"))]
    api_key: String,
    /// The Alert API's address; https://api.opsgenie.com by default, https://api.eu.opsgenie.com in the EU.
    #[schemars(title = "API URL")]
    api_url: Option<String>,
    /// P1 to P5; by default P1 for outages, P3 for warnings, P5 otherwise.
    #[schemars(title = "Priority", extend("enum" = ["P1", "P2", "P3", "P4", "P5", null]))]
    priority: Option<String>,
}

const PRIORITIES: [&str; 5] = ["P1", "P2", "P3", "P4", "P5"];

fn segment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Provider for Opsgenie {
    fn kind(&self) -> ChannelType {
        ChannelType::Opsgenie
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["apiKey"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        super::check_text("config.apiKey", &c.api_key, 200, &mut errors);
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        if let Some(p) = &c.priority {
            if !PRIORITIES.contains(&p.as_str()) {
                errors.push(ConfigError::new(
                    "config.priority",
                    "must be one of P1, P2, P3, P4, P5",
                ));
            }
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        let alias = msg.dedup_key();
        let req = match msg.event {
            AlertEvent::AlertAcknowledged | AlertEvent::AlertResolved => {
                let verb = if msg.event == AlertEvent::AlertResolved {
                    "close"
                } else {
                    "acknowledge"
                };
                HttpRequest::json(
                    endpoint(
                        base,
                        &format!("/v2/alerts/{}/{verb}?identifierType=alias", segment(&alias)),
                    ),
                    &json!({"source": "Tocsin", "user": "Tocsin", "note": msg.title}),
                )
            }
            _ => {
                let by_severity = match msg.severity {
                    Severity::Critical => "P1",
                    Severity::Warning => "P3",
                    Severity::Info | Severity::Resolved => "P5",
                };
                let priority = c.priority.unwrap_or_else(|| by_severity.into());
                let details: serde_json::Map<String, Value> = msg
                    .facts()
                    .into_iter()
                    .map(|(k, v)| (k.to_ascii_lowercase(), json!(v)))
                    .collect();
                let mut description = msg.plain();
                description.truncate(15_000);
                HttpRequest::json(
                    endpoint(base, "/v2/alerts"),
                    &json!({
                        "message": msg.title.chars().take(130).collect::<String>(),
                        "alias": alias,
                        "description": description,
                        "priority": priority,
                        "source": "Tocsin",
                        "tags": ["tocsin", msg.event.as_str()],
                        "entity": msg.monitor_name,
                        "details": details,
                    }),
                )
            }
        };
        Ok(Outgoing::Http(req.header(
            "authorization",
            format!("GenieKey {}", c.api_key),
        )))
    }
}
