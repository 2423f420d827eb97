//! Monitor dependencies (`monitor_dependencies`: a monitor's `dependsOn`, in the order given)
//! and the graph walks root-cause alerting makes over them in the caller's transaction: up
//! from a monitor to the unresolved alert of something it depends on, down from a root to
//! the alerts of what depends on it. The walks are recursive CTEs (`UNION` drops repeats, so
//! even a cycle written behind the API's back ends).

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::alerts::{AlertRow, OPEN, RESOLVED};
use super::{in_list, Exec};

/// Whether `monitor_id` depends on something (`.0`) and whether something depends on it
/// (`.1`): two indexed looks, each stopping at its first edge.
pub async fn edges<'e>(e: impl Exec<'e>, monitor_id: &str) -> Result<(bool, bool), sqlx::Error> {
    let (up, down): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM monitor_dependencies \
                 WHERE monitor_id = $1 LIMIT 1) u), \
                (SELECT COUNT(*) FROM (SELECT 1 FROM monitor_dependencies \
                 WHERE depends_on_id = $1 LIMIT 1) d)",
    )
    .bind(monitor_id)
    .fetch_one(e)
    .await?;
    Ok((up > 0, down > 0))
}

/// Waits (PostgreSQL) until no other transaction is deciding root causes in workspace `ws`,
/// and keeps them waiting until this one ends: a transaction-scoped advisory lock. Every
/// statement after it reads what the other committed (READ COMMITTED takes a new snapshot per
/// statement), so of two outages opening at the same instant the second sees the first.
pub async fn lock_workspace(conn: &mut AnyConnection, ws: &str) -> Result<(), sqlx::Error> {
    let _: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT pg_advisory_xact_lock(hashtext('root-cause:' || $1))) l",
    )
    .bind(ws)
    .fetch_one(&mut *conn)
    .await?;
    Ok(())
}

/// Root alerts of monitors with dependencies that are unresolved, shown on a page opening
/// incidents by itself, and have no automatic incident since they opened: those whose page
/// was held may owe their incident (`alerting::auto_incidents::open_after_holds`). Oldest
/// first, at most `limit`.
///
/// Runs every second on the scheduling node, so it starts from the components of pages that
/// open incidents and reaches each one's unresolved alert through `open_key` (unique): its
/// cost follows the components shown, not the alerts kept (starting from `alerts`, it read
/// every alert ever opened, resolved ones included, every second, and ten thousand held
/// alerts of a storm on top).
pub async fn owing_incidents<'e>(
    e: impl Exec<'e>,
    limit: i64,
) -> Result<Vec<AlertRow>, sqlx::Error> {
    let sql = format!(
        "SELECT DISTINCT {} FROM status_pages p \
         JOIN status_page_components c ON c.status_page_id = p.id \
         JOIN alerts a ON a.open_key = c.monitor_id AND a.workspace_id = p.workspace_id \
         WHERE p.auto_incidents <> 'OFF' AND a.root_cause_alert_id IS NULL AND a.status <> $1 \
         AND EXISTS (SELECT 1 FROM monitor_dependencies d WHERE d.monitor_id = a.monitor_id) \
         AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.workspace_id = a.workspace_id \
             AND i.source_monitor_id = a.monitor_id AND i.auto_generated = 1 \
             AND i.created_at >= a.opened_at) \
         ORDER BY a.opened_at, a.id LIMIT $2",
        prefixed("a.")
    );
    sqlx::query_as(&sql)
        .bind(RESOLVED)
        .bind(limit)
        .fetch_all(e)
        .await
}

