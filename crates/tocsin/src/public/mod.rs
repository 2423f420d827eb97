//! What the public sees of a status page: built from the store into one [`snapshot`], rendered
//! once into every public form (the summary JSON, the [`html`] page, the [`feed`]s), and held
//! in the [`cache`] every node keeps, dropped when something the page shows changes.
//!
//! Who may read a private page is decided here too ([`access`] holds a page's gate,
//! [`admission`] asks it with what a request carries).
//!
//! Nothing here knows HTTP: `http::public` serves these renderings with their headers, and the
//! embed API and badges read the same snapshot.

pub mod access;
pub mod admission;
pub mod badge;
pub mod cache;
pub mod feed;
pub mod html;
pub mod keys;
pub mod lang;
pub mod link_words;
pub mod snapshot;
