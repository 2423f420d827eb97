//! Sign-up, sign-in, sign-out and the session read under `/auth`. These sit outside the REST
//! contract (and the OpenAPI document) but answer errors with the same envelope. The
//! operations are in `domain::users`; what stays here is HTTP's: the per-address rate limits
//! and the record of failed sign-ins (`auth::sign_in_guard`: per email and address, with a
//! per-email back-off that never holds back an address that has not failed), reading the
//! session cookie and setting or clearing it. The email verification link's pages live here
//! too (`GET /auth/verify-email` shows a button, whose `POST` verifies; errors are pages, not
//! envelopes), with `POST /auth/verify-email/resend` for the signed-in person.

use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use maud::{html, Markup};
use serde::Deserialize;

use super::extract::ApiJson;
use super::people_page::PeoplePage;
use crate::auth::{SESSION_COOKIE, SESSION_TTL_MS};
use crate::domain::email_verification::{self, LinkOutcome};
use crate::domain::users::{self, SessionAnswer, SignIn, SignUp, SignedIn};
use crate::domain::DomainError;
use crate::http::auth::{authenticate, check_origin, client_ip, session_token};
use crate::http::error::{ApiError, ApiResult};
use crate::http::AppState;

pub use crate::domain::email_verification::VERIFY_PATH;
pub use crate::domain::users::ClientMeta;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/sign-up/email", post(sign_up))
        .route("/auth/sign-in/email", post(sign_in))
        .route("/auth/sign-out", post(sign_out))
        .route("/auth/get-session", get(get_session))
        .route(VERIFY_PATH, get(show_verify_link).post(use_verify_link))
        .route("/auth/verify-email/resend", post(resend_verification))
}

impl FromRequestParts<AppState> for ClientMeta {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(ClientMeta {
            ip: client_ip(parts, state.config().trust_forwarded_for),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(512).collect()),
        })
    }
}

fn limit(r: Result<(), u64>) -> Result<(), DomainError> {
    r.map_err(|retry_after| DomainError::RateLimited { retry_after })
}

/// The session cookie's header (an empty `value` with `max_age_secs` 0 clears it).
pub(super) fn cookie(state: &AppState, value: &str, max_age_secs: i64) -> ApiResult<HeaderValue> {
    let secure = if state.config().secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age_secs}{secure}"
    ))
    .map_err(|e| DomainError::Internal(e.into()).into())
}

/// The answer with the new session's cookie.
fn signed_in(state: &AppState, answer: SignedIn, token: &str) -> ApiResult<Response> {
    let set_cookie = cookie(state, token, SESSION_TTL_MS / 1000)?;
    let mut res = Json(answer).into_response();
    res.headers_mut().insert(header::SET_COOKIE, set_cookie);
    Ok(res)
}

async fn sign_up(
    State(state): State<AppState>,
    meta: ClientMeta,
    ApiJson(body): ApiJson<SignUp>,
) -> ApiResult<Response> {
    limit(
        state
            .limits()
            .sign_up_ip
            .check(meta.ip.as_deref().unwrap_or("unknown")),
    )?;
    let (answer, token) = users::sign_up(state.cx(), state.mailer(), body, &meta).await?;
    signed_in(&state, answer, &token)
}

async fn sign_in(
    State(state): State<AppState>,
    meta: ClientMeta,
    ApiJson(body): ApiJson<SignIn>,
) -> ApiResult<Response> {
    let email = body.email.trim().to_lowercase();
    let ip = meta.ip.clone().unwrap_or_else(|| "unknown".to_string());
    limit(state.limits().sign_in_ip.check(&ip))?;
    // Counted as a failure until judged; dropped unjudged (bad input, an error), undone.
    let attempt = state
        .limits()
        .sign_in
        .begin(&email, &ip, state.clock().now_ms())
        .map_err(|retry_after| DomainError::RateLimited { retry_after })?;
    match users::sign_in(state.cx(), body, &meta).await {
        Ok((answer, token)) => {
            attempt.succeeded();
            signed_in(&state, answer, &token)
        }
        Err(e) => {
            if matches!(e, DomainError::InvalidCredentials) {
                attempt.failed(state.clock().now_ms());
            }
            Err(e.into())
        }
    }
}

