//! Property tests of the quorum with timing: [`decide_timed`] on its own, and a model of the
//! scheduler's cycle under `round_robin` / `random` (ask the picked region, maybe a confirmer
//! from the start, the others on trouble or at the last moment their answer still fits, stop
//! once a failure is settled) driven by what each region really sees.

use proptest::prelude::*;

use super::*;
use Verdict::{Changed as C, Degraded as Dg, Down as D, Up as U};

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![Just(U), Just(D), Just(Dg), Just(C)]
}

fn run() -> impl Strategy<Value = RegionRun> {
    prop_oneof![
        Just(RegionRun::NotAsked),
        (0u64..12_000).prop_map(|asked_ms| RegionRun::Pending { asked_ms }),
        (0u64..12_000).prop_map(|asked_ms| RegionRun::Silent { asked_ms }),
        (0u64..12_000, verdict(), 0u64..12_000).prop_map(|(asked_ms, verdict, took)| {
            RegionRun::Reported {
                asked_ms,
                verdict,
                at_ms: asked_ms + took,
            }
        }),
    ]
}

fn timing() -> impl Strategy<Value = CycleTiming> {
    (1_000u64..12_000, 0u64..12_000).prop_map(|(deadline_ms, needed_ms)| CycleTiming {
        deadline_ms,
        needed_ms,
    })
}

fn spread() -> impl Strategy<Value = RegionStrategy> {
    prop_oneof![
        Just(RegionStrategy::RoundRobin),
        Just(RegionStrategy::Random)
    ]
}

fn any_strategy() -> impl Strategy<Value = RegionStrategy> {
    prop_oneof![
        Just(RegionStrategy::All),
        Just(RegionStrategy::RoundRobin),
        Just(RegionStrategy::Random)
    ]
}

fn named(runs: &[RegionRun]) -> Vec<(usize, RegionRun)> {
    runs.iter().copied().enumerate().collect()
}

fn in_time(runs: &[RegionRun], t: CycleTiming) -> Vec<Option<Verdict>> {
    runs.iter().map(|r| t.in_time(*r)).collect()
}

/// What a region really sees of the target this cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sees {
    /// Answers with this verdict after `ms` (within the check time).
    Answer(Verdict, u64),
    /// The target hangs for it: a failure after the whole check time.
    Hang,
    /// Its probe is frozen: no answer at all.
    Frozen,
}

/// The model of one spread cycle: its verdict and when it was decided.
#[derive(Debug)]
struct Model {
    check_ms: u64,
    /// Round trip to a region (answer comes this much after the check ends).
    rtt_ms: u64,
    timing: CycleTiming,
}

impl Model {
    fn done_at(&self, asked: u64, sees: Sees) -> Option<(u64, Verdict)> {
        match sees {
            Sees::Answer(v, ms) => Some((asked + ms.min(self.check_ms) + self.rtt_ms, v)),
            Sees::Hang => Some((asked + self.check_ms + self.rtt_ms, D)),
            Sees::Frozen => None,
        }
    }

    /// A run that began on time: the slot is the deadline and the margin.
    fn cycle(&self, sees: &[Sees], picked: usize, eager: bool) -> (Option<Verdict>, u64) {
        let interval_ms = self.timing.deadline_ms + SLOT_MARGIN_MS;
        let eager = eager || confirm_from_start(0, 2, interval_ms, self.timing.needed_ms);
        self.cycle_from(sees, picked, eager)
    }

    fn cycle_from(&self, sees: &[Sees], picked: usize, eager: bool) -> (Option<Verdict>, u64) {
        let t = self.timing;
        let n = sees.len();
        let mut runs = vec![RegionRun::NotAsked; n];
        runs[picked] = RegionRun::Pending { asked_ms: 0 };
        if eager && n > 1 {
            runs[(picked + 1) % n] = RegionRun::Pending { asked_ms: 0 };
        }
        let mut now = 0;
        loop {
            if ask_the_others(&runs, t, now) {
                for r in runs.iter_mut() {
                    if *r == RegionRun::NotAsked {
                        *r = RegionRun::Pending { asked_ms: now };
                    }
                }
            }
            let named = named(&runs);
            let pending = runs.iter().any(|r| matches!(r, RegionRun::Pending { .. }));
            if !pending || down_is_settled(RegionStrategy::RoundRobin, &named, None, t) {
                return (
                    decide_timed(RegionStrategy::RoundRobin, &named, None, t),
                    now,
                );
            }
            // The next answer, or the moment to ask the others, or the deadline.
            let answers = runs.iter().enumerate().filter_map(|(i, r)| match r {
                RegionRun::Pending { asked_ms } => self.done_at(*asked_ms, sees[i]),
                _ => None,
            });
            let mut next = answers.map(|(at, _)| at).min().unwrap_or(u64::MAX);
            if runs.contains(&RegionRun::NotAsked) && now < t.last_full_ask_ms() {
                next = next.min(t.last_full_ask_ms());
            }
            if next > t.deadline_ms {
                for r in runs.iter_mut() {
                    if let RegionRun::Pending { asked_ms } = *r {
                        *r = RegionRun::Silent { asked_ms };
                    }
                }
                let named = self::named(&runs);
                return (
                    decide_timed(RegionStrategy::RoundRobin, &named, None, t),
                    t.deadline_ms,
                );
            }
            now = next;
            for (i, r) in runs.iter_mut().enumerate() {
                if let RegionRun::Pending { asked_ms } = *r {
                    if let Some((at, verdict)) = self.done_at(asked_ms, sees[i]) {
                        if at == now {
                            *r = RegionRun::Reported {
                                asked_ms,
                                verdict,
                                at_ms: at,
                            };
                        }
                    }
                }
            }
        }
    }
}

