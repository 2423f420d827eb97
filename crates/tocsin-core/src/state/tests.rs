use super::*;
use chrono::TimeZone;
use proptest::prelude::*;

fn t(ms: i64) -> DateTime<Utc> {
    match Utc.timestamp_millis_opt(ms) {
        chrono::LocalResult::Single(dt) => dt,
        _ => panic!("bad test time {ms}"),
    }
}

fn settings(conf: u32, rec: u32, min_ms: u64) -> StateSettings {
    StateSettings {
        confirmations_required: conf,
        recovery_confirmations_required: rec,
        min_failure_duration_ms: min_ms,
    }
}

fn st(status: Status, failures: u32, successes: u32, since: Option<i64>) -> MonitorState {
    MonitorState {
        status,
        consecutive_failures: failures,
        consecutive_successes: successes,
        pending_failure_since: since.map(t),
    }
}

use Status::{
    Changed as SC, Degraded as SDg, Down as SD, Maintenance as SM, Pending as SP, Up as SU,
};
use Verdict::{Changed as VC, Degraded as VDg, Down as VD, Up as VU};

struct Row {
    name: &'static str,
    from: MonitorState,
    settings: StateSettings,
    input: CycleInput,
    now: i64,
    to: MonitorState,
    event: Option<(EventKind, bool)>,
}

