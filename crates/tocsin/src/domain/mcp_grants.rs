//! MCP grants: the OAuth grants a signed-in person gave MCP clients in the current workspace,
//! listed and deleted by that person only (like API keys, no token may manage them). Deleting
//! one revokes it: its codes and tokens are deleted and every node forgets its access tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{DomainError, Resource};
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::store::{self, oauth::GrantRow};

/// An MCP grant (list item).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct McpGrant {
    pub id: String,
    /// The OAuth client the grant was given to.
    pub client_id: String,
    /// The granted scopes (token capabilities).
    pub scopes: Vec<String>,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub updated_at: String,
    /// Last use of one of its access tokens on `/mcp` (recorded at most once a minute).
    #[schemars(with = "Option<crate::schema::Timestamp>")]
    pub last_used_at: Option<String>,
}

fn view(g: &GrantRow) -> McpGrant {
    McpGrant {
        id: g.id.clone(),
        client_id: g.client_id.clone(),
        scopes: store::split_list(&g.scopes),
        created_at: rfc3339(g.created_at),
        updated_at: rfc3339(g.updated_at),
        last_used_at: g.last_used_at.map(rfc3339),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrantPath {
    pub grant_id: String,
}

/// The caller's active grants in the current workspace, oldest first.
pub async fn list(cx: &Cx, caller: &Caller) -> Result<Vec<McpGrant>, DomainError> {
    caller.require::<caps::SignedIn>()?;
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let rows = store::oauth::list_grants(
            cx.db().reader(),
            &caller.workspace_id,
            &caller.user_id,
            &after,
            500,
        )
        .await?;
        let done = rows.len() < 500;
        if let Some(last) = rows.last() {
            after = last.id.clone();
        }
        out.extend(rows.iter().map(view));
        if done {
            break;
        }
    }
    Ok(out)
}

/// Revokes one of the caller's grants. Another person's grant, another workspace's, or one
/// already revoked is not found.
pub async fn delete(cx: &Cx, caller: &Caller, grant_id: &str) -> Result<(), DomainError> {
    caller.require::<caps::SignedIn>()?;
    let grant = store::oauth::find_grant(cx.db().reader(), grant_id)
        .await?
        .filter(|g| {
            g.workspace_id == caller.workspace_id
                && g.user_id == caller.user_id
                && g.status == "ACTIVE"
        })
        .ok_or(DomainError::NotFound(Resource::McpGrant))?;
    super::oauth::revoke_for_person(cx, caller, &grant).await
}
