//! The monitor resource: create, read, list (all, or in cursor pages with filters), count by
//! status, update (version-locked), delete, pause, resume, regenerate a push token, and accept
//! a DNS_DIFF monitor's new answers. Reads need `monitors:read`; deleting needs
//! `monitors:delete`; every other write needs `monitors:write`.
//!
//! Decisions the interface leaves open, kept here and in the OpenAPI descriptions:
//! - Units: `interval` and `timeout` are seconds; `minFailureDurationMs` milliseconds;
//!   `gracePeriod` seconds.
//! - Defaults on create: `interval` 60, `timeout` min(30, interval - 1), `retries` 0,
//!   `confirmationsRequired` 1, `recoveryConfirmationsRequired` 1, `minFailureDurationMs` 0,
//!   `regions` `["local"]`, `regionStrategy` `all`, `tags` `[]`, `config` `{}`, `active` true,
//!   PUSH `gracePeriod` 60.
//! - Limits: `interval` from the server minimum (`min_interval_seconds`, default 10) to 86,400
//!   (PUSH: to 31,622,400); `timeout` 1..=120 and below `interval` (except PUSH); `retries`
//!   0..=10; confirmations 1..=20; `minFailureDurationMs` 0..=86,400,000; at most 20 `tags` of
//!   1..=50 characters; `name` 1..=200; `description` at most 2,000 characters. A plan's
//!   `min_interval_seconds` stricter than the server's answers 402 `PLAN_LIMIT_EXCEEDED`.
//! - `url` is used by HTTP and WEBSOCKET, `host` by TCP, PING, DNS and DNS_DIFF, `port` by
//!   TCP; sending one a type does not use is a validation error.
//! - Quorum: `config.quorum` (an integer, only with `regionStrategy: all`, 1..=number of
//!   regions) is how many regions must fail for a cycle to fail; absent means a majority of
//!   the regions that reported.
//! - PUSH: the top-level `gracePeriod` is the one grace setting. Pushes are expected every
//!   `interval` seconds unless `config.schedule` (5-field cron, read in `config.timezone`,
//!   default UTC) is set. No other `config` keys.
//! - Push token: generated on create and by regenerate, shown in that one response; every read
//!   has `pushToken: null`; only the SHA-256 is stored.
//! - Regenerating a token of a non-PUSH monitor, or accepting the baseline of a non-DNS_DIFF
//!   monitor, answers 409 `WRONG_MONITOR_TYPE`.
//! - `PATCH` replaces the fields it names (`config` as a whole object), re-validates the
//!   merged monitor, and cannot change `type`. Changing a DNS_DIFF monitor's query forgets its
//!   baseline.
//! - Pause keeps the status as it was (`active: false` marks it paused); resume restarts
//!   monitoring from `PENDING` with counters reset. Pausing a paused or resuming an active
//!   monitor changes nothing.
//! - The `ETag` is the settings version: check results do not change it.
//! - On-demand checks (`POST /monitors/{id}/check`, 202 with a `correlationId`) run at once in
//!   the background in every region the monitor uses that has a live probe (regions without
//!   one, or whose probe does not answer in time, are skipped). Their results are stored as
//!   heartbeats carrying the `correlationId` (`GET /monitors/{id}/heartbeats?correlationId=`)
//!   but never step the state machine, so a manual check cannot page anyone or move the
//!   status. Paused monitors may be checked this way (checking a target by hand is useful
//!   exactly while monitoring is off); PUSH monitors cannot (409 `WRONG_MONITOR_TYPE`).
//!
//! Every committed write is audited in its transaction and announced on the monitor change
//! feed ([`crate::monitoring::changes`]) so the scheduler applies it at once.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::CheckSpec;
use tocsin_core::push::{DEFAULT_GRACE_SECS, MAX_GRACE_SECS, MAX_INTERVAL_SECS};
use tocsin_core::{PushSchedule, Status};

use super::api_keys::double_option;
use super::extract::{
    check_write, Accepted, ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged, Validate,
};
use super::monitor_list::{self, RawJson};
use super::pagination::{self, PageParams};
use crate::audit::{self, Entry};
use crate::auth::caps;
use crate::auth::{secrets, Caller};
use crate::clock::rfc3339;
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, ErrorBody, FieldError, Resource};
use crate::http::AppState;
use crate::ids::new_id;
use crate::monitoring::changes::{ChangeKind, Notice};
use crate::monitoring::transition::{record_transition, StatusChange};
use crate::monitoring::{self, known_regions, ApiRegionStrategy, MonitorType};
use crate::plans::{ensure_interval, ensure_room, Quota};
use crate::store::monitors::{MonitorFilter, MonitorRow};
use crate::store::status::CorruptStatus;
use crate::store::{self};

const TAG: &str = "Monitors";

