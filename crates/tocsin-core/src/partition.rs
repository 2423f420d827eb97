//! Partitions of the monitors, and how nodes share them: the pure arithmetic under
//! partitioned scheduling (the leases that hold them live in the service's `cluster`).
//!
//! A monitor belongs to partition `seq mod COUNT` (`seq` is its compact integer key, given in
//! creation order, so consecutive monitors spread over the partitions). A node checks the
//! monitors of the partitions it holds. [`plan`] says which node should hold each partition,
//! balancing the nodes by the monitors their partitions hold and moving as few partitions as
//! it can: every node computes it from the same view (the live nodes, the partitions'
//! monitor counts, who holds what) and takes or gives up partitions to match it.

use std::collections::HashMap;

/// How many partitions the monitors are split into. Fixed: a monitor's partition must not
/// change while nodes run, and 256 spreads 1 million monitors in shares of about 4,000,
/// fine enough to balance a few dozen nodes within a few percent.
pub const COUNT: usize = 256;

/// The partition of the monitor whose `seq` this is.
pub fn of_seq(seq: i64) -> usize {
    // rem_euclid of a positive modulus is in 0..COUNT.
    usize::try_from(seq.rem_euclid(COUNT as i64)).unwrap_or(0)
}

/// The partition each node should hold: `result[p]` is an index into `nodes` (`None` only
/// when there is no node). `monitors[p]` counts the monitors of partition `p`; `holders[p]`
/// names its current holder, if any. A partition stays with a live holder as long as that
/// holder stays within its fair share (by monitors and by partitions, each with the slack of
/// one partition), so a join or a leave moves only what it must; the rest goes, biggest
/// first, to whichever node holds least.
pub fn plan(
    nodes: &[String],
    monitors: &[u64; COUNT],
    holders: &[Option<String>; COUNT],
) -> [Option<usize>; COUNT] {
    let mut out = [None; COUNT];
    let n = nodes.len();
    if n == 0 {
        return out;
    }
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let total: u64 = monitors.iter().sum();
    let biggest = monitors.iter().copied().max().unwrap_or(0);
    let cap_monitors = total.div_ceil(n as u64) + biggest;
    let cap_partitions = COUNT.div_ceil(n) + 1;
    let mut load = vec![(0u64, 0usize); n];
    // Biggest partitions first, so the slack is spent on small ones.
    let mut order: Vec<usize> = (0..COUNT).collect();
    order.sort_by_key(|&p| (std::cmp::Reverse(monitors[p]), p));
    for &p in &order {
        let Some(h) = holders[p].as_deref().and_then(|h| index.get(h).copied()) else {
            continue;
        };
        let (m, k) = load[h];
        if m + monitors[p] <= cap_monitors && k < cap_partitions {
            load[h] = (m + monitors[p], k + 1);
            out[p] = Some(h);
        }
    }
    for &p in &order {
        if out[p].is_some() {
            continue;
        }
        let (h, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(i, l)| (**l, *i))
            .unwrap_or((0, &(0, 0)));
        load[h].0 += monitors[p];
        load[h].1 += 1;
        out[p] = Some(h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("node-{i}")).collect()
    }

    /// Monitors with seq 1..=n, as a fresh server numbers them.
    fn counts(n: i64) -> [u64; COUNT] {
        let mut c = [0; COUNT];
        for seq in 1..=n {
            c[of_seq(seq)] += 1;
        }
        c
    }

    fn shares(out: &[Option<usize>; COUNT], c: &[u64; COUNT], n: usize) -> Vec<u64> {
        let mut s = vec![0; n];
        for p in 0..COUNT {
            s[out[p].expect("every partition has a node")] += c[p];
        }
        s
    }

    fn holders_of(out: &[Option<usize>; COUNT], nodes: &[String]) -> [Option<String>; COUNT] {
        std::array::from_fn(|p| out[p].map(|i| nodes[i].clone()))
    }

    #[test]
    fn three_hundred_monitors_on_three_nodes_come_out_near_a_hundred_each() {
        let c = counts(300);
        let nodes = names(3);
        let out = plan(&nodes, &c, &std::array::from_fn(|_| None));
        let s = shares(&out, &c, 3);
        assert_eq!(s.iter().sum::<u64>(), 300);
        assert!(s.iter().all(|&x| (98..=102).contains(&x)), "{s:?}");
    }

    #[test]
    fn a_joining_node_takes_a_share_and_the_others_keep_the_rest() {
        let c = counts(300);
        let three = names(3);
        let before = plan(&three, &c, &std::array::from_fn(|_| None));
        let four = names(4);
        let held = holders_of(&before, &three);
        let after = plan(&four, &c, &held);
        let s = shares(&after, &c, 4);
        let (lo, hi) = (s.iter().min().copied(), s.iter().max().copied());
        assert!(
            hi.unwrap_or(0) as f64 <= lo.unwrap_or(0) as f64 * 1.2,
            "{s:?}"
        );
        // Only what the new node takes moves.
        let moved = (0..COUNT)
            .filter(|&p| before[p] != after[p] && after[p] != Some(3))
            .count();
        assert_eq!(moved, 0);
    }

    #[test]
    fn a_dead_nodes_partitions_go_to_the_living_and_nothing_else_moves() {
        let c = counts(300);
        let three = names(3);
        let before = plan(&three, &c, &std::array::from_fn(|_| None));
        let held = holders_of(&before, &three);
        let two = vec![three[0].clone(), three[2].clone()];
        let after = plan(&two, &c, &held);
        for p in 0..COUNT {
            let was = before[p].map(|i| three[i].clone());
            let now = after[p].map(|i| two[i].clone());
            if was.as_deref() != Some("node-1") {
                assert_eq!(was, now, "partition {p} moved");
            }
        }
        let s = shares(&after, &c, 2);
        assert!(s.iter().all(|&x| (148..=152).contains(&x)), "{s:?}");
    }

    #[test]
    fn the_same_view_gives_the_same_plan() {
        let c = counts(1_000);
        let nodes = names(5);
        let held: [Option<String>; COUNT] =
            std::array::from_fn(|p| (p % 3 == 0).then(|| nodes[p % 5].clone()));
        assert_eq!(plan(&nodes, &c, &held), plan(&nodes, &c, &held));
        assert_eq!(plan(&[], &c, &held), [None; COUNT]);
    }

    #[test]
    fn empty_partitions_spread_too() {
        let c = [0; COUNT];
        let nodes = names(3);
        let out = plan(&nodes, &c, &std::array::from_fn(|_| None));
        let mut k = [0; 3];
        for o in out {
            k[o.unwrap_or(0)] += 1;
        }
        assert!(k.iter().all(|&x| (85..=86).contains(&x)), "{k:?}");
    }

    #[test]
    fn seq_maps_into_the_range() {
        assert_eq!(of_seq(0), 0);
        assert_eq!(of_seq(257), 1);
        assert_eq!(of_seq(-1), COUNT - 1);
    }
}