#[allow(clippy::too_many_lines)]
fn table() -> Vec<Row> {
    let s1 = settings(1, 1, 0);
    let s3 = settings(3, 2, 0);
    let s2min = settings(2, 1, 60_000);
    let n = CycleInput::new;
    let m = CycleInput::maintenance;
    vec![
        // From PENDING.
        Row {
            name: "pending + up -> UP (recorded, not a recovery)",
            from: MonitorState::initial(),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SU, 0, 1, None),
            event: Some((EventKind::Up, false)),
        },
        Row {
            name: "pending + degraded -> DEGRADED",
            from: MonitorState::initial(),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SDg, 0, 1, None),
            event: Some((EventKind::Degraded, true)),
        },
        Row {
            name: "pending + changed -> CHANGED",
            from: MonitorState::initial(),
            settings: s3,
            input: n(VC),
            now: 1000,
            to: st(SC, 0, 1, None),
            event: Some((EventKind::Changed, true)),
        },
        Row {
            name: "pending + first failure stays PENDING and starts the run",
            from: MonitorState::initial(),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SP, 1, 0, Some(1000)),
            event: None,
        },
        Row {
            name: "pending + confirmed failure -> DOWN",
            from: st(SP, 2, 0, Some(500)),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SD, 3, 0, Some(500)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "pending + failure with one confirmation -> DOWN",
            from: MonitorState::initial(),
            settings: s1,
            input: n(VD),
            now: 1000,
            to: st(SD, 1, 0, Some(1000)),
            event: Some((EventKind::Down, true)),
        },
        // From UP.
        Row {
            name: "up + up stays UP, counts",
            from: st(SU, 0, 4, None),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SU, 0, 5, None),
            event: None,
        },
        Row {
            name: "up + first failure stays UP",
            from: st(SU, 0, 4, None),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SU, 1, 0, Some(1000)),
            event: None,
        },
        Row {
            name: "up + second failure keeps the run start",
            from: st(SU, 1, 0, Some(1000)),
            settings: s3,
            input: n(VD),
            now: 2000,
            to: st(SU, 2, 0, Some(1000)),
            event: None,
        },
        Row {
            name: "up + third failure -> DOWN",
            from: st(SU, 2, 0, Some(1000)),
            settings: s3,
            input: n(VD),
            now: 3000,
            to: st(SD, 3, 0, Some(1000)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "up + confirmations met but min duration not -> still UP",
            from: st(SU, 1, 0, Some(0)),
            settings: s2min,
            input: n(VD),
            now: 59_999,
            to: st(SU, 2, 0, Some(0)),
            event: None,
        },
        Row {
            name: "up + confirmations and min duration met exactly -> DOWN",
            from: st(SU, 1, 0, Some(0)),
            settings: s2min,
            input: n(VD),
            now: 60_000,
            to: st(SD, 2, 0, Some(0)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "up + min duration met but confirmations not -> still UP",
            from: MonitorState {
                status: SU,
                ..MonitorState::initial()
            },
            settings: s2min,
            input: n(VD),
            now: 600_000,
            to: st(SU, 1, 0, Some(600_000)),
            event: None,
        },
        Row {
            name: "up + success mid-run resets failures and the run start",
            from: st(SU, 2, 0, Some(1000)),
            settings: s3,
            input: n(VU),
            now: 3000,
            to: st(SU, 0, 1, None),
            event: None,
        },
        Row {
            name: "up + degraded -> DEGRADED",
            from: st(SU, 0, 3, None),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SDg, 0, 4, None),
            event: Some((EventKind::Degraded, true)),
        },
        Row {
            name: "up + changed -> CHANGED",
            from: st(SU, 0, 3, None),
            settings: s3,
            input: n(VC),
            now: 1000,
            to: st(SC, 0, 4, None),
            event: Some((EventKind::Changed, true)),
        },
        // From DEGRADED.
        Row {
            name: "degraded + up -> UP (warning cleared, alerts)",
            from: st(SDg, 0, 2, None),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SU, 0, 3, None),
            event: Some((EventKind::Up, true)),
        },
        Row {
            name: "degraded + degraded stays",
            from: st(SDg, 0, 2, None),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SDg, 0, 3, None),
            event: None,
        },
        Row {
            name: "degraded + unconfirmed failure stays DEGRADED",
            from: st(SDg, 0, 2, None),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SDg, 1, 0, Some(1000)),
            event: None,
        },
        Row {
            name: "degraded + confirmed failure -> DOWN",
            from: st(SDg, 2, 0, Some(10)),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SD, 3, 0, Some(10)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "degraded + changed -> CHANGED",
            from: st(SDg, 0, 2, None),
            settings: s3,
            input: n(VC),
            now: 1000,
            to: st(SC, 0, 3, None),
            event: Some((EventKind::Changed, true)),
        },
        // From DOWN.
        Row {
            name: "down + failure stays DOWN, counts",
            from: st(SD, 3, 0, Some(10)),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SD, 4, 0, Some(10)),
            event: None,
        },
        Row {
            name: "down + first success (needs 2) stays DOWN",
            from: st(SD, 3, 0, Some(10)),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SD, 0, 1, None),
            event: None,
        },
        Row {
            name: "down + second success -> UP (recovery)",
            from: st(SD, 0, 1, None),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SU, 0, 2, None),
            event: Some((EventKind::Up, true)),
        },
        Row {
            name: "down + degraded counts as success and recovers to DEGRADED with `up`",
            from: st(SD, 0, 1, None),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SDg, 0, 2, None),
            event: Some((EventKind::Up, true)),
        },
        Row {
            name: "down + changed recovers to CHANGED with `up`",
            from: st(SD, 5, 0, Some(10)),
            settings: s1,
            input: n(VC),
            now: 1000,
            to: st(SC, 0, 1, None),
            event: Some((EventKind::Up, true)),
        },
        Row {
            name: "down + failure between successes restarts recovery and the run",
            from: st(SD, 0, 1, None),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SD, 1, 0, Some(1000)),
            event: None,
        },
        // From CHANGED (sticky).
        Row {
            name: "changed + up stays CHANGED",
            from: st(SC, 0, 1, None),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SC, 0, 2, None),
            event: None,
        },
        Row {
            name: "changed + degraded stays CHANGED",
            from: st(SC, 0, 1, None),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SC, 0, 2, None),
            event: None,
        },
        Row {
            name: "changed + changed stays CHANGED",
            from: st(SC, 0, 1, None),
            settings: s3,
            input: n(VC),
            now: 1000,
            to: st(SC, 0, 2, None),
            event: None,
        },
        Row {
            name: "changed + unconfirmed failure stays CHANGED",
            from: st(SC, 0, 1, None),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SC, 1, 0, Some(1000)),
            event: None,
        },
        Row {
            name: "changed + confirmed failure -> DOWN",
            from: st(SC, 0, 1, None),
            settings: s1,
            input: n(VD),
            now: 1000,
            to: st(SD, 1, 0, Some(1000)),
            event: Some((EventKind::Down, true)),
        },
        // Maintenance.
        Row {
            name: "up + maintenance -> MAINTENANCE, counters reset",
            from: st(SU, 2, 0, Some(10)),
            settings: s3,
            input: m(VD),
            now: 1000,
            to: st(SM, 0, 0, None),
            event: Some((EventKind::Maintenance, false)),
        },
        Row {
            name: "down + maintenance -> MAINTENANCE (no up event)",
            from: st(SD, 7, 0, Some(10)),
            settings: s3,
            input: m(VU),
            now: 1000,
            to: st(SM, 0, 0, None),
            event: Some((EventKind::Maintenance, false)),
        },
        Row {
            name: "maintenance + failure inside the window: nothing moves",
            from: st(SM, 0, 0, None),
            settings: s1,
            input: m(VD),
            now: 1000,
            to: st(SM, 0, 0, None),
            event: None,
        },
        Row {
            name: "maintenance ends with up -> UP, not alert-worthy",
            from: st(SM, 0, 0, None),
            settings: s3,
            input: n(VU),
            now: 1000,
            to: st(SU, 0, 1, None),
            event: Some((EventKind::Up, false)),
        },
        Row {
            name: "maintenance ends with an unconfirmed failure -> PENDING",
            from: st(SM, 0, 0, None),
            settings: s3,
            input: n(VD),
            now: 1000,
            to: st(SP, 1, 0, Some(1000)),
            event: Some((EventKind::Pending, false)),
        },
        Row {
            name: "maintenance ends with a confirmed failure -> DOWN",
            from: st(SM, 0, 0, None),
            settings: s1,
            input: n(VD),
            now: 1000,
            to: st(SD, 1, 0, Some(1000)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "maintenance ends with degraded -> DEGRADED",
            from: st(SM, 0, 0, None),
            settings: s3,
            input: n(VDg),
            now: 1000,
            to: st(SDg, 0, 1, None),
            event: Some((EventKind::Degraded, true)),
        },
        // Robustness.
        Row {
            name: "zero confirmations in storage are treated as one",
            from: st(SU, 0, 1, None),
            settings: settings(0, 0, 0),
            input: n(VD),
            now: 1000,
            to: st(SD, 1, 0, Some(1000)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "clock stepped backwards: a zero minimum duration is still met",
            from: st(SU, 1, 0, Some(5000)),
            settings: settings(2, 1, 0),
            input: n(VD),
            now: 1000,
            to: st(SD, 2, 0, Some(5000)),
            event: Some((EventKind::Down, true)),
        },
        Row {
            name: "clock stepped backwards: a positive minimum duration is not met",
            from: st(SU, 1, 0, Some(5000)),
            settings: settings(2, 1, 1),
            input: n(VD),
            now: 1000,
            to: st(SU, 2, 0, Some(5000)),
            event: None,
        },
        Row {
            name: "failures without a stored run start: the run starts now",
            from: st(SU, 1, 0, None),
            settings: settings(2, 1, 10),
            input: n(VD),
            now: 1000,
            to: st(SU, 2, 0, Some(1000)),
            event: None,
        },
    ]
}

