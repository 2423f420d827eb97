//! Stripe's webhook signature: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`,
//! each `v1` the HMAC-SHA256 of `"<t>.<raw body>"` keyed with an endpoint secret (`whsec_...`,
//! its whole text as the key, as Stripe's libraries use it). Checked on the raw bytes before
//! anything is parsed, against every configured secret (several while one is rotated), with a
//! tolerance on `t` against replays. Hand-written because it is twenty lines over `hmac`
//! (already a dependency) and no maintained crate offers just this.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How far (seconds) a signature's time may be from now: Stripe's libraries' default.
pub const TOLERANCE_SECS: i64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("The Stripe-Signature header is missing.")]
    Missing,
    #[error("The Stripe-Signature header is malformed: it needs t=<unix seconds> and v1=<hex signature>.")]
    Malformed,
    #[error("The Stripe-Signature timestamp is outside the 300-second tolerance: the event is too old (a replay?) or the clock is wrong.")]
    Stale,
    #[error(
        "No signature in Stripe-Signature matches this body under any configured webhook secret."
    )]
    Mismatch,
}

/// Checks `header` for `body` at `now_secs`; the signature's time when it holds.
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secrets: &[String],
    now_secs: i64,
) -> Result<i64, SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        let Some((k, v)) = part.trim().split_once('=') else {
            continue;
        };
        match k {
            "t" => t = v.parse::<i64>().ok(),
            "v1" => {
                if let Ok(sig) = hex::decode(v) {
                    candidates.push(sig);
                }
            }
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // Every secret is tried against every candidate: `verify_slice` compares in constant time.
    let matched = secrets.iter().any(|secret| {
        candidates
            .iter()
            .any(|sig| mac(secret, t, body).is_some_and(|m| m.verify_slice(sig).is_ok()))
    });
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if (now_secs - t).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    Ok(t)
}

/// The header Stripe would send for `body` signed with `secret` at `t`.
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    let sig = mac(secret, t, body)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!("t={t},v1={sig}")
}

fn mac(secret: &str, t: i64, body: &[u8]) -> Option<HmacSha256> {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).ok()?;
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    Some(m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test_secret";

    #[test]
    fn a_signed_body_verifies_under_any_configured_secret() {
        let body = br#"{"id":"evt_1"}"#;
        let h = sign(SECRET, 1_000, body);
        let secrets = vec!["whsec_old".to_string(), SECRET.to_string()];
        assert_eq!(verify(Some(&h), body, &secrets, 1_100), Ok(1_000));
        // A header carrying several v1 values (Stripe does during a rotation) passes on any.
        let two = format!("{h},v1={}", "00".repeat(32));
        assert_eq!(verify(Some(&two), body, &secrets, 1_000), Ok(1_000));
    }

    #[test]
    fn forged_stale_and_missing_signatures_fail() {
        let body = br#"{"id":"evt_1"}"#;
        let secrets = vec![SECRET.to_string()];
        let h = sign(SECRET, 1_000, body);
        assert_eq!(
            verify(Some(&h), br#"{"id":"evt_2"}"#, &secrets, 1_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(
                Some(&sign("whsec_other", 1_000, body)),
                body,
                &secrets,
                1_000
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(Some(&h), body, &secrets, 1_301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(None, body, &secrets, 1_000),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify(Some("v1=abc"), body, &secrets, 1_000),
            Err(SignatureError::Malformed)
        );
    }
}
