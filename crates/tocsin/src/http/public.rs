//! The public face of status pages, no credential: the summary API under
//! `/api/v1/status-pages/{slug}` (JSON, in the API document) and the pages for people under
//! `/s/{slug}` (HTML and feeds, outside the JSON error guard: their errors are pages too).
//!
//! Every answer comes from the rendered cache (`public::cache`) with `ETag`, `Last-Modified`
//! and `Cache-Control` for CDNs and browsers; a matching `If-None-Match` is 304. Drafts,
//! unpublished pages and unknown slugs are the same 404 `STATUS_PAGE_NOT_FOUND`.
//!
//! Private pages (`access.visibility` `PASSWORD` or `EMAIL_DOMAINS`, `public::access`): every
//! answer first asks the page's gate. Without access the JSON reads and the feeds are the same
//! 404 as a draft, and the HTML page and postmortem pages are a sign-in page naming nothing of
//! the page: a password form (posted to `/s/{slug}/access`, limited per client IP, checked
//! against the argon2 hash, answered with the page's signed cookie) or how to get in with an
//! allowed email address. Answers about a private page are `Cache-Control: private, no-store`
//! with `Vary: Cookie`, so no CDN or shared cache keeps them.

use std::sync::Arc;

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::incidents::{incident_record, Incident};
use crate::domain::pagination::{self, PageParams};
use crate::domain::postmortems::{postmortem_view, Postmortem};
use crate::domain::{DomainError, Resource};
use crate::http::custom_domains::OnCustomDomain;
use crate::http::error::ApiResult;
use crate::http::extract::ApiQuery;
use crate::http::AppState;
use crate::public::access::{Gate, COOKIE_TTL_MS};
use crate::public::cache::{Body, Rendered};
use crate::public::html::SignIn;
use crate::public::snapshot::Summary;

const TAG: &str = "Public status";

/// Browsers and CDNs may keep an answer this long; the server's own copy follows changes
/// within a second.
const CACHE_CONTROL: &str = "public, max-age=5";

/// What a private page's answers say to caches: nobody but the reader may keep them.
const PRIVATE_CACHE_CONTROL: &str = "private, no-store";

/// Where the pages for people live (the guard leaves their errors as pages).
pub const PAGES_PREFIX: &str = "/s/";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SlugPath {
    /// The status page's slug.
    pub slug: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PostmortemPath {
    /// The status page's slug.
    pub slug: String,
    pub postmortem_id: String,
}

/// A page of a public status page's incidents, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PublicIncidentPage {
    pub incidents: Vec<Incident>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The public JSON routes (in the API document).
pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/api/v1/status-pages/{slug}/summary",
            get_with(summary, |op| {
                op.id("getPublicStatusSummary")
                    .tag(TAG)
                    .summary("A published status page's summary: overall status, components with uptime, active published incidents, scheduled maintenance (no credential)")
                    .description("Unpublished pages, unknown slugs and private pages (`access.visibility` other than `PUBLIC`) read without access are 404 `STATUS_PAGE_NOT_FOUND`; a private page is read with its page cookie (set by the password form of `/s/{slug}`) or the session of a person it admits, and answered `Cache-Control: private, no-store`. Answers carry `ETag`, `Last-Modified` and `Cache-Control`; `If-None-Match` with the current tag is 304. A change to the page, an incident or a component's monitor status shows within about a second.")
            }),
        )
        .api_route(
            "/api/v1/status-pages/{slug}/incidents",
            get_with(incidents, |op| {
                op.id("listPublicIncidents")
                    .tag(TAG)
                    .summary("A published status page's published incidents (and scheduled ones whose time has come), newest first, in cursor pages (`?cursor=&limit=`, default 50, at most 200; `nextCursor` null on the last page, stable when incidents are published meanwhile); drafts never appear (no credential)")
                    .description("Private pages read without access are 404 `STATUS_PAGE_NOT_FOUND`, as for the summary.")
            }),
        )
        .api_route(
            "/api/v1/status-pages/{slug}/postmortems/{postmortem_id}",
            get_with(postmortem, |op| {
                op.id("getPublicPostmortem")
                    .tag(TAG)
                    .summary("A published postmortem of a published status page; unpublished ones are 404 `POSTMORTEM_NOT_FOUND` (no credential)")
            }),
        )
}

async fn incidents(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    ApiQuery(q): ApiQuery<PageParams>,
    headers: HeaderMap,
) -> ApiResult<Private<axum::Json<PublicIncidentPage>>> {
    let r = readable(&state, &headers, &p.slug).await?;
    let core = state.core();
    let after = q.after();
    // The key is `<created_at>:<id>` of the last incident of the previous page.
    let key = after
        .split_once(':')
        .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id)));
    if !after.is_empty() && key.is_none() {
        return Err(DomainError::field("cursor", "is not a cursor this server issued").into());
    }
    let rows = crate::store::incidents::public_page_of(
        core.db().reader(),
        &r.snapshot.page_id,
        core.clock().now_ms(),
        key,
        i64::from(q.limit()) + 1,
    )
    .await
    .map_err(DomainError::from)?;
    let (rows, next_cursor) = pagination::finish(rows, q.limit(), |row| {
        format!("{}:{}", row.created_at, row.id)
    });
    Ok(Private(
        axum::Json(PublicIncidentPage {
            incidents: rows.iter().map(incident_record).collect(),
            next_cursor,
        }),
        !r.snapshot.gate.is_public(),
    ))
}

