//! The maintenance engine: puts monitors into maintenance when a window starts and lets the
//! next check take them out when it ends, on time whether or not a check falls on either
//! instant.
//!
//! It runs on the node holding the scheduler role ([`crate::cluster::lease`]; always the one
//! node on SQLite), like the scheduler and the push watcher. It keeps every window that can
//! still be active in memory, by monitor, with each monitor's next boundary (a window's start
//! or end, from `tocsin_core::maintenance`) in a time-ordered queue, and sleeps until the
//! earliest, a change notice, or cancellation. Windows are reloaded from the store when this
//! node gains the role, for one monitor on [`Notice::MaintenanceChanged`] (a window written
//! through any node: the feed crosses nodes on PostgreSQL), for all on `Resync` or a lagged
//! feed, and on PostgreSQL whenever a one-row digest of the table differs from the one held.
//!
//! At a boundary the engine [`sync`]s the monitor with its windows:
//! - a window active now: the monitor row gets `maintenance_until` (the active occurrence's end)
//!   and `maintenance_excluded`, and an active monitor not yet in `MAINTENANCE` goes there
//!   through [`super::transition`] with its (non-alerting) `maintenance` event, in one
//!   transaction. From then on every check and push of the monitor reads the row and is
//!   stepped as inside maintenance ([`super::cycle`], `monitoring::push_record`): heartbeats are stored
//!   as `MAINTENANCE`, nothing alerts;
//! - none active: the columns are cleared, and a scheduled monitor still in `MAINTENANCE` is
//!   checked at once, so it takes that check's status now rather than at its next slot (an
//!   outage still going on gives `MAINTENANCE` -> `DOWN`, which alerts). A push monitor cannot
//!   be checked: it takes, in the same transaction as the clearing ([`release_push`]), the
//!   status of what its job last said during the window, stepped now as that push would be
//!   outside one: `up` gives `UP`, `down` gives `DOWN` with its alert. When the job said
//!   nothing since the monitor went into maintenance, or when a missed check-in came after its
//!   last push, it goes `PENDING`
//!   (`tocsin_core::leave_maintenance`) and its next push or missed deadline decides, the
//!   deadline counting as always from its last push or answered check-in.
//!
//! `maintenance_until` is a time, not a flag, so a window is over at its end even on a node
//! whose engine has not yet run. [`run_due`] is the same work for tests with a manual clock.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tocsin_core::maintenance::Window;
use tocsin_core::state::{push_down, step, CycleInput, Transition, Verdict};
use tocsin_core::{enter_maintenance, leave_maintenance, PushStatus, Status};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::runner::Runner;
use super::transition::{record_transition, StatusChange};
use super::{scheduler, MonitorType, LOCAL_REGION};
use crate::alerting::ack_link::Links;
use crate::clock::from_ms;
use crate::cluster::feed::{ChangeKind, Notice};
use crate::cluster::inventory::SCAN_EVERY;
use crate::cx::Cx;
use crate::store::heartbeats::{self as hb_store, ListFilter};
use crate::store::maintenance::{self as store, WindowRow};
use crate::store::monitors::{self, MonitorRow};
use crate::store::status as stored_status;
use crate::store::Backend;

/// Longest sleep between looks at the clock, so a clock that jumps costs at most this.
const MAX_SLEEP: Duration = Duration::from_secs(5);

/// One window as the engine holds it.
#[derive(Debug, Clone)]
struct Held {
    title: String,
    schedule: Window,
    excluded: bool,
}

fn held_of(w: &WindowRow) -> Option<Held> {
    match w.schedule() {
        Ok(schedule) => Some(Held {
            title: w.title.clone(),
            schedule,
            excluded: w.exclude_from_uptime != 0,
        }),
        Err(errors) => {
            tracing::warn!(window = %w.id, ?errors, "stored maintenance window no longer validates; ignored");
            None
        }
    }
}

/// What holds a monitor at `now_ms`: until when, whether excluded from uptime, and the title
/// of the window that started last. Overlapping windows merge: the latest end, and excluded
/// if any of them is.
fn desired(windows: &[Held], now_ms: i64) -> Option<(i64, bool, &str)> {
    let now = from_ms(now_ms);
    let mut out: Option<(i64, bool, &str)> = None;
    for w in windows {
        if let Some(until) = w.schedule.active_until(now) {
            let until = until.timestamp_millis();
            out = Some(match out {
                None => (until, w.excluded, &w.title),
                Some((u, x, t)) => (u.max(until), x || w.excluded, t),
            });
        }
    }
    out
}

