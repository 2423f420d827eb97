//! The dashboard at `/app/`: the browser app built from `web/` (committed in `web/dist/`) and
//! embedded in the binary by the build script, served with no Node and no files on disk.
//!
//! - Hashed assets (`/app/assets/...`) are immutable for a year; `index.html` is `no-cache`,
//!   so a new binary's app is picked up on the next load.
//! - Every answer carries a strict Content-Security-Policy (no inline script, `connect-src
//!   'self'`): the app talks to the REST API and the event stream on this origin only.
//! - The build precompresses text assets; the variant the client accepts (brotli, then gzip)
//!   is served with `Vary: Accept-Encoding`.
//! - Unknown paths without a file extension are the app's own routes (`/app/monitors/...`):
//!   they get `index.html` and the app routes in the browser. A missing file is a small HTML
//!   404 page; these are pages for people, outside the JSON error envelope.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// Where the dashboard lives (the error guard leaves its errors as pages).
pub const PREFIX: &str = "/app";
/// Everything under the dashboard.
pub const ASSET_PREFIX: &str = "/app/";

/// One embedded file of `web/dist/` and its precompressed variants.
pub struct DashboardAsset {
    pub path: &'static str,
    pub raw: &'static [u8],
    pub gzip: Option<&'static [u8]>,
    pub brotli: Option<&'static [u8]>,
}

/// Every file of `web/dist/`, written by `build.rs`.
pub static ASSETS: &[DashboardAsset] = include!(concat!(env!("OUT_DIR"), "/dashboard_assets.rs"));

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; \
frame-ancestors 'none'";

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `/app/` and everything under it.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/app", get(|| async { Redirect::permanent("/app/") }))
        .route("/app/", get(|headers: HeaderMap| async move { serve("", &headers) }))
        .route(
            "/app/{*path}",
            get(
                |axum::extract::Path(path): axum::extract::Path<String>, headers: HeaderMap| async move {
                    serve(&path, &headers)
                },
            ),
        )
}

fn find(path: &str) -> Option<&'static DashboardAsset> {
    ASSETS.iter().find(|a| a.path == path)
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    if path != "index.html" {
        if let Some(asset) = find(path) {
            return file(asset, headers, IMMUTABLE);
        }
    }
    // A path naming a file (it has an extension, or is under the hashed asset folder) that
    // the build did not produce is a 404, never the app: a stale hashed name must not be
    // cached as HTML.
    let last = path.rsplit('/').next().unwrap_or("");
    if path != "index.html" && (path.starts_with("assets/") || last.contains('.')) {
        return not_found();
    }
    match find("index.html") {
        Some(index) => file(index, headers, "no-cache"),
        None => not_found(),
    }
}

fn file(asset: &'static DashboardAsset, headers: &HeaderMap, cache: &'static str) -> Response {
    let accepted = accepted_encodings(headers);
    let (body, encoding) = match (asset.brotli, asset.gzip) {
        (Some(br), _) if accepted.brotli => (br, Some("br")),
        (_, Some(gz)) if accepted.gzip => (gz, Some("gzip")),
        _ => (asset.raw, None),
    };
    let mut res = (StatusCode::OK, body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(asset.path)),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Some(encoding) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    if asset.gzip.is_some() || asset.brotli.is_some() {
        h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    security_headers(h);
    res
}

fn not_found() -> Response {
    let mut res = (
        StatusCode::NOT_FOUND,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Not found</title></head>\
<body><h1>Not found</h1><p>This file is not part of the dashboard. <a href=\"/app/\">Open the dashboard</a>.</p></body></html>",
    )
        .into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(h);
    res
}

fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
}

#[derive(Default, Debug, PartialEq)]
struct Accepted {
    brotli: bool,
    gzip: bool,
}

/// The codings of `Accept-Encoding` we can serve; a coding with `q=0` is refused.
fn accepted_encodings(headers: &HeaderMap) -> Accepted {
    let mut accepted = Accepted::default();
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            match coding.as_str() {
                "br" => accepted.brotli = true,
                "gzip" => accepted.gzip = true,
                "*" => {
                    accepted.brotli = true;
                    accepted.gzip = true;
                }
                _ => {}
            }
        }
    }
    accepted
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
        );
        h
    }

    #[test]
    fn accept_encoding_honours_q_zero_and_wildcards() {
        assert_eq!(
            accepted_encodings(&with("gzip, deflate, br")),
            Accepted {
                brotli: true,
                gzip: true
            }
        );
        assert_eq!(
            accepted_encodings(&with("br;q=0, gzip;q=0.5")),
            Accepted {
                brotli: false,
                gzip: true
            }
        );
        assert_eq!(
            accepted_encodings(&with("*")),
            Accepted {
                brotli: true,
                gzip: true
            }
        );
        assert_eq!(accepted_encodings(&HeaderMap::new()), Accepted::default());
    }
}