#[test]
fn transition_table() {
    for row in table() {
        let tr = step(&row.from, &row.settings, row.input, t(row.now));
        assert_eq!(tr.state, row.to, "{}: state", row.name);
        let got = tr.event.map(|e| (e.kind, e.is_alert_worthy()));
        assert_eq!(got, row.event, "{}: event", row.name);
        if let Some(e) = tr.event {
            assert_eq!(
                (e.from, e.to),
                (row.from.status, row.to.status),
                "{}: from/to",
                row.name
            );
        }
    }
}

#[test]
fn push_down_is_immediate() {
    let strict = settings(5, 3, 600_000);
    // A push with status=down (or a missed deadline) ignores confirmations and duration.
    let tr = push_down(&st(SU, 0, 9, None), false, t(1000));
    assert_eq!(tr.state, st(SD, 1, 0, Some(1000)));
    assert_eq!(tr.event.map(|e| e.kind), Some(EventKind::Down));
    // Already down: counts, no new event, run start kept.
    let again = push_down(&tr.state, false, t(2000));
    assert_eq!(again.state, st(SD, 2, 0, Some(1000)));
    assert_eq!(again.event, None);
    // From PENDING, and right after maintenance.
    assert_eq!(
        push_down(&MonitorState::initial(), false, t(5))
            .state
            .status,
        SD
    );
    let after = push_down(&st(SM, 0, 0, None), false, t(5));
    assert_eq!(
        after.event.map(|e| (e.kind, e.from)),
        Some((EventKind::Down, SM))
    );
    // Inside maintenance nothing fires.
    let maint = push_down(&st(SU, 0, 1, None), true, t(5));
    assert_eq!(maint.state, st(SM, 0, 0, None));
    assert_eq!(maint.event.map(|e| e.kind), Some(EventKind::Maintenance));
    // Recovery after a push-down still follows the settings.
    let r1 = step(&tr.state, &strict, VU.into(), t(3000));
    assert_eq!(r1.state.status, SD);
    let r2 = step(&r1.state, &strict, VU.into(), t(4000));
    let r3 = step(&r2.state, &strict, VU.into(), t(5000));
    assert_eq!(r2.state.status, SD);
    assert_eq!(r3.state.status, SU);
    assert_eq!(r3.event.map(|e| e.kind), Some(EventKind::Up));
}

