//! Reading the audit log (session-only: `audit:read`), newest first, filtered and paged.
//! Entries are written by [`crate::audit::record`] inside each write's own transaction.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::input::Validate;
use super::pagination::MAX_LIMIT;
use super::{DomainError, FieldError};
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::store::{self, audit::AuditFilter};

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct AuditLogEntry {
    pub id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub metadata: serde_json::Map<String, serde_json::Value>,
    pub ip_address: Option<String>,
    pub actor_email: Option<String>,
    pub user_agent: Option<String>,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::exact_object)]
pub struct AuditLogPage {
    pub entries: Vec<AuditLogEntry>,
    /// How many entries match the filters, over all pages.
    #[schemars(with = "f64")]
    pub total: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AuditQuery {
    /// e.g. `api_key.revoke`
    pub action: Option<String>,
    /// e.g. `api_key`
    pub resource_type: Option<String>,
    /// The acting user's id.
    pub actor_id: Option<String>,
    /// Entries at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Entries before this time.
    pub to: Option<DateTime<Utc>>,
    /// The `id` of the last entry of the previous page.
    pub before: Option<String>,
    /// 1 to 200, default 50.
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

impl Validate for AuditQuery {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(l) = self.limit {
            if !(1..=MAX_LIMIT).contains(&l) {
                errors.push(FieldError::new(
                    "limit",
                    format!("must be between 1 and {MAX_LIMIT}"),
                ));
            }
        }
        if let (Some(f), Some(t)) = (self.from, self.to) {
            if f > t {
                errors.push(FieldError::new("to", "must not be before from"));
            }
        }
        errors
    }
}

/// The entries matching `q`, newest first, and how many match in all.
pub async fn list(cx: &Cx, caller: &Caller, q: AuditQuery) -> Result<AuditLogPage, DomainError> {
    caller.require::<caps::AuditRead>()?;
    q.check()?;
    let filter = AuditFilter {
        action: q.action,
        resource_type: q.resource_type,
        actor: q.actor_id,
        from_ms: q.from.map(|t| t.timestamp_millis()),
        to_ms: q.to.map(|t| t.timestamp_millis()),
    };
    let (rows, total) = store::audit::list(
        cx.db().reader(),
        &caller.workspace_id,
        &filter,
        q.before.as_deref(),
        i64::from(q.limit.unwrap_or(50)),
    )
    .await?;
    let entries = rows
        .into_iter()
        .map(|r| AuditLogEntry {
            metadata: serde_json::from_str(&r.metadata).unwrap_or_default(),
            id: r.id,
            workspace_id: r.workspace_id,
            user_id: r.user_id,
            action: r.action,
            resource_type: r.resource_type,
            resource_id: r.resource_id,
            ip_address: r.ip_address,
            actor_email: r.actor_email,
            user_agent: r.user_agent,
            created_at: rfc3339(r.created_at),
        })
        .collect();
    Ok(AuditLogPage { entries, total })
}
