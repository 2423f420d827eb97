//! The plan-limits seam. Each workspace has a plan; its quotas come from configuration (the
//! default plan is unlimited, for self-hosting). Creating past a quota answers 402
//! `PLAN_LIMIT_EXCEEDED`; what already exists keeps working.

use crate::config::PlanQuota;
use crate::cx::Cx;
use crate::domain::error::DomainError;

/// What a quota counts.
#[derive(Debug, Clone, Copy)]
pub enum Quota {
    Monitors,
    StatusPages,
    Members,
    ApiKeys,
    NotificationChannels,
}

impl Quota {
    fn limit(self, q: &PlanQuota) -> Option<u64> {
        match self {
            Quota::Monitors => q.monitors,
            Quota::StatusPages => q.status_pages,
            Quota::Members => q.members,
            Quota::ApiKeys => q.api_keys,
            Quota::NotificationChannels => q.notification_channels,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Quota::Monitors => "monitors",
            Quota::StatusPages => "status pages",
            Quota::Members => "members",
            Quota::ApiKeys => "active API keys",
            Quota::NotificationChannels => "notification channels",
        }
    }
}

/// The quotas of a workspace's plan.
pub async fn quotas_of(cx: &Cx, workspace_id: &str) -> Result<(String, PlanQuota), DomainError> {
    let ws = crate::store::workspaces::get(cx.db().reader(), workspace_id)
        .await?
        .ok_or(DomainError::NotFound(crate::domain::Resource::Workspace))?;
    let quota = cx.config().plans.quota(&ws.plan);
    Ok((ws.plan, quota))
}

/// Fails with 402 when one more of `what` would exceed the plan; `current` is how many exist.
pub async fn ensure_room(
    cx: &Cx,
    workspace_id: &str,
    what: Quota,
    current: i64,
) -> Result<(), DomainError> {
    let (_, quota) = quotas_of(cx, workspace_id).await?;
    match what.limit(&quota) {
        Some(limit) if current.max(0) as u64 >= limit => Err(DomainError::PlanLimit {
            what: what.label(),
            limit,
        }),
        _ => Ok(()),
    }
}

/// Fails with 402 when the workspace's plan does not allow checks as often as every
/// `interval_secs` seconds (the plan's `min_interval_seconds`).
pub async fn ensure_interval(
    cx: &Cx,
    workspace_id: &str,
    interval_secs: i64,
) -> Result<(), DomainError> {
    let (plan, quota) = quotas_of(cx, workspace_id).await?;
    match quota.min_interval_seconds {
        Some(min) if (interval_secs.max(0) as u64) < min => Err(DomainError::PlanRule(format!(
            "The {plan} plan allows check intervals of at least {min} seconds: set a longer interval or move to a larger plan."
        ))),
        _ => Ok(()),
    }
}
