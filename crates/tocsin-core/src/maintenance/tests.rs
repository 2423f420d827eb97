use super::*;
use proptest::prelude::*;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .single()
        .unwrap_or_else(|| panic!("bad date"))
}

fn local(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    let date = NaiveDate::from_ymd_opt(y, mo, d).unwrap_or_else(|| panic!("bad date"));
    let time = NaiveTime::from_hms_opt(h, mi, 0).unwrap_or_else(|| panic!("bad time"));
    resolve(tz, date.and_time(time)).unwrap_or_else(|| panic!("unresolvable"))
}

fn rec(frequency: Frequency) -> Recurring {
    Recurring {
        frequency,
        day_of_week: None,
        day_of_month: None,
        expression: None,
    }
}

fn window(start: DateTime<Utc>, minutes: i64, tz: &str, recurring: Option<Recurring>) -> Window {
    Window::new(
        start,
        start + Duration::minutes(minutes),
        tz,
        recurring.as_ref(),
    )
    .unwrap_or_else(|e| panic!("invalid window: {e:?}"))
}

fn fields(r: Result<Window, Vec<WindowError>>) -> Vec<&'static str> {
    r.err()
        .unwrap_or_default()
        .iter()
        .map(WindowError::field)
        .collect()
}

#[test]
fn one_off_is_active_in_its_half_open_range() {
    let w = window(utc(2026, 3, 1, 10, 0), 60, "UTC", None);
    assert_eq!(w.active_until(utc(2026, 3, 1, 9, 59)), None);
    assert_eq!(
        w.active_until(utc(2026, 3, 1, 10, 0)),
        Some(utc(2026, 3, 1, 11, 0))
    );
    assert_eq!(w.active_until(utc(2026, 3, 1, 11, 0)), None);
    assert_eq!(
        w.next_start_after(utc(2026, 1, 1, 0, 0)),
        Some(utc(2026, 3, 1, 10, 0))
    );
    assert_eq!(w.next_start_after(utc(2026, 3, 1, 10, 0)), None);
    assert_eq!(
        w.next_boundary_after(utc(2026, 3, 1, 10, 30)),
        Some(utc(2026, 3, 1, 11, 0))
    );
    assert_eq!(w.next_boundary_after(utc(2026, 3, 1, 11, 0)), None);
}

#[test]
fn validation_names_each_field() {
    let s = utc(2026, 3, 1, 10, 0);
    assert_eq!(fields(Window::new(s, s, "UTC", None)), vec!["endsAt"]);
    assert_eq!(
        fields(Window::new(s, s - Duration::hours(1), "Mars/Olympus", None)),
        vec!["endsAt", "timezone"]
    );
    let e = s + Duration::hours(1);
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&rec(Frequency::Weekly)))),
        vec!["recurring.dayOfWeek"]
    );
    let mut r = rec(Frequency::Daily);
    r.day_of_week = Some(1);
    r.expression = Some("0 2 * * *".into());
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&r))),
        vec!["recurring.dayOfWeek", "recurring.expression"]
    );
    let mut r = rec(Frequency::Weekly);
    r.day_of_week = Some(7);
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&r))),
        vec!["recurring.dayOfWeek"]
    );
    let mut r = rec(Frequency::Monthly);
    r.day_of_month = Some(0);
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&r))),
        vec!["recurring.dayOfMonth"]
    );
    let mut r = rec(Frequency::Cron);
    r.expression = Some("not cron".into());
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&r))),
        vec!["recurring.expression"]
    );
    r.expression = Some(format!("0 2 * * *{}", " ".repeat(100)));
    assert_eq!(
        fields(Window::new(s, e, "UTC", Some(&r))),
        vec!["recurring.expression"]
    );
    // Longer than the period.
    let long = s + Duration::hours(25);
    assert_eq!(
        fields(Window::new(s, long, "UTC", Some(&rec(Frequency::Daily)))),
        vec!["endsAt"]
    );
    let mut r = rec(Frequency::Cron);
    r.expression = Some("0 */6 * * *".into());
    assert_eq!(
        fields(Window::new(s, s + Duration::hours(7), "UTC", Some(&r))),
        vec!["endsAt"]
    );
    assert!(Window::new(s, s + Duration::hours(6), "UTC", Some(&r)).is_ok());
    assert!(Window::new(
        s,
        s + Duration::hours(24),
        "UTC",
        Some(&rec(Frequency::Daily))
    )
    .is_ok());
}

