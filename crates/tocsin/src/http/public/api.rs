//! The public JSON routes of a status page (in the API document): the summary, the incident
//! pages and a published postmortem, each 404 to a reader the page does not admit, and the
//! answer types that document them ([`Private`], [`CachedJson`]).

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::read::{published_postmortem, readable};
use super::reply::{answer_for, keep_private};
use super::{PostmortemPath, SlugPath};
use crate::domain::incidents::{incident_record, Incident};
use crate::domain::pagination::{self, PageParams};
use crate::domain::postmortems::Postmortem;
use crate::domain::DomainError;
use crate::http::error::ApiResult;
use crate::http::extract::ApiQuery;
use crate::http::AppState;
use crate::public::snapshot::Summary;

const TAG: &str = "Public status";

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
    let core = state.cx();
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
            // A corrupt row is reported and left out (see `store::corrupt`).
            incidents: crate::store::corrupt::readable(rows.iter().map(incident_record)),
            next_cursor,
        }),
        !r.snapshot.gate.is_public(),
    ))
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
