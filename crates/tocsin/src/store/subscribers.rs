//! Subscribers of status pages: the rows behind public subscription (double opt-in by a signed
//! link, unsubscribe by another) and the admin list. An address is stored lowercased, once per
//! page; `component_ids` is JSON text, empty for the whole page. A subscriber is *active* while
//! it is verified, not unsubscribed and not suspended (its page turned private since it
//! subscribed): only active subscribers are sent incident email. The confirmation emails sent
//! per mailbox are counted here too, for the daily cap.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct SubscriberRow {
    pub id: String,
    pub workspace_id: String,
    pub status_page_id: String,
    pub email: String,
    pub component_ids: String,
    pub verified_at: Option<i64>,
    pub unsubscribed_at: Option<i64>,
    pub created_at: i64,
    /// Set when the page turned private; cleared when an admin re-admits the subscriber or
    /// someone who may read the page subscribes the address again.
    pub suspended_at: Option<i64>,
}

impl SubscriberRow {
    /// The components chosen; empty for the whole page (a corrupt value reads as the whole
    /// page, which errs on telling rather than staying silent).
    pub fn component_ids(&self) -> Vec<String> {
        serde_json::from_str(&self.component_ids).unwrap_or_default()
    }

    /// Whether an incident touching `affected` concerns this subscriber: a whole-page
    /// subscriber hears of every incident; one who chose components, only of incidents naming
    /// one of them (they asked to hear of those parts alone).
    pub fn concerned_by(&self, affected: &[String]) -> bool {
        let chosen = self.component_ids();
        chosen.is_empty() || chosen.iter().any(|c| affected.contains(c))
    }
}

const COLUMNS: &str = "id, workspace_id, status_page_id, email, component_ids, verified_at, \
     unsubscribed_at, created_at, suspended_at";

/// Inserts a subscription; 0 when the page already has this address (the same address
/// subscribing at the same moment on another node), which leaves that one as it is.
pub async fn insert<'e>(e: impl Exec<'e>, s: &SubscriberRow) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "INSERT INTO subscribers (id, workspace_id, status_page_id, email, component_ids, \
         verified_at, unsubscribed_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (status_page_id, email) DO NOTHING",
    )
    .bind(&s.id)
    .bind(&s.workspace_id)
    .bind(&s.status_page_id)
    .bind(&s.email)
    .bind(&s.component_ids)
    .bind(s.verified_at)
    .bind(s.unsubscribed_at)
    .bind(s.created_at)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// The subscription of `email` (lowercased) to page `page_id`, if any.
pub async fn by_email<'e>(
    e: impl Exec<'e>,
    page_id: &str,
    email: &str,
) -> Result<Option<SubscriberRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM subscribers WHERE status_page_id = $1 AND email = $2");
    sqlx::query_as(&sql)
        .bind(page_id)
        .bind(email)
        .fetch_optional(e)
        .await
}

/// A subscriber by id alone: for the signed links, whose signature names the subscriber.
pub async fn by_id<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<SubscriberRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM subscribers WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// Starts the subscription again, unverified, with `component_ids` (an address that was
/// never confirmed, or that unsubscribed, subscribing once more).
pub async fn restart<'e>(
    e: impl Exec<'e>,
    id: &str,
    component_ids: &str,
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE subscribers SET component_ids = $1, verified_at = NULL, unsubscribed_at = NULL, \
         suspended_at = NULL WHERE id = $2",
    )
    .bind(component_ids)
    .bind(id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// Marks a subscription verified (once: the first time is kept), unless it was unsubscribed.
pub async fn verify<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE subscribers SET verified_at = COALESCE(verified_at, $1) \
         WHERE id = $2 AND unsubscribed_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// Ends a subscription (the first time is kept).
pub async fn unsubscribe<'e>(e: impl Exec<'e>, id: &str, now: i64) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE subscribers SET unsubscribed_at = COALESCE(unsubscribed_at, $1) WHERE id = $2",
    )
    .bind(now)
    .bind(id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// One page of a status page's subscribers by id, after `after` ("" for the first page).
pub async fn page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<SubscriberRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM subscribers WHERE workspace_id = $1 AND status_page_id = $2 \
         AND id > $3 ORDER BY id LIMIT $4"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(page_id)
        .bind(after)
        .bind(limit)
        .fetch_all(e)
        .await
}

pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    id: &str,
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "DELETE FROM subscribers WHERE workspace_id = $1 AND status_page_id = $2 AND id = $3",
    )
    .bind(ws)
    .bind(page_id)
    .bind(id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// A page's active subscribers (verified, not unsubscribed), by id.
pub async fn active<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
) -> Result<Vec<SubscriberRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM subscribers WHERE workspace_id = $1 AND status_page_id = $2 \
         AND verified_at IS NOT NULL AND unsubscribed_at IS NULL AND suspended_at IS NULL ORDER BY id"
    );
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(page_id)
        .fetch_all(e)
        .await
}

/// Suspends every subscriber of a page not suspended yet (the page turned private).
pub async fn suspend_all<'e>(
    e: impl Exec<'e>,
    page_id: &str,
    now: i64,
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE subscribers SET suspended_at = $1 WHERE status_page_id = $2 \
         AND suspended_at IS NULL",
    )
    .bind(now)
    .bind(page_id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// Lifts a subscriber's suspension (an admin re-admits it); 0 when there is no such subscriber.
pub async fn readmit<'e>(
    e: impl Exec<'e>,
    ws: &str,
    page_id: &str,
    id: &str,
) -> Result<u64, sqlx::Error> {
    sqlx::query(
        "UPDATE subscribers SET suspended_at = NULL \
         WHERE workspace_id = $1 AND status_page_id = $2 AND id = $3",
    )
    .bind(ws)
    .bind(page_id)
    .bind(id)
    .execute(e)
    .await
    .map(|r| r.rows_affected())
}

/// How many confirmation emails `mailbox` was sent since `since`.
pub async fn confirmations_since<'e>(
    e: impl Exec<'e>,
    mailbox: &str,
    since: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM subscriber_confirmations WHERE mailbox = $1 AND sent_at >= $2",
    )
    .bind(mailbox)
    .bind(since)
    .fetch_one(e)
    .await
}

/// Counts a confirmation email to `mailbox`.
pub async fn record_confirmation<'e>(
    e: impl Exec<'e>,
    mailbox: &str,
    now: i64,
) -> Result<u64, sqlx::Error> {
    sqlx::query("INSERT INTO subscriber_confirmations (mailbox, sent_at) VALUES ($1, $2)")
        .bind(mailbox)
        .bind(now)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}

/// Forgets confirmations sent before `before` (they no longer count for any cap).
pub async fn prune_confirmations<'e>(e: impl Exec<'e>, before: i64) -> Result<u64, sqlx::Error> {
    sqlx::query("DELETE FROM subscriber_confirmations WHERE sent_at < $1")
        .bind(before)
        .execute(e)
        .await
        .map(|r| r.rows_affected())
}
