//! Push monitors: the schedule a monitor expects check-ins on, and the deadline after which
//! silence means `DOWN`.
//!
//! A push monitor expects a push either every `interval` seconds or on a standard 5-field cron
//! schedule in an IANA time zone (`{"schedule": "0 2 * * 1-5", "timezone": "Europe/Berlin"}`:
//! 02:00 Berlin time on weekdays), plus `grace` seconds of slack (default 60).
//!
//! # Deadline semantics
//!
//! The *base* is the later of the last push and the moment monitoring (re)started (creation or
//! resume: pushes from before a pause do not count for the time after it).
//! - Interval: `deadline = base + interval + grace`.
//! - Cron: `deadline = (first expected run strictly after base) + grace`. A job that runs at
//!   02:00 on weekdays therefore has no deadline on a weekend: after Friday's push the next
//!   expected run is Monday 02:00.
//!
//! The monitor is overdue when `now > deadline` (strictly; see [`is_overdue`]); the caller
//! then applies [`crate::state::push_down`].
//!
//! Cron details, all evaluated on the wall clock of the schedule's time zone: day-of-month and
//! day-of-week combine with OR when both are restricted (classic cron). Across DST, a push
//! monitor expects what cron itself does, as Healthchecks.io (whose cron evaluator follows
//! Debian's cron) expects, because that is when the job really runs and pushes:
//! - a spring-forward gap: a *fixed-time* job (neither the minute nor the hour field starts
//!   with `*`, like `30 2 * * *`) whose time falls into the gap runs once when the gap ends, so
//!   it is expected then (02:30 on the changeover day in Berlin is expected at 03:00 CEST),
//!   not skipped: skipping it would hide a job that failed that night. A *wildcard* job
//!   (`30 * * * *`, `*/15 2 * * *`) simply has no run at the times the gap swallowed; its
//!   next expected run is the next wall-clock time it names (03:30, not 03:00). No expected
//!   run is ever a time that does not exist locally, and none appears where the pattern names
//!   nothing (the cron crate alone reports the end of the gap as a run of every pattern, so a
//!   daily 01:23 job would get a phantom 03:00 run and a false alarm at 03:01; see
//!   [`CronSchedule::next_run_from`]).
//! - the repeated autumn hour: a fixed-time run is expected once, at its first occurrence;
//!   runs of wildcard or stepped patterns in the repeated hour are expected once per
//!   wall-clock time, which can only make the deadline later, never raise a false alarm.
//!
//! Precision: cron runs are whole minutes; bases are truncated to whole seconds so that a push
//! a few milliseconds after a run never counts as "before" it.

use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use serde::{Deserialize, Serialize};

/// Default grace period, in seconds.
pub const DEFAULT_GRACE_SECS: u32 = 60;
/// Largest grace period (and largest interval), in seconds: 366 days.
pub const MAX_GRACE_SECS: u32 = 31_622_400;
/// Largest interval, in seconds.
pub const MAX_INTERVAL_SECS: u32 = MAX_GRACE_SECS;

/// A push monitor's raw configuration, as the API receives it. Numbers are signed so that a
/// negative value reaches validation and gets a field error rather than a type error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// Seconds between expected pushes. Exclusive with `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
    /// Standard 5-field cron expression. Exclusive with `interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// IANA time zone for `schedule`; `UTC` when absent. Validated whenever present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Seconds of slack after each expected push; 60 when absent; `0..=31622400`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace: Option<i64>,
}

/// One problem with a [`PushConfig`]. [`PushConfigError::field`] names the offending key of
/// the push configuration object (the caller adds its own prefix, e.g. `config.`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushConfigError {
    #[error("either interval or schedule is required")]
    MissingExpectation,
    #[error("set either interval or schedule, not both")]
    IntervalAndSchedule,
    #[error("interval must be between 1 and {MAX_INTERVAL_SECS} seconds, got {value}")]
    IntervalOutOfRange { value: i64 },
    #[error("invalid cron expression {expression:?}: {reason}")]
    InvalidCron { expression: String, reason: String },
    #[error("cron expression {expression:?} never matches any date")]
    CronNeverFires { expression: String },
    #[error("unknown time zone {timezone:?} (expected an IANA name such as Europe/Berlin)")]
    UnknownTimeZone { timezone: String },
    #[error("grace must be between 0 and {MAX_GRACE_SECS} seconds, got {value}")]
    GraceOutOfRange { value: i64 },
}

