//! Partitioned scheduling: which monitors this node checks and whose push deadlines it
//! judges, when several nodes with the scheduler enabled share one PostgreSQL database.
//!
//! The monitors are split into [`PARTITIONS`] partitions by their `seq` (`seq % 256`: `seq`
//! is allocated one by one, so the partitions fill evenly, and the partition of a row is
//! computed the same way in Rust and in SQL). Each partition is held by one node through a
//! lease row (`leases`, named `partition:N`) with exactly the discipline of the scheduler role
//! ([`super::lease`]): a renewal sent at local instant `t` holds the partition until
//! `t + ttl - margin` by this node's monotonic clock, while the row says `t + ttl` by the
//! database's, so a holder has stopped judging a partition before anyone can take it over.
//! Every node also keeps a `node:ID` row, renewed with its partitions, which says it is alive.
//!
//! One statement per round ([`Timing::renew_every`]) renews every held partition, takes the
//! partitions the plan gives this node and renews the node row; one reads who holds what; a
//! third, every [`WEIGHTS_EVERY`], counts the active monitors per partition (the weights).
//! [`plan`] is a pure function of that view, the same on every node: free partitions
//! (expired, released, never held) go, heaviest first, each to the live node with the fewest
//! monitors (ties: fewest partitions, then id), and a node holding more than the mean by more
//! than [`SLACK`] releases its heaviest partitions down to the mean when some node is as far
//! below it. Shares are thus counted in monitors, not partitions.
//!
//! Takeover after `kill -9`: the dead node's rows expire `ttl` after its last renewal and the
//! others take its partitions at their next round (`ttl + renew_every`, 12 s with the
//! defaults). A node that shuts down cleanly releases everything at once; a node that joins is
//! given a share at the others' next round after its first (about three rounds). A node
//! releasing a partition stops judging it before the row is released.
//!
//! On SQLite (one node), and wherever no partition task runs (benchmarks, tests calling the
//! scheduler directly), every partition is held: [`Shares::held`] is `None` and nothing is
//! filtered. Gains and losses are logged at info per partition; `/metrics` shows
//! `scheduler_partitions`; `GET /readyz` fails while this node holds partitions it could not
//! renew ([`Shares::renewing`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lease::Timing;
use crate::store::{self, Db};

pub use crate::store::inventory::PARTITIONS;

/// How often the monitors per partition are counted.
pub const WEIGHTS_EVERY: Duration = Duration::from_secs(5);

/// How far above the mean (a fraction of it, at least one monitor) a node's share may be
/// before it gives partitions up: well inside the 20% the shares may differ by.
pub const SLACK: f64 = 0.05;

/// The partition of the monitor with this `seq`.
pub fn of_seq(seq: i64) -> u16 {
    u16::try_from(seq.rem_euclid(i64::from(PARTITIONS))).unwrap_or(0)
}

/// The lease name of partition `p`.
pub fn lease_name(p: u16) -> String {
    format!("partition:{p}")
}

fn node_lease(node: &str) -> String {
    format!("node:{node}")
}

/// The partitions this node holds, as the scheduler and the push watcher see them. Cheap to
/// clone.
#[derive(Clone)]
pub struct Shares(Arc<Inner>);

struct Inner {
    /// False until a partition task contends; until then every partition is held.
    leased: AtomicBool,
    /// While leased: each held partition, until when.
    held: Mutex<BTreeMap<u16, Instant>>,
    /// Bumped whenever the set of held partitions changes; workers wake on it.
    changed: watch::Sender<u64>,
    /// False while the last renewal of held partitions failed.
    renewing: AtomicBool,
}

impl Default for Shares {
    fn default() -> Self {
        let (changed, _) = watch::channel(0);
        Shares(Arc::new(Inner {
            leased: AtomicBool::new(false),
            held: Mutex::new(BTreeMap::new()),
            changed,
            renewing: AtomicBool::new(true),
        }))
    }
}

impl std::fmt::Debug for Shares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shares")
            .field("held", &self.held())
            .finish()
    }
}

