//! A provider's discovery document and signing keys
//! (`{issuer}/.well-known/openid-configuration` and its `jwks_uri`), cached per provider:
//! fetched at the first sign-in, refreshed after an hour, and at once (at most every ten
//! seconds) when an ID token's signature matches no key of the cached set, as a provider rotating its keys
//! does. A provider that is down while a stale copy is held keeps being served from it.

use openidconnect::core::CoreProviderMetadata;
use openidconnect::IssuerUrl;
use tokio::sync::Mutex;

use super::SsoError;

const FRESH_MS: i64 = 60 * 60 * 1000;
const MIN_REFETCH_MS: i64 = 10 * 1000;

#[derive(Default)]
pub struct Discovery {
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// The metadata and when it was fetched.
    copy: Option<(CoreProviderMetadata, i64)>,
    /// When an unknown key last made it fetch again.
    refetched_at: Option<i64>,
}

impl Discovery {
    /// The provider's metadata (and keys), fetched when missing or an hour old.
    pub async fn get(
        &self,
        issuer: &str,
        http: &reqwest::Client,
        now_ms: i64,
    ) -> Result<CoreProviderMetadata, SsoError> {
        let mut held = self.held.lock().await;
        match held.copy.as_ref() {
            Some((m, at)) if now_ms - at < FRESH_MS => Ok(m.clone()),
            _ => match fetch(issuer, http).await {
                Ok(m) => {
                    held.copy = Some((m.clone(), now_ms));
                    Ok(m)
                }
                Err(e) => match held.copy.as_ref() {
                    Some((m, _)) => {
                        tracing::warn!(issuer, error = %e, "provider discovery failed; using the copy held");
                        Ok(m.clone())
                    }
                    None => Err(e),
                },
            },
        }
    }

    /// Fetches again for a token signed by a key the copy lacks, unless another such token
    /// made it fetch in the last ten seconds (`None`): a stream of tokens with made-up key ids
    /// cannot make the server hammer its provider.
    pub async fn refetch(
        &self,
        issuer: &str,
        http: &reqwest::Client,
        now_ms: i64,
    ) -> Result<Option<CoreProviderMetadata>, SsoError> {
        let mut held = self.held.lock().await;
        if held
            .refetched_at
            .is_some_and(|at| now_ms - at < MIN_REFETCH_MS)
        {
            return Ok(None);
        }
        held.refetched_at = Some(now_ms);
        let m = fetch(issuer, http).await?;
        held.copy = Some((m.clone(), now_ms));
        Ok(Some(m))
    }
}

async fn fetch(issuer: &str, http: &reqwest::Client) -> Result<CoreProviderMetadata, SsoError> {
    let url =
        IssuerUrl::new(issuer.to_string()).map_err(|e| SsoError::Unreachable(e.to_string()))?;
    CoreProviderMetadata::discover_async(url, http)
        .await
        .map_err(|e| SsoError::Unreachable(error_chain(&e)))
}

/// An error and its causes on one line (the crate's top-level messages say little alone).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
