//! Root-cause alerting: a monitor that depends on others (`dependsOn`) pages once for a shared
//! outage. The decisions run in the transaction of the status change that opens or resolves
//! an alert (`super::alerts`), so the decision and the deliveries commit together; folding
//! held pages under their root follows the root's page (below).
//!
//! - **Suppressed.** A monitor going DOWN while something it depends on (directly or through
//!   others) has an unresolved alert opens its alert under that outage's root
//!   (`rootCauseAlertId`): no delivery, no escalation timer, no automatic incident.
//! - **Held.** A monitor with dependencies that goes DOWN first (the common case: its checks
//!   see the outage before its dependency's confirmations do) opens a root alert whose
//!   `alert.opened` deliveries are due only after its dependencies' longest detection time
//!   ([`crate::store::dependencies::hold_ms`]). The hold is the delivery's due time in the
//!   outbox, so it survives restarts and is sent by whichever node's worker finds it due.
//! - **Folded.** A root that opens lists in its page the held alerts of its dependents
//!   (directly or not) opened within its own detection time before it and not sent yet
//!   (`data.dependents`, [`listed`]) and folds them ([`fold_held`]: their held deliveries
//!   dropped, the alerts put under the root). Up to [`FOLD_IN_PLACE`] of them fold in its
//!   transaction; beyond that it commits with the page alone, because moving ten thousand
//!   alerts under it there kept its page waiting for the writer longer than a page may take,
//!   and the fold follows the page's first attempt, by the node that made it
//!   (`super::deliver`). It is kept however a process dies: a held page that falls due is
//!   judged again first ([`settle_held`]), and folds under an outage upstream that is open
//!   then instead of being sent. A hold that runs out with nothing upstream open is simply
//!   sent; an outage that ends during its hold pages nobody (its held page is dropped, and no
//!   resolution is sent).
//! - **Released.** When a root resolves, the alerts still unresolved under it whose monitors
//!   are DOWN become roots (or move under another outage upstream that is still on) and send
//!   `alert.opened`, held for the time their own recovery takes to confirm: a dependent that
//!   recovered together with its root, its check recorded a moment after the root's, drops
//!   the page unsent.
//! - **Maintenance.** A monitor whose dependency is in maintenance opens no alert, as if it
//!   were in maintenance itself.
//! - **Acknowledged.** Acknowledging a root acknowledges its open dependents
//!   (`domain::alerts`).
//! - **Status pages.** A root's automatic incident names what depends on it and counts their
//!   components as affected; suppressed and folded alerts open no incident of their own, and
//!   a held one opens its incident only once its hold is over (`super::auto_incidents`).
//! - **Concurrency.** On PostgreSQL the decisions of one workspace's dependent monitors are
//!   serialized by a transaction-scoped advisory lock ([`enter`]), taken before anything
//!   is read, so two outages opening in the same instant see each other.

use serde_json::{json, Value};

use crate::store::alerts::{self as store, AlertRow};
use crate::store::dependencies as deps;

/// What a monitor going DOWN now is under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// Nothing it depends on is down: it opens a root alert.
    Clear,
    /// Its alert opens suppressed under this root alert.
    Under(String),
    /// A dependency is in maintenance: no alert.
    Maintenance,
}

/// Where a monitor stands in the dependency graph: what the walks from it can find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Graph {
    /// It depends on something: the walks up (its root, its hold) can find one.
    pub up: bool,
    /// Something depends on it: the walk down (held pages to fold) can find one.
    pub down: bool,
}

/// Starts a root-cause decision for `monitor_id` in workspace `ws`: one indexed look for its
/// edges, so that the walks below run only where they can find something. Most monitors have
/// no edge, and a recursive walk costs several times a plain read even when it finds nothing; in an
/// outage of thousands of unrelated monitors those walks, run in each status change's
/// transaction, were most of what the transitions kept SQLite's one writer busy with.
///
/// On PostgreSQL it also serializes the decisions of a workspace's dependent monitors: a
/// root and its dependent whose alerts open (or resolve) in the same instant in two
/// transactions would otherwise each miss the other's uncommitted alert under READ
/// COMMITTED, and both page. The second waits for the first to commit, then reads it.
/// SQLite has one writer, so its transactions never overlap; monitors without dependencies
/// take no lock.
pub async fn enter(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    monitor_id: &str,
) -> Result<Graph, sqlx::Error> {
    let (up, down) = deps::edges(&mut *conn, monitor_id).await?;
    if (up || down) && conn.backend_name().eq_ignore_ascii_case("postgresql") {
        deps::lock_workspace(&mut *conn, ws).await?;
    }
    Ok(Graph { up, down })
}

