//! Reading a monitor's check results: its heartbeats (newest first, filtered, keyset-paged),
//! hourly stats, uptime windows and availability reports. All need `monitors:read`; a monitor
//! of another workspace is `MONITOR_NOT_FOUND`. The storage and the counting rules these
//! reads expose are documented in [`crate::monitoring`].

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_core::state::Status;

use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::{DomainError, FieldError, Resource};
use crate::monitoring::heartbeats::{decode_id, encode_id, unpack_timings};
use crate::monitoring::histogram::{to_ms, Histogram};
use crate::monitoring::report::{self, DAY_MS};
use crate::monitoring::rollup::{floor_hour, Summary};
use crate::schema::exact_object;
use crate::store::corrupt::CorruptRow;
use crate::store::heartbeats::{self as hb_store, ListFilter, StoredHeartbeat};
use crate::store::status;

// ---------------------------------------------------------------------------------------------
// Shapes

// Schema only: heartbeats carry `tocsin_core::Status`, the one status type. The published
// document names a heartbeat's status `HeartbeatStatus` (described by the doc line below, which
// is all the document may say) beside the monitor's `MonitorStatus`, and must stay
// byte-identical, so this enum exists only to be referenced by `#[schemars(with = ...)]` and is
// never built.
/// A check status.
#[derive(JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
#[allow(dead_code)]
pub enum HeartbeatStatus {
    Up,
    Down,
    Degraded,
    Changed,
    Maintenance,
    Pending,
}

/// Phase timings in milliseconds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct HeartbeatTimings {
    pub dns: f64,
    pub tcp: f64,
    /// Null for plain-text protocols.
    pub tls: Option<f64>,
    pub first_byte: f64,
    pub transfer: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AssertionSeverity {
    Warn,
    Fail,
}

/// One assertion's result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = exact_object)]
pub struct HeartbeatAssertion {
    pub index: u64,
    pub passed: bool,
    pub actual: Option<String>,
    pub message: String,
    pub severity: AssertionSeverity,
}

/// One check result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct Heartbeat {
    pub id: String,
    pub monitor_id: String,
    #[schemars(with = "HeartbeatStatus")]
    pub status: Status,
    /// Milliseconds (0.1 ms resolution).
    pub latency: f64,
    pub status_code: Option<u32>,
    pub message: Option<String>,
    pub retry_count: u32,
    pub timings: Option<HeartbeatTimings>,
    pub region: String,
    pub response_headers: Option<BTreeMap<String, Vec<String>>>,
    /// At most 64 KiB.
    pub response_body: Option<String>,
    #[serde(rename = "resolvedIP")]
    pub resolved_ip: Option<String>,
    pub assertion_results: Option<Vec<HeartbeatAssertion>>,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
}

/// One UTC hour of checks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct HourlyStat {
    /// The hour's start, RFC 3339.
    #[schemars(with = "crate::schema::Timestamp")]
    pub bucket: String,
    pub total_checks: u64,
    pub up_checks: u64,
    pub down_checks: u64,
    pub degraded_checks: u64,
    pub avg_latency: f64,
    pub max_latency: f64,
    pub min_latency: f64,
    pub p95_latency: f64,
}

/// Uptime percentages (0 to 100), null for a window without checks.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(transform = exact_object)]
pub struct Uptime {
    #[serde(rename = "24h")]
    pub h24: Option<f64>,
    #[serde(rename = "7d")]
    pub d7: Option<f64>,
    #[serde(rename = "30d")]
    pub d30: Option<f64>,
    #[serde(rename = "90d")]
    pub d90: Option<f64>,
    /// The `from`/`to` range; null when no range was asked for or it has no checks.
    pub custom: Option<f64>,
}

/// One check of a monitor's recent history, as the monitor list draws it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct RecentCheck {
    #[schemars(with = "HeartbeatStatus")]
    pub status: Status,
    /// Milliseconds (0.1 ms resolution).
    pub latency: f64,
    #[schemars(with = "crate::schema::Timestamp")]
    pub at: String,
}

/// What the monitor list shows beside a monitor's settings: its last checks, its uptime over
/// about a day and its latest response time.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct MonitorSummary {
    pub monitor_id: String,
    /// The last checks (at most `RECENT_CHECKS`, 40), oldest first; every region's results.
    pub recent: Vec<RecentCheck>,
    /// Uptime percentage (0 to 100) over the hourly rollups from the start of the hour 24 hours
    /// ago (so 24 to 25 hours); null without counted checks in them.
    pub uptime24h: Option<f64>,
    /// The latest check's response time in milliseconds; null before the first check.
    pub latency: Option<f64>,
}

