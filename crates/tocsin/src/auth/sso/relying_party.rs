//! The relying party: one entry per configured provider (its settings and its discovery
//! cache), one HTTP client for them all (no redirects followed: a provider's endpoints answer
//! directly), starting a flow and finishing it into a verified [`Identity`].

use std::time::Duration;

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreClientAuthMethod, CoreIdToken, CoreIdTokenVerifier,
    CoreProviderMetadata,
};
use openidconnect::{
    AuthType, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope,
    SignatureVerificationError, TokenResponse,
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::discovery::{error_chain, Discovery};
use super::flow::{Flow, FLOW_TTL_MS};
use super::SsoError;
use crate::config::OidcProvider;
use crate::cx::Cx;
use crate::store;

/// How far in the future an ID token's `iat` may be, for clocks a little apart.
const CLOCK_SKEW_MS: i64 = 5 * 60 * 1000;

struct Entry {
    config: OidcProvider,
    discovery: Discovery,
}

/// The configured providers, ready to sign people in.
pub struct Sso {
    entries: Vec<Entry>,
    http: reqwest::Client,
}

/// A started flow: where to send the browser, and the flow cookie's value.
pub struct Started {
    pub authorize_url: String,
    pub cookie: String,
}

/// Who the provider says signed in, from a verified ID token.
#[derive(Debug, Clone)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// Lowercased.
    pub email: Option<String>,
    /// The token's `email_verified` is `true`.
    pub email_verified: bool,
    pub name: Option<String>,
}

/// A finished flow: the identity and the local path the person asked to go to.
pub struct Finished {
    pub identity: Identity,
    pub next: String,
}

impl Sso {
    pub fn new(providers: &[OidcProvider]) -> Result<Sso, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // Sign-ins are rare: a fresh connection each time, never one the provider (or a
            // balancer before it) has meanwhile dropped.
            .pool_max_idle_per_host(0)
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Sso {
            entries: providers
                .iter()
                .map(|p| Entry {
                    config: p.clone(),
                    discovery: Discovery::default(),
                })
                .collect(),
            http,
        })
    }

    /// The providers, in the configuration's order.
    pub fn providers(&self) -> impl Iterator<Item = &OidcProvider> {
        self.entries.iter().map(|e| &e.config)
    }

    pub fn provider(&self, id: &str) -> Option<&OidcProvider> {
        self.entries
            .iter()
            .find(|e| e.config.id == id)
            .map(|e| &e.config)
    }

    fn entry(&self, id: &str) -> Result<&Entry, SsoError> {
        self.entries
            .iter()
            .find(|e| e.config.id == id)
            .ok_or_else(|| SsoError::UnknownProvider(id.to_string()))
    }

    /// `{public_url}/auth/sso/{id}/callback`.
    pub fn redirect_uri(cx: &Cx, id: &str) -> String {
        format!(
            "{}/auth/sso/{id}/callback",
            cx.config().public_url.as_str().trim_end_matches('/')
        )
    }

    /// Starts a sign-in with provider `id` that returns to `next` (a local path).
    pub async fn start(&self, cx: &Cx, id: &str, next: String) -> Result<Started, SsoError> {
        let entry = self.entry(id)?;
        let now = cx.clock().now_ms();
        let meta = entry
            .discovery
            .get(&entry.config.issuer, &self.http, now)
            .await?;
        let client = rp_client(&entry.config, meta, &Sso::redirect_uri(cx, id))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in entry.config.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let flow = Flow {
            provider: id.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            next,
        };
        Ok(Started {
            authorize_url: url.to_string(),
            cookie: flow.seal(cx.link_secret(), now + FLOW_TTL_MS),
        })
    }

    /// Finishes a sign-in at the callback: the flow cookie must be this provider's and carry
    /// this `state`, and not have been finished before (on any node); then the code is
    /// exchanged and the ID token verified.
    pub async fn finish(
        &self,
        cx: &Cx,
        id: &str,
        cookie: Option<&str>,
        state: &str,
        code: &str,
    ) -> Result<Finished, SsoError> {
        let entry = self.entry(id)?;
        let now = cx.clock().now_ms();
        let flow = cookie
            .and_then(|c| Flow::open(cx.link_secret(), c, now))
            .filter(|f| f.provider == id)
            .ok_or(SsoError::NoFlow)?;
        if !bool::from(flow.state.as_bytes().ct_eq(state.as_bytes())) {
            return Err(SsoError::StateMismatch);
        }
        let state_hash = hex::encode(Sha256::digest(state.as_bytes()));
        if !store::sso::use_flow(cx.db().writer(), &state_hash, now + FLOW_TTL_MS, now).await? {
            return Err(SsoError::FlowUsed);
        }
        let redirect = Sso::redirect_uri(cx, id);
        let meta = entry
            .discovery
            .get(&entry.config.issuer, &self.http, now)
            .await?;
        let client = rp_client(&entry.config, meta, &redirect)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| SsoError::Unreachable(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(flow.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                RequestTokenError::ServerResponse(r) => SsoError::Exchange(r.to_string()),
                RequestTokenError::Request(e) => SsoError::Unreachable(error_chain(&e)),
                other => SsoError::Exchange(error_chain(&other)),
            })?;
        let id_token = token
            .id_token()
            .ok_or_else(|| SsoError::IdToken("the provider sent no ID token".into()))?;
        let first = verify(client.id_token_verifier(), id_token, &flow.nonce, now);
        let identity = match first {
            // The provider may have rotated its keys since they were fetched.
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => match entry
                .discovery
                .refetch(&entry.config.issuer, &self.http, now)
                .await?
            {
                Some(meta) => {
                    let client = rp_client(&entry.config, meta, &redirect)?;
                    verify(client.id_token_verifier(), id_token, &flow.nonce, now)
                }
                None => first,
            },
            other => other,
        }
        .map_err(|e| match e {
            ClaimsVerificationError::Expired(m) => SsoError::Clock(m),
            other => SsoError::IdToken(error_chain(&other)),
        })?;
        Ok(Finished {
            identity,
            next: flow.next,
        })
    }
}

