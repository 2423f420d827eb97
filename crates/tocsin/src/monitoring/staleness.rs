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
//! monitor stale before its first slot.
//!
//! The look runs every 2 s and reads nothing while monitors report: the scheduler keeps each
//! scheduled monitor's silence in memory ([`Silences`]: loaded with the row, moved by every
//! cycle it stores), so finding the candidates is a pass over memory, and only a candidate's
//! row is read, to judge it by what the database says (a result stored by another node, an
//! on-demand check, is newer than memory, never older). Reading every monitor row every 2 s
//! was most of what an idle server did. Marking writes `stale_since` and a `stale` event
//! ([`super::transition::record_staleness`]) that alerting turns into a notification; the
//! cycle that stores a result again clears it with a `fresh` event ([`super::cycle`]). The
//! number of stale monitors is the `monitors_stale` gauge, counted from the store at each
//! scrape (so every node shows it). PUSH monitors are never stale:
//! a missed push makes them DOWN.

use std::collections::{HashMap, HashSet};

use super::runner::Runner;
use super::transition::{record_staleness, Staleness};
use super::LOCAL_REGION;
use crate::alerting::ack_link::Links;
use crate::store::monitors::{self, Overdue};

/// Intervals without a result after which a monitor is stale.
pub const STALE_AFTER_INTERVALS: i64 = 3;

/// How long a monitor has been silent, as far as staleness is concerned.
#[derive(Debug, Clone, Copy)]
pub struct Silent<'a> {
    pub interval_s: i64,
    /// The later of its last result and its start.
    pub since: i64,
    pub regions: &'a [String],
}

/// Since when a monitor with this last result and start has been silent: the later of the two.
pub fn silent_since(last_check_at: Option<i64>, started_at: i64) -> i64 {
    last_check_at.unwrap_or(started_at).max(started_at)
}

impl Overdue {
    /// See [`silent_since`].
    pub fn since(&self) -> i64 {
        silent_since(self.last_check_at, self.started_at)
    }
}

/// Why a monitor silent as `m` says is stale at `now_ms`, if it is. `live` says whether a
/// remote region has a probe.
pub fn judge(
    m: Silent<'_>,
    now_ms: i64,
    floor_ms: i64,
    live: impl Fn(&str) -> bool,
) -> Option<String> {
    let interval_ms = m.interval_s.max(1).saturating_mul(1000);
    let silent_ms = now_ms.saturating_sub(m.since.max(floor_ms));
    let regions = m.regions;
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

/// What the scheduler knows of its monitors' silence (see the module documentation):
/// `since` never runs ahead of the database's, so a monitor memory finds silent is a
/// candidate to read, and one it finds reporting is one the database would too.
#[derive(Debug, Default)]
pub struct Silences {
    by_id: HashMap<String, Quiet>,
}

#[derive(Debug, Clone, Copy)]
struct Quiet {
    since: i64,
    /// Marked stale: not a candidate again until a result is stored.
    stale: bool,
}

impl Silences {
    /// As the monitor's row says, when it is loaded.
    pub fn loaded(&mut self, id: &str, since: i64, stale: bool) {
        self.by_id.insert(id.to_string(), Quiet { since, stale });
    }

    /// A cycle that started at `at_ms` stored a result (which also ends staleness).
    pub fn heard(&mut self, id: &str, at_ms: i64) {
        if let Some(q) = self.by_id.get_mut(id) {
            q.since = q.since.max(at_ms);
            q.stale = false;
        }
    }

    pub fn remove(&mut self, id: &str) {
        self.by_id.remove(id);
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
    }

    /// The monitors memory finds stale at `now_ms`; `silent` gives a monitor's interval and
    /// regions (`None`: no longer scheduled).
    pub fn candidates<'a>(
        &self,
        now_ms: i64,
        floor_ms: i64,
        silent: impl Fn(&str, i64) -> Option<Silent<'a>>,
        live: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        self.by_id
            .iter()
            .filter(|(_, q)| !q.stale)
            .filter_map(|(id, q)| {
                let m = silent(id, q.since)?;
                judge(m, now_ms, floor_ms, &live).map(|_| id.clone())
            })
            .collect()
    }
}