/// [`super::alerts::COLUMNS`] with each column prefixed by `p` (a table alias).
fn prefixed(p: &str) -> String {
    super::alerts::COLUMNS
        .split(',')
        .map(|c| format!("{p}{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replaces a monitor's dependencies with `ids`, in that order.
pub async fn set(
    conn: &mut AnyConnection,
    monitor_id: &str,
    ids: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM monitor_dependencies WHERE monitor_id = $1")
        .bind(monitor_id)
        .execute(&mut *conn)
        .await?;
    for (i, id) in ids.iter().enumerate() {
        sqlx::query(
            "INSERT INTO monitor_dependencies (monitor_id, depends_on_id, position) \
             VALUES ($1, $2, $3)",
        )
        .bind(monitor_id)
        .bind(id)
        .bind(i64::try_from(i).unwrap_or(i64::MAX))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Every edge of a workspace, `monitor -> [what it depends on, in order]` (the monitor list
/// and the cycle check read the whole graph at once).
pub async fn of_workspace<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<HashMap<String, Vec<String>>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT d.monitor_id, d.depends_on_id FROM monitor_dependencies d \
         JOIN monitors m ON m.id = d.monitor_id WHERE m.workspace_id = $1 \
         ORDER BY d.monitor_id, d.position",
    )
    .bind(ws)
    .fetch_all(e)
    .await?;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for (m, d) in rows {
        out.entry(m).or_default().push(d);
    }
    Ok(out)
}

/// Which of `ids` are monitors of this workspace, with their names.
pub async fn names<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<HashMap<String, String>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "SELECT id, name FROM monitors WHERE workspace_id = $1 AND id IN ({})",
        in_list(2, ids.len())
    );
    let mut q = sqlx::query_as::<_, (String, String)>(&sql).bind(ws);
    for id in ids {
        q = q.bind(id.clone());
    }
    Ok(q.fetch_all(e).await?.into_iter().collect())
}

/// The set of monitors `monitor_id` depends on, directly or through others.
///
/// The walks' sets are joined to `alerts` and `monitors` as `FROM up CROSS JOIN t WHERE ...`:
/// SQLite keeps the left side of a `CROSS JOIN` as the outer loop, so it looks each member up
/// by key. With a plain `JOIN` SQLite 3.46 scanned the whole table against an automatic
/// index on the walk (1.2 ms at 10,000 monitors against 13 µs), once in every status change
/// of a dependent, while that change held the one writer. PostgreSQL plans either the same.
const UPSTREAM: &str = "WITH RECURSIVE up(id) AS ( \
       SELECT depends_on_id FROM monitor_dependencies WHERE monitor_id = $1 \
       UNION SELECT d.depends_on_id FROM monitor_dependencies d JOIN up ON d.monitor_id = up.id)";

/// The set of monitors that depend on `monitor_id` (`$1`), directly or through others.
pub const DOWNSTREAM: &str = "WITH RECURSIVE down(id) AS ( \
       SELECT monitor_id FROM monitor_dependencies WHERE depends_on_id = $1 \
       UNION SELECT d.monitor_id FROM monitor_dependencies d JOIN down ON d.depends_on_id = down.id)";

/// The root alert a monitor going DOWN now falls under: among the unresolved alerts of what
/// it depends on (directly or not), the earliest opened; a suppressed one stands for its
/// root. `None` when every dependency is fine.
pub async fn upstream_root<'e>(
    e: impl Exec<'e>,
    monitor_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    let sql = format!(
        "{UPSTREAM} SELECT COALESCE(a.root_cause_alert_id, a.id) \
         FROM up CROSS JOIN alerts a WHERE a.open_key = up.id \
         ORDER BY a.opened_at, a.id LIMIT 1"
    );
    sqlx::query_scalar(&sql)
        .bind(monitor_id)
        .fetch_optional(e)
        .await
}

/// What a monitor going DOWN now finds upstream (what it depends on, directly or not), in
/// one statement: one walk, three answers, because each status change of a dependent asks
/// all three in the transaction that holds the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamView {
    /// The root alert it falls under ([`upstream_root`]).
    pub root: Option<String>,
    /// Whether something upstream is in maintenance now.
    pub maintenance: bool,
    /// How long its own page would be held ([`hold_ms`]).
    pub hold_ms: i64,
}

/// See [`UpstreamView`].
pub async fn upstream_view<'e>(
    e: impl Exec<'e>,
    monitor_id: &str,
) -> Result<UpstreamView, sqlx::Error> {
    let sql = format!(
        "{UPSTREAM} SELECT \
         (SELECT COALESCE(a.root_cause_alert_id, a.id) FROM up CROSS JOIN alerts a \
             WHERE a.open_key = up.id ORDER BY a.opened_at, a.id LIMIT 1), \
         (SELECT COUNT(*) FROM up CROSS JOIN monitors m WHERE m.id = up.id \
             AND m.status = 'MAINTENANCE'), \
         (SELECT MAX({DETECTION}) FROM up CROSS JOIN monitors m WHERE m.id = up.id)"
    );
    let (root, maintenance, hold): (Option<String>, i64, Option<i64>) =
        sqlx::query_as(&sql).bind(monitor_id).fetch_one(e).await?;
    Ok(UpstreamView {
        root,
        maintenance: maintenance > 0,
        hold_ms: hold.unwrap_or(0).max(0),
    })
}