/// The next moment after `now_ms` at which what holds the monitor can change.
fn next_boundary(windows: &[Held], now_ms: i64) -> Option<i64> {
    let now = from_ms(now_ms);
    windows
        .iter()
        .filter_map(|w| w.schedule.next_boundary_after(now))
        .map(|t| t.timestamp_millis())
        .min()
}

/// Every monitor's windows and the queue of their next boundaries.
#[derive(Default)]
struct Book {
    windows: HashMap<String, Vec<Held>>,
    queue: BTreeSet<(i64, String)>,
    next: HashMap<String, i64>,
    digest: Option<(i64, i64, i64)>,
}

impl Book {
    fn set(&mut self, monitor_id: &str, windows: Vec<Held>, now_ms: i64) {
        self.unqueue(monitor_id);
        if windows.is_empty() {
            self.windows.remove(monitor_id);
            return;
        }
        if let Some(at) = next_boundary(&windows, now_ms) {
            self.queue.insert((at, monitor_id.to_string()));
            self.next.insert(monitor_id.to_string(), at);
        }
        self.windows.insert(monitor_id.to_string(), windows);
    }

    fn refile(&mut self, monitor_id: &str, now_ms: i64) {
        if let Some(windows) = self.windows.remove(monitor_id) {
            self.set(monitor_id, windows, now_ms);
        }
    }

    fn unqueue(&mut self, monitor_id: &str) {
        if let Some(at) = self.next.remove(monitor_id) {
            self.queue.remove(&(at, monitor_id.to_string()));
        }
    }

    fn take_due(&mut self, now_ms: i64) -> Vec<String> {
        let mut due = Vec::new();
        while let Some((at, _)) = self.queue.first() {
            if *at > now_ms {
                break;
            }
            if let Some((_, id)) = self.queue.pop_first() {
                self.next.remove(&id);
                due.push(id);
            }
        }
        due
    }

    fn earliest(&self) -> Option<i64> {
        self.queue.first().map(|(at, _)| *at)
    }
}

/// Loads every window that can still be active, by monitor.
async fn load(cx: &Cx, now_ms: i64) -> Result<Book, sqlx::Error> {
    let db = cx.db().reader();
    let digest = store::digest(db).await?;
    let mut by_monitor: HashMap<String, Vec<Held>> = HashMap::new();
    for w in store::all_live(db, now_ms).await? {
        if let Some(h) = held_of(&w) {
            by_monitor.entry(w.monitor_id.clone()).or_default().push(h);
        }
    }
    let mut book = Book {
        digest: Some(digest),
        ..Book::default()
    };
    for (id, windows) in by_monitor {
        book.set(&id, windows, now_ms);
    }
    Ok(book)
}

async fn load_one(cx: &Cx, book: &mut Book, monitor_id: &str, now_ms: i64) {
    match store::of_monitor(cx.db().reader(), monitor_id).await {
        Ok(rows) => {
            let windows = rows.iter().filter_map(held_of).collect();
            book.set(monitor_id, windows, now_ms);
        }
        Err(e) => {
            tracing::warn!(monitor = %monitor_id, error = %e, "could not load maintenance windows")
        }
    }
}

/// What [`sync`] did to a monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    /// Nothing to change.
    Unchanged,
    /// A window holds it now (it was put into `MAINTENANCE` if it was not).
    Held,
    /// No window holds it any longer; `check` when a scheduled check should run at once.
    Released { check: bool },
}

