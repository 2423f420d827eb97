//! The push step of a write: what the push check-ins and missed deadlines in a batch mean for
//! their monitors (`crate::monitoring::push_record`), planned against the committed monitor rows before
//! the heartbeats are inserted (refusing repeats, gone monitors and deadlines no longer
//! missed), then applied to those inserted (state and events, in the same transaction).

use std::collections::{HashMap, HashSet};

use super::task::Prepared;
use crate::alerting::ack_link::Links;
use crate::monitoring::push_record::{self as push_record, Skip};
use crate::store::Tx;

/// The push items of one batch, with their index in it, and what [`plan`] decided for them.
pub(super) struct PushStep<'a> {
    pushes: Vec<(usize, push_record::Item<'a>)>,
    plan: push_record::Plan,
}

/// Plans the push items of `batch` (`None` when it holds none); those refused are added to
/// `skipped` by their index in the batch.
pub(super) async fn plan<'a>(
    tx: &mut Tx,
    batch: &'a [Prepared],
    skipped: &mut HashMap<usize, Skip>,
) -> Result<Option<PushStep<'a>>, sqlx::Error> {
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
    if pushes.is_empty() {
        return Ok(None);
    }
    let items: Vec<_> = pushes.iter().map(|(_, item)| *item).collect();
    let plan = push_record::plan(tx, &items).await?;
    for ((i, _), skip) in pushes.iter().zip(&plan.skip) {
        if let Some(skip) = skip {
            skipped.insert(*i, *skip);
        }
    }
    Ok(Some(PushStep { pushes, plan }))
}

impl PushStep<'_> {
    /// The status code `p`'s row is stored with: a push (or a missed deadline) inside a
    /// maintenance window is stored as MAINTENANCE; only here, against the committed monitor
    /// row, is that known.
    pub(super) fn stored_status(&self, p: &Prepared) -> i64 {
        let row = &p.row;
        if p.push.is_some() {
            if let Some(excluded) = self.plan.maintenance_at(row.monitor_seq, row.ts) {
                return in_window(row.status, excluded);
            }
        }
        row.status
    }

    /// Records the planned pushes whose heartbeats were `inserted`; whether any changed a
    /// monitor's status (and so may have enqueued notifications).
    pub(super) async fn apply(
        &self,
        tx: &mut Tx,
        batch: &[Prepared],
        skipped: &HashMap<usize, Skip>,
        inserted: &HashSet<(i64, i64, i64)>,
        links: &Links,
    ) -> Result<bool, sqlx::Error> {
        let (pushes, plan) = (&self.pushes, &self.plan);
        let recorded: Vec<push_record::Recorded<'_>> = pushes
            .iter()
            .enumerate()
            .filter(|(_, (i, item))| {
                !skipped.contains_key(i)
                    && inserted.contains(&(item.monitor_seq, item.ts_ms, batch[*i].row.region_id))
            })
            .map(|(index, (i, item))| push_record::Recorded {
                index,
                item: *item,
                message: batch[*i].detail.as_ref().and_then(|d| d.message.as_deref()),
            })
            .collect();
        let events = push_record::apply(tx, plan, &recorded, links).await?;
        Ok(!events.is_empty())
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
