//! HTTP adapter for postmortems (operations, rules and the record in `domain::postmortems`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged};
use crate::auth::{caps, needs};
use crate::domain::postmortems::{
    self, CreatePostmortem, Postmortem, PostmortemPath, PostmortemQuery, UpdatePostmortem,
};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Postmortems";

/// What every postmortem operation's description says about the record.
const RULES: &str = "A postmortem is written for a RESOLVED incident of the workspace: an \
    unknown incident (or another workspace's) is 400 `VALIDATION_ERROR` on `incidentId`, one \
    that is not resolved is 409 `INCIDENT_NOT_RESOLVED`. `body` is Markdown (at most 100,000 \
    characters), kept as written; `bodyHtml` is it rendered (CommonMark with tables, \
    strikethrough and task lists) and sanitised: raw HTML scripts, event handlers and \
    `javascript:` links come out inert, so it is safe to insert into a page. `statusPageId` \
    is the incident's page. `published` turns true when it is published.";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/postmortems",
            get_with(list, |op| {
                op.id("listPostmortems")
                    .tag(TAG)
                    .summary("The workspace's postmortems, newest first; `?incidentId=` for one incident's (`postmortems:read`)")
                    .description(RULES)
            })
            .post_with(create, |op| {
                op.id("createPostmortem")
                    .tag(TAG)
                    .summary("Write a postmortem (unpublished) for a resolved incident; an unresolved one answers 409 INCIDENT_NOT_RESOLVED (`postmortems:write`)")
                    .description(RULES)
            }),
        )
        .api_route(
            "/postmortems/{postmortem_id}",
            get_with(get_one, |op| {
                op.id("getPostmortem")
                    .tag(TAG)
                    .summary("One postmortem (`postmortems:read`)")
                    .description(RULES)
            })
            .patch_with(update, |op| {
                op.id("updatePostmortem")
                    .tag(TAG)
                    .summary("Edit a postmortem's title and body; version-locked with If-Match (`postmortems:write`)")
                    .description(RULES)
            })
            .delete_with(delete, |op| {
                op.id("deletePostmortem")
                    .tag(TAG)
                    .summary("Delete a postmortem (`postmortems:delete`)")
            }),
        )
        .api_route(
            "/postmortems/{postmortem_id}/publish",
            post_with(publish, |op| {
                op.id("publishPostmortem")
                    .tag(TAG)
                    .summary("Publish a postmortem on its incident's status page: publishedAt now (a published one is answered unchanged) (`postmortems:write`)")
                    .description(RULES)
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListPostmortems>,
    ApiQuery(q): ApiQuery<PostmortemQuery>,
) -> ApiResult<Json<Vec<Postmortem>>> {
    Ok(Json(postmortems::list(state.cx(), &caller, q).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<needs::CreatePostmortem>,
    ApiJson(body): ApiJson<CreatePostmortem>,
) -> ApiResult<Created<Postmortem>> {
    Ok(Created(
        postmortems::create(state.cx(), &caller, body).await?,
    ))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<needs::GetPostmortem>,
    Path(p): Path<PostmortemPath>,
) -> ApiResult<Tagged<Postmortem>> {
    let (v, version) = postmortems::get(state.cx(), &caller, &p.postmortem_id).await?;
    Ok(Tagged(v, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::PostmortemsWrite>,
    Path(p): Path<PostmortemPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdatePostmortem>,
) -> ApiResult<Tagged<Postmortem>> {
    let (v, version) =
        postmortems::update(state.cx(), &caller, &p.postmortem_id, expected, body).await?;
    Ok(Tagged(v, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::PostmortemsDelete>,
    Path(p): Path<PostmortemPath>,
) -> ApiResult<NoContent> {
    postmortems::delete(state.cx(), &caller, &p.postmortem_id).await?;
    Ok(NoContent)
}

async fn publish(
    State(state): State<AppState>,
    caller: Auth<needs::PublishPostmortem>,
    Path(p): Path<PostmortemPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Tagged<Postmortem>> {
    let (v, version) =
        postmortems::publish(state.cx(), &caller, &p.postmortem_id, expected).await?;
    Ok(Tagged(v, version))
}