/// How long (ms) `monitor_id`'s page waits for its dependencies to notice the same outage:
/// the longest detection time among them (interval x confirmations + timeout + the minimum
/// failure duration; a PUSH monitor's interval plus its grace). 0 without dependencies.
pub async fn hold_ms<'e>(e: impl Exec<'e>, monitor_id: &str) -> Result<i64, sqlx::Error> {
    let sql = format!(
        "{UPSTREAM} SELECT MAX({DETECTION}) FROM up CROSS JOIN monitors m WHERE m.id = up.id"
    );
    let max: Option<i64> = sqlx::query_scalar(&sql)
        .bind(monitor_id)
        .fetch_one(e)
        .await?;
    Ok(max.unwrap_or(0).max(0))
}

/// One monitor's detection time in ms, as SQL over `monitors m`.
const DETECTION: &str = "CAST(CASE WHEN m.type = 'PUSH' \
       THEN (m.interval_s + COALESCE(m.grace_s, 0)) * 1000 \
       ELSE m.interval_s * 1000 * m.confirmations_required + m.timeout_s * 1000 \
            + m.min_failure_duration_ms END AS BIGINT)";

/// `monitor_id`'s own detection time in ms (see [`hold_ms`]).
pub async fn detection_ms<'e>(e: impl Exec<'e>, monitor_id: &str) -> Result<i64, sqlx::Error> {
    let sql = format!("SELECT {DETECTION} FROM monitors m WHERE m.id = $1");
    let v: Option<i64> = sqlx::query_scalar(&sql)
        .bind(monitor_id)
        .fetch_optional(e)
        .await?;
    Ok(v.unwrap_or(0))
}

/// `status = 'PENDING'` written so that no index can serve it. Every statement below that
/// uses it finds its rows by `alert_id` (`deliveries_alert`); given a plain equality on
/// `status`, SQLite (which keeps no statistics here) chose `deliveries_due (status, ...)`
/// instead and read every pending delivery for each alert: in a storm of held pages, ten
/// thousand rows of about 1.5 kB for each of ten thousand transitions (9 ms each, against
/// 8 µs by `alert_id`), which held the one writer for most of a minute.
const PENDING_BY_ALERT: &str = "status || '' = 'PENDING'";

/// Postpones the first attempt of an alert's still-unsent `alert.opened` deliveries to
/// `until`: the hold, kept in the outbox itself so it survives restarts and any node sends
/// it when it falls due.
pub async fn hold<'e>(e: impl Exec<'e>, alert_id: &str, until: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(&format!(
        "UPDATE deliveries SET due_at = $1 WHERE alert_id = $2 AND event = 'alert.opened' \
         AND {PENDING_BY_ALERT} AND attempt = 1 AND claimed_until IS NULL"
    ))
    .bind(until)
    .bind(alert_id)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// Drops an alert's `alert.opened` deliveries still held at `at` (its outage ended within the
/// hold): how many. A page that was never sent needs no resolution either.
pub async fn drop_held<'e>(e: impl Exec<'e>, alert_id: &str, at: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(&format!(
        "DELETE FROM deliveries WHERE alert_id = $1 AND event = 'alert.opened' \
         AND {PENDING_BY_ALERT} AND attempt = 1 AND claimed_until IS NULL AND due_at > $2"
    ))
    .bind(alert_id)
    .bind(at)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// Whether an alert's `alert.opened` is still held at `at` (due later, unsent): a released
/// dependent waits for its own recovery time that way.
pub async fn holding<'e>(e: impl Exec<'e>, alert_id: &str, at: i64) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM deliveries WHERE alert_id = $1 AND event = 'alert.opened' \
         AND {PENDING_BY_ALERT} AND attempt = 1 AND due_at > $2"
    ))
    .bind(alert_id)
    .bind(at)
    .fetch_one(e)
    .await?;
    Ok(n > 0)
}

