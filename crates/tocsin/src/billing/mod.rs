//! The billing engine: plans sold through Stripe. It owns the Stripe client (`stripe.rs`),
//! the webhook's signature check (`signature.rs`) and what an event does to a workspace
//! (`webhook.rs`: one application per event id, states that never go back, the plan following
//! the subscription's price, the audit entry and the owners' email on `past_due`), and the
//! usage period (`usage.rs`). Built once by the composition root from the configuration
//! (`--stripe-*`) and handed to the HTTP edge; without a secret key it is off, and the REST
//! operations (`domain::billing`) answer from the configured plan alone.

pub mod signature;
pub mod stripe;
pub mod usage;
pub mod webhook;

use std::sync::Arc;

use crate::config::Config;
use crate::mail::Mailer;
use stripe::StripeClient;

/// The billing engine's handle (cheap to clone).
#[derive(Clone, Default)]
pub struct Billing(Option<Arc<Inner>>);

struct Inner {
    stripe: StripeClient,
    webhook_secrets: Vec<String>,
    mailer: Option<Mailer>,
}

impl Billing {
    /// The engine for `config`: on when a Stripe secret key is set. `mailer` tells owners
    /// about failed payments (none: logged only).
    pub fn new(config: &Config, mailer: Option<Mailer>) -> anyhow::Result<Billing> {
        let Some(s) = &config.stripe else {
            return Ok(Billing(None));
        };
        Ok(Billing(Some(Arc::new(Inner {
            stripe: StripeClient::new(s.api_url.clone(), s.secret_key.clone())?,
            webhook_secrets: s.webhook_secrets.clone(),
            mailer,
        }))))
    }

    /// True when Stripe is configured.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// The Stripe client, when billing is on.
    pub fn stripe(&self) -> Option<&StripeClient> {
        self.0.as_ref().map(|i| &i.stripe)
    }

    fn webhook_secrets(&self) -> &[String] {
        self.0
            .as_ref()
            .map(|i| i.webhook_secrets.as_slice())
            .unwrap_or(&[])
    }

    fn mailer(&self) -> Option<&Mailer> {
        self.0.as_ref().and_then(|i| i.mailer.as_ref())
    }
}
