//! The small HTML pages that stand in for a status page when there is none to show: not
//! found, unavailable, and the message pages' headers (the people pages' CSP, no sniffing).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::domain::DomainError;

/// A page for people saying what went wrong.
pub(super) fn page_error(status: StatusCode, title: &str, text: &str) -> Response {
    let mut r = (status, crate::public::html::message(title, text)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    message_headers(&mut r);
    r
}

/// The headers of the small message pages (errors, the subscription form's answers): no
/// script, no loads, links only; never sniffed as anything else.
pub(super) fn message_headers(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(crate::http::subscribers::PERSON_PAGE_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

pub(super) fn not_found_page() -> Response {
    page_error(
        StatusCode::NOT_FOUND,
        "Status page not found",
        "There is no published status page at this address.",
    )
}

pub(super) fn unavailable_page(e: &DomainError) -> Response {
    tracing::warn!(error = %e, "a public status page could not be built");
    page_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "Status page unavailable",
        "The status page cannot be shown right now. Please try again in a moment.",
    )
}
