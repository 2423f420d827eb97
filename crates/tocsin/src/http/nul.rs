//! Keeps the NUL character (U+0000) out of every request before a handler sees it.
//! PostgreSQL cannot hold a NUL in text (any query binding one fails), SQLite truncates at it
//! in places, and no identifier, name or parameter of this API has a use for it, so both
//! backends refuse it the same way at the edge:
//! - in the path (`/status-pages/a%00b/summary`) the NUL becomes U+FFFD before routing: no
//!   stored id, slug or token contains U+FFFD, so the route answers its own not-found (404
//!   `STATUS_PAGE_NOT_FOUND`, `PUSH_TOKEN_NOT_FOUND` ...) as for any unknown id;
//! - in the query string, or in an `application/x-www-form-urlencoded` body, it is 400
//!   `VALIDATION_ERROR` naming the parameter;
//! - in a JSON body, [`crate::http::extract::parse_json`] names the field.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::extract::{body_error, nul_refused, BODY_LIMIT};

/// The middleware (see the module documentation).
pub async fn refuse(req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    if let Some(uri) = without_nul_in_path(&parts.uri) {
        parts.uri = uri;
    }
    if let Some(query) = parts.uri.query() {
        if let Some(field) = nul_in_form(query.as_bytes()) {
            return refused(parts.uri.path(), field);
        }
    }
    let is_form = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !is_form {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let bytes: Bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(e) => return body_error(&e).into_response(),
    };
    if let Some(field) = nul_in_form(&bytes) {
        return refused(parts.uri.path(), field);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The URI with each `%00` of its path written as U+FFFD (`%EF%BF%BD`), or `None` when its
/// path has none. (A raw NUL byte never reaches here: the HTTP parser refuses it.)
/// The refusal in the form its route answers: the envelope naming the field for the API, a
/// page for the pages people open (no link of ours carries a NUL, so it was altered).
fn refused(path: &str, field: Option<String>) -> Response {
    if !crate::http::for_people(path) {
        return nul_refused(field).into_response();
    }
    crate::http::people_page::PeoplePage::text(
        "This link is not valid",
        "It holds a character no link of ours has. Open it exactly as it was sent.",
    )
    .respond(axum::http::StatusCode::BAD_REQUEST)
}

fn without_nul_in_path(uri: &Uri) -> Option<Uri> {
    let path = uri.path();
    if !path.contains("%00") {
        return None;
    }
    let mut text = path.replace("%00", "%EF%BF%BD");
    if let Some(q) = uri.query() {
        text.push('?');
        text.push_str(q);
    }
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(text.parse().ok()?);
    Uri::from_parts(parts).ok()
}

/// In form encoding (`a=1&b=2`), the name of the first parameter whose name or value holds a
/// NUL (`Some(None)` when the name is nothing but NULs), or `None` without one.
fn nul_in_form(encoded: &[u8]) -> Option<Option<String>> {
    if !encoded.contains(&0) && !encoded.windows(3).any(|w| w == b"%00") {
        return None;
    }
    form_urlencoded::parse(encoded)
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        .map(|(k, _)| Some(k.replace('\0', "")).filter(|k| !k.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_in_the_path_becomes_a_replacement_character() {
        let uri: Uri = "/status-pages/a%00b/summary?x=1"
            .parse()
            .unwrap_or_default();
        let fixed = without_nul_in_path(&uri).map(|u| u.to_string());
        assert_eq!(
            fixed.as_deref(),
            Some("/status-pages/a%EF%BF%BDb/summary?x=1")
        );
        // `%2500` is the text "%00", not a NUL.
        let uri: Uri = "/s/a%2500b".parse().unwrap_or_default();
        assert!(without_nul_in_path(&uri).is_none());
    }

    #[test]
    fn a_nul_in_a_form_names_its_parameter() {
        assert_eq!(
            nul_in_form(b"limit=5&monitorId=a%00b"),
            Some(Some("monitorId".into()))
        );
        assert_eq!(nul_in_form(b"a%00=1"), Some(Some("a".into())));
        assert_eq!(nul_in_form(b"%00=1"), Some(None));
        assert_eq!(nul_in_form(b"email=a\0b"), Some(Some("email".into())));
        assert_eq!(nul_in_form(b"a=%2500"), None);
        assert_eq!(nul_in_form(b"a=1"), None);
    }
}
