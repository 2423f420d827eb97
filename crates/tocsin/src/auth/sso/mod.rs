//! Single sign-on with OpenID Connect: Tocsin as a relying party of the providers the operator
//! configured (`[[sso.oidc]]`, `config::OidcProvider`).
//!
//! A sign-in is the authorization-code flow with PKCE S256. What the callback must check
//! (state, nonce, PKCE verifier, where to go next) travels in a short-lived cookie signed with
//! the installation's link secret (`flow.rs`), so whichever node receives the callback can
//! finish a flow another node started; a finished flow is recorded in the database so that a
//! replayed callback fails on every node. The provider's discovery document and keys are
//! cached and refreshed (`discovery.rs`); the code exchange and every ID token check
//! (signature by the provider's JWKS, `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`) are the
//! `openidconnect` crate's (`relying_party.rs`). What a verified identity becomes (a user, a
//! membership, a session) is `domain::sso`'s; the pages are `http::sso`'s.

mod discovery;
mod error;
mod flow;
mod relying_party;

pub use error::SsoError;
pub use flow::{FLOW_COOKIE, FLOW_TTL_SECS};
pub use relying_party::{Finished, Identity, Sso, Started};