/// The crate's client for `provider` as its discovery describes it, authenticating at the
/// token endpoint as discovery says the provider accepts (Basic unless only the body is).
fn rp_client(
    provider: &OidcProvider,
    meta: CoreProviderMetadata,
    redirect: &str,
) -> Result<
    CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    >,
    SsoError,
> {
    let body_only = meta
        .token_endpoint_auth_methods_supported()
        .is_some_and(|m| {
            !m.contains(&CoreClientAuthMethod::ClientSecretBasic)
                && m.contains(&CoreClientAuthMethod::ClientSecretPost)
        });
    let redirect =
        RedirectUrl::new(redirect.to_string()).map_err(|e| SsoError::Unreachable(e.to_string()))?;
    Ok(CoreClient::from_provider_metadata(
        meta,
        ClientId::new(provider.client_id.clone()),
        Some(ClientSecret::new(provider.client_secret.clone())),
    )
    .set_redirect_uri(redirect)
    .set_auth_type(if body_only {
        AuthType::RequestBody
    } else {
        AuthType::BasicAuth
    }))
}

/// The crate's checks (signature by the provider's keys, `iss`, `aud`, `azp`, `exp`,
/// `nonce`) on this server's clock, plus an `iat` no later than the clock skew allows.
fn verify(
    verifier: CoreIdTokenVerifier<'_>,
    token: &CoreIdToken,
    nonce: &str,
    now_ms: i64,
) -> Result<Identity, ClaimsVerificationError> {
    let now = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
    let latest =
        chrono::DateTime::from_timestamp_millis(now_ms + CLOCK_SKEW_MS).unwrap_or_default();
    let verifier = verifier
        .set_time_fn(move || now)
        .set_issue_time_verifier_fn(move |iat| {
            if iat > latest {
                Err(format!(
                    "issued at {iat}, later than this server's clock allows"
                ))
            } else {
                Ok(())
            }
        });
    let claims = token.claims(&verifier, &Nonce::new(nonce.to_string()))?;
    Ok(Identity {
        issuer: claims.issuer().to_string(),
        subject: claims.subject().to_string(),
        email: claims.email().map(|e| e.to_string().trim().to_lowercase()),
        email_verified: claims.email_verified() == Some(true),
        name: claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.to_string()),
    })
}
