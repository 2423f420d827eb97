//! The subscribe form of a status page for people: the same subscription as the API's, with
//! its limits per client address and per email address, answered with an HTML page.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use maud::html;

use super::messages::{not_found_page, unavailable_page};
use super::pages::page_home;
use super::read::{admitted, rendered};
use super::SlugPath;
use crate::domain::DomainError;
use crate::http::custom_domains::OnCustomDomain;
use crate::http::people_page::{Brand, PeoplePage};
use crate::http::AppState;
use crate::public::link_words::link_words;

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
            Said::english(
                "Too many requests",
                "Too many subscriptions were asked for from your address or for this email. Please wait a few minutes and try again.",
            ),
            &back,
            &r.snapshot,
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
        Ok(_) => {
            let (w, lang) = link_words(&r.snapshot.summary.page.branding.language);
            subscribe_answer(
                StatusCode::OK,
                Said {
                    title: w.inbox_title,
                    text: w.inbox_text,
                    back_label: w.back,
                    lang,
                },
                &back,
                &r.snapshot,
            )
        }
        Err(DomainError::Validation { fields, form }) => {
            let why = fields
                .first()
                .map(|f| match f.field.as_str() {
                    "email" => "That is not an email address we can send to.".to_string(),
                    _ => "One of the components chosen is not on this page any more.".to_string(),
                })
                .or_else(|| form.first().cloned())
                .unwrap_or_else(|| "The form was not filled in right.".to_string());
            subscribe_answer(
                StatusCode::BAD_REQUEST,
                Said::english("Not subscribed", &why),
                &back,
                &r.snapshot,
            )
        }
        Err(DomainError::NotFound(_)) => not_found_page(),
        Err(DomainError::Conflict(ops::NO_EMAIL_CODE, _)) => subscribe_answer(
            StatusCode::CONFLICT,
            Said::english(
                "Email updates are not available",
                "This server does not send email, so it cannot take subscriptions. Follow the page's RSS or Atom feed to hear of incidents.",
            ),
            &back,
            &r.snapshot,
        ),
        Err(e) => unavailable_page(&e),
    }
}

/// What an answer says, and in which language.
struct Said<'a> {
    title: &'a str,
    text: &'a str,
    back_label: &'a str,
    lang: &'a str,
}

impl<'a> Said<'a> {
    /// Words that exist in English only.
    fn english(title: &'a str, text: &'a str) -> Said<'a> {
        Said {
            title,
            text,
            back_label: "Back to the status page",
            lang: "en",
        }
    }
}

/// The page a subscription form's answer is, in the status page's look, with a way back to it.
fn subscribe_answer(
    status: StatusCode,
    said: Said<'_>,
    back: &str,
    page: &crate::public::snapshot::Snapshot,
) -> Response {
    let p = &page.summary.page;
    PeoplePage {
        title: said.title,
        body: html! {
            p { (said.text) }
            p { a href=(back) { (said.back_label) } }
        },
        lang: said.lang,
        brand: Brand::Page {
            name: &p.name,
            url: Some(back),
            colour: p.branding.primary_color.as_deref(),
        },
    }
    .respond(status)
}