#[test]
fn weekly_starts_on_its_day_from_starts_at_on() {
    // 2026-03-04 is a Wednesday; the rule names Sunday (0).
    let mut r = rec(Frequency::Weekly);
    r.day_of_week = Some(0);
    let w = window(utc(2026, 3, 4, 22, 0), 120, "UTC", Some(r));
    let occ = w.occurrences(utc(2026, 3, 1, 0, 0), utc(2026, 3, 20, 0, 0), 10);
    assert_eq!(
        occ.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![utc(2026, 3, 8, 22, 0), utc(2026, 3, 15, 22, 0)]
    );
    assert_eq!(w.active_until(utc(2026, 3, 4, 22, 30)), None);
    assert_eq!(
        w.active_until(utc(2026, 3, 8, 23, 59)),
        Some(utc(2026, 3, 9, 0, 0))
    );
}

#[test]
fn monthly_skips_months_without_the_day() {
    let mut r = rec(Frequency::Monthly);
    r.day_of_month = Some(31);
    let w = window(utc(2026, 1, 31, 1, 0), 60, "UTC", Some(r));
    let occ = w.occurrences(utc(2026, 1, 1, 0, 0), utc(2026, 9, 1, 0, 0), 20);
    assert_eq!(
        occ.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![
            utc(2026, 1, 31, 1, 0),
            utc(2026, 3, 31, 1, 0),
            utc(2026, 5, 31, 1, 0),
            utc(2026, 7, 31, 1, 0),
            utc(2026, 8, 31, 1, 0),
        ]
    );
}

#[test]
fn daily_keeps_wall_clock_time_across_dst_in_berlin() {
    let berlin = Tz::Europe__Berlin;
    // 02:30 local does not exist on 2026-03-29: that day it starts at 03:00 CEST (01:00Z).
    let w = window(
        local(berlin, 2026, 3, 27, 2, 30),
        60,
        "Europe/Berlin",
        Some(rec(Frequency::Daily)),
    );
    let starts: Vec<_> = w
        .occurrences(utc(2026, 3, 27, 0, 0), utc(2026, 3, 31, 0, 0), 10)
        .into_iter()
        .map(|o| o.0)
        .collect();
    assert_eq!(
        starts,
        vec![
            utc(2026, 3, 27, 1, 30),
            utc(2026, 3, 28, 1, 30),
            utc(2026, 3, 29, 1, 0),
            utc(2026, 3, 30, 0, 30),
        ]
    );
    // 02:30 on 2026-10-25 happens twice: the earlier (CEST, 00:30Z) is taken.
    let w = window(
        local(berlin, 2026, 10, 24, 2, 30),
        30,
        "Europe/Berlin",
        Some(rec(Frequency::Daily)),
    );
    assert_eq!(
        w.next_start_after(utc(2026, 10, 24, 12, 0)),
        Some(utc(2026, 10, 25, 0, 30))
    );
}

