//! The writer's handle: what producers submit through ([`HeartbeatWriter`]), how it is tuned
//! ([`WriterOptions`]) and counted ([`WriterStats`]), what a refused submission is
//! ([`WriteError`]), and where its task runs (a thread of its own on SQLite).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Notify};

use super::submission::{HeartbeatRef, NewHeartbeat};
use super::task::{WriterTask, PATIENT_BATCH};
use crate::monitoring::push_record::Skip;
use crate::store::Db;

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
    /// How long a batch of only patient submissions (scheduled check results that change no
    /// status) waits for company while it holds fewer than 32 of them. A commit costs
    /// about the same for one row as for twenty (its transaction, the pages it rewrites, and
    /// the readers' page caches it invalidates), so at everyday rates, where results arrive
    /// one by one, waiting a moment makes a check several times cheaper; a push, an on-demand
    /// check or a status change never waits (default zero: no waiting).
    pub patience: Duration,
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
            patience: Duration::ZERO,
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

pub(super) type Reply = oneshot::Sender<Result<HeartbeatRef, WriteError>>;

pub(super) struct Job {
    pub(super) hb: NewHeartbeat,
    pub(super) reply: Option<Reply>,
    /// Nobody is waiting on it but its own cycle: it may wait [`WriterOptions::patience`] for
    /// company (see [`HeartbeatWriter::submit_patient`]).
    pub(super) patient: bool,
}

pub(super) enum Msg {
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
    /// Rung after queueing what must not wait for company (see [`WriterTask`]'s patience).
    hurry: Arc<Notify>,
    /// How many queued submissions fill the batch the writer is waiting with (set by it).
    need: Arc<AtomicUsize>,
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
        let hurry = Arc::new(Notify::new());
        let need = Arc::new(AtomicUsize::new(PATIENT_BATCH));
        let backend = db.backend();
        let task = WriterTask {
            db,
            opts,
            stats: stats.clone(),
            hurry: hurry.clone(),
            need: need.clone(),
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
            hurry,
            need,
        }
    }

    /// Queues a heartbeat and resolves once it is committed (or refused).
    pub fn submit(
        &self,
        hb: NewHeartbeat,
    ) -> impl std::future::Future<Output = Result<HeartbeatRef, WriteError>> + Send + 'static {
        self.submit_with(hb, false)
    }

    /// As [`submit`](Self::submit), for a scheduled check's result that changes no status:
    /// it may wait up to [`WriterOptions::patience`] to share its commit with others.
    pub fn submit_patient(
        &self,
        hb: NewHeartbeat,
    ) -> impl std::future::Future<Output = Result<HeartbeatRef, WriteError>> + Send + 'static {
        self.submit_with(hb, true)
    }

    fn submit_with(
        &self,
        hb: NewHeartbeat,
        patient: bool,
    ) -> impl std::future::Future<Output = Result<HeartbeatRef, WriteError>> + Send + 'static {
        let tx = self.tx.clone();
        let hurry = self.hurry.clone();
        let need = self.need.clone();
        async move {
            let (reply, answer) = oneshot::channel();
            tx.send(Msg::Job(Box::new(Job {
                hb,
                reply: Some(reply),
                patient,
            })))
            .await
            .map_err(|_| WriteError::Closed)?;
            // A patient result wakes the writer only once enough have queued to fill its batch.
            if !patient || tx.max_capacity() - tx.capacity() >= need.load(Ordering::SeqCst) {
                hurry.notify_one();
            }
            answer.await.unwrap_or(Err(WriteError::Closed))
        }
    }

    /// Queues a heartbeat without waiting for it. When the queue is full the hand-over waits
    /// in a task of its own, so nothing is dropped; failures are logged and counted.
    pub fn submit_detached(&self, hb: NewHeartbeat) {
        match self.tx.try_send(Msg::Job(Box::new(Job {
            hb,
            reply: None,
            patient: false,
        }))) {
            Ok(()) => self.hurry.notify_one(),
            Err(mpsc::error::TrySendError::Full(msg)) => {
                let tx = self.tx.clone();
                let parked = self.parked.clone();
                let hurry = self.hurry.clone();
                parked.0.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    if tx.send(msg).await.is_err() {
                        tracing::warn!("heartbeat dropped: the writer has shut down");
                    }
                    hurry.notify_one();
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
            self.hurry.notify_one();
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
            self.hurry.notify_one();
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
