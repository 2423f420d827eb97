//! The domain layer: each resource's operations as functions over typed inputs, shared by
//! every surface (the HTTP handlers, the command line, the bench, later the MCP tools).
//!
//! The rule, for every operation `op(cx: &Cx, caller: &Caller, input) -> Result<_, DomainError>`
//! (plus the handle of the one engine it needs, when it needs one):
//! authorise (`caller.require::<caps::X>()`, the same marker the HTTP route declares), validate
//! (field errors with dotted paths), run the transaction, append the audit entry inside it,
//! commit, then announce the change on the feed (the caches that follow it apply it at once).
//! Request and response types (serde and schemars, no HTTP) live with their operations.
//! Nothing here imports axum or the HTTP edge; HTTP-only state (rate limiters, the
//! current-workspace cache) stays at the edge.

pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod billing;
pub mod channels;
pub mod deliveries;
pub mod email_readiness;
pub mod email_verification;
pub mod error;
pub mod escalation;
pub mod events;
pub mod heartbeats;
pub mod incidents;
pub mod input;
pub mod invitations;
pub mod maintenance;
pub mod mcp_grants;
pub mod members;
pub mod monitors;
pub mod oauth;
pub mod pagination;
pub mod plans;
pub mod postmortems;
pub mod projects;
pub mod regions;
pub mod sso;
pub mod status_pages;
pub mod stream;
pub mod users;
pub mod workspaces;

pub use error::{CredentialProblem, DomainError, DomainResult, FieldError, Holder, Resource};

/// Turns a 0-row version-checked write into the right error: missing or stale.
pub fn check_write(
    rows: u64,
    expected: Option<i64>,
    missing: DomainError,
) -> Result<(), DomainError> {
    match (rows, expected) {
        (0, Some(_)) => Err(DomainError::VersionConflict),
        (0, None) => Err(missing),
        _ => Ok(()),
    }
}
