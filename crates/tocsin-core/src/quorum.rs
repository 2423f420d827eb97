//! Multi-region checks: which regions run a monitor's cycle ([`pick_regions`]), when the
//! other regions confirm a failure under `round_robin` and `random` ([`confirm_from_start`],
//! [`ask_the_others`], [`down_is_settled`]), and how the regions' verdicts and their times
//! combine into the one verdict the state machine sees ([`decide_timed`], over
//! [`aggregate`]).
//!
//! The rules protect against false alarms from a single sick probe: a cycle fails only when
//! a quorum of *reporting* regions failed; a region with no result (no live probe, result not
//! in by the deadline) never counts as a failure; a failure seen by one region alone counts
//! only when no other region could have said otherwise; and a cycle where nobody reported
//! yields no verdict at all, so the state machine is not stepped and cannot go `DOWN` because
//! probes vanished.

use serde::{Deserialize, Serialize};

use crate::state::Verdict;

/// How a monitor's regions share its cycles. Serialized `all`, `round_robin`, `random`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionStrategy {
    /// Every region checks every cycle; verdicts are combined by [`aggregate`].
    #[default]
    All,
    /// One region per cycle, in turn.
    RoundRobin,
    /// One region per cycle, chosen by the caller's random number.
    Random,
}

impl RegionStrategy {
    /// The stored (and API) spelling back to the strategy.
    pub fn parse(s: &str) -> Option<RegionStrategy> {
        Some(match s {
            "all" => RegionStrategy::All,
            "round_robin" => RegionStrategy::RoundRobin,
            "random" => RegionStrategy::Random,
            _ => return None,
        })
    }
}

/// The regions that run cycle `cycle_index`. `rand` is the caller's random number (this crate
/// draws none), used only by [`RegionStrategy::Random`]. No regions, no picks.
pub fn pick_regions(
    strategy: RegionStrategy,
    regions: &[String],
    cycle_index: u64,
    rand: u64,
) -> Vec<String> {
    let pick_one = |i: u64| -> Vec<String> {
        // n >= 1 here and the index is < n, so both conversions succeed.
        let n = u64::try_from(regions.len()).unwrap_or(u64::MAX);
        usize::try_from(i % n)
            .ok()
            .and_then(|idx| regions.get(idx))
            .cloned()
            .into_iter()
            .collect()
    };
    match strategy {
        _ if regions.is_empty() => Vec::new(),
        RegionStrategy::All => regions.to_vec(),
        RegionStrategy::RoundRobin => pick_one(cycle_index),
        RegionStrategy::Random => pick_one(rand),
    }
}

/// The failure quorum by default: a strict majority of the regions that reported.
pub fn majority(reporting: usize) -> usize {
    reporting / 2 + 1
}

/// Combines one cycle's per-region results; `None` in a result means the region did not
/// report. Returns `None` when no region reported (do not step the state machine).
///
/// - `Down` when at least `quorum` regions reported `Down` (`None` = [`majority`] of the
///   regions that reported; `Some(0)` is treated as 1). A configured quorum is an absolute
///   count: if fewer regions than that reported, the cycle cannot fail. That is deliberate: a
///   lone surviving probe must not page anyone against an explicit quorum.
/// - Otherwise `Changed` if any reporting region saw a change, else `Degraded` if any did,
///   else `Up`. `Changed` wins over `Degraded` because it is the sticky, human-acknowledged
///   status; failures below the quorum do not make the cycle degraded.
pub fn aggregate<R>(results: &[(R, Option<Verdict>)], quorum: Option<usize>) -> Option<Verdict> {
    let reported = || results.iter().filter_map(|(_, v)| *v);
    let reporting = reported().count();
    if reporting == 0 {
        return None;
    }
    let count = |want: Verdict| reported().filter(|v| *v == want).count();
    let required = quorum.unwrap_or_else(|| majority(reporting)).max(1);
    Some(if count(Verdict::Down) >= required {
        Verdict::Down
    } else if count(Verdict::Changed) > 0 {
        Verdict::Changed
    } else if count(Verdict::Degraded) > 0 {
        Verdict::Degraded
    } else {
        Verdict::Up
    })
}

