//! The read lane: plain connections kept outside the pools, for the one read every
//! scheduled check makes (its monitor's row and state, just before it runs).
//!
//! Why not the read pool: sqlx 0.8 pings every pooled connection it takes back, so each read
//! through a pool costs a second round trip (to SQLite's worker thread, or to PostgreSQL) and
//! a spawned task. At an everyday rate that round trip is a fair share of a check's whole
//! cost. A lane connection is returned by hand instead: a read that ends well gives it back
//! with [`LaneConn::done`]; one that fails or is cancelled mid-statement drops it (its state is
//! unknown), and the slot connects afresh on its next use.
//!
//! When every slot is busy the caller reads through the pool, so the lane never queues.

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, Connection, Executor};
use tokio::sync::{Mutex, MutexGuard};

/// How many lane connections. Its one caller, the scheduler's group read
/// (`monitors::get_for_run`), has one read in flight at a time, so one is enough; a second
/// would only hold a connection (and on SQLite a thread) that never works.
const SLOTS: usize = 1;

/// Plain connections outside the pools (see the module doc).
#[derive(Debug)]
pub struct Lane {
    options: AnyConnectOptions,
    sqlite: bool,
    slots: Vec<Mutex<Option<AnyConnection>>>,
}

/// One lane connection, leased. Dropping it without [`LaneConn::done`] closes the connection.
pub struct LaneConn<'a> {
    slot: MutexGuard<'a, Option<AnyConnection>>,
    kept: bool,
}

impl Lane {
    pub fn new(options: AnyConnectOptions, sqlite: bool) -> Lane {
        Lane {
            options,
            sqlite,
            slots: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// A free lane connection, connecting it if its slot is empty; `None` when every slot is
    /// busy or connecting failed (the caller uses the pool then).
    pub async fn lease(&self) -> Option<LaneConn<'_>> {
        let mut slot = self.slots.iter().find_map(|s| s.try_lock().ok())?;
        if slot.is_none() {
            match self.open().await {
                Ok(conn) => *slot = Some(conn),
                Err(e) => {
                    tracing::debug!(error = %e, "read lane could not connect");
                    return None;
                }
            }
        }
        Some(LaneConn { slot, kept: false })
    }

    async fn open(&self) -> Result<AnyConnection, sqlx::Error> {
        let mut conn = AnyConnection::connect_with(&self.options).await?;
        if self.sqlite {
            conn.execute(super::SQLITE_SETUP).await?;
        }
        Ok(conn)
    }

    /// Closes every idle lane connection (a busy one closes when its lease drops).
    pub async fn close(&self) {
        for s in &self.slots {
            let conn = s.lock().await.take();
            if let Some(conn) = conn {
                let _ = conn.close().await;
            }
        }
    }
}

impl LaneConn<'_> {
    /// The connection, for one or more statements.
    pub fn conn(&mut self) -> &mut AnyConnection {
        // A lease is only made over a filled slot, and only its drop empties it.
        self.slot
            .as_mut()
            .expect("a leased lane slot holds a connection")
    }

    /// Gives the connection back for the next read: call it once the statements ended well.
    pub fn done(mut self) {
        self.kept = true;
    }
}

impl Drop for LaneConn<'_> {
    fn drop(&mut self) {
        if !self.kept {
            // Failed or cancelled mid-statement: what the connection holds is unknown.
            self.slot.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    async fn lane_on_file() -> (tempfile::TempDir, Lane) {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("lane.db").display());
        let options = AnyConnectOptions::from_str(&url).expect("sqlite url");
        (dir, Lane::new(options, true))
    }

    /// A temporary table lives as long as its connection: it tells a kept connection from a
    /// fresh one.
    async fn marked(lease: &mut LaneConn<'_>) -> bool {
        sqlx::query("SELECT 1 FROM temp.mark")
            .fetch_optional(lease.conn())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_lease_given_back_is_reused_and_one_dropped_is_replaced() {
        let (_dir, lane) = lane_on_file().await;
        let mut first = lane.lease().await.expect("a free slot");
        sqlx::query("CREATE TEMP TABLE mark (x INTEGER)")
            .execute(first.conn())
            .await
            .expect("temp table");
        first.done();

        let mut again = lane.lease().await.expect("a free slot");
        assert!(
            marked(&mut again).await,
            "a connection given back is used again"
        );
        drop(again);

        let mut fresh = lane.lease().await.expect("a free slot");
        assert!(
            !marked(&mut fresh).await,
            "a lease dropped without done() must not hand its connection on"
        );
        fresh.done();
        lane.close().await;
    }

    #[tokio::test]
    async fn busy_slots_send_the_reader_to_the_pool() {
        let (_dir, lane) = lane_on_file().await;
        let held: Vec<_> = futures::future::join_all((0..SLOTS).map(|_| lane.lease()))
            .await
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(held.len(), SLOTS);
        assert!(
            lane.lease().await.is_none(),
            "no lease while every slot is busy"
        );
        drop(held);
        assert!(lane.lease().await.is_some());
    }
}
