//! The inputs of the monitor operations: what a caller sends to create, change, list or page
//! monitors. They derive `Deserialize` and `JsonSchema` so every surface reads them the same
//! way and documents them with the same schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tocsin_core::Status;

use super::validate::{MAX_NAME_CHARS, MAX_TAG_CHARS};
use crate::domain::input::{double_option, Validate};
use crate::domain::pagination::PageParams;
use crate::domain::FieldError;
use crate::monitoring::{ApiRegionStrategy, MonitorType};
use crate::store::monitors::MonitorFilter;

/// A new monitor. Only `name` and `type` are required; see each field for its default.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateMonitor {
    /// 1 to 200 characters.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    /// HTTP (`http://`, `https://`) and WEBSOCKET (`ws://`, `wss://`): required.
    pub url: Option<String>,
    /// TCP, PING, DNS, DNS_DIFF: required.
    pub host: Option<String>,
    /// TCP: required, 1 to 65535.
    pub port: Option<i64>,
    /// Seconds between checks; default 60; at least the server minimum (10 unless
    /// configured, or the plan's if stricter), at most 86,400 (PUSH: 31,622,400).
    pub interval: Option<i64>,
    /// Immediate retries of a failed check, 0 to 10; default 0.
    pub retries: Option<i64>,
    /// Seconds per attempt, 1 to 120 and less than `interval`; default min(30, interval - 1).
    pub timeout: Option<i64>,
    /// Up to 20 tags of 1 to 50 characters.
    pub tags: Option<Vec<String>>,
    /// At most 2,000 characters.
    pub description: Option<String>,
    // Described by `config::optional_schema`: one schema per monitor type, plus `quorum`.
    #[schemars(schema_with = "super::config::optional_schema")]
    pub config: Option<Map<String, Value>>,
    /// Regions to check from; default `["local"]`.
    pub regions: Option<Vec<String>>,
    /// Default `all`.
    pub region_strategy: Option<ApiRegionStrategy>,
    /// 1 to 20; default 1.
    pub confirmations_required: Option<i64>,
    /// 1 to 20; default 1.
    pub recovery_confirmations_required: Option<i64>,
    /// 0 to 86,400,000 ms; default 0.
    pub min_failure_duration_ms: Option<i64>,
    /// PUSH only: seconds of slack after each expected push, 0 to 31,622,400; default 60.
    pub grace_period: Option<i64>,
    /// False creates the monitor paused; default true.
    pub active: Option<bool>,
    /// Projects to add the monitor to (at the end of each).
    pub project_ids: Option<Vec<String>>,
    /// Notification channels of the workspace to notify, in order (at most 20); default none,
    /// which (without an escalation policy) means the workspace's default channels.
    pub notification_channel_ids: Option<Vec<String>>,
    /// An escalation policy of the workspace for the monitor's alerts; default none.
    pub escalation_policy_id: Option<String>,
    /// Monitors of the workspace this one depends on (at most 50; no cycles); default none.
    /// While one of them is DOWN, this monitor's alert opens under that outage and pages
    /// nobody.
    pub depends_on: Option<Vec<String>>,
    /// When the monitor counts as flapping; default 5 changes in 30 minutes; `null` turns
    /// flap detection off.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<FlapDetection>", default = "flap_default")]
    pub flap_detection: Option<Option<FlapDetection>>,
}

/// Flap detection: a monitor that changes between UP and DOWN at least `transitions` times
/// within `windowMinutes` is flapping. Its status and heartbeats stay truthful, but its
/// changes open and resolve no alerts and notify nobody: one `monitor.flapping` when it
/// starts, one `monitor.stable` when a whole window passes with at most one change (then the
/// status it settled on opens or resolves its alert as usual).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct FlapDetection {
    /// Changes within the window that make the monitor flap, 2 to 100.
    pub transitions: i64,
    /// The window, 1 to 1,440 minutes.
    pub window_minutes: i64,
}

/// The default a create applies when `flapDetection` is absent, as the document shows it
/// (serde's own default, `None`, would read as `null`, which is "off").
fn flap_default() -> Option<Option<FlapDetection>> {
    Some(Some(FlapDetection::default_on()))
}

impl FlapDetection {
    /// The default: 5 changes in 30 minutes.
    pub fn default_on() -> FlapDetection {
        let d = tocsin_core::FlapSettings::DEFAULT;
        FlapDetection {
            transitions: i64::from(d.transitions),
            window_minutes: i64::from(d.window_minutes),
        }
    }
}

