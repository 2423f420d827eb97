//! The missed-deadline watcher: one task that knows when each active push monitor's grace
//! period runs out, and hands a "missed" heartbeat to the writer when it does.
//!
//! Deadlines live in memory (a `BTreeSet` of `(deadline, seq)`), built from the store for the
//! partitions this node holds ([`crate::monitoring::partitions`]: only a partition's holder judges
//! its monitors, so a deadline is never watched twice across nodes; reloaded when the held
//! partitions change) and kept current by the change feed from
//! every node (create, update, pause, resume, delete) and, on PostgreSQL, by the
//! reconciliation scan ([`crate::cluster::inventory`]) every few seconds and after a `Resync`. Pushes
//! do not tell the watcher: they only ever move a deadline later, so an entry can be early but
//! never late. When an entry comes due the watcher re-reads its monitor; if a push moved the
//! deadline, the entry is simply re-filed. A monitor that really is overdue gets a
//! [`PushEffect::Missed`] heartbeat, which the writer re-checks against the committed state
//! inside its transaction ([`super::record`]): a push that lands at the same moment wins, and
//! a miss is never recorded twice.
//!
//! [`run_due`] is the same step for tests with a manual clock.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tocsin_core::Status;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::cluster::feed::{ChangeKind, Notice};
use crate::cluster::inventory::{Inventory, RELOAD_ALL_ABOVE, SCAN_EVERY};
use crate::cx::Cx;
use crate::monitoring::heartbeats::{NewHeartbeat, WriteError};
use crate::monitoring::partitions::Share;
use crate::monitoring::push_record::{next_deadline_ms, PushEffect};
use crate::monitoring::runner::Runner;
use crate::monitoring::{MonitorType, LOCAL_REGION};
use crate::store::inventory::Set;
use crate::store::monitors::{self, MonitorRow};
use crate::store::push as store;
use crate::store::Backend;

/// The longest the task sleeps without looking (a safety net; changes wake it anyway).
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// Monitors re-read per query when entries come due.
const CHUNK: usize = 200;

/// Deadlines by time, and by monitor.
#[derive(Debug, Default)]
pub struct Deadlines {
    by_time: BTreeSet<(i64, i64)>,
    by_seq: HashMap<i64, i64>,
    seq_of: HashMap<String, i64>,
}

impl Deadlines {
    /// Files `m` under its current deadline, or drops it when it has none (paused, not push).
    pub fn file(&mut self, m: &MonitorRow) {
        self.drop_seq(m.seq);
        let deadline = (m.kind() == Some(MonitorType::Push))
            .then(|| next_deadline_ms(m))
            .flatten();
        if let Some(d) = deadline {
            self.by_time.insert((d, m.seq));
            self.by_seq.insert(m.seq, d);
            self.seq_of.insert(m.id.clone(), m.seq);
        }
    }

    fn drop_seq(&mut self, seq: i64) {
        if let Some(d) = self.by_seq.remove(&seq) {
            self.by_time.remove(&(d, seq));
        }
    }

    pub fn drop_id(&mut self, id: &str) {
        if let Some(seq) = self.seq_of.remove(id) {
            self.drop_seq(seq);
        }
    }

    /// The earliest deadline filed.
    pub fn earliest(&self) -> Option<i64> {
        self.by_time.first().map(|(d, _)| *d)
    }

    /// Removes and returns the monitors whose deadline is strictly before `now_ms`.
    fn take_due(&mut self, now_ms: i64) -> Vec<i64> {
        let mut due = Vec::new();
        while let Some(&(d, seq)) = self.by_time.first() {
            if d >= now_ms {
                break;
            }
            self.by_time.pop_first();
            self.by_seq.remove(&seq);
            due.push(seq);
        }
        due
    }

    pub fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }
}

/// Builds the deadlines of every active push monitor.
pub async fn load(cx: &Cx) -> Result<Deadlines, sqlx::Error> {
    let mut d = Deadlines::default();
    for m in monitors::list_active_push(cx.db().reader()).await? {
        d.file(&m);
    }
    Ok(d)
}

