//! The typed monitor the check machinery works on: a stored [`MonitorRow`] (text and integer
//! columns) parsed once into a [`Monitor`] with its type, status, regions, strategy, intervals
//! and, above all, its validated [`CheckSpec`].
//!
//! A monitor has two parts that change at different rates, and they are parsed apart:
//!
//! - [`Settings`] — everything a user edit sets (type, target, `config` and its check spec,
//!   regions, strategy, quorum, confirmations, interval, timeout, retries). Every settings
//!   write bumps the row's `version` (see [`crate::store::monitors`]), so the parsed settings
//!   of one `(id, version)` stay right until the next edit. They are held behind an [`Arc`]:
//!   the scheduler keeps each monitor's settings with its place in the schedule and hands the
//!   same ones to every run ([`Monitor::reusing`]), so a run parses no JSON and clones no spec.
//! - the state the machinery writes (status and counters, `last_check_at`, the maintenance
//!   window, staleness, the DNS baseline), read fresh from the row at every run.
//!
//! A stored value that does not parse (an unknown type or status, regions or `config` that are
//! not JSON of the right shape, a check the engine refuses) is a [`CorruptMonitor`] error,
//! never a silent default: the caller logs it and skips the monitor, and [`skipped`] counts it
//! in `monitors_skipped_corrupt_total`.
//!
//! The store stays rows only; this module lives beside the scheduler so both the workers and
//! the domain operations (which sit above them) can use it.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{CheckSpec, RunOptions};
use tocsin_core::{Grid, MonitorState, MonitorType, RegionStrategy, StateSettings, Status};

use crate::clock::from_ms;
use crate::store::monitors::MonitorRow;
use crate::store::status;

/// A stored monitor value that cannot be read: the monitor is skipped, never guessed at.
#[derive(Debug, Clone, thiserror::Error)]
#[error("monitor {monitor_id}: stored {field} cannot be read: {detail}")]
pub struct CorruptMonitor {
    pub monitor_id: String,
    /// The column (or `config` path) at fault.
    pub field: &'static str,
    pub detail: String,
}

/// Logs a monitor skipped because its row is corrupt and counts it in
/// `monitors_skipped_corrupt_total`.
pub fn skipped(e: &CorruptMonitor) {
    metrics::counter!("monitors_skipped_corrupt_total").increment(1);
    tracing::warn!(monitor = %e.monitor_id, field = e.field, detail = %e.detail,
        "stored monitor cannot be read: skipped");
}

/// Where a remote probe runs the check: the raw target fields it parses itself (the wire job
/// carries them, see [`crate::probes::protocol::Job`]).
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    /// The stored `config` object (without `quorum`).
    pub config: Map<String, Value>,
}

/// A monitor's settings, parsed once per `(id, version)` (see the module documentation).
#[derive(Debug)]
pub struct Settings {
    /// The row version these settings were parsed from.
    pub version: i64,
    pub kind: MonitorType,
    /// The validated check; `None` for PUSH, which the engine never runs.
    pub check: Option<CheckSpec>,
    pub target: Target,
    pub regions: Vec<String>,
    pub strategy: RegionStrategy,
    /// The failure quorum for `all`; `None` = a majority of the regions that reported.
    pub quorum: Option<usize>,
    pub state_settings: StateSettings,
    /// Seconds between checks.
    pub interval_s: i64,
    /// The monitor's slots ([`Grid::for_monitor`]).
    pub grid: Grid,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// Immediate retries of a failed attempt.
    pub retries: u32,
    /// HTTP: the certificate warning threshold in days.
    pub cert_warn_days: Option<i64>,
}

/// One monitor, typed: its shared [`Settings`] and its current state.
#[derive(Debug, Clone)]
pub struct Monitor {
    pub id: String,
    /// Compact integer key for heartbeats and rollups.
    pub seq: i64,
    pub settings: Arc<Settings>,
    /// False while paused.
    pub active: bool,
    /// The fields the state machine owns.
    pub state: MonitorState,
    pub status_changed_at: i64,
    pub last_check_at: Option<i64>,
    pub stale_since: Option<i64>,
    /// Until when (ms, exclusive) a maintenance window holds the monitor.
    pub maintenance_until: Option<i64>,
    /// Whether the active window keeps its checks out of uptime figures.
    pub maintenance_excluded: bool,
    /// DNS_DIFF: the accepted answer set, `None` until the first answer.
    pub dns_baseline: Option<Vec<String>>,
}

