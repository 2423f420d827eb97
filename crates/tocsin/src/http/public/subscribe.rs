//! The subscribe form of a status page for people: the same subscription as the API's, with
//! its limits per client address and per email address, answered with an HTML page.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::messages::{message_headers, not_found_page, unavailable_page};
use super::pages::page_home;
use super::read::{admitted, rendered};
use super::SlugPath;
use crate::domain::DomainError;
use crate::http::custom_domains::OnCustomDomain;
use crate::http::AppState;

/// `POST /s/{slug}/subscribe` (the page's email form, `email` and any number of `component`):
/// the same subscription as `POST /api/v1/status-pages/{slug}/subscribers`, with its limits
/// per client address and per email address, answered with an HTML page. The answer is the
/// same whether or not the address was subscribed already; the email's link confirms.
pub(super) async fn subscribe_form(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    parts: axum::http::request::Parts,
    body: axum::body::Bytes,
) -> Response {
    use crate::domain::status_pages::subscribers::{self as ops, Subscribe};
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(&state, &parts.headers, &r.snapshot.gate).await {
        Ok(true) => {}
        Ok(false) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    }
    let mut email = None;
    let mut components = Vec::new();
    for (k, v) in url::form_urlencoded::parse(&body) {
        match k.as_ref() {
            "email" if email.is_none() => email = Some(v.into_owned()),
            "component" => components.push(v.into_owned()),
            _ => {}
        }
    }
    let email = email.unwrap_or_default();
    let ip = crate::http::auth::client_ip(&parts, state.config().trust_forwarded_for);
    let limited = ip
        .as_deref()
        .map(|ip| state.limits().subscribe_ip.check(ip))
        .unwrap_or(Ok(()))
        .and_then(|_| state.limits().subscribe_email.check(&ops::mailbox(&email)));
    let back = page_home(&p.slug, parts.extensions.get::<OnCustomDomain>().is_some());
    if let Err(retry_after) = limited {
        let mut res = subscribe_answer(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            "Too many subscriptions were asked for from your address or for this email. Please wait a few minutes and try again.",
            &back,
        );
        if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return res;
    }
    let input = Subscribe {
        email,
        component_ids: (!components.is_empty()).then_some(components),
    };
    match ops::subscribe(state.cx(), &p.slug, input).await {
        Ok(_) => subscribe_answer(
            StatusCode::OK,
            "Check your inbox",
            "If this address can receive updates, an email with a link to confirm is on its way. Updates start once you follow it.",
            &back,
        ),
        Err(DomainError::Validation { fields, form }) => {
            let why = fields
                .first()
                .map(|f| match f.field.as_str() {
                    "email" => "That is not an email address we can send to.".to_string(),
                    _ => "One of the components chosen is not on this page any more.".to_string(),
                })
                .or_else(|| form.first().cloned())
                .unwrap_or_else(|| "The form was not filled in right.".to_string());
            subscribe_answer(StatusCode::BAD_REQUEST, "Not subscribed", &why, &back)
        }
        Err(DomainError::NotFound(_)) => not_found_page(),
        Err(DomainError::Conflict(ops::NO_EMAIL_CODE, _)) => subscribe_answer(
            StatusCode::CONFLICT,
            "Email updates are not available",
            "This server does not send email, so it cannot take subscriptions. Follow the page's RSS or Atom feed to hear of incidents.",
            &back,
        ),
        Err(e) => unavailable_page(&e),
    }
}

/// The page a subscription form's answer is, with a way back to the status page.
fn subscribe_answer(status: StatusCode, title: &str, text: &str, back: &str) -> Response {
    let mut r = (
        status,
        crate::public::html::message_with_link(title, text, back, "Back to the status page"),
    )
        .into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    message_headers(&mut r);
    r
}
