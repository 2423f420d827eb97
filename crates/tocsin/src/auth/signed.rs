//! Signed, expiring links (invitation accept links): `base64url(payload).base64url(hmac)`, with
//! HMAC-SHA256 under a server secret kept in the database so every API node can check them.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Signs `id` valid until `expires_ms`.
pub fn sign(secret: &[u8], id: &str, expires_ms: i64) -> String {
    let payload = format!("{id}.{expires_ms}");
    let sig = mac(secret, payload.as_bytes());
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(payload),
        URL_SAFE_NO_PAD.encode(sig)
    )
}

#[derive(Debug, PartialEq, Eq)]
pub enum Verify {
    Valid(String),
    Expired,
    Invalid,
}

/// Checks signature then expiry; the signature comparison is constant-time.
pub fn verify(secret: &[u8], token: &str, now_ms: i64) -> Verify {
    let Some((p, s)) = token.split_once('.') else {
        return Verify::Invalid;
    };
    let (Ok(payload), Ok(sig)) = (URL_SAFE_NO_PAD.decode(p), URL_SAFE_NO_PAD.decode(s)) else {
        return Verify::Invalid;
    };
    let Ok(mut m) = HmacSha256::new_from_slice(secret) else {
        return Verify::Invalid;
    };
    m.update(&payload);
    if m.verify_slice(&sig).is_err() {
        return Verify::Invalid;
    }
    let Ok(text) = String::from_utf8(payload) else {
        return Verify::Invalid;
    };
    let Some((id, exp)) = text.rsplit_once('.') else {
        return Verify::Invalid;
    };
    match exp.parse::<i64>() {
        Ok(exp) if exp > now_ms => Verify::Valid(id.to_string()),
        Ok(_) => Verify::Expired,
        Err(_) => Verify::Invalid,
    }
}

fn mac(secret: &[u8], data: &[u8]) -> Vec<u8> {
    match HmacSha256::new_from_slice(secret) {
        Ok(mut m) => {
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_verify_expire_tamper() {
        let t = sign(b"k", "inv1", 1000);
        assert_eq!(verify(b"k", &t, 999), Verify::Valid("inv1".into()));
        assert_eq!(verify(b"k", &t, 1000), Verify::Expired);
        assert_eq!(verify(b"other", &t, 0), Verify::Invalid);
        assert_eq!(verify(b"k", &format!("{t}x"), 0), Verify::Invalid);
        assert_eq!(verify(b"k", "garbage", 0), Verify::Invalid);
    }
}
