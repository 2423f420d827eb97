//! The `billing-webhook` scenario: Stripe's webhook under load. The in-process server runs
//! with Stripe settings (a bench secret, prices for two plans); setup gives the bench user's
//! workspace a Stripe customer and signs, as Stripe does, a run of distinct
//! `customer.subscription.updated` events, each newer than the last and alternating between
//! the two prices, so every request is verified, parsed, recorded and applied (a plan change
//! and its audit entry), never answered as a duplicate.

use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue, Method};
use bytes::Bytes;
use serde_json::json;

use super::scenario::{Fixture, RequestSpec, SignedBodies};
use tocsin::config::{Config, PlanQuota, Stripe};

/// The webhook secret of the bench server.
const SECRET: &str = "whsec_bench_not_secret";
const PRICES: [(&str, &str); 2] = [
    ("team", "price_bench_team"),
    ("business", "price_bench_business"),
];
/// Events signed ahead: more than any run sends (a wrap-around would be answered as a
/// duplicate, which is cheaper and would flatter the figures).
const EVENTS: usize = 60_000;

/// The bench server's billing settings (the Stripe API is never called by these events).
pub fn configure(c: &mut Config) {
    for (plan, price) in PRICES {
        c.plans.quotas.insert(
            plan.to_string(),
            PlanQuota {
                stripe_price: Some(price.to_string()),
                ..PlanQuota::default()
            },
        );
    }
    if let Ok(api_url) = url::Url::parse("http://127.0.0.1:9") {
        c.stripe = Some(Stripe {
            secret_key: "sk_test_bench".into(),
            webhook_secrets: vec![SECRET.into()],
            api_url,
        });
    }
}

pub async fn setup(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let app = fx.app("billing-webhook")?;
    if !app.billing().is_on() {
        anyhow::bail!("billing-webhook needs the in-process server with Stripe settings");
    }
    let ws = fx.workspace_id().await?;
    let customer = "cus_bench";
    let now_ms = app.cx().clock().now_ms();
    tocsin::store::billing::insert_customer(app.db().writer(), &ws, customer, now_ms).await?;
    let t = now_ms.div_euclid(1000);
    let base_created = t - 1_000_000;
    let items = (0..EVENTS)
        .map(|i| {
            let price = PRICES[i % 2].1;
            let body = json!({
                "id": format!("evt_bench_{i}"),
                "object": "event",
                "type": "customer.subscription.updated",
                "created": base_created + i as i64,
                "data": {"object": {
                    "id": "sub_bench",
                    "object": "subscription",
                    "customer": customer,
                    "status": "active",
                    "cancel_at_period_end": false,
                    "current_period_start": t,
                    "current_period_end": t + 2_592_000,
                    "items": {"data": [{"price": {"id": price}}]}
                }}
            })
            .to_string();
            let sig = tocsin::billing::signature::sign(SECRET, t, body.as_bytes());
            Ok((Bytes::from(body), HeaderValue::from_str(&sig)?))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut spec = RequestSpec::get(tocsin::billing::webhook::PATH);
    spec.method = Method::POST;
    spec.headers.push((
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    ));
    spec.bodies = Some(Arc::new(SignedBodies {
        header: HeaderName::from_static("stripe-signature"),
        items,
    }));
    Ok(spec)
}