async fn published_postmortem(
    state: &AppState,
    r: Arc<Rendered>,
    p: &PostmortemPath,
) -> Result<(Arc<Rendered>, Postmortem), DomainError> {
    let row = crate::store::postmortems::published_on_page(
        state.core().db().reader(),
        &r.snapshot.page_id,
        &p.postmortem_id,
    )
    .await?
    .ok_or(DomainError::NotFound(Resource::Postmortem))?;
    Ok((r, postmortem_view(&row)))
}

async fn postmortem(
    State(state): State<AppState>,
    Path(p): Path<PostmortemPath>,
    headers: HeaderMap,
) -> ApiResult<Private<axum::Json<Postmortem>>> {
    let r = readable(&state, &headers, &p.slug).await?;
    let private = !r.snapshot.gate.is_public();
    let pm = published_postmortem(&state, r, &p).await?.1;
    Ok(Private(axum::Json(pm), private))
}

/// A JSON answer about a page, marked [`keep_private`] when the page is private (documented
/// as its inner answer).
pub struct Private<T>(T, bool);

impl<T: IntoResponse> IntoResponse for Private<T> {
    fn into_response(self) -> Response {
        let mut res = self.0.into_response();
        if self.1 {
            keep_private(&mut res);
        }
        res
    }
}

impl<T: aide::OperationOutput> aide::OperationOutput for Private<T> {
    type Inner = T::Inner;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        T::operation_response(ctx, op)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        T::inferred_responses(ctx, op)
    }
}

async fn postmortem_page(
    State(state): State<AppState>,
    Path(p): Path<PostmortemPath>,
    headers: HeaderMap,
) -> Response {
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(&state, &headers, &r.snapshot.gate).await {
        Ok(true) => {}
        Ok(false) => return sign_in_page(&state, &r, &p.slug, false),
        Err(e) => return unavailable_page(&e),
    }
    let private = !r.snapshot.gate.is_public();
    match published_postmortem(&state, r, &p).await {
        Ok((r, pm)) => {
            let published = pm
                .published_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp_millis())
                .unwrap_or(0);
            let page =
                crate::public::html::postmortem(&r.snapshot, &pm.title, &pm.body_html, published);
            let mut res = page.body.into_response();
            let h = res.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            if let Ok(v) = HeaderValue::from_str(&page.csp) {
                h.insert(header::CONTENT_SECURITY_POLICY, v);
            }
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static(CACHE_CONTROL),
            );
            if private {
                keep_private(&mut res);
            }
            res
        }
        Err(DomainError::NotFound(_)) => page_error(
            StatusCode::NOT_FOUND,
            "Postmortem not found",
            "There is no published postmortem at this address.",
        ),
        Err(e) => unavailable_page(&e),
    }
}

/// The pages for people (outside the API document, like `/auth`).
pub fn pages_router() -> Router<AppState> {
    Router::new()
        .route("/s/{slug}", get(page))
        .route("/s/{slug}/", get(page))
        .route("/s/{slug}/access", axum::routing::post(enter_password))
        .route("/s/{slug}/subscribe", axum::routing::post(subscribe_form))
        .route("/s/{slug}/feed.rss", get(rss))
        .route("/s/{slug}/feed.atom", get(atom))
        .route(
            "/s/{slug}/postmortems/{postmortem_id}",
            get(postmortem_page),
        )
}

async fn rendered(state: &AppState, slug: &str) -> Result<Option<Arc<Rendered>>, DomainError> {
    Ok(state.core().status_pages().get(state.core(), slug).await?)
}

/// The rendered page published at `slug`, or 404 `STATUS_PAGE_NOT_FOUND`, whoever asks: for
/// the embed API and badges, where a publishable key is the page owner's explicit grant to
/// read the page (private pages included). The public routes use [`readable`].
pub async fn published(state: &AppState, slug: &str) -> Result<Arc<Rendered>, DomainError> {
    rendered(state, slug)
        .await?
        .ok_or(DomainError::NotFound(Resource::StatusPage))
}

/// The rendered page published at `slug` if this request may read it; otherwise the same
/// 404 `STATUS_PAGE_NOT_FOUND` as a draft (the JSON routes').
pub async fn readable(
    state: &AppState,
    headers: &HeaderMap,
    slug: &str,
) -> Result<Arc<Rendered>, DomainError> {
    let r = published(state, slug).await?;
    if admitted(state, headers, &r.snapshot.gate).await? {
        Ok(r)
    } else {
        Err(DomainError::NotFound(Resource::StatusPage))
    }
}

/// A cookie's value among the request's cookies.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (n, v) = pair.trim().split_once('=')?;
            (n == name && !v.is_empty()).then_some(v)
        })
}