impl PushConfigError {
    /// The configuration key the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            PushConfigError::MissingExpectation | PushConfigError::IntervalOutOfRange { .. } => {
                "interval"
            }
            PushConfigError::IntervalAndSchedule
            | PushConfigError::InvalidCron { .. }
            | PushConfigError::CronNeverFires { .. } => "schedule",
            PushConfigError::UnknownTimeZone { .. } => "timezone",
            PushConfigError::GraceOutOfRange { .. } => "grace",
        }
    }
}

/// What a job says about its run when it pushes (`?status=up|down`, case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushStatus {
    Up,
    Down,
}

impl PushStatus {
    /// Case-insensitive `up` or `down`.
    pub fn parse(s: &str) -> Option<PushStatus> {
        if s.eq_ignore_ascii_case("up") {
            Some(PushStatus::Up)
        } else if s.eq_ignore_ascii_case("down") {
            Some(PushStatus::Down)
        } else {
            None
        }
    }
}

/// When pushes are expected.
#[derive(Debug, Clone, PartialEq)]
pub enum PushExpectation {
    /// Every `secs` seconds.
    Interval { secs: u32 },
    /// On a cron schedule in a time zone (boxed: the parsed pattern is a few hundred bytes).
    Cron(Box<CronSchedule>),
}

/// A validated cron schedule in an IANA time zone.
#[derive(Debug, Clone, PartialEq)]
pub struct CronSchedule {
    expression: String,
    cron: Cron,
    timezone: Tz,
    /// Neither the minute nor the hour field starts with `*` (cron's "fixed-time" job).
    fixed_time: bool,
}

/// What becomes of the runs of a schedule whose wall-clock time a spring-forward gap
/// swallowed (see [`CronSchedule::next_run_from`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapRuns {
    /// One run when the gap ends, whatever the pattern (maintenance windows: a window whose
    /// start the gap swallowed still opens).
    AtGapEnd,
    /// As cron runs jobs: a fixed-time pattern's swallowed run happens once when the gap ends;
    /// a wildcard pattern's are skipped (push monitors: expect what the job really does).
    AsCron,
}

/// Whether a pattern is "fixed-time" in cron's sense: neither its minute nor its hour field
/// starts with `*` (Debian's cron applies its DST rules to those only). Of the nicknames only
/// `@hourly` (`0 * * * *`) is not.
fn is_fixed_time(expression: &str) -> bool {
    let e = expression.trim();
    if let Some(nickname) = e.strip_prefix('@') {
        return !nickname.eq_ignore_ascii_case("hourly");
    }
    let mut fields = e.split_whitespace();
    match (fields.next(), fields.next()) {
        (Some(minute), Some(hour)) => !minute.starts_with('*') && !hour.starts_with('*'),
        _ => false,
    }
}

impl CronSchedule {
    /// Parses a standard 5-field expression (minute hour day-of-month month day-of-week; names
    /// like `MON`/`JAN` and `@daily`-style nicknames are accepted; seconds and years are not).
    pub fn parse(expression: &str, timezone: Tz) -> Result<CronSchedule, PushConfigError> {
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        let cron = parser
            .parse(expression)
            .map_err(|e| PushConfigError::InvalidCron {
                expression: expression.to_string(),
                reason: e.to_string(),
            })?;
        let schedule = CronSchedule {
            expression: expression.to_string(),
            cron,
            timezone,
            fixed_time: is_fixed_time(expression),
        };
        // Patterns like "0 0 31 2 *" parse but never fire; a push monitor on one could never
        // be judged, so refuse it. Any fixed start works: without a year field a pattern that
        // fires at all fires within a few decades of any date.
        let reference = DateTime::<Utc>::UNIX_EPOCH + Duration::days(10_957); // 2000-01-01
        if schedule.next_run_after(reference).is_none() {
            return Err(PushConfigError::CronNeverFires {
                expression: expression.to_string(),
            });
        }
        Ok(schedule)
    }

    /// The expression as configured.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The time zone the expression is read in.
    pub fn timezone(&self) -> Tz {
        self.timezone
    }

    /// Whether the pattern is fixed-time (neither the minute nor the hour field starts with
    /// `*`).
    pub fn is_fixed_time(&self) -> bool {
        self.fixed_time
    }