/// One region's part in a cycle, as the scheduler saw it; times are milliseconds from the
/// cycle's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionRun {
    /// Not asked this cycle.
    NotAsked,
    /// Asked at `asked_ms`, no answer yet. At the decision it counts as [`RegionRun::Silent`].
    Pending { asked_ms: u64 },
    /// Asked at `asked_ms` and ended without a result: its probe could not run the check,
    /// went away, or did not answer by the deadline.
    Silent { asked_ms: u64 },
    /// Asked at `asked_ms`; its verdict came at `at_ms`.
    Reported {
        asked_ms: u64,
        verdict: Verdict,
        at_ms: u64,
    },
}

impl RegionRun {
    fn asked_ms(self) -> Option<u64> {
        match self {
            RegionRun::NotAsked => None,
            RegionRun::Pending { asked_ms }
            | RegionRun::Silent { asked_ms }
            | RegionRun::Reported { asked_ms, .. } => Some(asked_ms),
        }
    }
}

/// A cycle's time limits, in milliseconds from its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleTiming {
    /// When results stop counting: shortly before the monitor's next slot.
    pub deadline_ms: u64,
    /// What one region needs to answer: the whole check (every attempt its whole timeout)
    /// and the round trip to a remote probe.
    pub needed_ms: u64,
}

impl CycleTiming {
    /// The latest moment a region can be asked and still have all it needs before the
    /// deadline (the start, when even that does not fit).
    pub fn last_full_ask_ms(self) -> u64 {
        self.deadline_ms.saturating_sub(self.needed_ms)
    }

    /// Whether a region asked at `asked_ms` had all it needed: asked by
    /// [`CycleTiming::last_full_ask_ms`] (or at the start, which is all the slot has).
    fn had_its_time(self, asked_ms: u64) -> bool {
        asked_ms == 0 || asked_ms <= self.last_full_ask_ms()
    }

    /// A region's verdict if it came by the deadline; a later one counts as silence.
    fn in_time(self, run: RegionRun) -> Option<Verdict> {
        match run {
            RegionRun::Reported { verdict, at_ms, .. } if at_ms <= self.deadline_ms => {
                Some(verdict)
            }
            _ => None,
        }
    }
}

/// Whether the confirming region should check from the start of the slot, beside the picked
/// one, under `round_robin` and `random`: when the previous cycle failed (this one may be the
/// cycle that pages), when one failed cycle pages on its own, and when the monitor's slot
/// (`interval_ms`, less the margin kept for storing) cannot hold two whole answers one after
/// the other (`needed_ms` each). A target that hangs then fails in both regions within one
/// timeout, instead of one timeout for the picked region and another for the confirmer, so an
/// outage pages within interval x confirmations + timeout.
pub fn confirm_from_start(
    consecutive_failures: u32,
    confirmations_required: u32,
    interval_ms: u64,
    needed_ms: u64,
) -> bool {
    consecutive_failures > 0
        || confirmations_required <= 1
        || interval_ms < needed_ms.saturating_mul(2).saturating_add(SLOT_MARGIN_MS)
}

/// What a cycle leaves of its slot for storing its result.
pub const SLOT_MARGIN_MS: u64 = 500;

/// The regions to ask for a confirmation, in the order to ask them: the monitor's regions
/// after the picked one, wrapping around, without the picked ones.
pub fn confirmation_order(regions: &[String], picked: &[String]) -> Vec<String> {
    let start = picked
        .first()
        .and_then(|p| regions.iter().position(|r| r == p))
        .map_or(0, |i| i + 1);
    regions
        .iter()
        .cycle()
        .skip(start)
        .take(regions.len())
        .filter(|r| !picked.contains(r))
        .cloned()
        .collect()
}