/// Settings to change; absent fields stay as they are, `null` clears a nullable one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateMonitor {
    pub name: Option<String>,
    /// Cannot change; accepted only when equal to the current type.
    #[serde(rename = "type")]
    pub kind: Option<MonitorType>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub url: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub host: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<i64>")]
    pub port: Option<Option<i64>>,
    /// Seconds.
    pub interval: Option<i64>,
    pub retries: Option<i64>,
    /// Seconds.
    pub timeout: Option<i64>,
    pub tags: Option<Vec<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub description: Option<Option<String>>,
    // Replaces the whole config object; described like the create's.
    #[schemars(schema_with = "super::config::optional_schema")]
    pub config: Option<Map<String, Value>>,
    pub regions: Option<Vec<String>>,
    pub region_strategy: Option<ApiRegionStrategy>,
    pub confirmations_required: Option<i64>,
    pub recovery_confirmations_required: Option<i64>,
    pub min_failure_duration_ms: Option<i64>,
    /// PUSH only, seconds.
    pub grace_period: Option<i64>,
    /// Replaces the monitor's project memberships.
    pub project_ids: Option<Vec<String>>,
    /// Replaces the monitor's own notification channels.
    pub notification_channel_ids: Option<Vec<String>>,
    /// `null` removes the escalation policy.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub escalation_policy_id: Option<Option<String>>,
    /// Replaces the monitors this one depends on.
    pub depends_on: Option<Vec<String>>,
    /// `null` turns flap detection off.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<FlapDetection>")]
    pub flap_detection: Option<Option<FlapDetection>>,
}

/// Filters shared by the list and the page; all optional, combined with AND.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MonitorListQuery {
    /// Only monitors with this status (paused monitors keep the status they had).
    pub status: Option<Status>,
    /// Only monitors of this type.
    #[serde(rename = "type")]
    pub kind: Option<MonitorType>,
    /// Only monitors carrying this tag (ASCII letters match case-insensitively).
    pub tag: Option<String>,
    /// Only members of this project.
    pub project_id: Option<String>,
    /// Case-insensitive substring of the name (ASCII letters), at most 200 characters.
    pub search: Option<String>,
}

/// A page of monitors: the filters of `listMonitors` plus `cursor` and `limit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MonitorPageQuery {
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    pub limit: Option<u32>,
    /// Only monitors with this status (paused monitors keep the status they had).
    pub status: Option<Status>,
    /// Only monitors of this type.
    #[serde(rename = "type")]
    pub kind: Option<MonitorType>,
    /// Only monitors carrying this tag (ASCII letters match case-insensitively).
    pub tag: Option<String>,
    /// Only members of this project.
    pub project_id: Option<String>,
    /// Case-insensitive substring of the name (ASCII letters), at most 200 characters.
    pub search: Option<String>,
}

fn check_filter(tag: Option<&String>, search: Option<&String>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if tag.is_some_and(|t| t.chars().count() > MAX_TAG_CHARS) {
        errors.push(FieldError::new("tag", "at most 50 characters"));
    }
    if search.is_some_and(|s| s.chars().count() > MAX_NAME_CHARS) {
        errors.push(FieldError::new("search", "at most 200 characters"));
    }
    errors
}

impl MonitorListQuery {
    /// The problems with the filters, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        check_filter(self.tag.as_ref(), self.search.as_ref())
    }

    pub fn filter(&self) -> MonitorFilter {
        filter_of(
            self.status,
            self.kind,
            &self.tag,
            &self.project_id,
            &self.search,
        )
    }
}

impl MonitorPageQuery {
    pub fn page(&self) -> PageParams {
        PageParams {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }

    /// The problems with the page and the filters, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = self.page().validate();
        errors.extend(check_filter(self.tag.as_ref(), self.search.as_ref()));
        errors
    }

    pub fn filter(&self) -> MonitorFilter {
        filter_of(
            self.status,
            self.kind,
            &self.tag,
            &self.project_id,
            &self.search,
        )
    }
}

fn filter_of(
    status: Option<Status>,
    kind: Option<MonitorType>,
    tag: &Option<String>,
    project_id: &Option<String>,
    search: &Option<String>,
) -> MonitorFilter {
    MonitorFilter {
        status,
        kind,
        tag: tag.clone(),
        project_id: project_id.clone(),
        search: search.clone().filter(|s| !s.is_empty()),
    }
}
