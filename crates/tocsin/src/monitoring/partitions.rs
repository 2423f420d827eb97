//! Partitioned scheduling: which monitors this node checks, and whose push deadlines it
//! judges, when several nodes share one PostgreSQL database. The share belongs to the
//! scheduling engines (the scheduler and the push watcher enter it for every run); the
//! coordination it stands on (lease timing, the leases table) is the cluster's.
//!
//! The monitors are split into [`COUNT`] partitions by `seq`
//! ([`tocsin_core::partition::of_seq`]). Each partition is a lease row (`partition:<n>` in
//! `leases`) with the same discipline as the scheduler role ([`crate::cluster::lease`]): the database's
//! clock sets the expiry, and the holder stops judging a partition `margin` before its lease
//! can expire by its own monotonic clock, so two nodes never judge one partition at once. Each
//! live node also holds `node:<id>`, renewed with its partitions: the set of live nodes is
//! the set of those rows. Chosen over advisory locks for the reason the scheduler role is:
//! a lease bounds the overlap by the holder's own clock, a lock's end is learned late.
//!
//! Every round ([`Timing::renew_every`]) the task ([`run`]) renews its node row and all its
//! partitions in one statement, reads who is alive and who holds what, and computes
//! [`tocsin_core::partition::plan`] (balanced by the monitors each partition holds, counted
//! every few rounds): it takes the free partitions the plan gives it and gives up those the
//! plan gives to another node. Giving up is careful: the partition stops being judged here
//! at once, its runs still in flight here finish (their results are stored), and only then is
//! the row released, so the next holder never checks a slot this node is still checking.
//! The new holder starts at its next slot after the acquisition; a slot that falls inside a
//! handover is not run (never run twice). A node that dies (`kill -9`) loses its rows at
//! their expiry, and the others take them at their next round: within `ttl + renew_every`.
//!
//! On SQLite (one node), and wherever no partition task runs (benchmarks, tests calling the
//! scheduler directly), every partition is held.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use tocsin_core::partition::{of_seq, COUNT};

use crate::cluster::lease::Timing;
use crate::store::{self, Db};

/// The lease names' prefixes.
const PARTITION: &str = "partition:";
const NODE: &str = "node:";

/// How many rounds between recounts of the monitors per partition: the balance follows
/// creations and deletions within a few rounds without a count every two seconds.
const COUNT_EVERY_ROUNDS: u32 = 15;

/// The partitions this node may judge now, as the workers see them. Cheap to clone.
#[derive(Clone)]
pub struct Partitions(Arc<Inner>);

struct Inner {
    /// False until a partition task contends; until then every partition is held.
    leased: AtomicBool,
    /// While leased: each partition's end, by this node's monotonic clock.
    until: Mutex<[Option<Instant>; COUNT]>,
    /// Runs started and not finished, per partition.
    in_flight: [AtomicI64; COUNT],
    /// Bumped whenever the held set changes; the scheduler and the watcher reload then.
    changed: watch::Sender<u64>,
    /// False while the last renewal failed with partitions held (readiness).
    renewing: AtomicBool,
}

impl Default for Partitions {
    fn default() -> Self {
        let (changed, _) = watch::channel(0);
        Partitions(Arc::new(Inner {
            leased: AtomicBool::new(false),
            until: Mutex::new([None; COUNT]),
            in_flight: std::array::from_fn(|_| AtomicI64::new(0)),
            changed,
            renewing: AtomicBool::new(true),
        }))
    }
}

impl std::fmt::Debug for Partitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitions")
            .field("held", &self.held_count())
            .finish()
    }
}

/// The partitions whose monitors a worker holds: its share of the cluster's monitors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Share(Option<Vec<usize>>);

impl Share {
    /// Every partition: one node, no lease.
    pub fn all() -> Share {
        Share(None)
    }

    /// The partitions, in order; `None` for all of them.
    pub fn partitions(&self) -> Option<&[usize]> {
        self.0.as_deref()
    }

    pub fn contains_seq(&self, seq: i64) -> bool {
        self.0
            .as_ref()
            .is_none_or(|ps| ps.binary_search(&of_seq(seq)).is_ok())
    }

    /// The partitions gained and lost from `self` to `next`; `None` when either is every
    /// partition (nothing to compare: reload).
    pub fn moves(&self, next: &Share) -> Option<(Vec<usize>, Vec<usize>)> {
        let (before, after) = (self.0.as_ref()?, next.0.as_ref()?);
        let gained = after
            .iter()
            .copied()
            .filter(|p| before.binary_search(p).is_err())
            .collect();
        let lost = before
            .iter()
            .copied()
            .filter(|p| after.binary_search(p).is_err())
            .collect();
        Some((gained, lost))
    }
}