/// A cycle's verdict from its regions' runs (every region that could report this cycle:
/// under `round_robin` and `random` the live ones, asked or not) and their times; `None` when
/// the cycle decides nothing (the state machine is not stepped).
///
/// A verdict that came after `timing.deadline_ms` counts as silence, and so does a region
/// still pending.
///
/// - `all`: [`aggregate`] over the verdicts.
/// - `round_robin` / `random`: [`aggregate`] over the verdicts of the picked region and the
///   regions that confirmed it, with one more rule, so that one region's own trouble (its
///   network, its probe, a target that hangs only for it) never fails a cycle: a failure seen
///   by one region alone counts only when no other region could have said otherwise, that is
///   when every other region was asked in time to give its whole answer (see
///   [`CycleTiming::last_full_ask_ms`]) and stayed silent. When another region said the
///   target was up (or degraded, or changed) the cycle takes its word; when another region
///   was not asked, or too late to answer, the cycle decides nothing.
pub fn decide_timed<R>(
    strategy: RegionStrategy,
    runs: &[(R, RegionRun)],
    quorum: Option<usize>,
    timing: CycleTiming,
) -> Option<Verdict> {
    let heard: Vec<((), Option<Verdict>)> =
        runs.iter().map(|(_, r)| ((), timing.in_time(*r))).collect();
    let verdict = aggregate(&heard, quorum)?;
    if strategy == RegionStrategy::All || verdict != Verdict::Down {
        return Some(verdict);
    }
    let downs = heard
        .iter()
        .filter(|(_, v)| *v == Some(Verdict::Down))
        .count();
    if downs >= 2 {
        return Some(Verdict::Down);
    }
    // One region alone saw the failure (below the default majority only when the quorum was
    // set to one): the other regions' word, if any said something.
    let others: Vec<((), Option<Verdict>)> = heard
        .iter()
        .filter(|(_, v)| v.is_some_and(Verdict::is_success))
        .copied()
        .collect();
    if let Some(v) = aggregate(&others, None) {
        return Some(v);
    }
    let others_had_their_time = runs
        .iter()
        .filter(|(_, r)| timing.in_time(*r).is_none())
        .all(|(_, r)| r.asked_ms().is_some_and(|a| timing.had_its_time(a)));
    others_had_their_time.then_some(Verdict::Down)
}

/// Whether a cycle already decided `Down` whatever its pending regions still say (each of
/// them answering up is the answer that could change it most), so the scheduler stops waiting
/// for them and the failure counts one timeout after the slot, not later.
pub fn down_is_settled<R: Clone>(
    strategy: RegionStrategy,
    runs: &[(R, RegionRun)],
    quorum: Option<usize>,
    timing: CycleTiming,
) -> bool {
    let worst: Vec<(R, RegionRun)> = runs
        .iter()
        .map(|(name, r)| {
            let r = match *r {
                RegionRun::Pending { asked_ms } => RegionRun::Reported {
                    asked_ms,
                    verdict: Verdict::Up,
                    at_ms: asked_ms,
                },
                other => other,
            };
            (name.clone(), r)
        })
        .collect();
    decide_timed(strategy, &worst, quorum, timing) == Some(Verdict::Down)
}

