//! HTTP adapter for incidents (operations, rules and records in `domain::incidents`). Every
//! operation on one incident answers `IncidentWithUpdates` (updates newest first); item reads
//! and every write but create carry the `ETag`, and every write takes `If-Match`.

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::{Operation, ReferenceOr, Response as OaResponse};
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::header;
use axum::Json;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::extract::{
    body_error, parse_json, ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged, Validate,
};
use crate::auth::{caps, needs};
use crate::domain::incidents::{
    self, CreateIncident, IncidentList, IncidentPath, IncidentQuery, IncidentWithUpdates,
    PostIncidentUpdate, ReopenIncident, ResolveIncident, UpdateIncident,
};
use crate::http::auth::Auth;
use crate::http::error::{ApiError, ApiResult};
use crate::http::AppState;

const TAG: &str = "Incidents";

/// What every incident operation's description says about the record.
const RULES: &str = "Every operation on one incident answers `IncidentWithUpdates`: the \
    incident and its updates, newest first. `resolvedAt` is set exactly while the status is \
    RESOLVED, `publishedAt` exactly while the visibility is PUBLISHED, and `scheduledFor` \
    exactly while it is SCHEDULED (a SCHEDULED incident appears on the public page once \
    `scheduledFor` has passed; it must lie in the future when set). The status changes only \
    through updates, resolve and reopen. Titles and messages are stored as written, HTML \
    included; pages escape them when they show them. An unknown `statusPageId` (or another \
    workspace's page) is 400 `VALIDATION_ERROR` on `statusPageId`; a component that is not on \
    the incident's page is 400 on `affectedComponentIds.<index>`; another workspace's \
    incident is 404 `INCIDENT_NOT_FOUND`.";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/incidents",
            get_with(list, |op| {
                op.id("listIncidents").tag(TAG).summary(
                    "The workspace's incidents, newest first; filter by `statusPageId`, `status` and `visibility`; offset pages with `limit` (1 to 200, default 50) and `offset`; `total` counts every match (`incidents:read`)",
                )
            })
            .post_with(create, |op| {
                op.id("createIncident")
                    .tag(TAG)
                    .summary("File an incident on a status page (defaults: INVESTIGATING, severity NONE, DRAFT); an optional `message` becomes its first update; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/incidents/{incident_id}",
            get_with(get_one, |op| {
                op.id("getIncident")
                    .tag(TAG)
                    .summary("One incident with its updates, newest first (`incidents:read`)")
                    .description(RULES)
            })
            .patch_with(update, |op| {
                op.id("updateIncident")
                    .tag(TAG)
                    .summary("Edit an incident's title, severity, affected components, visibility and scheduledFor; version-locked with If-Match; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            })
            .delete_with(delete, |op| {
                op.id("deleteIncident")
                    .tag(TAG)
                    .summary("Delete an incident with its updates and postmortems (`incidents:delete`)")
            }),
        )
        .api_route(
            "/incidents/{incident_id}/updates",
            post_with(post_update, |op| {
                op.id("postIncidentUpdate")
                    .tag(TAG)
                    .summary("Add an update: its status becomes the incident's (RESOLVED resolves it, another status on a resolved incident reopens it); answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/incidents/{incident_id}/resolve",
            post_with(resolve, |op| {
                op.id("resolveIncident")
                    .tag(TAG)
                    .summary("Resolve an incident: status RESOLVED, resolvedAt now, and an update (the optional `message`, else a system-generated one); a resolved incident answers 409 INCIDENT_ALREADY_RESOLVED; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/incidents/{incident_id}/reopen",
            post_with(reopen, |op| {
                op.id("reopenIncident")
                    .tag(TAG)
                    .summary("Reopen a resolved incident: resolvedAt cleared, status INVESTIGATING or the `status` given, and an update (the optional `message`, else a system-generated one); an incident that is not resolved answers 409 INCIDENT_NOT_RESOLVED; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/incidents/{incident_id}/publish",
            post_with(publish, |op| {
                op.id("publishIncident")
                    .tag(TAG)
                    .summary("Publish an incident: visibility PUBLISHED, publishedAt now, scheduledFor cleared; a published one is answered unchanged; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/incidents/{incident_id}/archive",
            post_with(archive, |op| {
                op.id("archiveIncident")
                    .tag(TAG)
                    .summary("Archive an incident: archivedAt now, and it leaves the public page; an archived one is answered unchanged; answers IncidentWithUpdates (`incidents:write`)")
                    .description(RULES)
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListIncidents>,
    ApiQuery(q): ApiQuery<IncidentQuery>,
) -> ApiResult<Json<IncidentList>> {
    Ok(Json(incidents::list(state.cx(), &caller, q).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<needs::CreateIncident>,
    ApiJson(body): ApiJson<CreateIncident>,
) -> ApiResult<Created<IncidentWithUpdates>> {
    Ok(Created(incidents::create(state.cx(), &caller, body).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<needs::GetIncident>,
    Path(p): Path<IncidentPath>,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) = incidents::get(state.cx(), &caller, &p.incident_id).await?;
    Ok(Tagged(v, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<needs::UpdateIncident>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateIncident>,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) =
        incidents::update(state.cx(), &caller, &p.incident_id, expected, body).await?;
    Ok(Tagged(v, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::IncidentsDelete>,
    Path(p): Path<IncidentPath>,
) -> ApiResult<NoContent> {
    incidents::delete(state.cx(), &caller, &p.incident_id).await?;
    Ok(NoContent)
}

async fn post_update(
    State(state): State<AppState>,
    caller: Auth<needs::PostIncidentUpdate>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<PostIncidentUpdate>,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) =
        incidents::post_update(state.cx(), &caller, &p.incident_id, expected, body).await?;
    Ok(Tagged(v, version))
}

async fn resolve(
    State(state): State<AppState>,
    caller: Auth<needs::ResolveIncident>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
    OptionalJson(body): OptionalJson<ResolveIncident>,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) =
        incidents::resolve(state.cx(), &caller, &p.incident_id, expected, body).await?;
    Ok(Tagged(v, version))
}

async fn reopen(
    State(state): State<AppState>,
    caller: Auth<caps::IncidentsWrite>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
    OptionalJson(body): OptionalJson<ReopenIncident>,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) =
        incidents::reopen(state.cx(), &caller, &p.incident_id, expected, body).await?;
    Ok(Tagged(v, version))
}

async fn publish(
    State(state): State<AppState>,
    caller: Auth<needs::PublishIncident>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) = incidents::publish(state.cx(), &caller, &p.incident_id, expected).await?;
    Ok(Tagged(v, version))
}

async fn archive(
    State(state): State<AppState>,
    caller: Auth<caps::IncidentsWrite>,
    Path(p): Path<IncidentPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<IncidentWithUpdates>> {
    let (v, version) = incidents::archive(state.cx(), &caller, &p.incident_id, expected).await?;
    Ok(Tagged(v, version))
}

/// A JSON body that may be left out: an empty body reads as `T::default()`; a body that is
/// sent is checked like [`ApiJson`]'s (JSON content type, size, syntax, fields).
pub struct OptionalJson<T>(pub T);

impl<T> FromRequest<AppState> for OptionalJson<T>
where
    T: DeserializeOwned + Validate + Default + Send,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| {
                let mime = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json"
                    || (mime.starts_with("application/") && mime.ends_with("+json"))
            });
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_error(&e))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        if is_json != Some(true) {
            return Err(ApiError::UnsupportedMediaType);
        }
        parse_json(&bytes).map(OptionalJson)
    }
}

impl<T: JsonSchema> aide::OperationInput for OptionalJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <ApiJson<T> as aide::OperationInput>::operation_input(ctx, operation);
        if let Some(ReferenceOr::Item(body)) = operation.request_body.as_mut() {
            body.required = false;
        }
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        <ApiJson<T> as aide::OperationInput>::inferred_early_responses(ctx, op)
    }
}