/// Where `monitor_id`'s alert belongs if it opens now, and how long its page is held if it
/// opens as a root (its dependencies' longest detection time; 0 without dependencies:
/// nothing to hold).
pub async fn upstream(
    conn: &mut sqlx::AnyConnection,
    graph: Graph,
    monitor_id: &str,
) -> Result<(Upstream, i64), sqlx::Error> {
    if !graph.up {
        return Ok((Upstream::Clear, 0));
    }
    let view = deps::upstream_view(&mut *conn, monitor_id).await?;
    let upstream = match view.root {
        Some(root) => Upstream::Under(root),
        None if view.maintenance => Upstream::Maintenance,
        None => Upstream::Clear,
    };
    Ok((upstream, view.hold_ms))
}

/// How many listed dependents a root folds in its own transaction (a few milliseconds); a
/// root listing more folds them beside its page's first attempt.
pub const FOLD_IN_PLACE: usize = 50;

/// What a root opening now lists in its page (`data.dependents`): the monitors of the held
/// alerts it will fold ([`fold_held`]) and of what is already under those, by name.
pub async fn listed(
    conn: &mut sqlx::AnyConnection,
    graph: Graph,
    root: &AlertRow,
) -> Result<Value, sqlx::Error> {
    if !graph.down {
        return Ok(Value::Array(Vec::new()));
    }
    let since = window_start(&mut *conn, root).await?;
    let rows = deps::held_below_listed(&mut *conn, &root.monitor_id, since).await?;
    let held: std::collections::HashSet<&str> = rows
        .iter()
        .filter(|r| r.under.is_none())
        .map(|r| r.alert_id.as_str())
        .collect();
    let mut kept: Vec<&deps::Below> = rows
        .iter()
        .filter(|r| r.under.as_deref().is_none_or(|u| held.contains(u)))
        .collect();
    kept.sort_by(|a, b| (&a.name, &a.monitor_id).cmp(&(&b.name, &b.monitor_id)));
    Ok(Value::Array(
        kept.into_iter()
            .map(|r| json!({"id": r.monitor_id, "name": r.name, "status": r.status}))
            .collect(),
    ))
}

/// Folds the held alerts of `root`'s dependents under it (see the module doc); returns how
/// many. Runs in a transaction of its own after the root's page went out, so it begins as
/// every decision does ([`enter`]) and folds only under a root that is still one.
pub async fn fold_held(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    root_id: &str,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let Some((root, graph)) = locked(&mut *conn, ws, root_id).await? else {
        return Ok(0);
    };
    // Resolved meanwhile: what it would have folded pages (held) or was released with it.
    // Under another outage meanwhile: its held dependents fold under that one when due.
    if !graph.down || root.status == store::RESOLVED || root.root_cause_alert_id.is_some() {
        return Ok(0);
    }
    fold_below(conn, &root, now).await
}

/// [`fold_held`] in the root's own transaction, which has begun its decision ([`enter`])
/// and holds the root as it opened: a few listed dependents fold there (`FOLD_IN_PLACE`).
pub async fn fold_below(
    conn: &mut sqlx::AnyConnection,
    root: &AlertRow,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let since = window_start(&mut *conn, root).await?;
    let held = deps::held_below(&mut *conn, &root.monitor_id, since).await?;
    deps::fold_all_under(&mut *conn, &held, &root.id, now).await?;
    if !held.is_empty() {
        tracing::info!(alert = %root.id, folded = held.len(), "held dependent alerts folded under their root");
    }
    Ok(held.len())
}

