//! Appends audit entries. Handlers call [`record`] inside the same transaction as the change it
//! describes, so an entry exists exactly when the change does.

use serde_json::Value;

use crate::auth::Caller;
use crate::ids::new_id;
use crate::store::{self, Exec};

/// A write to describe: `action` like `api_key.revoke`, the resource's type and id, and any
/// detail worth keeping (never secrets).
pub struct Entry<'a> {
    pub action: &'a str,
    pub resource_type: &'a str,
    pub resource_id: &'a str,
    pub metadata: Value,
}

pub async fn record<'e>(
    e: impl Exec<'e>,
    caller: &Caller,
    entry: Entry<'_>,
    now: i64,
) -> Result<(), sqlx::Error> {
    let metadata = if entry.metadata.is_object() {
        entry.metadata
    } else {
        Value::Object(Default::default())
    };
    store::audit::append(
        e,
        &store::audit::AuditRow {
            id: new_id(),
            workspace_id: caller.workspace_id.clone(),
            user_id: caller.user_id.clone(),
            action: entry.action.to_string(),
            resource_type: entry.resource_type.to_string(),
            resource_id: entry.resource_id.to_string(),
            metadata: metadata.to_string(),
            ip_address: caller.ip.clone(),
            actor_email: Some(caller.email.clone()),
            user_agent: caller.user_agent.clone(),
            created_at: now,
        },
    )
    .await
}
