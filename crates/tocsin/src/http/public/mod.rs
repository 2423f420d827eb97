//! The public face of status pages, no credential: the summary API under
//! `/api/v1/status-pages/{slug}` (JSON, in the API document) and the pages for people under
//! `/s/{slug}` (HTML and feeds, outside the JSON error guard: their errors are pages too).
//!
//! Every answer comes from the rendered cache (`public::cache`) with `ETag`, `Last-Modified`
//! and `Cache-Control` for CDNs and browsers; a matching `If-None-Match` is 304. Drafts,
//! unpublished pages and unknown slugs are the same 404 `STATUS_PAGE_NOT_FOUND`.
//!
//! Private pages (`access.visibility` `PASSWORD` or `EMAIL_DOMAINS`, `public::access`): every
//! answer first asks the page's gate. Without access the JSON reads and the feeds are the same
//! 404 as a draft, and the HTML page and postmortem pages are a sign-in page naming nothing of
//! the page: a password form (posted to `/s/{slug}/access`, limited per client IP, checked
//! against the argon2 hash, answered with the page's signed cookie) or how to get in with an
//! allowed email address. Answers about a private page are `Cache-Control: private, no-store`
//! with `Vary: Cookie`, so no CDN or shared cache keeps them.
//!
//! The modules, one job each: `api` (the JSON routes), `pages` (the HTML page and
//! postmortems), `sign_in` (a private page's sign-in page and password form), `subscribe`
//! (the subscribe form), `feeds` (RSS and Atom), `read` (which page a request may read),
//! `reply` (cached answers and their headers) and `messages` (the small error pages).

mod api;
mod feeds;
mod messages;
mod pages;
mod read;
mod reply;
mod sign_in;
mod subscribe;

use axum::routing::get;
use axum::Router;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::http::AppState;

pub use api::{router, CachedJson, Private, PublicIncidentPage};
pub use read::{published, readable};
pub use reply::{answer, keep_private};

/// Where the pages for people live (the guard leaves their errors as pages).
pub const PAGES_PREFIX: &str = "/s/";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlugPath {
    /// The status page's slug.
    pub slug: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PostmortemPath {
    /// The status page's slug.
    pub slug: String,
    pub postmortem_id: String,
}

/// The pages for people (outside the API document, like `/auth`).
pub fn pages_router() -> Router<AppState> {
    Router::new()
        .route("/s/{slug}", get(pages::page))
        .route("/s/{slug}/", get(pages::page))
        .route(
            "/s/{slug}/access",
            axum::routing::post(sign_in::enter_password),
        )
        .route(
            "/s/{slug}/subscribe",
            axum::routing::post(subscribe::subscribe_form),
        )
        .route("/s/{slug}/feed.rss", get(feeds::rss))
        .route("/s/{slug}/feed.atom", get(feeds::atom))
        .route(
            "/s/{slug}/postmortems/{postmortem_id}",
            get(pages::postmortem_page),
        )
}