impl Shares {
    /// From now on a partition is held only while its lease says so (see [`run`]).
    pub fn contend(&self) {
        self.map().clear();
        self.0.leased.store(true, Ordering::SeqCst);
        self.bump();
    }

    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<u16, Instant>> {
        self.0.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.0.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Whether partitions are leased at all (PostgreSQL with the scheduler enabled).
    pub fn is_leased(&self) -> bool {
        self.0.leased.load(Ordering::SeqCst)
    }

    /// True while this node may judge partition `p`: always when not leased, else until the
    /// last renewal's deadline, whether or not the task has noticed yet.
    pub fn holds(&self, p: u16) -> bool {
        if !self.is_leased() {
            return true;
        }
        self.map().get(&p).is_some_and(|u| Instant::now() < *u)
    }

    /// [`Shares::holds`] for the monitor with this `seq`.
    pub fn holds_seq(&self, seq: i64) -> bool {
        self.holds(of_seq(seq))
    }

    /// The partitions held now; `None` when every one is (not leased).
    pub fn held(&self) -> Option<BTreeSet<u16>> {
        if !self.is_leased() {
            return None;
        }
        let now = Instant::now();
        Some(
            self.map()
                .iter()
                .filter(|(_, u)| now < **u)
                .map(|(p, _)| *p)
                .collect(),
        )
    }

    /// How many partitions are held now.
    pub fn count(&self) -> usize {
        self.held().map_or(usize::from(PARTITIONS), |h| h.len())
    }

    /// Changes of [`Shares::held`] as the task sees them; workers wake on them.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.0.changed.subscribe()
    }

    /// False while this node holds partitions whose last renewal failed (`GET /readyz`).
    pub fn renewing(&self) -> bool {
        self.0.renewing.load(Ordering::SeqCst)
    }

    fn grant(&self, parts: &[u16], until: Instant) -> Vec<u16> {
        let mut gained = Vec::new();
        {
            let mut map = self.map();
            for p in parts {
                if map.insert(*p, until).is_none() {
                    gained.push(*p);
                }
            }
        }
        if !gained.is_empty() {
            self.bump();
        }
        gained
    }

    fn revoke(&self, parts: &[u16]) {
        let mut any = false;
        {
            let mut map = self.map();
            for p in parts {
                any |= map.remove(p).is_some();
            }
        }
        if any {
            self.bump();
        }
    }

    /// Drops the partitions whose deadline passed; returns them.
    fn expire(&self) -> Vec<u16> {
        let now = Instant::now();
        let gone: Vec<u16> = self
            .map()
            .iter()
            .filter(|(_, u)| now >= **u)
            .map(|(p, _)| *p)
            .collect();
        self.revoke(&gone);
        gone
    }

    /// The partitions in the map, expired or not.
    fn listed(&self) -> Vec<u16> {
        self.map().keys().copied().collect()
    }
}

/// Who holds what, as one node read it.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Live nodes.
    pub nodes: BTreeSet<String>,
    /// Holder of each partition held now.
    pub holders: HashMap<u16, String>,
    /// Active monitors per partition.
    pub weights: Vec<u64>,
}

/// What a node does this round.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub take: Vec<u16>,
    pub release: Vec<u16>,
}

/// This node's moves (see the module documentation): the same view gives every node the same
/// assignment of free partitions, so they do not race for them.
pub fn plan(view: &View, me: &str) -> Plan {
    let weight = |p: u16| view.weights.get(usize::from(p)).copied().unwrap_or(0);
    let mut nodes = view.nodes.clone();
    nodes.insert(me.to_string());
    let mut load: BTreeMap<&str, (u64, usize)> =
        nodes.iter().map(|n| (n.as_str(), (0, 0))).collect();
    let mut free = Vec::new();
    for p in 0..PARTITIONS {
        match view.holders.get(&p) {
            Some(h) => {
                if let Some(l) = load.get_mut(h.as_str()) {
                    l.0 += weight(p);
                    l.1 += 1;
                }
            }
            None => free.push(p),
        }
    }
    free.sort_by_key(|p| (std::cmp::Reverse(weight(*p)), *p));
    let mut out = Plan::default();
    for p in free {
        let Some((&node, _)) = load.iter().min_by_key(|(n, l)| (**l, **n)) else {
            break;
        };
        if let Some(l) = load.get_mut(node) {
            l.0 += weight(p);
            l.1 += 1;
        }
        if node == me {
            out.take.push(p);
        }
    }
    let total: u64 = load.values().map(|l| l.0).sum();
    let mean = total as f64 / load.len().max(1) as f64;
    let slack = (mean * SLACK).max(1.0);
    let mine = load.get(me).map_or(0, |l| l.0);
    let least = load.values().map(|l| l.0).min().unwrap_or(0);
    if mine as f64 > mean + slack && (least as f64) < mean - slack {
        let mut held: Vec<u16> = view
            .holders
            .iter()
            .filter(|(_, h)| h.as_str() == me)
            .map(|(p, _)| *p)
            .collect();
        held.sort_by_key(|p| (std::cmp::Reverse(weight(*p)), *p));
        let mut left = mine;
        for p in held {
            let w = weight(p);
            if w > 0 && (left - w) as f64 >= mean {
                left -= w;
                out.release.push(p);
            }
        }
    }
    out
}

