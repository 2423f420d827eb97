//! The monitor operations: create, read, list (all, or in cursor pages with filters), count by
//! status, update (version-locked), delete, pause, resume, regenerate a push token, and accept
//! a DNS_DIFF monitor's new answers. Reads need `monitors:read`; deleting needs
//! `monitors:delete`; every other write needs `monitors:write`.
//!
//! Decisions the interface leaves open, kept here and in the OpenAPI descriptions:
//! - Units: `interval` and `timeout` are seconds; `minFailureDurationMs` milliseconds;
//!   `gracePeriod` seconds.
//! - Defaults on create: `interval` 60, `timeout` min(30, interval - 1), `retries` 0,
//!   `confirmationsRequired` 1, `recoveryConfirmationsRequired` 1, `minFailureDurationMs` 0,
//!   `regions` `["local"]`, `regionStrategy` `all`, `tags` `[]`, `config` `{}`, `active` true,
//!   PUSH `gracePeriod` 60.
//! - Limits: `interval` from the server minimum (`min_interval_seconds`, default 10) to 86,400
//!   (PUSH: to 31,622,400); `timeout` 1..=120 and below `interval` (except PUSH); `retries`
//!   0..=10; confirmations 1..=20; `minFailureDurationMs` 0..=86,400,000; at most 20 `tags` of
//!   1..=50 characters; `name` 1..=200; `description` at most 2,000 characters. A plan's
//!   `min_interval_seconds` stricter than the server's answers 402 `PLAN_LIMIT_EXCEEDED`.
//! - `url` is used by HTTP and WEBSOCKET, `host` by TCP, PING, DNS and DNS_DIFF, `port` by
//!   TCP; sending one a type does not use is a validation error.
//! - Quorum: `config.quorum` (an integer, only with `regionStrategy: all`, 1..=number of
//!   regions) is how many regions must fail for a cycle to fail; absent means a majority of
//!   the regions that reported.
//! - PUSH: the top-level `gracePeriod` is the one grace setting. Pushes are expected every
//!   `interval` seconds unless `config.schedule` (5-field cron, read in `config.timezone`,
//!   default UTC) is set. No other `config` keys.
//! - Push token: generated on create and by regenerate, shown in that one response; every read
//!   has `pushToken: null`; only the SHA-256 is stored.
//! - Regenerating a token of a non-PUSH monitor, or accepting the baseline of a non-DNS_DIFF
//!   monitor, answers 409 `WRONG_MONITOR_TYPE`.
//! - Alerting: `notificationChannelIds` (at most 20 channels of the workspace, in order) and
//!   `escalationPolicyId` (a policy of the workspace, or null); an unknown one is a validation
//!   error on `notificationChannelIds.N` / `escalationPolicyId`.
//! - Dependencies: `dependsOn` (at most 50 other monitors of the workspace, no cycle; the error
//!   on `dependsOn` names the cycle); deleting a monitor removes the edges to it
//!   ([`dependencies`]).
//! - `PATCH` replaces the fields it names (`config` as a whole object), re-validates the
//!   merged monitor, and cannot change `type`. Changing a DNS_DIFF monitor's query forgets its
//!   baseline.
//! - Pause keeps the status as it was (`active: false` marks it paused); resume restarts
//!   monitoring from `PENDING` with counters reset. Pausing a paused or resuming an active
//!   monitor changes nothing.
//! - The `ETag` is the settings version: check results do not change it.
//! - On-demand checks (`POST /monitors/{id}/check`, 202 with a `correlationId`) run at once in
//!   the background in every region the monitor uses that has a live probe (regions without
//!   one, or whose probe does not answer in time, are skipped). Their results are stored as
//!   heartbeats carrying the `correlationId` (`GET /monitors/{id}/heartbeats?correlationId=`)
//!   but never step the state machine, so a manual check cannot page anyone or move the
//!   status. A stopping server waits for accepted checks up to its shutdown grace and stores
//!   those still running as PENDING heartbeats saying so ([`crate::monitoring::on_demand`]).
//!   Paused monitors may be checked this way (checking a target by hand is useful
//!   exactly while monitoring is off); PUSH monitors cannot (409 `WRONG_MONITOR_TYPE`).
//!
//! Every committed write is audited in its transaction and announced on the monitor change
//! feed ([`crate::cluster::feed`]) so the scheduler applies it at once.
//!
//! Layout: [`input`] (what callers send), [`config`] (the documented shape of `config`),
//! [`validate`] (the rules), [`view`] (what callers get back), [`reads`], [`status`] (pause, resume, accept a baseline: the writes that move
//! a monitor's state) and, here, the settings writes and the on-demand check.

