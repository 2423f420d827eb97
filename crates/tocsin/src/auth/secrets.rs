//! Secrets handed to clients (API keys, session tokens, push tokens, invitation tokens): how
//! they are generated, how they are hashed for storage, and how they are compared. Every secret
//! carries at least 32 random bytes, so a single SHA-256 is a sufficient storage hash (there is
//! nothing to brute-force); comparison is constant-time.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The prefix of personal access tokens.
pub const API_KEY_PREFIX: &str = "svc_";

/// `prefix` + 32 random bytes, URL-safe base64 without padding (43 characters).
pub fn generate(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret: lowercase hex SHA-256.
pub fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Constant-time equality of two stored hashes.
pub fn hashes_equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// What a person sees to recognise an API key: the prefix and the last four characters.
pub fn hint(token: &str) -> String {
    hint_with(API_KEY_PREFIX, token)
}

/// [`hint`] for a key with another prefix (`pk_` ...).
pub fn hint_with(prefix: &str, token: &str) -> String {
    let tail: String = token
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{prefix}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_unique_and_hash_stably() {
        let a = generate(API_KEY_PREFIX);
        let b = generate(API_KEY_PREFIX);
        assert!(a.starts_with("svc_") && a.len() >= 4 + 43);
        assert_ne!(a, b);
        assert!(hashes_equal(&hash(&a), &hash(&a)));
        assert!(!hashes_equal(&hash(&a), &hash(&b)));
        assert!(hint(&a).ends_with(&a[a.len() - 4..]));
    }
}