fn to_u32(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

impl Settings {
    /// Parses the settings columns of `row`.
    pub fn parse(row: &MonitorRow) -> Result<Settings, CorruptMonitor> {
        let corrupt = |field: &'static str, detail: String| CorruptMonitor {
            monitor_id: row.id.clone(),
            field,
            detail,
        };
        let kind = MonitorType::parse(&row.kind_text)
            .ok_or_else(|| corrupt("type", format!("unknown type {:?}", row.kind_text)))?;
        let config: Map<String, Value> = serde_json::from_str(&row.config)
            .map_err(|e| corrupt("config", format!("not a JSON object: {e}")))?;
        let regions: Vec<String> = serde_json::from_str(&row.regions)
            .map_err(|e| corrupt("regions", format!("not a JSON list of names: {e}")))?;
        let strategy = RegionStrategy::parse(&row.region_strategy).ok_or_else(|| {
            corrupt(
                "region_strategy",
                format!("unknown strategy {:?}", row.region_strategy),
            )
        })?;
        let port = match row.port {
            None => None,
            Some(p) => {
                Some(u16::try_from(p).map_err(|_| corrupt("port", format!("{p} is not a port")))?)
            }
        };
        let target = Target {
            url: row.url.clone(),
            host: row.host.clone(),
            port,
            config,
        };
        let check = match crate::monitoring::check_kind(kind) {
            None => None,
            Some(engine_kind) => {
                let input = SpecInput {
                    url: target.url.as_deref(),
                    host: target.host.as_deref(),
                    port: target.port,
                    config: &target.config,
                };
                let spec = CheckSpec::parse(engine_kind, &input).map_err(|errors| {
                    let fields: Vec<String> = errors
                        .iter()
                        .map(|e| format!("{}: {}", e.path, e.message))
                        .collect();
                    corrupt("config", fields.join("; "))
                })?;
                Some(spec)
            }
        };
        let cert_warn_days = match &check {
            Some(CheckSpec::Http(spec)) => Some(i64::from(spec.tls.cert_expiry_warn_days)),
            _ => None,
        };
        let interval_ms = u64::try_from(row.interval_s.max(1))
            .unwrap_or(1)
            .saturating_mul(1000);
        Ok(Settings {
            version: row.version,
            kind,
            check,
            target,
            regions,
            strategy,
            quorum: row.quorum.and_then(|q| usize::try_from(q).ok()),
            state_settings: StateSettings {
                confirmations_required: to_u32(row.confirmations_required),
                recovery_confirmations_required: to_u32(row.recovery_confirmations_required),
                min_failure_duration_ms: u64::try_from(row.min_failure_duration_ms).unwrap_or(0),
            },
            interval_s: row.interval_s,
            grid: Grid::for_monitor(&row.id, interval_ms),
            timeout: Duration::from_secs(u64::try_from(row.timeout_s).unwrap_or(1)),
            retries: to_u32(row.retries),
            cert_warn_days,
        })
    }

    /// The longest a check may take wherever it runs: every attempt its whole timeout.
    pub fn check_time(&self) -> Duration {
        self.timeout.saturating_mul(self.retries.saturating_add(1))
    }
}

impl Monitor {
    /// Parses `row` whole (settings and state).
    pub fn from_row(row: &MonitorRow) -> Result<Monitor, CorruptMonitor> {
        Monitor::reusing(row, None)
    }

