//! Token revocation (RFC 7009, `POST /auth/oauth2/revoke`): a refresh token takes its whole
//! grant with it, an access token stops alone; unknown tokens and other clients' tokens
//! change nothing and answer the same.

use serde::Deserialize;

use super::client::{client_of, ClientAuth};
use super::grants::{grant_actor, revoke_grant};
use super::OAuthError;
use crate::auth::secrets;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::store::oauth as st;

/// The form of `POST /auth/oauth2/revoke` (RFC 7009).
#[derive(Debug, Default, Deserialize)]
pub struct RevokeForm {
    pub token: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// Revokes a token the client holds. A refresh token takes its whole grant with it; an access
/// token stops alone. Unknown tokens, and tokens of other clients, change nothing and answer
/// the same (RFC 7009 section 2.2).
pub async fn revoke(
    cx: &Cx,
    form: RevokeForm,
    auth: ClientAuth,
    ip: Option<String>,
    user_agent: Option<String>,
) -> Result<(), OAuthError> {
    let client = client_of(cx, &auth).await?;
    let presented = form
        .token
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OAuthError::bad("invalid_request", "token is required"))?;
    let hash = secrets::hash(presented);
    let Some(row) = st::find_token(cx.db().reader(), &hash).await? else {
        return Ok(());
    };
    let Some(grant) = st::find_grant(cx.db().reader(), &row.grant_id).await? else {
        return Ok(());
    };
    if grant.client_id != client.id {
        return Ok(());
    }
    if row.kind == st::REFRESH {
        let actor = grant_actor(cx, &grant, ip, user_agent).await?;
        revoke_grant(
            cx,
            &actor,
            &grant,
            "mcp_grant.revoke",
            "refresh token revoked by the client",
        )
        .await?;
    } else {
        st::delete_token(cx.db().writer(), &hash).await?;
        // Forgets the grant's cached tokens; the others are read again on their next use.
        cx.announce(Notice::OAuthGrantRevoked {
            grant_id: grant.id.clone(),
        });
    }
    Ok(())
}
