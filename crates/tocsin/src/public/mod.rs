//! What the public sees of a status page: built from the store into one [`snapshot`], rendered
//! once into every public form (the summary JSON, the [`html`] page, the [`feed`]s), and held
//! in the [`cache`] every node keeps, dropped when something the page shows changes.
//!
//! Nothing here knows HTTP: `http::public` serves these renderings with their headers, and the
//! embed API and badges read the same snapshot.

pub mod access;
pub mod badge;
pub mod cache;
pub mod feed;
pub mod html;
pub mod keys;
pub mod lang;
pub mod snapshot;
