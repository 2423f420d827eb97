//! Cursor pages. The parameters, the cursor codec and the page split live in the domain layer
//! (`domain::pagination`), beside the list operations that use them.

pub use crate::domain::pagination::*;