    /// The first expected run of a push monitor strictly after `after` (truncated to the
    /// whole second), runs swallowed by a DST gap treated as cron does ([`GapRuns::AsCron`]).
    pub fn next_run_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let whole_second = DateTime::<Utc>::from_timestamp(after.timestamp(), 0)?;
        self.next_run_from(whole_second + Duration::milliseconds(1), GapRuns::AsCron)
    }

    /// The first run at or after `t` (runs are whole minutes). Shared by push deadlines and
    /// maintenance windows.
    ///
    /// The pattern is matched against the zone's wall clock, never through the cron crate's
    /// own zone handling (which reports the end of a spring-forward gap as a run of every
    /// pattern, and skips fixed-time runs the gap swallowed when the pattern names several
    /// times): the next wall-clock time the pattern names is found on a clock without DST,
    /// then placed in the zone. A time that exists once is that instant; a time of a repeated
    /// autumn hour is its first instant, and is passed over when that instant is gone (so a
    /// wall-clock time is run once); a time a spring-forward gap swallowed is, as `gap` says,
    /// the instant the gap ends or passed over, with the whole gap (one run at most per gap).
    /// So a run is never a time that does not exist locally, and never the end of a gap that
    /// swallowed nothing the pattern names.
    pub fn next_run_from(&self, t: DateTime<Utc>, gap: GapRuns) -> Option<DateTime<Utc>> {
        use chrono::{LocalResult, TimeZone};
        let keeps_gap_runs = match gap {
            GapRuns::AtGapEnd => true,
            GapRuns::AsCron => self.fixed_time,
        };
        // Runs strictly after `cursor`, a whole second (runs are whole minutes).
        let before = t - Duration::milliseconds(1);
        let cursor = DateTime::<Utc>::from_timestamp(before.timestamp(), 0)?;
        let mut wall = cursor.with_timezone(&self.timezone).naive_local();
        // Each turn passes over one gap or one repeated time; a pattern that fires at all
        // fires within far fewer turns.
        for _ in 0..1_000 {
            let next = self.next_wall_clock_after(wall)?;
            match self.timezone.from_local_datetime(&next) {
                LocalResult::Single(run) => {
                    let run = run.with_timezone(&Utc);
                    if run > cursor {
                        return Some(run);
                    }
                    wall = next;
                }
                LocalResult::Ambiguous(a, b) => {
                    let first = a.min(b).with_timezone(&Utc);
                    if first > cursor {
                        return Some(first);
                    }
                    wall = next;
                }
                LocalResult::None => {
                    let end = crate::maintenance::resolve(self.timezone, next)?;
                    if keeps_gap_runs {
                        return Some(end);
                    }
                    // Resume at the first wall-clock time after the gap.
                    wall = end.with_timezone(&self.timezone).naive_local() - Duration::seconds(1);
                }
            }
        }
        None
    }

    /// The first wall-clock time strictly after `wall` that the pattern names, on a clock
    /// without DST.
    fn next_wall_clock_after(&self, wall: chrono::NaiveDateTime) -> Option<chrono::NaiveDateTime> {
        use chrono::TimeZone;
        // The fields of a UTC datetime are exactly the naive ones given.
        self.cron
            .find_next_occurrence(&Utc.from_utc_datetime(&wall), false)
            .ok()
            .map(|dt| dt.naive_utc())
    }
}

/// A validated push schedule: when pushes are expected, plus the grace period.
#[derive(Debug, Clone, PartialEq)]
pub struct PushSchedule {
    pub expect: PushExpectation,
    pub grace_secs: u32,
}