/// Records a miss for every monitor overdue at `now_ms` and re-files the rest. Returns how
/// many misses were recorded.
pub async fn fire_due(
    state: &Runner,
    deadlines: &mut Deadlines,
    now_ms: i64,
) -> Result<usize, sqlx::Error> {
    let due = deadlines.take_due(now_ms);
    // A partition given up since its deadlines were loaded is not judged here any more; one
    // held is not released until its misses are stored.
    let mut running = Vec::new();
    let due: Vec<i64> = due
        .into_iter()
        .filter(|&seq| match state.partitions().enter(seq) {
            Some(r) => {
                running.push(r);
                true
            }
            None => false,
        })
        .collect();
    let mut recorded = 0;
    for chunk in due.chunks(CHUNK) {
        let rows = read(state.cx(), chunk).await?;
        let mut misses = Vec::new();
        for m in rows {
            match next_deadline_ms(&m) {
                Some(d) if d < now_ms => misses.push(m),
                _ => deadlines.file(&m),
            }
        }
        let results = futures::future::join_all(misses.iter().map(|m| {
            let mut hb = NewHeartbeat::new(&m.id, m.seq, now_ms, LOCAL_REGION, Status::Down, 0.0);
            hb.message = Some("no push received within the grace period".to_string());
            hb.push = Some(PushEffect::Missed);
            state.heartbeats().submit(hb)
        }))
        .await;
        for (m, r) in misses.iter().zip(results) {
            match r {
                Ok(_) => recorded += 1,
                Err(WriteError::NotDue | WriteError::MonitorGone) => {}
                Err(e) => tracing::warn!(monitor = %m.id, error = %e, "missed push not recorded"),
            }
        }
        // Re-file from the committed state: the miss moved each deadline on.
        let seqs: Vec<i64> = misses.iter().map(|m| m.seq).collect();
        for m in read(state.cx(), &seqs).await? {
            deadlines.file(&m);
        }
    }
    Ok(recorded)
}

async fn read(cx: &Cx, seqs: &[i64]) -> Result<Vec<MonitorRow>, sqlx::Error> {
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = cx.db().reader().acquire().await?;
    store::monitors_by_seq(&mut conn, seqs).await
}

/// One pass for tests with a manual clock: loads every deadline and fires those before
/// `now_ms`. Returns the misses recorded.
pub async fn run_due(state: &Runner, now_ms: i64) -> Result<usize, sqlx::Error> {
    let mut deadlines = load(state.cx()).await?;
    fire_due(state, &mut deadlines, now_ms).await
}

/// The deadlines with what they were loaded from, for the reconciliation scan, and the
/// partitions they were loaded for.
#[derive(Default)]
struct Held {
    deadlines: Deadlines,
    inventory: Inventory,
    share: Share,
}

impl Held {
    fn file(&mut self, m: &MonitorRow) {
        if !self.share.contains_seq(m.seq) {
            self.drop_id(&m.id);
            return;
        }
        self.deadlines.file(m);
        if m.is_active() && m.kind() == Some(MonitorType::Push) {
            self.inventory.put(&m.id, m.seq, m.version);
        } else {
            self.inventory.remove(&m.id);
        }
    }

    fn drop_id(&mut self, id: &str) {
        self.deadlines.drop_id(id);
        self.inventory.remove(id);
    }
}

async fn reload_one(cx: &Cx, held: &mut Held, id: &str) {
    match monitors::get_by_id(cx.db().reader(), id).await {
        Ok(Some(m)) => held.file(&m),
        Ok(None) => held.drop_id(id),
        Err(e) => tracing::warn!(monitor = %id, error = %e, "could not reload monitor"),
    }
}

async fn load_all(cx: &Cx, share: Share) -> Held {
    let mut held = Held {
        share,
        ..Held::default()
    };
    match monitors::list_push_in(cx.db().reader(), held.share.partitions()).await {
        Ok(rows) => {
            for m in &rows {
                held.file(m);
            }
        }
        Err(e) => tracing::error!(error = %e, "could not load push deadlines"),
    }
    held
}

