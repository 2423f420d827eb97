//! The domain layer: each resource's operations as functions over typed inputs. An operation
//! validates its input, authorises the [`Caller`](crate::auth::Caller), runs its transaction,
//! appends the audit entry and publishes the change. The HTTP handlers, the command line and
//! the MCP tools are thin adapters over it; it imports none of them.

pub mod error;
pub mod events;
pub mod heartbeats;
pub mod monitors;
pub mod page;
pub mod regions;
pub mod schema;

pub use error::{DomainError, DomainResult, FieldError, Resource};

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