/// Judges a held alert again when its page falls due (or its incident would open): when an
/// outage upstream of it is open now, it opened within the hold, so the alert folds under
/// that outage's root and its held page is dropped unsent. Returns whether it folded. This is
/// what keeps one page per outage when the fold that follows a root's page never ran (the
/// process died between the two).
pub async fn settle_held(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    alert_id: &str,
    now: i64,
) -> Result<bool, sqlx::Error> {
    let Some((alert, graph)) = locked(&mut *conn, ws, alert_id).await? else {
        return Ok(false);
    };
    if alert.status == store::RESOLVED {
        return Ok(false);
    }
    let root = match alert.root_cause_alert_id {
        Some(root) => Some(root),
        None if graph.up => deps::upstream_root(&mut *conn, &alert.monitor_id).await?,
        None => None,
    };
    match root {
        Some(root) if root != alert.id => {
            deps::fold_under(&mut *conn, &alert.id, &root, now).await?;
            tracing::info!(alert = %alert.id, root = %root, "held alert folded under its root when its page fell due");
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Holds a freshly opened root alert's `alert.opened` deliveries for `hold` ms
/// ([`upstream`]).
pub async fn hold_new(
    conn: &mut sqlx::AnyConnection,
    alert: &AlertRow,
    hold: i64,
) -> Result<(), sqlx::Error> {
    if hold > 0 {
        deps::hold(&mut *conn, &alert.id, alert.opened_at.saturating_add(hold)).await?;
    }
    Ok(())
}

/// Alert `alert_id` as it is once this transaction has begun its decision ([`enter`]: on
/// PostgreSQL, read again after the workspace's lock, so it is what the last decision left).
async fn locked(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    alert_id: &str,
) -> Result<Option<(AlertRow, Graph)>, sqlx::Error> {
    let Some(first) = store::get(&mut *conn, ws, alert_id).await? else {
        return Ok(None);
    };
    let graph = enter(&mut *conn, ws, &first.monitor_id).await?;
    // Only a lock can have let another decision in between (SQLite's one writer cannot).
    let waited = (graph.up || graph.down) && conn.backend_name().eq_ignore_ascii_case("postgresql");
    if !waited {
        return Ok(Some((first, graph)));
    }
    let now = store::get(&mut *conn, ws, alert_id).await?;
    Ok(now.map(|a| (a, graph)))
}

/// Where the window of held alerts `root` lists and folds begins: its opening less its own
/// detection time.
async fn window_start(conn: &mut sqlx::AnyConnection, root: &AlertRow) -> Result<i64, sqlx::Error> {
    let window = deps::detection_ms(&mut *conn, &root.monitor_id).await?;
    Ok(root.opened_at - window)
}

/// `data.dependents` of a root alert's later notifications (escalated, resolved): the
/// monitors suppressed under it.
pub async fn dependents(
    conn: &mut sqlx::AnyConnection,
    alert: &AlertRow,
) -> Result<Value, sqlx::Error> {
    let rows = deps::suppressed_monitors(&mut *conn, &alert.id).await?;
    Ok(Value::Array(
        rows.into_iter()
            .map(|(id, name, status)| json!({"id": id, "name": name, "status": status}))
            .collect(),
    ))
}

/// What [`release`] decided for one alert that was under a resolved root.
#[derive(Debug)]
pub struct Released {
    /// The alert as it is now: a root of its own, due to notify.
    pub alert: AlertRow,
}

/// Releases the unresolved alerts under `root` (just resolved at `at`): each moves under
/// another outage upstream that is still on, or becomes a root. Returns the new roots (open
/// ones notify; the caller sends their `alert.opened`). `timers` gives a new root's
/// escalation step and next timer, counted from `at`.
pub async fn release<F>(
    conn: &mut sqlx::AnyConnection,
    root: &str,
    at: i64,
    mut timers: F,
) -> Result<Vec<Released>, sqlx::Error>
where
    F: FnMut(&AlertRow) -> (Option<i64>, Option<i64>),
{
    let under = deps::unresolved_under(&mut *conn, root).await?;
    if under.is_empty() {
        return Ok(Vec::new());
    }
    // First all of them stand alone, so that one depending on another of them finds it as
    // its root (not the resolved one) ...
    let mut standing = Vec::new();
    for a in &under {
        if deps::reparent(&mut *conn, &a.id, None, None, None, at).await? == 1 {
            standing.push(a);
        }
    }
    // ... then each that still has an outage upstream goes under it, with what was under it.
    let mut roots = Vec::new();
    for a in standing {
        match deps::upstream_root(&mut *conn, &a.monitor_id).await? {
            Some(r) if r != a.id => {
                deps::fold_under(&mut *conn, &a.id, &r, at).await?;
            }
            _ => roots.push(a),
        }
    }
    let mut out = Vec::new();
    for a in roots {
        let (step, next) = timers(a);
        if deps::reparent(&mut *conn, &a.id, None, step, next, at).await? == 0 {
            continue;
        }
        if let Some(now) = store::get(&mut *conn, &a.workspace_id, &a.id).await? {
            if now.root_cause_alert_id.is_none() && now.status != store::RESOLVED {
                out.push(Released { alert: now });
            }
        }
    }
    Ok(out)
}
