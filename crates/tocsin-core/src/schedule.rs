//! Scheduler math: when each monitor's check cycles run.
//!
//! Every monitor runs on a fixed grid `anchor + offset + k * interval` (k = 0, 1, 2, ...).
//! - The **offset** is a stable hash of the monitor id mapped into `[0, interval)`, so 100,000
//!   monitors with a 60 s interval spread evenly over the minute instead of all firing at the
//!   top of it, and a monitor keeps its phase across restarts, processes and releases.
//! - The grid is computed from the anchor, never from "last run + interval", so a run that
//!   starts or finishes late does not push later runs back: there is no drift, and a
//!   scheduler that wakes up late runs the monitor once (see [`due_runs`]) rather than
//!   catching up every missed slot.
//!
//! All times are milliseconds since the Unix epoch; the caller supplies `now`.

/// The hash behind [`start_offset`]: 64-bit FNV-1a over the id's UTF-8 bytes, then the
/// SplitMix64 finalizer. FNV-1a alone mixes its last bytes poorly into the high bits, and ids
/// often differ only in their last characters (sequential or time-ordered ids), so the
/// finalizer is what makes the spread even.
///
/// These constants are part of the on-disk contract: changing them moves every monitor's
/// phase. A golden-value test pins them.
pub fn stable_hash(id: &str) -> u64 {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = FNV_OFFSET;
    for &b in id.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    // SplitMix64 finalizer.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The monitor's phase within its interval, in `[0, interval_ms)` (0 when the interval is 0).
/// Stable: depends only on the id and the interval.
pub fn start_offset(monitor_id: &str, interval_ms: u64) -> u64 {
    // Multiply-high maps the full 64-bit hash onto the range without modulo bias and uses
    // the best-mixed (high) bits.
    let scaled = (u128::from(stable_hash(monitor_id)) * u128::from(interval_ms)) >> 64;
    // scaled < interval_ms <= u64::MAX, so the conversion cannot fail.
    u64::try_from(scaled).unwrap_or(0)
}

/// The smallest `anchor + offset + k * interval` (k >= 0) strictly greater than `now`.
///
/// Strictly greater, so a run that fires exactly on its slot and asks "what next?" gets the
/// following slot, never the same one again. An interval of 0 is treated as 1 ms. Saturates
/// at `i64::MAX` instead of overflowing.
pub fn next_run_after(anchor_ms: i64, offset_ms: u64, interval_ms: u64, now_ms: i64) -> i64 {
    let interval = i128::from(interval_ms.max(1));
    let phase = i128::from(anchor_ms) + i128::from(offset_ms);
    let now = i128::from(now_ms);
    let next = if now < phase {
        phase
    } else {
        // now >= phase: k = floor((now - phase) / interval) + 1.
        phase + ((now - phase) / interval + 1) * interval
    };
    clamp_i64(next)
}

/// The latest slot at or before `now`, or `None` if the first slot is still ahead.
pub fn last_run_at_or_before(
    anchor_ms: i64,
    offset_ms: u64,
    interval_ms: u64,
    now_ms: i64,
) -> Option<i64> {
    let interval = i128::from(interval_ms.max(1));
    let phase = i128::from(anchor_ms) + i128::from(offset_ms);
    let now = i128::from(now_ms);
    (now >= phase).then(|| clamp_i64(phase + (now - phase) / interval * interval))
}

/// How many slots fall in `(after_ms, until_ms]`. A scheduler that last ran the monitor at
/// `after_ms` and wakes at `until_ms` runs it once if this is >= 1; a value > 1 means slots
/// were skipped (worth a metric, not a burst of catch-up checks).
pub fn due_runs(
    anchor_ms: i64,
    offset_ms: u64,
    interval_ms: u64,
    after_ms: i64,
    until_ms: i64,
) -> u64 {
    let interval = i128::from(interval_ms.max(1));
    let phase = i128::from(anchor_ms) + i128::from(offset_ms);
    // Number of slots at or before t: 0 before the first slot.
    let slots_through = |t: i64| -> i128 {
        let t = i128::from(t);
        if t < phase {
            0
        } else {
            (t - phase) / interval + 1
        }
    };
    let n = slots_through(until_ms) - slots_through(after_ms);
    u64::try_from(n.max(0)).unwrap_or(u64::MAX)
}

/// One monitor's grid, for callers that prefer a value to four loose numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    pub anchor_ms: i64,
    pub offset_ms: u64,
    pub interval_ms: u64,
}

