//! The public face of status pages, no credential: the summary API under
//! `/api/v1/status-pages/{slug}` (JSON, in the API document) and the pages for people under
//! `/s/{slug}` (HTML and feeds, outside the JSON error guard: their errors are pages too).
//!
//! Every answer comes from the rendered cache (`public::cache`) with `ETag`, `Last-Modified`
//! and `Cache-Control` for CDNs and browsers; a matching `If-None-Match` is 304. Drafts,
//! unpublished pages and unknown slugs are the same 404 `STATUS_PAGE_NOT_FOUND`.

use std::sync::Arc;

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::domain::incidents::{incident_record, IncidentList};
use crate::domain::postmortems::{postmortem_view, Postmortem};
use crate::domain::{DomainError, Resource};
use crate::http::error::ApiResult;
use crate::http::AppState;
use crate::public::cache::{Body, Rendered};
use crate::public::snapshot::Summary;

const TAG: &str = "Public status";

/// Browsers and CDNs may keep an answer this long; the server's own copy follows changes
/// within a second.
const CACHE_CONTROL: &str = "public, max-age=5";

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

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PublicIncidentQuery {
    /// 1 to 200, default 50.
    pub limit: Option<u32>,
    /// Incidents to skip, default 0.
    pub offset: Option<u32>,
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
                    .description("Unpublished pages and unknown slugs are 404 `STATUS_PAGE_NOT_FOUND`. Answers carry `ETag`, `Last-Modified` and `Cache-Control`; `If-None-Match` with the current tag is 304. A change to the page, an incident or a component's monitor status shows within about a second.")
            }),
        )
        .api_route(
            "/api/v1/status-pages/{slug}/incidents",
            get_with(incidents, |op| {
                op.id("listPublicIncidents")
                    .tag(TAG)
                    .summary("A published status page's published incidents (and scheduled ones whose time has come), newest first, paged by `limit` and `offset`; drafts never appear (no credential)")
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
    Query(q): Query<PublicIncidentQuery>,
) -> ApiResult<axum::Json<IncidentList>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(DomainError::field("limit", "must be 1 to 200").into());
    }
    let r = published(&state, &p.slug).await?;
    let core = state.core();
    let rows = crate::store::incidents::public_for_page(
        core.db().reader(),
        &r.snapshot.page_id,
        core.clock().now_ms(),
        0,
        i64::MAX,
    )
    .await
    .map_err(DomainError::from)?;
    let total = rows.len() as i64;
    let incidents = rows
        .iter()
        .skip(q.offset.unwrap_or(0) as usize)
        .take(limit as usize)
        .map(|(row, _)| incident_record(row))
        .collect();
    Ok(axum::Json(IncidentList { incidents, total }))
}

async fn published_postmortem(
    state: &AppState,
    p: &PostmortemPath,
) -> Result<(Arc<Rendered>, Postmortem), DomainError> {
    let r = published(state, &p.slug).await?;
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
) -> ApiResult<axum::Json<Postmortem>> {
    Ok(axum::Json(published_postmortem(&state, &p).await?.1))
}

async fn postmortem_page(State(state): State<AppState>, Path(p): Path<PostmortemPath>) -> Response {
    match published_postmortem(&state, &p).await {
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

/// The rendered page published at `slug`, or 404 `STATUS_PAGE_NOT_FOUND` (the JSON routes').
pub async fn published(state: &AppState, slug: &str) -> Result<Arc<Rendered>, DomainError> {
    rendered(state, slug)
        .await?
        .ok_or(DomainError::NotFound(Resource::StatusPage))
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
    let r = published(&state, &p.slug).await?;
    Ok(CachedJson(answer(
        &headers,
        &r.summary,
        "application/json",
        &r.last_modified,
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
    r
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
    match rendered(&state, &p.slug).await {
        Ok(Some(r)) => answer(
            &headers,
            &r.html,
            "text/html; charset=utf-8",
            &r.last_modified,
            &[
                (header::CONTENT_SECURITY_POLICY, r.csp.as_str()),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::REFERRER_POLICY, "strict-origin-when-cross-origin"),
            ],
        ),
        Ok(None) => not_found_page(),
        Err(e) => unavailable_page(&e),
    }
}

async fn rss(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    match rendered(&state, &p.slug).await {
        Ok(Some(r)) => answer(
            &headers,
            &r.rss,
            "application/rss+xml; charset=utf-8",
            &r.last_modified,
            &[],
        ),
        Ok(None) => not_found_page(),
        Err(e) => unavailable_page(&e),
    }
}

async fn atom(
    State(state): State<AppState>,
    Path(p): Path<SlugPath>,
    headers: HeaderMap,
) -> Response {
    match rendered(&state, &p.slug).await {
        Ok(Some(r)) => answer(
            &headers,
            &r.atom,
            "application/atom+xml; charset=utf-8",
            &r.last_modified,
            &[],
        ),
        Ok(None) => not_found_page(),
        Err(e) => unavailable_page(&e),
    }
}