/// Judges `candidates` by their rows (see [`Silences`]) and marks those that are stale at
/// `now_ms`; `silences` learns what the rows said. Returns how many it marked.
pub async fn scan(
    state: &Runner,
    silences: &mut Silences,
    candidates: &[String],
    now_ms: i64,
    floor_ms: i64,
) -> Result<usize, sqlx::Error> {
    let mut marked = 0;
    for chunk in candidates.chunks(500) {
        let rows = monitors::overdue_rows(state.cx().db().reader(), chunk).await?;
        for m in &rows {
            silences.loaded(&m.id, m.since(), m.stale_since.is_some());
            if m.stale_since.is_some() {
                continue;
            }
            marked += mark(state, silences, m, now_ms, floor_ms).await?;
        }
    }
    Ok(marked)
}

/// [`scan`] over every active checked monitor in the store rather than the scheduler's
/// memory: what tests driving a manual clock call (as they call `scheduler::run_due`).
pub async fn scan_store(state: &Runner, now_ms: i64, floor_ms: i64) -> Result<usize, sqlx::Error> {
    let ids = monitors::unmarked_checked_ids(state.cx().db().reader()).await?;
    scan(state, &mut Silences::default(), &ids, now_ms, floor_ms).await
}

/// Marks `m` stale if its row says it is; 1 if it did.
async fn mark(
    state: &Runner,
    silences: &mut Silences,
    m: &Overdue,
    now_ms: i64,
    floor_ms: i64,
) -> Result<usize, sqlx::Error> {
    let regions: Vec<String> = serde_json::from_str(&m.regions).unwrap_or_default();
    let silent = Silent {
        interval_s: m.interval_s,
        since: m.since(),
        regions: &regions,
    };
    let Some(why) = judge(silent, now_ms, floor_ms, |r| {
        crate::probes::is_live(state.probes(), state.relay(), r)
    }) else {
        return Ok(0);
    };
    let marked = {
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
            tracing::warn!(monitor = %m.id, %why, "monitor is stale");
            1
        } else {
            tx.rollback().await?;
            0
        }
    };
    if marked == 1 {
        silences.loaded(&m.id, m.since(), true);
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

    fn silent(regions: &[String], last: i64) -> Silent<'_> {
        Silent {
            interval_s: 10,
            since: last,
            regions,
        }
    }

    fn names(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
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
        let local = names(&["local"]);
        let m = silent(&local, 100_000);
        assert!(judge(m, 129_999, 0, |_| true).is_none());
        assert!(judge(m, 130_000, 0, |_| true).is_some());
        // Counted from when this node began scheduling.
        assert!(judge(m, 130_000, 120_000, |_| true).is_none());
    }

    #[test]
    fn no_live_probe_in_any_region_is_stale_after_one_interval() {
        let eu = names(&["eu-west"]);
        let m = silent(&eu, 100_000);
        assert!(judge(m, 109_999, 0, |_| false).is_none());
        let why = judge(m, 110_000, 0, |_| false).unwrap_or_default();
        assert!(why.contains("eu-west"), "{why}");
        // A live probe: only the three-interval rule applies.
        assert!(judge(m, 110_000, 0, |_| true).is_none());
        // `local` always has a probe.
        let both = names(&["local", "eu-west"]);
        assert!(judge(silent(&both, 100_000), 110_000, 0, |_| false).is_none());
    }

    #[test]
    fn memory_names_the_silent_monitors_and_forgets_them_once_marked_or_heard() {
        let local = names(&["local"]);
        let mut s = Silences::default();
        s.loaded("quiet", 100_000, false);
        s.loaded("busy", 100_000, false);
        s.loaded("marked", 0, true);
        s.heard("busy", 125_000);
        let find = |s: &Silences| {
            let mut c = s.candidates(130_000, 0, |_, since| Some(silent(&local, since)), |_| true);
            c.sort();
            c
        };
        assert_eq!(find(&s), ["quiet"]);
        // A result ends the mark; a monitor no longer scheduled is no candidate.
        s.heard("marked", 129_000);
        s.loaded("gone", 0, false);
        let c = s.candidates(
            130_000,
            0,
            |id, since| (id != "gone").then(|| silent(&local, since)),
            |_| true,
        );
        assert_eq!(c, ["quiet"]);
        s.remove("quiet");
        s.remove("gone");
        assert!(find(&s).is_empty());
    }
}
