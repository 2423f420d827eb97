//! Heartbeats: one stored check result each, and the group-commit writer every producer
//! (scheduler, probes, push ingestion, on-demand checks) hands results to.
//!
//! # Storage
//! `heartbeats` is a narrow, clustered table keyed `(monitor_seq, ts, region_id)`: status as a
//! small integer (UP = 0), latency in 0.1 ms units, the HTTP status code, the phase timings
//! packed into a varint blob ([`pack_timings`]), the retry count, and an optional correlation
//! id (on-demand checks). An UP heartbeat measures under 48 bytes on disk on SQLite (the
//! test suite measures and prints the figure).
//!
//! The heavy parts go to `heartbeat_details`, written only when the result is worth them:
//! - every heartbeat whose status is not UP (DOWN, DEGRADED, CHANGED, MAINTENANCE, PENDING)
//!   keeps its message, response headers, response body (capped at 64 KiB), resolved IP and
//!   assertion results;
//! - an UP heartbeat keeps them only when it carries a message (push check-ins show theirs)
//!   or a correlation id (an on-demand check, whose caller wants to see everything).
//!
//! Any other UP heartbeat keeps status code, timings, latency and retry count; its
//! `message`, `responseHeaders`, `responseBody`, `resolvedIP` and `assertionResults` read as
//! null. (An UP result never has a failed assertion: a failed `warn` assertion makes it
//! DEGRADED, a failed `fail` one DOWN; so what is dropped is "all assertions passed".)
//!
//! # Identity
//! A heartbeat's API id encodes its key and nothing else: a UUIDv7 whose 48-bit timestamp is
//! the heartbeat's `ts`, with the region id in the 12 `rand_a` bits and the monitor seq in the
//! 62 `rand_b` bits ([`encode_id`]). Ids therefore sort by time like every other id, and need no
//! column. Two results for the same monitor, region and millisecond would share a key: the
//! writer moves the later one forward by a millisecond instead of losing it.
//!
//! # Writing
//! [`HeartbeatWriter`] is cheap to clone and lives in the application state. A single task
//! takes everything queued (up to [`WriterOptions::max_batch`] items; whatever arrived while
//! the previous transaction was committing), writes it in one transaction (the counters of the
//! scheduled cycles that carry them, multi-row inserts of the heartbeats and their details, the
//! hourly rollup rows of [`super::rollup`], and for push items their idempotency claims,
//! monitor state and events via [`crate::push::record`]; each table one statement per batch,
//! see [`crate::store::batch`]),
//! commits, and only then answers each waiter: when [`HeartbeatWriter::submit`] resolves, the
//! heartbeat is durable and readable. A submission therefore waits at most for the commit in
//! progress plus its own, well under the 10 ms the push contract allows at the benchmarked
//! rates (see BENCHMARKS.md). If a batch fails, its heartbeats are retried one by one so a single
//! bad result cannot sink the others. [`HeartbeatWriter::shutdown`] writes whatever is queued
//! and stops the task; the server calls it before closing the database.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tocsin_checks::{AssertionResult, Timings};
use tocsin_core::state::Status;
use tokio::sync::{mpsc, oneshot, Notify};

use super::histogram::to_units;
use super::rollup;
use crate::push::record::{self as push_record, PushEffect, Skip};
use crate::store::heartbeats::{self as hb_store, DetailRow, HeartbeatRow};
use crate::store::monitors::{self, StateUpdate};
use crate::store::Db;

/// Response bodies are stored up to this many bytes (cut at a character boundary).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Messages are stored up to this many bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// Longest region name and correlation id accepted.
pub const MAX_NAME_LEN: usize = 200;