fn parse_partition(name: &str) -> Option<u16> {
    name.strip_prefix("partition:")?
        .parse()
        .ok()
        .filter(|p| *p < PARTITIONS)
}

/// Reads the view (holders and live nodes); the weights are filled in by the caller.
async fn read_view(db: &Db) -> Result<View, sqlx::Error> {
    let mut view = View::default();
    for (name, holder) in store::leases::held_like(db.reader(), &["partition:%", "node:%"]).await? {
        if let Some(p) = parse_partition(&name) {
            view.holders.insert(p, holder);
        } else if let Some(n) = name.strip_prefix("node:") {
            view.nodes.insert(n.to_string());
        }
    }
    Ok(view)
}

async fn read_weights(db: &Db) -> Result<Vec<u64>, sqlx::Error> {
    let mut w = vec![0; usize::from(PARTITIONS)];
    for (p, n) in store::monitors::count_by_partition(db.reader(), PARTITIONS).await? {
        if let Some(slot) = usize::try_from(p).ok().and_then(|p| w.get_mut(p)) {
            *slot = u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(w)
}

fn ttl_ms(t: &Timing) -> i64 {
    i64::try_from(t.ttl.as_millis()).unwrap_or(i64::MAX / 4)
}

/// Contends for partitions as `node` and keeps `shares` in step until `cancel`; then releases
/// what it holds. Call [`Shares::contend`] first (before starting the workers that read it).
pub async fn run(db: Db, shares: Shares, node: String, timing: Timing, cancel: CancellationToken) {
    let mut weights: Vec<u64> = vec![0; usize::from(PARTITIONS)];
    let mut weighed: Option<Instant> = None;
    loop {
        let sent = Instant::now();
        if weighed.is_none_or(|w| sent.duration_since(w) >= WEIGHTS_EVERY) {
            match read_weights(&db).await {
                Ok(w) => {
                    weights = w;
                    weighed = Some(sent);
                }
                Err(e) => tracing::warn!(error = %e, "could not count monitors per partition"),
            }
            // Rows of nodes long gone.
            if let Err(e) =
                store::leases::purge_expired_like(db.writer(), "node:%", 3_600_000).await
            {
                tracing::debug!(error = %e, "could not purge old node rows");
            }
        }
        let round = async {
            let mut view = read_view(&db).await?;
            view.weights = weights.clone();
            // What this node believes it holds, whatever the rows said a moment ago.
            view.holders.retain(|_, h| h != &node);
            for p in shares.held().unwrap_or_default() {
                view.holders.insert(p, node.clone());
            }
            let plan = plan(&view, &node);
            if !plan.release.is_empty() {
                // Stop judging first, then let the others have them.
                shares.revoke(&plan.release);
                store::leases::release_many(
                    db.writer(),
                    &plan
                        .release
                        .iter()
                        .map(|p| lease_name(*p))
                        .collect::<Vec<_>>(),
                    &node,
                )
                .await?;
                for p in &plan.release {
                    tracing::info!(partition = p, node = %node, "partition released to balance the shares");
                }
            }
            let released: BTreeSet<u16> = plan.release.iter().copied().collect();
            let mut want: Vec<String> = shares
                .listed()
                .into_iter()
                .filter(|p| !released.contains(p))
                .chain(plan.take.iter().copied())
                .map(lease_name)
                .collect();
            want.push(node_lease(&node));
            let sent = Instant::now();
            let got =
                store::leases::acquire_many(db.writer(), &want, &node, ttl_ms(&timing)).await?;
            Ok::<_, sqlx::Error>((sent, got))
        };
        let give_up = sent + timing.renew_every * 2;
        match tokio::select! {
            _ = cancel.cancelled() => break,
            r = tokio::time::timeout_at(give_up, round) => r,
        } {
            Ok(Ok((sent, got))) => {
                let got: BTreeSet<u16> = got.iter().filter_map(|n| parse_partition(n)).collect();
                let lost: Vec<u16> = shares
                    .listed()
                    .into_iter()
                    .filter(|p| !got.contains(p))
                    .collect();
                shares.revoke(&lost);
                for p in &lost {
                    tracing::info!(partition = p, node = %node, "partition lost to another node");
                }
                let until = sent + timing.ttl.saturating_sub(timing.margin);
                for p in shares.grant(&got.into_iter().collect::<Vec<_>>(), until) {
                    tracing::info!(partition = p, node = %node, "partition gained");
                }
                shares.0.renewing.store(true, Ordering::SeqCst);
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not renew or take partitions");
                shares
                    .0
                    .renewing
                    .store(shares.listed().is_empty(), Ordering::SeqCst);
            }
            Err(_) => {
                tracing::warn!("partition renewal timed out");
                shares
                    .0
                    .renewing
                    .store(shares.listed().is_empty(), Ordering::SeqCst);
            }
        }
        // Stop judging on time even when renewals fail.
        for p in shares.expire() {
            tracing::info!(partition = p, node = %node, "partition lost: its lease could not be renewed");
        }
        let next = shares
            .map()
            .values()
            .min()
            .copied()
            .map_or(sent + timing.renew_every, |u| {
                (sent + timing.renew_every).min(u)
            });
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(next) => {}
        }
    }
    let held = shares.listed();
    shares.revoke(&held);
    let mut names: Vec<String> = held.iter().map(|p| lease_name(*p)).collect();
    names.push(node_lease(&node));
    match store::leases::release_many(db.writer(), &names, &node).await {
        Ok(_) => tracing::info!(partitions = held.len(), node = %node, "partitions released"),
        Err(e) => {
            tracing::warn!(error = %e, "could not release the partitions; they expire on their own")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(nodes: &[&str], holders: &[(u16, &str)], weights: Vec<u64>) -> View {
        View {
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            holders: holders.iter().map(|(p, h)| (*p, h.to_string())).collect(),
            weights,
        }
    }

    fn even() -> Vec<u64> {
        vec![1; usize::from(PARTITIONS)]
    }

    #[test]
    fn free_partitions_split_the_same_way_on_every_node() {
        let v = view(&["a", "b", "c"], &[], even());
        let (a, b, c) = (plan(&v, "a"), plan(&v, "b"), plan(&v, "c"));
        let mut all: Vec<u16> = a
            .take
            .iter()
            .chain(&b.take)
            .chain(&c.take)
            .copied()
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..PARTITIONS).collect::<Vec<_>>());
        for p in [&a, &b, &c] {
            assert!((85..=86).contains(&p.take.len()), "{}", p.take.len());
            assert!(p.release.is_empty());
        }
    }

    #[test]
    fn an_overloaded_node_releases_down_to_the_mean_for_a_newcomer() {
        let holders: Vec<(u16, &str)> = (0..PARTITIONS)
            .map(|p| (p, if p % 2 == 0 { "a" } else { "b" }))
            .collect();
        let v = view(&["a", "b", "c"], &holders, even());
        let a = plan(&v, "a");
        assert!(a.take.is_empty());
        assert_eq!(a.release.len(), 128 - 86, "a keeps about a third");
        assert!(plan(&v, "c").take.is_empty(), "nothing is free yet");
    }

    #[test]
    fn shares_are_counted_in_monitors() {
        // Partition 0 holds as many monitors as all the others together.
        let mut w = even();
        w[0] = 255;
        let v = view(&["a", "b"], &[], w);
        let (a, b) = (plan(&v, "a"), plan(&v, "b"));
        let (one, other) = if a.take.contains(&0) { (a, b) } else { (b, a) };
        assert_eq!(one.take, vec![0]);
        assert_eq!(other.take.len(), 255);
    }

    #[test]
    fn a_balanced_cluster_stays_put() {
        let holders: Vec<(u16, &str)> = (0..PARTITIONS)
            .map(|p| (p, ["a", "b", "c"][usize::from(p % 3)]))
            .collect();
        let v = view(&["a", "b", "c"], &holders, even());
        for n in ["a", "b", "c"] {
            assert_eq!(plan(&v, n), Plan::default());
        }
    }

    #[test]
    fn unleased_shares_hold_everything_and_leased_ones_expire() {
        let s = Shares::default();
        assert!(s.holds(7));
        assert_eq!(s.held(), None);
        s.contend();
        assert!(!s.holds(7));
        assert_eq!(
            s.grant(&[7, 8], Instant::now() + Duration::from_secs(60)),
            vec![7, 8]
        );
        assert!(s.holds_seq(256 + 7));
        s.grant(&[9], Instant::now() - Duration::from_millis(1));
        assert!(
            !s.holds(9),
            "a passed deadline ends the partition without the task"
        );
        assert_eq!(s.expire(), vec![9]);
        assert_eq!(s.count(), 2);
    }
}
