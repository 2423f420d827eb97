//! The one-click acknowledge link put in every alert notification, and the alert's own link.
//!
//! The link is `<public-url>/alerts/ack?token=<token>`, the token an HMAC-SHA256-signed,
//! expiring payload (`auth::signed`, under the server's link secret kept in the database, so
//! every node checks it) naming the alert: `ack:<alert id>`, the prefix keeping an invitation
//! token from ever passing as an acknowledgement. It expires [`LIFETIME_MS`] after the
//! notification was enqueued. It is single-use because what it does can happen once: it
//! acknowledges an `OPEN` alert, recording when and `acknowledgedBy: "link"`, and an alert
//! never becomes `OPEN` again (the next outage is a new alert with a new id), so a second use
//! finds it acknowledged and is refused. Opening the link (`GET`) only shows a confirmation
//! page; the acknowledgement is its form's `POST`, so a chat app's link preview cannot
//! acknowledge anything.

use std::sync::Arc;

use crate::auth::signed::{self, Verify};
use crate::cx::Cx;

/// How long an acknowledge link works after its notification was enqueued.
pub const LIFETIME_MS: i64 = 24 * 60 * 60 * 1000;

/// The path of the acknowledge pages (outside the REST contract, like `/auth`).
pub const ACK_PATH: &str = "/alerts/ack";

/// What `acknowledgedBy` says for an acknowledgement through the link.
pub const BY_LINK: &str = "link";

const PREFIX: &str = "ack:";

/// The server's address and link secret: everything a notification's links are made of.
#[derive(Clone, Default)]
pub struct Links {
    base: String,
    secret: Arc<[u8]>,
}

impl std::fmt::Debug for Links {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links").field("base", &self.base).finish()
    }
}

impl Links {
    /// The links of this installation: its public address and its link secret.
    pub fn of(cx: &Cx) -> Links {
        Links::new(cx.config().public_url.as_str(), cx.link_secret())
    }

    pub fn new(public_url: &str, secret: &[u8]) -> Links {
        Links {
            base: public_url.trim_end_matches('/').to_string(),
            secret: Arc::from(secret),
        }
    }

    /// The server's public address, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The link secret, for the other links a notification carries (`super::subscriber_mail`).
    pub(super) fn secret(&self) -> &[u8] {
        &self.secret
    }

    /// A token acknowledging `alert_id`, valid until `now_ms + LIFETIME_MS`.
    pub fn token(&self, alert_id: &str, now_ms: i64) -> String {
        signed::sign(
            &self.secret,
            &format!("{PREFIX}{alert_id}"),
            now_ms.saturating_add(LIFETIME_MS),
        )
    }

    /// The one-click acknowledge link of `alert_id`.
    pub fn acknowledge(&self, alert_id: &str, now_ms: i64) -> String {
        format!(
            "{}{ACK_PATH}?token={}",
            self.base,
            self.token(alert_id, now_ms)
        )
    }

    /// The alert's REST address.
    pub fn alert(&self, alert_id: &str) -> String {
        format!("{}/alerts/{alert_id}", self.base)
    }

    /// The alert a token names, if its signature holds and it has not expired.
    pub fn verify(&self, token: &str, now_ms: i64) -> Verify {
        match signed::verify(&self.secret, token, now_ms) {
            Verify::Valid(id) => match id.strip_prefix(PREFIX) {
                Some(alert) if !alert.is_empty() => Verify::Valid(alert.to_string()),
                _ => Verify::Invalid,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_alert_until_it_expires() {
        let l = Links::new("http://x/", b"secret");
        let t = l.token("a1", 1_000);
        assert_eq!(l.verify(&t, 1_000), Verify::Valid("a1".into()));
        assert_eq!(l.verify(&t, 1_000 + LIFETIME_MS), Verify::Expired);
        assert_eq!(
            Links::new("http://x", b"other").verify(&t, 0),
            Verify::Invalid
        );
        assert!(l
            .acknowledge("a1", 0)
            .starts_with("http://x/alerts/ack?token="));
        assert_eq!(l.alert("a1"), "http://x/alerts/a1");
    }

    #[test]
    fn a_token_signed_for_something_else_is_refused() {
        let l = Links::new("http://x", b"secret");
        let invitation = signed::sign(b"secret", "inv1", 10_000);
        assert_eq!(l.verify(&invitation, 0), Verify::Invalid);
    }
}
