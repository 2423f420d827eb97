//! HTTP adapter for maintenance windows (operations, rules and the record's shape in
//! `domain::maintenance`; the schedule math in `tocsin_core::maintenance`).

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged};
use crate::auth::{caps, needs};
use crate::domain::maintenance::{
    self, CreateMaintenanceWindow, MaintenanceWindow, UpdateMaintenanceWindow, WindowPath,
    WindowQuery,
};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Maintenance";

/// How several monitors share one maintenance: a window belongs to one monitor.
const SEVERAL: &str = "Several monitors: a window holds one monitor (`monitorId`). Work that \
    touches several monitors is one window per monitor, created with the same title, \
    description, schedule and `excludeFromUptime`; the dashboard creates them together from \
    one form, lists windows that agree on all of those as one maintenance, and edits them \
    together (each changed, created for a monitor added, deleted for one taken out). Each \
    stays its own record: listed, read, changed and announced to subscribers on its own.";

/// What every window operation's description says about the schedule.
const SCHEDULE: &str = "While a window is active its monitor's status is MAINTENANCE: checks \
    keep running and store heartbeats with status MAINTENANCE, no alert opens and no \
    notification is sent. When it ends, the monitor takes the status of its next check (run \
    at once for scheduled monitors; for a push monitor, its next push or missed deadline), so \
    an outage still going on then opens its alert.\n\n\
    Schedule: a one-off window (`recurring: null`) is active from `startsAt` (inclusive) to \
    `endsAt` (exclusive). A recurring window's occurrences each last `endsAt - startsAt` and \
    start, from `startsAt` on, at the local wall-clock time of `startsAt` in `timezone` (an \
    IANA name, default UTC): every day (`daily`), on `dayOfWeek` (`weekly`, 0 = Sunday to 6 = \
    Saturday), or on `dayOfMonth` (`monthly`, 1 to 31; a month without that day, such as \
    April for 31 or February for 30, is skipped, not moved to its last day). With `cron`, \
    occurrences start at the times of the 5-field cron `expression` (at most 100 characters) \
    read in `timezone`. Across DST changes the wall-clock time is kept: a start inside a \
    spring-forward gap moves to the first instant after the gap (02:30 on the changeover \
    day starts at 03:00), a start in a repeated autumn hour takes the earlier of the two \
    instants; the length is real time. An occurrence may not last longer than its period \
    (24 h daily, 7 days weekly, 28 days monthly, the shortest gap between cron runs).\n\n\
    Uptime: with `excludeFromUptime: true` the checks inside the window count in no uptime \
    figure, hourly stat or report (and end an outage there); with false they count by the \
    check's own result, as if there were no window. This is decided when each check is \
    stored, so editing or deleting a window later does not change past figures.\n\n\
    Subscribers: a window is announced by email to the verified subscribers of every published \
    status page with a component over its monitor (those who chose components only when one \
    of those is among them) when it appears on the page's scheduled maintenance list: when it \
    is created or changed with an occurrence in progress or starting within 14 days, else \
    when its next occurrence comes within 14 days (checked every 30 s). Each window is \
    announced once per schedule (monitor, `startsAt`, `endsAt`, `timezone`, `recurring`): \
    editing its title or description sends nothing, moving it announces it again, and a \
    recurring window is announced once, for its first occurrence, the email saying how it \
    repeats. Nothing is sent when an occurrence starts or ends, or when a window is deleted. \
    The emails go through the notification outbox (retried like every delivery).";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/maintenance-windows",
            get_with(list, |op| {
                op.id("listMaintenanceWindows")
                    .tag(TAG)
                    .summary("The workspace's maintenance windows, oldest first; `?monitorId=` for one monitor's (`monitors:read`)")
                    .description(SCHEDULE)
            })
            .post_with(create, |op| {
                op.id("createMaintenanceWindow")
                    .tag(TAG)
                    .summary("Schedule a maintenance window for a monitor (`maintenance:write`)")
                    .description(&format!("{SEVERAL}\n\n{SCHEDULE}"))
            }),
        )
        .api_route(
            "/maintenance-windows/{window_id}",
            get_with(get_one, |op| {
                op.id("getMaintenanceWindow")
                    .tag(TAG)
                    .summary("One maintenance window (`monitors:read`)")
                    .description(SCHEDULE)
            })
            .patch_with(update, |op| {
                op.id("updateMaintenanceWindow")
                    .tag(TAG)
                    .summary("Change a maintenance window; version-locked with If-Match (`maintenance:write`)")
                    .description(SCHEDULE)
            })
            .delete_with(delete, |op| {
                op.id("deleteMaintenanceWindow")
                    .tag(TAG)
                    .summary("Delete a maintenance window; a monitor it holds leaves maintenance with its next check (`maintenance:write`)")
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListMaintenanceWindows>,
    ApiQuery(q): ApiQuery<WindowQuery>,
) -> ApiResult<Json<Vec<MaintenanceWindow>>> {
    Ok(Json(maintenance::list(state.cx(), &caller, q).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<needs::CreateMaintenanceWindow>,
    ApiJson(body): ApiJson<CreateMaintenanceWindow>,
) -> ApiResult<Created<MaintenanceWindow>> {
    Ok(Created(
        maintenance::create(state.cx(), &caller, body).await?,
    ))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    Path(p): Path<WindowPath>,
) -> ApiResult<Tagged<MaintenanceWindow>> {
    let (w, version) = maintenance::get(state.cx(), &caller, &p.window_id).await?;
    Ok(Tagged(w, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::MaintenanceWrite>,
    Path(p): Path<WindowPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateMaintenanceWindow>,
) -> ApiResult<Tagged<MaintenanceWindow>> {
    let (w, version) =
        maintenance::update(state.cx(), &caller, &p.window_id, expected, body).await?;
    Ok(Tagged(w, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<needs::DeleteMaintenanceWindow>,
    Path(p): Path<WindowPath>,
) -> ApiResult<NoContent> {
    maintenance::delete(state.cx(), &caller, &p.window_id).await?;
    Ok(NoContent)
}
