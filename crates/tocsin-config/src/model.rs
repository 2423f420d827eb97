//! The configuration file: `version: 1` and one list per resource kind, each item the fields
//! of its REST create body with names where the API takes ids. The same types give the
//! JSON Schema (`tocsin config schema`), so editors check what `plan` reads.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A whole workspace as code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "Tocsin configuration")]
pub struct File {
    /// The file format's version: 1.
    pub version: u32,
    /// Keyed by `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notification_channels: Vec<Channel>,
    /// Keyed by `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalation_policies: Vec<Policy>,
    /// Keyed by `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<Project>,
    /// Keyed by `name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub monitors: Vec<Monitor>,
    /// Keyed by `title`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintenance_windows: Vec<Maintenance>,
    /// Keyed by `slug`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_pages: Vec<StatusPage>,
}

/// Present-and-null stays `Some(None)`, which for a nullable field means "clear it".
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A notification channel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Channel {
    /// 1 to 100 characters, unique in the file.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ChannelType,
    /// The type's settings, as the API takes them. Secrets as `${ENV_VAR}`.
    #[serde(default)]
    pub config: Map<String, Value>,
    /// The events the channel takes (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_default: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// The channel types of the API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChannelType {
    Email,
    #[default]
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

/// An escalation policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    /// 1 to 10 steps, in order.
    pub steps: Vec<Step>,
}

/// One step of a policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Minutes after the alert opened.
    pub delay_minutes: i64,
    /// Channel names.
    pub notification_channels: Vec<String>,
}

/// A project (its members are the monitors that name it in `projects`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The monitor types of the API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MonitorType {
    #[default]
    Http,
    Tcp,
    Ping,
    Dns,
    DnsDiff,
    Websocket,
    Push,
}

/// Flap detection settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlapDetection {
    pub transitions: i64,
    pub window_minutes: i64,
}

/// A monitor. A field left out is not managed (its current value stays), except the lists
/// and references below, which the file then clears.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Monitor {
    /// 1 to 200 characters, unique in the file.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// HTTP and WEBSOCKET.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// TCP, PING, DNS, DNS_DIFF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Seconds between checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmations_required: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_confirmations_required: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_failure_duration_ms: Option<i64>,
    /// PUSH: seconds of slack after each expected push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<Vec<String>>,
    /// `all`, `round_robin` or `random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// False keeps the monitor paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    /// `null` turns flap detection off.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub flap_detection: Option<Option<FlapDetection>>,
    /// The type's settings (`HttpConfig`, `TcpConfig`, ... of the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
    /// Channel names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_channels: Option<Vec<String>>,
    /// A policy name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_policy: Option<String>,
    /// Project names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<String>>,
    /// Names of monitors this one depends on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
}

/// A maintenance window of one monitor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Maintenance {
    /// Unique in the file.
    pub title: String,
    /// A monitor name.
    pub monitor: String,
    /// RFC 3339.
    pub starts_at: String,
    /// RFC 3339.
    pub ends_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// `{frequency: daily|weekly|monthly|cron, dayOfWeek?, dayOfMonth?, expression?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurring: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_uptime: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A status page with its components.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusPage {
    /// Unique on the server.
    pub slug: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_days: Option<i64>,
    /// `OFF`, `DRAFT` or `PUBLISHED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_incidents: Option<String>,
    /// `logoUrl`, `faviconUrl`, `primaryColor`, `backgroundColor`, `customCss`,
    /// `footerLinks`, `language`, `timezone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branding: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<Component>>,
}

/// Who may read a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Access {
    /// `PUBLIC`, `PASSWORD` or `EMAIL_DOMAINS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_email_domains: Option<Vec<String>>,
    /// Write-only: `${ENV_VAR}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

/// One component of a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Component {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A monitor name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
}

/// The JSON Schema of the file, pretty-printed.
pub fn schema_text() -> String {
    let schema = schemars::schema_for!(File);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}
