//! Maintenance windows: when a window is active. Pure schedule math over a validated
//! [`Window`]; the server decides what "active" does to a monitor.
//!
//! # Semantics
//!
//! - **One-off** (`recurring: null`): active in `[startsAt, endsAt)`.
//! - **Recurring**: each occurrence lasts `endsAt - startsAt` and starts, from `startsAt` on,
//!   - `daily`: every day at the local wall-clock time of `startsAt` in `timezone`;
//!   - `weekly`: on `dayOfWeek` (0 = Sunday ... 6 = Saturday) at that time;
//!   - `monthly`: on `dayOfMonth` (1-31) at that time; a month without that day (the 31st in
//!     April, the 30th in February) has no occurrence, it is skipped rather than moved;
//!   - `cron`: at the times of a standard 5-field cron `expression` read in `timezone`.
//! - **DST**: wall-clock times are kept across changes. A start that falls into a
//!   spring-forward gap moves to the first instant after the gap (02:30 on the changeover day
//!   in Berlin starts at 03:00 CEST); a start in a repeated autumn hour takes the earlier of the
//!   two instants. The duration is real time, so a window 02:00-04:00 lasts two hours even on
//!   the changeover night (it then ends at 05:00 or 03:00 local time).
//! - An occurrence may not last longer than its period (a daily window at most 24 h, a weekly
//!   one 7 days, a monthly one 28 days, a cron one the shortest gap between its runs), so
//!   occurrences of one window never overlap by design; where a short DST day still makes two
//!   overlap, the window is active until the later one ends.
//!
//! Everything works at millisecond resolution on UTC instants; nothing reads a clock.

use std::str::FromStr;

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc,
    Weekday,
};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use crate::push::{CronSchedule, GapRuns};

/// How far ahead an occurrence is announced: the public pages list maintenance this far ahead,
/// and subscribers are mailed when an occurrence enters it.
pub const ANNOUNCE_HORIZON_MS: i64 = 14 * 24 * 60 * 60 * 1000;

/// Longest cron `expression`, in characters.
pub const MAX_EXPRESSION_CHARS: usize = 100;

/// How a window recurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Frequency {
    Daily,
    Weekly,
    Monthly,
    Cron,
}

impl Frequency {
    /// The API (and stored) spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Frequency::Daily => "daily",
            Frequency::Weekly => "weekly",
            Frequency::Monthly => "monthly",
            Frequency::Cron => "cron",
        }
    }
}

impl FromStr for Frequency {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        [
            Frequency::Daily,
            Frequency::Weekly,
            Frequency::Monthly,
            Frequency::Cron,
        ]
        .into_iter()
        .find(|f| f.as_str() == s)
        .ok_or(())
    }
}

/// A window's `recurring` object as given. Numbers are signed so that a negative value
/// reaches validation and gets a field error rather than a type error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recurring {
    pub frequency: Frequency,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_week: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_month: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
}

/// One problem with a window's schedule. [`WindowError::field`] names the API field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("must be after startsAt")]
    EndsBeforeStart,
    #[error("unknown time zone {0:?} (expected an IANA name such as Europe/Berlin)")]
    UnknownTimeZone(String),
    #[error("is required when frequency is {}", .1.as_str())]
    Missing(&'static str, Frequency),
    #[error("does not apply when frequency is {}", .1.as_str())]
    Inapplicable(&'static str, Frequency),
    #[error("must be between 0 (Sunday) and 6 (Saturday)")]
    DayOfWeekOutOfRange,
    #[error("must be between 1 and 31")]
    DayOfMonthOutOfRange,
    #[error("at most {MAX_EXPRESSION_CHARS} characters")]
    ExpressionTooLong,
    #[error("{0}")]
    InvalidCron(String),
    #[error(
        "an occurrence ({duration}) may not last longer than its period ({period}): shorten \
         endsAt - startsAt"
    )]
    LongerThanPeriod { duration: String, period: String },
}

impl WindowError {
    /// The API field the error is about (`recurring.*` for the rule's keys).
    pub fn field(&self) -> &'static str {
        match self {
            WindowError::EndsBeforeStart | WindowError::LongerThanPeriod { .. } => "endsAt",
            WindowError::UnknownTimeZone(_) => "timezone",
            WindowError::Missing(f, _) | WindowError::Inapplicable(f, _) => f,
            WindowError::DayOfWeekOutOfRange => "recurring.dayOfWeek",
            WindowError::DayOfMonthOutOfRange => "recurring.dayOfMonth",
            WindowError::ExpressionTooLong | WindowError::InvalidCron(_) => "recurring.expression",
        }
    }
}

/// When a validated window recurs.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    Once,
    Daily,
    Weekly(Weekday),
    /// The day of the month, 1-31.
    Monthly(u32),
    /// Boxed: the parsed pattern is a few hundred bytes.
    Cron(Box<CronSchedule>),
}

