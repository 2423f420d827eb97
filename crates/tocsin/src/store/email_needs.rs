//! What of a workspace waits on outgoing email, counted for the email readiness read
//! (`domain::email_readiness`): one count per thing that only email can serve.

use super::Exec;

/// Subscribers of the workspace's status pages that have not unsubscribed (their
/// confirmations and the pages' news go by email).
pub async fn subscribers<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM subscribers WHERE workspace_id = $1 AND unsubscribed_at IS NULL",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}

/// The workspace's enabled `EMAIL` notification channels.
pub async fn email_channels<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM notification_channels \
         WHERE workspace_id = $1 AND type = 'EMAIL' AND enabled <> 0",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}

/// The workspace's published status pages (their readers subscribe by email).
pub async fn published_pages<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM status_pages WHERE workspace_id = $1 AND published <> 0",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}
