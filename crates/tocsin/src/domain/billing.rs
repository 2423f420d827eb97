//! The Billing operations (session only, `billing:manage`: owners): the workspace's
//! subscription, its usage against the plan's quotas, and links to Stripe's Checkout and
//! billing portal. The engine (Stripe client, webhook) is `crate::billing`; without Stripe the
//! reads answer from the configured plan and the links answer 409 `BILLING_NOT_CONFIGURED`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::DomainError;
use crate::auth::{needs, Caller};
use crate::billing::stripe::{CheckoutRequest, StripeError};
use crate::billing::{usage, Billing};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::store;

/// The workspace's subscription.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Subscription {
    /// The plan the workspace is on (its quotas apply to new creations).
    pub plan: String,
    /// `none` (no subscription), `trialing`, `active`, `past_due`, `canceled`, `incomplete`
    /// or `unpaid`.
    pub status: SubscriptionStatus,
    /// `stripe` when the server sells plans, null otherwise.
    pub provider: Option<Provider>,
    #[schemars(with = "Option<crate::schema::Timestamp>")]
    pub current_period_end: Option<String>,
    /// True when the subscription ends at the end of the period.
    pub cancel_at_period_end: bool,
    #[schemars(with = "crate::schema::Timestamp")]
    pub updated_at: String,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionStatus {
    None,
    Trialing,
    Active,
    PastDue,
    Canceled,
    Incomplete,
    Unpaid,
}