#[test]
fn accept_baseline_clears_changed_only() {
    let tr = accept_baseline(&st(SC, 0, 4, None));
    assert_eq!(tr.state, MonitorState::initial());
    let e = tr.event.expect("changed -> pending is a status change");
    assert_eq!(
        (e.kind, e.from, e.to, e.is_alert_worthy()),
        (EventKind::Pending, SC, SP, false)
    );
    // The next up is the quiet first-up of a fresh evaluation.
    let next = step(&tr.state, &StateSettings::default(), VU.into(), t(1));
    assert_eq!(
        next.event.map(|e| (e.kind, e.is_alert_worthy())),
        Some((EventKind::Up, false))
    );
    for s in [SU, SD, SDg, SM, SP] {
        let state = st(s, 1, 0, Some(3));
        assert_eq!(accept_baseline(&state), Transition { state, event: None });
    }
}

#[test]
fn leave_maintenance_goes_pending_from_maintenance_only() {
    let tr = leave_maintenance(&st(SM, 0, 0, None));
    assert_eq!(tr.state, MonitorState::initial());
    let e = tr.event.expect("maintenance -> pending is a status change");
    assert_eq!(
        (e.kind, e.from, e.to, e.is_alert_worthy()),
        (EventKind::Pending, SM, SP, false)
    );
    for s in [SU, SD, SDg, SC, SP] {
        let state = st(s, 1, 0, Some(3));
        assert_eq!(leave_maintenance(&state), Transition { state, event: None });
    }
}

#[test]
fn settings_validation() {
    assert_eq!(
        StateSettings::new(0, 1, 0),
        Err(SettingsError::ConfirmationsRequired)
    );
    assert_eq!(
        StateSettings::new(1, 0, 0),
        Err(SettingsError::RecoveryConfirmationsRequired)
    );
    assert_eq!(
        SettingsError::ConfirmationsRequired.field(),
        "confirmationsRequired"
    );
    assert_eq!(StateSettings::new(2, 3, 500), Ok(settings(2, 3, 500)));
}