/// How long (ms) `monitor_id` takes to confirm a recovery: interval x recovery confirmations
/// + timeout (0 for PUSH, which recovers with the push itself).
pub async fn recovery_ms<'e>(e: impl Exec<'e>, monitor_id: &str) -> Result<i64, sqlx::Error> {
    let v: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(CASE WHEN m.type = 'PUSH' THEN 0 \
           ELSE m.interval_s * 1000 * m.recovery_confirmations_required + m.timeout_s * 1000 \
           END AS BIGINT) FROM monitors m WHERE m.id = $1",
    )
    .bind(monitor_id)
    .fetch_optional(e)
    .await?;
    Ok(v.unwrap_or(0))
}

/// The unresolved root alerts of monitors depending on `monitor_id` (directly or not) that
/// opened at or after `since` and have not sent anything yet: the held pages a root opening
/// now folds under itself.
pub async fn held_below(
    conn: &mut AnyConnection,
    monitor_id: &str,
    since: i64,
) -> Result<Vec<String>, sqlx::Error> {
    let sql = format!(
        "{DOWNSTREAM} SELECT a.id FROM down CROSS JOIN alerts a WHERE a.open_key = down.id \
         AND a.root_cause_alert_id IS NULL AND a.opened_at >= $2 \
         AND NOT EXISTS (SELECT 1 FROM deliveries dl WHERE dl.alert_id = a.id \
             AND (dl.status <> 'PENDING' OR dl.claimed_until IS NOT NULL \
                  OR dl.event <> 'alert.opened')) \
         ORDER BY a.id"
    );
    sqlx::query_scalar(&sql)
        .bind(monitor_id)
        .bind(since)
        .fetch_all(&mut *conn)
        .await
}

/// One alert a root opening now lists in its page: a held alert of a monitor below it, or an
/// alert already under such a held alert (`under` names it).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Below {
    pub alert_id: String,
    pub under: Option<String>,
    pub monitor_id: String,
    pub name: String,
    pub status: String,
}

/// The alerts a root opening now lists in its page, with what the page says of each (the
/// monitor's name and status): the unresolved root alerts of monitors below it opened at or
/// after `since`, and the alerts already under those (the caller keeps an `under` row only
/// when its root is one of the others). One walk, because in a storm of ten thousand
/// dependents the root's page waits for it.
///
/// Unlike [`held_below`] it does not look for what those alerts already sent: with `since` the
/// root's opening less its detection time, none has. A dependent's page is held for the
/// longest detection time of what it depends on, the root's included, so an alert opened
/// since then is due at the root's opening at the earliest. Looking cost a delivery read per
/// dependent, a third of the walk; the fold that follows the page ([`held_below`]) still
/// looks, so a page that went out in the same instant is not folded.
pub async fn held_below_listed(
    conn: &mut AnyConnection,
    monitor_id: &str,
    since: i64,
) -> Result<Vec<Below>, sqlx::Error> {
    let sql = format!(
        "{DOWNSTREAM} SELECT a.id AS alert_id, a.root_cause_alert_id AS under, \
         m.id AS monitor_id, m.name AS name, m.status AS status \
         FROM down CROSS JOIN alerts a CROSS JOIN monitors m \
         WHERE a.open_key = down.id AND m.id = a.monitor_id \
         AND (a.root_cause_alert_id IS NOT NULL OR a.opened_at >= $2)"
    );
    sqlx::query_as(&sql)
        .bind(monitor_id)
        .bind(since)
        .fetch_all(&mut *conn)
        .await
}

/// How many alerts one statement of [`fold_all_under`] names: well under SQLite's bound on
/// bound parameters, and few enough statements that a root folding ten thousand held pages
/// spends milliseconds, not one round of statements per page, in its transaction.
const FOLD_CHUNK: usize = 500;