impl Grid {
    /// The grid of `monitor_id`, anchored at the Unix epoch so phases are global and fixed.
    pub fn for_monitor(monitor_id: &str, interval_ms: u64) -> Grid {
        Grid {
            anchor_ms: 0,
            offset_ms: start_offset(monitor_id, interval_ms),
            interval_ms,
        }
    }

    /// See [`next_run_after`].
    pub fn next_run_after(&self, now_ms: i64) -> i64 {
        next_run_after(self.anchor_ms, self.offset_ms, self.interval_ms, now_ms)
    }

    /// See [`last_run_at_or_before`].
    pub fn last_run_at_or_before(&self, now_ms: i64) -> Option<i64> {
        last_run_at_or_before(self.anchor_ms, self.offset_ms, self.interval_ms, now_ms)
    }

    /// See [`due_runs`].
    pub fn due_runs(&self, after_ms: i64, until_ms: i64) -> u64 {
        due_runs(
            self.anchor_ms,
            self.offset_ms,
            self.interval_ms,
            after_ms,
            until_ms,
        )
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A deterministic generator for test ids (no clock, no OS randomness).
    struct SplitMix(u64);
    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    fn uuid_v4_like(rng: &mut SplitMix) -> String {
        let (a, b) = (rng.next(), rng.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }

    /// Time-ordered ids, as the server mints them: a shared millisecond prefix, random tail.
    fn uuid_v7_like(rng: &mut SplitMix, i: u64) -> String {
        let ms = 1_760_000_000_000u64 + i / 16;
        let r = rng.next();
        format!(
            "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
            ms >> 16,
            ms & 0xffff,
            r & 0xfff,
            ((r >> 12) & 0x3fff) | 0x8000,
            (r >> 16) & 0xffff_ffff_ffff
        )
    }

    /// Bucket the offsets of `ids` into `buckets` equal slots of `interval_ms`; return the
    /// busiest bucket's count over the mean.
    fn peak_over_mean(ids: &[String], interval_ms: u64, buckets: u64) -> f64 {
        let mut counts = vec![0u32; usize::try_from(buckets).unwrap_or(0)];
        let width = interval_ms / buckets;
        for id in ids {
            let off = start_offset(id, interval_ms);
            assert!(off < interval_ms);
            counts[usize::try_from(off / width).unwrap_or(0)] += 1;
        }
        let mean = ids.len() as f64 / buckets as f64;
        f64::from(counts.iter().copied().max().unwrap_or(0)) / mean
    }

    #[test]
    fn offsets_spread_evenly_over_the_minute() {
        let mut rng = SplitMix(42);
        let v4: Vec<String> = (0..100_000).map(|_| uuid_v4_like(&mut rng)).collect();
        let v7: Vec<String> = (0..100_000).map(|i| uuid_v7_like(&mut rng, i)).collect();
        let seq: Vec<String> = (0..100_000).map(|i| format!("mon_{i}")).collect();
        for (name, ids) in [("v4", &v4), ("v7", &v7), ("sequential", &seq)] {
            // The busiest second holds at most 1.5x the mean (mean ~1667).
            let per_second = peak_over_mean(ids, 60_000, 60);
            assert!(
                per_second <= 1.5,
                "{name}: busiest second is {per_second:.3}x the mean"
            );
            // Finer: 100 ms buckets (mean ~167) stay within 1.5x too.
            let per_100ms = peak_over_mean(ids, 60_000, 600);
            assert!(
                per_100ms <= 1.5,
                "{name}: busiest 100 ms is {per_100ms:.3}x the mean"
            );
        }
    }

    #[test]
    fn offsets_are_stable_across_versions() {
        // Golden values (computed independently): if this fails, every deployed monitor
        // would change phase.
        let golden: [(&str, u64, u64); 4] = [
            ("", 0xf52a_15e9_a9b5_e89b, 57_460),
            ("a", 0x02c0_bdbf_4814_20f8, 645),
            (
                "0191b2c4-7e1a-7c3d-9f00-123456789abc",
                0xb5f6_b2d4_4f1c_f4a5,
                42_647,
            ),
            ("mon_1", 0x8a10_cd10_5eed_26f4, 32_359),
        ];
        for (id, hash, offset_60s) in golden {
            assert_eq!(stable_hash(id), hash, "{id:?}");
            assert_eq!(start_offset(id, 60_000), offset_60s, "{id:?}");
        }
    }

    #[test]
    fn offset_edge_cases() {
        assert_eq!(start_offset("anything", 0), 0);
        assert_eq!(start_offset("anything", 1), 0);
        assert!(start_offset("anything", u64::MAX) < u64::MAX);
        assert_eq!(start_offset("x", 60_000), start_offset("x", 60_000));
    }

    #[test]
    fn next_run_examples() {
        // Anchor 0, offset 7 s, every 60 s.
        assert_eq!(next_run_after(0, 7_000, 60_000, 0), 7_000);
        assert_eq!(next_run_after(0, 7_000, 60_000, 6_999), 7_000);
        // Exactly on a slot: strictly after, so the next one.
        assert_eq!(next_run_after(0, 7_000, 60_000, 7_000), 67_000);
        assert_eq!(next_run_after(0, 7_000, 60_000, 7_001), 67_000);
        // Before the anchor: the first slot.
        assert_eq!(next_run_after(1_000_000, 5, 60_000, 0), 1_000_005);
        // Degenerate interval and overflow.
        assert_eq!(next_run_after(0, 0, 0, 41), 42);
        assert_eq!(
            next_run_after(i64::MAX - 10, 5, 1_000, i64::MAX - 1),
            i64::MAX
        );
        assert_eq!(last_run_at_or_before(0, 7_000, 60_000, 6_999), None);
        assert_eq!(last_run_at_or_before(0, 7_000, 60_000, 7_000), Some(7_000));
        assert_eq!(
            last_run_at_or_before(0, 7_000, 60_000, 126_999),
            Some(67_000)
        );
        assert_eq!(due_runs(0, 7_000, 60_000, 7_000, 67_000), 1);
        assert_eq!(due_runs(0, 7_000, 60_000, 7_000, 66_999), 0);
        assert_eq!(due_runs(0, 7_000, 60_000, 0, 187_000), 4);
        assert_eq!(due_runs(0, 7_000, 60_000, 187_000, 0), 0);
    }

    #[test]
    fn late_runs_do_not_drift() {
        // A run that finishes late (up to 59 s) must not move the following slots.
        let grid = Grid::for_monitor("mon_drift", 60_000);
        let mut rng = SplitMix(7);
        let mut slot = grid.next_run_after(1_760_000_000_000);
        let first = slot;
        for k in 1..=10_000i64 {
            let lateness = i64::try_from(rng.next() % 59_000).unwrap_or(0);
            let finished = slot + lateness;
            slot = grid.next_run_after(finished);
            assert_eq!(slot, first + k * 60_000);
        }
    }

    proptest! {
        #[test]
        fn next_run_is_the_smallest_slot_after_now(
            anchor in -1_000_000_000_000i64..1_000_000_000_000,
            interval in 1u64..10_000_000,
            offset_seed: u64,
            now in -2_000_000_000_000i64..2_000_000_000_000,
        ) {
            let offset = offset_seed % interval;
            let next = next_run_after(anchor, offset, interval, now);
            let phase = anchor + offset as i64;
            prop_assert!(next > now);
            prop_assert!(next >= phase);
            prop_assert_eq!((next - phase) % interval as i64, 0);
            // Smallest: the slot before is at or before now, or before the first slot.
            let prev = next - interval as i64;
            prop_assert!(prev <= now || prev < phase);
            // Idempotent: asking again from any moment before it gives the same slot.
            prop_assert_eq!(next_run_after(anchor, offset, interval, next - 1), next);
            prop_assert_eq!(next_run_after(anchor, offset, interval, now), next);
            // Consistent with the other helpers.
            if let Some(last) = last_run_at_or_before(anchor, offset, interval, now) {
                prop_assert!(last <= now && last + interval as i64 == next);
            } else {
                prop_assert_eq!(next, phase);
            }
            prop_assert_eq!(due_runs(anchor, offset, interval, now, next), 1);
            prop_assert_eq!(due_runs(anchor, offset, interval, now, next - 1), 0);
        }

        #[test]
        fn offset_in_range(id in ".{0,40}", interval in 1u64..u64::MAX) {
            prop_assert!(start_offset(&id, interval) < interval);
        }
    }
}
