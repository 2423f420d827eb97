//! What a monitor looks like to a caller: the [`Monitor`] view of a stored row (with its
//! project memberships) and the other response shapes of the monitor operations. Every
//! surface shows these, so their schemas are written once, here.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

pub use super::input::FlapDetection;
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::DomainError;
use crate::monitoring::{ApiRegionStrategy, MonitorType};
use crate::store;
use crate::store::corrupt::CorruptRow;
use crate::store::monitors::MonitorRow;
use tocsin_core::Status;

/// A monitor.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
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
    // Described by `config::schema`: one schema per monitor type, plus `quorum`.
    #[schemars(schema_with = "super::config::schema")]
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
    /// When the monitor counts as flapping; null when flap detection is off.
    pub flap_detection: Option<FlapDetection>,
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
    /// The monitor's own notification channels, in order. A monitor that names none and has
    /// no escalation policy notifies the workspace's default channels.
    pub notification_channel_ids: Vec<String>,
    /// The escalation policy its alerts follow; null for none.
    pub escalation_policy_id: Option<String>,
    /// The monitors this one depends on, in order: while one of them (or one they depend
    /// on) is DOWN, this monitor's alert opens under that outage's alert and pages nobody.
    pub depends_on: Vec<String>,
    /// When the last scheduled check whose result was stored began (null before the first,
    /// and for PUSH monitors, which are not checked by the service).
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub last_check_at: Option<String>,
    /// Since when nobody has been checking this monitor: active, yet no check result for three
    /// intervals, or none of its regions has a live probe. Null while results come in (and
    /// always for PUSH monitors, whose missed pushes make them DOWN instead).
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub stale_since: Option<String>,
    /// Since when the monitor is flapping (see `flapDetection`): its changes page nobody until
    /// it settles. Null while it is not.
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub flapping_since: Option<String>,
}

/// The flap detection settings of a stored row as the API shows them.
pub fn flap_view(m: &MonitorRow) -> Option<FlapDetection> {
    m.flap_settings().map(|s| FlapDetection {
        transitions: i64::from(s.transitions),
        window_minutes: i64::from(s.window_minutes),
    })
}

/// The config as the API shows it: the stored object plus `quorum` when one is set.
pub fn config_view(m: &MonitorRow) -> Map<String, Value> {
    let mut config = m.config();
    if let Some(q) = m.quorum {
        config.insert("quorum".into(), json!(q));
    }
    config
}

/// A monitor's view with its projects; its alerting settings (`notificationChannelIds`,
/// `escalationPolicyId`, rows of their own) are set by [`views`] or [`with_alerting`].
pub fn view(m: &MonitorRow, project_ids: Vec<String>) -> Result<Monitor, CorruptRow> {
    Ok(Monitor {
        id: m.id.clone(),
        workspace_id: m.workspace_id.clone(),
        project_ids,
        name: m.name.clone(),
        kind: m.monitor_type()?,
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
        region_strategy: m.region_strategy()?.into(),
        confirmations_required: m.confirmations_required,
        recovery_confirmations_required: m.recovery_confirmations_required,
        min_failure_duration_ms: m.min_failure_duration_ms,
        flap_detection: flap_view(m),
        consecutive_failures: m.consecutive_failures,
        consecutive_successes: m.consecutive_successes,
        pending_failure_since: m.pending_failure_since.map(rfc3339),
        active: m.is_active(),
        push_token: None,
        grace_period: m.grace_s,
        last_push_at: m.last_push_at.map(rfc3339),
        notification_channel_ids: Vec::new(),
        escalation_policy_id: None,
        depends_on: Vec::new(),
        last_check_at: m.last_check_at.map(rfc3339),
        stale_since: m.stale_since.filter(|_| m.is_active()).map(rfc3339),
        flapping_since: m.flapping_since.map(rfc3339),
    })
}

/// Views of several monitors, with their memberships read in one query.
pub async fn views(cx: &Cx, rows: &[MonitorRow]) -> Result<Vec<Monitor>, DomainError> {
    let mut conn = cx.db().reader().acquire().await?;
    views_on(&mut conn, rows).await
}

/// [`views`] on a connection the caller holds: one trip through the pool for all its reads
/// (each acquire and release costs a round trip to an embedded connection's worker).
pub async fn views_on(
    conn: &mut sqlx::AnyConnection,
    rows: &[MonitorRow],
) -> Result<Vec<Monitor>, DomainError> {
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let mut memberships = store::memberships::of_monitors(conn, &ids).await?;
    rows.iter()
        .map(|r| {
            let m = memberships.remove(&r.id).unwrap_or_default();
            let mut v = view(r, m.project_ids)?;
            v.depends_on = m.depends_on;
            Ok(with_alerting(v, Some((m.channel_ids, m.policy_id))))
        })
        .collect()
}

/// `m` with its alerting settings (own channels in order, policy).
pub fn with_alerting(
    mut m: Monitor,
    settings: Option<store::monitor_channels::Settings>,
) -> Monitor {
    if let Some((channels, policy)) = settings {
        m.notification_channel_ids = channels;
        m.escalation_policy_id = policy;
    }
    m
}

pub async fn view_one(cx: &Cx, row: &MonitorRow) -> Result<Monitor, DomainError> {
    let mut conn = cx.db().reader().acquire().await?;
    view_one_on(&mut conn, row).await
}

/// [`view_one`] on a connection the caller holds.
pub async fn view_one_on(
    conn: &mut sqlx::AnyConnection,
    row: &MonitorRow,
) -> Result<Monitor, DomainError> {
    let mut v = views_on(conn, std::slice::from_ref(row)).await?;
    v.pop()
        .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("monitor view vanished")))
}

/// One page of monitors.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct MonitorPage {
    pub monitors: Vec<Monitor>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Monitor counts. `paused` counts inactive monitors whatever their status; every other
/// count is of active monitors in that status; `total` counts all.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::exact_object)]
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

/// A freshly issued push token.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PushTokenIssued {
    /// The new token, for `POST /push/{token}`. It cannot be read again.
    pub push_token: String,
}

/// An accepted on-demand check.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "CheckResult")]
pub struct CheckResult {
    /// Carried by every heartbeat of this check: `GET /monitors/{id}/heartbeats?correlationId=`.
    pub correlation_id: String,
}
