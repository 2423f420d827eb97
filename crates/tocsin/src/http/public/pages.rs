//! The HTML pages for people: a status page at `/s/{slug}` (or `/` on its custom domain) and
//! its published postmortems, or the sign-in page to a reader a private page does not admit.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::messages::{not_found_page, page_error, unavailable_page};
use super::read::{admitted, published_postmortem, rendered};
use super::reply::{answer_for, keep_private, CACHE_CONTROL};
use super::sign_in::sign_in_page;
use super::{PostmortemPath, SlugPath};
use crate::domain::DomainError;
use crate::http::AppState;

pub(super) async fn postmortem_page(
    State(state): State<AppState>,
    Path(p): Path<PostmortemPath>,
    headers: HeaderMap,
) -> Response {
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(&state, &headers, &r.snapshot.gate).await {
        Ok(true) => {}
        Ok(false) => return sign_in_page(&state, &r, &p.slug, false),
        Err(e) => return unavailable_page(&e),
    }
    let private = !r.snapshot.gate.is_public();
    match published_postmortem(&state, r, &p).await {
        Ok((r, pm)) => {
            let published = pm
                .published_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp_millis())
                .unwrap_or(0);
            let page =
                crate::public::html::postmortem(&r.snapshot, &pm.title, &pm.body_html, published);
            let mut res = page.body.into_response();
            let h = res.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            if let Ok(v) = HeaderValue::from_str(&page.csp) {
                h.insert(header::CONTENT_SECURITY_POLICY, v);
            }
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(CACHE_CONTROL),
            );
            if private {
                keep_private(&mut res);
            }
            res
        }
        Err(DomainError::NotFound(_)) => page_error(
            StatusCode::NOT_FOUND,
            "Postmortem not found",
            "There is no published postmortem at this address.",
        ),
        Err(e) => unavailable_page(&e),
    }
}

/// Where the page itself is for this request: `/` on its custom domain, else `/s/{slug}`.
pub(super) fn page_home(slug: &str, on_domain: bool) -> String {
    if on_domain {
        "/".to_string()
    } else {
        format!("/s/{slug}")
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(&state, &headers, &r.snapshot.gate).await {
        Ok(true) => answer_for(
            &r,
            &headers,
            &r.html,
            "text/html; charset=utf-8",
            &[
                (header::CONTENT_SECURITY_POLICY, r.csp.as_str()),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::REFERRER_POLICY, "strict-origin-when-cross-origin"),
            ],
        ),
        Ok(false) => sign_in_page(&state, &r, &p.slug, false),
        Err(e) => unavailable_page(&e),
    }
}
