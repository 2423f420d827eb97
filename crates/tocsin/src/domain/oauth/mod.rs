//! The OAuth 2.1 authorization server's operations for MCP clients: dynamic client
//! registration (RFC 7591), the authorization request and the person's consent (PKCE S256 only,
//! RFC 8707 `resource` bound into the grant), the token endpoint (authorization code and
//! refresh token grants; refresh tokens rotate on every use and a reused one revokes the whole
//! grant, OAuth 2.1 section 4.3.1) and revocation (RFC 7009).
//!
//! The protocol endpoints answer in the RFCs' own error format (`{"error",
//! "error_description"}`), not the REST envelope: clients written against the RFCs parse it.
//! That is [`OAuthError`]. The consent, which the dashboard posts with the session cookie, is
//! a REST-style call and refuses with [`DomainError`] like every other.
//!
//! One module per endpoint: `register`, `authorize`, `consent`, `token`, `revoke`; `client`
//! authenticates the client at the token and revocation endpoints, `grants` revokes a grant
//! and names who did it.

mod authorize;
mod client;
mod consent;
mod grants;
mod register;
mod revoke;
mod token;

pub use authorize::{authorize, with_query, AuthorizeError, AuthorizeQuery, Authorized};
pub use client::ClientAuth;
pub use consent::{consent, Consent, ConsentAnswer};
pub(super) use grants::revoke_for_person;
pub use register::{register, ClientMetadata, RegisteredClient};
pub use revoke::{revoke, RevokeForm};
pub use token::{token, TokenAnswer, TokenForm};

/// A refusal of a protocol endpoint, as RFC 6749 section 5.2 and RFC 7591 section 3.2.2 write
/// it: `status`, `error` (the RFC's code) and a description for people.
#[derive(Debug)]
pub struct OAuthError {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(status: u16, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }
    fn bad(error: &'static str, description: impl Into<String>) -> Self {
        OAuthError::new(400, error, description)
    }
    fn invalid_grant(description: impl Into<String>) -> Self {
        OAuthError::bad("invalid_grant", description)
    }
    fn invalid_client() -> Self {
        OAuthError::new(
            401,
            "invalid_client",
            "Client authentication failed: unknown client, or a missing or wrong client secret.",
        )
    }
}

impl From<sqlx::Error> for OAuthError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "database error in the OAuth server");
        OAuthError::new(
            500,
            "server_error",
            "A database error stopped the request: retry.",
        )
    }
}
