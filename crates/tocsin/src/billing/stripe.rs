//! A thin client of Stripe's HTTP API for the four calls Tocsin makes: create a customer,
//! create a Checkout Session, create a billing portal session, read a subscription.
//!
//! Why not `async-stripe`: it generates the whole API (hundreds of modules, minutes of compile
//! on the 2-core builders this project targets) for four form-encoded requests; reqwest is
//! already here for notifications. Requests are `application/x-www-form-urlencoded` with
//! bracketed keys (`metadata[workspace_id]`), pin the API version with `Stripe-Version`, time
//! out, and are retried on transport errors, 409 (an idempotent request still in flight), 429
//! and 5xx with the same `Idempotency-Key`, so a retried create never makes a second object.

use std::time::Duration;

use serde_json::Value;
use url::Url;

/// The API version every request pins: the shapes read below are this version's
/// (a subscription's period on the subscription, an invoice's `subscription`).
pub const STRIPE_VERSION: &str = "2024-06-20";

const TIMEOUT: Duration = Duration::from_secs(10);
const ATTEMPTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    #[error("Stripe could not be reached: {0}")]
    Transport(#[from] reqwest::Error),
    #[error("Stripe answered {status}: {message}")]
    Status { status: u16, message: String },
    #[error("Stripe's answer was not what its API reference describes: {0}")]
    Decode(String),
}

#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base: Url,
    key: String,
}

impl StripeClient {
    pub fn new(base: Url, key: String) -> anyhow::Result<StripeClient> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("Tocsin/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(StripeClient { http, base, key })
    }

    /// `POST /v1/customers` with `metadata[workspace_id]`; its id. The idempotency key is the
    /// workspace's, so two racing first checkouts get the same customer.
    pub async fn create_customer(&self, workspace_id: &str) -> Result<String, StripeError> {
        let form = [
            ("metadata[workspace_id]", workspace_id.to_string()),
            ("description", format!("Tocsin workspace {workspace_id}")),
        ];
        let key = format!("tocsin-customer-{workspace_id}");
        let v = self.post("/v1/customers", &form, &key).await?;
        string(&v, "id")
    }

    /// `POST /v1/checkout/sessions` in `subscription` mode for one `price`; its `url`.
    pub async fn create_checkout_session(
        &self,
        s: &CheckoutRequest<'_>,
    ) -> Result<String, StripeError> {
        let form = [
            ("mode", "subscription".to_string()),
            ("customer", s.customer.to_string()),
            ("client_reference_id", s.workspace_id.to_string()),
            ("line_items[0][price]", s.price.to_string()),
            ("line_items[0][quantity]", "1".to_string()),
            (
                "subscription_data[metadata][workspace_id]",
                s.workspace_id.to_string(),
            ),
            ("success_url", s.success_url.to_string()),
            ("cancel_url", s.cancel_url.to_string()),
        ];
        let v = self
            .post("/v1/checkout/sessions", &form, &new_key())
            .await?;
        string(&v, "url")
    }

    /// `POST /v1/billing_portal/sessions`; its `url`.
    pub async fn create_portal_session(
        &self,
        customer: &str,
        return_url: &str,
    ) -> Result<String, StripeError> {
        let form = [
            ("customer", customer.to_string()),
            ("return_url", return_url.to_string()),
        ];
        let v = self
            .post("/v1/billing_portal/sessions", &form, &new_key())
            .await?;
        string(&v, "url")
    }

    /// `GET /v1/subscriptions/{id}`.
    pub async fn subscription(&self, id: &str) -> Result<Value, StripeError> {
        let path = format!("/v1/subscriptions/{}", urlencoding(id));
        self.send(reqwest::Method::GET, &path, None, None).await
    }

    async fn post(
        &self,
        path: &str,
        form: &[(&str, String)],
        idempotency_key: &str,
    ) -> Result<Value, StripeError> {
        let body =
            serde_urlencoded::to_string(form).map_err(|e| StripeError::Decode(e.to_string()))?;
        self.send(
            reqwest::Method::POST,
            path,
            Some(body),
            Some(idempotency_key),
        )
        .await
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<String>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, StripeError> {
        let url = format!("{}{}", self.base.as_str().trim_end_matches('/'), path);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(&self.key)
                .header("Stripe-Version", STRIPE_VERSION);
            if let Some(k) = idempotency_key {
                req = req.header("Idempotency-Key", k);
            }
            if let Some(b) = &body {
                req = req
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(b.clone());
            }
            let outcome = match req.send().await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    let bytes = res.bytes().await;
                    match bytes {
                        Ok(bytes) if (200..300).contains(&status) => {
                            return serde_json::from_slice(&bytes)
                                .map_err(|e| StripeError::Decode(e.to_string()));
                        }
                        Ok(bytes) => Err(StripeError::Status {
                            status,
                            message: error_message(&bytes),
                        }),
                        Err(e) => Err(StripeError::Transport(e)),
                    }
                }
                Err(e) => Err(StripeError::Transport(e)),
            };
            let err = match outcome {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            if attempt >= ATTEMPTS || !retryable(&err) {
                return Err(err);
            }
            tokio::time::sleep(Duration::from_millis(250 << (attempt - 1))).await;
        }
    }
}

/// What a Checkout Session is made of.
pub struct CheckoutRequest<'a> {
    pub customer: &'a str,
    pub workspace_id: &'a str,
    pub price: &'a str,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

fn retryable(e: &StripeError) -> bool {
    match e {
        StripeError::Transport(_) => true,
        StripeError::Status { status, .. } => matches!(status, 409 | 429 | 500..=599),
        StripeError::Decode(_) => false,
    }
}

/// One idempotency key per logical create, reused by its retries.
fn new_key() -> String {
    format!("tocsin-{}", uuid::Uuid::now_v7())
}

fn string(v: &Value, key: &str) -> Result<String, StripeError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| StripeError::Decode(format!("no `{key}` in the answer")))
}

fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| "no error message".into())
}

/// A path segment: Stripe ids are `[A-Za-z0-9_]`, anything else is escaped.
fn urlencoding(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
