//! Multi-region checks: which regions run a monitor's cycle ([`pick_regions`]) and how their
//! verdicts combine into the one verdict the state machine sees ([`aggregate`]).
//!
//! The rules protect against false alarms from a single sick probe: a cycle fails only when
//! a quorum of *reporting* regions failed; a region with no result (no live probe, result not
//! in yet) never counts as a failure; and a cycle where nobody reported yields no verdict at
//! all, so the state machine is not stepped and cannot go `DOWN` because probes vanished.

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

/// Whether a cycle's verdict needs a second region before it counts. Under `round_robin` and
/// `random` one region checks each cycle, so that region's own trouble (its network, its
/// probe, a target that refuses only it) would page on its own: a failure from the picked
/// region is confirmed from another region of the monitor first. Under `all` every region
/// already reported and the quorum decides.
pub fn needs_confirmation(
    strategy: RegionStrategy,
    verdict: Option<Verdict>,
    regions: usize,
) -> bool {
    strategy != RegionStrategy::All && verdict == Some(Verdict::Down) && regions > 1
}

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

/// A cycle's verdict under `strategy`. `results` are the picked regions' reports followed,
/// under `round_robin` and `random`, by the confirming regions' (see [`needs_confirmation`]):
///
/// - `all`: [`aggregate`] over every result.
/// - `round_robin` / `random`: the picked region's verdict, except that a failure counts only
///   when the first confirming region that reported also failed, or when no other region
///   could report (the picked one is the only live region). A confirming region that saw the
///   target up (or degraded, or changed) gives the cycle its verdict instead.
pub fn decide<R>(
    strategy: RegionStrategy,
    results: &[(R, Option<Verdict>)],
    picked: usize,
    quorum: Option<usize>,
) -> Option<Verdict> {
    if strategy == RegionStrategy::All {
        return aggregate(results, quorum);
    }
    let picked_n = picked.min(results.len());
    let first = aggregate(&results[..picked_n], quorum)?;
    if first != Verdict::Down {
        return Some(first);
    }
    match results[picked_n..].iter().find_map(|(_, v)| *v) {
        Some(confirming) => Some(confirming),
        None => Some(Verdict::Down),
    }
}

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

    #[test]
    fn one_region_failure_needs_a_second_region() {
        use RegionStrategy::{All, Random, RoundRobin};
        assert!(needs_confirmation(RoundRobin, Some(D), 2));
        assert!(needs_confirmation(Random, Some(D), 3));
        assert!(!needs_confirmation(RoundRobin, Some(D), 1));
        assert!(!needs_confirmation(All, Some(D), 3));
        assert!(!needs_confirmation(Random, Some(U), 3));
        assert!(!needs_confirmation(Random, None, 3));
        let r = |s: &str, v| (s.to_string(), v);
        // Confirmed by a second region: down.
        assert_eq!(
            decide(RoundRobin, &[r("eu", Some(D)), r("us", Some(D))], 1, None),
            Some(D)
        );
        // The second region sees it up: the cycle is up.
        assert_eq!(
            decide(RoundRobin, &[r("eu", Some(D)), r("us", Some(U))], 1, None),
            Some(U)
        );
        assert_eq!(
            decide(Random, &[r("eu", Some(D)), r("us", Some(Dg))], 1, None),
            Some(Dg)
        );
        // The first confirming region that reported decides; silent ones are skipped.
        assert_eq!(
            decide(
                Random,
                &[r("eu", Some(D)), r("us", None), r("ap", Some(U))],
                1,
                None
            ),
            Some(U)
        );
        // Nobody else could report: the only live region's failure counts.
        assert_eq!(
            decide(RoundRobin, &[r("eu", Some(D)), r("us", None)], 1, None),
            Some(D)
        );
        assert_eq!(decide(RoundRobin, &[r("eu", Some(D))], 1, None), Some(D));
        // Not a failure: no confirmation is looked at.
        assert_eq!(
            decide(RoundRobin, &[r("eu", Some(U)), r("us", Some(D))], 1, None),
            Some(U)
        );
        assert_eq!(decide(RoundRobin, &[r("eu", None)], 1, None), None);
        // `all` is the quorum over everything.
        assert_eq!(
            decide(All, &[r("eu", Some(D)), r("us", Some(U))], 2, None),
            Some(U)
        );
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
