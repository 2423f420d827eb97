//! Email readiness: whether this server can send email at all (it has an SMTP relay,
//! `--smtp-url` and `--smtp-from`) and what of the caller's workspace waits on it, so the
//! dashboard can warn the people who run the workspace before a subscriber, an invitation or
//! an EMAIL channel silently gets nothing. Any member may read it (`identity:read`); it says
//! nothing about the relay but whether there is one.

use schemars::JsonSchema;
use serde::Serialize;

use super::DomainError;
use crate::auth::{caps, Caller};
use crate::cx::Cx;
use crate::store;

/// Whether the server sends email, and what of the workspace needs it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct EmailReadiness {
    /// The server has an SMTP relay. Without one it sends no email: status pages offer no
    /// subscribe form and refuse subscriptions (409 `SMTP_NOT_CONFIGURED`), EMAIL channels
    /// cannot be created or enabled, invitations answer their accept link to pass on, and
    /// people are verified by the operator (`tocsin user verify`).
    pub smtp_configured: bool,
    /// Subscribers of the workspace's status pages that have not unsubscribed.
    pub subscribers: i64,
    /// Enabled EMAIL notification channels.
    pub email_channels: i64,
    /// Invitations still pending (not accepted, revoked or expired).
    pub pending_invitations: i64,
    /// Published status pages, whose readers would subscribe by email.
    pub published_status_pages: i64,
}

/// The readiness of the caller's workspace on this server.
pub async fn get(cx: &Cx, caller: &Caller) -> Result<EmailReadiness, DomainError> {
    caller.require::<caps::IdentityRead>()?;
    let db = cx.db().reader();
    let ws = &caller.workspace_id;
    let now = cx.clock().now_ms();
    Ok(EmailReadiness {
        smtp_configured: cx.config().smtp.is_some(),
        subscribers: store::email_needs::subscribers(db, ws).await?,
        email_channels: store::email_needs::email_channels(db, ws).await?,
        pending_invitations: store::invitations::count_pending(db, ws, now).await?,
        published_status_pages: store::email_needs::published_pages(db, ws).await?,
    })
}