/// An availability report. Latencies in milliseconds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct Report {
    pub monitor_id: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub from: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub to: String,
    /// Percent of checks not DOWN; null without checks.
    pub uptime: Option<f64>,
    pub downtime_ms: i64,
    pub outages: i64,
    /// Mean outage length; null without outages.
    pub mttr_ms: Option<f64>,
    pub p50_latency: Option<f64>,
    pub p95_latency: Option<f64>,
    pub p99_latency: Option<f64>,
    pub avg_latency: Option<f64>,
    pub total_checks: i64,
    pub up_checks: i64,
    pub down_checks: i64,
    pub degraded_checks: i64,
    /// Where the outage figures start (raw heartbeats are kept a limited time).
    #[schemars(with = "crate::schema::Timestamp")]
    pub outage_data_from: String,
}

pub const CSV_HEADER: &str = "monitorId,from,to,uptime,downtimeMs,outages,mttrMs,p50Latency,\
p95Latency,p99Latency,avgLatency,totalChecks,upChecks,downChecks,degradedChecks,outageDataFrom";

impl Report {
    /// The report as CSV: a header row and one data row, the JSON fields in order.
    pub fn csv(&self) -> String {
        fn opt(v: Option<f64>) -> String {
            v.map(|x| x.to_string()).unwrap_or_default()
        }
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
        let row = [
            field(&self.monitor_id),
            field(&self.from),
            field(&self.to),
            opt(self.uptime),
            self.downtime_ms.to_string(),
            self.outages.to_string(),
            opt(self.mttr_ms),
            opt(self.p50_latency),
            opt(self.p95_latency),
            opt(self.p99_latency),
            opt(self.avg_latency),
            self.total_checks.to_string(),
            self.up_checks.to_string(),
            self.down_checks.to_string(),
            self.degraded_checks.to_string(),
            field(&self.outage_data_from),
        ];
        format!("{CSV_HEADER}\r\n{}\r\n", row.join(","))
    }
}

// ---------------------------------------------------------------------------------------------
// Queries

pub const DEFAULT_HEARTBEAT_LIMIT: u32 = 100;
pub const MAX_HEARTBEAT_LIMIT: u32 = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatQuery {
    /// Checks at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Checks before this time.
    pub to: Option<DateTime<Utc>>,
    #[schemars(with = "Option<HeartbeatStatus>")]
    pub status: Option<Status>,
    /// A region name.
    pub region: Option<String>,
    /// The correlation id of an on-demand check.
    pub correlation_id: Option<String>,
    /// 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// The `id` of the last heartbeat of the previous page: returns older ones.
    pub before: Option<String>,
}

fn check_range(
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    errors: &mut Vec<FieldError>,
) {
    if let (Some(f), Some(t)) = (from, to) {
        if f >= t {
            errors.push(FieldError::new("to", "must be after from"));
        }
    }
}

impl HeartbeatQuery {
    /// The problems with the query, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_range(self.from, self.to, &mut errors);
        if let Some(l) = self.limit {
            if !(1..=MAX_HEARTBEAT_LIMIT).contains(&l) {
                errors.push(FieldError::new("limit", "must be 1 to 1000"));
            }
        }
        if self.region.as_ref().is_some_and(|r| r.len() > 200) {
            errors.push(FieldError::new("region", "at most 200 characters"));
        }
        if self.correlation_id.as_ref().is_some_and(|r| r.len() > 200) {
            errors.push(FieldError::new("correlationId", "at most 200 characters"));
        }
        if self.before.as_ref().is_some_and(|b| decode_id(b).is_none()) {
            errors.push(FieldError::new("before", "is not a heartbeat id"));
        }
        errors
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RangeQuery {
    /// Range start (inclusive).
    pub from: Option<DateTime<Utc>>,
    /// Range end (exclusive); default now.
    pub to: Option<DateTime<Utc>>,
}

impl RangeQuery {
    /// The problems with the query, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_range(self.from, self.to, &mut errors);
        errors
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReportFormat {
    #[default]
    Json,
    Csv,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReportQuery {
    /// Range start (inclusive); default 30 days before `to`.
    pub from: Option<DateTime<Utc>>,
    /// Range end (exclusive); default now.
    pub to: Option<DateTime<Utc>>,
    /// `json` (default) or `csv`.
    pub format: Option<ReportFormat>,
}

impl ReportQuery {
    /// The problems with the query, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_range(self.from, self.to, &mut errors);
        errors
    }
}

// ---------------------------------------------------------------------------------------------
// Operations

/// The monitor's compact heartbeat key, or `MONITOR_NOT_FOUND` outside the caller's workspace.
async fn monitor_seq(cx: &Cx, caller: &Caller, monitor_id: &str) -> Result<i64, DomainError> {
    hb_store::monitor_seq(cx.db().reader(), &caller.workspace_id, monitor_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Monitor))
}

/// A stored heartbeat as the API shows it; a status code no status has is a (reported)
/// corrupt row, never a guessed status.
fn view(monitor_id: &str, seq: i64, h: StoredHeartbeat) -> Result<Heartbeat, CorruptRow> {
    let id = encode_id(seq, h.ts, h.region_id);
    let status = status::from_code(h.status)
        .map_err(|_| CorruptRow::new("heartbeats", &id, "status", h.status.to_string()))?;
    Ok(Heartbeat {
        id,
        monitor_id: monitor_id.to_string(),
        status,
        latency: to_ms(h.latency as f64),
        status_code: h.status_code.and_then(|c| u32::try_from(c).ok()),
        message: h.message,
        retry_count: u32::try_from(h.retry_count).unwrap_or(0),
        timings: h
            .timings
            .as_deref()
            .and_then(unpack_timings)
            .map(|t| HeartbeatTimings {
                dns: t.dns,
                tcp: t.tcp,
                tls: t.tls,
                first_byte: t.first_byte,
                transfer: t.transfer,
            }),
        region: h.region,
        response_headers: h
            .response_headers
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok()),
        response_body: h.response_body,
        resolved_ip: h.resolved_ip,
        assertion_results: h
            .assertion_results
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok()),
        created_at: rfc3339(h.ts),
    })
}

