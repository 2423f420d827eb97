use super::*;
use crate::state::{push_down, step, MonitorState, StateSettings, Status, Verdict};
use chrono::{Datelike, NaiveDate, TimeZone, Timelike, Weekday};
use chrono_tz::Europe::Berlin;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    match Utc.with_ymd_and_hms(y, mo, d, h, mi, s) {
        chrono::LocalResult::Single(t) => t,
        _ => panic!("bad test time"),
    }
}

fn berlin(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    match Berlin.with_ymd_and_hms(y, mo, d, h, mi, s) {
        chrono::LocalResult::Single(t) => t.with_timezone(&Utc),
        _ => panic!("ambiguous or missing Berlin time"),
    }
}

fn weekdays_2am(grace: i64) -> PushSchedule {
    match PushSchedule::cron("0 2 * * 1-5", "Europe/Berlin", grace) {
        Ok(s) => s,
        Err(e) => panic!("{e:?}"),
    }
}

fn config(json: &str) -> Result<PushSchedule, Vec<PushConfigError>> {
    let cfg: PushConfig = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => panic!("{json}: {e}"),
    };
    PushSchedule::from_config(&cfg)
}

fn fields(r: Result<PushSchedule, Vec<PushConfigError>>) -> Vec<&'static str> {
    match r {
        Ok(s) => panic!("expected errors, got {s:?}"),
        Err(es) => es.iter().map(PushConfigError::field).collect(),
    }
}

