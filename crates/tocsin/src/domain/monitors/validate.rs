//! The rules a monitor's settings must satisfy: the draft (the monitor as it would be after a
//! create or update, defaults applied), the limits the server sets, and the checks that report
//! every problem with its dotted field path. Pure apart from reading the limits and the
//! workspace's projects.

use serde_json::{Map, Value};
use tocsin_checks::config::field_names;
use tocsin_checks::spec::SpecInput;
use tocsin_checks::CheckSpec;
use tocsin_core::push::{DEFAULT_GRACE_SECS, MAX_GRACE_SECS, MAX_INTERVAL_SECS};
use tocsin_core::PushSchedule;

use super::config::PushConfig;
use super::input::{CreateMonitor, FlapDetection, UpdateMonitor};
use super::view::{config_view, flap_view};
use crate::cx::Cx;
use crate::domain::input::check_name;
use crate::domain::FieldError;
use crate::monitoring::{self, known_regions, ApiRegionStrategy, MonitorType};
use crate::store;
use crate::store::corrupt::CorruptRow;
use crate::store::monitors::MonitorRow;

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

/// The monitor as it would be after a create or update: every setting, defaults applied.
#[derive(Debug, Clone)]
pub struct Draft {
    pub name: String,
    pub kind: MonitorType,
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<i64>,
    pub interval: i64,
    pub retries: i64,
    pub timeout: i64,
    pub tags: Vec<String>,
    pub description: Option<String>,
    pub config: Map<String, Value>,
    pub regions: Vec<String>,
    pub strategy: ApiRegionStrategy,
    pub confirmations: i64,
    pub recovery_confirmations: i64,
    pub min_failure_ms: i64,
    pub grace: Option<i64>,
    /// Flap detection; `None` is off.
    pub flap: Option<FlapDetection>,
}

/// What validation needs from the server.
pub struct Limits {
    pub min_interval: i64,
    pub regions: Vec<String>,
    /// The checks' address policy: a target that is a refused address literal never runs.
    pub address_policy: tocsin_checks::AddressPolicy,
}

impl Limits {
    pub async fn of(cx: &Cx) -> Result<Limits, sqlx::Error> {
        Ok(Limits {
            min_interval: i64::try_from(cx.config().min_interval_seconds).unwrap_or(i64::MAX),
            regions: known_regions(cx).await?,
            address_policy: tocsin_checks::AddressPolicy::deny_private(
                cx.config().checks_deny_private_addresses,
            ),
        })
    }
}

