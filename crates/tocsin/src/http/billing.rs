//! HTTP adapter for billing: the four REST operations (`domain::billing`, session only) and
//! Stripe's webhook `POST /billing/stripe/webhook`, which is outside the REST contract (like
//! `/auth`, it is not in the API document): it reads the raw body, whose bytes the signature
//! covers, and hands them to the engine (`billing::webhook`) before anything is parsed.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::extract::ApiJson;
use crate::auth::needs;
use crate::billing::webhook::{self, WebhookError};
use crate::domain::billing::{self, BillingLink, CheckoutBody, PaidPlans, Subscription, Usage};
use crate::domain::DomainError;
use crate::http::auth::Auth;
use crate::http::error::{ApiResult, ErrorBody};
use crate::http::AppState;

const TAG: &str = "Billing";

/// The webhook's path.
pub const WEBHOOK_PATH: &str = webhook::PATH;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/billing/subscription",
            get_with(get_subscription, |op| {
                op.id("getBillingSubscription")
                    .tag(TAG)
                    .summary("The workspace's plan and subscription (session only, owners)")
            }),
        )
        .api_route(
            "/billing/usage",
            get_with(get_usage, |op| {
                op.id("getBillingUsage").tag(TAG).summary(
                    "What the workspace uses against its plan's quotas, and checks and notifications in the period (session only, owners)",
                )
            }),
        )
        .api_route(
            "/billing/plans",
            get_with(list_plans, |op| {
                op.id("listBillingPlans").tag(TAG).summary(
                    "The plans on sale through Stripe, with their quotas (none without Stripe; session only, owners)",
                )
            }),
        )
        .api_route(
            "/billing/checkout",
            post_with(checkout, |op| {
                op.id("createBillingCheckout")
                    .tag(TAG)
                    .summary("A Stripe Checkout link subscribing the workspace to a paid plan (session only, owners)")
                    .response_with::<409, Json<ErrorBody>, _>(|r| {
                        r.description("The server does not sell plans (`BILLING_NOT_CONFIGURED`)")
                    })
                    .response_with::<503, Json<ErrorBody>, _>(|r| {
                        r.description("Stripe could not be reached (`SERVICE_UNAVAILABLE`)")
                    })
            }),
        )
        .api_route(
            "/billing/portal",
            post_with(portal, |op| {
                op.id("createBillingPortal")
                    .tag(TAG)
                    .summary("A Stripe billing portal link for the workspace's customer (session only, owners)")
                    .response_with::<409, Json<ErrorBody>, _>(|r| {
                        r.description("The server does not sell plans (`BILLING_NOT_CONFIGURED`), or the workspace has no billing account yet (`NO_BILLING_ACCOUNT`)")
                    })
                    .response_with::<503, Json<ErrorBody>, _>(|r| {
                        r.description("Stripe could not be reached (`SERVICE_UNAVAILABLE`)")
                    })
            }),
        )
}

/// The webhook route, outside the document.
pub fn webhook_router() -> Router<AppState> {
    Router::new().route(WEBHOOK_PATH, post(stripe_webhook))
}

async fn get_subscription(
    State(state): State<AppState>,
    caller: Auth<needs::GetBillingSubscription>,
) -> ApiResult<Json<Subscription>> {
    Ok(Json(
        billing::subscription(state.cx(), state.billing(), &caller).await?,
    ))
}

async fn get_usage(
    State(state): State<AppState>,
    caller: Auth<needs::GetBillingUsage>,
) -> ApiResult<Json<Usage>> {
    Ok(Json(billing::usage(state.cx(), &caller).await?))
}

async fn list_plans(
    State(state): State<AppState>,
    caller: Auth<needs::ListBillingPlans>,
) -> ApiResult<Json<PaidPlans>> {
    Ok(Json(
        billing::plans(state.billing(), state.cx(), &caller).await?,
    ))
}

async fn checkout(
    State(state): State<AppState>,
    caller: Auth<needs::CreateBillingCheckout>,
    ApiJson(body): ApiJson<CheckoutBody>,
) -> ApiResult<Json<BillingLink>> {
    Ok(Json(
        billing::checkout(state.cx(), state.billing(), &caller, body).await?,
    ))
}

async fn portal(
    State(state): State<AppState>,
    caller: Auth<needs::CreateBillingPortal>,
) -> ApiResult<Json<BillingLink>> {
    Ok(Json(
        billing::portal(state.cx(), state.billing(), &caller).await?,
    ))
}

async fn stripe_webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    match webhook::receive(state.cx(), state.billing(), signature, &body).await {
        Ok(outcome) => Ok(Json(
            json!({"received": true, "outcome": format!("{outcome:?}").to_lowercase()}),
        )),
        Err(WebhookError::Off) => Err(DomainError::NotFound(crate::domain::Resource::Route).into()),
        Err(WebhookError::Signature(e)) => {
            Err(DomainError::field("Stripe-Signature", e.to_string()).into())
        }
        Err(WebhookError::Malformed(m)) => Err(DomainError::form(m).into()),
        Err(WebhookError::Stripe(e)) => {
            tracing::warn!(error = %e, "Stripe event not applied: the subscription could not be read");
            Err(DomainError::Unavailable.into())
        }
        Err(WebhookError::Database(e)) => Err(DomainError::Database(e).into()),
    }
}