#[test]
fn parses_the_spec_example() {
    let s = config(r#"{"schedule": "0 2 * * 1-5", "timezone": "Europe/Berlin"}"#);
    let s = s.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.grace_secs, 60);
    match &s.expect {
        PushExpectation::Cron(c) => {
            assert_eq!(c.expression(), "0 2 * * 1-5");
            assert_eq!(c.timezone(), Berlin);
        }
        other => panic!("{other:?}"),
    }
    // The normalized config round-trips.
    let back = PushSchedule::from_config(&s.to_config()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(back, s);
}

#[test]
fn parses_interval_and_defaults() {
    let s = config(r#"{"interval": 300}"#).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(s.expect, PushExpectation::Interval { secs: 300 });
    assert_eq!(s.grace_secs, DEFAULT_GRACE_SECS);
    // No time zone means UTC.
    let s = config(r#"{"schedule": "@daily", "grace": 0}"#).unwrap_or_else(|e| panic!("{e:?}"));
    match &s.expect {
        PushExpectation::Cron(c) => assert_eq!(c.timezone(), Tz::UTC),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.grace_secs, 0);
    // Bounds are inclusive.
    assert!(config(r#"{"interval": 1, "grace": 31622400}"#).is_ok());
    assert!(config(r#"{"interval": 31622400}"#).is_ok());
    // Names and lists are standard cron.
    assert!(config(r#"{"schedule": "15,45 8-18/2 * JAN-MAR MON-FRI"}"#).is_ok());
}

#[test]
fn precise_field_errors() {
    assert_eq!(
        fields(config(r#"{"schedule": "0 25 * * *"}"#)),
        ["schedule"]
    );
    assert_eq!(fields(config(r#"{"schedule": "* * * *"}"#)), ["schedule"]);
    assert_eq!(
        fields(config(r#"{"schedule": "0 0 2 * * *"}"#)),
        ["schedule"],
        "no seconds"
    );
    assert_eq!(fields(config(r#"{"schedule": ""}"#)), ["schedule"]);
    assert_eq!(fields(config(r#"{"schedule": "nonsense"}"#)), ["schedule"]);
    assert_eq!(
        fields(config(r#"{"schedule": "0 0 31 2 *"}"#)),
        ["schedule"],
        "never fires"
    );
    assert_eq!(
        fields(config(
            r#"{"schedule": "0 2 * * *", "timezone": "Mars/Olympus"}"#
        )),
        ["timezone"]
    );
    assert_eq!(
        fields(config(r#"{"interval": 60, "timezone": "Nowhere"}"#)),
        ["timezone"]
    );
    assert_eq!(
        fields(config(r#"{"interval": 60, "grace": -1}"#)),
        ["grace"]
    );
    assert_eq!(
        fields(config(r#"{"interval": 60, "grace": 31622401}"#)),
        ["grace"]
    );
    assert_eq!(fields(config(r#"{"interval": 0}"#)), ["interval"]);
    assert_eq!(fields(config(r#"{"interval": -5}"#)), ["interval"]);
    assert_eq!(fields(config(r#"{"interval": 31622401}"#)), ["interval"]);
    assert_eq!(fields(config(r#"{}"#)), ["interval"]);
    assert_eq!(
        fields(config(r#"{"interval": 60, "schedule": "0 2 * * *"}"#)),
        ["schedule"]
    );
    // Every problem at once, in key order.
    assert_eq!(
        fields(config(
            r#"{"schedule": "0 99 * * *", "timezone": "Bad/Zone", "grace": -3}"#
        )),
        ["schedule", "timezone", "grace"]
    );
    // Messages say what is wrong.
    let errs =
        config(r#"{"schedule": "0 2 * * *", "timezone": "Mars/Olympus", "grace": 99999999}"#)
            .err()
            .unwrap_or_default();
    let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        [
            "unknown time zone \"Mars/Olympus\" (expected an IANA name such as Europe/Berlin)",
            "grace must be between 0 and 31622400 seconds, got 99999999",
        ]
    );
    let bad = config(r#"{"schedule": "0 25 * * *"}"#)
        .err()
        .unwrap_or_default();
    assert!(
        matches!(&bad[..], [PushConfigError::InvalidCron { expression, .. }] if expression == "0 25 * * *"),
        "{bad:?}"
    );
}

#[test]
fn interval_deadlines() {
    let s = PushSchedule::interval(300, 60).unwrap_or_else(|e| panic!("{e:?}"));
    let start = utc(2025, 1, 1, 0, 0, 0);
    // No push yet: counted from the start.
    assert_eq!(deadline(&s, None, start), Some(utc(2025, 1, 1, 0, 6, 0)));
    // From the last push.
    let push = utc(2025, 1, 1, 0, 4, 30);
    assert_eq!(
        deadline(&s, Some(push), start),
        Some(utc(2025, 1, 1, 0, 10, 30))
    );
    // Resumed after the last push: the resume time counts, not the stale push.
    let resumed = utc(2025, 1, 2, 12, 0, 0);
    assert_eq!(
        deadline(&s, Some(push), resumed),
        Some(utc(2025, 1, 2, 12, 6, 0))
    );
    // Overdue strictly after the deadline.
    let d = utc(2025, 1, 1, 0, 10, 30);
    assert!(!is_overdue(&s, Some(push), start, d));
    assert!(is_overdue(
        &s,
        Some(push),
        start,
        d + Duration::milliseconds(1)
    ));
}

#[test]
fn grace_zero() {
    let s = PushSchedule::interval(60, 0).unwrap_or_else(|e| panic!("{e:?}"));
    let push = utc(2025, 1, 1, 0, 0, 0);
    assert_eq!(
        deadline(&s, Some(push), push),
        Some(utc(2025, 1, 1, 0, 1, 0))
    );
    assert!(!is_overdue(&s, Some(push), push, utc(2025, 1, 1, 0, 1, 0)));
    assert!(is_overdue(&s, Some(push), push, utc(2025, 1, 1, 0, 1, 1)));

    // Cron with no grace: the deadline is the run itself.
    let c = weekdays_2am(0);
    let fri = berlin(2025, 6, 6, 2, 0, 5);
    assert_eq!(
        deadline(&c, Some(fri), fri),
        Some(berlin(2025, 6, 9, 2, 0, 0))
    );
}

#[test]
fn cron_deadline_examples() {
    let s = weekdays_2am(60);
    // Pushed Monday 02:00:07: expected again Tuesday 02:00, deadline 02:01.
    let mon = berlin(2025, 6, 2, 2, 0, 7);
    assert_eq!(
        deadline(&s, Some(mon), mon),
        Some(berlin(2025, 6, 3, 2, 1, 0))
    );
    // Pushed Friday: next expected Monday.
    let fri = berlin(2025, 6, 6, 2, 0, 3);
    assert_eq!(
        deadline(&s, Some(fri), fri),
        Some(berlin(2025, 6, 9, 2, 1, 0))
    );
    // Created on Saturday afternoon: nothing expected before Monday.
    let sat = berlin(2025, 6, 7, 15, 0, 0);
    assert_eq!(deadline(&s, None, sat), Some(berlin(2025, 6, 9, 2, 1, 0)));
    // A push exactly on the run (to the millisecond) satisfies that run.
    let exact = berlin(2025, 6, 3, 2, 0, 0) + Duration::milliseconds(999);
    assert_eq!(
        deadline(&s, Some(exact), mon),
        Some(berlin(2025, 6, 4, 2, 1, 0))
    );
    // A push just before the run does not: that run is still expected.
    let early = berlin(2025, 6, 3, 1, 59, 59) + Duration::milliseconds(999);
    assert_eq!(
        deadline(&s, Some(early), mon),
        Some(berlin(2025, 6, 3, 2, 1, 0))
    );
}

#[test]
fn weekday_schedule_never_has_a_weekend_deadline() {
    // Every base in a quarter-hour grid over 6 weeks, across the spring DST change.
    let s = weekdays_2am(60);
    let start = berlin(2025, 3, 3, 0, 0, 0);
    let end = berlin(2025, 4, 14, 0, 0, 0);
    let mut base = start;
    let mut checked = 0;
    while base < end {
        let d = deadline(&s, Some(base), base).unwrap_or_else(|| panic!("no deadline from {base}"));
        let local = d.with_timezone(&Berlin);
        assert!(
            !matches!(local.weekday(), Weekday::Sat | Weekday::Sun),
            "deadline {local} from base {base} falls on a weekend"
        );
        assert_eq!(
            (local.hour(), local.minute(), local.second()),
            (2, 1, 0),
            "from {base}"
        );
        assert!(d > base && d - base <= Duration::days(3) + Duration::minutes(2));
        base += Duration::minutes(15);
        checked += 1;
    }
    // 42 days, one of them 23 hours long.
    assert_eq!(checked, (42 * 24 - 1) * 4);
    assert_eq!(checked, (end - start).num_minutes() / 15);
}

/// Drives the clock minute by minute and the state machine with it: the job pushes at
/// 02:00:20 Berlin time on weekdays. Returns every DOWN event time.
fn simulate(skip: &[NaiveDate], from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let s = weekdays_2am(60);
    let settings = StateSettings::default();
    let mut state = MonitorState::initial();
    let mut last_push: Option<DateTime<Utc>> = None;
    let mut downs = Vec::new();
    let mut now = from;
    while now <= to {
        let local = now.with_timezone(&Berlin);
        let weekday = !matches!(local.weekday(), Weekday::Sat | Weekday::Sun);
        // The job's push lands at 02:00:20, between two clock ticks.
        if weekday
            && local.hour() == 2
            && local.minute() == 0
            && !skip.contains(&local.date_naive())
        {
            let at = now + Duration::seconds(20);
            last_push = Some(at);
            state = step(&state, &settings, Verdict::Up.into(), at).state;
        }
        if is_overdue(&s, last_push, from, now) && state.status != Status::Down {
            let tr = push_down(&state, false, now);
            if tr.event.is_some() {
                downs.push(now);
            }
            state = tr.state;
        }
        now += Duration::minutes(1);
    }
    downs
}

#[test]
fn weekday_job_never_pages_on_weekends() {
    // Three weeks spanning the spring DST change (Sunday 2025-03-30), job never fails.
    let from = berlin(2025, 3, 20, 12, 0, 0);
    let to = berlin(2025, 4, 10, 12, 0, 0);
    assert_eq!(simulate(&[], from, to), Vec::<DateTime<Utc>>::new());
    // The autumn change (Sunday 2025-10-26).
    let from = berlin(2025, 10, 16, 12, 0, 0);
    let to = berlin(2025, 11, 6, 12, 0, 0);
    assert_eq!(simulate(&[], from, to), Vec::<DateTime<Utc>>::new());
}

#[test]
fn missed_weekday_run_pages_at_that_run_plus_grace() {
    let from = berlin(2025, 3, 20, 12, 0, 0);
    let to = berlin(2025, 4, 10, 12, 0, 0);
    // Friday before the DST change is skipped: DOWN at 02:02 (first tick past 02:01:00),
    // not on the weekend.
    let fri = NaiveDate::from_ymd_opt(2025, 3, 28).unwrap_or_default();
    assert_eq!(simulate(&[fri], from, to), [berlin(2025, 3, 28, 2, 2, 0)]);
    // Monday after the change (now CEST, UTC+2) is skipped.
    let mon = NaiveDate::from_ymd_opt(2025, 3, 31).unwrap_or_default();
    let downs = simulate(&[mon], from, to);
    assert_eq!(downs, [berlin(2025, 3, 31, 2, 2, 0)]);
    assert_eq!(downs[0], utc(2025, 3, 31, 0, 2, 0));
}

#[test]
fn dst_spring_forward_gap() {
    // 2025-03-30 02:00 CET jumps to 03:00 CEST: a daily 02:30 run is expected at 03:00.
    let s =
        PushSchedule::cron("30 2 * * *", "Europe/Berlin", 60).unwrap_or_else(|e| panic!("{e:?}"));
    let sat = berlin(2025, 3, 29, 2, 30, 10);
    assert_eq!(sat, utc(2025, 3, 29, 1, 30, 10));
    assert_eq!(
        deadline(&s, Some(sat), sat),
        Some(utc(2025, 3, 30, 1, 1, 0))
    );
    // The day after, 02:30 CEST is 00:30 UTC.
    let sun = utc(2025, 3, 30, 1, 0, 15);
    assert_eq!(
        deadline(&s, Some(sun), sun),
        Some(utc(2025, 3, 31, 0, 31, 0))
    );
    // Weekday schedule across the change: Friday 02:00 CET = 01:00 UTC, Monday 02:00 CEST =
    // 00:00 UTC.
    let w = weekdays_2am(60);
    let fri = utc(2025, 3, 28, 1, 0, 20);
    assert_eq!(
        deadline(&w, Some(fri), fri),
        Some(utc(2025, 3, 31, 0, 1, 0))
    );
}

#[test]
fn dst_fall_back_repeated_hour() {
    // 2025-10-26 03:00 CEST falls back to 02:00 CET: 02:30 happens twice.
    let s =
        PushSchedule::cron("30 2 * * *", "Europe/Berlin", 60).unwrap_or_else(|e| panic!("{e:?}"));
    let sat = utc(2025, 10, 25, 0, 30, 10); // 02:30:10 CEST
                                            // Expected at the first 02:30 (CEST, 00:30 UTC).
    assert_eq!(
        deadline(&s, Some(sat), sat),
        Some(utc(2025, 10, 26, 0, 31, 0))
    );
    // Once pushed at the first 02:30, the repeat does not count as another expected run.
    let first = utc(2025, 10, 26, 0, 30, 20);
    assert_eq!(
        deadline(&s, Some(first), first),
        Some(utc(2025, 10, 27, 1, 31, 0))
    );
    // Hourly across the repeat: the deadline is never earlier than an hour of wall time.
    let h =
        PushSchedule::cron("0 * * * *", "Europe/Berlin", 60).unwrap_or_else(|e| panic!("{e:?}"));
    let mut base = utc(2025, 10, 25, 22, 0, 5);
    while base < utc(2025, 10, 26, 4, 0, 0) {
        let d = deadline(&h, Some(base), base).unwrap_or_else(|| panic!("none from {base}"));
        assert!(d - base >= Duration::minutes(59), "{base} -> {d}");
        assert!(d - base <= Duration::minutes(121), "{base} -> {d}");
        base += Duration::hours(1);
    }
}

#[test]
fn other_time_zones() {
    // The same expression in different zones is a different instant.
    let ny =
        PushSchedule::cron("0 9 * * *", "America/New_York", 0).unwrap_or_else(|e| panic!("{e:?}"));
    let tokyo =
        PushSchedule::cron("0 9 * * *", "Asia/Tokyo", 0).unwrap_or_else(|e| panic!("{e:?}"));
    let base = utc(2025, 7, 1, 0, 0, 0);
    assert_eq!(deadline(&ny, None, base), Some(utc(2025, 7, 1, 13, 0, 0)));
    assert_eq!(deadline(&tokyo, None, base), Some(utc(2025, 7, 2, 0, 0, 0)));
    // Leap-day-only schedules are fine; they just wait.
    let leap = PushSchedule::cron("0 0 29 2 *", "UTC", 0).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(deadline(&leap, None, base), Some(utc(2028, 2, 29, 0, 0, 0)));
}

#[test]
fn config_serde_shape() -> Result<(), serde_json::Error> {
    let s = weekdays_2am(120);
    assert_eq!(
        serde_json::to_value(s.to_config())?,
        serde_json::json!({"schedule": "0 2 * * 1-5", "timezone": "Europe/Berlin", "grace": 120})
    );
    let i = PushSchedule::interval(90, 60).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        serde_json::to_value(i.to_config())?,
        serde_json::json!({"interval": 90, "grace": 60})
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Spring-forward gaps: no phantom runs, no runs at times that do not exist.

fn cron_schedule(expression: &str, tz: &str) -> PushSchedule {
    PushSchedule::cron(expression, tz, 60).unwrap_or_else(|e| panic!("{expression}: {e:?}"))
}

#[test]
fn a_gap_gives_no_phantom_run_to_a_pattern_that_names_nothing_in_it() {
    // 2025-03-30: Berlin jumps from 02:00 CET to 03:00 CEST. A daily 01:23 job has run
    // (00:23 UTC); the cron crate alone expects a run at 03:00 CEST, and the monitor would
    // page at 03:01 though the job is fine. The next run is Monday 01:23 CEST.
    let s = cron_schedule("23 1 * * *", "Europe/Berlin");
    let pushed = berlin(2025, 3, 30, 1, 23, 10);
    assert_eq!(pushed, utc(2025, 3, 30, 0, 23, 10));
    assert_eq!(
        deadline(&s, Some(pushed), pushed),
        Some(utc(2025, 3, 30, 23, 24, 0))
    );
    // Every hour at :00 names 03:00 itself: that run is real.
    let h = cron_schedule("0 * * * *", "Europe/Berlin");
    let pushed = berlin(2025, 3, 30, 1, 0, 10);
    assert_eq!(
        deadline(&h, Some(pushed), pushed),
        Some(berlin(2025, 3, 30, 3, 1, 0))
    );
}

#[test]
fn a_fixed_time_job_swallowed_by_a_gap_is_expected_when_the_gap_ends() {
    // 02:30 does not exist in Berlin on 2025-03-30. Cron (and Healthchecks.io, which follows
    // it) runs the job once the clock has jumped, at 03:00 CEST: that is its expected
    // check-in, a time that exists; the run is not skipped.
    let s = cron_schedule("30 2 * * *", "Europe/Berlin");
    let saturday = berlin(2025, 3, 29, 2, 30, 10);
    let expected = deadline(&s, Some(saturday), saturday).unwrap_or_else(|| panic!("no deadline"))
        - Duration::seconds(60);
    assert_eq!(expected, berlin(2025, 3, 30, 3, 0, 0));
    // The job ran at 03:00: nothing is due before Monday 02:30 CEST.
    let ran = berlin(2025, 3, 30, 3, 0, 20);
    assert_eq!(
        deadline(&s, Some(ran), ran),
        Some(berlin(2025, 3, 31, 2, 31, 0))
    );
    // Several swallowed times of one fixed-time job: one run at the end of the gap.
    let two = cron_schedule("0,30 2 * * *", "Europe/Berlin");
    assert_eq!(
        deadline(&two, Some(saturday), saturday),
        Some(berlin(2025, 3, 30, 3, 1, 0))
    );
    // Lord Howe moves by half an hour (02:00 -> 02:30 on 2025-10-05).
    let lh = cron_schedule("15 2 * * *", "Australia/Lord_Howe");
    let before = utc(2025, 10, 4, 14, 0, 0);
    let expected = deadline(&lh, Some(before), before).unwrap_or_else(|| panic!("none"))
        - Duration::seconds(60);
    let local = expected.with_timezone(&chrono_tz::Australia::Lord_Howe);
    assert_eq!(
        (local.day(), local.hour(), local.minute()),
        (5, 2, 30),
        "{local}"
    );
}

#[test]
fn a_wildcard_job_has_no_run_in_a_gap() {
    // `30 * * * *` runs at :30 of every hour that exists: 01:30 CET, then 03:30 CEST. There
    // is no run at 03:00, which would page at 03:01 though the job runs at 03:30.
    let s = cron_schedule("30 * * * *", "Europe/Berlin");
    let pushed = berlin(2025, 3, 30, 1, 30, 10);
    assert_eq!(
        deadline(&s, Some(pushed), pushed),
        Some(berlin(2025, 3, 30, 3, 31, 0))
    );
    // Stepped minutes within the swallowed hour: the next run is the first one after it.
    let s = cron_schedule("*/20 2,4 * * *", "Europe/Berlin");
    let pushed = berlin(2025, 3, 29, 4, 40, 10);
    assert_eq!(
        deadline(&s, Some(pushed), pushed),
        Some(berlin(2025, 3, 30, 4, 1, 0))
    );
    // @hourly is a wildcard job, @daily a fixed-time one.
    let hourly = match &cron_schedule("@hourly", "UTC").expect {
        PushExpectation::Cron(c) => c.is_fixed_time(),
        other => panic!("{other:?}"),
    };
    let daily = match &cron_schedule("@daily", "UTC").expect {
        PushExpectation::Cron(c) => c.is_fixed_time(),
        other => panic!("{other:?}"),
    };
    assert_eq!((hourly, daily), (false, true));
}

/// A pattern family whose runs this test can tell without the cron crate: at `minutes` past
/// `hours` (`None`: every hour), every day.
#[derive(Debug, Clone)]
struct Pattern {
    minutes: Vec<u32>,
    hours: Option<Vec<u32>>,
    /// How the fields are written: whether either starts with `*`.
    expression: String,
}

impl Pattern {
    fn names(&self, local: chrono::NaiveDateTime) -> bool {
        self.minutes.contains(&local.minute())
            && self
                .hours
                .as_ref()
                .is_none_or(|hs| hs.contains(&local.hour()))
    }

    fn fixed_time(&self) -> bool {
        let mut f = self.expression.split_whitespace();
        !f.next().unwrap_or("*").starts_with('*') && !f.next().unwrap_or("*").starts_with('*')
    }
}

fn list(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn pattern() -> impl proptest::strategy::Strategy<Value = Pattern> {
    use proptest::prelude::*;
    let minute = 0u32..60;
    let hour = 0u32..24;
    prop_oneof![
        // Fixed time: `m h * * *`, `m h1,h2 * * *`.
        (minute.clone(), hour.clone()).prop_map(|(m, h)| Pattern {
            minutes: vec![m],
            hours: Some(vec![h]),
            expression: format!("{m} {h} * * *"),
        }),
        (minute.clone(), hour.clone(), hour.clone()).prop_map(|(m, a, b)| {
            let mut hs = vec![a, b];
            hs.sort_unstable();
            hs.dedup();
            Pattern {
                minutes: vec![m],
                hours: Some(hs.clone()),
                expression: format!("{m} {} * * *", list(&hs)),
            }
        }),
        // Wildcards: `m * * * *`, `*/k * * * *`, `*/k h * * *`.
        minute.clone().prop_map(|m| Pattern {
            minutes: vec![m],
            hours: None,
            expression: format!("{m} * * * *"),
        }),
        prop::sample::select(vec![5u32, 15, 20, 30]).prop_map(|k| Pattern {
            minutes: (0..60).step_by(k as usize).collect(),
            hours: None,
            expression: format!("*/{k} * * * *"),
        }),
        (prop::sample::select(vec![10u32, 20, 30]), hour).prop_map(|(k, h)| Pattern {
            minutes: (0..60).step_by(k as usize).collect(),
            hours: Some(vec![h]),
            expression: format!("*/{k} {h} * * *"),
        }),
    ]
}

/// Every spring-forward change of some zones in 2024-2030: (zone name, first instant after).
fn spring_forwards() -> Vec<(&'static str, DateTime<Utc>)> {
    use chrono::Offset;
    let mut out = Vec::new();
    for name in ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"] {
        let tz: Tz = name.parse().unwrap_or_else(|_| panic!("{name}"));
        let offset = |t: DateTime<Utc>| t.with_timezone(&tz).offset().fix().local_minus_utc();
        let mut t = utc(2024, 1, 1, 0, 0, 0);
        while t < utc(2031, 1, 1, 0, 0, 0) {
            let next = t + Duration::minutes(30);
            if offset(next) > offset(t) {
                // The change lies in (t, next]: find its minute.
                let mut m = t;
                while offset(m) == offset(t) {
                    m += Duration::minutes(1);
                }
                out.push((name, m));
            }
            t = next;
        }
    }
    out
}

/// The expected run after `base` told minute by minute on the UTC line: a minute whose wall
/// clock the pattern names, or, for a fixed-time pattern, the end of a gap that swallowed a
/// named time.
fn model(p: &Pattern, tz: Tz, base: DateTime<Utc>) -> DateTime<Utc> {
    let s = base.timestamp();
    let mut u = DateTime::<Utc>::from_timestamp(s - s.rem_euclid(60) + 60, 0)
        .unwrap_or_else(|| panic!("bad base"));
    for _ in 0..(3 * 24 * 60) {
        let local = u.with_timezone(&tz).naive_local();
        if p.names(local) {
            return u;
        }
        let before = (u - Duration::seconds(1)).with_timezone(&tz).naive_local();
        if p.fixed_time() && local - before > Duration::seconds(1) {
            let mut probe = before + Duration::seconds(1);
            while probe < local {
                if p.names(probe) {
                    return u;
                }
                probe += Duration::minutes(1);
            }
        }
        u += Duration::minutes(1);
    }
    panic!("no run within three days of {base}")
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

    /// Around every spring-forward change, the expected check-in is exactly cron's next run:
    /// never a time the gap swallowed, never a phantom run at the gap's end, a fixed-time run
    /// the gap swallowed expected when it ends, a wildcard one skipped.
    #[test]
    fn expected_check_ins_around_spring_forward_are_crons_runs(
        change in proptest::sample::select(spring_forwards()),
        p in pattern(),
        offset_secs in -(36i64 * 3600)..(36 * 3600),
    ) {
        let (zone, at) = change;
        let tz: Tz = zone.parse().unwrap_or_else(|_| panic!("{zone}"));
        let schedule = PushSchedule::cron(&p.expression, zone, 60)
            .unwrap_or_else(|e| panic!("{}: {e:?}", p.expression));
        let base = at + Duration::seconds(offset_secs);
        let want = model(&p, tz, base);
        let got = deadline(&schedule, Some(base), base).map(|d| d - Duration::seconds(60));
        proptest::prop_assert_eq!(got, Some(want), "{} in {} after {}", p.expression, zone, base);
        // The run is a wall-clock time of the zone that exists, strictly after the base.
        let local = want.with_timezone(&tz).naive_local();
        proptest::prop_assert!(tz.from_local_datetime(&local).single().is_some());
        proptest::prop_assert!(want > base);
    }
}

#[test]
fn status_is_case_insensitive() {
    assert_eq!(PushStatus::parse("UP"), Some(PushStatus::Up));
    assert_eq!(PushStatus::parse("Down"), Some(PushStatus::Down));
    assert_eq!(PushStatus::parse("fail"), None);
    assert_eq!(PushStatus::parse(""), None);
}