pub mod config;
pub mod dependencies;
pub mod input;
pub mod reads;
pub mod status;
pub mod validate;
pub mod view;

use serde_json::{json, Value};
use tocsin_core::Status;

use crate::audit::{self, Entry};
use crate::auth::{caps, needs, secrets, Caller};
use crate::cluster::feed::{ChangeKind, Notice};
use crate::cx::Cx;
use crate::domain::plans::{ensure_interval, ensure_room, Quota};
use crate::domain::{check_write, DomainError, Resource};
use crate::ids::new_id;
use crate::monitoring::on_demand::OnDemandChecks;
use crate::monitoring::runner::Runner;
use crate::monitoring::{self, MonitorType};
use crate::store;
use crate::store::monitors::MonitorRow;

pub use input::{CreateMonitor, MonitorListQuery, MonitorPageQuery, UpdateMonitor};
pub use reads::{get, list, list_filter, page, stats};
pub use status::{accept_baseline, pause, resume};
pub use view::{view, CheckResult, Monitor, MonitorPage, MonitorStats, PushTokenIssued};

use reads::{current, load};
use validate::{apply, check, check_alerting, check_projects, draft_of, merged, Limits};
use view::{config_view, view_one};

/// A resource as it is now with its version: the REST surface sends the version as the
/// `ETag`, and every version-locked write takes it back as the expected version.
#[derive(Debug)]
pub struct Versioned<T> {
    pub value: T,
    pub version: i64,
}

/// What the audit log keeps of a monitor: its identity and schedule, never secrets (config
/// may hold credentials, so it is left out).
fn audit_meta(m: &MonitorRow) -> Value {
    json!({"name": m.name, "type": m.kind_text, "interval": m.interval_s, "active": m.is_active()})
}

fn wrong_type(what: &str) -> DomainError {
    DomainError::Conflict("WRONG_MONITOR_TYPE", what.to_string())
}