#[test]
fn serde_spellings() -> Result<(), serde_json::Error> {
    let statuses = [SU, SD, SDg, SC, SM, SP];
    assert_eq!(
        serde_json::to_string(&statuses)?,
        r#"["UP","DOWN","DEGRADED","CHANGED","MAINTENANCE","PENDING"]"#
    );
    assert_eq!(
        serde_json::to_string(&[VU, VD, VDg, VC])?,
        r#"["UP","DOWN","DEGRADED","CHANGED"]"#
    );
    let state = st(SD, 3, 0, Some(1000));
    assert_eq!(
        serde_json::to_value(state)?,
        serde_json::json!({
            "status": "DOWN",
            "consecutiveFailures": 3,
            "consecutiveSuccesses": 0,
            "pendingFailureSince": "1970-01-01T00:00:01Z",
        })
    );
    let back: MonitorState = serde_json::from_value(serde_json::to_value(state)?)?;
    assert_eq!(back, state);
    let event = Event {
        kind: EventKind::Up,
        from: SD,
        to: SU,
    };
    assert_eq!(
        serde_json::to_string(&event)?,
        r#"{"kind":"up","from":"DOWN","to":"UP"}"#
    );
    assert_eq!(
        serde_json::to_value(settings(2, 3, 0))?,
        serde_json::json!({
            "confirmationsRequired": 2,
            "recoveryConfirmationsRequired": 3,
            "minFailureDurationMs": 0,
        })
    );
    Ok(())
}

// --- Properties against a reference model. ---

#[derive(Debug, Clone, Copy)]
struct Cycle {
    verdict: Verdict,
    in_maintenance: bool,
    /// Milliseconds since the previous cycle.
    gap_ms: i64,
}

fn cycle() -> impl Strategy<Value = Cycle> {
    (
        prop_oneof![4 => Just(VD), 3 => Just(VU), 1 => Just(VDg), 1 => Just(VC)],
        prop::bool::weighted(0.08),
        0i64..40_000,
    )
        .prop_map(|(verdict, in_maintenance, gap_ms)| Cycle {
            verdict,
            in_maintenance,
            gap_ms,
        })
}

fn any_settings() -> impl Strategy<Value = StateSettings> {
    (1u32..6, 1u32..6, prop_oneof![Just(0u64), 1u64..120_000])
        .prop_map(|(c, r, m)| settings(c, r, m))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn machine_matches_reference(s in any_settings(), cycles in prop::collection::vec(cycle(), 0..80)) {
        let mut state = MonitorState::initial();
        let mut now = 1_700_000_000_000i64;
        // The reference: plain counts of the current runs, reset by maintenance.
        let (mut ref_failures, mut ref_successes, mut ref_run_start) = (0u32, 0u32, None::<i64>);
        for c in cycles {
            now += c.gap_ms;
            let input = CycleInput { verdict: c.verdict, in_maintenance: c.in_maintenance };
            let before = state;
            let tr = step(&before, &s, input, t(now));
            let after = tr.state;

            if c.in_maintenance {
                (ref_failures, ref_successes, ref_run_start) = (0, 0, None);
                prop_assert_eq!(after.status, SM);
            } else if c.verdict.is_success() {
                ref_failures = 0;
                ref_successes += 1;
                ref_run_start = None;
            } else {
                ref_failures += 1;
                ref_successes = 0;
                ref_run_start = ref_run_start.or(Some(now));
            }

            // Counters are exact.
            prop_assert_eq!(after.consecutive_failures, ref_failures);
            prop_assert_eq!(after.consecutive_successes, ref_successes);
            prop_assert_eq!(after.pending_failure_since, ref_run_start.map(t));

            // An event iff the status changed, describing exactly that change.
            match tr.event {
                Some(e) => {
                    prop_assert_ne!(before.status, after.status);
                    prop_assert_eq!((e.from, e.to), (before.status, after.status));
                }
                None => prop_assert_eq!(before.status, after.status),
            }

            // Never DOWN before both the confirmations and the minimum duration.
            let confirmed = ref_failures >= s.confirmations_required
                && ref_run_start.is_some_and(|start| now - start >= s.min_failure_duration_ms as i64);
            if after.status == SD && before.status != SD {
                prop_assert!(confirmed, "went DOWN unconfirmed: {:?} -> {:?}", before, after);
            }
            // ... and DOWN as soon as both hold.
            if confirmed && !c.in_maintenance {
                prop_assert_eq!(after.status, SD);
            }

            // Recovery needs exactly N successes.
            if before.status == SD && after.status != SD && !c.in_maintenance {
                prop_assert_eq!(ref_successes, s.recovery_confirmations_required);
                prop_assert_eq!(tr.event.map(|e| e.kind), Some(EventKind::Up));
            }
            if before.status == SD && !c.in_maintenance && c.verdict.is_success()
                && ref_successes >= s.recovery_confirmations_required
            {
                prop_assert_ne!(after.status, SD);
            }

            // Maintenance never fires down/up, and never alerts.
            if c.in_maintenance {
                prop_assert!(tr.event.is_none_or(|e| e.kind == EventKind::Maintenance && !e.is_alert_worthy()));
            }
            // No status other than DOWN is reachable by a failure.
            if !c.verdict.is_success() && !c.in_maintenance && after.status != before.status {
                prop_assert!(after.status == SD || (before.status == SM && after.status == SP));
            }
            state = after;
        }
    }
}