/// One check result, as a producer hands it over.
#[derive(Debug, Clone)]
pub struct NewHeartbeat {
    pub monitor_id: String,
    pub monitor_seq: i64,
    /// When the check ran, in milliseconds since the epoch.
    pub ts_ms: i64,
    pub region: String,
    pub status: Status,
    /// For a `MAINTENANCE` heartbeat: the check's own result when its window counts in uptime
    /// figures, `None` when the window is excluded from them (see [`crate::store::status`]).
    pub counted_as: Option<Status>,
    pub latency_ms: f64,
    pub status_code: Option<u16>,
    pub message: Option<String>,
    pub retry_count: u32,
    pub timings: Option<Timings>,
    pub response_headers: Option<BTreeMap<String, Vec<String>>>,
    pub response_body: Option<String>,
    pub resolved_ip: Option<IpAddr>,
    pub assertion_results: Option<Vec<AssertionResult>>,
    pub correlation_id: Option<String>,
    /// Set by push ingestion and the push watcher: what the heartbeat means for its monitor,
    /// applied in the same transaction (see [`crate::push::record`]).
    pub push: Option<PushEffect>,
    /// Set by a scheduled cycle that changes no status: the monitor's new counters, written in
    /// the same transaction as the heartbeat and only while the monitor is active; when it is
    /// not (paused or deleted while the check ran), the heartbeat is dropped too and the
    /// submission answers [`WriteError::MonitorGone`]. Every heartbeat of the cycle carries the
    /// same update.
    pub state: Option<Arc<StateUpdate>>,
}

impl NewHeartbeat {
    /// A bare result: everything optional empty.
    pub fn new(
        monitor_id: &str,
        monitor_seq: i64,
        ts_ms: i64,
        region: &str,
        status: Status,
        latency_ms: f64,
    ) -> NewHeartbeat {
        NewHeartbeat {
            monitor_id: monitor_id.to_string(),
            monitor_seq,
            ts_ms,
            region: region.to_string(),
            status,
            counted_as: None,
            latency_ms,
            status_code: None,
            message: None,
            retry_count: 0,
            timings: None,
            response_headers: None,
            response_body: None,
            resolved_ip: None,
            assertion_results: None,
            correlation_id: None,
            push: None,
            state: None,
        }
    }

    /// Whether this result keeps a details row (see the module documentation).
    pub fn keeps_details(&self) -> bool {
        self.status != Status::Up || self.message.is_some() || self.correlation_id.is_some()
    }
}

/// Where a written heartbeat landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRef {
    /// The API id.
    pub id: String,
    pub monitor_seq: i64,
    /// The stored time (the submitted one, or moved forward past a same-millisecond twin).
    pub ts_ms: i64,
    pub region_id: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("the heartbeat writer has shut down")]
    Closed,
    #[error("a heartbeat with this monitor, region and time is already stored")]
    Duplicate,
    #[error("invalid heartbeat: {0}")]
    Invalid(String),
    #[error("database error: {0}")]
    Database(String),
    /// A push retried with an Idempotency-Key already recorded for its monitor.
    #[error("a push with this idempotency key is already recorded")]
    Repeated,
    /// A push or miss for a monitor that is gone (or no longer a push monitor).
    #[error("the monitor no longer exists")]
    MonitorGone,
    /// A missed deadline that a push (or an earlier miss) already answered.
    #[error("the deadline is no longer missed")]
    NotDue,
}

impl From<Skip> for WriteError {
    fn from(s: Skip) -> Self {
        match s {
            Skip::Repeated => WriteError::Repeated,
            Skip::Gone => WriteError::MonitorGone,
            Skip::NotDue => WriteError::NotDue,
        }
    }
}

/// Tuning of the group commit.
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// How long the first submission of a batch waits for company beyond what already queued
    /// (default zero: commit at once; batches form from what queues during a commit).
    pub max_wait: Duration,
    /// The most heartbeats one transaction takes.
    pub max_batch: usize,
    /// Submissions that may queue before `submit` waits for room (back-pressure).
    pub queue: usize,
    /// The links of the alert notifications a push's status change enqueues.
    pub alert_links: crate::alerting::ack_link::Links,
    /// Wakes the delivery worker after a commit that enqueued notifications.
    pub wake_deliveries: Option<std::sync::Arc<tokio::sync::Notify>>,
    /// The live streams' fan-out, told of each committed result (it relays them to other
    /// nodes' streams, see [`crate::live::relay`]).
    pub live: Option<crate::live::Hub>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            max_wait: Duration::ZERO,
            max_batch: 1000,
            queue: 20_000,
            alert_links: Default::default(),
            wake_deliveries: None,
            live: None,
        }
    }
}

