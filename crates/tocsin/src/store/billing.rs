//! Billing rows: each workspace's Stripe customer and subscription state
//! (`billing_accounts`), the webhook events applied (`billing_events`), the owners to tell,
//! and the usage counts read from tables that already exist (no write per check).

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct AccountRow {
    pub workspace_id: String,
    pub customer_id: String,
    pub subscription_id: Option<String>,
    pub status: String,
    pub price_id: Option<String>,
    pub current_period_start: Option<i64>,
    pub current_period_end: Option<i64>,
    pub cancel_at_period_end: i64,
    pub event_created: i64,
    pub updated_at: i64,
}

const SELECT: &str = "SELECT workspace_id, customer_id, subscription_id, status, price_id, \
     current_period_start, current_period_end, cancel_at_period_end, event_created, updated_at \
     FROM billing_accounts";

pub async fn get<'e>(e: impl Exec<'e>, ws: &str) -> Result<Option<AccountRow>, sqlx::Error> {
    sqlx::query_as(&format!("{SELECT} WHERE workspace_id = $1"))
        .bind(ws)
        .fetch_optional(e)
        .await
}

pub async fn by_customer<'e>(
    e: impl Exec<'e>,
    customer_id: &str,
) -> Result<Option<AccountRow>, sqlx::Error> {
    sqlx::query_as(&format!("{SELECT} WHERE customer_id = $1"))
        .bind(customer_id)
        .fetch_optional(e)
        .await
}

/// Records the workspace's customer unless it already has one; true when this call did.
pub async fn insert_customer<'e>(
    e: impl Exec<'e>,
    ws: &str,
    customer_id: &str,
    now: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO billing_accounts (workspace_id, customer_id, status, updated_at) \
         VALUES ($1, $2, 'none', $3) ON CONFLICT DO NOTHING",
    )
    .bind(ws)
    .bind(customer_id)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks event `id` applied; false when it already was (by this node or another: the primary
/// key decides, and on PostgreSQL a concurrent insert waits for the first one's commit).
pub async fn claim_event<'e>(
    e: impl Exec<'e>,
    id: &str,
    event_type: &str,
    ws: Option<&str>,
    created: i64,
    now: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO billing_events (event_id, event_type, workspace_id, created, applied_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    )
    .bind(id)
    .bind(event_type)
    .bind(ws)
    .bind(created)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A subscription's state as an event describes it.
#[derive(Debug, Clone)]
pub struct SubscriptionState {
    pub subscription_id: Option<String>,
    pub status: String,
    pub price_id: Option<String>,
    pub current_period_start: Option<i64>,
    pub current_period_end: Option<i64>,
    pub cancel_at_period_end: bool,
}

/// Writes `state` (and the customer, which a completed checkout may name first) unless the
/// stored state came from a newer event; false when it did (the compare is in the statement,
/// so two events racing on two nodes cannot both win out of order).
pub async fn apply_state<'e>(
    e: impl Exec<'e>,
    ws: &str,
    customer_id: &str,
    state: &SubscriptionState,
    event_created: i64,
    now: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO billing_accounts AS a (workspace_id, customer_id, subscription_id, status, \
         price_id, current_period_start, current_period_end, cancel_at_period_end, \
         event_created, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (workspace_id) DO UPDATE SET customer_id = excluded.customer_id, \
         subscription_id = excluded.subscription_id, status = excluded.status, \
         price_id = excluded.price_id, current_period_start = excluded.current_period_start, \
         current_period_end = excluded.current_period_end, \
         cancel_at_period_end = excluded.cancel_at_period_end, \
         event_created = excluded.event_created, updated_at = excluded.updated_at \
         WHERE a.event_created <= excluded.event_created",
    )
    .bind(ws)
    .bind(customer_id)
    .bind(state.subscription_id.as_deref())
    .bind(&state.status)
    .bind(state.price_id.as_deref())
    .bind(state.current_period_start)
    .bind(state.current_period_end)
    .bind(i64::from(state.cancel_at_period_end))
    .bind(event_created)
    .bind(now)
    .execute(e)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Moves the workspace to `plan` (nothing else of it changes: a downgrade removes nothing).
pub async fn set_plan<'e>(
    e: impl Exec<'e>,
    ws: &str,
    plan: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE workspaces SET plan = $2, updated_at = $3 WHERE id = $1")
        .bind(ws)
        .bind(plan)
        .bind(now)
        .execute(e)
        .await
        .map(|_| ())
}

/// The email addresses of the workspace's owners.
pub async fn owner_emails<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id \
         WHERE m.workspace_id = $1 AND m.role = 'owner' ORDER BY u.email",
    )
    .bind(ws)
    .fetch_all(e)
    .await
}

/// Checks run by the workspace's monitors, every region, in the rollup hours
/// `from <= bucket_start < to`: the hourly rollups already count each result, so metering
/// writes nothing per check.
pub async fn checks_in<'e>(
    e: impl Exec<'e>,
    ws: &str,
    from: i64,
    to: i64,
) -> Result<i64, sqlx::Error> {
    let n: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(SUM(r.total) AS BIGINT) FROM monitors m \
         JOIN heartbeat_hourly r ON r.monitor_seq = m.seq \
         WHERE m.workspace_id = $1 AND r.bucket_start >= $2 AND r.bucket_start < $3",
    )
    .bind(ws)
    .bind(from)
    .bind(to)
    .fetch_one(e)
    .await?;
    Ok(n.unwrap_or(0))
}

/// Notification deliveries attempted for the workspace in `from <= attempted_at < to` (each
/// attempt, retries included, is its own row of the outbox).
pub async fn deliveries_in<'e>(
    e: impl Exec<'e>,
    ws: &str,
    from: i64,
    to: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM deliveries WHERE workspace_id = $1 \
         AND attempted_at >= $2 AND attempted_at < $3",
    )
    .bind(ws)
    .bind(from)
    .bind(to)
    .fetch_one(e)
    .await
}
