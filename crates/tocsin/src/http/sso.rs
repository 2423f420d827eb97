//! Single sign-on's edge under `/auth/sso` (outside the REST contract, like the other `/auth`
//! routes): the provider list for the sign-in page, the start that sends the browser to the
//! provider with the flow cookie, and the callback that signs the person in and sends them to
//! where they were going. Start and callback are pages for people: every failure is an HTML
//! page saying what happened and what to do (400 or 401; 404 for a provider that is not
//! configured), never the JSON envelope, never a session. The flow is `auth::sso`'s; what an
//! identity becomes is `domain::sso`'s.

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use maud::html;
use serde::Serialize;

use super::auth_routes::{cookie as session_cookie, ClientMeta};
use super::next::local_path;
use super::people_page::PeoplePage;
use crate::auth::sso::{SsoError, FLOW_COOKIE};
use crate::auth::SESSION_TTL_MS;
use crate::domain::sso::{self as sso_ops, Refusal};
use crate::http::AppState;

/// Every path here starts so; all but [`PROVIDERS_PATH`] are pages for people.
pub const PREFIX: &str = "/auth/sso/";
pub const PROVIDERS_PATH: &str = "/auth/sso/providers";

/// Where a person goes when `next` is missing or leads off this server.
const DEFAULT_NEXT: &str = "/app/";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(PROVIDERS_PATH, get(providers))
        .route("/auth/sso/{id}/start", get(start))
        .route("/auth/sso/{id}/callback", get(callback))
}

#[derive(Serialize)]
struct ProviderView<'a> {
    id: &'a str,
    name: &'a str,
}