/// Creates a monitor. A PUSH monitor's token is in the answer, and only there.
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    body: &CreateMonitor,
) -> Result<Monitor, DomainError> {
    caller.require::<needs::CreateMonitor>()?;
    let draft = draft_of(body);
    let mut errors = Vec::new();
    let checked = match check(&draft, &Limits::of(cx).await?) {
        Ok(c) => Some(c),
        Err(e) => {
            errors = e;
            None
        }
    };
    let project_ids = body.project_ids.clone().unwrap_or_default();
    check_projects(cx, &caller.workspace_id, &project_ids, &mut errors).await?;
    let channel_ids = body.notification_channel_ids.clone().unwrap_or_default();
    let policy_id = body.escalation_policy_id.as_deref();
    check_alerting(
        cx,
        &caller.workspace_id,
        Some(&channel_ids),
        policy_id,
        &mut errors,
    )
    .await?;
    let depends_on = body.depends_on.clone().unwrap_or_default();
    dependencies::check(cx, &caller.workspace_id, None, &depends_on, &mut errors).await?;
    let Some(checked) = checked.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    if draft.kind != MonitorType::Push {
        ensure_interval(cx, &caller.workspace_id, draft.interval).await?;
    }
    let current = store::monitors::count(cx.db().reader(), &caller.workspace_id).await?;
    ensure_room(cx, &caller.workspace_id, Quota::Monitors, current).await?;

    let now = cx.clock().now_ms();
    let token = (draft.kind == MonitorType::Push).then(|| secrets::generate(""));
    let mut row = MonitorRow {
        id: new_id(),
        seq: 0,
        workspace_id: caller.workspace_id.clone(),
        name: String::new(),
        kind_text: draft.kind.as_str().to_string(),
        status_text: store::status::text(Status::Pending).to_string(),
        url: None,
        host: None,
        port: None,
        interval_s: 0,
        retries: 0,
        timeout_s: 0,
        tags: String::new(),
        description: None,
        config: String::new(),
        regions: String::new(),
        region_strategy: String::new(),
        quorum: None,
        confirmations_required: 1,
        recovery_confirmations_required: 1,
        min_failure_duration_ms: 0,
        consecutive_failures: 0,
        consecutive_successes: 0,
        pending_failure_since: None,
        active: i64::from(body.active.unwrap_or(true)),
        grace_s: None,
        last_push_at: None,
        dns_baseline: None,
        status_changed_at: now,
        last_check_at: None,
        started_at: now,
        stale_since: None,
        maintenance_until: None,
        maintenance_excluded: 0,
        flap_transitions: Some(5),
        flap_window_minutes: Some(30),
        flapping_since: None,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    apply(&mut row, &draft, checked);
    let mut tx = cx.db().begin().await?;
    row.seq = store::monitors::next_seq(&mut *tx).await?;
    store::monitors::insert(
        &mut *tx,
        &row,
        token.as_deref().map(secrets::hash).as_deref(),
    )
    .await?;
    let changed = store::projects::set_monitor_projects(&mut tx, &row.id, &project_ids).await?;
    store::projects::touch(&mut *tx, &caller.workspace_id, &changed, now).await?;
    store::monitor_channels::set(&mut tx, &row.id, &channel_ids).await?;
    store::monitor_channels::set_policy(&mut *tx, &caller.workspace_id, &row.id, policy_id).await?;
    store::dependencies::set(&mut tx, &row.id, &depends_on).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "monitor.create",
            resource_type: "monitor",
            resource_id: &row.id,
            metadata: audit_meta(&row),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce_monitor(&row.id, ChangeKind::Created);
    let mut out = view_one(cx, &row).await?;
    out.push_token = token;
    Ok(out)
}

/// Changes a monitor's settings: the fields `body` names replace the current ones and the
/// merged monitor is validated whole. `expected` is the version the caller read, if it sent
/// one; a different current version is `VERSION_CONFLICT`.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
    body: &UpdateMonitor,
) -> Result<Versioned<Monitor>, DomainError> {
    caller.require::<needs::UpdateMonitor>()?;
    let mut m = load(cx, caller, monitor_id).await?;
    let kind = m.monitor_type()?;
    let mut errors = Vec::new();
    if body.kind.is_some_and(|k| k != kind) {
        errors.push(crate::domain::FieldError::new(
            "type",
            "cannot be changed; create a new monitor",
        ));
    }
    let draft = merged(&m, kind, body)?;
    let checked = match check(&draft, &Limits::of(cx).await?) {
        Ok(c) => Some(c),
        Err(e) => {
            errors.extend(e);
            None
        }
    };
    if let Some(ids) = &body.project_ids {
        check_projects(cx, &caller.workspace_id, ids, &mut errors).await?;
    }
    check_alerting(
        cx,
        &caller.workspace_id,
        body.notification_channel_ids.as_deref(),
        body.escalation_policy_id
            .as_ref()
            .and_then(Option::as_deref),
        &mut errors,
    )
    .await?;
    if let Some(ids) = &body.depends_on {
        let own = Some((m.id.as_str(), m.name.as_str()));
        dependencies::check(cx, &caller.workspace_id, own, ids, &mut errors).await?;
    }
    let Some(checked) = checked.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    // Only a newly requested interval is held to the plan: a plan that became stricter
    // must not block unrelated edits of an existing monitor.
    if kind != MonitorType::Push && body.interval.is_some_and(|i| i != m.interval_s) {
        ensure_interval(cx, &caller.workspace_id, draft.interval).await?;
    }
    let before = (m.url.clone(), m.host.clone(), m.port, config_view(&m));
    let now = cx.clock().now_ms();
    apply(&mut m, &draft, checked);
    m.updated_at = now;
    let query_changed = before != (m.url.clone(), m.host.clone(), m.port, config_view(&m));
    let clear_baseline = kind == MonitorType::DnsDiff && query_changed;

    let mut tx = cx.db().begin().await?;
    let rows = store::monitors::update_settings(&mut *tx, &m, clear_baseline, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    if let Some(ids) = &body.project_ids {
        let changed = store::projects::set_monitor_projects(&mut tx, &m.id, ids).await?;
        store::projects::touch(&mut *tx, &caller.workspace_id, &changed, now).await?;
    }
    if let Some(ids) = &body.notification_channel_ids {
        store::monitor_channels::set(&mut tx, &m.id, ids).await?;
    }
    if let Some(ids) = &body.depends_on {
        store::dependencies::set(&mut tx, &m.id, ids).await?;
    }
    if let Some(policy) = &body.escalation_policy_id {
        store::monitor_channels::set_policy(
            &mut *tx,
            &caller.workspace_id,
            &m.id,
            policy.as_deref(),
        )
        .await?;
    }
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "monitor.update",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: audit_meta(&m),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce_monitor(&m.id, ChangeKind::Updated);
    current(cx, caller, monitor_id).await
}

/// Deletes a monitor and its history; its push token stops at once.
pub async fn delete(
    cx: &Cx,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
) -> Result<(), DomainError> {
    caller.require::<needs::DeleteMonitor>()?;
    let m = load(cx, caller, monitor_id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let projects = store::projects::projects_of_monitors(&mut *tx, std::slice::from_ref(&m.id))
        .await?
        .remove(&m.id)
        .unwrap_or_default();
    let rows = store::monitors::delete(&mut *tx, &caller.workspace_id, &m.id, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    store::projects::touch(&mut *tx, &caller.workspace_id, &projects, now).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "monitor.delete",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name, "type": m.kind_text}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce_monitor(&m.id, ChangeKind::Deleted);
    Ok(())
}

/// Issues a PUSH monitor a new token, answered once; the old one stops at once (`push_tokens`
/// is this node's token map, which forgets the old token before the caller is answered).
pub async fn regenerate_push_token(
    cx: &Cx,
    push_tokens: &crate::push::tokens::PushTokens,
    caller: &Caller,
    monitor_id: &str,
    expected: Option<i64>,
) -> Result<PushTokenIssued, DomainError> {
    caller.require::<caps::MonitorsWrite>()?;
    let m = load(cx, caller, monitor_id).await?;
    if m.kind() != Some(MonitorType::Push) {
        return Err(wrong_type(
            "Only PUSH monitors have a push token: create a PUSH monitor to receive heartbeats.",
        ));
    }
    let token = secrets::generate("");
    let now = cx.clock().now_ms();
    // Forgotten before and after the write: see `push::tokens` for why both.
    push_tokens.forget(&m.id);
    let mut tx = cx.db().begin().await?;
    let rows = store::monitors::set_push_token_hash(
        &mut *tx,
        &caller.workspace_id,
        &m.id,
        &secrets::hash(&token),
        now,
        expected,
    )
    .await?;
    check_write(rows, expected, DomainError::NotFound(Resource::Monitor))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "monitor.regenerate_push_token",
            resource_type: "monitor",
            resource_id: &m.id,
            metadata: json!({"name": m.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    // This node forgets the old token at once; other nodes when the notice reaches them.
    cx.announce(Notice::PushTokenRegenerated {
        monitor_id: m.id.clone(),
    });
    Ok(PushTokenIssued { push_token: token })
}

/// Starts a check of the monitor now, in the background, in every region it uses; answers
/// the correlation id its heartbeats will carry. The results never step the state machine.
pub async fn check_now(
    runner: &Runner,
    on_demand: &OnDemandChecks,
    caller: &Caller,
    monitor_id: &str,
) -> Result<CheckResult, DomainError> {
    caller.require::<needs::CheckMonitor>()?;
    let row = load(runner.cx(), caller, monitor_id).await?;
    if row.kind() == Some(MonitorType::Push) {
        return Err(wrong_type(
            "PUSH monitors are not checked by the service: send a heartbeat to its push URL instead.",
        ));
    }
    // Parsed once for every region's run; a row that does not parse is an internal error.
    let m = monitoring::monitor::Monitor::from_row(&row)
        .map_err(|e| DomainError::Internal(anyhow::Error::new(e)))?;
    let correlation_id = new_id();
    let id = correlation_id.clone();
    // Counted until it ends: a shutdown waits for it, or stores it as cancelled.
    let checks = on_demand.clone();
    let cancel = checks.cancellation();
    let core = runner.clone();
    checks.spawn(async move {
        let ran_at = core.cx().clock().now_ms();
        // Regions without a live probe (or without an answer in time) are skipped, not failed.
        let runs = m.regions().iter().map(|region| {
            let (core, m, id, cancel) = (&core, &m, &id, &cancel);
            async move {
                let deadline = monitoring::scheduler::on_demand_deadline(m);
                let hb = tokio::select! {
                    outcome = monitoring::scheduler::check_in(core, m, region, deadline) => {
                        let outcome = outcome?;
                        monitoring::cycle::heartbeat_of(m, region, ran_at, &outcome, Some(id))
                    }
                    () = cancel.cancelled() => {
                        monitoring::on_demand::cancelled_heartbeat(m, region, ran_at, id)
                    }
                };
                if let Err(e) = core.heartbeats().submit(hb).await {
                    tracing::warn!(monitor = %m.id, error = %e, "on-demand result not stored");
                }
                Some(())
            }
        });
        futures::future::join_all(runs).await;
    });
    Ok(CheckResult { correlation_id })
}
