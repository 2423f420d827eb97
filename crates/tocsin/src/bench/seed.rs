//! Fast setup for the monitor scenarios: many HTTP monitors inserted in bulk through the store
//! layer (one transaction per [`BATCH`] rows, `seq` values reserved in one statement), and a
//! history of UP heartbeats written through the real group-commit writer. The API's per-request
//! path (validation, audit, change feed) is bypassed on purpose: it is not what these scenarios
//! measure, and 100,000 API calls would take minutes.

use std::time::Duration;

use tocsin_core::Status;

use tocsin::cx::Cx;
use tocsin::ids::new_id;
use tocsin::monitoring::heartbeats::NewHeartbeat;
use tocsin::monitoring::LOCAL_REGION;
use tocsin::server::AppState;
use tocsin::store::monitors::{self, MonitorRow};

/// Monitors per insert transaction: large enough to amortise the commit, small enough that the
/// single writer connection is not held for long.
const BATCH: usize = 2_000;

/// The monitors to create.
#[derive(Debug, Clone)]
pub struct MonitorSeed {
    pub workspace_id: String,
    pub count: usize,
    pub interval_s: i64,
    pub url: String,
    pub timeout_s: i64,
}

/// One active HTTP monitor row (region `local`) as it stands after running for an hour: UP,
/// one success counted. Seeding them UP makes a measured window steady state: a fresh PENDING
/// monitor's first cycle is a status change with an event in its transaction, which at 100,000
/// monitors every minute would fill the whole first minute with first cycles.
pub(super) fn row(seed: &MonitorSeed, seq: i64, i: usize, now: i64) -> MonitorRow {
    let hour_ago = now - 3_600_000;
    MonitorRow {
        id: new_id(),
        seq,
        workspace_id: seed.workspace_id.clone(),
        name: format!("bench {i}"),
        kind_text: "HTTP".into(),
        status_text: tocsin::store::status::text(Status::Up).into(),
        url: Some(seed.url.clone()),
        host: None,
        port: None,
        interval_s: seed.interval_s,
        retries: 0,
        timeout_s: seed.timeout_s,
        tags: "[]".into(),
        description: None,
        config: "{}".into(),
        regions: format!("[\"{LOCAL_REGION}\"]"),
        region_strategy: "all".into(),
        quorum: None,
        confirmations_required: 1,
        recovery_confirmations_required: 1,
        min_failure_duration_ms: 0,
        consecutive_failures: 0,
        consecutive_successes: 1,
        pending_failure_since: None,
        active: 1,
        grace_s: None,
        last_push_at: None,
        dns_baseline: None,
        status_changed_at: hour_ago,
        last_check_at: Some(now - seed.interval_s * 1000),
        started_at: hour_ago,
        stale_since: None,
        maintenance_until: None,
        maintenance_excluded: 0,
        flap_transitions: Some(5),
        flap_window_minutes: Some(30),
        flapping_since: None,
        version: 1,
        created_at: hour_ago,
        updated_at: hour_ago,
    }
}

/// Inserts the monitors and returns `(id, seq)` of each, in creation order. Fails before
/// writing anything if the generated check does not parse (so a scenario never silently runs
/// monitors the probe skips).
pub async fn insert_monitors(cx: &Cx, seed: &MonitorSeed) -> anyhow::Result<Vec<(String, i64)>> {
    let now = cx.clock().now_ms();
    if let Err(e) = tocsin::monitoring::monitor::Monitor::from_row(&row(seed, 0, 0, now)) {
        anyhow::bail!("the bench monitor does not parse: {e}");
    }
    let mut out = Vec::with_capacity(seed.count);
    let mut done = 0;
    while done < seed.count {
        let n = BATCH.min(seed.count - done);
        let mut tx = cx.db().begin().await?;
        let first = monitors::reserve_seqs(&mut *tx, i64::try_from(n)?).await?;
        for j in 0..n {
            let m = row(seed, first + i64::try_from(j)?, done + j, now);
            monitors::insert(&mut *tx, &m, None).await?;
            out.push((m.id, m.seq));
        }
        tx.commit().await?;
        done += n;
    }
    Ok(out)
}

/// Writes `count` UP heartbeats of one monitor, one every `every` ending at `until_ms`, through
/// the group-commit writer, and waits until they are stored.
pub async fn write_history(
    state: &AppState,
    monitor: &(String, i64),
    count: usize,
    every: Duration,
    until_ms: i64,
) -> anyhow::Result<()> {
    let step = i64::try_from(every.as_millis())?;
    let writer = state.heartbeats();
    for i in 0..count {
        let ts = until_ms - step * i64::try_from(count - i)?;
        let mut hb = NewHeartbeat::new(&monitor.0, monitor.1, ts, LOCAL_REGION, Status::Up, 1.5);
        hb.status_code = Some(200);
        writer.submit_detached(hb);
    }
    writer.flush().await;
    Ok(())
}