/// Whether this request may read a page behind `gate` (the rule is
/// [`crate::public::admission`]'s; this hands it the request's page cookie and session).
async fn admitted(state: &AppState, headers: &HeaderMap, gate: &Gate) -> Result<bool, DomainError> {
    let page_cookie = cookie(headers, &gate.cookie_name());
    let session = cookie(headers, crate::auth::SESSION_COOKIE);
    crate::public::admission::admits(
        state.core(),
        gate,
        page_cookie,
        session,
        state.clock().now_ms(),
    )
    .await
}

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
fn answer_for(
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

/// Where the page itself is for this request: `/` on its custom domain, else `/s/{slug}`.
fn page_home(slug: &str, on_domain: bool) -> String {
    if on_domain {
        "/".to_string()
    } else {
        format!("/s/{slug}")
    }
}

/// The page shown instead of a private page to someone it does not admit (401).
fn sign_in_page(state: &AppState, r: &Rendered, slug: &str, wrong: bool) -> Response {
    let action = format!("/s/{slug}/access");
    let page_url = crate::domain::status_pages::page_url(state.core(), slug);
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
async fn enter_password(
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
        let mut res = (
            StatusCode::TOO_MANY_REQUESTS,
            crate::public::html::message_in(lang, t.too_many_title, t.too_many_text),
        )
            .into_response();
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        message_headers(&mut res);
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

/// `POST /s/{slug}/subscribe` (the page's email form, `email` and any number of `component`):
/// the same subscription as `POST /api/v1/status-pages/{slug}/subscribers`, with its limits
/// per client address and per email address, answered with an HTML page. The answer is the
/// same whether or not the address was subscribed already; the email's link confirms.
async fn subscribe_form(
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
    match ops::subscribe(&state, &p.slug, input).await {
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

/// The summary JSON, with its validators (documented as [`Summary`]).
pub struct CachedJson(pub Response);

impl IntoResponse for CachedJson {
    fn into_response(self) -> Response {
        self.0
    }
}

impl aide::OperationOutput for CachedJson {
    type Inner = Summary;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        <axum::Json<Summary> as aide::OperationOutput>::operation_response(ctx, op)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        let mut out: Vec<(Option<u16>, OaResponse)> = Self::operation_response(ctx, op)
            .map(|r| vec![(Some(200), r)])
            .unwrap_or_default();
        out.push((
            Some(304),
            OaResponse {
                description: "Not modified: the `If-None-Match` tag is current".into(),
                ..Default::default()
            },
        ));
        out
    }
}

async fn summary(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> ApiResult<CachedJson> {
    let r = readable(&state, &headers, &p.slug).await?;
    Ok(CachedJson(answer_for(
        &r,
        &headers,
        &r.summary,
        "application/json",
        &[],
    )))
}

/// A page for people saying what went wrong.
fn page_error(status: StatusCode, title: &str, text: &str) -> Response {
    let mut r = (status, crate::public::html::message(title, text)).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    message_headers(&mut r);
    r
}

/// The headers of the small message pages (errors, the subscription form's answers): no
/// script, no loads, links only; never sniffed as anything else.
fn message_headers(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(crate::http::subscribers::PERSON_PAGE_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

fn not_found_page() -> Response {
    page_error(
        StatusCode::NOT_FOUND,
        "Status page not found",
        "There is no published status page at this address.",
    )
}

fn unavailable_page(e: &DomainError) -> Response {
    tracing::warn!(error = %e, "a public status page could not be built");
    page_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "Status page unavailable",
        "The status page cannot be shown right now. Please try again in a moment.",
    )
}

async fn page(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    let r = match rendered(&state, &p.slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(&state, &headers, &r.snapshot.gate).await {
        Ok(true) => answer_for(
            &r,
            &headers,
            &r.html,
            "text/html; charset=utf-8",
            &[
                (header::CONTENT_SECURITY_POLICY, r.csp.as_str()),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::REFERRER_POLICY, "strict-origin-when-cross-origin"),
            ],
        ),
        Ok(false) => sign_in_page(&state, &r, &p.slug, false),
        Err(e) => unavailable_page(&e),
    }
}

/// A feed of a page this request may read; a private page's feeds are 404 without access.
async fn feed(
    state: &AppState,
    slug: &str,
    headers: &HeaderMap,
    pick: fn(&Rendered) -> &Body,
    content_type: &'static str,
) -> Response {
    let r = match rendered(state, slug).await {
        Ok(Some(r)) => r,
        Ok(None) => return not_found_page(),
        Err(e) => return unavailable_page(&e),
    };
    match admitted(state, headers, &r.snapshot.gate).await {
        Ok(true) => answer_for(&r, headers, pick(&r), content_type, &[]),
        Ok(false) => not_found_page(),
        Err(e) => unavailable_page(&e),
    }
}

async fn rss(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    feed(
        &state,
        &p.slug,
        &headers,
        |r| &r.rss,
        "application/rss+xml; charset=utf-8",
    )
    .await
}

async fn atom(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    feed(
        &state,
        &p.slug,
        &headers,
        |r| &r.atom,
        "application/atom+xml; charset=utf-8",
    )
    .await
}
