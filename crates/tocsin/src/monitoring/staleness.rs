//! Monitors nobody is checking. A monitor whose only region lost its probe stays `UP` with no
//! heartbeats: its status says nothing, so the blind spot must be said out loud. [`scan`]
//! (run by the scheduler while this node holds the scheduler role, so one node judges) marks an
//! active checked monitor **stale** when
//!
//! - it has had no check result for [`STALE_AFTER_INTERVALS`] intervals, or
//! - none of its regions has a live probe (the built-in `local` region always has one) and it
//!   has had no result for one interval,
//!
//! both counted from the later of its last result, its start (creation or resume) and when
//! this node began scheduling (`floor_ms`), so a restart or a fresh role does not find every
//! monitor stale before its first slot. Marking writes `stale_since` and a `stale` event
//! ([`super::transition::record_staleness`]) that alerting turns into a notification; the
//! cycle that stores a result again clears it with a `fresh` event ([`super::cycle`]). The
//! number of stale monitors is the `monitors_stale` gauge, counted from the store at each
//! scrape (so every node shows it). PUSH monitors are never stale:
//! a missed push makes them DOWN.

use std::collections::HashSet;

use super::runner::Runner;
use super::transition::{record_staleness, Staleness};
use super::LOCAL_REGION;
use crate::alerting::ack_link::Links;
use crate::store::monitors::{self, Overdue};

/// Intervals without a result after which a monitor is stale.
pub const STALE_AFTER_INTERVALS: i64 = 3;

/// Why `m` is stale at `now_ms`, if it is. `live` says whether a remote region has a probe.
pub fn judge(
    m: &Overdue,
    now_ms: i64,
    floor_ms: i64,
    live: impl Fn(&str) -> bool,
) -> Option<String> {
    let interval_ms = m.interval_s.max(1).saturating_mul(1000);
    let since = m
        .last_check_at
        .unwrap_or(m.started_at)
        .max(m.started_at)
        .max(floor_ms);
    let silent_ms = now_ms.saturating_sub(since);
    let regions: Vec<String> = serde_json::from_str(&m.regions).unwrap_or_default();
    let none_live = !regions.is_empty() && regions.iter().all(|r| r != LOCAL_REGION && !live(r));
    if none_live && silent_ms >= interval_ms {
        return Some(format!(
            "no region of this monitor has a live probe ({}): nothing is checking it",
            regions.join(", ")
        ));
    }
    if silent_ms >= interval_ms.saturating_mul(STALE_AFTER_INTERVALS) {
        return Some(format!(
            "no check result for {} s ({STALE_AFTER_INTERVALS} intervals of {} s): nothing is \
             checking it",
            silent_ms / 1000,
            m.interval_s
        ));
    }
    None
}

/// Marks the monitors that are stale at `now_ms` (see the module documentation); returns how
/// many it marked.
pub async fn scan(state: &Runner, now_ms: i64, floor_ms: i64) -> Result<usize, sqlx::Error> {
    let overdue = monitors::list_overdue(state.cx().db().reader(), now_ms).await?;
    let mut marked = 0;
    for m in &overdue {
        let Some(why) = judge(m, now_ms, floor_ms, |r| {
            crate::probes::is_live(state.probes(), state.relay(), r)
        }) else {
            continue;
        };
        let mut tx = state.cx().db().begin().await?;
        let stale = Staleness::Stale {
            since: now_ms,
            why: &why,
        };
        if record_staleness(&mut tx, &Links::of(state.cx()), &m.id, stale)
            .await?
            .is_some()
        {
            tx.commit().await?;
            state.cx().wake_deliveries();
            marked += 1;
            tracing::warn!(monitor = %m.id, %why, "monitor is stale");
        } else {
            tx.rollback().await?;
        }
    }
    Ok(marked)
}

/// The regions that had a live remote probe at the last look: one leaving the set has lost
/// its last probe, which is said once (`region.down`), until a probe connects again.
#[derive(Debug, Default)]
pub struct RegionWatch {
    live: HashSet<String>,
}

impl RegionWatch {
    /// The regions live before and not now; remembers what is live now.
    pub fn lost(&mut self, now_live: HashSet<String>) -> Vec<String> {
        let mut lost: Vec<String> = self.live.difference(&now_live).cloned().collect();
        lost.sort();
        self.live = now_live;
        lost
    }
}

/// Notifies the default channels of the workspaces checking from a region that lost its last
/// live probe since the last call (run beside [`scan`], on the scheduling node, to which
/// probes connect); returns the regions lost.
pub async fn watch_regions(
    state: &Runner,
    watch: &mut RegionWatch,
    now_ms: i64,
) -> Result<Vec<String>, sqlx::Error> {
    let live: HashSet<String> = state
        .probes()
        .snapshot()
        .into_iter()
        .filter(|(_, v)| !v.probes.is_empty())
        .map(|(r, _)| r)
        .collect();
    let lost = watch.lost(live);
    for region in &lost {
        tracing::warn!(%region, "region lost its last live probe");
        let mut tx = state.cx().db().begin().await?;
        crate::alerting::alerts::region_down(&mut tx, region, now_ms).await?;
        tx.commit().await?;
        state.cx().wake_deliveries();
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overdue(regions: &str, last: Option<i64>) -> Overdue {
        Overdue {
            id: "m".into(),
            interval_s: 10,
            last_check_at: last,
            started_at: 0,
            regions: regions.into(),
        }
    }

    #[test]
    fn a_region_is_lost_once_until_it_comes_back() {
        let set = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<HashSet<String>>();
        let mut w = RegionWatch::default();
        assert!(w.lost(set(&["eu"])).is_empty());
        assert_eq!(w.lost(set(&[])), ["eu"]);
        assert!(w.lost(set(&[])).is_empty());
        assert!(w.lost(set(&["eu", "us"])).is_empty());
        assert_eq!(w.lost(set(&["eu"])), ["us"]);
    }

    #[test]
    fn three_silent_intervals_make_a_monitor_stale() {
        let m = overdue(r#"["local"]"#, Some(100_000));
        assert!(judge(&m, 129_999, 0, |_| true).is_none());
        assert!(judge(&m, 130_000, 0, |_| true).is_some());
        // Counted from when this node began scheduling.
        assert!(judge(&m, 130_000, 120_000, |_| true).is_none());
    }

    #[test]
    fn no_live_probe_in_any_region_is_stale_after_one_interval() {
        let m = overdue(r#"["eu-west"]"#, Some(100_000));
        assert!(judge(&m, 109_999, 0, |_| false).is_none());
        let why = judge(&m, 110_000, 0, |_| false).unwrap_or_default();
        assert!(why.contains("eu-west"), "{why}");
        // A live probe: only the three-interval rule applies.
        assert!(judge(&m, 110_000, 0, |_| true).is_none());
        // `local` always has a probe.
        let m = overdue(r#"["local","eu-west"]"#, Some(100_000));
        assert!(judge(&m, 110_000, 0, |_| false).is_none());
    }
}
