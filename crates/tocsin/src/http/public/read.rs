//! Which rendered page a request gets: the page published at a slug from the rendered cache,
//! and whether this request may read it (its page cookie and session handed to
//! [`crate::public::admission`]).

use std::sync::Arc;

use axum::http::HeaderMap;

use super::PostmortemPath;
use crate::domain::postmortems::{postmortem_view, Postmortem};
use crate::domain::{DomainError, Resource};
use crate::http::AppState;
use crate::public::access::Gate;
use crate::public::cache::Rendered;

pub(super) async fn rendered(
    state: &AppState,
    slug: &str,
) -> Result<Option<Arc<Rendered>>, DomainError> {
    Ok(state.status_pages().get(state.cx(), slug).await?)
}

/// The rendered page published at `slug`, or 404 `STATUS_PAGE_NOT_FOUND`, whoever asks: for
/// the embed API and badges, where a publishable key is the page owner's explicit grant to
/// read the page (private pages included). The public routes use [`readable`].
pub async fn published(state: &AppState, slug: &str) -> Result<Arc<Rendered>, DomainError> {
    rendered(state, slug)
        .await?
        .ok_or(DomainError::NotFound(Resource::StatusPage))
}

/// The rendered page published at `slug` if this request may read it; otherwise the same
/// 404 `STATUS_PAGE_NOT_FOUND` as a draft (the JSON routes').
pub async fn readable(
    state: &AppState,
    headers: &HeaderMap,
    slug: &str,
) -> Result<Arc<Rendered>, DomainError> {
    let r = published(state, slug).await?;
    if admitted(state, headers, &r.snapshot.gate).await? {
        Ok(r)
    } else {
        Err(DomainError::NotFound(Resource::StatusPage))
    }
}

pub(super) async fn published_postmortem(
    state: &AppState,
    r: Arc<Rendered>,
    p: &PostmortemPath,
) -> Result<(Arc<Rendered>, Postmortem), DomainError> {
    let row = crate::store::postmortems::published_on_page(
        state.db().reader(),
        &r.snapshot.page_id,
        &p.postmortem_id,
    )
    .await?
    .ok_or(DomainError::NotFound(Resource::Postmortem))?;
    Ok((r, postmortem_view(&row)))
}

/// Whether this request may read a page behind `gate` (the rule is
/// [`crate::public::admission`]'s; this hands it the request's page cookie and session).
pub(super) async fn admitted(
    state: &AppState,
    headers: &HeaderMap,
    gate: &Gate,
) -> Result<bool, DomainError> {
    let page_cookie = crate::http::auth::cookie(headers, &gate.cookie_name());
    let session = crate::http::auth::cookie(headers, crate::auth::SESSION_COOKIE);
    crate::public::admission::admits(
        state.cx(),
        gate,
        page_cookie,
        session,
        state.clock().now_ms(),
    )
    .await
}
