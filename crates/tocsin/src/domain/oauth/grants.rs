//! Revoking a grant (its codes and tokens go with it): audited under the grant's person, and
//! announced so that every node forgets the grant's cached tokens.

use serde_json::json;

use crate::audit::{self, Entry};
use crate::auth::capability::CapSet;
use crate::auth::{Caller, Via};
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::domain::DomainError;
use crate::store::{self, oauth as st};

/// Who the audit log names for what the token endpoint does on a grant's behalf: the grant's
/// person, from the client's address.
pub(super) async fn grant_actor(
    cx: &Cx,
    g: &st::GrantRow,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<Caller, sqlx::Error> {
    let user = store::users::get(cx.db().reader(), &g.user_id).await?;
    Ok(Caller {
        user_id: g.user_id.clone(),
        email_verified: user.as_ref().is_some_and(|u| u.email_verified_at.is_some()),
        email: user.map(|u| u.email).unwrap_or_default(),
        workspace_id: g.workspace_id.clone(),
        caps: CapSet::EMPTY,
        via: Via::OAuth {
            grant_id: g.id.clone(),
        },
        ip,
        user_agent,
    })
}

/// Revokes a grant (its codes and tokens go with it), audits why, and tells every node.
pub(super) async fn revoke_grant(
    cx: &Cx,
    actor: &Caller,
    g: &st::GrantRow,
    action: &str,
    reason: &str,
) -> Result<(), sqlx::Error> {
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let changed = st::revoke_grant(&mut tx, &g.id, now).await?;
    if changed > 0 {
        audit::record(
            &mut *tx,
            actor,
            Entry {
                action,
                resource_type: "mcp_grant",
                resource_id: &g.id,
                metadata: json!({"clientId": g.client_id, "reason": reason}),
            },
            now,
        )
        .await?;
    }
    tx.commit().await?;
    cx.announce(Notice::OAuthGrantRevoked {
        grant_id: g.id.clone(),
    });
    Ok(())
}

/// Revokes a grant for its person (the grants list's delete).
pub(in crate::domain) async fn revoke_for_person(
    cx: &Cx,
    caller: &Caller,
    grant: &st::GrantRow,
) -> Result<(), DomainError> {
    revoke_grant(
        cx,
        caller,
        grant,
        "mcp_grant.delete",
        "deleted by its person",
    )
    .await?;
    Ok(())
}