#[test]
fn status_spelling_is_the_serde_form_and_round_trips() {
    for s in Status::ALL {
        assert_eq!(
            serde_json::to_value(s).ok(),
            Some(serde_json::Value::from(s.as_str()))
        );
        assert_eq!(s.as_str().parse::<Status>(), Ok(s));
    }
    assert_eq!(
        "up".parse::<Status>(),
        Err(crate::state::UnknownStatus("up".into()))
    );
}

#[test]
fn event_kind_spelling_is_the_serde_form() {
    use crate::state::EventKind as K;
    for k in [
        K::Down,
        K::Up,
        K::Degraded,
        K::Changed,
        K::Maintenance,
        K::Pending,
    ] {
        assert_eq!(
            serde_json::to_value(k).ok(),
            Some(serde_json::Value::from(k.as_str()))
        );
    }
}

#[test]
fn resume_starts_from_the_initial_state_with_a_quiet_pending_event() {
    let down = MonitorState {
        status: Status::Down,
        consecutive_failures: 3,
        consecutive_successes: 0,
        pending_failure_since: None,
    };
    let t = crate::state::resume(&down);
    assert_eq!(t.state, MonitorState::initial());
    let ev = t.event.expect("a status change");
    assert_eq!((ev.from, ev.to), (Status::Down, Status::Pending));
    assert!(!ev.is_alert_worthy());
    assert_eq!(crate::state::resume(&MonitorState::initial()).event, None);
}

#[test]
fn a_window_start_enters_maintenance_and_the_next_verdict_leaves_it() {
    let s = settings(1, 1, 0);
    let up = st(SU, 0, 3, None);
    let entered = enter_maintenance(&up);
    assert_eq!(entered.state, MonitorState::maintenance());
    let ev = entered.event.unwrap_or_else(|| panic!("no event"));
    assert_eq!((ev.kind, ev.from, ev.to), (EventKind::Maintenance, SU, SM));
    assert!(!ev.is_alert_worthy());
    // Already in maintenance: nothing to record.
    assert_eq!(enter_maintenance(&entered.state).event, None);
    // An outage still going on when the window ends: MAINTENANCE -> DOWN, which alerts.
    let after = step(&entered.state, &s, CycleInput::new(VD), t(10));
    let ev = after.event.unwrap_or_else(|| panic!("no event"));
    assert_eq!((ev.kind, ev.from, ev.to), (EventKind::Down, SM, SD));
    assert!(ev.is_alert_worthy());
    // Inside the window a failure changes nothing.
    let inside = push_down(&entered.state, true, t(10));
    assert_eq!((inside.state.status, inside.event), (SM, None));
}