/// Brings one monitor's row and status in line with its windows at `now_ms` (see the module
/// documentation).
async fn sync(
    core: &Runner,
    monitor_id: &str,
    windows: &[Held],
    now_ms: i64,
) -> Result<(Synced, Option<MonitorRow>), sqlx::Error> {
    let Some(m) = monitors::get_by_id(core.cx().db().reader(), monitor_id).await? else {
        return Ok((Synced::Unchanged, None));
    };
    let status = m.status().ok();
    match desired(windows, now_ms) {
        Some((until, excluded, title)) => {
            let row_ok =
                m.maintenance_until == Some(until) && (m.maintenance_excluded != 0) == excluded;
            let enter = m.is_active() && status.is_some_and(|s| s != Status::Maintenance);
            if row_ok && !enter {
                return Ok((Synced::Unchanged, Some(m)));
            }
            let mut tx = core.cx().db().begin().await?;
            store::set_monitor_window(&mut *tx, &m.id, Some((until, excluded))).await?;
            if enter {
                if let Ok(state) = m.monitor_state() {
                    let transition = enter_maintenance(&state);
                    let change = StatusChange::of(
                        &m.id,
                        m.seq,
                        &transition,
                        m.status_changed_at,
                        now_ms,
                        m.last_check_at,
                        Some(format!("maintenance window started: {title}")),
                    );
                    record_transition(&mut tx, &Links::of(core.cx()), &change).await?;
                }
            }
            tx.commit().await?;
            Ok((Synced::Held, Some(m)))
        }
        None => {
            if m.kind() == Some(MonitorType::Push) && leaves_maintenance(&m, status) {
                release_push(core, &m.id, now_ms).await?;
                return Ok((Synced::Released { check: false }, Some(m)));
            }
            if m.maintenance_until.is_none() {
                // Already released (or never held); a monitor left in MAINTENANCE by a window
                // that ended while no node was scheduling still gets its check now.
                let check = needs_check(&m, status);
                return Ok((
                    if check {
                        Synced::Released { check }
                    } else {
                        Synced::Unchanged
                    },
                    Some(m),
                ));
            }
            store::set_monitor_window(core.cx().db().writer(), &m.id, None).await?;
            let check = needs_check(&m, status);
            Ok((Synced::Released { check }, Some(m)))
        }
    }
}

/// An active monitor still in `MAINTENANCE` though no window holds it.
fn leaves_maintenance(m: &MonitorRow, status: Option<Status>) -> bool {
    m.is_active() && status == Some(Status::Maintenance)
}

fn needs_check(m: &MonitorRow, status: Option<Status>) -> bool {
    leaves_maintenance(m, status) && m.kind().is_some_and(|k| k != MonitorType::Push)
}

/// Takes a push monitor out of `MAINTENANCE` once no window holds it (see the module docs):
/// clears the window columns and records the transition in one transaction, on the row as
/// read inside it.
async fn release_push(core: &Runner, monitor_id: &str, now_ms: i64) -> Result<(), sqlx::Error> {
    let mut tx = core.cx().db().begin().await?;
    // Written first: on PostgreSQL this also locks the row, so a push recorded meanwhile
    // either committed before (and is read below) or waits for this transaction.
    store::set_monitor_window(&mut *tx, monitor_id, None).await?;
    let Some(m) = monitors::get_by_id(&mut *tx, monitor_id).await? else {
        return Ok(());
    };
    let state = match m.monitor_state() {
        Ok(s) if m.is_active() && s.status == Status::Maintenance => s,
        // A push already took it out, or it was paused meanwhile, or its stored status is
        // corrupt (reported by whoever steps it): only the columns are cleared.
        _ => return tx.commit().await,
    };
    let now = from_ms(now_ms);
    let (transition, message): (Transition, String) = match last_push_said(&mut tx, &m).await? {
        Some((PushStatus::Up, _)) => (
            step(
                &state,
                &m.state_settings(),
                CycleInput::new(Verdict::Up),
                now,
            ),
            "maintenance window ended: the job's last push during it reported up".into(),
        ),
        Some((PushStatus::Down, said)) => (
            push_down(&state, false, now),
            said.unwrap_or_else(|| {
                "maintenance window ended: the job's last push during it reported status=down"
                    .into()
            }),
        ),
        None => (
            leave_maintenance(&state),
            "maintenance window ended: waiting for the job's next push".into(),
        ),
    };
    let change = StatusChange::of(
        &m.id,
        m.seq,
        &transition,
        m.status_changed_at,
        now_ms,
        m.last_check_at,
        Some(message),
    );
    let events = record_transition(&mut tx, &Links::of(core.cx()), &change).await?;
    tx.commit().await?;
    if events.is_some_and(|e| e.iter().any(|e| e.alert != 0)) {
        core.cx().wake_deliveries();
    }
    Ok(())
}

/// What the job's last push said (and its message), when that push came while the monitor
/// was in maintenance (at or after it went there) and no missed check-in was answered after
/// it; `None` otherwise, or when its heartbeat kept no result of its own.
async fn last_push_said(
    tx: &mut crate::store::Tx,
    m: &MonitorRow,
) -> Result<Option<(PushStatus, Option<String>)>, sqlx::Error> {
    let Some(pushed) = m.last_push_at else {
        return Ok(None);
    };
    // `last_check_at` of a push monitor is the later of its last push and the last expected
    // check-in a miss answered: later than the push means the job missed one since.
    if pushed < m.status_changed_at || m.last_check_at.is_some_and(|c| c > pushed) {
        return Ok(None);
    }
    let beats = hb_store::list(
        &mut **tx,
        m.seq,
        &ListFilter {
            from: Some(pushed),
            to: Some(pushed + 1),
            limit: 8,
            ..ListFilter::default()
        },
    )
    .await?;
    let Some(beat) = beats.into_iter().find(|b| b.region == LOCAL_REGION) else {
        return Ok(None);
    };
    let said = match stored_status::own_result(beat.status) {
        Some(Status::Up) => PushStatus::Up,
        Some(Status::Down) => PushStatus::Down,
        _ => return Ok(None),
    };
    Ok(Some((said, beat.message)))
}