/// A validated maintenance window's schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    starts_at: DateTime<Utc>,
    duration: Duration,
    timezone: Tz,
    rule: Rule,
    /// The local wall-clock time and date of `starts_at`.
    local_time: NaiveTime,
    first_date: NaiveDate,
}

/// Longest search for the next occurrence, in days (a monthly rule on the 31st waits at most
/// two months; a cron rule is searched by the cron crate, which bounds itself).
const SEARCH_DAYS: i64 = 400;

fn human(d: Duration) -> String {
    let mins = d.num_minutes();
    if mins % (24 * 60) == 0 {
        format!("{} days", mins / (24 * 60))
    } else if mins % 60 == 0 {
        format!("{} h", mins / 60)
    } else {
        format!("{} min", mins.max(1))
    }
}

impl Window {
    /// Validates a window's schedule, reporting every problem found (in field order:
    /// `endsAt`, `timezone`, then the `recurring` keys).
    pub fn new(
        starts_at: DateTime<Utc>,
        ends_at: DateTime<Utc>,
        timezone: &str,
        recurring: Option<&Recurring>,
    ) -> Result<Window, Vec<WindowError>> {
        let mut errors = Vec::new();
        if ends_at <= starts_at {
            errors.push(WindowError::EndsBeforeStart);
        }
        let tz = Tz::from_str(timezone.trim())
            .map_err(|_| errors.push(WindowError::UnknownTimeZone(timezone.to_string())))
            .ok();
        let rule = recurring.and_then(|r| rule_of(r, tz.unwrap_or(Tz::UTC), &mut errors));
        let duration = ends_at - starts_at;
        if let (Some(rule), true) = (&rule, ends_at > starts_at) {
            if let Some(period) = period_of(rule, starts_at) {
                if duration > period {
                    errors.push(WindowError::LongerThanPeriod {
                        duration: human(duration),
                        period: human(period),
                    });
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let timezone = tz.unwrap_or(Tz::UTC);
        let local = starts_at.with_timezone(&timezone);
        Ok(Window {
            starts_at,
            duration,
            timezone,
            rule: rule.unwrap_or(Rule::Once),
            local_time: local.time(),
            first_date: local.date_naive(),
        })
    }

    pub fn starts_at(&self) -> DateTime<Utc> {
        self.starts_at
    }

    /// How long each occurrence lasts.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    pub fn timezone(&self) -> Tz {
        self.timezone
    }

    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The first occurrence start at or after `t`, if any.
    pub fn next_start_from(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let t = t.max(self.starts_at);
        match &self.rule {
            Rule::Once => (self.starts_at >= t).then_some(self.starts_at),
            Rule::Cron(cron) => cron_next_from(cron, t),
            rule => {
                let from_date = t.with_timezone(&self.timezone).date_naive() - Duration::days(1);
                let mut date = from_date.max(self.first_date);
                for _ in 0..SEARCH_DAYS {
                    if matches_date(rule, date) {
                        if let Some(start) = resolve(self.timezone, date.and_time(self.local_time))
                        {
                            if start >= t {
                                return Some(start);
                            }
                        }
                    }
                    date = date.succ_opt()?;
                }
                None
            }
        }
    }

    /// The first occurrence start strictly after `t`.
    pub fn next_start_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.next_start_from(t + Duration::milliseconds(1))
    }

    /// Whether the window is active at `t`, and if so until when (exclusive).
    pub fn active_until(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // An occurrence containing `t` started in (t - duration, t].
        let mut from = t - self.duration + Duration::milliseconds(1);
        let mut until = None;
        while let Some(start) = self.next_start_from(from) {
            if start > t {
                break;
            }
            until = Some(start + self.duration);
            from = start + Duration::milliseconds(1);
        }
        until.filter(|u| *u > t)
    }

    /// The occurrences `[start, end)` that overlap `[from, to)`, in order, at most `limit`.
    pub fn occurrences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let mut out = Vec::new();
        let mut cursor = from - self.duration + Duration::milliseconds(1);
        while out.len() < limit {
            let Some(start) = self.next_start_from(cursor) else {
                break;
            };
            if start >= to {
                break;
            }
            out.push((start, start + self.duration));
            cursor = start + Duration::milliseconds(1);
        }
        out
    }

    /// The next moment after `t` at which [`Window::active_until`] can change: the end of the
    /// occurrence active at `t`, or else the next start. `None` when the window is over.
    pub fn next_boundary_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let next_start = self.next_start_after(t);
        match self.active_until(t) {
            Some(end) => Some(next_start.map_or(end, |s| s.min(end))),
            None => next_start,
        }
    }
}

