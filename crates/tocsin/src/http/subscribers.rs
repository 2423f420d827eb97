//! HTTP adapter for status page subscribers (rules in `domain::status_pages::subscribers`):
//! the public subscribe route (JSON, rate limited per client address and per email address),
//! the verify and unsubscribe links, and the admin list and removal.
//!
//! The two links are followed by people from an email, so they answer small HTML pages, errors
//! included (an invalid or expired link is a page saying so, not the JSON envelope: the guard
//! in `super` leaves [`LINKS_PREFIX`] alone); the API document describes them as `text/html`.
//! `GET .../verify` and `GET .../unsubscribe` only show a button, whose `POST` confirms or
//! unsubscribes, so a link preview or a mail scanner fetching the link cannot subscribe or
//! unsubscribe anyone; mail clients' RFC 8058 one-click unsubscribe is that same `POST` (its
//! `List-Unsubscribe=One-Click` body is not needed). The pages wear the status page's look
//! through the shared layout (`super::people_page`: its CSP, no script, forms to this origin).

use aide::axum::routing::{delete_with, get_with, post_with};
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as OaResponse, SchemaObject};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use maud::{html, Markup};
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{Accepted, ApiJson, ApiQuery, NoContent};
use crate::alerting::subscriber_mail::{UNSUBSCRIBE_PATH, VERIFY_PATH};
use crate::auth::caps;
use crate::domain::pagination::PageParams;
use crate::domain::status_pages::subscribers::{
    self as ops, LinkOutcome, PageLook, Subscribe, SubscribeAccepted, Subscriber, SubscriberPage,
    SubscriberPath,
};
use crate::domain::status_pages::PagePath;
use crate::domain::DomainError;
use crate::http::auth::{client_ip, Auth};
use crate::http::error::{ApiError, ApiResult, ErrorBody};
use crate::http::people_page::{Brand, PeoplePage};
use crate::http::public::SlugPath;
use crate::http::AppState;
use crate::public::link_words::link_words;

const TAG: &str = "Subscribers";