/// Counters of the writer, for tests, benchmarks and `/metrics`.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Committed write transactions.
    pub transactions: AtomicU64,
    /// Heartbeats committed.
    pub written: AtomicU64,
    /// Submissions refused as duplicates.
    pub duplicates: AtomicU64,
    /// Submissions that failed (database or validation).
    pub failed: AtomicU64,
}

/// A snapshot of [`WriterStats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriterCounts {
    pub transactions: u64,
    pub written: u64,
    pub duplicates: u64,
    pub failed: u64,
}

type Reply = oneshot::Sender<Result<HeartbeatRef, WriteError>>;

struct Job {
    hb: NewHeartbeat,
    reply: Option<Reply>,
}

enum Msg {
    // Boxed: a job is large next to the control messages.
    Job(Box<Job>),
    /// Write everything queued so far, then answer.
    Flush(oneshot::Sender<()>),
    /// Write everything queued, stop taking submissions, answer, exit.
    Shutdown(oneshot::Sender<()>),
}

/// The handle producers submit through. Clones share one writer task.
#[derive(Clone)]
pub struct HeartbeatWriter {
    tx: mpsc::Sender<Msg>,
    stats: Arc<WriterStats>,
    /// Detached submissions still waiting for queue room, so `flush` can wait for them.
    parked: Arc<(AtomicUsize, Notify)>,
}

impl std::fmt::Debug for HeartbeatWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeartbeatWriter")
            .field("counts", &self.counts())
            .finish()
    }
}

impl HeartbeatWriter {
    /// Starts the writer task: on SQLite on a thread of its own, on PostgreSQL on the current
    /// runtime.
    ///
    /// Why a thread on SQLite: a batch is a handful of statements, each a round trip to the
    /// connection's worker thread, and everything that pushes or checks waits for the batch.
    /// A writer task on the server's runtime would queue behind request handling at every one
    /// of those round trips; on its own thread it resumes the moment a statement returns. (The
    /// SQLite driver's connections are plain threads and channels, usable from any runtime;
    /// PostgreSQL connections belong to the runtime whose reactor drives their sockets, and
    /// their round trips are network waits anyway.)
    pub fn start(db: Db, opts: WriterOptions) -> HeartbeatWriter {
        let (tx, rx) = mpsc::channel(opts.queue.max(1));
        let stats = Arc::new(WriterStats::default());
        let backend = db.backend();
        let task = WriterTask {
            db,
            opts,
            stats: stats.clone(),
            regions: HashMap::new(),
            last_ts: HashMap::new(),
        };
        let parts = if backend == crate::store::Backend::Sqlite {
            run_on_own_thread(task, rx)
        } else {
            Some((task, rx))
        };
        if let Some((task, rx)) = parts {
            // PostgreSQL, or no thread could be had: a task of the current runtime.
            tokio::spawn(task.run(rx));
        }
        HeartbeatWriter {
            tx,
            stats,
            parked: Arc::new((AtomicUsize::new(0), Notify::new())),
        }
    }

