//! Getting into a private page: the sign-in page shown instead of it (a password form, or how
//! to get in with an allowed email address) and the password form's post, which answers a
//! right password with the page's signed cookie. Attempts are limited per client IP.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::messages::{not_found_page, unavailable_page};
use super::pages::page_home;
use super::read::rendered;
use super::reply::keep_private;
use super::SlugPath;
use crate::http::custom_domains::OnCustomDomain;
use crate::http::people_page::{Brand, PeoplePage};
use crate::http::AppState;
use crate::public::access::COOKIE_TTL_MS;
use crate::public::cache::Rendered;
use crate::public::html::SignIn;

/// The page shown instead of a private page to someone it does not admit (401).
pub(super) fn sign_in_page(state: &AppState, r: &Rendered, slug: &str, wrong: bool) -> Response {
    let action = format!("/s/{slug}/access");
    let page_url = crate::domain::status_pages::page_url(state.cx(), slug);
    let kind = match r.snapshot.gate.password_hash() {
        Some(_) => SignIn::Password {
            action: &action,
            wrong,
        },
        None => SignIn::EmailDomains {
            sign_in_at: &page_url,
        },
    };
    let page = crate::public::html::sign_in(&kind, &r.snapshot.summary.page.branding.language);
    let mut res = (StatusCode::UNAUTHORIZED, page.body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&page.csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    keep_private(&mut res);
    res
}

/// `POST /s/{slug}/access` (the password form): a right password gets the page's cookie and
/// goes back to the page; a wrong one sees the form again. Attempts are limited per client
/// IP, and the password is checked against the argon2 hash (constant time in the hash).
pub(super) async fn enter_password(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    parts: axum::http::request::Parts,
    body: axum::body::Bytes,
) -> Response {
    let on_domain = parts.extensions.get::<OnCustomDomain>().is_some();
    let ip = crate::http::auth::client_ip(&parts, state.config().trust_forwarded_for)
        .unwrap_or_else(|| "unknown".to_string());
    if let Err(retry_after) = state.limits().page_password_ip.check(&ip) {
        // In the page's language when the page can be read (from the rendered cache).
        let language = match rendered(&state, &p.slug).await {
            Ok(Some(r)) => r.snapshot.summary.page.branding.language.clone(),
            _ => "en".to_string(),
        };
        let (t, lang) = crate::public::lang::sign_in(&language);
        let mut res = PeoplePage {
            title: t.too_many_title,
            body: maud::html! { p { (t.too_many_text) } },
            lang,
            brand: Brand::Product,
        }
        .respond(StatusCode::TOO_MANY_REQUESTS);
        if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        keep_private(&mut res);
        return res;
    }
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    let gate = &r.snapshot.gate;
    let Some(hash) = gate.password_hash() else {
        // Nothing to enter a password for: a public page, or one for signed-in people.
        return not_found_page();
    };
    let password = url::form_urlencoded::parse(&body)
        .find(|(k, _)| k == "password")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if password.is_empty() || !crate::auth::password::verify(password, Some(hash.to_string())).await
    {
        return sign_in_page(&state, &r, &p.slug, true);
    }
    let Some(token) = gate.issue(state.clock().now_ms()) else {
        return not_found_page();
    };
    let secure = if state.config().secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    let set_cookie = format!(
        "{}={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age={}{secure}",
        gate.cookie_name(),
        COOKIE_TTL_MS / 1000
    );
    let mut res = StatusCode::SEE_OTHER.into_response();
    let h = res.headers_mut();
    if let (Ok(c), Ok(l)) = (
        HeaderValue::from_str(&set_cookie),
        HeaderValue::from_str(&page_home(&p.slug, on_domain)),
    ) {
        h.insert(header::SET_COOKIE, c);
        h.insert(header::LOCATION, l);
    }
    keep_private(&mut res);
    res
}