impl SubscriptionStatus {
    fn parse(s: &str) -> SubscriptionStatus {
        match s {
            "trialing" => SubscriptionStatus::Trialing,
            "active" => SubscriptionStatus::Active,
            "past_due" => SubscriptionStatus::PastDue,
            "canceled" => SubscriptionStatus::Canceled,
            "incomplete" => SubscriptionStatus::Incomplete,
            "unpaid" => SubscriptionStatus::Unpaid,
            _ => SubscriptionStatus::None,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Stripe,
}

/// What the workspace uses in the period against its plan's quotas.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Usage {
    pub plan: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub period_start: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub period_end: String,
    pub items: Vec<UsageItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct UsageItem {
    /// `monitors`, `status_pages`, `members`, `api_keys`, `notification_channels` (what
    /// exists now), `checks` and `notifications` (checks run in every region and notification
    /// deliveries attempted in the period).
    pub metric: String,
    #[schemars(with = "f64")]
    pub used: i64,
    /// Null: unlimited.
    #[schemars(with = "Option<f64>")]
    pub limit: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutBody {
    /// A plan the server sells (one with a Stripe price).
    pub plan: String,
}

// Whether the plan is on sale is the operation's check (it knows the configuration).
impl super::input::Validate for CheckoutBody {}

/// A link to open in the browser.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::exact_object)]
pub struct BillingLink {
    pub url: String,
}

/// A plan the server sells through Stripe.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PaidPlan {
    /// The name `POST /billing/checkout` takes.
    pub name: String,
    /// Its quotas (absent: unlimited).
    pub quotas: crate::config::PlanQuota,
}

/// The plans on sale (none without Stripe), by name.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::exact_object)]
pub struct PaidPlans {
    pub plans: Vec<PaidPlan>,
}

pub async fn plans(billing: &Billing, cx: &Cx, caller: &Caller) -> Result<PaidPlans, DomainError> {
    caller.require::<needs::ListBillingPlans>()?;
    let plans = if billing.is_on() {
        cx.config()
            .plans
            .quotas
            .iter()
            .filter(|(_, q)| q.stripe_price.is_some())
            .map(|(name, q)| PaidPlan {
                name: name.clone(),
                quotas: q.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(PaidPlans { plans })
}

pub async fn subscription(
    cx: &Cx,
    billing: &Billing,
    caller: &Caller,
) -> Result<Subscription, DomainError> {
    caller.require::<needs::GetBillingSubscription>()?;
    let db = cx.db().reader();
    let ws = store::workspaces::get(db, &caller.workspace_id)
        .await?
        .ok_or(DomainError::NotFound(crate::domain::Resource::Workspace))?;
    let account = store::billing::get(db, &caller.workspace_id).await?;
    let provider = billing.is_on().then_some(Provider::Stripe);
    Ok(match account {
        Some(a) => Subscription {
            plan: ws.plan,
            status: SubscriptionStatus::parse(&a.status),
            provider,
            current_period_end: a.current_period_end.map(rfc3339),
            cancel_at_period_end: a.cancel_at_period_end != 0,
            updated_at: rfc3339(a.updated_at),
        },
        None => Subscription {
            plan: ws.plan,
            status: SubscriptionStatus::None,
            provider,
            current_period_end: None,
            cancel_at_period_end: false,
            updated_at: rfc3339(ws.updated_at),
        },
    })
}

pub async fn usage(cx: &Cx, caller: &Caller) -> Result<Usage, DomainError> {
    caller.require::<needs::GetBillingUsage>()?;
    let ws = &caller.workspace_id;
    let (plan, quota) = super::plans::quotas_of(cx, ws).await?;
    let db = cx.db().reader();
    let account = store::billing::get(db, ws).await?;
    let (start, end) = usage::period(
        account.as_ref().and_then(|a| a.current_period_start),
        account.as_ref().and_then(|a| a.current_period_end),
        cx.clock().now_ms(),
    );
    let item = |metric: &str, used: i64, limit: Option<u64>| UsageItem {
        metric: metric.to_string(),
        used,
        limit,
    };
    let items = vec![
        item(
            "monitors",
            store::monitors::count(db, ws).await?,
            quota.monitors,
        ),
        item(
            "status_pages",
            store::status_pages::count(db, ws).await?,
            quota.status_pages,
        ),
        item(
            "members",
            store::members::count(db, ws).await?,
            quota.members,
        ),
        item(
            "api_keys",
            store::api_keys::count_active(db, ws).await?,
            quota.api_keys,
        ),
        item(
            "notification_channels",
            store::channels::count(db, ws).await?,
            quota.notification_channels,
        ),
        item(
            "checks",
            store::billing::checks_in(db, ws, start, end).await?,
            None,
        ),
        item(
            "notifications",
            store::billing::deliveries_in(db, ws, start, end).await?,
            None,
        ),
    ];
    Ok(Usage {
        plan,
        period_start: rfc3339(start),
        period_end: rfc3339(end),
        items,
    })
}

pub async fn checkout(
    cx: &Cx,
    billing: &Billing,
    caller: &Caller,
    body: CheckoutBody,
) -> Result<BillingLink, DomainError> {
    caller.require::<needs::CreateBillingCheckout>()?;
    let stripe = billing.stripe().ok_or_else(not_configured)?;
    let price = cx
        .config()
        .plans
        .quotas
        .get(&body.plan)
        .and_then(|q| q.stripe_price.clone())
        .ok_or_else(|| {
            DomainError::field(
                "plan",
                format!(
                    "{:?} is not a plan this server sells: name one with a Stripe price (see GET /billing/usage for the current plan).",
                    body.plan
                ),
            )
        })?;
    let customer = customer_of(cx, billing, &caller.workspace_id).await?;
    let back = app_billing_url(cx);
    let url = stripe
        .create_checkout_session(&CheckoutRequest {
            customer: &customer,
            workspace_id: &caller.workspace_id,
            price: &price,
            success_url: &format!("{back}?checkout=success"),
            cancel_url: &format!("{back}?checkout=cancel"),
        })
        .await
        .map_err(stripe_failed)?;
    Ok(BillingLink { url })
}

pub async fn portal(
    cx: &Cx,
    billing: &Billing,
    caller: &Caller,
) -> Result<BillingLink, DomainError> {
    caller.require::<needs::CreateBillingPortal>()?;
    let stripe = billing.stripe().ok_or_else(not_configured)?;
    let account = store::billing::get(cx.db().reader(), &caller.workspace_id)
        .await?
        .ok_or_else(|| {
            DomainError::Conflict(
                "NO_BILLING_ACCOUNT",
                "This workspace has no billing account yet: subscribe to a plan first (POST /billing/checkout).".into(),
            )
        })?;
    let url = stripe
        .create_portal_session(&account.customer_id, &app_billing_url(cx))
        .await
        .map_err(stripe_failed)?;
    Ok(BillingLink { url })
}

/// The workspace's Stripe customer, created once (with `metadata[workspace_id]`) and reused.
async fn customer_of(cx: &Cx, billing: &Billing, ws: &str) -> Result<String, DomainError> {
    if let Some(a) = store::billing::get(cx.db().reader(), ws).await? {
        return Ok(a.customer_id);
    }
    let stripe = billing.stripe().ok_or_else(not_configured)?;
    let customer = stripe.create_customer(ws).await.map_err(stripe_failed)?;
    let now = cx.clock().now_ms();
    store::billing::insert_customer(cx.db().writer(), ws, &customer, now).await?;
    // Another request may have recorded it first: the stored one is the workspace's.
    Ok(store::billing::get(cx.db().writer(), ws)
        .await?
        .map(|a| a.customer_id)
        .unwrap_or(customer))
}

fn app_billing_url(cx: &Cx) -> String {
    format!(
        "{}/app/billing",
        cx.config().public_url.as_str().trim_end_matches('/')
    )
}

fn not_configured() -> DomainError {
    DomainError::Conflict(
        "BILLING_NOT_CONFIGURED",
        "This server does not sell plans (no Stripe secret key is configured): the workspace stays on its configured plan.".into(),
    )
}

fn stripe_failed(e: StripeError) -> DomainError {
    tracing::warn!(error = %e, "Stripe request failed");
    DomainError::Unavailable
}