/// Where the link pages live (their errors are pages too).
pub const LINKS_PREFIX: &str = "/api/v1/subscribers/";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/api/v1/status-pages/{slug}/subscribers",
            post_with(subscribe, |op| {
                op.id("subscribeToStatusPage")
                    .tag(TAG)
                    .summary("Subscribe an email address to a published status page's incident news, for the whole page or chosen components; a confirmation email follows (no credential)")
                    .description("Always 202 with the same body for a well-formed request, whether or not the address is already subscribed: nobody can learn it from the answer. A new address (or one that never confirmed, or unsubscribed) is sent an email whose link (`GET /api/v1/subscribers/verify`) opens a page whose button (`POST` to the same address) confirms it; nothing else is sent until then. An active subscriber is left as it is. A malformed address is 400 `VALIDATION_ERROR` on `email`, an id that is not a component of the page on `componentIds.<i>`; an unpublished page or unknown slug is 404 `STATUS_PAGE_NOT_FOUND`, and so is a private page (`PASSWORD` or `EMAIL_DOMAINS`) asked without access (its page cookie, or the session of a person it admits): the same answer as an unknown slug. Requests are limited per client address (a minute's budget) and per email address (an hour's, across pages), the address counted as its mailbox (lowercased, without a `+tag` or the quotes of a quoted local part): over either, 429 `RATE_LIMITED` with `Retry-After`. One mailbox is sent at most `rate_limits.subscribe_confirmations_per_mailbox_day` confirmation emails a day (default 3), across pages: past that the answer is the same 202 and no email is sent.")
                    .response_with::<409, Json<ErrorBody>, _>(|r| {
                        r.description("The server has no SMTP relay (`--smtp-url`), so it sends no confirmation and takes no subscription (`SMTP_NOT_CONFIGURED`); checked after the page and the input, so a bad address or unknown page still answers 400 or 404")
                    })
                    .response_with::<429, Json<ErrorBody>, _>(|r| {
                        r.description("Over the per-address or per-email budget (`RATE_LIMITED`, with `Retry-After`)")
                    })
            }),
        )
        .api_route(
            "/api/v1/subscribers/verify",
            get_with(show_verify, |op| {
                op.id("showVerifySubscriber")
                    .tag(TAG)
                    .summary("The link of the confirmation email: shows a page with a button that confirms the subscription (GET changes nothing, so mail scanners following links confirm nothing); answers HTML (no credential)")
                    .description("For people following the link: every answer is a small HTML page, errors included. 200: the confirmation page (or, already confirmed, a page saying so). 400: not a link this server made, or its subscriber was deleted. 409: the subscription was ended since. 410: the link expired (links work for 7 days; subscribe again for a new one).")
            })
            .post_with(verify, |op| {
                op.id("verifySubscriber")
                    .tag(TAG)
                    .summary("Confirm a subscription: the button of the confirmation page; any body is ignored; answers HTML (no credential)")
                    .description("200: confirmed (again: confirming twice is fine). 400, 409 and 410 as for GET.")
            }),
        )
        .api_route(
            "/api/v1/subscribers/unsubscribe",
            get_with(show_unsubscribe, |op| {
                op.id("showUnsubscribe")
                    .tag(TAG)
                    .summary("The unsubscribe link of every subscriber email: shows a page with a button that unsubscribes (GET changes nothing); answers HTML (no credential)")
                    .description("200: the confirmation page (or, already unsubscribed, a page saying so). 400: not a link this server made, or its subscriber was deleted. 410: the link expired (each email carries a fresh link, valid for a year).")
            })
            .post_with(unsubscribe, |op| {
                op.id("unsubscribe")
                    .tag(TAG)
                    .summary("Unsubscribe: the page's button, and RFC 8058 one-click unsubscribe from mail clients (`List-Unsubscribe-Post`); any body is ignored; answers HTML (no credential)")
                    .description("200: unsubscribed (again: unsubscribing twice is fine); email already queued for the subscriber is not sent. 400 and 410 as for GET.")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/subscribers",
            get_with(list, |op| {
                op.id("listStatusPageSubscribers")
                    .tag(TAG)
                    .summary("A status page's subscribers, oldest first, in cursor pages, each with whether it is verified and its state (`status_pages:read`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/subscribers/{subscriber_id}/readmit",
            post_with(readmit, |op| {
                op.id("readmitStatusPageSubscriber")
                    .tag(TAG)
                    .summary("Re-admit a suspended subscriber: it is sent the page's news again (`status_pages:write`)")
                    .description("A page that turns private (`access.visibility` becomes `PASSWORD` or `EMAIL_DOMAINS`), or a private page whose password or allowed domains change, suspends all its subscribers (`state` `SUSPENDED`, `suspendedAt` set): they are sent nothing, not even email already queued, until an admin re-admits each one here, or someone who may read the page subscribes the address again (which asks it to confirm). Idempotent; answers the subscriber. Audited as `subscriber.readmit`.")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/subscribers/{subscriber_id}",
            delete_with(delete, |op| {
                op.id("deleteStatusPageSubscriber")
                    .tag(TAG)
                    .summary("Remove a subscriber and its email history; nothing more is sent to it (`status_pages:write`)")
            }),
        )
}

/// The per-client-address limit of subscription requests, checked before the body is read.
pub struct SubscribeBudget;

impl FromRequestParts<AppState> for SubscribeBudget {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(ip) = client_ip(parts, state.config().trust_forwarded_for) {
            state
                .limits()
                .subscribe_ip
                .check(&ip)
                .map_err(|retry_after| DomainError::RateLimited { retry_after })?;
        }
        Ok(SubscribeBudget)
    }
}

impl aide::OperationInput for SubscribeBudget {}

async fn subscribe(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
    _budget: SubscribeBudget,
    ApiJson(input): ApiJson<Subscribe>,
) -> ApiResult<Accepted<SubscribeAccepted>> {
    // A private page read without access is an unknown slug here too.
    crate::http::public::readable(&state, &headers, &p.slug).await?;
    state
        .limits()
        .subscribe_email
        .check(&ops::mailbox(&input.email))
        .map_err(|retry_after| DomainError::RateLimited { retry_after })?;
    Ok(Accepted(ops::subscribe(state.cx(), &p.slug, input).await?))
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesRead>,
    Path(p): Path<PagePath>,
    ApiQuery(q): ApiQuery<PageParams>,
) -> ApiResult<Json<SubscriberPage>> {
    Ok(Json(ops::list(state.cx(), &caller, &p.page_id, &q).await?))
}

async fn readmit(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<SubscriberPath>,
) -> ApiResult<Json<Subscriber>> {
    Ok(Json(ops::readmit(state.cx(), &caller, &p).await?))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<SubscriberPath>,
) -> ApiResult<NoContent> {
    ops::delete(state.cx(), &caller, &p).await?;
    Ok(NoContent)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LinkQuery {
    /// The token of the link, as sent in the email.
    #[serde(default)]
    pub token: String,
}

async fn show_verify(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> PersonPage {
    outcome_page(
        ops::verify_link(state.cx(), &q.token, false).await,
        &q.token,
    )
}

async fn verify(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> PersonPage {
    outcome_page(ops::verify_link(state.cx(), &q.token, true).await, &q.token)
}

async fn show_unsubscribe(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> PersonPage {
    outcome_page(
        ops::unsubscribe_link(state.cx(), &q.token, false).await,
        &q.token,
    )
}

async fn unsubscribe(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> PersonPage {
    outcome_page(
        ops::unsubscribe_link(state.cx(), &q.token, true).await,
        &q.token,
    )
}

/// A page for a person who followed a link (the shared layout of `super::people_page`).
pub struct PersonPage(Response);

impl IntoResponse for PersonPage {
    fn into_response(self) -> Response {
        self.0
    }
}

fn html_response(description: &str) -> OaResponse {
    OaResponse {
        description: description.into(),
        content: [(
            "text/html".to_string(),
            MediaType {
                schema: Some(SchemaObject {
                    json_schema: schemars::json_schema!({"type": "string"}),
                    example: None,
                    external_docs: None,
                }),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    }
}

impl aide::OperationOutput for PersonPage {
    type Inner = String;

    fn operation_response(_ctx: &mut GenContext, _op: &mut Operation) -> Option<OaResponse> {
        Some(html_response("An HTML page saying what the link did"))
    }

    fn inferred_responses(
        _ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![
            (
                Some(200),
                html_response("An HTML page saying what the link did"),
            ),
            (
                Some(400),
                html_response("An HTML page: the link is not valid"),
            ),
            (
                Some(409),
                html_response("An HTML page: the subscription was ended since"),
            ),
            (Some(410), html_response("An HTML page: the link expired")),
            (
                Some(503),
                html_response("An HTML page: try again in a moment"),
            ),
        ]
    }
}

/// A page in the look of the status page the link belongs to, in its language (`lang`).
fn branded(
    status: StatusCode,
    title: &str,
    body: Markup,
    look: &PageLook,
    lang: &str,
) -> PersonPage {
    let page = PeoplePage {
        title,
        body,
        lang,
        brand: Brand::Page {
            name: &look.name,
            url: Some(&look.url),
            colour: look.colour.as_deref(),
        },
    };
    PersonPage(page.respond(status))
}

/// A page about a link that names no page we know: the product's look, in English.
fn plain(status: StatusCode, title: &str, text: &str) -> PersonPage {
    PersonPage(PeoplePage::text(title, text).respond(status))
}

fn outcome_page(outcome: Result<LinkOutcome, DomainError>, token: &str) -> PersonPage {
    let page = match &outcome {
        Ok(LinkOutcome::Verified { page })
        | Ok(LinkOutcome::ConfirmVerify { page })
        | Ok(LinkOutcome::ConfirmUnsubscribe { page })
        | Ok(LinkOutcome::Unsubscribed { page })
        | Ok(LinkOutcome::NotActive { page }) => page.clone(),
        Ok(LinkOutcome::Expired) => {
            return plain(
                StatusCode::GONE,
                "Link expired",
                "This link has expired. Subscribe again on the status page for a new confirmation link, or use the unsubscribe link of a more recent email.",
            )
        }
        Ok(LinkOutcome::Invalid) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "Link not valid",
                "This link is not valid: open it exactly as it was sent.",
            )
        }
        Err(e) => {
            tracing::warn!(error = %e, "a subscriber link could not be followed");
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "This could not be done just now. Try again in a moment.",
            );
        }
    };
    let (w, lang) = link_words(&page.language);
    let name = &page.name;
    let (status, title, body) = match &outcome {
        Ok(LinkOutcome::Verified { .. }) => (
            StatusCode::OK,
            w.confirmed_title,
            html! {
                p { (w.confirmed_before) a href=(page.url) { (name) } (w.confirmed_after) }
                p.fine { (w.confirmed_fine) }
            },
        ),
        Ok(LinkOutcome::ConfirmVerify { .. }) => (
            StatusCode::OK,
            w.confirm_title,
            html! {
                p { (w.confirm_before) strong { (name) } (w.confirm_after) }
                form method="post" action={ (VERIFY_PATH) "?token=" (token) } {
                    button type="submit" { (w.confirm_button) }
                }
            },
        ),
        Ok(LinkOutcome::ConfirmUnsubscribe { .. }) => (
            StatusCode::OK,
            w.leave_title,
            html! {
                p { (w.leave_before) strong { (name) } (w.leave_after) }
                form method="post" action={ (UNSUBSCRIBE_PATH) "?token=" (token) } {
                    button type="submit" { (w.leave_button) }
                }
            },
        ),
        Ok(LinkOutcome::Unsubscribed { .. }) => (
            StatusCode::OK,
            w.left_title,
            html! { p { (w.left_before) strong { (name) } (w.left_after) } },
        ),
        _ => (
            StatusCode::CONFLICT,
            w.ended_title,
            html! { p { (w.ended_text) } },
        ),
    };
    branded(status, title, body, &page, lang)
}
