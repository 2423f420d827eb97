//! Reading monitors: one by id (with its settings version), every monitor of the workspace,
//! one cursor page, and the counts by status. All need `monitors:read`.

use tocsin_core::Status;

use super::input::{MonitorListQuery, MonitorPageQuery};
use super::view::{view_one_on, views, Monitor, MonitorPage, MonitorStats};
use super::Versioned;
use crate::auth::{needs, Caller};
use crate::cx::Cx;
use crate::domain::pagination::finish;
use crate::domain::{DomainError, Resource};
use crate::store;
use crate::store::monitors::{MonitorFilter, MonitorRow};

/// The stored monitor of the caller's workspace, or `MONITOR_NOT_FOUND`.
pub(super) async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<MonitorRow, DomainError> {
    load_on(cx.db().reader(), caller, id).await
}

/// [`load`] on a connection or pool the caller chooses.
async fn load_on<'e>(
    e: impl store::Exec<'e>,
    caller: &Caller,
    id: &str,
) -> Result<MonitorRow, DomainError> {
    store::monitors::get(e, &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Monitor))
}

/// The monitor as it is now, with its version: what every write answers with.
pub(super) async fn current(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<Versioned<Monitor>, DomainError> {
    // The row and its memberships on one connection: one trip through the pool, not three.
    let mut conn = cx.db().reader().acquire().await?;
    let m = load_on(&mut *conn, caller, id).await?;
    Ok(Versioned {
        value: view_one_on(&mut conn, &m).await?,
        version: m.version,
    })
}

/// One monitor, with its settings version.
pub async fn get(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
) -> Result<Versioned<Monitor>, DomainError> {
    caller.require::<needs::GetMonitor>()?;
    current(cx, caller, monitor_id).await
}

/// Authorises a full list and checks its filters, answering the filter to list with. The
/// REST surface builds the body itself from cached parts (`http::monitor_list`); [`list`]
/// reads the same monitors plainly.
pub fn list_filter(
    caller: &Caller,
    query: &MonitorListQuery,
) -> Result<MonitorFilter, DomainError> {
    caller.require::<needs::ListMonitors>()?;
    let errors = query.check();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(query.filter())
}

/// Every monitor of the workspace matching the filters, in id order.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    query: &MonitorListQuery,
) -> Result<Vec<Monitor>, DomainError> {
    let filter = list_filter(caller, query)?;
    let rows = store::monitors::list_page(
        cx.db().reader(),
        &caller.workspace_id,
        &filter,
        "",
        i64::MAX,
    )
    .await?;
    views(cx, &rows).await
}

/// One page of monitors in id order.
pub async fn page(
    cx: &Cx,
    caller: &Caller,
    query: &MonitorPageQuery,
) -> Result<MonitorPage, DomainError> {
    caller.require::<needs::ListMonitorsPage>()?;
    let errors = query.check();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let params = query.page();
    let filter = query.filter();
    let rows = store::monitors::list_page(
        cx.db().reader(),
        &caller.workspace_id,
        &filter,
        &params.after(),
        i64::from(params.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, params.limit(), |r| r.id.clone());
    Ok(MonitorPage {
        monitors: views(cx, &rows).await?,
        next_cursor,
    })
}

/// How many monitors are in each status; paused ones are counted apart.
pub async fn stats(cx: &Cx, caller: &Caller) -> Result<MonitorStats, DomainError> {
    caller.require::<needs::GetMonitorStats>()?;
    let rows = store::monitors::count_by_status(cx.db().reader(), &caller.workspace_id).await?;
    let mut s = MonitorStats {
        up: 0,
        down: 0,
        degraded: 0,
        paused: 0,
        pending: 0,
        changed: 0,
        maintenance: 0,
        total: 0,
    };
    for (status, active, n) in rows {
        s.total += n;
        if active == 0 {
            s.paused += n;
            continue;
        }
        match store::status::from_text(&status)? {
            Status::Up => s.up += n,
            Status::Down => s.down += n,
            Status::Degraded => s.degraded += n,
            Status::Changed => s.changed += n,
            Status::Maintenance => s.maintenance += n,
            Status::Pending => s.pending += n,
        }
    }
    Ok(s)
}