#[test]
fn cron_windows_follow_the_expression_in_their_zone() {
    let mut r = rec(Frequency::Cron);
    r.expression = Some("0 2 * * 1-5".into()); // 02:00 New York, weekdays
    let w = window(utc(2026, 3, 1, 0, 0), 30, "America/New_York", Some(r));
    // Friday 2026-03-06 02:00 EST = 07:00Z; next is Monday 2026-03-09 02:00 EDT = 06:00Z.
    assert_eq!(
        w.next_start_after(utc(2026, 3, 6, 0, 0)),
        Some(utc(2026, 3, 6, 7, 0))
    );
    assert_eq!(
        w.next_start_after(utc(2026, 3, 6, 7, 0)),
        Some(utc(2026, 3, 9, 6, 0))
    );
    assert_eq!(
        w.active_until(utc(2026, 3, 6, 7, 29)),
        Some(utc(2026, 3, 6, 7, 30))
    );
    assert_eq!(w.active_until(utc(2026, 3, 7, 7, 10)), None);
    // 02:30 does not exist on Sunday 2026-03-08: that run starts when the gap ends, 03:00 EDT.
    let mut r = rec(Frequency::Cron);
    r.expression = Some("30 2 * * *".into());
    let w = window(utc(2026, 3, 1, 0, 0), 30, "America/New_York", Some(r));
    assert_eq!(
        w.next_start_after(utc(2026, 3, 7, 12, 0)),
        Some(utc(2026, 3, 8, 7, 0))
    );
    // A pattern that names no time in the gap gets no run at its end.
    let mut r = rec(Frequency::Cron);
    r.expression = Some("23 1 * * *".into());
    let w = window(utc(2026, 3, 1, 0, 0), 30, "America/New_York", Some(r));
    assert_eq!(
        w.next_start_after(utc(2026, 3, 8, 6, 23)),
        Some(utc(2026, 3, 9, 5, 23))
    );
}

// ---------------------------------------------------------------------------------------------
// Properties

const ZONES: [&str; 3] = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"];

fn zone() -> impl Strategy<Value = &'static str> {
    prop::sample::select(ZONES.to_vec())
}

/// A start within 2024-2030, at a whole minute (the wall-clock times DST changes hit).
fn start() -> impl Strategy<Value = DateTime<Utc>> {
    (1_704_067_200i64..1_893_456_000i64)
        .prop_map(|s| DateTime::<Utc>::from_timestamp(s - s.rem_euclid(60), 0).unwrap_or_default())
}

fn rule() -> impl Strategy<Value = Recurring> {
    prop_oneof![
        Just(rec(Frequency::Daily)),
        (0i64..7).prop_map(|d| Recurring {
            day_of_week: Some(d),
            ..rec(Frequency::Weekly)
        }),
        (1i64..32).prop_map(|d| Recurring {
            day_of_month: Some(d),
            ..rec(Frequency::Monthly)
        }),
    ]
}

