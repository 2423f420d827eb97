//! What a Stripe webhook event does. The signature is checked on the raw bytes first
//! ([`super::signature`]); then the event is read, the subscription it concerns found (in the
//! event, or read again from the API for a completed checkout and for invoices, whose objects
//! do not carry the price), and applied in one transaction with the record of its id: a
//! redelivery, or the same event reaching two nodes at once, applies once (the id's primary
//! key), and an event older than the one the state came from changes nothing (the `created`
//! compare is in the write). The plan follows the price: `active`, `trialing` and `past_due`
//! keep the plan that sells the price; `canceled`, `unpaid`, `incomplete_expired`, `paused` and a
//! deleted subscription fall back to the default plan; `incomplete` leaves the plan as it is.
//! A price no plan sells is logged and changes nothing. A change of plan only moves
//! `workspaces.plan`: nothing is deleted, paused or disabled, and quotas apply to what is
//! created afterwards.

use serde_json::{json, Value};

use super::signature::{self, SignatureError};
use super::stripe::StripeError;
use super::Billing;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::billing::{self as rows, SubscriptionState};

/// Where Stripe posts events (outside the REST contract).
pub const PATH: &str = "/billing/stripe/webhook";

/// The event types acted on; every other type is answered 200 and ignored.
pub const HANDLED: [&str; 6] = [
    "checkout.session.completed",
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
    "invoice.paid",
    "invoice.payment_failed",
];