fn rule_of(r: &Recurring, tz: Tz, errors: &mut Vec<WindowError>) -> Option<Rule> {
    let f = r.frequency;
    let before = errors.len();
    let needs =
        |key: &'static str, present: bool, wanted: bool, errors: &mut Vec<WindowError>| match (
            present, wanted,
        ) {
            (false, true) => errors.push(WindowError::Missing(key, f)),
            (true, false) => errors.push(WindowError::Inapplicable(key, f)),
            _ => {}
        };
    needs(
        "recurring.dayOfWeek",
        r.day_of_week.is_some(),
        f == Frequency::Weekly,
        errors,
    );
    needs(
        "recurring.dayOfMonth",
        r.day_of_month.is_some(),
        f == Frequency::Monthly,
        errors,
    );
    needs(
        "recurring.expression",
        r.expression.is_some(),
        f == Frequency::Cron,
        errors,
    );
    let weekday = match r.day_of_week {
        Some(d @ 0..=6) => Some(weekday_of(d)),
        Some(_) => {
            errors.push(WindowError::DayOfWeekOutOfRange);
            None
        }
        None => None,
    };
    let day = match r.day_of_month {
        Some(d @ 1..=31) => u32::try_from(d).ok(),
        Some(_) => {
            errors.push(WindowError::DayOfMonthOutOfRange);
            None
        }
        None => None,
    };
    let cron = match r.expression.as_deref() {
        Some(e) if e.chars().count() > MAX_EXPRESSION_CHARS => {
            errors.push(WindowError::ExpressionTooLong);
            None
        }
        Some(e) => CronSchedule::parse(e.trim(), tz)
            .map_err(|e| errors.push(WindowError::InvalidCron(e.to_string())))
            .ok(),
        None => None,
    };
    if errors.len() > before {
        return None;
    }
    match f {
        Frequency::Daily => Some(Rule::Daily),
        Frequency::Weekly => weekday.map(Rule::Weekly),
        Frequency::Monthly => day.map(Rule::Monthly),
        Frequency::Cron => cron.map(|c| Rule::Cron(Box::new(c))),
    }
}

/// 0 = Sunday ... 6 = Saturday.
fn weekday_of(d: i64) -> Weekday {
    match d {
        0 => Weekday::Sun,
        1 => Weekday::Mon,
        2 => Weekday::Tue,
        3 => Weekday::Wed,
        4 => Weekday::Thu,
        5 => Weekday::Fri,
        _ => Weekday::Sat,
    }
}

/// The longest an occurrence may last under `rule`; `None` for a one-off window.
fn period_of(rule: &Rule, starts_at: DateTime<Utc>) -> Option<Duration> {
    match rule {
        Rule::Once => None,
        Rule::Daily => Some(Duration::days(1)),
        Rule::Weekly(_) => Some(Duration::days(7)),
        Rule::Monthly(_) => Some(Duration::days(28)),
        Rule::Cron(cron) => {
            // The shortest gap between runs over a sample of them (a year of a daily pattern).
            let mut prev = cron_next_from(cron, starts_at)?;
            let mut shortest: Option<Duration> = None;
            for _ in 0..400 {
                let Some(next) = cron_next_from(cron, prev + Duration::milliseconds(1)) else {
                    break;
                };
                let gap = next - prev;
                shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
                prev = next;
            }
            shortest
        }
    }
}

/// The first run of `cron` at or after `t`: a wall-clock time the pattern names, or the end
/// of a spring-forward gap that swallowed one (a window whose start the gap swallowed still
/// opens, whatever the pattern). The logic is `push`'s, shared with push deadlines.
fn cron_next_from(cron: &CronSchedule, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    cron.next_run_from(t, GapRuns::AtGapEnd)
}

fn matches_date(rule: &Rule, date: NaiveDate) -> bool {
    match rule {
        Rule::Daily => true,
        Rule::Weekly(w) => date.weekday() == *w,
        Rule::Monthly(d) => date.day() == *d,
        Rule::Once | Rule::Cron(_) => false,
    }
}

/// The instant of a local wall-clock time: the earlier one when it is ambiguous, the first
/// instant after the gap when it does not exist.
pub fn resolve(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(a, b) => Some(a.min(b).with_timezone(&Utc)),
        LocalResult::None => {
            // The first valid local time after the gap maps to the instant the gap ends.
            // Gaps are whole minutes in practice (up to a day, for a zone that skipped one);
            // the last step refines to the second for historical offsets.
            let valid = |l: NaiveDateTime| tz.from_local_datetime(&l).earliest();
            let mut probe = local;
            for _ in 0..(48 * 60) {
                let next = probe + Duration::minutes(1);
                if valid(next).is_some() {
                    for s in 1..=60 {
                        let l = probe + Duration::seconds(s);
                        if let Some(t) = valid(l) {
                            return Some(t.with_timezone(&Utc));
                        }
                    }
                }
                probe = next;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests;