    /// Queues a heartbeat and resolves once it is committed (or refused).
    pub fn submit(
        &self,
        hb: NewHeartbeat,
    ) -> impl std::future::Future<Output = Result<HeartbeatRef, WriteError>> + Send + 'static {
        let tx = self.tx.clone();
        async move {
            let (reply, answer) = oneshot::channel();
            tx.send(Msg::Job(Box::new(Job {
                hb,
                reply: Some(reply),
            })))
            .await
            .map_err(|_| WriteError::Closed)?;
            answer.await.unwrap_or(Err(WriteError::Closed))
        }
    }

    /// Queues a heartbeat without waiting for it. When the queue is full the hand-over waits
    /// in a task of its own, so nothing is dropped; failures are logged and counted.
    pub fn submit_detached(&self, hb: NewHeartbeat) {
        match self
            .tx
            .try_send(Msg::Job(Box::new(Job { hb, reply: None })))
        {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(msg)) => {
                let tx = self.tx.clone();
                let parked = self.parked.clone();
                parked.0.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    if tx.send(msg).await.is_err() {
                        tracing::warn!("heartbeat dropped: the writer has shut down");
                    }
                    if parked.0.fetch_sub(1, Ordering::SeqCst) == 1 {
                        parked.1.notify_waiters();
                    }
                });
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("heartbeat dropped: the writer has shut down");
            }
        }
    }

    /// Resolves when everything submitted before the call is committed.
    pub async fn flush(&self) {
        self.unpark().await;
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// Waits until no detached submission is parked outside the queue.
    async fn unpark(&self) {
        loop {
            let notified = self.parked.1.notified();
            if self.parked.0.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Writes what is queued and stops the writer; later submissions get [`WriteError::Closed`].
    pub async fn shutdown(&self) {
        self.unpark().await;
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Shutdown(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    pub fn counts(&self) -> WriterCounts {
        WriterCounts {
            transactions: self.stats.transactions.load(Ordering::Relaxed),
            written: self.stats.written.load(Ordering::Relaxed),
            duplicates: self.stats.duplicates.load(Ordering::Relaxed),
            failed: self.stats.failed.load(Ordering::Relaxed),
        }
    }
}

struct WriterTask {
    db: Db,
    opts: WriterOptions,
    stats: Arc<WriterStats>,
    /// Region name to id, filled on first use.
    regions: HashMap<String, i64>,
    /// The newest stored time per (monitor seq, region id), to move same-millisecond twins.
    last_ts: HashMap<(i64, i64), i64>,
}

/// A job after validation, with its row and details ready.
struct Prepared {
    row: HeartbeatRow,
    detail: Option<DetailRow>,
    push: Option<PushEffect>,
    state: Option<Arc<StateUpdate>>,
    reply: Option<Reply>,
    /// What the live streams show of it once committed (only while a stream is open here or
    /// on another node).
    live: Option<crate::live::Beat>,
}

/// What one transaction did: the keys inserted, and the push items it refused.
#[derive(Default)]
struct Committed {
    inserted: HashSet<(i64, i64, i64)>,
    skipped: HashMap<usize, Skip>,
}

impl WriterTask {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        while let Some(first) = rx.recv().await {
            let mut jobs = Vec::new();
            let mut acks = Vec::new();
            let mut stop = None;
            match first {
                Msg::Job(j) => jobs.push(*j),
                Msg::Flush(a) => acks.push(a),
                Msg::Shutdown(a) => stop = Some(a),
            }
            // Group commit without a timer: everything that queued while the previous commit
            // ran goes into this one, so batches grow with load while a lone heartbeat on an
            // idle server commits at once.
            while acks.is_empty() && stop.is_none() && jobs.len() < self.opts.max_batch {
                match rx.try_recv() {
                    Ok(Msg::Job(j)) => jobs.push(*j),
                    Ok(Msg::Flush(a)) => acks.push(a),
                    Ok(Msg::Shutdown(a)) => stop = Some(a),
                    Err(_) => break,
                }
            }
            if acks.is_empty()
                && stop.is_none()
                && !self.opts.max_wait.is_zero()
                && jobs.len() < self.opts.max_batch
            {
                let deadline = tokio::time::Instant::now() + self.opts.max_wait;
                while jobs.len() < self.opts.max_batch {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(Some(Msg::Job(j))) => jobs.push(*j),
                        Ok(Some(Msg::Flush(a))) => {
                            acks.push(a);
                            break;
                        }
                        Ok(Some(Msg::Shutdown(a))) => {
                            stop = Some(a);
                            break;
                        }
                        Ok(None) | Err(_) => break,
                    }
                }
            }
            self.write(jobs).await;
            for a in acks {
                let _ = a.send(());
            }
            if let Some(ack) = stop {
                // Refuse new submissions, then write what already queued.
                rx.close();
                let mut rest = Vec::new();
                while let Ok(msg) = rx.try_recv() {
                    match msg {
                        Msg::Job(j) => rest.push(*j),
                        Msg::Flush(a) | Msg::Shutdown(a) => {
                            let _ = a.send(());
                        }
                    }
                }
                for chunk in chunked(rest, self.opts.max_batch) {
                    self.write(chunk).await;
                }
                let _ = ack.send(());
                return;
            }
        }
    }

    async fn write(&mut self, jobs: Vec<Job>) {
        if jobs.is_empty() {
            return;
        }
        let mut batch = Vec::with_capacity(jobs.len());
        let mut keys = HashSet::with_capacity(jobs.len());
        for mut job in jobs {
            let push = job.hb.push.take();
            let state = job.hb.state.take();
            let live = self
                .opts
                .live
                .as_ref()
                .filter(|hub| hub.wants_beats())
                .map(|_| crate::live::Beat {
                    monitor_id: job.hb.monitor_id.clone(),
                    status: crate::store::status::text(job.hb.status),
                    latency_ms: job.hb.latency_ms,
                    region: job.hb.region.clone(),
                    at_ms: job.hb.ts_ms,
                });
            match self.prepare(job.hb).await {
                Ok((mut row, mut detail)) => {
                    // Same monitor, region and millisecond as another result (or a burst of
                    // pushes that already moved past it): place it just after the newest.
                    if let Some(&last) = self.last_ts.get(&(row.monitor_seq, row.region_id)) {
                        if row.ts <= last && last - row.ts < TWIN_WINDOW_MS {
                            row.ts = last + 1;
                        }
                    }
                    while keys.contains(&(row.monitor_seq, row.ts, row.region_id)) {
                        row.ts += 1;
                    }
                    if let Some(d) = detail.as_mut() {
                        d.ts = row.ts;
                    }
                    keys.insert((row.monitor_seq, row.ts, row.region_id));
                    batch.push(Prepared {
                        row,
                        detail,
                        push,
                        state,
                        reply: job.reply,
                        live,
                    });
                }
                Err(e) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    answer(job.reply, Err(e));
                }
            }
        }
        match self.commit(&batch).await {
            Ok(done) => self.answer_all(batch, &done),
            Err(e) if batch.len() == 1 => self.fail_all(batch, &e),
            Err(e) => {
                tracing::warn!(error = %e, n = batch.len(), "heartbeat batch failed; writing one by one");
                for p in batch {
                    let one = [p];
                    match self.commit(&one).await {
                        Ok(done) => self.answer_all(one.into(), &done),
                        Err(e) => self.fail_all(one.into(), &e),
                    }
                }
            }
        }
    }

    fn answer_all(&mut self, batch: Vec<Prepared>, done: &Committed) {
        for (i, p) in batch.into_iter().enumerate() {
            let key = (p.row.monitor_seq, p.row.ts, p.row.region_id);
            if let Some(skip) = done.skipped.get(&i) {
                answer(p.reply, Err((*skip).into()));
            } else if done.inserted.contains(&key) {
                if let (Some(hub), Some(beat)) = (&self.opts.live, p.live) {
                    hub.heartbeat(beat);
                }
                let last = self.last_ts.entry((key.0, key.2)).or_insert(key.1);
                *last = (*last).max(key.1);
                answer(
                    p.reply,
                    Ok(HeartbeatRef {
                        id: encode_id(key.0, key.1, key.2),
                        monitor_seq: key.0,
                        ts_ms: key.1,
                        region_id: key.2,
                    }),
                );
            } else {
                self.stats.duplicates.fetch_add(1, Ordering::Relaxed);
                answer(p.reply, Err(WriteError::Duplicate));
            }
        }
    }

    fn fail_all(&self, batch: Vec<Prepared>, e: &sqlx::Error) {
        tracing::error!(error = %e, n = batch.len(), "could not store heartbeats");
        for p in batch {
            self.stats.failed.fetch_add(1, Ordering::Relaxed);
            answer(p.reply, Err(WriteError::Database(e.to_string())));
        }
    }

    /// One transaction: the cycles' state writes and what pushes in the batch mean (their
    /// idempotency claims first), heartbeats, details of those inserted, their rollups, and the
    /// pushed monitors' state.
    async fn commit(&self, batch: &[Prepared]) -> Result<Committed, sqlx::Error> {
        let mut tx = self.db.begin_batch().await?;
        let mut skipped = HashMap::new();
        // Cycle state first: a monitor paused or deleted since its check began keeps neither
        // the state nor the heartbeats.
        let mut states: Vec<(i64, &StateUpdate)> = Vec::new();
        let mut seen = HashSet::new();
        for p in batch {
            if let Some(u) = &p.state {
                if seen.insert(p.row.monitor_seq) {
                    states.push((p.row.monitor_seq, u));
                }
            }
        }
        if !states.is_empty() {
            let applied = monitors::update_states(&mut tx, &states).await?;
            for (i, p) in batch.iter().enumerate() {
                if p.state.is_some() && !applied.contains(&p.row.monitor_seq) {
                    skipped.insert(i, Skip::Gone);
                }
            }
        }
        // Push items, with their index in the batch.
        let pushes: Vec<(usize, push_record::Item<'_>)> = batch
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let effect = p.push.as_ref()?;
                Some((
                    i,
                    push_record::Item {
                        monitor_seq: p.row.monitor_seq,
                        ts_ms: p.row.ts,
                        effect,
                    },
                ))
            })
            .collect();
        let plan = if pushes.is_empty() {
            None
        } else {
            let items: Vec<_> = pushes.iter().map(|(_, item)| *item).collect();
            let plan = push_record::plan(&mut tx, &items).await?;
            for ((i, _), skip) in pushes.iter().zip(&plan.skip) {
                if let Some(skip) = skip {
                    skipped.insert(*i, *skip);
                }
            }
            Some(plan)
        };
        let rows: Vec<HeartbeatRow> = batch
            .iter()
            .enumerate()
            .filter(|(i, _)| !skipped.contains_key(i))
            .map(|(_, p)| {
                let mut row = p.row.clone();
                // A push (or a missed deadline) inside a maintenance window is stored as
                // MAINTENANCE; only here, against the committed monitor row, is that known.
                if let (Some(plan), Some(_)) = (&plan, &p.push) {
                    if let Some(excluded) = plan.maintenance_at(row.monitor_seq, row.ts) {
                        row.status = in_window(row.status, excluded);
                    }
                }
                row
            })
            .collect();
        let inserted: HashSet<(i64, i64, i64)> = hb_store::insert_heartbeats(&mut tx, &rows)
            .await?
            .into_iter()
            .collect();
        let mut status_changed = false;
        if let Some(plan) = &plan {
            let recorded: Vec<push_record::Recorded<'_>> = pushes
                .iter()
                .enumerate()
                .filter(|(_, (i, item))| {
                    !skipped.contains_key(i)
                        && inserted.contains(&(
                            item.monitor_seq,
                            item.ts_ms,
                            batch[*i].row.region_id,
                        ))
                })
                .map(|(index, (i, item))| push_record::Recorded {
                    index,
                    item: *item,
                    message: batch[*i].detail.as_ref().and_then(|d| d.message.as_deref()),
                })
                .collect();
            let events =
                push_record::apply(&mut tx, plan, &recorded, &self.opts.alert_links).await?;
            // A status change may have enqueued notifications: send them once committed.
            status_changed |= !events.is_empty();
        }
        let details: Vec<DetailRow> = batch
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                !skipped.contains_key(i)
                    && inserted.contains(&(p.row.monitor_seq, p.row.ts, p.row.region_id))
            })
            .map(|(_, p)| p)
            .filter_map(|p| p.detail.clone())
            .collect();
        hb_store::insert_details(&mut tx, &details).await?;
        let (hourly, bins) = rollup::deltas(
            rows.iter()
                .filter(|r| inserted.contains(&(r.monitor_seq, r.ts, r.region_id))),
        );
        hb_store::upsert_hourly(&mut tx, &hourly).await?;
        hb_store::upsert_bins(&mut tx, &bins).await?;
        tx.commit().await?;
        if status_changed {
            if let Some(wake) = &self.opts.wake_deliveries {
                wake.notify_one();
            }
        }
        self.stats.transactions.fetch_add(1, Ordering::Relaxed);
        self.stats
            .written
            .fetch_add(inserted.len() as u64, Ordering::Relaxed);
        Ok(Committed { inserted, skipped })
    }

    async fn prepare(
        &mut self,
        hb: NewHeartbeat,
    ) -> Result<(HeartbeatRow, Option<DetailRow>), WriteError> {
        if !(0..MAX_TS).contains(&hb.ts_ms) {
            return Err(WriteError::Invalid("ts_ms out of range".into()));
        }
        if hb.monitor_seq < 0 || hb.monitor_seq > MAX_SEQ {
            return Err(WriteError::Invalid("monitor_seq out of range".into()));
        }
        if hb.region.is_empty() || hb.region.len() > MAX_NAME_LEN {
            return Err(WriteError::Invalid(
                "region name must be 1 to 200 bytes".into(),
            ));
        }
        if hb
            .correlation_id
            .as_ref()
            .is_some_and(|c| c.len() > MAX_NAME_LEN)
        {
            return Err(WriteError::Invalid(
                "correlation id longer than 200 bytes".into(),
            ));
        }
        let region_id = match self.regions.get(&hb.region) {
            Some(id) => *id,
            None => {
                let id = hb_store::region_id(&self.db, &hb.region)
                    .await
                    .map_err(|e| WriteError::Database(e.to_string()))?;
                if id > MAX_REGION {
                    return Err(WriteError::Invalid("too many regions".into()));
                }
                self.regions.insert(hb.region.clone(), id);
                id
            }
        };
        let detail = hb.keeps_details().then(|| DetailRow {
            monitor_seq: hb.monitor_seq,
            ts: hb.ts_ms,
            region_id,
            message: hb.message.as_deref().map(|m| cap(m, MAX_MESSAGE_BYTES)),
            response_headers: hb
                .response_headers
                .as_ref()
                .and_then(|h| serde_json::to_string(h).ok()),
            response_body: hb.response_body.as_deref().map(|b| cap(b, MAX_BODY_BYTES)),
            resolved_ip: hb.resolved_ip.map(|ip| ip.to_string()),
            assertion_results: hb
                .assertion_results
                .as_ref()
                .and_then(|a| serde_json::to_string(a).ok()),
        });
        let row = HeartbeatRow {
            monitor_seq: hb.monitor_seq,
            ts: hb.ts_ms,
            region_id,
            status: match hb.status {
                Status::Maintenance => crate::store::status::maintenance_code(hb.counted_as),
                s => crate::store::status::code(s),
            },
            latency: to_units(hb.latency_ms),
            status_code: hb.status_code.map(i64::from),
            timings: hb.timings.as_ref().map(pack_timings),
            retry_count: i64::from(hb.retry_count.min(i16::MAX as u32)),
            correlation_id: hb.correlation_id,
        };
        Ok((row, detail))
    }
}