/// A model whose slot leaves room for one whole check and its round trip, as the scheduler's
/// deadline always does.
fn model() -> impl Strategy<Value = Model> {
    (500u64..9_000, 0u64..700, 0u64..9_000).prop_map(|(check_ms, rtt_ms, spare)| {
        let needed_ms = check_ms + 750;
        Model {
            check_ms,
            rtt_ms,
            timing: CycleTiming {
                deadline_ms: needed_ms + spare,
                needed_ms,
            },
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// No verdict comes from nothing: a decided cycle heard at least one region in time.
    #[test]
    fn a_verdict_needs_a_report(s in any_strategy(), runs in prop::collection::vec(run(), 0..6),
                                q in prop::option::of(0usize..4), t in timing()) {
        if decide_timed(s, &named(&runs), q, t).is_some() {
            prop_assert!(in_time(&runs, t).iter().any(Option::is_some));
        }
    }

    /// One region's trouble never fails a `round_robin` / `random` cycle: when at most one
    /// region reported a failure in time and another reported the target answering, the
    /// cycle does not fail, whatever the quorum.
    #[test]
    fn one_regions_failure_never_fails_a_spread_cycle(
        s in spread(), runs in prop::collection::vec(run(), 1..6),
        q in prop::option::of(0usize..4), t in timing()) {
        let heard = in_time(&runs, t);
        let downs = heard.iter().filter(|v| **v == Some(D)).count();
        let answered = heard.iter().any(|v| v.is_some_and(Verdict::is_success));
        if downs <= 1 && answered {
            prop_assert_ne!(decide_timed(s, &named(&runs), q, t), Some(D));
        }
        // And a failure nobody else could contradict only when the others had their time.
        if downs == 1 && !answered {
            let others_had_time = runs.iter().all(|r| match *r {
                RegionRun::Reported { at_ms, .. } if at_ms <= t.deadline_ms => true,
                RegionRun::NotAsked => false,
                RegionRun::Pending { asked_ms }
                | RegionRun::Silent { asked_ms }
                | RegionRun::Reported { asked_ms, .. } => t.had_its_time(asked_ms),
            });
            let expected = if q.is_some_and(|q| q > 1) {
                Some(U)
            } else if others_had_time {
                Some(D)
            } else {
                None
            };
            prop_assert_eq!(decide_timed(s, &named(&runs), q, t), expected);
        }
    }

    /// An outage every reporting region sees fails the cycle under every strategy, once two
    /// regions (or the only one) saw it.
    #[test]
    fn an_outage_seen_everywhere_fails_the_cycle(s in any_strategy(), n in 1usize..6,
                                                 ats in prop::collection::vec(0u64..9_000, 6),
                                                 t in timing()) {
        let runs: Vec<RegionRun> = (0..n)
            .map(|i| RegionRun::Reported { asked_ms: 0, verdict: D, at_ms: ats[i] })
            .collect();
        let heard = in_time(&runs, t).iter().filter(|v| v.is_some()).count();
        let got = decide_timed(s, &named(&runs), None, t);
        if heard == 0 {
            prop_assert_eq!(got, None);
        } else {
            // Regions silent past the deadline were asked at the start: they had their time.
            prop_assert_eq!(got, Some(D));
        }
    }

    /// A verdict after the deadline is silence.
    #[test]
    fn a_late_verdict_is_silence(s in any_strategy(), runs in prop::collection::vec(run(), 1..6),
                                 q in prop::option::of(0usize..4), t in timing()) {
        let silenced: Vec<RegionRun> = runs
            .iter()
            .map(|r| match *r {
                RegionRun::Reported { asked_ms, at_ms, .. } if at_ms > t.deadline_ms => {
                    RegionRun::Silent { asked_ms }
                }
                RegionRun::Pending { asked_ms } => RegionRun::Silent { asked_ms },
                other => other,
            })
            .collect();
        prop_assert_eq!(
            decide_timed(s, &named(&runs), q, t),
            decide_timed(s, &named(&silenced), q, t)
        );
    }

    /// `all` is the plain quorum over what came in time.
    #[test]
    fn all_is_the_quorum(runs in prop::collection::vec(run(), 0..6),
                         q in prop::option::of(0usize..4), t in timing()) {
        let heard: Vec<((), Option<Verdict>)> =
            in_time(&runs, t).into_iter().map(|v| ((), v)).collect();
        prop_assert_eq!(
            decide_timed(RegionStrategy::All, &named(&runs), q, t),
            aggregate(&heard, q)
        );
    }

    /// One more region failing never turns a failed cycle into a success.
    #[test]
    fn more_failures_keep_a_failure(s in any_strategy(), runs in prop::collection::vec(run(), 1..6),
                                    which in 0usize..6, t in timing()) {
        if decide_timed(s, &named(&runs), None, t) != Some(D) {
            return Ok(());
        }
        let i = which % runs.len();
        let mut worse = runs.clone();
        if let RegionRun::Reported { asked_ms, at_ms, .. } = runs[i] {
            worse[i] = RegionRun::Reported { asked_ms, verdict: D, at_ms };
        }
        prop_assert_eq!(decide_timed(s, &named(&worse), None, t), Some(D));
    }

    /// A failure the scheduler stops waiting for stays a failure whatever the regions still
    /// pending would have said.
    #[test]
    fn a_settled_failure_stays_one(s in any_strategy(), runs in prop::collection::vec(run(), 1..5),
                                   q in prop::option::of(0usize..4), t in timing(),
                                   answers in prop::collection::vec((0usize..5, 0u64..12_000), 5)) {
        if !down_is_settled(s, &named(&runs), q, t) {
            return Ok(());
        }
        let options = [Some(U), Some(D), Some(Dg), Some(C), None];
        let done: Vec<RegionRun> = runs
            .iter()
            .zip(&answers)
            .map(|(r, (pick, at))| match *r {
                RegionRun::Pending { asked_ms } => match options[*pick] {
                    Some(verdict) => RegionRun::Reported { asked_ms, verdict, at_ms: asked_ms + at },
                    None => RegionRun::Silent { asked_ms },
                },
                other => other,
            })
            .collect();
        prop_assert_eq!(decide_timed(s, &named(&done), q, t), Some(D));
    }

    /// The scheduler's cycle, modelled: when one region has trouble of its own (a target that
    /// hangs or fails only for it, or a frozen probe) and the others see the target up, the
    /// cycle is UP, decided before the deadline; whichever region was picked, from the start
    /// or not.
    #[test]
    fn the_cycle_never_pages_for_one_region(m in model(), n in 2usize..5, picked in 0usize..5,
                                            sick in 0usize..5, trouble in 0usize..3,
                                            lat in prop::collection::vec(0u64..9_000, 5),
                                            eager: bool) {
        let picked = picked % n;
        let sick = sick % n;
        let sees: Vec<Sees> = (0..n)
            .map(|i| if i == sick {
                [Sees::Hang, Sees::Answer(D, lat[i]), Sees::Frozen][trouble]
            } else {
                Sees::Answer(U, lat[i])
            })
            .collect();
        let (verdict, at) = m.cycle(&sees, picked, eager);
        prop_assert_eq!(verdict, Some(U), "{:?}", sees);
        prop_assert!(at <= m.timing.deadline_ms);
    }

    /// A run that began late (less room than two answers in a row, though the monitor's slot
    /// has it) never pages for one region either: at worst it decides nothing.
    #[test]
    fn a_late_run_never_pages_for_one_region(m in model(), n in 2usize..5, picked in 0usize..5,
                                             sick in 0usize..5, trouble in 0usize..3,
                                             lat in prop::collection::vec(0u64..9_000, 5)) {
        let picked = picked % n;
        let sick = sick % n;
        let sees: Vec<Sees> = (0..n)
            .map(|i| if i == sick {
                [Sees::Hang, Sees::Answer(D, lat[i]), Sees::Frozen][trouble]
            } else {
                Sees::Answer(U, lat[i])
            })
            .collect();
        let late = Model {
            timing: CycleTiming { deadline_ms: m.timing.needed_ms, ..m.timing },
            ..m
        };
        let (verdict, at) = late.cycle_from(&sees, picked, false);
        prop_assert_ne!(verdict, Some(D), "{:?}", sees);
        prop_assert!(at <= late.timing.deadline_ms);
    }

    /// An outage every region sees fails the cycle before the deadline; checked from the
    /// start in two regions (after a failed cycle, or with one confirmation), it fails within
    /// one check time and a round trip of the slot, as `all` would.
    #[test]
    fn an_outage_fails_the_cycle_in_time(m in model(), n in 1usize..5, picked in 0usize..5,
                                         hang in prop::collection::vec(any::<bool>(), 5),
                                         lat in prop::collection::vec(0u64..9_000, 5),
                                         eager: bool) {
        let picked = picked % n;
        let sees: Vec<Sees> = (0..n)
            .map(|i| if hang[i] { Sees::Hang } else { Sees::Answer(D, lat[i]) })
            .collect();
        let (verdict, at) = m.cycle(&sees, picked, eager);
        prop_assert_eq!(verdict, Some(D));
        prop_assert!(at <= m.timing.deadline_ms);
        if eager || n == 1 {
            prop_assert!(at <= m.check_ms + m.rtt_ms, "decided at {} ms", at);
        }
    }
}
