//! Schema transforms shared by the API's response types. They live in the domain layer
//! (`domain::schema`), beside the types that use them; this path stays for HTTP-only types.

pub use crate::domain::schema::{exact_object, Timestamp};
