//! The schema transforms every surface's response types share live in `crate::schema`, below
//! every layer (the notifications' incident record in `alerting/` uses them too); this path
//! stays for the domain's types.

pub use crate::schema::{exact_object, Timestamp};