/// A run of a monitor of a held partition; the partition is not released while one is
/// alive.
pub struct Running {
    inner: Arc<Inner>,
    partition: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.inner.in_flight[self.partition].fetch_sub(1, Ordering::SeqCst);
    }
}

impl Partitions {
    /// From now on a partition is held only while its lease says so (see [`run`]).
    pub fn contend(&self) {
        *self.until() = [None; COUNT];
        self.0.leased.store(true, Ordering::SeqCst);
        self.bump();
    }

    fn until(&self) -> std::sync::MutexGuard<'_, [Option<Instant>; COUNT]> {
        self.0.until.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.0.changed.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Whether this node may judge partition `p` now.
    pub fn is_held(&self, p: usize) -> bool {
        if !self.0.leased.load(Ordering::SeqCst) {
            return true;
        }
        let now = Instant::now();
        self.until()
            .get(p)
            .copied()
            .flatten()
            .is_some_and(|u| now < u)
    }

    /// The partitions held now.
    pub fn share(&self) -> Share {
        if !self.0.leased.load(Ordering::SeqCst) {
            return Share::all();
        }
        let now = Instant::now();
        let until = self.until();
        Share(Some(
            (0..COUNT)
                .filter(|&p| until[p].is_some_and(|u| now < u))
                .collect(),
        ))
    }

    /// How many partitions are held now; the scheduler asks at every wake, so it counts
    /// without building the share.
    pub fn held_count(&self) -> usize {
        if !self.0.leased.load(Ordering::SeqCst) {
            return COUNT;
        }
        let now = Instant::now();
        self.until()
            .iter()
            .filter(|u| u.is_some_and(|u| now < u))
            .count()
    }

