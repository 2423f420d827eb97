//! The dashboard at `/app/`, as the embedded build serves it: `index.html` with `no-cache`
//! and a strict Content-Security-Policy (no inline script), hashed assets immutable for a
//! year, brotli or gzip as the client accepts (with `Vary`), the single-page fallback for the
//! app's own routes, and missing files as HTML 404 pages outside the JSON envelope.

use std::io::Read;

use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_SECURITY_POLICY, CONTENT_TYPE,
    LOCATION, VARY,
};
use reqwest::StatusCode;

use crate::common::{no_redirects, TestServer};
use tocsin::http::dashboard::ASSETS;

fn header(res: &reqwest::Response, name: reqwest::header::HeaderName) -> String {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// The built JavaScript entry named by index.html.
fn entry_script(html: &str) -> String {
    let at = html
        .find("src=\"/app/assets/")
        .expect("a script from /app/assets/");
    let rest = &html[at + 5..];
    rest[..rest.find('"').unwrap()].to_string()
}

#[tokio::test]
async fn index_is_no_cache_with_a_strict_policy_and_no_inline_script() {
    let srv = TestServer::start().await;
    let res = no_redirects()
        .get(srv.url("/app/"))
        .header(ACCEPT_ENCODING, "identity")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(header(&res, CONTENT_TYPE).starts_with("text/html"));
    assert_eq!(header(&res, CACHE_CONTROL), "no-cache");
    let csp = header(&res, CONTENT_SECURITY_POLICY);
    for part in [
        "default-src 'self'",
        "script-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{part} in {csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
    let html = res.text().await.unwrap();
    // Every script element loads a file: inline code would be refused by the policy.
    for chunk in html.split("<script").skip(1) {
        let tag = &chunk[..chunk.find('>').unwrap()];
        assert!(tag.contains("src="), "inline script: {tag}");
    }
    assert!(html.contains("id=\"app\""));
    srv.stop().await;
}

#[tokio::test]
async fn hashed_assets_are_immutable_and_compressed_as_the_client_accepts() {
    let srv = TestServer::start().await;
    let html = no_redirects()
        .get(srv.url("/app/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let script = entry_script(&html);
    let embedded = ASSETS
        .iter()
        .find(|a| format!("/app/{}", a.path) == script)
        .expect("the entry script is embedded");

    let plain = no_redirects()
        .get(srv.url(&script))
        .header(ACCEPT_ENCODING, "identity")
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    assert!(header(&plain, CONTENT_TYPE).starts_with("text/javascript"));
    assert_eq!(
        header(&plain, CACHE_CONTROL),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(header(&plain, CONTENT_ENCODING), "");
    assert_eq!(header(&plain, VARY), "Accept-Encoding");
    assert!(header(&plain, CONTENT_SECURITY_POLICY).contains("script-src 'self'"));
    let raw = plain.bytes().await.unwrap();
    assert_eq!(&raw[..], embedded.raw);

    let gz = no_redirects()
        .get(srv.url(&script))
        .header(ACCEPT_ENCODING, "gzip, deflate")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&gz, CONTENT_ENCODING), "gzip");
    assert_eq!(header(&gz, VARY), "Accept-Encoding");
    let body = gz.bytes().await.unwrap();
    assert!(body.len() < raw.len() / 2, "gzip shrinks the script");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, &raw[..], "the gzip variant is the same script");

    let br = no_redirects()
        .get(srv.url(&script))
        .header(ACCEPT_ENCODING, "gzip, deflate, br")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&br, CONTENT_ENCODING), "br");
    let body = br.bytes().await.unwrap();
    assert_eq!(Some(&body[..]), embedded.brotli);
    assert!(body.len() < raw.len() / 2);

    // A coding refused with q=0 is not sent.
    let refused = no_redirects()
        .get(srv.url(&script))
        .header(ACCEPT_ENCODING, "br;q=0, gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&refused, CONTENT_ENCODING), "gzip");
    srv.stop().await;
}

#[tokio::test]
async fn app_routes_fall_back_to_the_index_and_missing_files_are_html_404s() {
    let srv = TestServer::start().await;
    let index = no_redirects()
        .get(srv.url("/app/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for route in [
        "/app/monitors/01HZZZ",
        "/app/sign-in",
        "/app/oauth/consent",
        "/app/index.html",
    ] {
        let res = no_redirects().get(srv.url(route)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{route}");
        assert_eq!(header(&res, CACHE_CONTROL), "no-cache");
        assert!(header(&res, CONTENT_SECURITY_POLICY).contains("script-src 'self'"));
        assert_eq!(res.text().await.unwrap(), index, "{route} is the app");
    }
    for missing in [
        "/app/assets/index-00000000.js",
        "/app/assets/gone",
        "/app/logo.png",
    ] {
        let res = no_redirects().get(srv.url(missing)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{missing}");
        assert!(
            header(&res, CONTENT_TYPE).starts_with("text/html"),
            "{missing} is a page for people, not the JSON envelope"
        );
        assert!(res.text().await.unwrap().contains("Not found"));
    }
    // The API's own unknown paths are still the JSON envelope.
    let api = no_redirects().get(srv.url("/apps")).send().await.unwrap();
    assert_eq!(api.status(), StatusCode::NOT_FOUND);
    assert!(header(&api, CONTENT_TYPE).starts_with("application/json"));
    srv.stop().await;
}

#[tokio::test]
async fn the_root_and_bare_prefix_lead_to_the_dashboard() {
    let srv = TestServer::start().await;
    for from in ["/", "/app"] {
        let res = no_redirects().get(srv.url(from)).send().await.unwrap();
        assert!(res.status().is_redirection(), "{from}");
        assert_eq!(header(&res, LOCATION), "/app/");
    }
    srv.stop().await;
}
