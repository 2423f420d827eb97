//! Password hashing with argon2id (the crate's defaults: 19 MiB, 2 passes). Hashing runs on the
//! blocking pool so a sign-in storm cannot stall the request workers.

use std::sync::OnceLock;

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;

pub const MIN_LENGTH: usize = 8;
pub const MAX_LENGTH: usize = 256;

pub async fn hash(password: String) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
    })
    .await?
}

/// Verifies `password` against `stored`. When there is no user, pass `None`: the password is
/// checked against a fixed dummy hash so the answer takes the same time either way.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let hash = stored.unwrap_or_else(|| dummy_hash().to_string());
        let ok = PasswordHash::new(&hash)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false);
        ok && known
    })
    .await
    .unwrap_or(false)
}

fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(b"tocsin-timing-equaliser", &salt)
            .map(|h| h.to_string())
            .unwrap_or_default()
    })
}