    /// Parses `row`'s state, reusing `held` settings when they were parsed from the row's
    /// current version (a settings edit bumps it); otherwise parses the settings afresh.
    pub fn reusing(
        row: &MonitorRow,
        held: Option<&Arc<Settings>>,
    ) -> Result<Monitor, CorruptMonitor> {
        let settings = match held {
            Some(s) if s.version == row.version => s.clone(),
            _ => Arc::new(Settings::parse(row)?),
        };
        let corrupt = |field: &'static str, detail: String| CorruptMonitor {
            monitor_id: row.id.clone(),
            field,
            detail,
        };
        let status: Status =
            status::from_text(&row.status_text).map_err(|e| corrupt("status", e.to_string()))?;
        let dns_baseline = match row.dns_baseline.as_deref() {
            None => None,
            Some(text) => Some(
                serde_json::from_str(text)
                    .map_err(|e| corrupt("dns_baseline", format!("not a JSON list: {e}")))?,
            ),
        };
        Ok(Monitor {
            id: row.id.clone(),
            seq: row.seq,
            settings,
            active: row.active != 0,
            state: MonitorState {
                status,
                consecutive_failures: to_u32(row.consecutive_failures),
                consecutive_successes: to_u32(row.consecutive_successes),
                pending_failure_since: row.pending_failure_since.map(from_ms),
            },
            status_changed_at: row.status_changed_at,
            last_check_at: row.last_check_at,
            stale_since: row.stale_since,
            maintenance_until: row.maintenance_until,
            maintenance_excluded: row.maintenance_excluded != 0,
            dns_baseline,
        })
    }

    pub fn kind(&self) -> MonitorType {
        self.settings.kind
    }

    /// Whether the scheduler runs it: active and not PUSH.
    pub fn is_scheduled(&self) -> bool {
        self.active && self.kind() != MonitorType::Push
    }

    pub fn regions(&self) -> &[String] {
        &self.settings.regions
    }

    /// Whether a maintenance window holds the monitor at `at_ms`: `Some(excluded)` inside one,
    /// `None` outside.
    pub fn maintenance_at(&self, at_ms: i64) -> Option<bool> {
        self.maintenance_until
            .filter(|until| at_ms < *until)
            .map(|_| self.maintenance_excluded)
    }

    /// Timeout, retries, (DNS_DIFF) the accepted baseline and the run's time (from the
    /// caller's clock: certificate days left count from it) for one run; every address is
    /// allowed until the caller applies the server's policy.
    pub fn run_options(&self, now: DateTime<Utc>) -> RunOptions {
        RunOptions {
            timeout: self.settings.timeout,
            retries: self.settings.retries,
            baseline: self.dns_baseline.clone(),
            now,
            address_policy: tocsin_checks::AddressPolicy::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> MonitorRow {
        MonitorRow {
            id: "m1".into(),
            seq: 7,
            workspace_id: "w".into(),
            name: "site".into(),
            kind_text: "HTTP".into(),
            status_text: "UP".into(),
            url: Some("https://example.com/".into()),
            host: None,
            port: None,
            interval_s: 30,
            retries: 1,
            timeout_s: 5,
            tags: "[]".into(),
            description: None,
            config: r#"{"tls":{"certExpiryWarnDays":21}}"#.into(),
            regions: r#"["local","eu-west"]"#.into(),
            region_strategy: "round_robin".into(),
            quorum: Some(2),
            confirmations_required: 3,
            recovery_confirmations_required: 2,
            min_failure_duration_ms: 1000,
            consecutive_failures: 1,
            consecutive_successes: 0,
            pending_failure_since: Some(5_000),
            active: 1,
            grace_s: None,
            last_push_at: None,
            dns_baseline: None,
            status_changed_at: 1_000,
            last_check_at: Some(4_000),
            started_at: 0,
            stale_since: None,
            maintenance_until: Some(10_000),
            maintenance_excluded: 1,
            flap_transitions: Some(5),
            flap_window_minutes: Some(30),
            flapping_since: None,
            version: 3,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn parses_every_part_once() {
        let m = Monitor::from_row(&row()).unwrap();
        assert_eq!(m.kind(), MonitorType::Http);
        assert!(matches!(m.settings.check, Some(CheckSpec::Http(_))));
        assert_eq!(m.settings.cert_warn_days, Some(21));
        assert_eq!(m.regions(), ["local", "eu-west"]);
        assert_eq!(m.settings.strategy, RegionStrategy::RoundRobin);
        assert_eq!(m.settings.quorum, Some(2));
        assert_eq!(m.settings.state_settings.confirmations_required, 3);
        assert_eq!(m.settings.grid.interval_ms, 30_000);
        assert_eq!(m.settings.check_time(), Duration::from_secs(10));
        assert_eq!(m.state.status, Status::Up);
        assert_eq!(m.state.pending_failure_since, Some(from_ms(5_000)));
        assert_eq!(m.maintenance_at(9_999), Some(true));
        assert_eq!(m.maintenance_at(10_000), None);
        assert!(m.is_scheduled());
    }

    #[test]
    fn settings_of_the_same_version_are_shared_not_parsed_again() {
        let first = Monitor::from_row(&row()).unwrap();
        let mut r = row();
        // A state write (a check ran) leaves the version alone.
        r.status_text = "DOWN".into();
        r.consecutive_failures = 3;
        let next = Monitor::reusing(&r, Some(&first.settings)).unwrap();
        assert!(Arc::ptr_eq(&first.settings, &next.settings));
        assert_eq!(next.state.status, Status::Down);
        assert_eq!(next.state.consecutive_failures, 3);
        // An edit bumps it: the settings are parsed again.
        r.version = 4;
        r.regions = r#"["local"]"#.into();
        let edited = Monitor::reusing(&r, Some(&first.settings)).unwrap();
        assert!(!Arc::ptr_eq(&first.settings, &edited.settings));
        assert_eq!(edited.regions(), ["local"]);
    }

    #[test]
    fn a_corrupt_value_is_an_error_naming_its_field() {
        type Spoil = fn(&mut MonitorRow);
        let cases: [(&str, Spoil); 7] = [
            ("type", |r| r.kind_text = "GOPHER".into()),
            ("status", |r| r.status_text = "SIDEWAYS".into()),
            ("regions", |r| r.regions = "local".into()),
            ("region_strategy", |r| r.region_strategy = "any".into()),
            ("config", |r| r.config = "[1]".into()),
            ("config", |r| r.url = Some("not a url".into())),
            ("dns_baseline", |r| r.dns_baseline = Some("{".into())),
        ];
        for (field, spoil) in cases {
            let mut r = row();
            spoil(&mut r);
            let e = Monitor::from_row(&r).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert_eq!(e.monitor_id, "m1");
        }
    }

    #[test]
    fn push_monitors_have_no_check() {
        let mut r = row();
        r.kind_text = "PUSH".into();
        r.url = None;
        r.config = r#"{"schedule":"*/5 * * * *"}"#.into();
        let m = Monitor::from_row(&r).unwrap();
        assert!(m.settings.check.is_none());
        assert!(!m.is_scheduled());
    }
}