/// Whether `t` (an occurrence start) is the wall-clock time `want` on its local day, or the
/// first instant after a gap that swallowed `want` that day.
fn has_wall_clock(tz: Tz, t: DateTime<Utc>, want: NaiveTime) -> bool {
    let l = t.with_timezone(&tz);
    if l.time() == want {
        return true;
    }
    let in_gap = tz
        .from_local_datetime(&l.date_naive().and_time(want))
        .earliest()
        .is_none();
    // Just before the start, local time was earlier than `want` (the clock jumped over it).
    let before = (t - Duration::seconds(1)).with_timezone(&tz);
    in_gap && before.time() < want && l.time() > want
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_occurrence_starts_at_the_wall_clock_time_of_starts_at(
        tz in zone(), s in start(), minutes in 1i64..(24 * 60), r in rule()
    ) {
        let w = window(s, minutes, tz, Some(r.clone()));
        let zone = w.timezone();
        let want = s.with_timezone(&zone).time();
        let occ = w.occurrences(s, s + Duration::days(800), 40);
        prop_assert!(!occ.is_empty());
        let mut prev: Option<NaiveDate> = None;
        for (a, b) in &occ {
            prop_assert!(*a >= s);
            prop_assert_eq!(*b - *a, Duration::minutes(minutes));
            prop_assert!(has_wall_clock(zone, *a, want), "{a} in {tz} is not {want}");
            let date = a.with_timezone(&zone).date_naive();
            match r.frequency {
                Frequency::Daily => {
                    if let Some(p) = prev { prop_assert_eq!(date - p, Duration::days(1)); }
                }
                Frequency::Weekly => {
                    prop_assert_eq!(date.weekday().num_days_from_sunday() as i64, r.day_of_week.unwrap_or(-1));
                    if let Some(p) = prev { prop_assert_eq!(date - p, Duration::days(7)); }
                }
                Frequency::Monthly => {
                    prop_assert_eq!(i64::from(date.day()), r.day_of_month.unwrap_or(-1));
                    if let Some(p) = prev {
                        // No month in between has that day: it was skipped, not moved.
                        let mut probe = NaiveDate::from_ymd_opt(p.year(), p.month(), 1).unwrap_or(p);
                        loop {
                            probe = probe.checked_add_months(chrono::Months::new(1)).unwrap_or(date);
                            if probe.year() == date.year() && probe.month() == date.month() { break; }
                            prop_assert!(probe.with_day(date.day()).is_none(),
                                "{probe} had day {} but was skipped", date.day());
                        }
                    }
                }
                Frequency::Cron => {}
            }
            prev = Some(date);
        }
    }

    #[test]
    fn active_agrees_with_the_occurrence_list(
        tz in zone(), s in start(), minutes in 1i64..(24 * 60), r in rule(),
        probes in prop::collection::vec(0i64..(60 * 86_400), 1..30)
    ) {
        let w = window(s, minutes, tz, Some(r));
        let occ = w.occurrences(s - Duration::days(1), s + Duration::days(62), 100);
        for p in probes {
            let t = s - Duration::days(1) + Duration::seconds(p);
            let expected = occ.iter().filter(|(a, b)| *a <= t && t < *b).map(|o| o.1).max();
            prop_assert_eq!(w.active_until(t), expected, "at {}", t);
            let end = s + Duration::days(62);
            match occ.iter().map(|o| o.0).find(|a| *a > t) {
                Some(next) => prop_assert_eq!(w.next_start_after(t), Some(next), "next after {}", t),
                // Beyond the list: later than its range, or never.
                None => prop_assert!(w.next_start_after(t).is_none_or(|n| n >= end)),
            }
        }
    }

    #[test]
    fn boundaries_walk_every_occurrence(
        tz in zone(), s in start(), minutes in 1i64..(24 * 60), r in rule()
    ) {
        let w = window(s, minutes, tz, Some(r));
        let occ = w.occurrences(s, s + Duration::days(90), 200);
        // Walking boundary to boundary visits every start and end, in order.
        let mut t = s - Duration::seconds(1);
        let mut walked = Vec::new();
        while let Some(b) = w.next_boundary_after(t) {
            if b >= s + Duration::days(90) { break; }
            walked.push(b);
            t = b;
        }
        // Every start, and every end not inside another occurrence (DST can make a long daily
        // window overlap the next one; the window then stays active until the later end).
        let inside = |x: DateTime<Utc>| occ.iter().any(|(a, b)| *a <= x && x < *b);
        let mut expected: Vec<_> = occ
            .iter()
            .flat_map(|(a, b)| [*a, *b])
            .filter(|x| *x < s + Duration::days(90))
            .filter(|x| occ.iter().any(|o| o.0 == *x) || !inside(*x))
            .collect();
        expected.sort();
        expected.dedup();
        prop_assert_eq!(walked, expected);
    }

    #[test]
    fn cron_windows_agree_with_their_occurrences(
        tz in zone(), s in start(), hour in 0u32..24, minute in 0u32..60, minutes in 1i64..120,
        probes in prop::collection::vec(0i64..(10 * 86_400), 1..20)
    ) {
        let mut r = rec(Frequency::Cron);
        r.expression = Some(format!("{minute} {hour} * * *"));
        let w = window(s, minutes, tz, Some(r));
        let occ = w.occurrences(s, s + Duration::days(11), 40);
        prop_assert!(occ.len() >= 9);
        for (a, _) in &occ {
            let want = NaiveTime::from_hms_opt(hour, minute, 0).unwrap_or_default();
            prop_assert!(has_wall_clock(w.timezone(), *a, want), "{a} is not {want} in {tz}");
        }
        for p in probes {
            let t = s + Duration::seconds(p);
            let expected = occ.iter().filter(|(a, b)| *a <= t && t < *b).map(|o| o.1).max();
            prop_assert_eq!(w.active_until(t), expected);
        }
    }
}
