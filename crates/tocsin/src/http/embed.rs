//! The embed API, authorised by a publishable key (`Authorization: Bearer pk_...` or
//! `?token=pk_...`) that reads one status page: `GET /api/v1/embed/status` (the page's public
//! summary) and `GET /api/v1/embed/badge.svg` (a shields.io-style badge). Both allow any
//! origin, and their preflight allows the `Authorization` header. The widget script that uses
//! them is served at `/embed/widget.js`.
//!
//! A missing, malformed, unknown or revoked key is 401 `UNAUTHORIZED`; the key's page when
//! unpublished is 404 `STATUS_PAGE_NOT_FOUND` (drafts never leak, whoever asks).

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse, SecurityRequirement};
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use schemars::JsonSchema;
use serde::Deserialize;

use super::public::CachedJson;
use crate::domain::{CredentialProblem, DomainError, FieldError};
use crate::http::error::{error_response, ApiError, ApiResult};
use crate::http::AppState;
use crate::public::badge::{Metric, Style};

const TAG: &str = "Embed";
const WIDGET: &str = include_str!("../public/widget.js");

/// The page a presented publishable key reads (its slug).
pub struct PublishableKeyAuth(String);

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

impl FromRequestParts<AppState> for PublishableKeyAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let presented = match super::auth::bearer_token(&parts.headers)? {
            Some(t) => t.to_string(),
            None => {
                let q: TokenQuery = serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
                    .unwrap_or(TokenQuery { token: None });
                q.token.ok_or(DomainError::Unauthorized)?
            }
        };
        let slug = state
            .status_pages()
            .keys()
            .resolve(state.cx(), &presented)
            .await
            .map_err(DomainError::from)?
            .ok_or(DomainError::BadCredential(CredentialProblem::UnknownKey))?;
        Ok(PublishableKeyAuth(slug))
    }
}

impl aide::OperationInput for PublishableKeyAuth {
    fn operation_input(_ctx: &mut GenContext, op: &mut Operation) {
        let req: SecurityRequirement = [("publishableKey".to_string(), Vec::new())]
            .into_iter()
            .collect();
        op.security = vec![req];
        op.extensions
            .insert("x-svc-required-capabilities".into(), serde_json::json!([]));
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![(
            Some(401),
            error_response(
                ctx,
                "Missing, unknown or revoked publishable key (`UNAUTHORIZED`)",
            ),
        )]
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EmbedQuery {
    /// The publishable key, when not sent as `Authorization: Bearer`.
    pub token: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BadgeQuery {
    /// A component of the page (its id); absent for the whole page.
    pub component: Option<String>,
    /// `flat` (default), `flat-square` or `for-the-badge`.
    pub style: Option<String>,
    /// Show uptime over `24h`, `7d`, `30d` or `90d` instead of the status (a page's uptime is
    /// the mean of its components').
    pub uptime: Option<String>,
    /// The publishable key, when not sent as `Authorization: Bearer`.
    pub token: Option<String>,
}

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/api/v1/embed/status",
            get_with(status, |op| {
                op.id("getEmbedStatus")
                    .tag(TAG)
                    .summary("The publishable key's page summary, as `GET /api/v1/status-pages/{slug}/summary` answers it; any origin may read it (publishable key)")
            }),
        )
        .api_route(
            "/api/v1/embed/badge.svg",
            get_with(badge, |op| {
                op.id("getEmbedBadge")
                    .tag(TAG)
                    .summary("An SVG badge of the key's page or one of its components: status, or uptime with `?uptime=24h|7d|30d|90d`; `?style=flat|flat-square|for-the-badge` (publishable key)")
            }),
        )
}

/// The widget script and the preflights (outside the API document).
pub fn plain_router() -> Router<AppState> {
    Router::new()
        .route("/embed/widget.js", get(widget))
        .route("/api/v1/embed/status", axum::routing::options(preflight))
        .route("/api/v1/embed/badge.svg", axum::routing::options(preflight))
}

fn cors(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("ETag, Last-Modified"),
    );
    r
}

async fn preflight() -> Response {
    let mut r = cors(StatusCode::NO_CONTENT.into_response());
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Authorization"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

async fn status(
    State(state): State<AppState>,
    key: PublishableKeyAuth,
    Query(_q): Query<EmbedQuery>,
    headers: HeaderMap,
) -> ApiResult<CachedJson> {
    // A publishable key is the owner's grant to read the page, private pages included; the
    // answer about a private page is still nobody's to keep but its reader's.
    let r = super::public::published(&state, &key.0).await?;
    let mut res = super::public::answer(
        &headers,
        &r.summary,
        "application/json",
        &r.last_modified,
        &[],
    );
    if !r.snapshot.gate.is_public() {
        super::public::keep_private(&mut res);
    }
    Ok(CachedJson(cors(res)))
}

/// An SVG body (documented as `image/svg+xml`).
pub struct Svg(Response);

impl IntoResponse for Svg {
    fn into_response(self) -> Response {
        self.0
    }
}

impl aide::OperationOutput for Svg {
    type Inner = String;

    fn operation_response(_ctx: &mut GenContext, _op: &mut Operation) -> Option<OaResponse> {
        let mut content = indexmap::IndexMap::new();
        content.insert(
            "image/svg+xml".to_string(),
            aide::openapi::MediaType {
                schema: Some(aide::openapi::SchemaObject {
                    json_schema: schemars::json_schema!({"type": "string"}),
                    external_docs: None,
                    example: None,
                }),
                ..Default::default()
            },
        );
        Some(OaResponse {
            description: "The badge".into(),
            content,
            ..Default::default()
        })
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(200), r)])
            .unwrap_or_default()
    }
}

/// The badge's Content-Security-Policy.
pub const BADGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";

async fn badge(
    State(state): State<AppState>,
    key: PublishableKeyAuth,
    Query(q): Query<BadgeQuery>,
) -> ApiResult<Svg> {
    let style = Style::parse(q.style.as_deref()).ok_or_else(|| {
        DomainError::from(vec![FieldError::new(
            "style",
            "must be flat, flat-square or for-the-badge",
        )])
    })?;
    let metric = Metric::parse(q.uptime.as_deref()).ok_or_else(|| {
        DomainError::from(vec![FieldError::new(
            "uptime",
            "must be 24h, 7d, 30d or 90d",
        )])
    })?;
    let r = super::public::published(&state, &key.0).await?;
    let drawn = r
        .badges
        .get(&r.snapshot, q.component.as_deref(), metric, style)
        .map_err(|_| {
            DomainError::from(vec![FieldError::new(
                "component",
                "not a component of this page",
            )])
        })?;
    let mut res = drawn.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60, s-maxage=60"),
    );
    // Opened on its own, the SVG is a document: it may style itself and nothing more (no
    // script, no loads), and is never sniffed as anything else.
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(BADGE_CSP),
    );
    if !r.snapshot.gate.is_public() {
        super::public::keep_private(&mut res);
    }
    Ok(Svg(cors(res)))
}

async fn widget() -> Response {
    let mut r = WIDGET.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    cors(r)
}