/// Whether the regions not asked yet should be asked now (under `round_robin` and `random`):
/// when nobody has said the target is up, fewer than two regions can still confirm a failure
/// (pending, or failed in time), and either an asked region failed or went silent, or the last
/// moment that leaves the others their whole answer before the deadline has come (`now_ms`)
/// with a region still pending. Asked then, a confirmation always fits in the slot; and two
/// regions already on it (the picked one and a confirmer asked from the start) are left to
/// decide alone, so a failure they both see counts one check time after the slot.
pub fn ask_the_others(runs: &[RegionRun], timing: CycleTiming, now_ms: u64) -> bool {
    let some_not_asked = runs.contains(&RegionRun::NotAsked);
    let someone_saw_it_up = runs
        .iter()
        .any(|r| timing.in_time(*r).is_some_and(Verdict::is_success));
    let failed = |r: &RegionRun| timing.in_time(*r) == Some(Verdict::Down);
    let pending = |r: &RegionRun| matches!(r, RegionRun::Pending { .. });
    let voices = runs.iter().filter(|r| pending(r) || failed(r)).count();
    if !some_not_asked || someone_saw_it_up || voices >= 2 {
        return false;
    }
    let trouble = runs
        .iter()
        .any(|r| failed(r) || matches!(r, RegionRun::Silent { .. }));
    // No hedge when even the start left no room for a whole answer after the picked one's
    // (a run that began late): the picked region's answer says whether to ask.
    let hedge = timing.last_full_ask_ms() > 0 && now_ms >= timing.last_full_ask_ms();
    trouble || (runs.iter().any(pending) && hedge)
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Changed as C, Degraded as Dg, Down as D, Up as U};

    fn regions(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_string()).collect()
    }

    fn res(vs: &[Option<Verdict>]) -> Vec<(String, Option<Verdict>)> {
        vs.iter()
            .enumerate()
            .map(|(i, v)| (format!("r{i}"), *v))
            .collect()
    }

    #[test]
    fn picks() {
        let rs = regions(&["eu", "us", "ap"]);
        assert_eq!(pick_regions(RegionStrategy::All, &rs, 5, 9), rs);
        let rr: Vec<Vec<String>> = (0..4)
            .map(|i| pick_regions(RegionStrategy::RoundRobin, &rs, i, 0))
            .collect();
        assert_eq!(
            rr,
            [
                regions(&["eu"]),
                regions(&["us"]),
                regions(&["ap"]),
                regions(&["eu"])
            ]
        );
        assert_eq!(
            pick_regions(RegionStrategy::Random, &rs, 0, 4),
            regions(&["us"])
        );
        assert_eq!(
            pick_regions(RegionStrategy::Random, &rs, 0, u64::MAX),
            regions(&["eu"])
        );
        assert_eq!(
            pick_regions(RegionStrategy::RoundRobin, &rs, u64::MAX, 0),
            regions(&["eu"])
        );
        for s in [
            RegionStrategy::All,
            RegionStrategy::RoundRobin,
            RegionStrategy::Random,
        ] {
            assert!(pick_regions(s, &[], 3, 3).is_empty());
        }
    }

    #[test]
    fn strategy_spellings() -> Result<(), serde_json::Error> {
        let all = [
            RegionStrategy::All,
            RegionStrategy::RoundRobin,
            RegionStrategy::Random,
        ];
        assert_eq!(
            serde_json::to_string(&all)?,
            r#"["all","round_robin","random"]"#
        );
        let back: Vec<RegionStrategy> = serde_json::from_str(r#"["round_robin"]"#)?;
        assert_eq!(back, [RegionStrategy::RoundRobin]);
        Ok(())
    }

    #[test]
    fn majority_of_reporting_regions() {
        // 3 regions: 2 failures fail the cycle, 1 does not.
        assert_eq!(aggregate(&res(&[Some(D), Some(D), Some(U)]), None), Some(D));
        assert_eq!(aggregate(&res(&[Some(D), Some(U), Some(U)]), None), Some(U));
        // 4 regions: majority is 3; a 2-2 split is not a failure.
        assert_eq!(
            aggregate(&res(&[Some(D), Some(D), Some(U), Some(U)]), None),
            Some(U)
        );
        assert_eq!(
            aggregate(&res(&[Some(D), Some(D), Some(D), Some(U)]), None),
            Some(D)
        );
        // A single region decides alone (round_robin / random cycles).
        assert_eq!(aggregate(&res(&[Some(D)]), None), Some(D));
        assert_eq!(aggregate(&res(&[Some(U)]), None), Some(U));
    }

    #[test]
    fn missing_regions_never_count_as_failures() {
        // Majority is of the 2 that reported: both must fail.
        assert_eq!(aggregate(&res(&[Some(D), None, Some(U)]), None), Some(U));
        assert_eq!(aggregate(&res(&[Some(D), None, Some(D)]), None), Some(D));
        // One reported and it failed: it is the whole reporting set.
        assert_eq!(aggregate(&res(&[None, None, Some(D)]), None), Some(D));
        // Explicit quorum 2 with one region missing: one failure is not enough.
        assert_eq!(aggregate(&res(&[Some(D), None, Some(U)]), Some(2)), Some(U));
    }

    #[test]
    fn nobody_reported_means_no_verdict() {
        assert_eq!(aggregate(&res(&[None, None, None]), None), None);
        assert_eq!(aggregate::<String>(&[], None), None);
        assert_eq!(aggregate(&res(&[None]), Some(1)), None);
    }

    #[test]
    fn explicit_quorum() {
        let rs = res(&[Some(D), Some(U), Some(U), Some(U), Some(U)]);
        assert_eq!(aggregate(&rs, Some(1)), Some(D));
        assert_eq!(aggregate(&rs, Some(2)), Some(U));
        // Zero is treated as one: an all-up cycle never fails.
        assert_eq!(aggregate(&res(&[Some(U), Some(U)]), Some(0)), Some(U));
        assert_eq!(aggregate(&res(&[Some(D), Some(U)]), Some(0)), Some(D));
        // A quorum above the reporting count cannot be met.
        assert_eq!(aggregate(&res(&[Some(D), Some(D), None]), Some(3)), Some(U));
    }

    #[test]
    fn degraded_and_changed() {
        assert_eq!(
            aggregate(&res(&[Some(Dg), Some(U), Some(U)]), None),
            Some(Dg)
        );
        assert_eq!(aggregate(&res(&[Some(C), Some(U), Some(U)]), None), Some(C));
        assert_eq!(
            aggregate(&res(&[Some(C), Some(Dg), Some(U)]), None),
            Some(C)
        );
        // A failed cycle is DOWN whatever else was seen.
        assert_eq!(
            aggregate(&res(&[Some(D), Some(D), Some(Dg)]), None),
            Some(D)
        );
        assert_eq!(aggregate(&res(&[Some(D), Some(D), Some(C)]), None), Some(D));
        // Failures below the quorum neither fail nor degrade the cycle.
        assert_eq!(
            aggregate(&res(&[Some(D), Some(Dg), Some(U)]), None),
            Some(Dg)
        );
        assert_eq!(aggregate(&res(&[Some(Dg), None]), None), Some(Dg));
    }

    #[test]
    fn accepts_borrowed_region_names() {
        let rs = [("eu", Some(U)), ("us", None)];
        assert_eq!(aggregate(&rs, None), Some(U));
    }

    const T: CycleTiming = CycleTiming {
        deadline_ms: 9_500,
        needed_ms: 6_000,
    };

    fn said(v: Verdict, at_ms: u64) -> RegionRun {
        RegionRun::Reported {
            asked_ms: 0,
            verdict: v,
            at_ms,
        }
    }

    #[test]
    fn one_region_failure_needs_a_second_region() {
        use RegionStrategy::{All, Random, RoundRobin};
        let r = |s: &str, run| (s.to_string(), run);
        let silent = RegionRun::Silent { asked_ms: 0 };
        // Confirmed by a second region: down.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(D, 10)), r("us", said(D, 20))],
                None,
                T
            ),
            Some(D)
        );
        // The second region sees it up: the cycle is up.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(D, 10)), r("us", said(U, 20))],
                None,
                T
            ),
            Some(U)
        );
        assert_eq!(
            decide_timed(
                Random,
                &[r("eu", said(D, 5)), r("us", said(Dg, 9))],
                None,
                T
            ),
            Some(Dg)
        );
        // The picked region timed out (a hang); the confirmer, asked in time, saw it up.
        let late_ask = RegionRun::Reported {
            asked_ms: 3_500,
            verdict: U,
            at_ms: 7_000,
        };
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("local", said(D, 5_000)), r("eu", late_ask)],
                None,
                T
            ),
            Some(U)
        );
        // A confirmation after the deadline is no confirmation, and the region had its time:
        // its silence is its own trouble, the failure counts.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("local", said(D, 5_000)), r("eu", said(U, 9_600))],
                None,
                T
            ),
            Some(D)
        );
        // Silent with its whole time: the only region that could report decides.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(D, 10)), r("us", silent)],
                None,
                T
            ),
            Some(D)
        );
        assert_eq!(
            decide_timed(RoundRobin, &[r("eu", said(D, 10))], None, T),
            Some(D)
        );
        // Another live region was not asked, or too late to answer: nothing is decided.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(D, 10)), r("us", RegionRun::NotAsked)],
                None,
                T
            ),
            None
        );
        assert_eq!(
            decide_timed(
                Random,
                &[
                    r("eu", said(D, 10)),
                    r("us", RegionRun::Silent { asked_ms: 5_000 })
                ],
                None,
                T
            ),
            None
        );
        // Not a failure: no confirmation is looked at.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(U, 10)), r("us", RegionRun::NotAsked)],
                None,
                T
            ),
            Some(U)
        );
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", RegionRun::Pending { asked_ms: 0 })],
                None,
                T
            ),
            None
        );
        // `all` is the quorum over everything that came in time.
        assert_eq!(
            decide_timed(All, &[r("eu", said(D, 1)), r("us", said(U, 1))], None, T),
            Some(U)
        );
        assert_eq!(
            decide_timed(All, &[r("eu", said(D, 1)), r("us", silent)], None, T),
            Some(D)
        );
        // An explicit quorum of one still needs a second region under round_robin.
        assert_eq!(
            decide_timed(
                RoundRobin,
                &[r("eu", said(D, 1)), r("us", said(U, 2))],
                Some(1),
                T
            ),
            Some(U)
        );
    }

    #[test]
    fn when_to_confirm() {
        assert!(confirm_from_start(0, 1, 10_000, 1_500));
        assert!(confirm_from_start(1, 3, 10_000, 1_500));
        assert!(!confirm_from_start(0, 3, 10_000, 1_500));
        // Interval 2 s, timeout 1 s: no room for two answers in a row.
        assert!(confirm_from_start(0, 3, 2_000, 1_500));
        assert!(!confirm_from_start(0, 3, 3_500, 1_500));
        assert_eq!(T.last_full_ask_ms(), 3_500);
        let tight = CycleTiming {
            deadline_ms: 1_500,
            needed_ms: 1_750,
        };
        assert_eq!(tight.last_full_ask_ms(), 0);
        let pending = RegionRun::Pending { asked_ms: 0 };
        // A failure or a silence asks the others at once; an answer saying up never does.
        assert!(ask_the_others(&[said(D, 10), RegionRun::NotAsked], T, 10));
        assert!(ask_the_others(
            &[RegionRun::Silent { asked_ms: 0 }, RegionRun::NotAsked],
            T,
            10
        ));
        assert!(!ask_the_others(
            &[said(U, 10), RegionRun::NotAsked],
            T,
            9_000
        ));
        assert!(!ask_the_others(
            &[said(D, 10), said(U, 20), RegionRun::NotAsked],
            T,
            30
        ));
        // A slow picked region: the others are asked when their whole answer still fits.
        assert!(!ask_the_others(&[pending, RegionRun::NotAsked], T, 3_499));
        assert!(ask_the_others(&[pending, RegionRun::NotAsked], T, 3_500));
        // A run that began too late for that waits for the picked region's answer.
        assert!(!ask_the_others(&[pending, RegionRun::NotAsked], tight, 0));
        assert!(!ask_the_others(
            &[pending, RegionRun::NotAsked],
            tight,
            1_000
        ));
        assert!(ask_the_others(
            &[said(D, 1_000), RegionRun::NotAsked],
            tight,
            1_000
        ));
        // Nobody left to ask, or two regions on it already.
        assert!(!ask_the_others(&[said(D, 10), pending], T, 5_000));
        assert!(!ask_the_others(
            &[pending, pending, RegionRun::NotAsked],
            T,
            5_000
        ));
        assert!(!ask_the_others(
            &[said(D, 10), pending, RegionRun::NotAsked],
            T,
            5_000
        ));
        // Settled: two failures of two live regions; not while a third could outvote them.
        let r = |s: &str, run| (s.to_string(), run);
        assert!(down_is_settled(
            RegionStrategy::RoundRobin,
            &[r("a", said(D, 1)), r("b", said(D, 2)), r("c", pending)],
            None,
            T
        ));
        assert!(!down_is_settled(
            RegionStrategy::RoundRobin,
            &[r("a", said(D, 1)), r("b", pending)],
            None,
            T
        ));
        assert!(!down_is_settled(
            RegionStrategy::RoundRobin,
            &[
                r("a", said(D, 1)),
                r("b", said(D, 2)),
                r("c", pending),
                r("d", pending)
            ],
            None,
            T
        ));
    }

    #[test]
    fn confirmation_goes_round_from_the_picked_region() {
        let rs = regions(&["eu", "us", "ap"]);
        assert_eq!(
            confirmation_order(&rs, &regions(&["us"])),
            regions(&["ap", "eu"])
        );
        assert_eq!(
            confirmation_order(&rs, &regions(&["ap"])),
            regions(&["eu", "us"])
        );
        assert_eq!(
            confirmation_order(&rs, &regions(&["eu"])),
            regions(&["us", "ap"])
        );
        assert!(confirmation_order(&regions(&["eu"]), &regions(&["eu"])).is_empty());
    }
}