/// Runs the writer on a thread of its own with a single-threaded runtime (see
/// [`HeartbeatWriter::start`]); hands the parts back if that cannot be done.
fn run_on_own_thread(
    task: WriterTask,
    rx: mpsc::Receiver<Msg>,
) -> Option<(WriterTask, mpsc::Receiver<Msg>)> {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Some((task, rx));
    };
    // Shared so that the parts come back if the thread cannot be spawned.
    let parts = Arc::new(std::sync::Mutex::new(Some((task, rx))));
    let theirs = parts.clone();
    let spawned = std::thread::Builder::new()
        .name("heartbeat-writer".into())
        .spawn(move || {
            let taken = theirs.lock().ok().and_then(|mut p| p.take());
            if let Some((task, rx)) = taken {
                rt.block_on(task.run(rx));
            }
        });
    match spawned {
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "no thread for the heartbeat writer; running it as a task");
            parts.lock().ok().and_then(|mut p| p.take())
        }
    }
}

/// The code of a result `code` taken inside a maintenance window.
fn in_window(code: i64, excluded: bool) -> i64 {
    use crate::store::status as st;
    let own = st::from_code(code).ok();
    if excluded {
        st::excluded_code(own)
    } else {
        st::maintenance_code(own)
    }
}

fn answer(reply: Option<Reply>, result: Result<HeartbeatRef, WriteError>) {
    if let Some(r) = reply {
        let _ = r.send(result);
    }
}