/// A query with problems is refused with all of them.
fn checked(errors: Vec<FieldError>) -> Result<(), DomainError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

/// A monitor's heartbeats, newest first, filtered and keyset-paged by `query`.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    query: &HeartbeatQuery,
) -> Result<Vec<Heartbeat>, DomainError> {
    caller.require::<needs::ListHeartbeats>()?;
    checked(query.check())?;
    let q = query;
    let seq = monitor_seq(cx, caller, monitor_id).await?;
    let before = match q.before.as_deref().and_then(decode_id) {
        Some((s, ts, region)) if s == seq => Some((ts, region)),
        Some(_) => {
            return Err(DomainError::field(
                "before",
                "is not a heartbeat of this monitor",
            ))
        }
        None => None,
    };
    let region_id = match &q.region {
        Some(name) => match hb_store::region_by_name(cx.db().reader(), name).await? {
            Some(id) => Some(id),
            // No heartbeat was ever stored for that region.
            None => return Ok(Vec::new()),
        },
        None => None,
    };
    let filter = ListFilter {
        from: q.from.map(|t| t.timestamp_millis()),
        to: q.to.map(|t| t.timestamp_millis()),
        status: q.status.map(status::codes_of),
        region_id,
        correlation_id: q.correlation_id.clone(),
        before,
        limit: i64::from(q.limit.unwrap_or(DEFAULT_HEARTBEAT_LIMIT)),
    };
    let rows = hb_store::list(cx.db().reader(), seq, &filter).await?;
    // A list leaves a corrupt row out (reported) and answers the rest.
    Ok(crate::store::corrupt::readable(
        rows.into_iter().map(|h| view(monitor_id, seq, h)),
    ))
}

fn ms_or_zero(v: Option<f64>) -> f64 {
    v.map(to_ms).unwrap_or(0.0)
}

/// A monitor's hourly check counts and latency, oldest first.
pub async fn hourly(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    query: &RangeQuery,
) -> Result<Vec<HourlyStat>, DomainError> {
    caller.require::<needs::ListHourlyStats>()?;
    checked(query.check())?;
    let q = query;
    let seq = monitor_seq(cx, caller, monitor_id).await?;
    let now = cx.clock().now_ms();
    let to = q.to.map_or(now + 1, |t| t.timestamp_millis());
    let from = floor_hour(q.from.map_or(to - DAY_MS, |t| t.timestamp_millis()));
    let db = cx.db();
    let rows = hb_store::hourly(db.reader(), seq, from, to).await?;
    let mut hists: BTreeMap<i64, Histogram> = BTreeMap::new();
    for (bucket, bin, n) in hb_store::bins(db.reader(), seq, from, to).await? {
        hists.entry(bucket).or_default().add_bin(bin, n);
    }
    let out = rows
        .into_iter()
        .map(|r| {
            let mut h = hists.remove(&r.bucket_start).unwrap_or_default();
            h.add_summary(
                r.total - r.down,
                r.latency_sum,
                r.latency_min,
                r.latency_max,
            );
            HourlyStat {
                bucket: rfc3339(r.bucket_start),
                total_checks: u64::try_from(r.total).unwrap_or(0),
                up_checks: u64::try_from(r.up).unwrap_or(0),
                down_checks: u64::try_from(r.down).unwrap_or(0),
                degraded_checks: u64::try_from(r.degraded).unwrap_or(0),
                avg_latency: ms_or_zero(h.mean()),
                max_latency: ms_or_zero(h.max.map(|v| v as f64)),
                min_latency: ms_or_zero(h.min.map(|v| v as f64)),
                p95_latency: ms_or_zero(h.quantile(0.95)),
            }
        })
        .collect();
    Ok(out)
}

