//! The schema transforms response types share; they live in the domain layer
//! ([`crate::domain::schema`]) because the types they describe are shared by every surface.

pub use crate::domain::schema::{exact_object, Timestamp};
