//! One write transaction of the writer: the scheduled cycles' state writes, the push step
//! (`super::push_step`), the heartbeats, the details of those inserted, and their hourly
//! rollups; the delivery worker is woken once it commits if a status changed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

use super::push_step;
use super::task::{Committed, Prepared, WriterTask};
use crate::monitoring::push_record::Skip;
use crate::monitoring::rollup;
use crate::store::heartbeats::{self as hb_store, DetailRow, HeartbeatRow};
use crate::store::monitors::{self, StateUpdate};

impl WriterTask {
    /// One transaction: the cycles' state writes and what pushes in the batch mean (their
    /// idempotency claims first), heartbeats, details of those inserted, their rollups, and the
    /// pushed monitors' state.
    pub(super) async fn commit(&self, batch: &[Prepared]) -> Result<Committed, sqlx::Error> {
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
        // Push items: what they mean, decided before the heartbeats are inserted.
        let push = push_step::plan(&mut tx, batch, &mut skipped).await?;
        let rows: Vec<HeartbeatRow> = batch
            .iter()
            .enumerate()
            .filter(|(i, _)| !skipped.contains_key(i))
            .map(|(_, p)| {
                let mut row = p.row.clone();
                if let Some(push) = &push {
                    row.status = push.stored_status(p);
                }
                row
            })
            .collect();
        let inserted: HashSet<(i64, i64, i64)> = hb_store::insert_heartbeats(&mut tx, &rows)
            .await?
            .into_iter()
            .collect();
        let mut status_changed = false;
        if let Some(push) = &push {
            // A status change may have enqueued notifications: send them once committed.
            status_changed |= push
                .apply(&mut tx, batch, &skipped, &inserted, &self.opts.alert_links)
                .await?;
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
}
