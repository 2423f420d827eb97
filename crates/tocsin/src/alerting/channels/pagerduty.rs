//! `PAGERDUTY`: Events API v2 (`{"routingKey", "apiUrl"?}`; the integration key is a secret,
//! `apiUrl` defaults to `https://events.pagerduty.com`). One incident per alert: every event
//! of an alert carries `dedup_key` = the alert id, so `alert.opened` and `alert.escalated`
//! trigger (a retry or a repeat lands on the same incident), `alert.acknowledged`
//! acknowledges and `alert.resolved` resolves it. Events without an alert trigger on the
//! message id.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{json, Value};

use super::message::Severity;
use super::{
    check_text, check_url, endpoint, finish, parse, parse_stored, ChannelType, ConfigError,
    HttpRequest, Message, Outgoing, Provider, RenderError,
};
use crate::alerting::event::AlertEvent;

pub struct PagerDuty;

const DEFAULT_API: &str = "https://events.pagerduty.com";

/// The `config` of a PAGERDUTY channel: Events API v2, one incident per alert.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "PagerDutyChannelConfig", extend("x-channel-type" = "PAGERDUTY"))]
struct Config {
    /// The Events API v2 integration (routing) key of the service.
    #[schemars(title = "Integration key", extend("format" = "password"))]
    routing_key: String,
    /// The Events API's address; https://events.pagerduty.com by default.
    #[schemars(title = "API URL")]
    api_url: Option<String>,
}

/// `event_action` of an event.
pub fn action(event: AlertEvent) -> &'static str {
    match event {
        AlertEvent::AlertAcknowledged => "acknowledge",
        AlertEvent::AlertResolved | AlertEvent::IncidentResolved => "resolve",
        _ => "trigger",
    }
}

impl Provider for PagerDuty {
    fn kind(&self) -> ChannelType {
        ChannelType::Pagerduty
    }

    fn config_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Config>()
    }

    fn secrets(&self) -> &'static [&'static str] {
        &["routingKey"]
    }

    fn validate(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        let c: Config = parse(config)?;
        let mut errors = Vec::new();
        check_text("config.routingKey", &c.routing_key, 100, &mut errors);
        if let Some(u) = &c.api_url {
            check_url("config.apiUrl", u, &mut errors);
        }
        finish(errors)
    }

    fn render(&self, config: &Value, msg: &Message) -> Result<Outgoing, RenderError> {
        let c: Config = parse_stored(config)?;
        let action = action(msg.event);
        let mut body = json!({
            "routing_key": c.routing_key,
            "event_action": action,
            "dedup_key": msg.dedup_key(),
        });
        if action == "trigger" {
            let severity = match msg.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warning",
                Severity::Info | Severity::Resolved => "info",
            };
            let details: serde_json::Map<String, Value> = msg
                .facts()
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), json!(v)))
                .collect();
            body["payload"] = json!({
                "summary": msg.title.chars().take(1024).collect::<String>(),
                "source": msg.target.clone().or_else(|| msg.monitor_name.clone()).unwrap_or_else(|| "tocsin".into()),
                "severity": severity,
                "component": msg.monitor_name,
                "class": msg.event.as_str(),
                "custom_details": details,
            });
            if !msg.timestamp.is_empty() {
                body["payload"]["timestamp"] = json!(msg.timestamp);
            }
            body["client"] = json!("Tocsin");
            if let Some(url) = &msg.alert_url {
                body["client_url"] = json!(url);
            }
            let mut links = Vec::new();
            if let Some(ack) = &msg.acknowledge_url {
                links.push(json!({"href": ack, "text": "Acknowledge in Tocsin"}));
            }
            if let Some(url) = &msg.alert_url {
                links.push(json!({"href": url, "text": "Open the alert in Tocsin"}));
            }
            body["links"] = json!(links);
        }
        let base = c.api_url.as_deref().unwrap_or(DEFAULT_API);
        Ok(Outgoing::Http(HttpRequest::json(
            endpoint(base, "/v2/enqueue"),
            &body,
        )))
    }
}
