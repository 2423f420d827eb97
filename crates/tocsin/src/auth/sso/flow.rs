//! The sign-in flow's cookie: what the callback needs to check (the provider, `state`, `nonce`,
//! the PKCE verifier) and where the person goes afterwards, signed with the installation's link
//! secret (`auth::signed`) and valid for ten minutes. Carried by the browser rather than kept
//! in one node's memory, so any node can finish the flow.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::auth::signed::{self, Verify};

/// The cookie's name; its path is the provider's `/auth/sso/{id}/`.
pub const FLOW_COOKIE: &str = "svc.sso_flow";

/// How long a person has between the start and the callback.
pub const FLOW_TTL_MS: i64 = FLOW_TTL_SECS * 1000;
pub const FLOW_TTL_SECS: i64 = 10 * 60;

/// Keeps flow cookies apart from every other link signed with the same secret.
const PURPOSE: &str = "sso-flow:";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flow {
    #[serde(rename = "p")]
    pub provider: String,
    #[serde(rename = "s")]
    pub state: String,
    #[serde(rename = "n")]
    pub nonce: String,
    #[serde(rename = "v")]
    pub pkce_verifier: String,
    #[serde(rename = "x")]
    pub next: String,
}

impl Flow {
    /// The cookie's value, valid until `expires_ms`.
    pub fn seal(&self, secret: &[u8], expires_ms: i64) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        signed::sign(
            secret,
            &format!("{PURPOSE}{}", URL_SAFE_NO_PAD.encode(json)),
            expires_ms,
        )
    }

    /// The flow a cookie value carries, if its signature holds and it has not expired.
    pub fn open(secret: &[u8], value: &str, now_ms: i64) -> Option<Flow> {
        let Verify::Valid(id) = signed::verify(secret, value, now_ms) else {
            return None;
        };
        let b64 = id.strip_prefix(PURPOSE)?;
        let json = URL_SAFE_NO_PAD.decode(b64).ok()?;
        serde_json::from_slice(&json).ok()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn seals_open_only_with_the_secret_and_in_time() {
        let f = Flow {
            provider: "acme".into(),
            state: "s".into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            next: "/app/x".into(),
        };
        let c = f.seal(b"k", 1000);
        assert_eq!(Flow::open(b"k", &c, 999).unwrap().next, "/app/x");
        assert!(Flow::open(b"k", &c, 1000).is_none());
        assert!(Flow::open(b"other", &c, 0).is_none());
        // A link signed for another purpose is not a flow.
        assert!(Flow::open(b"k", &signed::sign(b"k", "inv1", 1000), 0).is_none());
    }
}
