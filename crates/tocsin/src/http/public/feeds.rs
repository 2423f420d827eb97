//! A status page's RSS and Atom feeds for people; a private page's feeds are 404 to a reader
//! it does not admit.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::messages::{not_found_page, unavailable_page};
use super::read::{admitted, rendered};
use super::reply::answer_for;
use super::SlugPath;
use crate::http::AppState;
use crate::public::cache::{Body, Rendered};

/// A feed of a page this request may read; a private page's feeds are 404 without access.
async fn feed(
    state: &AppState,
    slug: &str,
    headers: &HeaderMap,
    pick: fn(&Rendered) -> &Body,
    content_type: &'static str,
) -> Response {
    let r = match rendered(state, slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(state, headers, &r.snapshot.gate).await {
        Ok(true) => answer_for(&r, headers, pick(&r), content_type, &[]),
        Ok(false) => not_found_page(),
        Err(e) => unavailable_page(&e),
    }
}

pub(super) async fn rss(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    feed(
        &state,
        &p.slug,
        &headers,
        |r| &r.rss,
        "application/rss+xml; charset=utf-8",
    )
    .await
}

pub(super) async fn atom(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    feed(
        &state,
        &p.slug,
        &headers,
        |r| &r.atom,
        "application/atom+xml; charset=utf-8",
    )
    .await
}
