//! The request rate limits of the configuration file's `[rate_limits]` table and their
//! defaults.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimits {
    /// Sign-in attempts per client address and minute.
    #[serde(default = "d_sign_in_ip")]
    pub sign_in_per_ip: u32,
    /// Failed sign-ins for one email, from all addresses, before addresses that have failed
    /// for it back off exponentially (see `auth::sign_in_guard`).
    #[serde(default = "d_sign_in_email")]
    pub sign_in_per_email: u32,
    /// Failed sign-ins per minute for one email from one address.
    #[serde(default = "d_sign_in_email_ip")]
    pub sign_in_failures_per_email_ip: u32,
    /// The longest per-email back-off, in seconds.
    #[serde(default = "d_sign_in_backoff_max")]
    pub sign_in_email_backoff_max_seconds: u64,
    #[serde(default = "d_sign_up_ip")]
    pub sign_up_per_ip: u32,
    /// Pushes to unknown push tokens per client IP and minute.
    #[serde(default = "d_push_unknown_ip")]
    pub push_unknown_per_ip: u32,
    /// Status page subscription requests per client address and minute.
    #[serde(default = "d_subscribe_ip")]
    pub subscribe_per_ip: u32,
    /// Subscription requests per email address and hour, across pages: a confirmation email
    /// cannot be used to flood an inbox.
    #[serde(default = "d_subscribe_email")]
    pub subscribe_per_email_hour: u32,
    /// Confirmation emails one mailbox (case, plus-tag and quotes aside) is sent per day,
    /// across pages and nodes; past it a subscription is accepted but nothing is sent.
    #[serde(default = "d_subscribe_confirmations")]
    pub subscribe_confirmations_per_mailbox_day: u32,
}

fn d_sign_in_ip() -> u32 {
    30
}
fn d_sign_in_email() -> u32 {
    10
}
fn d_sign_in_email_ip() -> u32 {
    10
}
fn d_sign_in_backoff_max() -> u64 {
    900
}
fn d_sign_up_ip() -> u32 {
    20
}
fn d_push_unknown_ip() -> u32 {
    120
}
fn d_subscribe_ip() -> u32 {
    20
}
fn d_subscribe_email() -> u32 {
    5
}
fn d_subscribe_confirmations() -> u32 {
    3
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            sign_in_per_ip: d_sign_in_ip(),
            sign_in_per_email: d_sign_in_email(),
            sign_in_failures_per_email_ip: d_sign_in_email_ip(),
            sign_in_email_backoff_max_seconds: d_sign_in_backoff_max(),
            sign_up_per_ip: d_sign_up_ip(),
            push_unknown_per_ip: d_push_unknown_ip(),
            subscribe_per_ip: d_subscribe_ip(),
            subscribe_per_email_hour: d_subscribe_email(),
            subscribe_confirmations_per_mailbox_day: d_subscribe_confirmations(),
        }
    }
}
