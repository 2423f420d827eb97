//! The writer's task: takes everything queued (group commit without a timer), validates each
//! result into its rows, places same-millisecond twins, commits the batch (`super::commit`),
//! retries a failed batch one by one, and answers every waiter once its heartbeat is durable.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tocsin_core::state::Status;
use tokio::sync::{mpsc, oneshot};

use super::fan_out;
use super::handle::{Job, Msg, Reply, WriteError, WriterOptions, WriterStats};
use super::id::{encode_id, MAX_REGION, MAX_SEQ, MAX_TS};
use super::submission::{
    HeartbeatRef, NewHeartbeat, MAX_BODY_BYTES, MAX_MESSAGE_BYTES, MAX_NAME_LEN,
};
use super::timings::pack_timings;
use crate::monitoring::histogram::to_units;
use crate::monitoring::push_record::{PushEffect, Skip};
use crate::store::heartbeats::{self as hb_store, DetailRow, HeartbeatRow};
use crate::store::monitors::StateUpdate;
use crate::store::Db;

/// A result this close behind the newest stored one of its monitor and region is taken for a
/// same-moment twin and placed just after it; older ones keep their time (a late result).
const TWIN_WINDOW_MS: i64 = 1_000;

/// A batch of patient results this large commits without waiting: the commit's fixed cost is
/// already shared widely enough.
pub(super) const PATIENT_BATCH: usize = 32;

pub(super) struct WriterTask {
    pub(super) db: Db,
    pub(super) opts: WriterOptions,
    pub(super) stats: Arc<WriterStats>,
    /// Rung by the handle after queueing a submission that must not wait, a flush, a
    /// shutdown, or the [`PATIENT_BATCH`]th patient one.
    pub(super) hurry: Arc<tokio::sync::Notify>,
    /// How many more queued results would fill the batch being waited with: the handle rings
    /// `hurry` once that many are queued.
    pub(super) need: Arc<std::sync::atomic::AtomicUsize>,
    /// Region name to id, filled on first use.
    pub(super) regions: HashMap<String, i64>,
    /// The newest stored time per (monitor seq, region id), to move same-millisecond twins.
    pub(super) last_ts: HashMap<(i64, i64), i64>,
}

/// A job after validation, with its row and details ready.
pub(super) struct Prepared {
    pub(super) row: HeartbeatRow,
    pub(super) detail: Option<DetailRow>,
    pub(super) push: Option<PushEffect>,
    pub(super) state: Option<Arc<StateUpdate>>,
    pub(super) reply: Option<Reply>,
    /// What the live streams show of it once committed (only while a stream is open here or
    /// on another node).
    pub(super) live: Option<crate::live::Beat>,
}

/// What one transaction did: the keys inserted, and the push items it refused.
#[derive(Default)]
pub(super) struct Committed {
    pub(super) inserted: HashSet<(i64, i64, i64)>,
    pub(super) skipped: HashMap<usize, Skip>,
}

/// Waits up to `wait` for more submissions while the batch holds fewer than `limit` jobs; a
/// flush or a shutdown ends the wait.
async fn company(
    rx: &mut mpsc::Receiver<Msg>,
    wait: std::time::Duration,
    limit: usize,
    jobs: &mut Vec<Job>,
    acks: &mut Vec<oneshot::Sender<()>>,
    stop: &mut Option<oneshot::Sender<()>>,
) {
    let deadline = tokio::time::Instant::now() + wait;
    while jobs.len() < limit {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(Msg::Job(j))) => jobs.push(*j),
            Ok(Some(Msg::Flush(a))) => {
                acks.push(a);
                break;
            }
            Ok(Some(Msg::Shutdown(a))) => {
                *stop = Some(a);
                break;
            }
            Ok(None) | Err(_) => break,
        }
    }
}

/// Lets a batch of patient results wait up to `wait` for more, to share one commit. The
/// writer sleeps through the wait instead of waking for each result that queues (at everyday
/// rates each such wake-up would cost about what the commit saves): only `hurry`, rung for
/// a result someone waits on, a flush, a shutdown or a full batch, ends it early.
async fn patiently(
    rx: &mut mpsc::Receiver<Msg>,
    hurry: &tokio::sync::Notify,
    need: &std::sync::atomic::AtomicUsize,
    wait: std::time::Duration,
    jobs: &mut Vec<Job>,
    acks: &mut Vec<oneshot::Sender<()>>,
    stop: &mut Option<oneshot::Sender<()>>,
) {
    let deadline = tokio::time::Instant::now() + wait;
    let mut last = false;
    loop {
        while jobs.len() < PATIENT_BATCH {
            match rx.try_recv() {
                Ok(Msg::Job(j)) => {
                    let impatient = !j.patient;
                    jobs.push(*j);
                    if impatient {
                        break;
                    }
                }
                Ok(Msg::Flush(a)) => {
                    acks.push(a);
                    break;
                }
                Ok(Msg::Shutdown(a)) => {
                    *stop = Some(a);
                    break;
                }
                Err(_) => break,
            }
        }
        let ended = !acks.is_empty() || stop.is_some() || jobs.iter().any(|j| !j.patient);
        if last || ended || jobs.len() >= PATIENT_BATCH {
            need.store(PATIENT_BATCH, Ordering::SeqCst);
            return;
        }
        // Tell the handle what fills the batch, then look again: a result queued before the
        // store saw the old figure and may not have rung.
        let missing = PATIENT_BATCH - jobs.len();
        need.store(missing, Ordering::SeqCst);
        if rx.len() >= missing {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => last = true,
            _ = hurry.notified() => {}
        }
    }
}

impl WriterTask {
    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
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
            if acks.is_empty() && stop.is_none() && !self.opts.max_wait.is_zero() {
                let limit = self.opts.max_batch;
                company(
                    &mut rx,
                    self.opts.max_wait,
                    limit,
                    &mut jobs,
                    &mut acks,
                    &mut stop,
                )
                .await;
            }
            if acks.is_empty()
                && stop.is_none()
                && !self.opts.patience.is_zero()
                && jobs.iter().all(|j| j.patient)
            {
                let (hurry, need) = (self.hurry.clone(), self.need.clone());
                let wait = self.opts.patience;
                patiently(
                    &mut rx, &hurry, &need, wait, &mut jobs, &mut acks, &mut stop,
                )
                .await;
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
            let live = fan_out::beat_of(self.opts.live.as_ref(), &job.hb);
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
                fan_out::publish(self.opts.live.as_ref(), p.live);
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