/// Compares the deadlines with the store and reloads what differs (see
/// [`crate::cluster::inventory`]); `full` skips the digest.
async fn reconcile(cx: &Cx, held: &mut Held, full: bool) {
    let share = held.share.partitions();
    let diff = match held.inventory.scan(cx.db(), Set::Push, share, full).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "could not compare push deadlines with the store");
            return;
        }
    };
    if diff.is_empty() {
        return;
    }
    tracing::info!(
        changed = diff.len(),
        "push deadlines differed from the store: reloading what changed"
    );
    if diff.len() > RELOAD_ALL_ABOVE {
        *held = load_all(cx, held.share.clone()).await;
        return;
    }
    for id in &diff.gone {
        held.drop_id(id);
    }
    for id in &diff.reload {
        reload_one(cx, held, id).await;
    }
}

/// The watcher task, until `cancel`. It judges the deadlines of the partitions this node
/// holds ([`crate::monitoring::partitions`]; all of them on SQLite): holding none, it holds
/// nothing and waits; as they change, it loads their deadlines afresh.
pub async fn run(state: Runner, cancel: CancellationToken) {
    let parts = state.partitions().clone();
    let mut share_changes = parts.watch();
    loop {
        if parts.held_count() > 0 {
            if !lead(&state, &mut share_changes, &cancel).await {
                break;
            }
            continue;
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            changed = share_changes.changed() => if changed.is_err() { break },
        }
    }
}

/// Watches while partitions are held; false when the task should stop.
async fn lead(
    state: &Runner,
    share_changes: &mut tokio::sync::watch::Receiver<u64>,
    cancel: &CancellationToken,
) -> bool {
    let parts = state.partitions();
    // Subscribe before loading, so no change between the load and the loop is missed.
    let mut feed = state.cx().feed().subscribe_all();
    share_changes.borrow_and_update();
    let mut held = load_all(state.cx(), parts.share()).await;
    let scanning = state.cx().db().backend() == Backend::Postgres;
    let mut scan = tokio::time::interval_at(tokio::time::Instant::now() + SCAN_EVERY, SCAN_EVERY);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if parts.held_count() == 0 {
            return true;
        }
        // Once shutdown begins nothing is judged: pushes refused while the server goes away
        // must not read as missed.
        if cancel.is_cancelled() {
            return false;
        }
        let now = state.cx().clock().now_ms();
        if let Err(e) = fire_due(state, &mut held.deadlines, now).await {
            tracing::warn!(error = %e, "push watcher pass failed; retrying");
        }
        let wait = held
            .deadlines
            .earliest()
            // Strictly past the deadline: wake a millisecond after it.
            .map(|d| Duration::from_millis(u64::try_from(d + 1 - now).unwrap_or(0)))
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        tokio::select! {
            _ = cancel.cancelled() => return false,
            _ = tokio::time::sleep(wait) => {}
            changed = share_changes.changed() => {
                if changed.is_err() {
                    return false;
                }
                let next = parts.share();
                if next != held.share {
                    held = load_all(state.cx(), next).await;
                }
            }
            _ = scan.tick(), if scanning => reconcile(state.cx(), &mut held, false).await,
            delivery = feed.recv() => match delivery {
                Ok(d) => match d.notice {
                    Notice::Monitor(c) => match c.kind {
                        ChangeKind::Deleted | ChangeKind::Paused => held.drop_id(&c.monitor_id),
                        ChangeKind::Created | ChangeKind::Updated | ChangeKind::Resumed => {
                            reload_one(state.cx(), &mut held, &c.monitor_id).await;
                        }
                    },
                    Notice::Resync => reconcile(state.cx(), &mut held, true).await,
                    _ => {}
                },
                Err(RecvError::Lagged(_)) => held = load_all(state.cx(), held.share.clone()).await,
                Err(RecvError::Closed) => return false,
            },
        }
    }
}
