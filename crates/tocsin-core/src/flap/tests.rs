use super::*;
use proptest::prelude::*;

const MIN: i64 = 60_000;
const T0: i64 = 1_700_000_000_000;

fn changes(
    state: FlapState,
    settings: &FlapSettings,
    times: &[i64],
) -> (FlapState, Vec<FlapOutcome>) {
    let mut s = state;
    let mut out = Vec::new();
    for &t in times {
        let (next, o) = record_change(&s, Some(settings), t);
        s = next;
        out.push(o);
    }
    (s, out)
}

#[test]
fn the_fifth_change_within_thirty_minutes_starts_flapping() {
    let d = FlapSettings::DEFAULT;
    let times: Vec<i64> = (0..5).map(|i| T0 + i * 5 * MIN).collect();
    let (s, out) = changes(FlapState::default(), &d, &times);
    assert!(out[..4].iter().all(|o| o.started.is_none() && !o.ended));
    assert_eq!(out[4].started, Some(5));
    assert_eq!(s.flapping_since, Some(T0 + 20 * MIN));
}

#[test]
fn four_changes_or_five_spread_wider_than_the_window_do_not_flap() {
    let d = FlapSettings::DEFAULT;
    let (s, _) = changes(
        FlapState::default(),
        &d,
        &[T0, T0 + MIN, T0 + 2 * MIN, T0 + 3 * MIN],
    );
    assert!(!s.is_flapping());
    let times: Vec<i64> = (0..5).map(|i| T0 + i * 8 * MIN).collect();
    let (s, out) = changes(FlapState::default(), &d, &times);
    assert!(!s.is_flapping(), "{out:?}");
}

#[test]
fn a_whole_window_with_at_most_one_change_ends_it() {
    let d = FlapSettings::DEFAULT;
    let times: Vec<i64> = (0..6).map(|i| T0 + i * MIN).collect();
    let (s, _) = changes(FlapState::default(), &d, &times);
    assert!(s.is_flapping());
    // The window ending 1 ms before T0 + 34 min still holds the last two changes (4, 5 min).
    let (s2, ended) = tick(&s, Some(&d), T0 + 34 * MIN - 1);
    assert!(!ended && s2.is_flapping());
    // The one ending at T0 + 34 min, (4 min, 34 min], holds one: a quiet whole window.
    let (s3, ended) = tick(&s, Some(&d), T0 + 34 * MIN);
    assert!(ended && !s3.is_flapping());
    let (_, ended) = tick(&s3, Some(&d), T0 + 40 * MIN);
    assert!(!ended, "ends once");
}

#[test]
fn a_change_after_a_quiet_window_ends_flapping_first() {
    let d = FlapSettings::DEFAULT;
    let times: Vec<i64> = (0..5).map(|i| T0 + i * MIN).collect();
    let (s, _) = changes(FlapState::default(), &d, &times);
    let (s, o) = record_change(&s, Some(&d), T0 + 60 * MIN);
    assert!(o.ended && o.started.is_none());
    assert_eq!(s.changes, vec![T0 + 60 * MIN]);
}

#[test]
fn turning_detection_off_ends_flapping_and_forgets_changes() {
    let d = FlapSettings::new(2, 10).unwrap_or_default();
    let (s, _) = changes(FlapState::default(), &d, &[T0, T0 + 1]);
    assert!(s.is_flapping());
    let (s, ended) = tick(&s, None, T0 + 2);
    assert!(ended);
    assert_eq!(s, FlapState::default());
    let (s, o) = record_change(&s, None, T0 + 3);
    assert_eq!((s, o), (FlapState::default(), FlapOutcome::default()));
}

#[test]
fn settings_are_checked() {
    assert_eq!(
        FlapSettings::new(1, 30),
        Err(FlapSettingsError::Transitions)
    );
    assert_eq!(
        FlapSettings::new(101, 30),
        Err(FlapSettingsError::Transitions)
    );
    assert_eq!(
        FlapSettings::new(5, 0),
        Err(FlapSettingsError::WindowMinutes)
    );
    assert_eq!(
        FlapSettings::new(5, 1_441),
        Err(FlapSettingsError::WindowMinutes)
    );
    assert_eq!(FlapSettings::new(5, 30), Ok(FlapSettings::DEFAULT));
    assert_eq!(
        FlapSettings::new(100, 1_440).map(|s| s.window_ms()),
        Ok(86_400_000)
    );
}

