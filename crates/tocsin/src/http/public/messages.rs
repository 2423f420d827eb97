//! The small HTML pages that stand in for a status page when there is none to show: not
//! found, unavailable.

use axum::http::StatusCode;
use axum::response::Response;

use crate::domain::DomainError;
use crate::http::people_page::PeoplePage;

/// A page for people saying what went wrong (the shared layout of `http::people_page`).
pub(super) fn page_error(status: StatusCode, title: &str, text: &str) -> Response {
    PeoplePage::text(title, text).respond(status)
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
