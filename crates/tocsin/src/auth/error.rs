//! Why a credential or a caller was refused: the credential layer's own error. The domain
//! turns it into its own (`From<AuthError> for DomainError`, same codes and messages), so an
//! operation's `caller.require::<X>()?` reads as before, and nothing here names the domain.

use super::capability::Capability;
use crate::store::corrupt::CorruptRow;

/// Why a presented credential was refused (401 `UNAUTHORIZED`). Only what the caller already
/// holds is described: a key is called revoked or expired only after its whole secret matched
/// a stored hash, so nothing here tells anyone whether some other key exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialProblem {
    /// An `Authorization` header that is not `Bearer <token>`.
    MalformedHeader,
    /// A bearer token that cannot be an API key (wrong prefix, too long).
    MalformedKey,
    /// A well-formed key that matches no stored key (never issued, rotated or deleted).
    UnknownKey,
    RevokedKey,
    ExpiredKey,
    /// A remote probe's key that matches no active probe key.
    UnknownProbeKey,
    /// The person who created the key is no longer a member of its workspace.
    KeyCreatorLeft,
    /// A session cookie that matches no session (signed out, or never issued).
    UnknownSession,
    ExpiredSession,
    /// The signed-in person belongs to no workspace any more.
    NoWorkspace,
    /// An OAuth access token that matches no live grant (never issued, revoked, or for another
    /// resource).
    UnknownAccessToken,
    ExpiredAccessToken,
}

impl CredentialProblem {
    pub fn message(self) -> &'static str {
        match self {
            CredentialProblem::MalformedHeader => {
                "The Authorization header is malformed: send `Authorization: Bearer <API key>`."
            }
            CredentialProblem::MalformedKey => {
                "The bearer token is not an API key: send a key that starts with `svc_`, copied whole."
            }
            CredentialProblem::UnknownKey => {
                "The API key is not recognised (it may have been rotated or deleted): check that it was copied whole, or create a new key."
            }
            CredentialProblem::UnknownProbeKey => {
                "The probe key is not recognised or was revoked: give the probe a current key (`tocsin probe-key create`)."
            }
            CredentialProblem::RevokedKey => {
                "This API key was revoked: create a new key and use it instead."
            }
            CredentialProblem::ExpiredKey => {
                "This API key has expired: create a new key, or set a later expiry on a key that is still active."
            }
            CredentialProblem::KeyCreatorLeft => {
                "The person who created this API key is no longer a member of its workspace: have a current member create a new key."
            }
            CredentialProblem::UnknownSession => {
                "The session is not recognised (signed out or replaced): sign in again."
            }
            CredentialProblem::ExpiredSession => "The session has expired: sign in again.",
            CredentialProblem::UnknownAccessToken => {
                "The OAuth access token is not recognised or its grant was revoked: authorize the client again."
            }
            CredentialProblem::ExpiredAccessToken => {
                "The OAuth access token has expired: get a new one from the token endpoint with the refresh token."
            }
            CredentialProblem::NoWorkspace => {
                "You are no longer a member of any workspace: ask a workspace owner or admin for an invitation, then sign in again."
            }
        }
    }
}

/// Who lacked a capability: the fix differs (a new key, or a different role).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Session,
    ApiKey,
    OAuthGrant,
}

/// A refusal by the credential layer.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A credential was sent and refused; the problem says why.
    #[error("{}", .0.message())]
    BadCredential(CredentialProblem),
    /// A key valid on other surfaces only.
    #[error("This API key may not be used on the {0} surface.")]
    SurfaceNotAllowed(&'static str),
    /// The caller lacks capabilities the operation needs.
    #[error("The caller lacks the capabilities {missing:?}.")]
    InsufficientCapability {
        missing: Vec<Capability>,
        holder: Holder,
    },
    /// A token calling what only a signed-in person may (see `DomainError::SessionRequired`).
    #[error("Only a signed-in person may do this.")]
    SessionRequired(Vec<Capability>),
    /// Refused outright, with the code and the message the answer carries.
    #[error("{1}")]
    Forbidden(&'static str, String),
    #[error("a database error stopped the authentication")]
    Database(#[from] sqlx::Error),
    /// A stored credential value this build cannot read (already logged and counted).
    #[error(transparent)]
    Corrupt(#[from] CorruptRow),
}

impl AuthError {
    /// The machine-readable code the answer carries (as `DomainError::code`).
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::BadCredential(_) => "UNAUTHORIZED",
            AuthError::SurfaceNotAllowed(_) => "SURFACE_NOT_ALLOWED",
            AuthError::InsufficientCapability { .. } | AuthError::SessionRequired(_) => {
                "INSUFFICIENT_CAPABILITY"
            }
            AuthError::Forbidden(code, _) => code,
            AuthError::Database(_) | AuthError::Corrupt(_) => "INTERNAL",
        }
    }
}