/// Runs the check that ends a monitor's maintenance, on a fresh read of its row.
async fn check_now(core: &Runner, monitor_id: &str) {
    let now = core.cx().clock().now_ms();
    match monitors::get_by_id(core.cx().db().reader(), monitor_id).await {
        Ok(Some(row)) if row.is_active() => match super::monitor::Monitor::from_row(&row) {
            Ok(m) => {
                if let Some(Err(e)) = scheduler::run_cycle(core, &m, now).await {
                    tracing::warn!(monitor = %monitor_id, error = %e, "check after maintenance not applied");
                }
            }
            Err(e) => super::monitor::skipped(&e),
        },
        Ok(_) => {}
        Err(e) => tracing::warn!(monitor = %monitor_id, error = %e, "could not load monitor"),
    }
}

/// One pass for tests with a manual clock: loads every window, syncs every monitor that has
/// windows or is held by one, and runs (and awaits) the checks that end maintenance. Returns
/// what happened to each monitor that changed.
pub async fn run_due(core: &Runner, now_ms: i64) -> Result<Vec<(String, Synced)>, sqlx::Error> {
    let book = load(core.cx(), now_ms).await?;
    let mut ids: BTreeSet<String> = book.windows.keys().cloned().collect();
    ids.extend(store::monitors_held(core.cx().db().reader(), now_ms).await?);
    ids.extend(in_maintenance(core.cx()).await?);
    let mut out = Vec::new();
    for id in ids {
        let windows = book.windows.get(&id).map(Vec::as_slice).unwrap_or(&[]);
        let (synced, _) = sync(core, &id, windows, now_ms).await?;
        if synced == (Synced::Released { check: true }) {
            check_now(core, &id).await;
        }
        if synced != Synced::Unchanged {
            out.push((id, synced));
        }
    }
    Ok(out)
}

/// Monitors whose row holds a window (even an ended one), or whose status is MAINTENANCE.
async fn in_maintenance(cx: &Cx) -> Result<Vec<String>, sqlx::Error> {
    let mut ids = store::monitors_held(cx.db().reader(), i64::MIN).await?;
    ids.extend(monitors::ids_with_status(cx.db().reader(), Status::Maintenance).await?);
    Ok(ids)
}

/// The engine task, until `cancel`. It works only while this node holds the scheduler role.
pub async fn run(core: Runner, cancel: CancellationToken) {
    let role = core.scheduler_role().clone();
    let mut role_changes = role.watch();
    loop {
        if role.is_held() {
            if !lead(&core, &mut role_changes, &cancel).await {
                break;
            }
            continue;
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            changed = role_changes.changed() => if changed.is_err() { break },
        }
    }
}

async fn reload_all(core: &Runner, book: &mut Book, checks: &mut tokio::task::JoinSet<()>) {
    let now = core.cx().clock().now_ms();
    match load(core.cx(), now).await {
        Ok(b) => *book = b,
        Err(e) => {
            tracing::warn!(error = %e, "could not load maintenance windows");
            return;
        }
    }
    // Every monitor with windows, plus those a window held or left in MAINTENANCE.
    let mut ids: BTreeSet<String> = book.windows.keys().cloned().collect();
    match in_maintenance(core.cx()).await {
        Ok(more) => ids.extend(more),
        Err(e) => tracing::warn!(error = %e, "could not list monitors in maintenance"),
    }
    for id in ids {
        apply(core, book, &id, now, checks).await;
    }
}