/// A draft that passed validation, split the way it is stored.
pub struct Checked {
    /// `config` without `quorum`.
    pub config: Map<String, Value>,
    pub quorum: Option<i64>,
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
        if n == 0
            || t.chars().count() > MAX_TAG_CHARS
            || t.chars().any(|c| !crate::text::printable(c))
        {
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
            k if field_names::<PushConfig>().contains(&k) => continue,
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
pub fn check(d: &Draft, limits: &Limits) -> Result<Checked, Vec<FieldError>> {
    let mut errors = Vec::new();
    let is_push = d.kind == MonitorType::Push;
    check_name("name", &d.name, MAX_NAME_CHARS, &mut errors);
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
    // Compared only with a valid interval: a bad one is its own error, and the timeout
    // (often derived from it when not sent) is not to blame.
    let interval_ok = (limits.min_interval..=max_interval).contains(&d.interval);
    if !is_push
        && interval_ok
        && d.timeout >= 1
        && d.timeout <= MAX_TIMEOUT
        && d.timeout >= d.interval
    {
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

    if let Some(f) = &d.flap {
        use tocsin_core::flap::{
            MAX_TRANSITIONS, MAX_WINDOW_MINUTES, MIN_TRANSITIONS, MIN_WINDOW_MINUTES,
        };
        range(
            "flapDetection.transitions",
            f.transitions,
            i64::from(MIN_TRANSITIONS),
            i64::from(MAX_TRANSITIONS),
            "",
            &mut errors,
        );
        range(
            "flapDetection.windowMinutes",
            f.window_minutes,
            i64::from(MIN_WINDOW_MINUTES),
            i64::from(MAX_WINDOW_MINUTES),
            " minutes",
            &mut errors,
        );
    }

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
        if let Some(kind) = crate::monitoring::check_kind(d.kind) {
            // Out-of-range ports reach the engine as 0, which it reports on `port`.
            let port = d.port.map(|p| u16::try_from(p).unwrap_or(0));
            let input = SpecInput {
                url: d.url.as_deref(),
                host: d.host.as_deref(),
                port,
                config: &config,
            };
            match CheckSpec::parse(kind, &input) {
                Err(errs) => {
                    errors.extend(errs.into_iter().map(|e| FieldError::new(e.path, e.message)))
                }
                Ok(spec) => {
                    if let Some(e) = limits.address_policy.literal_refusal(&spec) {
                        errors.push(FieldError::new(e.path, e.message));
                    }
                }
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
pub async fn check_projects(
    cx: &Cx,
    ws: &str,
    ids: &[String],
    errors: &mut Vec<FieldError>,
) -> Result<(), sqlx::Error> {
    let found = store::projects::existing(cx.db().reader(), ws, ids).await?;
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

/// At most this many own notification channels per monitor.
pub const MAX_CHANNELS: usize = 20;

/// Refuses notification channel ids that are not channels of the caller's workspace (or
/// repeat, or are too many), and a policy id that is not one of its escalation policies.
pub async fn check_alerting(
    cx: &Cx,
    ws: &str,
    channel_ids: Option<&[String]>,
    policy_id: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> Result<(), sqlx::Error> {
    if let Some(ids) = channel_ids {
        if ids.len() > MAX_CHANNELS {
            errors.push(FieldError::new(
                "notificationChannelIds",
                format!("at most {MAX_CHANNELS} channels"),
            ));
        }
        let found = store::monitor_channels::existing_channels(cx.db().reader(), ws, ids).await?;
        for (i, id) in ids.iter().enumerate() {
            let field = format!("notificationChannelIds.{i}");
            if !found.contains(id) {
                errors.push(FieldError::new(field, "no such notification channel"));
            } else if ids[..i].contains(id) {
                errors.push(FieldError::new(field, "duplicate channel"));
            }
        }
    }
    if let Some(p) = policy_id {
        if !store::escalation::exists(cx.db().reader(), ws, p).await? {
            errors.push(FieldError::new(
                "escalationPolicyId",
                "no such escalation policy",
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

pub fn draft_of(body: &CreateMonitor) -> Draft {
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
        flap: body
            .flap_detection
            .unwrap_or_else(|| Some(FlapDetection::default_on())),
    }
}

/// The draft of an update: `b`'s fields over the stored ones. A stored value the draft keeps
/// and this build cannot read is a (reported) corrupt row.
pub fn merged(m: &MonitorRow, kind: MonitorType, b: &UpdateMonitor) -> Result<Draft, CorruptRow> {
    let strategy = match b.region_strategy {
        Some(s) => s,
        None => m.region_strategy()?.into(),
    };
    Ok(Draft {
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
        strategy,
        confirmations: b.confirmations_required.unwrap_or(m.confirmations_required),
        recovery_confirmations: b
            .recovery_confirmations_required
            .unwrap_or(m.recovery_confirmations_required),
        min_failure_ms: b
            .min_failure_duration_ms
            .unwrap_or(m.min_failure_duration_ms),
        grace: b.grace_period.or(m.grace_s),
        flap: b.flap_detection.unwrap_or_else(|| flap_view(m)),
    })
}

/// Copies a validated draft's settings onto a row.
pub fn apply(row: &mut MonitorRow, d: &Draft, c: Checked) {
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
    row.flap_transitions = d.flap.map(|f| f.transitions);
    row.flap_window_minutes = d.flap.map(|f| f.window_minutes);
}