/// A monitor's uptime over the last 24 hours, 7, 30 and 90 days, and over `query`'s range
/// when it has a `from`.
pub async fn uptime(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    query: &RangeQuery,
) -> Result<Uptime, DomainError> {
    caller.require::<needs::GetMonitorUptime>()?;
    checked(query.check())?;
    let q = query;
    let seq = monitor_seq(cx, caller, monitor_id).await?;
    // Windows end now, inclusive.
    let end = cx.clock().now_ms() + 1;
    let mut pct = Vec::with_capacity(4);
    for days in [1, 7, 30, 90] {
        pct.push(
            report::window(cx, seq, end - days * DAY_MS, end)
                .await?
                .uptime(),
        );
    }
    let custom = match (q.from, q.to) {
        (Some(f), t) => {
            let to = t.map_or(end, |t| t.timestamp_millis());
            report::window(cx, seq, f.timestamp_millis(), to)
                .await?
                .uptime()
        }
        (None, Some(_)) => return Err(DomainError::field("from", "is required with to")),
        (None, None) => None,
    };
    Ok(Uptime {
        h24: pct[0],
        d7: pct[1],
        d30: pct[2],
        d90: pct[3],
        custom,
    })
}

/// How many of each monitor's last checks [`summaries`] returns.
pub const RECENT_CHECKS: i64 = 40;

/// Every monitor of the workspace's last checks, 24-hour uptime and latest response time, in
/// two statements whatever the number of monitors (the monitor list's one request for them),
/// in monitor id order. A monitor with no check in either is left out.
pub async fn summaries(cx: &Cx, caller: &Caller) -> Result<Vec<MonitorSummary>, DomainError> {
    caller.require::<needs::ListMonitorSummaries>()?;
    let ws = &caller.workspace_id;
    let db = cx.db();
    let since = floor_hour(cx.clock().now_ms() - DAY_MS);
    let (recent, counts) = tokio::join!(
        hb_store::recent_of_workspace(db.reader(), ws, RECENT_CHECKS),
        hb_store::counts_of_workspace(db.reader(), ws, since)
    );
    let mut out: BTreeMap<String, MonitorSummary> = BTreeMap::new();
    for (id, ts, code, latency) in recent? {
        let s = out.entry(id).or_insert_with_key(|id| empty_summary(id));
        let ms = to_ms(latency as f64);
        s.latency = Some(ms);
        s.recent.push(RecentCheck {
            status: status::from_code(code)?,
            latency: ms,
            at: rfc3339(ts),
        });
    }
    for (id, total, down) in counts? {
        out.entry(id)
            .or_insert_with_key(|id| empty_summary(id))
            .uptime24h = tocsin_core::uptime::uptime_percent(total, down);
    }
    Ok(out.into_values().collect())
}

fn empty_summary(id: &str) -> MonitorSummary {
    MonitorSummary {
        monitor_id: id.to_string(),
        recent: Vec::new(),
        uptime24h: None,
        latency: None,
    }
}

/// A monitor's availability report over `query`'s range (default: the 30 days before now).
/// `query.format` is for the caller to apply ([`Report::csv`]).
pub async fn report(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    query: &ReportQuery,
) -> Result<Report, DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    checked(query.check())?;
    let q = query;
    let seq = monitor_seq(cx, caller, monitor_id).await?;
    let now = cx.clock().now_ms();
    let to = q.to.map_or(now + 1, |t| t.timestamp_millis());
    let from = q.from.map_or(to - 30 * DAY_MS, |t| t.timestamp_millis());
    let summary: Summary = report::window(cx, seq, from, to).await?;
    let (outages, outage_from) = report::outages_of(cx, seq, from, to).await?;
    let lat = &summary.latency;
    Ok(Report {
        monitor_id: monitor_id.to_string(),
        from: rfc3339(from),
        to: rfc3339(to),
        uptime: summary.uptime(),
        downtime_ms: outages.downtime_ms,
        outages: outages.count,
        mttr_ms: outages.mttr_ms().map(|v| v.round()),
        p50_latency: lat.quantile(0.50).map(to_ms),
        p95_latency: lat.quantile(0.95).map(to_ms),
        p99_latency: lat.quantile(0.99).map(to_ms),
        avg_latency: lat.mean().map(to_ms),
        total_checks: summary.total,
        up_checks: summary.up,
        down_checks: summary.down,
        degraded_checks: summary.degraded,
        outage_data_from: rfc3339(outage_from),
    })
}