async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let (mut parts, _) = axum::http::Request::new(()).into_parts();
    parts.headers = headers;
    if let Some(token) = session_token(&parts) {
        // A cookie write like any other: another site may not sign a person out.
        check_origin(&parts, &state)?;
        users::sign_out(state.cx(), token).await?;
    }
    let mut res = Json(serde_json::json!({ "success": true })).into_response();
    res.headers_mut()
        .insert(header::SET_COOKIE, cookie(&state, "", 0)?);
    Ok(res)
}

async fn get_session(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> ApiResult<Json<SessionAnswer>> {
    let (mut parts, _) = axum::http::Request::new(()).into_parts();
    parts.headers = headers;
    let token = session_token(&parts)
        .ok_or(DomainError::Unauthorized)?
        .to_string();
    // Reuse the one authentication path (expiry, sliding renewal, workspace fallback).
    let caller = authenticate(&parts, &state, true).await?;
    Ok(Json(users::session(state.cx(), &caller, &token).await?))
}

/// `POST /auth/verify-email/resend`: a new verification link to the signed-in person.
async fn resend_verification(
    State(state): State<AppState>,
    parts: Parts,
) -> ApiResult<Json<serde_json::Value>> {
    let caller = authenticate(&parts, &state, true).await?;
    email_verification::resend(state.cx(), state.mailer(), &caller).await?;
    Ok(Json(serde_json::json!({ "success": true })))
}

#[derive(Debug, Deserialize)]
struct LinkQuery {
    #[serde(default)]
    token: String,
}

/// The link's page: says which address it confirms and offers the button (a GET changes
/// nothing, since mail scanners and link previews fetch links).
async fn show_verify_link(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> Response {
    link_page(
        email_verification::check(state.cx(), &q.token).await,
        &q.token,
    )
}

/// The button: verifies the address.
async fn use_verify_link(State(state): State<AppState>, Query(q): Query<LinkQuery>) -> Response {
    link_page(
        email_verification::confirm(state.cx(), &q.token).await,
        &q.token,
    )
}

fn link_page(outcome: Result<LinkOutcome, DomainError>, token: &str) -> Response {
    match outcome {
        Ok(LinkOutcome::Pending { email }) => page(
            StatusCode::OK,
            "Confirm your email address",
            html! {
                p { "Confirm that " strong { (email) } " is your email address for Tocsin." }
                form method="post" action={ (VERIFY_PATH) "?token=" (token) } {
                    button type="submit" { "Confirm" }
                }
            },
        ),
        Ok(LinkOutcome::Verified { email }) => page(
            StatusCode::OK,
            "Email address confirmed",
            html! {
                p { strong { (email) } " is confirmed." }
                p { a href="/app/" { "Go to the dashboard" } }
            },
        ),
        Ok(LinkOutcome::Used) => page(
            StatusCode::GONE,
            "Link already used",
            html! { p { "This link was already used: a link confirms an address once. If your address is still unconfirmed, ask for a new link from the dashboard." } },
        ),
        Ok(LinkOutcome::Expired) => page(
            StatusCode::GONE,
            "Link expired",
            html! { p { "This link has expired (links work for 24 hours): sign in and ask for a new one from the dashboard." } },
        ),
        Ok(LinkOutcome::Invalid) => page(
            StatusCode::BAD_REQUEST,
            "Link not valid",
            html! { p { "This link is not valid: open it exactly as it was sent." } },
        ),
        Err(e) => {
            tracing::warn!(error = %e, "an email verification link could not be followed");
            page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                html! { p { "This could not be done just now. Try again in a moment." } },
            )
        }
    }
}

fn page(status: StatusCode, title: &str, body: Markup) -> Response {
    PeoplePage::new(title, body).respond(status)
}