#[derive(Debug, Clone)]
enum Step {
    Change(i64),
    Tick(i64),
}

fn step() -> impl Strategy<Value = Step> {
    // Gaps from 0 to 20 minutes: dense runs and quiet windows both occur.
    prop_oneof![
        3 => (0i64..20 * MIN).prop_map(Step::Change),
        1 => (0i64..20 * MIN).prop_map(Step::Tick),
    ]
}

fn settings() -> impl Strategy<Value = FlapSettings> {
    (2u32..=8, 1u32..=60).prop_map(|(transitions, window_minutes)| FlapSettings {
        transitions,
        window_minutes,
    })
}

/// The rule read literally, over every change ever seen.
#[derive(Default)]
struct Reference {
    all: Vec<i64>,
    since: Option<i64>,
}

impl Reference {
    fn count(&self, s: &FlapSettings, now: i64) -> u32 {
        changes_in_window(&self.all, s.window_ms(), now)
    }

    fn tick(&mut self, s: &FlapSettings, now: i64) -> bool {
        let ended = self.since.is_some() && self.count(s, now) <= 1;
        if ended {
            self.since = None;
        }
        ended
    }

    fn change(&mut self, s: &FlapSettings, at: i64) -> FlapOutcome {
        let ended = self.tick(s, at);
        self.all.push(at);
        let n = self.count(s, at);
        let started = (self.since.is_none() && n >= s.transitions).then_some(n);
        if started.is_some() {
            self.since = Some(at);
        }
        FlapOutcome { ended, started }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn bounded_state_decides_as_the_whole_history_does(
        s in settings(),
        steps in prop::collection::vec(step(), 0..120),
    ) {
        let mut state = FlapState::default();
        let mut reference = Reference::default();
        let mut now = T0;
        for st in steps {
            match st {
                Step::Change(gap) => {
                    now += gap;
                    let (next, o) = record_change(&state, Some(&s), now);
                    prop_assert_eq!(o, reference.change(&s, now));
                    state = next;
                }
                Step::Tick(gap) => {
                    now += gap;
                    let (next, ended) = tick(&state, Some(&s), now);
                    prop_assert_eq!(ended, reference.tick(&s, now));
                    state = next;
                }
            }
            prop_assert_eq!(state.flapping_since, reference.since);
            // Small and inside the window, so it can live on the monitor's row.
            prop_assert!(state.changes.len() <= s.transitions.max(2) as usize);
            prop_assert!(state.changes.iter().all(|&t| t > now - s.window_ms() && t <= now));
            prop_assert!(state.changes.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn starts_and_ends_alternate_and_a_quiet_window_always_ends_it(
        s in settings(),
        gaps in prop::collection::vec(0i64..10 * MIN, 0..80),
    ) {
        let mut state = FlapState::default();
        let mut now = T0;
        let mut flapping = false;
        for gap in gaps {
            now += gap;
            let (next, o) = record_change(&state, Some(&s), now);
            if o.ended {
                prop_assert!(flapping, "ended while not flapping");
                flapping = false;
            }
            if let Some(n) = o.started {
                prop_assert!(!flapping, "started twice");
                prop_assert!(n >= s.transitions);
                flapping = true;
            }
            state = next;
        }
        // Whatever happened, one whole window after the last change it is over.
        let (after, ended) = tick(&state, Some(&s), now + s.window_ms());
        prop_assert_eq!(ended, flapping);
        prop_assert!(!after.is_flapping());
    }

    #[test]
    fn changes_a_window_apart_never_flap(
        s in settings(),
        extra in prop::collection::vec(0i64..5 * MIN, 0..60),
    ) {
        let mut state = FlapState::default();
        let mut now = T0;
        for e in extra {
            now += s.window_ms() + e;
            let (next, o) = record_change(&state, Some(&s), now);
            prop_assert_eq!(o, FlapOutcome::default());
            state = next;
        }
        prop_assert!(!state.is_flapping());
    }

    #[test]
    fn off_never_flaps(gaps in prop::collection::vec(0i64..MIN, 0..60)) {
        let mut state = FlapState::default();
        let mut now = T0;
        for gap in gaps {
            now += gap;
            let (next, o) = record_change(&state, None, now);
            prop_assert_eq!(o, FlapOutcome::default());
            prop_assert_eq!(&next, &FlapState::default());
            state = next;
        }
    }
}