/// `GET /auth/sso/providers`: `[{"id", "name"}]`, no credential needed (the sign-in page
/// shows one button per provider).
async fn providers(State(state): State<AppState>) -> Response {
    let list: Vec<ProviderView> = state
        .sso()
        .providers()
        .map(|p| ProviderView {
            id: &p.id,
            name: &p.name,
        })
        .collect();
    Json(list).into_response()
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn flow_cookie(state: &AppState, id: &str, value: &str, max_age_secs: i64) -> Option<HeaderValue> {
    let secure = if state.config().secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    // Lax: the callback is a top-level navigation from the provider's site.
    HeaderValue::from_str(&format!(
        "{FLOW_COOKIE}={value}; HttpOnly; SameSite=Lax; Path={PREFIX}{id}/; Max-Age={max_age_secs}{secure}"
    ))
    .ok()
}

fn redirect(to: &str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `GET /auth/sso/{id}/start?next=`: 302 to the provider, with the flow cookie.
async fn start(
    State(state): State<AppState>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let next = query_param(query.as_deref(), "next")
        .and_then(|n| local_path(&n, &state.config().public_url))
        .unwrap_or_else(|| DEFAULT_NEXT.to_string());
    match state.sso().start(state.cx(), &id, next).await {
        Ok(started) => {
            let mut r = redirect(&started.authorize_url);
            let max_age = crate::auth::sso::FLOW_TTL_SECS;
            if let Some(c) = flow_cookie(&state, &id, &started.cookie, max_age) {
                r.headers_mut().append(header::SET_COOKIE, c);
            }
            r
        }
        Err(e) => failure(&state, &id, Failure::Flow(e)),
    }
}

/// `GET /auth/sso/{id}/callback?code=&state=`: the provider's answer.
async fn callback(
    State(state): State<AppState>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    meta: ClientMeta,
) -> Response {
    let q = query.as_deref();
    let mut res = finish(&state, &id, q, &headers, &meta).await;
    // The flow is over either way: a new attempt starts afresh.
    if let Some(c) = flow_cookie(&state, &id, "", 0) {
        res.headers_mut().append(header::SET_COOKIE, c);
    }
    res
}

async fn finish(
    state: &AppState,
    id: &str,
    q: Option<&str>,
    headers: &HeaderMap,
    meta: &ClientMeta,
) -> Response {
    let Some(provider) = state.sso().provider(id).cloned() else {
        return failure(
            state,
            id,
            Failure::Flow(SsoError::UnknownProvider(id.into())),
        );
    };
    if let Some(error) = query_param(q, "error") {
        let description = query_param(q, "error_description").unwrap_or_default();
        return failure(
            state,
            id,
            Failure::Flow(SsoError::Refused { error, description }),
        );
    }
    let (Some(code), Some(flow_state)) = (query_param(q, "code"), query_param(q, "state")) else {
        return failure(state, id, Failure::Flow(SsoError::NoFlow));
    };
    let finished = match state
        .sso()
        .finish(
            state.cx(),
            id,
            crate::http::auth::cookie(headers, FLOW_COOKIE),
            &flow_state,
            &code,
        )
        .await
    {
        Ok(f) => f,
        Err(e) => return failure(state, id, Failure::Flow(e)),
    };
    let signed_in = match sso_ops::sign_in(state.cx(), &provider, &finished.identity, meta).await {
        Ok(s) => s,
        Err(e) => return failure(state, id, Failure::Refused(e)),
    };
    tracing::info!(
        provider = id,
        user_id = %signed_in.user_id,
        found = ?signed_in.found,
        "single sign-on"
    );
    let mut r = redirect(&finished.next);
    match session_cookie(state, &signed_in.token, SESSION_TTL_MS / 1000) {
        Ok(c) => {
            r.headers_mut().append(header::SET_COOKIE, c);
            r
        }
        Err(_) => failure(
            state,
            id,
            Failure::Flow(SsoError::Unreachable("the session cookie".into())),
        ),
    }
}

enum Failure {
    Flow(SsoError),
    Refused(Refusal),
}

/// The page for a sign-in that did not happen.
fn failure(state: &AppState, id: &str, f: Failure) -> Response {
    let name = state
        .sso()
        .provider(id)
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "The identity provider".into());
    let again = format!("{PREFIX}{id}/start");
    let reason = match &f {
        Failure::Flow(e) => e.to_string(),
        Failure::Refused(e) => e.to_string(),
    };
    tracing::warn!(provider = id, reason = %reason, "single sign-on refused");
    // What the provider or the checks said, for whoever the person asks for help; storage
    // errors stay in the log.
    let detail = match &f {
        Failure::Flow(
            SsoError::Unreachable(_)
            | SsoError::Exchange(_)
            | SsoError::IdToken(_)
            | SsoError::Clock(_),
        ) => Some(reason.clone()),
        _ => None,
    };
    let (status, title, text): (StatusCode, &str, String) = match f {
        Failure::Flow(SsoError::UnknownProvider(_)) => (
            StatusCode::NOT_FOUND,
            "No such sign-in",
            "This server has no sign-in provider by that name. Go back to the sign-in page and choose one of its buttons.".into(),
        ),
        Failure::Flow(SsoError::Unreachable(_)) => (
            StatusCode::BAD_REQUEST,
            "The identity provider is not answering",
            format!("Tocsin could not reach {name} to sign you in. Try again in a few minutes; while it is down, the owners of your workspace can still sign in with their password."),
        ),
        Failure::Flow(SsoError::NoFlow) => (
            StatusCode::BAD_REQUEST,
            "Sign-in expired",
            "This sign-in was not started in this browser, or took more than ten minutes. Start it again.".into(),
        ),
        Failure::Flow(SsoError::StateMismatch) => (
            StatusCode::BAD_REQUEST,
            "Sign-in not valid",
            "The answer does not belong to the sign-in this browser started, so nobody was signed in. Start it again.".into(),
        ),
        Failure::Flow(SsoError::FlowUsed) => (
            StatusCode::BAD_REQUEST,
            "Sign-in already used",
            "This sign-in was already completed; its answer cannot be used twice. Start a new one if you are not signed in.".into(),
        ),
        Failure::Flow(SsoError::Refused { error, description }) => (
            StatusCode::UNAUTHORIZED,
            if error == "access_denied" {
                "Sign-in cancelled"
            } else {
                "Sign-in refused"
            },
            if error == "access_denied" {
                format!("{name} did not sign you in: the sign-in was cancelled or not allowed. Start again when you are ready, or ask your administrator for access to Tocsin.")
            } else {
                format!("{name} refused the sign-in ({error}{}{description}). Ask its administrator, then start again.", if description.is_empty() { "" } else { ": " })
            },
        ),
        Failure::Flow(SsoError::Exchange(_)) => (
            StatusCode::UNAUTHORIZED,
            "Sign-in refused",
            format!("{name} did not accept this server's request to finish the sign-in. Start again; if it keeps failing, the server's operator should check the provider's client id and secret."),
        ),
        Failure::Flow(SsoError::IdToken(_)) => (
            StatusCode::UNAUTHORIZED,
            "Sign-in could not be verified",
            format!("The answer from {name} did not pass this server's checks, so nobody was signed in. Start again; if it keeps failing, the server's operator should check the provider's settings."),
        ),
        Failure::Flow(SsoError::Clock(_)) => (
            StatusCode::UNAUTHORIZED,
            "Check the clocks",
            format!("The answer from {name} has expired or is dated in the future. The clocks of this server and of the provider disagree: the server's operator should check them. Then start again."),
        ),
        Failure::Refused(r @ (Refusal::NoEmail | Refusal::EmailNotVerified(_))) => {
            (StatusCode::UNAUTHORIZED, "Sign-in refused", r.to_string())
        }
        Failure::Refused(r @ Refusal::NoWorkspace(_)) => {
            (StatusCode::BAD_REQUEST, "Sign-in not set up", r.to_string())
        }
        Failure::Flow(SsoError::Database(_)) | Failure::Refused(Refusal::Domain(_)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Try again",
            "This could not be done just now. Try again in a moment.".into(),
        ),
    };
    PeoplePage::new(
        title,
        html! {
            p { (text) }
            @if let Some(d) = &detail {
                p { small { "Detail: " (d) } }
            }
            p { a href=(again) { "Start again" } " · " a href=(DEFAULT_NEXT) { "Back to Tocsin" } }
        },
    )
    .respond(status)
}