/// Syncs one monitor and re-files its next boundary.
async fn apply(
    core: &Runner,
    book: &mut Book,
    id: &str,
    now_ms: i64,
    checks: &mut tokio::task::JoinSet<()>,
) {
    let windows = book.windows.get(id).cloned().unwrap_or_default();
    match sync(core, id, &windows, now_ms).await {
        Ok((Synced::Released { check: true }, _)) => {
            let (core, id) = (core.clone(), id.to_string());
            checks.spawn(async move { check_now(&core, &id).await });
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(monitor = %id, error = %e, "could not apply maintenance"),
    }
    book.refile(id, now_ms);
}

/// Works while the role is held; false when the task should stop.
async fn lead(
    core: &Runner,
    role_changes: &mut tokio::sync::watch::Receiver<bool>,
    cancel: &CancellationToken,
) -> bool {
    let role = core.scheduler_role();
    // Subscribe before loading, so no change between the load and the loop is missed.
    let mut feed = core.cx().feed().subscribe_all();
    let mut checks = tokio::task::JoinSet::new();
    let mut book = Book::default();
    reload_all(core, &mut book, &mut checks).await;
    let scanning = core.cx().db().backend() == Backend::Postgres;
    let mut scan = tokio::time::interval_at(tokio::time::Instant::now() + SCAN_EVERY, SCAN_EVERY);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let keep = loop {
        if !role.is_held() {
            break true;
        }
        if cancel.is_cancelled() {
            break false;
        }
        let now = core.cx().clock().now_ms();
        for id in book.take_due(now) {
            apply(core, &mut book, &id, now, &mut checks).await;
        }
        let wait = book
            .earliest()
            .map(|at| Duration::from_millis(u64::try_from(at - now).unwrap_or(0)))
            .unwrap_or(MAX_SLEEP)
            .min(MAX_SLEEP);
        tokio::select! {
            _ = cancel.cancelled() => break false,
            _ = tokio::time::sleep(wait) => {}
            Some(_) = checks.join_next(), if !checks.is_empty() => {}
            changed = role_changes.changed() => if changed.is_err() { break false },
            _ = scan.tick(), if scanning => {
                match store::digest(core.cx().db().reader()).await {
                    Ok(d) if Some(d) != book.digest => {
                        tracing::info!("maintenance windows differed from the store: reloading");
                        reload_all(core, &mut book, &mut checks).await;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "could not compare maintenance windows"),
                }
            }
            delivery = feed.recv() => match delivery {
                Ok(d) => match d.notice {
                    Notice::MaintenanceChanged { monitor_id } => {
                        let now = core.cx().clock().now_ms();
                        load_one(core.cx(), &mut book, &monitor_id, now).await;
                        apply(core, &mut book, &monitor_id, now, &mut checks).await;
                        if let Ok(d) = store::digest(core.cx().db().reader()).await {
                            book.digest = Some(d);
                        }
                    }
                    Notice::Monitor(c) if c.kind == ChangeKind::Deleted => {
                        book.unqueue(&c.monitor_id);
                        book.windows.remove(&c.monitor_id);
                    }
                    Notice::Resync => reload_all(core, &mut book, &mut checks).await,
                    _ => {}
                },
                Err(RecvError::Lagged(_)) => reload_all(core, &mut book, &mut checks).await,
                Err(RecvError::Closed) => break false,
            },
        }
    };
    checks.abort_all();
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn held(start_ms: i64, minutes: i64, excluded: bool) -> Held {
        let start = from_ms(start_ms);
        Held {
            title: "t".into(),
            schedule: Window::new(
                start,
                start + chrono::Duration::minutes(minutes),
                "UTC",
                None,
            )
            .unwrap_or_else(|e| panic!("{e:?}")),
            excluded,
        }
    }

    #[test]
    fn overlapping_windows_merge_and_boundaries_come_in_order() {
        let t0 = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .map(|t| t.timestamp_millis())
            .unwrap_or(0);
        let min = 60_000;
        let ws = [held(t0, 30, false), held(t0 + 10 * min, 60, true)];
        assert_eq!(desired(&ws, t0 - 1), None);
        assert_eq!(
            desired(&ws, t0).map(|d| (d.0, d.1)),
            Some((t0 + 30 * min, false))
        );
        assert_eq!(
            desired(&ws, t0 + 20 * min).map(|d| (d.0, d.1)),
            Some((t0 + 70 * min, true))
        );
        assert_eq!(next_boundary(&ws, t0 - 1), Some(t0));
        assert_eq!(next_boundary(&ws, t0), Some(t0 + 10 * min));
        assert_eq!(next_boundary(&ws, t0 + 10 * min), Some(t0 + 30 * min));
        assert_eq!(next_boundary(&ws, t0 + 70 * min), None);

        let mut book = Book::default();
        book.set("m", ws.to_vec(), t0 - 1);
        assert_eq!(book.earliest(), Some(t0));
        assert_eq!(book.take_due(t0), vec!["m".to_string()]);
        book.refile("m", t0);
        assert_eq!(book.earliest(), Some(t0 + 10 * min));
        book.set("m", Vec::new(), t0);
        assert_eq!(book.earliest(), None);
    }
}