    /// Changes of the held set; workers reload their share on them.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.0.changed.subscribe()
    }

    /// Marks a run of the monitor with `seq` as started, if its partition is held; the
    /// partition is not given up before the returned guard is dropped.
    pub fn enter(&self, seq: i64) -> Option<Running> {
        let p = of_seq(seq);
        // Counted before the look, so that a release that revokes first and then waits for
        // the count to reach zero either sees this run or is seen by it.
        self.0.in_flight[p].fetch_add(1, Ordering::SeqCst);
        let running = Running {
            inner: self.0.clone(),
            partition: p,
        };
        self.is_held(p).then_some(running)
    }

    /// False while this node holds partitions whose renewal is failing: `/readyz` says so.
    pub fn renewing(&self) -> bool {
        self.0.renewing.load(Ordering::SeqCst)
    }

    fn grant(&self, ps: &[usize], until: Instant) -> Vec<usize> {
        let mut gained = Vec::new();
        {
            let mut held = self.until();
            let now = Instant::now();
            for &p in ps {
                if held[p].is_none_or(|u| now >= u) {
                    gained.push(p);
                }
                held[p] = Some(until);
            }
        }
        if !gained.is_empty() {
            self.bump();
        }
        gained
    }

    fn revoke(&self, ps: &[usize]) {
        let mut any = false;
        {
            let mut held = self.until();
            for &p in ps {
                any |= held[p].take().is_some();
            }
        }
        if any {
            self.bump();
        }
    }

    /// Partitions whose lease this node believes it has (granted, maybe past their end).
    fn believed(&self) -> Vec<usize> {
        let until = self.until();
        (0..COUNT).filter(|&p| until[p].is_some()).collect()
    }

    /// Waits until no run of `ps` is in flight, at most `within`; true when none is.
    async fn drained(&self, ps: &[usize], within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if ps
                .iter()
                .all(|&p| self.0.in_flight[p].load(Ordering::SeqCst) <= 0)
            {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn name_of(p: usize) -> String {
    format!("{PARTITION}{p}")
}

fn partition_of(name: &str) -> Option<usize> {
    name.strip_prefix(PARTITION)?
        .parse()
        .ok()
        .filter(|p| *p < COUNT)
}

/// Whether the monitor notices heard since the last round change what a partition holds
/// (a lagged subscription may have missed such a notice: it counts as one).
fn monitors_changed(
    changes: &mut tokio::sync::broadcast::Receiver<crate::cluster::feed::MonitorChange>,
) -> bool {
    use crate::cluster::feed::ChangeKind;
    use tokio::sync::broadcast::error::TryRecvError;
    let mut changed = false;
    loop {
        match changes.try_recv() {
            Ok(c) => changed |= c.kind != ChangeKind::Updated,
            Err(TryRecvError::Lagged(_)) => changed = true,
            Err(TryRecvError::Empty | TryRecvError::Closed) => return changed,
        }
    }
}

fn log_change(what: &str, ps: &[usize], node: &str) {
    if !ps.is_empty() {
        tracing::info!(node, count = ps.len(), partitions = ?ps, "partitions {what}");
    }
}

/// The task that keeps `parts` in step with the partition leases until `cancel`; then it
/// stops judging, waits up to `grace` for the runs in flight, and releases everything, so
/// the other nodes take over at their next round. Call [`Partitions::contend`] first.
///
/// `changes` (the change feed's monitor changes, from every node) makes the next round
/// recount the monitors per partition when monitors were created, deleted, paused or
/// resumed: every node hears the same notices, so they recount in about the same round and
/// plan from the same counts, and a batch of new monitors is balanced within a round or two
/// of its last one instead of at the next periodic count.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    db: Db,
    node: String,
    timing: Timing,
    parts: Partitions,
    mut changes: tokio::sync::broadcast::Receiver<crate::cluster::feed::MonitorChange>,
    grace: Duration,
    cancel: CancellationToken,
) {
    let ttl_ms = i64::try_from(timing.ttl.as_millis()).unwrap_or(i64::MAX / 4);
    let mut counts = [0u64; COUNT];
    let mut round: u32 = 0;
    // The live nodes of the last round: a join or a leave recounts at once.
    let mut seen: Vec<String> = Vec::new();
    let mut recount = true;
    // Partitions being given up: not renewed into the held set, released once drained.
    let leaving: Arc<Mutex<BTreeSet<usize>>> = Arc::default();
    loop {
        let started = Instant::now();
        recount |= monitors_changed(&mut changes);
        if recount || round.is_multiple_of(COUNT_EVERY_ROUNDS) {
            match store::monitors::counts_by_partition(db.reader()).await {
                Ok(rows) => {
                    counts = [0; COUNT];
                    for (p, n) in rows {
                        if let Ok(p) = usize::try_from(p) {
                            if p < COUNT {
                                counts[p] = u64::try_from(n).unwrap_or(0);
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not count the monitors per partition"),
            }
        }
        round = round.wrapping_add(1);
        let work = one_round(&db, &node, timing, ttl_ms, &parts, &counts, &leaving, grace);
        tokio::select! {
            _ = cancel.cancelled() => break,
            r = tokio::time::timeout(timing.renew_every * 2, work) => match r {
                Ok(Ok(nodes)) => {
                    parts.0.renewing.store(true, Ordering::SeqCst);
                    recount = nodes != seen;
                    seen = nodes;
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "could not renew or take partitions");
                    parts.0.renewing.store(parts.believed().is_empty(), Ordering::SeqCst);
                }
                Err(_) => {
                    tracing::warn!("partition renewal timed out");
                    parts.0.renewing.store(parts.believed().is_empty(), Ordering::SeqCst);
                }
            },
        }
        // Stop judging on time even when renewals fail: a partition past its end is revoked.
        let now = Instant::now();
        let expired: Vec<usize> = {
            let until = parts.until();
            (0..COUNT)
                .filter(|&p| until[p].is_some_and(|u| now >= u))
                .collect()
        };
        if !expired.is_empty() {
            parts.revoke(&expired);
            log_change("lost: their leases could not be renewed", &expired, &node);
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(started + timing.renew_every) => {}
        }
    }
    let mine = parts.believed();
    parts.revoke(&mine);
    if !parts.drained(&mine, grace).await {
        tracing::warn!("runs still in flight at shutdown; their partitions are released anyway");
    }
    let released = store::leases::release_all(db.writer(), PARTITION, &node).await;
    let _ = store::leases::release(db.writer(), &format!("{NODE}{node}"), &node).await;
    match released {
        Ok(n) => tracing::info!(node, released = n, "partitions released"),
        Err(e) => {
            tracing::warn!(error = %e, "could not release the partitions; they expire on their own")
        }
    }
}

/// One round: presence, renewal, the plan, and acting on it. Returns the live nodes seen.
#[allow(clippy::too_many_arguments)]
async fn one_round(
    db: &Db,
    node: &str,
    timing: Timing,
    ttl_ms: i64,
    parts: &Partitions,
    counts: &[u64; COUNT],
    leaving: &Arc<Mutex<BTreeSet<usize>>>,
    grace: Duration,
) -> Result<Vec<String>, sqlx::Error> {
    let hold_for = timing.ttl.saturating_sub(timing.margin);
    let sent = Instant::now();
    store::leases::acquire(db.writer(), &format!("{NODE}{node}"), node, ttl_ms).await?;
    let renewed: Vec<usize> = store::leases::renew_all(db.writer(), PARTITION, node, ttl_ms)
        .await?
        .iter()
        .filter_map(|n| partition_of(n))
        .collect();
    let going: BTreeSet<usize> = lock(leaving).clone();
    let keep: Vec<usize> = renewed
        .iter()
        .copied()
        .filter(|p| !going.contains(p))
        .collect();
    // Believed held but not renewed: the lease expired first, and another node may have it.
    let lost: Vec<usize> = parts
        .believed()
        .into_iter()
        .filter(|p| !renewed.contains(p))
        .collect();
    parts.revoke(&lost);
    log_change("lost: their leases expired", &lost, node);
    parts.grant(&keep, sent + hold_for);

    let mut nodes: Vec<String> = store::leases::held_with_prefix(db.reader(), NODE)
        .await?
        .into_iter()
        .map(|(_, holder)| holder)
        .collect();
    nodes.sort();
    nodes.dedup();
    if !nodes.iter().any(|n| n == node) {
        // Our own row was just written: a view without it is stale. Try next round.
        return Ok(nodes);
    }
    let mut holders: [Option<String>; COUNT] = std::array::from_fn(|_| None);
    for (name, holder) in store::leases::held_with_prefix(db.reader(), PARTITION).await? {
        if let Some(p) = partition_of(&name) {
            holders[p] = Some(holder);
        }
    }
    let plan = tocsin_core::partition::plan(&nodes, counts, &holders);
    let me = nodes.iter().position(|n| n == node);

    // Give up what the plan gives to another node: stop judging now, release once drained.
    let give: Vec<usize> = keep.iter().copied().filter(|&p| plan[p] != me).collect();
    if !give.is_empty() {
        parts.revoke(&give);
        lock(leaving).extend(give.iter().copied());
        log_change("given up to rebalance", &give, node);
        let (db, node, parts, leaving) =
            (db.clone(), node.to_string(), parts.clone(), leaving.clone());
        tokio::spawn(async move {
            if !parts.drained(&give, grace).await {
                tracing::warn!(partitions = ?give, "runs of partitions being given up outlived the grace; released anyway");
            }
            for &p in &give {
                if let Err(e) = store::leases::release(db.writer(), &name_of(p), &node).await {
                    tracing::warn!(partition = p, error = %e, "could not release a partition; it expires on its own");
                }
            }
            let mut l = lock(&leaving);
            for p in &give {
                l.remove(p);
            }
        });
    }

    // Take the free partitions the plan gives this node.
    let mut gained = Vec::new();
    for p in 0..COUNT {
        if plan[p] != me || holders[p].is_some() || going.contains(&p) {
            continue;
        }
        let sent = Instant::now();
        if store::leases::acquire(db.writer(), &name_of(p), node, ttl_ms)
            .await?
            .is_some()
        {
            gained.extend(parts.grant(&[p], sent + hold_for));
        }
    }
    log_change("gained", &gained, node);
    Ok(nodes)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_lease_every_partition_is_held() {
        let p = Partitions::default();
        assert!(p.is_held(0) && p.is_held(COUNT - 1));
        assert_eq!(p.share(), Share::all());
        assert!(p.enter(7).is_some());
        p.contend();
        assert_eq!(p.share(), Share(Some(vec![])));
        assert!(p.enter(7).is_none());
    }

    #[test]
    fn a_grant_holds_until_its_end_and_a_run_is_counted_until_dropped() {
        let p = Partitions::default();
        p.contend();
        let gained = p.grant(&[3, 5], Instant::now() + Duration::from_secs(60));
        assert_eq!(gained, [3, 5]);
        assert!(p
            .grant(&[3], Instant::now() + Duration::from_secs(60))
            .is_empty());
        assert_eq!(p.share(), Share(Some(vec![3, 5])));
        assert!(p.share().contains_seq(3 + COUNT as i64) && !p.share().contains_seq(4));
        let run = p.enter(3 + COUNT as i64);
        assert!(run.is_some());
        assert_eq!(p.0.in_flight[3].load(Ordering::SeqCst), 1);
        drop(run);
        assert_eq!(p.0.in_flight[3].load(Ordering::SeqCst), 0);
        // A refused entry leaves no count behind.
        assert!(p.enter(4).is_none());
        assert_eq!(p.0.in_flight[4].load(Ordering::SeqCst), 0);
        p.grant(&[5], Instant::now() - Duration::from_millis(1));
        assert!(
            !p.is_held(5),
            "an end that passed ends the partition without the task"
        );
        p.revoke(&[3]);
        assert_eq!(p.share(), Share(Some(vec![])));
    }

    #[test]
    fn a_share_says_what_moved() {
        let a = Share(Some(vec![1, 2, 3]));
        let b = Share(Some(vec![2, 3, 4]));
        assert_eq!(a.moves(&b), Some((vec![4], vec![1])));
        assert_eq!(a.moves(&Share::all()), None);
        assert!(Share::all().contains_seq(12345));
    }

    #[test]
    fn partition_names_round_trip() {
        assert_eq!(partition_of(&name_of(17)), Some(17));
        assert_eq!(partition_of("partition:9999"), None);
        assert_eq!(partition_of("node:a"), None);
    }
}