/// [`fold_under`] for many alerts at once: a root that opens in a storm finds thousands of
/// held pages, and folding them one by one (two statements each) held the writer for seconds
/// while the other transitions of the storm queued behind it.
pub async fn fold_all_under(
    conn: &mut AnyConnection,
    alert_ids: &[String],
    root: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    for chunk in alert_ids.chunks(FOLD_CHUNK) {
        let sql = format!(
            "DELETE FROM deliveries WHERE {PENDING_BY_ALERT} AND alert_id IN ({})",
            in_list(1, chunk.len())
        );
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind(id);
        }
        q.execute(&mut *conn).await?;
        // The alerts themselves, and what was already folded under them, in two indexed
        // statements (an `OR` of the two columns would scan).
        for column in ["id", "root_cause_alert_id"] {
            let sql = format!(
                "UPDATE alerts SET root_cause_alert_id = $1, next_escalation_at = NULL, \
                 updated_at = $2, version = version + 1 WHERE {column} IN ({})",
                in_list(3, chunk.len())
            );
            let mut q = sqlx::query(&sql).bind(root).bind(now);
            for id in chunk {
                q = q.bind(id);
            }
            q.execute(&mut *conn).await?;
        }
    }
    Ok(())
}

/// Puts `alert_id` (and whatever was already folded under it) under `root`: it stops
/// escalating and its held deliveries are dropped unsent.
pub async fn fold_under(
    conn: &mut AnyConnection,
    alert_id: &str,
    root: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "DELETE FROM deliveries WHERE alert_id = $1 AND {PENDING_BY_ALERT}"
    ))
    .bind(alert_id)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE alerts SET root_cause_alert_id = $1, next_escalation_at = NULL, \
         updated_at = $2, version = version + 1 WHERE id = $3 OR root_cause_alert_id = $3",
    )
    .bind(root)
    .bind(now)
    .bind(alert_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The monitors suppressed under `root` (id, name, status), by name: a root's
/// `data.dependents`.
pub async fn suppressed_monitors<'e>(
    e: impl Exec<'e>,
    root: &str,
) -> Result<Vec<(String, String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT m.id, m.name, m.status FROM alerts a JOIN monitors m ON m.id = a.monitor_id \
         WHERE a.root_cause_alert_id = $1 ORDER BY m.name, m.id",
    )
    .bind(root)
    .fetch_all(e)
    .await
}

/// The unresolved alerts suppressed under `root` whose monitors are still DOWN (one that
/// recovered in the same batch of changes resolves silently right after).
pub async fn unresolved_under<'e>(
    e: impl Exec<'e>,
    root: &str,
) -> Result<Vec<AlertRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {} FROM alerts WHERE root_cause_alert_id = $1 AND status <> $2 \
         AND EXISTS (SELECT 1 FROM monitors m WHERE m.id = alerts.monitor_id \
                     AND m.status = 'DOWN') ORDER BY id",
        super::alerts::COLUMNS
    );
    sqlx::query_as(&sql)
        .bind(root)
        .bind(RESOLVED)
        .fetch_all(e)
        .await
}

/// Makes a suppressed alert a root of its own (or puts it under `root`, another outage
/// upstream that is still on), with the escalation timer it starts from now; 0 rows when it
/// was resolved meanwhile (by its own recovery, committed concurrently on PostgreSQL).
pub async fn reparent<'e>(
    e: impl Exec<'e>,
    id: &str,
    root: Option<&str>,
    step: Option<i64>,
    next: Option<i64>,
    now: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE alerts SET root_cause_alert_id = $1, escalation_step = $2, \
         next_escalation_at = CASE WHEN status = $3 THEN $4 ELSE NULL END, updated_at = $5, \
         version = version + 1 WHERE id = $6 AND status <> $7",
    )
    .bind(root)
    .bind(step)
    .bind(OPEN)
    .bind(next)
    .bind(now)
    .bind(id)
    .bind(RESOLVED)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}

/// Acknowledges the open alerts suppressed under `root` with it.
pub async fn acknowledge_under<'e>(
    e: impl Exec<'e>,
    root: &str,
    by: &str,
    now: i64,
) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE alerts SET status = $1, acknowledged_at = $2, acknowledged_by = $3, \
         next_escalation_at = NULL, updated_at = $2, version = version + 1 \
         WHERE root_cause_alert_id = $4 AND status = $5",
    )
    .bind(super::alerts::ACKNOWLEDGED)
    .bind(now)
    .bind(by)
    .bind(root)
    .bind(OPEN)
    .execute(e)
    .await?;
    Ok(done.rows_affected())
}