fn chunked<T>(items: Vec<T>, n: usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for i in items {
        cur.push(i);
        if cur.len() >= n.max(1) {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The longest prefix of `s` within `max` bytes that ends on a character boundary.
fn cap(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

// ---------------------------------------------------------------------------------------------
// Codes and encodings

/// A result this close behind the newest stored one of its monitor and region is taken for a
/// same-moment twin and placed just after it; older ones keep their time (a late result).
const TWIN_WINDOW_MS: i64 = 1_000;

/// Timestamps must fit the 48 bits of the id.
const MAX_TS: i64 = 1 << 48;
const MAX_REGION: i64 = (1 << 12) - 1;
const MAX_SEQ: i64 = (1 << 62) - 1;

/// The API id of the heartbeat `(monitor_seq, ts, region_id)`: a UUIDv7 carrying the key.
pub fn encode_id(monitor_seq: i64, ts: i64, region_id: i64) -> String {
    let ts = (ts as u128) & ((1 << 48) - 1);
    let region = (region_id as u128) & 0xfff;
    let seq = (monitor_seq as u128) & ((1 << 62) - 1);
    let v = (ts << 80) | (0x7 << 76) | (region << 64) | (0b10 << 62) | seq;
    uuid::Uuid::from_u128(v).to_string()
}

/// The key `(monitor_seq, ts, region_id)` of a heartbeat id, or `None` if it is not one.
pub fn decode_id(id: &str) -> Option<(i64, i64, i64)> {
    let u = uuid::Uuid::parse_str(id).ok()?;
    let v = u.as_u128();
    if (v >> 76) & 0xf != 0x7 || (v >> 62) & 0b11 != 0b10 {
        return None;
    }
    let ts = (v >> 80) as i64;
    let region = ((v >> 64) & 0xfff) as i64;
    let seq = (v & ((1 << 62) - 1)) as i64;
    Some((seq, ts, region))
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Phase timings as five varints in 0.1 ms units: dns, tcp, tls + 1 (0 = no TLS), first
/// byte, transfer. Typically 6 to 10 bytes.
pub fn pack_timings(t: &Timings) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    push_varint(&mut out, to_units(t.dns) as u64);
    push_varint(&mut out, to_units(t.tcp) as u64);
    push_varint(&mut out, t.tls.map_or(0, |v| to_units(v) as u64 + 1));
    push_varint(&mut out, to_units(t.first_byte) as u64);
    push_varint(&mut out, to_units(t.transfer) as u64);
    out
}

/// The inverse of [`pack_timings`] (milliseconds, 0.1 ms resolution); `None` if malformed.
pub fn unpack_timings(bytes: &[u8]) -> Option<Timings> {
    let mut pos = 0;
    let mut next = || read_varint(bytes, &mut pos).map(|v| v as f64 / 10.0);
    let dns = next()?;
    let tcp = next()?;
    let tls = next()?;
    let first_byte = next()?;
    let transfer = next()?;
    Some(Timings {
        dns,
        tcp,
        tls: (tls > 0.0).then(|| ((tls * 10.0 - 1.0).round()) / 10.0),
        first_byte,
        transfer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_sort_by_time() {
        let a = encode_id(42, 1_700_000_000_123, 3);
        let b = encode_id(7, 1_700_000_000_124, 1);
        assert_eq!(decode_id(&a), Some((42, 1_700_000_000_123, 3)));
        assert!(a < b);
        assert_eq!(
            uuid::Uuid::parse_str(&a).map(|u| u.get_version_num()).ok(),
            Some(7)
        );
        assert_eq!(decode_id("not-an-id"), None);
        assert_eq!(decode_id(&crate::ids::new_id()).map(|_| ()), Some(()));
    }

    #[test]
    fn timings_round_trip() {
        let t = Timings {
            dns: 1.5,
            tcp: 12.3,
            tls: Some(0.0),
            first_byte: 250.1,
            transfer: 0.4,
        };
        let packed = pack_timings(&t);
        assert!(packed.len() <= 10, "{}", packed.len());
        assert_eq!(unpack_timings(&packed), Some(t));
        let plain = Timings { tls: None, ..t };
        assert_eq!(unpack_timings(&pack_timings(&plain)), Some(plain));
        assert_eq!(unpack_timings(&[0x80]), None);
    }
}
