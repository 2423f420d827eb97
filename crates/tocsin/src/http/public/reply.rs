//! How a rendered page is answered: its cached body (gzip when the client takes it) with
//! `ETag`, `Last-Modified` and `Cache-Control`, 304 when the client holds it already, and the
//! headers that keep a private page's answers out of shared caches.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::public::cache::{Body, Rendered};

/// Browsers and CDNs may keep an answer this long; the server's own copy follows changes
/// within a second.
pub(super) const CACHE_CONTROL: &str = "public, max-age=5";

/// What a private page's answers say to caches: nobody but the reader may keep them.
const PRIVATE_CACHE_CONTROL: &str = "private, no-store";

/// Marks an answer about a private page as nobody's to keep but its reader's.
pub fn keep_private(res: &mut Response) {
    let h = res.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(PRIVATE_CACHE_CONTROL),
    );
    h.insert(
        header::VARY,
        HeaderValue::from_static("Accept-Encoding, Cookie"),
    );
}

/// [`answer`] for one page: private pages' answers are marked so no shared cache keeps them.
pub(super) fn answer_for(
    r: &Rendered,
    headers: &HeaderMap,
    body: &Body,
    content_type: &'static str,
    extra: &[(header::HeaderName, &str)],
) -> Response {
    let mut res = answer(headers, body, content_type, &r.last_modified, extra);
    if !r.snapshot.gate.is_public() {
        keep_private(&mut res);
    }
    res
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|e| e.trim().starts_with("gzip")))
}

/// A cached body with its validators; 304 when the client holds it already.
pub fn answer(
    headers: &HeaderMap,
    body: &Body,
    content_type: &'static str,
    last_modified: &str,
    extra: &[(header::HeaderName, &str)],
) -> Response {
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == body.etag || t.trim() == "*")
        });
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else if accepts_gzip(headers) {
        let mut r = body.gzip.clone().into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        body.bytes.clone().into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    for (name, value) in [
        (header::ETAG, body.etag.as_str()),
        (header::LAST_MODIFIED, last_modified),
    ]
    .into_iter()
    .chain(extra.iter().map(|(n, v)| (n.clone(), *v)))
    {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    }
    response
}