impl PushSchedule {
    /// Validates a raw configuration, reporting every problem found (in key order:
    /// `interval`, `schedule`, `timezone`, `grace`).
    pub fn from_config(config: &PushConfig) -> Result<PushSchedule, Vec<PushConfigError>> {
        let mut errors = Vec::new();

        let interval = match config.interval {
            None => None,
            Some(v) => match u32::try_from(v) {
                Ok(secs) if (1..=MAX_INTERVAL_SECS).contains(&secs) => Some(secs),
                _ => {
                    errors.push(PushConfigError::IntervalOutOfRange { value: v });
                    None
                }
            },
        };
        if config.interval.is_none() && config.schedule.is_none() {
            errors.push(PushConfigError::MissingExpectation);
        }
        if config.interval.is_some() && config.schedule.is_some() {
            errors.push(PushConfigError::IntervalAndSchedule);
        }

        // The zone is parsed before the expression (the never-fires check needs it), but
        // its error is reported after, to keep key order.
        let timezone = match config.timezone.as_deref() {
            None => Ok(Tz::UTC),
            Some(name) => Tz::from_str(name.trim()).map_err(|_| PushConfigError::UnknownTimeZone {
                timezone: name.to_string(),
            }),
        };
        let cron = match (config.schedule.as_deref(), &timezone) {
            (Some(expr), Ok(tz)) => CronSchedule::parse(expr, *tz)
                .map_err(|e| errors.push(e))
                .ok(),
            // Still report a bad expression when the zone is bad too.
            (Some(expr), Err(_)) => CronSchedule::parse(expr, Tz::UTC)
                .map_err(|e| errors.push(e))
                .ok(),
            (None, _) => None,
        };
        if let Err(e) = timezone {
            errors.push(e);
        }

        let grace_secs = match config.grace {
            None => DEFAULT_GRACE_SECS,
            Some(v) => match u32::try_from(v) {
                Ok(secs) if secs <= MAX_GRACE_SECS => secs,
                _ => {
                    errors.push(PushConfigError::GraceOutOfRange { value: v });
                    DEFAULT_GRACE_SECS
                }
            },
        };

        if !errors.is_empty() {
            return Err(errors);
        }
        let expect = match (interval, cron) {
            (Some(secs), None) => PushExpectation::Interval { secs },
            (None, Some(cron)) => PushExpectation::Cron(Box::new(cron)),
            // Unreachable after the checks above; reported rather than panicking.
            _ => return Err(vec![PushConfigError::MissingExpectation]),
        };
        Ok(PushSchedule { expect, grace_secs })
    }

    /// An interval schedule, validated like [`PushSchedule::from_config`].
    pub fn interval(secs: i64, grace_secs: i64) -> Result<PushSchedule, Vec<PushConfigError>> {
        PushSchedule::from_config(&PushConfig {
            interval: Some(secs),
            grace: Some(grace_secs),
            ..PushConfig::default()
        })
    }

    /// A cron schedule, validated like [`PushSchedule::from_config`].
    pub fn cron(
        expression: &str,
        timezone: &str,
        grace_secs: i64,
    ) -> Result<PushSchedule, Vec<PushConfigError>> {
        PushSchedule::from_config(&PushConfig {
            schedule: Some(expression.to_string()),
            timezone: Some(timezone.to_string()),
            grace: Some(grace_secs),
            ..PushConfig::default()
        })
    }

    /// The configuration this schedule was validated from (defaults made explicit).
    pub fn to_config(&self) -> PushConfig {
        match &self.expect {
            PushExpectation::Interval { secs } => PushConfig {
                interval: Some(i64::from(*secs)),
                grace: Some(i64::from(self.grace_secs)),
                ..PushConfig::default()
            },
            PushExpectation::Cron(c) => PushConfig {
                schedule: Some(c.expression.clone()),
                timezone: Some(c.timezone.name().to_string()),
                grace: Some(i64::from(self.grace_secs)),
                ..PushConfig::default()
            },
        }
    }
}

/// The moment after which, with no further push, the monitor must go `DOWN` (see the module
/// docs). `started_at` is when monitoring was created or last resumed.
///
/// `None` means there is no deadline: the schedule expects no further run that can be
/// represented (only reachable with times near the end of the supported calendar).
pub fn deadline(
    schedule: &PushSchedule,
    last_push_at: Option<DateTime<Utc>>,
    started_at: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let base = last_push_at.map_or(started_at, |p| p.max(started_at));
    let grace = Duration::seconds(i64::from(schedule.grace_secs));
    let expected = match &schedule.expect {
        PushExpectation::Interval { secs } => {
            base.checked_add_signed(Duration::seconds(i64::from(*secs)))?
        }
        PushExpectation::Cron(cron) => cron.next_run_after(base)?,
    };
    expected.checked_add_signed(grace)
}

/// Whether the monitor is overdue at `now`: strictly past its [`deadline`].
pub fn is_overdue(
    schedule: &PushSchedule,
    last_push_at: Option<DateTime<Utc>>,
    started_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    deadline(schedule, last_push_at, started_at).is_some_and(|d| now > d)
}

#[cfg(test)]
mod tests;