/// The audit action of a change of plan or status.
pub const AUDIT_ACTION: &str = "billing.subscription_changed";
/// Who the audit log names for changes Stripe reported.
pub const ACTOR: &str = "stripe";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The event changed the workspace's billing state.
    Applied,
    /// Recorded, but nothing to change (the same state, an older event, an unknown price).
    Unchanged,
    /// Seen before: nothing done.
    Duplicate,
    /// A type Tocsin does not act on, or an object naming no workspace of this server.
    Ignored,
}

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Billing is off: the path does not exist.
    #[error("billing is not configured")]
    Off,
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error("The event is not a Stripe event object: {0}")]
    Malformed(String),
    /// The subscription could not be read back: Stripe retries the event later.
    #[error(transparent)]
    Stripe(#[from] StripeError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Checks and applies one delivery of the webhook.
pub async fn receive(
    cx: &Cx,
    billing: &Billing,
    signature_header: Option<&str>,
    body: &[u8],
) -> Result<Outcome, WebhookError> {
    let Some(stripe) = billing.stripe() else {
        return Err(WebhookError::Off);
    };
    let now_ms = cx.clock().now_ms();
    signature::verify(
        signature_header,
        body,
        billing.webhook_secrets(),
        now_ms.div_euclid(1000),
    )?;
    let event: Value =
        serde_json::from_slice(body).map_err(|e| WebhookError::Malformed(e.to_string()))?;
    let (Some(id), Some(kind), Some(created)) = (
        event["id"].as_str(),
        event["type"].as_str(),
        event["created"].as_i64(),
    ) else {
        return Err(WebhookError::Malformed(
            "it needs `id`, `type` and `created`".into(),
        ));
    };
    if !HANDLED.contains(&kind) {
        tracing::debug!(event = id, kind, "Stripe event type not acted on");
        return Ok(Outcome::Ignored);
    }
    let object = &event["data"]["object"];
    let found = match kind {
        "checkout.session.completed" => {
            let Some(sub_id) = id_of(&object["subscription"]) else {
                return Ok(Outcome::Ignored);
            };
            let ws = object["client_reference_id"].as_str().map(str::to_string);
            let sub = stripe.subscription(&sub_id).await?;
            locate(cx, ws, &sub)
                .await?
                .map(|(ws, c)| (ws, c, state_of(&sub, false)))
        }
        "invoice.paid" | "invoice.payment_failed" => {
            let sub_id = id_of(&object["subscription"])
                .or_else(|| id_of(&object["parent"]["subscription_details"]["subscription"]));
            let Some(sub_id) = sub_id else {
                return Ok(Outcome::Ignored);
            };
            let sub = stripe.subscription(&sub_id).await?;
            locate(cx, None, &sub)
                .await?
                .map(|(ws, c)| (ws, c, state_of(&sub, false)))
        }
        _ => {
            let deleted = kind == "customer.subscription.deleted";
            locate(cx, None, object)
                .await?
                .map(|(ws, c)| (ws, c, state_of(object, deleted)))
        }
    };
    let Some((ws, customer, state)) = found else {
        tracing::info!(
            event = id,
            kind,
            "Stripe event names no workspace of this server"
        );
        return Ok(Outcome::Ignored);
    };
    apply(cx, billing, id, kind, created, &ws, &customer, state).await
}

/// The workspace and customer a subscription belongs to: the one whose customer it is, else
/// the workspace the checkout or the subscription's metadata names (when it exists).
async fn locate(
    cx: &Cx,
    named: Option<String>,
    sub: &Value,
) -> Result<Option<(String, String)>, sqlx::Error> {
    let Some(customer) = id_of(&sub["customer"]) else {
        return Ok(None);
    };
    let db = cx.db().reader();
    if let Some(a) = rows::by_customer(db, &customer).await? {
        return Ok(Some((a.workspace_id, customer)));
    }
    let named = named.or_else(|| sub["metadata"]["workspace_id"].as_str().map(str::to_string));
    let Some(ws) = named else {
        return Ok(None);
    };
    Ok(crate::store::workspaces::get(db, &ws)
        .await?
        .map(|w| (w.id, customer)))
}

/// An id given as a string, or as the expanded object carrying it.
fn id_of(v: &Value) -> Option<String> {
    v.as_str()
        .or_else(|| v["id"].as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The state a subscription object describes (`deleted`: the event says it is gone).
fn state_of(sub: &Value, deleted: bool) -> SubscriptionState {
    let item = &sub["items"]["data"][0];
    let secs = |v: &Value| v.as_i64().map(|s| s.saturating_mul(1000));
    let status = if deleted {
        "canceled".to_string()
    } else {
        match sub["status"].as_str().unwrap_or("incomplete") {
            // Stored in the API's words: an expired first payment is a subscription that
            // ended; a paused one (a trial that ended without a card) bills nothing either.
            "incomplete_expired" | "paused" => "canceled".to_string(),
            s @ ("trialing" | "active" | "past_due" | "canceled" | "incomplete" | "unpaid") => {
                s.to_string()
            }
            other => {
                tracing::warn!(status = other, "unknown Stripe subscription status");
                "incomplete".to_string()
            }
        }
    };
    SubscriptionState {
        subscription_id: id_of(&sub["id"]),
        status,
        price_id: id_of(&item["price"]),
        current_period_start: secs(&sub["current_period_start"])
            .or_else(|| secs(&item["current_period_start"])),
        current_period_end: secs(&sub["current_period_end"])
            .or_else(|| secs(&item["current_period_end"])),
        cancel_at_period_end: sub["cancel_at_period_end"].as_bool().unwrap_or(false),
    }
}

/// What plan a state puts the workspace on: `Some(plan)`, or `None` to leave it (an
/// incomplete first payment), or `Err(())` for a price no plan sells.
fn plan_for(cx: &Cx, state: &SubscriptionState) -> Result<Option<String>, ()> {
    let plans = &cx.config().plans;
    match state.status.as_str() {
        "active" | "trialing" | "past_due" => {
            let price = state.price_id.as_deref().ok_or(())?;
            plans.by_price(price).map(|p| Some(p.to_string())).ok_or(())
        }
        "incomplete" => Ok(None),
        _ => Ok(Some(plans.default.clone())),
    }
}

#[allow(clippy::too_many_arguments)]
async fn apply(
    cx: &Cx,
    billing: &Billing,
    event_id: &str,
    kind: &str,
    created: i64,
    ws: &str,
    customer: &str,
    state: SubscriptionState,
) -> Result<Outcome, WebhookError> {
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    if !rows::claim_event(&mut *tx, event_id, kind, Some(ws), created, now).await? {
        tx.rollback().await?;
        return Ok(Outcome::Duplicate);
    }
    let plan = match plan_for(cx, &state) {
        Ok(p) => p,
        Err(()) => {
            tracing::warn!(
                event = event_id,
                workspace = ws,
                price = state.price_id.as_deref().unwrap_or("-"),
                "Stripe price sold by no plan (set stripe_price in [plans.quotas.<name>]); the plan stays"
            );
            tx.commit().await?;
            return Ok(Outcome::Unchanged);
        }
    };
    let Some(workspace) = crate::store::workspaces::get(&mut *tx, ws).await? else {
        tx.commit().await?;
        return Ok(Outcome::Ignored);
    };
    let before = rows::get(&mut *tx, ws).await?;
    let old_status = before
        .as_ref()
        .map(|a| a.status.clone())
        .unwrap_or_else(|| "none".into());
    if !rows::apply_state(&mut *tx, ws, customer, &state, created, now).await? {
        // A newer event already set the state: this one is recorded and changes nothing.
        tx.commit().await?;
        return Ok(Outcome::Unchanged);
    }
    let new_plan = plan.unwrap_or_else(|| workspace.plan.clone());
    if new_plan != workspace.plan {
        rows::set_plan(&mut *tx, ws, &new_plan, now).await?;
    }
    let changed = new_plan != workspace.plan || state.status != old_status;
    if changed {
        crate::store::audit::append(
            &mut *tx,
            &crate::store::audit::AuditRow {
                id: new_id(),
                workspace_id: ws.to_string(),
                user_id: ACTOR.to_string(),
                action: AUDIT_ACTION.to_string(),
                resource_type: "subscription".to_string(),
                resource_id: state
                    .subscription_id
                    .clone()
                    .unwrap_or_else(|| ws.to_string()),
                metadata: json!({
                    "from": {"plan": workspace.plan, "status": old_status},
                    "to": {"plan": new_plan, "status": state.status},
                    "eventId": event_id,
                    "eventType": kind,
                })
                .to_string(),
                ip_address: None,
                actor_email: None,
                user_agent: None,
                created_at: now,
            },
        )
        .await?;
    }
    tx.commit().await?;
    if state.status == "past_due" && old_status != "past_due" {
        tell_owners(cx, billing, ws, &workspace.name, &new_plan).await;
    }
    Ok(if changed {
        Outcome::Applied
    } else {
        Outcome::Unchanged
    })
}

/// Emails the workspace's owners that a payment failed. Sent after the commit, in the
/// background, so the webhook answers at once; a failure is logged (Stripe's own dunning
/// emails the customer too).
async fn tell_owners(cx: &Cx, billing: &Billing, ws: &str, name: &str, plan: &str) {
    let Some(mailer) = billing.mailer().cloned() else {
        tracing::warn!(
            workspace = ws,
            "payment past due; no SMTP relay to tell the owners"
        );
        return;
    };
    let owners = match rows::owner_emails(cx.db().reader(), ws).await {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(workspace = ws, error = %e, "could not read the owners to tell");
            return;
        }
    };
    let link = format!(
        "{}/app/billing",
        cx.config().public_url.as_str().trim_end_matches('/')
    );
    let subject = format!("Payment past due for {name}");
    let body = format!(
        "The last payment for the workspace {name} (plan {plan}) failed, and its subscription is past due.\n\n\
         Nothing has been turned off. Update the payment method under \"Manage billing\" at {link} \
         before Stripe's retries run out, or the workspace returns to the default plan.\n"
    );
    tokio::spawn(async move {
        for to in owners {
            if let Err(e) = mailer.send(&to, &subject, body.clone()).await {
                tracing::warn!(error = %e, "could not email an owner about a past-due payment");
            }
        }
    });
}