pub const DEFAULT_INTERVAL: i64 = 60;
pub const MAX_INTERVAL: i64 = 86_400;
pub const MAX_TIMEOUT: i64 = 120;
pub const DEFAULT_TIMEOUT: i64 = 30;
pub const MAX_RETRIES: i64 = 10;
pub const MAX_CONFIRMATIONS: i64 = 20;
pub const MAX_MIN_FAILURE_MS: i64 = 86_400_000;
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 50;
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/monitors",
            get_with(list, |op| {
                op.id("listMonitors").tag(TAG).summary(
                    "Every monitor of the workspace, filtered like the page (`monitors:read`)",
                )
            })
            .post_with(create, |op| {
                op.id("createMonitor")
                    .tag(TAG)
                    .summary(
                        "Create a monitor; a PUSH monitor's token is in this response only (`monitors:write`)",
                    )
                    .response_with::<402, Json<ErrorBody>, _>(|r| {
                        r.description("The plan's monitor count or shortest interval is reached (`PLAN_LIMIT_EXCEEDED`)")
                    })
            }),
        )
        .api_route(
            "/monitors/page",
            get_with(page, |op| {
                op.id("listMonitorsPage").tag(TAG).summary(
                    "Monitors in id order, one cursor page at a time, with filters (`monitors:read`)",
                )
            }),
        )
        .api_route(
            "/monitors/stats",
            get_with(stats, |op| {
                op.id("getMonitorStats")
                    .tag(TAG)
                    .summary("How many monitors are up, down, degraded, paused... (`monitors:read`)")
            }),
        )
        .api_route(
            "/monitors/{monitor_id}",
            get_with(get_one, |op| {
                op.id("getMonitor").tag(TAG).summary("One monitor (`monitors:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateMonitor")
                    .tag(TAG)
                    .summary(
                        "Change a monitor's settings; version-locked with If-Match (`monitors:write`)",
                    )
                    .response_with::<402, Json<ErrorBody>, _>(|r| {
                        r.description("The interval is shorter than the plan allows (`PLAN_LIMIT_EXCEEDED`)")
                    })
            })
            .delete_with(delete, |op| {
                op.id("deleteMonitor")
                    .tag(TAG)
                    .summary("Delete a monitor and its history (`monitors:delete`)")
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/pause",
            post_with(pause, |op| {
                op.id("pauseMonitor")
                    .tag(TAG)
                    .summary("Stop checking; the status is kept (`monitors:write`)")
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/resume",
            post_with(resume, |op| {
                op.id("resumeMonitor").tag(TAG).summary(
                    "Start checking again from PENDING with counters reset (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/regenerate-push-token",
            post_with(regenerate_push_token, |op| {
                op.id("regeneratePushToken").tag(TAG).summary(
                    "Issue a new push token, shown once; the old one stops at once (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/check",
            post_with(check_now, |op| {
                op.id("checkMonitor").tag(TAG).summary(
                    "Run the check now in the background; results are heartbeats with the returned correlationId, the status is not changed (`monitors:write`)",
                )
            }),
        )
        .api_route(
            "/monitors/{monitor_id}/accept-baseline",
            post_with(accept_baseline, |op| {
                op.id("acceptMonitorBaseline").tag(TAG).summary(
                    "DNS_DIFF: accept the changed answers; the next answer becomes the baseline (`monitors:write`)",
                )
            }),
        )
}

/// A monitor.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct Monitor {
    pub id: String,
    pub workspace_id: String,
    /// The projects the monitor belongs to, in project order.
    pub project_ids: Vec<String>,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    pub status: Status,
    /// HTTP and WEBSOCKET: the target URL.
    pub url: Option<String>,
    /// TCP, PING, DNS, DNS_DIFF: the host name or address (DNS: the name queried).
    pub host: Option<String>,
    /// TCP: the port.
    #[schemars(with = "Option<f64>")]
    pub port: Option<i64>,
    /// Seconds between checks (PUSH: between expected pushes, unless `config.schedule` is set).
    #[schemars(with = "f64")]
    pub interval: i64,
    /// Immediate retries of a failed check within one cycle.
    #[schemars(with = "f64")]
    pub retries: i64,
    /// Seconds one check attempt may take.
    #[schemars(with = "f64")]
    pub timeout: i64,
    pub tags: Vec<String>,
    pub description: Option<String>,
    /// Type-specific settings (HTTP method, headers, expected status codes, assertions, DNS
    /// record type...), plus `quorum` for the `all` strategy and, for PUSH, `schedule` and
    /// `timezone`.
    pub config: Map<String, Value>,
    pub regions: Vec<String>,
    pub region_strategy: ApiRegionStrategy,
    /// Consecutive failed cycles before the monitor goes DOWN.
    #[schemars(with = "f64")]
    pub confirmations_required: i64,
    /// Consecutive successful cycles before a DOWN monitor recovers.
    #[schemars(with = "f64")]
    pub recovery_confirmations_required: i64,
    /// How long a failing run must last before DOWN, in milliseconds.
    #[schemars(with = "f64")]
    pub min_failure_duration_ms: i64,
    #[schemars(with = "f64")]
    pub consecutive_failures: i64,
    #[schemars(with = "f64")]
    pub consecutive_successes: i64,
    /// When the current failing run began; null while not failing.
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub pending_failure_since: Option<String>,
    /// False while paused.
    pub active: bool,
    /// The push token, only in the response that creates a PUSH monitor; null on every read.
    pub push_token: Option<String>,
    /// PUSH: seconds of slack after each expected push before the monitor goes DOWN
    /// (0 to 31,622,400; default 60). Null for other types.
    #[schemars(with = "Option<f64>")]
    pub grace_period: Option<i64>,
    /// PUSH: when the last push arrived.
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub last_push_at: Option<String>,
}

/// The config as the API shows it: the stored object plus `quorum` when one is set.
fn config_view(m: &MonitorRow) -> Map<String, Value> {
    let mut config = m.config();
    if let Some(q) = m.quorum {
        config.insert("quorum".into(), json!(q));
    }
    config
}

pub fn view(m: &MonitorRow, project_ids: Vec<String>) -> Result<Monitor, CorruptStatus> {
    Ok(Monitor {
        id: m.id.clone(),
        workspace_id: m.workspace_id.clone(),
        project_ids,
        name: m.name.clone(),
        kind: m.kind().unwrap_or(MonitorType::Http),
        status: m.status()?,
        url: m.url.clone(),
        host: m.host.clone(),
        port: m.port,
        interval: m.interval_s,
        retries: m.retries,
        timeout: m.timeout_s,
        tags: m.tags(),
        description: m.description.clone(),
        config: config_view(m),
        regions: m.regions(),
        region_strategy: m.region_strategy().into(),
        confirmations_required: m.confirmations_required,
        recovery_confirmations_required: m.recovery_confirmations_required,
        min_failure_duration_ms: m.min_failure_duration_ms,
        consecutive_failures: m.consecutive_failures,
        consecutive_successes: m.consecutive_successes,
        pending_failure_since: m.pending_failure_since.map(rfc3339),
        active: m.is_active(),
        push_token: None,
        grace_period: m.grace_s,
        last_push_at: m.last_push_at.map(rfc3339),
    })
}

/// Views of several monitors, with their project memberships read in one query.
async fn views(state: &AppState, rows: &[MonitorRow]) -> ApiResult<Vec<Monitor>> {
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let mut projects = store::projects::projects_of_monitors(state.db().reader(), &ids).await?;
    Ok(rows
        .iter()
        .map(|r| view(r, projects.remove(&r.id).unwrap_or_default()))
        .collect::<Result<_, _>>()?)
}

async fn view_one(state: &AppState, row: &MonitorRow) -> ApiResult<Monitor> {
    let mut v = views(state, std::slice::from_ref(row)).await?;
    v.pop()
        .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("monitor view vanished")).into())
}

// ---------------------------------------------------------------------------------------------
// Validation

/// The monitor as it would be after a create or update: every setting, defaults applied.
#[derive(Debug, Clone)]
struct Draft {
    name: String,
    kind: MonitorType,
    url: Option<String>,
    host: Option<String>,
    port: Option<i64>,
    interval: i64,
    retries: i64,
    timeout: i64,
    tags: Vec<String>,
    description: Option<String>,
    config: Map<String, Value>,
    regions: Vec<String>,
    strategy: ApiRegionStrategy,
    confirmations: i64,
    recovery_confirmations: i64,
    min_failure_ms: i64,
    grace: Option<i64>,
}

/// What validation needs from the server.
struct Limits {
    min_interval: i64,
    regions: Vec<String>,
}

impl Limits {
    async fn of(state: &AppState) -> Result<Limits, sqlx::Error> {
        Ok(Limits {
            min_interval: i64::try_from(state.config().min_interval_seconds).unwrap_or(i64::MAX),
            regions: known_regions(state).await?,
        })
    }
}

/// A draft that passed validation, split the way it is stored.
struct Checked {
    /// `config` without `quorum`.
    config: Map<String, Value>,
    quorum: Option<i64>,
}

fn range(field: &str, value: i64, min: i64, max: i64, unit: &str, errors: &mut Vec<FieldError>) {
    if value < min || value > max {
        errors.push(FieldError::new(
            field,
            format!("must be between {min} and {max}{unit}"),
        ));
    }
}

fn check_tags(tags: &[String], errors: &mut Vec<FieldError>) {
    if tags.len() > MAX_TAGS {
        errors.push(FieldError::new("tags", format!("at most {MAX_TAGS} tags")));
    }
    for (i, t) in tags.iter().enumerate() {
        let n = t.trim().chars().count();
        if n == 0 || t.chars().count() > MAX_TAG_CHARS || t.chars().any(char::is_control) {
            errors.push(FieldError::new(
                format!("tags.{i}"),
                format!("must be 1 to {MAX_TAG_CHARS} printable characters"),
            ));
        } else if tags[..i].contains(t) {
            errors.push(FieldError::new(format!("tags.{i}"), "duplicate tag"));
        }
    }
}

fn check_regions(regions: &[String], known: &[String], errors: &mut Vec<FieldError>) {
    if regions.is_empty() {
        errors.push(FieldError::new("regions", "must name at least one region"));
    }
    for (i, r) in regions.iter().enumerate() {
        if !known.contains(r) {
            errors.push(FieldError::new(
                format!("regions.{i}"),
                format!("unknown region {r:?}; known regions: {}", known.join(", ")),
            ));
        } else if regions[..i].contains(r) {
            errors.push(FieldError::new(format!("regions.{i}"), "duplicate region"));
        }
    }
}

/// Checks which of `url`, `host`, `port` the type uses, and refuses the others.
fn check_target_fields(d: &Draft, errors: &mut Vec<FieldError>) {
    use MonitorType as T;
    let uses_url = matches!(d.kind, T::Http | T::Websocket);
    let uses_host = matches!(d.kind, T::Tcp | T::Ping | T::Dns | T::DnsDiff);
    let uses_port = d.kind == T::Tcp;
    let unused = |field: &str| {
        FieldError::new(
            field,
            format!("is not used by {} monitors", d.kind.as_str()),
        )
    };
    if !uses_url && d.url.is_some() {
        errors.push(unused("url"));
    }
    if !uses_host && d.host.is_some() {
        errors.push(unused("host"));
    }
    if !uses_port && d.port.is_some() {
        errors.push(unused("port"));
    }
}

/// PUSH `config`: only `schedule` (cron) and `timezone`, validated with the grace period.
fn check_push_config(config: &Map<String, Value>, grace: i64, errors: &mut Vec<FieldError>) {
    for key in config.keys() {
        let message = match key.as_str() {
            "schedule" | "timezone" => continue,
            "interval" => "use the top-level interval".to_string(),
            "grace" => "use the top-level gracePeriod".to_string(),
            "quorum" => "push monitors are not checked from regions".to_string(),
            _ => "unknown field; expected one of: schedule, timezone".to_string(),
        };
        errors.push(FieldError::new(format!("config.{key}"), message));
    }
    let schedule = match config.get("schedule") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            errors.push(FieldError::new("config.schedule", "must be a string"));
            return;
        }
    };
    let timezone = match config.get("timezone") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => {
            errors.push(FieldError::new("config.timezone", "must be a string"));
            return;
        }
    };
    match schedule {
        Some(expr) => {
            if let Err(errs) = PushSchedule::cron(expr, timezone.unwrap_or("UTC"), grace) {
                for e in errs {
                    // The grace period is checked on its own top-level field.
                    if matches!(e.field(), "schedule" | "timezone") {
                        errors.push(FieldError::new(
                            format!("config.{}", e.field()),
                            e.to_string(),
                        ));
                    }
                }
            }
        }
        None if timezone.is_some() => errors.push(FieldError::new(
            "config.timezone",
            "is only used with config.schedule",
        )),
        None => {}
    }
}

/// Validates a whole draft, reporting every problem with its dotted path.
fn check(d: &Draft, limits: &Limits) -> Result<Checked, Vec<FieldError>> {
    let mut errors = Vec::new();
    let is_push = d.kind == MonitorType::Push;
    super::workspace::check_name("name", &d.name, MAX_NAME_CHARS, &mut errors);
    check_target_fields(d, &mut errors);
    let max_interval = if is_push {
        i64::from(MAX_INTERVAL_SECS)
    } else {
        MAX_INTERVAL
    };
    range(
        "interval",
        d.interval,
        limits.min_interval,
        max_interval,
        " seconds",
        &mut errors,
    );
    range(
        "timeout",
        d.timeout,
        1,
        MAX_TIMEOUT,
        " seconds",
        &mut errors,
    );
    if !is_push && d.timeout >= 1 && d.timeout <= MAX_TIMEOUT && d.timeout >= d.interval {
        errors.push(FieldError::new("timeout", "must be less than interval"));
    }
    range("retries", d.retries, 0, MAX_RETRIES, "", &mut errors);
    check_tags(&d.tags, &mut errors);
    if let Some(desc) = &d.description {
        if desc.chars().count() > MAX_DESCRIPTION_CHARS {
            errors.push(FieldError::new(
                "description",
                format!("at most {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
    }
    check_regions(&d.regions, &limits.regions, &mut errors);
    range(
        "confirmationsRequired",
        d.confirmations,
        1,
        MAX_CONFIRMATIONS,
        "",
        &mut errors,
    );
    range(
        "recoveryConfirmationsRequired",
        d.recovery_confirmations,
        1,
        MAX_CONFIRMATIONS,
        "",
        &mut errors,
    );
    range(
        "minFailureDurationMs",
        d.min_failure_ms,
        0,
        MAX_MIN_FAILURE_MS,
        " milliseconds",
        &mut errors,
    );

    let mut config = d.config.clone();
    let mut quorum = None;
    if is_push {
        let grace = d.grace.unwrap_or(i64::from(DEFAULT_GRACE_SECS));
        range(
            "gracePeriod",
            grace,
            0,
            i64::from(MAX_GRACE_SECS),
            " seconds",
            &mut errors,
        );
        check_push_config(&config, grace, &mut errors);
    } else {
        if d.grace.is_some() {
            errors.push(FieldError::new(
                "gracePeriod",
                "only PUSH monitors have a grace period",
            ));
        }
        match config.remove("quorum") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_i64() {
                Some(_) if d.strategy != ApiRegionStrategy::All => errors.push(FieldError::new(
                    "config.quorum",
                    "is only used with regionStrategy all",
                )),
                Some(q) if q >= 1 && q <= d.regions.len().max(1) as i64 => quorum = Some(q),
                _ => errors.push(FieldError::new(
                    "config.quorum",
                    format!(
                        "must be an integer between 1 and the number of regions ({})",
                        d.regions.len().max(1)
                    ),
                )),
            },
        }
        if let Some(kind) = d.kind.check_kind() {
            // Out-of-range ports reach the engine as 0, which it reports on `port`.
            let port = d.port.map(|p| u16::try_from(p).unwrap_or(0));
            let input = SpecInput {
                url: d.url.as_deref(),
                host: d.host.as_deref(),
                port,
                config: &config,
            };
            if let Err(errs) = CheckSpec::parse(kind, &input) {
                errors.extend(errs.into_iter().map(|e| FieldError::new(e.path, e.message)));
            }
        }
    }
    if errors.is_empty() {
        Ok(Checked { config, quorum })
    } else {
        Err(errors)
    }
}

/// Refuses project ids that are not projects of the caller's workspace (or repeat).
async fn check_projects(
    state: &AppState,
    ws: &str,
    ids: &[String],
    errors: &mut Vec<FieldError>,
) -> ApiResult<()> {
    let found = store::projects::existing(state.db().reader(), ws, ids).await?;
    for (i, id) in ids.iter().enumerate() {
        if !found.contains(id) {
            errors.push(FieldError::new(
                format!("projectIds.{i}"),
                "no such project",
            ));
        } else if ids[..i].contains(id) {
            errors.push(FieldError::new(
                format!("projectIds.{i}"),
                "duplicate project",
            ));
        }
    }
    Ok(())
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

fn trimmed(s: Option<String>) -> Option<String> {
    s.map(|v| v.trim().to_string())
}

// ---------------------------------------------------------------------------------------------
// Create

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
    /// Type-specific settings; `quorum` (integer) for the `all` strategy; PUSH: `schedule`
    /// (5-field cron) and `timezone` (IANA, default UTC).
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
}

impl Validate for CreateMonitor {}

fn draft_of(body: &CreateMonitor) -> Draft {
    let interval = body.interval.unwrap_or(DEFAULT_INTERVAL);
    Draft {
        name: body.name.trim().to_string(),
        kind: body.kind,
        url: trimmed(body.url.clone()),
        host: trimmed(body.host.clone()),
        port: body.port,
        interval,
        retries: body.retries.unwrap_or(0),
        timeout: body
            .timeout
            .unwrap_or_else(|| DEFAULT_TIMEOUT.min(interval - 1).max(1)),
        tags: body.tags.clone().unwrap_or_default(),
        description: body.description.clone(),
        config: body.config.clone().unwrap_or_default(),
        regions: body
            .regions
            .clone()
            .unwrap_or_else(|| vec![monitoring::LOCAL_REGION.to_string()]),
        strategy: body.region_strategy.unwrap_or_default(),
        confirmations: body.confirmations_required.unwrap_or(1),
        recovery_confirmations: body.recovery_confirmations_required.unwrap_or(1),
        min_failure_ms: body.min_failure_duration_ms.unwrap_or(0),
        grace: match body.kind {
            MonitorType::Push => Some(body.grace_period.unwrap_or(i64::from(DEFAULT_GRACE_SECS))),
            _ => body.grace_period,
        },
    }
}

/// Copies a validated draft's settings onto a row.
fn apply(row: &mut MonitorRow, d: &Draft, c: Checked) {
    row.name = d.name.clone();
    row.url = d.url.clone();
    row.host = d.host.clone();
    row.port = d.port;
    row.interval_s = d.interval;
    row.retries = d.retries;
    row.timeout_s = d.timeout;
    row.tags = json_list(&d.tags);
    row.description = d.description.clone();
    row.config = Value::Object(c.config).to_string();
    row.regions = json_list(&d.regions);
    row.region_strategy = monitoring::strategy_str(d.strategy.into()).to_string();
    row.quorum = c.quorum;
    row.confirmations_required = d.confirmations;
    row.recovery_confirmations_required = d.recovery_confirmations;
    row.min_failure_duration_ms = d.min_failure_ms;
    row.grace_s = d.grace;
}

/// What the audit log keeps of a monitor: its identity and schedule, never secrets (config
/// may hold credentials, so it is left out).
fn audit_meta(m: &MonitorRow) -> Value {
    json!({"name": m.name, "type": m.kind_text, "interval": m.interval_s, "active": m.is_active()})
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    ApiJson(body): ApiJson<CreateMonitor>,
) -> ApiResult<Created<Monitor>> {
    let draft = draft_of(&body);
    let mut errors = Vec::new();
    let checked = match check(&draft, &Limits::of(&state).await?) {
        Ok(c) => Some(c),
        Err(e) => {
            errors = e;
            None
        }
    };
    let project_ids = body.project_ids.clone().unwrap_or_default();
    check_projects(&state, &caller.workspace_id, &project_ids, &mut errors).await?;
    let Some(checked) = checked.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    if draft.kind != MonitorType::Push {
        ensure_interval(&state, &caller.workspace_id, draft.interval).await?;
    }
    let current = store::monitors::count(state.db().reader(), &caller.workspace_id).await?;
    ensure_room(&state, &caller.workspace_id, Quota::Monitors, current).await?;

    let now = state.clock().now_ms();
    let token = (draft.kind == MonitorType::Push).then(|| secrets::generate(""));
    let mut row = MonitorRow {
        id: new_id(),
        seq: 0,
        workspace_id: caller.workspace_id.clone(),
        name: String::new(),
        kind_text: draft.kind.as_str().to_string(),
        status_text: store::status::text(Status::Pending).to_string(),
        url: None,
        host: None,
        port: None,
        interval_s: 0,
        retries: 0,
        timeout_s: 0,
        tags: String::new(),
        description: None,
        config: String::new(),
        regions: String::new(),
        region_strategy: String::new(),
        quorum: None,
        confirmations_required: 1,
        recovery_confirmations_required: 1,
        min_failure_duration_ms: 0,
        consecutive_failures: 0,
        consecutive_successes: 0,
        pending_failure_since: None,
        active: i64::from(body.active.unwrap_or(true)),
        grace_s: None,
        last_push_at: None,
        dns_baseline: None,
        status_changed_at: now,
        last_check_at: None,
        started_at: now,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    apply(&mut row, &draft, checked);
    let mut tx = state.db().begin().await?;
    row.seq = store::monitors::next_seq(&mut *tx).await?;
    store::monitors::insert(
        &mut *tx,
        &row,
        token.as_deref().map(secrets::hash).as_deref(),
    )
    .await?;
    let changed = store::projects::set_monitor_projects(&mut tx, &row.id, &project_ids).await?;
    store::projects::touch(&mut *tx, &caller.workspace_id, &changed, now).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "monitor.create",
            resource_type: "monitor",
            resource_id: &row.id,
            metadata: audit_meta(&row),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state
        .monitor_changes()
        .publish(&row.id, ChangeKind::Created);
    let mut out = view_one(&state, &row).await?;
    out.push_token = token;
    Ok(Created(out))
}

// ---------------------------------------------------------------------------------------------
// Read

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

impl Validate for MonitorListQuery {
    fn validate(&self) -> Vec<FieldError> {
        check_filter(self.tag.as_ref(), self.search.as_ref())
    }
}

impl MonitorPageQuery {
    fn page(&self) -> PageParams {
        PageParams {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }
}

impl Validate for MonitorPageQuery {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = self.page().validate();
        errors.extend(check_filter(self.tag.as_ref(), self.search.as_ref()));
        errors
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

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    ApiQuery(q): ApiQuery<MonitorListQuery>,
) -> ApiResult<RawJson<Vec<Monitor>>> {
    let filter = filter_of(q.status, q.kind, &q.tag, &q.project_id, &q.search);
    monitor_list::build(&state, &caller.workspace_id, &filter).await
}

/// One page of monitors.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct MonitorPage {
    pub monitors: Vec<Monitor>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

async fn page(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    ApiQuery(q): ApiQuery<MonitorPageQuery>,
) -> ApiResult<Json<MonitorPage>> {
    let params = q.page();
    let filter = filter_of(q.status, q.kind, &q.tag, &q.project_id, &q.search);
    let rows = store::monitors::list_page(
        state.db().reader(),
        &caller.workspace_id,
        &filter,
        &params.after(),
        i64::from(params.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = pagination::finish(rows, params.limit(), |r| r.id.clone());
    Ok(Json(MonitorPage {
        monitors: views(&state, &rows).await?,
        next_cursor,
    }))
}

/// Monitor counts. `paused` counts inactive monitors whatever their status; every other
/// count is of active monitors in that status; `total` counts all.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct MonitorStats {
    #[schemars(with = "f64")]
    pub up: i64,
    #[schemars(with = "f64")]
    pub down: i64,
    #[schemars(with = "f64")]
    pub degraded: i64,
    #[schemars(with = "f64")]
    pub paused: i64,
    #[schemars(with = "f64")]
    pub pending: i64,
    #[schemars(with = "f64")]
    pub changed: i64,
    #[schemars(with = "f64")]
    pub maintenance: i64,
    #[schemars(with = "f64")]
    pub total: i64,
}

async fn stats(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
) -> ApiResult<Json<MonitorStats>> {
    let rows = store::monitors::count_by_status(state.db().reader(), &caller.workspace_id).await?;
    let mut s = MonitorStats {
        up: 0,
        down: 0,
        degraded: 0,
        paused: 0,
        pending: 0,
        changed: 0,
        maintenance: 0,
        total: 0,
    };
    for (status, active, n) in rows {
        s.total += n;
        if active == 0 {
            s.paused += n;
            continue;
        }
        match store::status::from_text(&status)? {
            Status::Up => s.up += n,
            Status::Down => s.down += n,
            Status::Degraded => s.degraded += n,
            Status::Changed => s.changed += n,
            Status::Maintenance => s.maintenance += n,
            Status::Pending => s.pending += n,
        }
    }
    Ok(Json(s))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MonitorPath {
    pub monitor_id: String,
}

async fn load(state: &AppState, caller: &Caller, id: &str) -> Result<MonitorRow, DomainError> {
    store::monitors::get(state.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Monitor))
}

/// The monitor as it is now, with its `ETag`.
async fn tagged(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Tagged<Monitor>> {
    let m = load(state, caller, id).await?;
    Ok(Tagged(view_one(state, &m).await?, m.version))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<MonitorPath>,
) -> ApiResult<Tagged<Monitor>> {
    tagged(&state, &caller, &p.monitor_id).await
}

// ---------------------------------------------------------------------------------------------
// Update

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
    /// Replaces the whole config object.
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
}

impl Validate for UpdateMonitor {}

fn merged(m: &MonitorRow, kind: MonitorType, b: &UpdateMonitor) -> Draft {
    Draft {
        name: b
            .name
            .as_ref()
            .map_or_else(|| m.name.clone(), |n| n.trim().to_string()),
        kind,
        url: b.url.clone().map_or_else(|| m.url.clone(), trimmed),
        host: b.host.clone().map_or_else(|| m.host.clone(), trimmed),
        port: b.port.unwrap_or(m.port),
        interval: b.interval.unwrap_or(m.interval_s),
        retries: b.retries.unwrap_or(m.retries),
        timeout: b.timeout.unwrap_or(m.timeout_s),
        tags: b.tags.clone().unwrap_or_else(|| m.tags()),
        description: b
            .description
            .clone()
            .unwrap_or_else(|| m.description.clone()),
        config: b.config.clone().unwrap_or_else(|| config_view(m)),
        regions: b.regions.clone().unwrap_or_else(|| m.regions()),
        strategy: b
            .region_strategy
            .unwrap_or_else(|| m.region_strategy().into()),
        confirmations: b.confirmations_required.unwrap_or(m.confirmations_required),
        recovery_confirmations: b
            .recovery_confirmations_required
            .unwrap_or(m.recovery_confirmations_required),
        min_failure_ms: b
            .min_failure_duration_ms
            .unwrap_or(m.min_failure_duration_ms),
        grace: b.grace_period.or(m.grace_s),
    }
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateMonitor>,
) -> ApiResult<Tagged<Monitor>> {
    let mut m = load(&state, &caller, &p.monitor_id).await?;
    let kind = m.kind().ok_or_else(|| {
        DomainError::Internal(anyhow::anyhow!("stored monitor type {:?}", m.kind_text))
    })?;
    let mut errors = Vec::new();
    if body.kind.is_some_and(|k| k != kind) {
        errors.push(FieldError::new(
            "type",
            "cannot be changed; create a new monitor",
        ));
    }
    let draft = merged(&m, kind, &body);
    let checked = match check(&draft, &Limits::of(&state).await?) {
        Ok(c) => Some(c),
        Err(e) => {
            errors.extend(e);
            None
        }
    };
    if let Some(ids) = &body.project_ids {
        check_projects(&state, &caller.workspace_id, ids, &mut errors).await?;
    }
    let Some(checked) = checked.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    // Only a newly requested interval is held to the plan: a plan that became stricter
    // must not block unrelated edits of an existing monitor.
    if kind != MonitorType::Push && body.interval.is_some_and(|i| i != m.interval_s) {
        ensure_interval(&state, &caller.workspace_id, draft.interval).await?;
    }
    let before = (m.url.clone(), m.host.clone(), m.port, config_view(&m));
    let now = state.clock().now_ms();
    apply(&mut m, &draft, checked);
    m.updated_at = now;
    let query_changed = before != (m.url.clone(), m.host.clone(), m.port, config_view(&m));
    let clear_baseline = kind == MonitorType::DnsDiff && query_changed;

    let mut tx = state.db().begin().await?;
    let rows = store::monitors::update_settings(&mut *tx, &m, clear_baseline, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    if let Some(ids) = &body.project_ids {
        let changed = store::projects::set_monitor_projects(&mut tx, &m.id, ids).await?;
        store::projects::touch(&mut *tx, &caller.workspace_id, &changed, now).await?;
    }
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "monitor.update",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: audit_meta(&m),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.monitor_changes().publish(&m.id, ChangeKind::Updated);
    tagged(&state, &caller, &p.monitor_id).await
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsDelete>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<NoContent> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    let now = state.clock().now_ms();
    let mut tx = state.db().begin().await?;
    let projects = store::projects::projects_of_monitors(&mut *tx, std::slice::from_ref(&m.id))
        .await?
        .remove(&m.id)
        .unwrap_or_default();
    let rows = store::monitors::delete(&mut *tx, &caller.workspace_id, &m.id, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    store::projects::touch(&mut *tx, &caller.workspace_id, &projects, now).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "monitor.delete",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name, "type": m.kind_text}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.push_tokens().forget(&m.id);
    state.monitor_changes().publish(&m.id, ChangeKind::Deleted);
    Ok(NoContent)
}

// ---------------------------------------------------------------------------------------------
// Actions

async fn pause(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    if m.is_active() {
        let now = state.clock().now_ms();
        let mut tx = state.db().begin().await?;
        let rows =
            store::monitors::pause(&mut *tx, &caller.workspace_id, &m.id, now, expected).await?;
        check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
        audit::record(
            &mut *tx,
            &caller,
            Entry {
                action: "monitor.pause",
                resource_type: "monitor",
                resource_id: &m.id,
                metadata: json!({"name": m.name}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        state.monitor_changes().publish(&m.id, ChangeKind::Paused);
    }
    tagged(&state, &caller, &p.monitor_id).await
}

async fn resume(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    if !m.is_active() {
        let now = state.clock().now_ms();
        let mut tx = state.db().begin().await?;
        let rows =
            store::monitors::resume(&mut *tx, &caller.workspace_id, &m.id, now, expected).await?;
        check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
        let mut change = StatusChange::of(
            &m.id,
            m.seq,
            &tocsin_core::resume(&m.monitor_state()?),
            m.status_changed_at,
            now,
            m.last_check_at,
            None,
        );
        change.state.status_changed_at = now; // a resumed monitor's status starts now, changed or not
        record_transition(&mut tx, &change).await?;
        audit::record(
            &mut *tx,
            &caller,
            Entry {
                action: "monitor.resume",
                resource_type: "monitor",
                resource_id: &m.id,
                metadata: json!({"name": m.name}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        state.monitor_changes().publish(&m.id, ChangeKind::Resumed);
    }
    tagged(&state, &caller, &p.monitor_id).await
}

/// A freshly issued push token.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::http::schema::exact_object)]
pub struct PushTokenIssued {
    /// The new token, for `POST /push/{token}`. It cannot be read again.
    pub push_token: String,
}

fn wrong_type(what: &str) -> DomainError {
    DomainError::Conflict("WRONG_MONITOR_TYPE", what.to_string())
}

async fn regenerate_push_token(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Json<PushTokenIssued>> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    if m.kind() != Some(MonitorType::Push) {
        return Err(wrong_type("only PUSH monitors have a push token").into());
    }
    let token = secrets::generate("");
    let now = state.clock().now_ms();
    // Forgotten before and after the write: see `push::tokens` for why both.
    state.push_tokens().forget(&m.id);
    let mut tx = state.db().begin().await?;
    let rows = store::monitors::set_push_token_hash(
        &mut *tx,
        &caller.workspace_id,
        &m.id,
        &secrets::hash(&token),
        now,
        expected,
    )
    .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "monitor.regenerate_push_token",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.push_tokens().forget(&m.id);
    state.feed().announce(Notice::PushTokenRegenerated {
        monitor_id: m.id.clone(),
    });
    Ok(Json(PushTokenIssued { push_token: token }))
}

async fn accept_baseline(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Monitor>> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    if m.kind() != Some(MonitorType::DnsDiff) {
        return Err(wrong_type("only DNS_DIFF monitors have a baseline").into());
    }
    let now = state.clock().now_ms();
    let transition = tocsin_core::accept_baseline(&m.monitor_state()?);
    let mut tx = state.db().begin().await?;
    let rows =
        store::monitors::accept_baseline(&mut *tx, &caller.workspace_id, &m.id, now, expected)
            .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    let mut change = StatusChange::of(
        &m.id,
        m.seq,
        &transition,
        m.status_changed_at,
        now,
        m.last_check_at,
        Some("new answers accepted as the baseline".into()),
    );
    change.even_paused = true; // a person's action, whether or not the monitor runs
    record_transition(&mut tx, &change).await?;
    audit::record(
        &mut *tx,
        &caller,
        Entry {
            action: "monitor.accept_baseline",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name, "from": m.status_text, "to": transition.state.status.as_str()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    state.monitor_changes().publish(&m.id, ChangeKind::Updated);
    tagged(&state, &caller, &p.monitor_id).await
}

// ---------------------------------------------------------------------------------------------
// On-demand check

/// An accepted on-demand check.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CheckResult")]
pub struct CheckResult {
    /// Carried by every heartbeat of this check: `GET /monitors/{id}/heartbeats?correlationId=`.
    pub correlation_id: String,
}

async fn check_now(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsWrite>,
    Path(p): Path<MonitorPath>,
) -> ApiResult<Accepted<CheckResult>> {
    let m = load(&state, &caller, &p.monitor_id).await?;
    if m.kind().is_none_or(|k| k == MonitorType::Push) {
        return Err(wrong_type("PUSH monitors are not checked by the service").into());
    }
    let correlation_id = new_id();
    let id = correlation_id.clone();
    tokio::spawn(async move {
        let ran_at = state.clock().now_ms();
        // Regions without a live probe (or without an answer in time) are skipped, not failed.
        let runs = m.regions().into_iter().map(|region| {
            let (state, m, id) = (&state, &m, &id);
            async move {
                let outcome = monitoring::scheduler::check_in(state, m, &region).await?;
                let hb = monitoring::cycle::heartbeat_of(m, &region, ran_at, &outcome, Some(id));
                if let Err(e) = state.heartbeats().submit(hb).await {
                    tracing::warn!(monitor = %m.id, error = %e, "on-demand result not stored");
                }
                Some(())
            }
        });
        futures::future::join_all(runs).await;
    });
    Ok(Accepted(CheckResult { correlation_id }))
}
