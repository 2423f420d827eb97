//! HTTP adapter for status pages (operations, rules and the record's shape in
//! `domain::status_pages`; the public face in `http::public`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, Created, IfMatch, NoContent, Tagged};
use crate::auth::{caps, needs};
use crate::domain::status_pages::components::{self, ComponentList, StatusPageComponent};
use crate::domain::status_pages::keys::{
    self, CreatePublishableKey, CreatedPublishableKey, KeyPath, PublishableKey,
};
use crate::domain::status_pages::{self, CreateStatusPage, PagePath, StatusPage, UpdateStatusPage};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Status pages";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/status-pages",
            get_with(list, |op| {
                op.id("listStatusPages")
                    .tag(TAG)
                    .summary("The workspace's status pages, oldest first (`status_pages:read`)")
            })
            .post_with(create, |op| {
                op.id("createStatusPage")
                    .tag(TAG)
                    .summary("Create a status page, unpublished unless `published: true`; a slug another page on the server holds is 409 `SLUG_TAKEN` (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}",
            get_with(get_one, |op| {
                op.id("getStatusPage")
                    .tag(TAG)
                    .summary("One status page (`status_pages:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateStatusPage")
                    .tag(TAG)
                    .summary("Change a status page; `branding` merges key by key, `null` clears a key; version-locked with If-Match (`status_pages:write`)")
            })
            .delete_with(delete, |op| {
                op.id("deleteStatusPage")
                    .tag(TAG)
                    .summary("Delete a status page with its components, domains, publishable keys, incidents, postmortems and subscribers (`status_pages:delete`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/publish",
            post_with(publish, |op| {
                op.id("publishStatusPage")
                    .tag(TAG)
                    .summary("Publish a status page: its public page and public API answer (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/unpublish",
            post_with(unpublish, |op| {
                op.id("unpublishStatusPage")
                    .tag(TAG)
                    .summary("Unpublish a status page: its public page and public API answer 404 `STATUS_PAGE_NOT_FOUND` (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/components",
            get_with(list_components, |op| {
                op.id("listStatusPageComponents")
                    .tag(TAG)
                    .summary("A status page's components in page order (`status_pages:read`)")
            })
            .put_with(replace_components, |op| {
                op.id("replaceStatusPageComponents")
                    .tag(TAG)
                    .summary("Replace a status page's components, in page order: one sent with its `id` keeps it, one without gets a new id, one left out is removed (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/publishable-keys",
            get_with(list_keys, |op| {
                op.id("listPublishableKeys")
                    .tag(TAG)
                    .summary("A status page's publishable keys, without the keys themselves (`status_pages:read`)")
            })
            .post_with(create_key, |op| {
                op.id("createPublishableKey")
                    .tag(TAG)
                    .summary("Mint a publishable key (`pk_...`) for the embed API and badges of this page: read-only, safe in browser code; the key is shown once; at most 20 per page (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/publishable-keys/{key_id}",
            aide::axum::routing::delete_with(delete_key, |op| {
                op.id("deletePublishableKey")
                    .tag(TAG)
                    .summary("Revoke a publishable key: it answers 401 at once (`status_pages:write`)")
            }),
        )
}

async fn list_keys(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesRead>,
    Path(p): Path<PagePath>,
) -> ApiResult<Json<Vec<PublishableKey>>> {
    Ok(Json(keys::list(state.cx(), &caller, &p.page_id).await?))
}

async fn create_key(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
    ApiJson(body): ApiJson<CreatePublishableKey>,
) -> ApiResult<Created<CreatedPublishableKey>> {
    Ok(Created(
        keys::create(state.cx(), &caller, &p.page_id, body).await?,
    ))
}

async fn delete_key(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<KeyPath>,
) -> ApiResult<NoContent> {
    keys::delete(state.cx(), &caller, &p).await?;
    Ok(NoContent)
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListStatusPages>,
) -> ApiResult<Json<Vec<StatusPage>>> {
    Ok(Json(status_pages::list(state.cx(), &caller).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    ApiJson(body): ApiJson<CreateStatusPage>,
) -> ApiResult<Created<StatusPage>> {
    Ok(Created(
        status_pages::create(state.cx(), &caller, body).await?,
    ))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<needs::GetStatusPage>,
    Path(p): Path<PagePath>,
) -> ApiResult<Tagged<StatusPage>> {
    let (page, version) = status_pages::get(state.cx(), &caller, &p.page_id).await?;
    Ok(Tagged(page, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateStatusPage>,
) -> ApiResult<Tagged<StatusPage>> {
    let (page, version) =
        status_pages::update(state.cx(), &caller, &p.page_id, expected, body).await?;
    Ok(Tagged(page, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesDelete>,
    Path(p): Path<PagePath>,
) -> ApiResult<NoContent> {
    status_pages::delete(state.cx(), &caller, &p.page_id).await?;
    Ok(NoContent)
}

async fn publish(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
) -> ApiResult<Json<StatusPage>> {
    Ok(Json(
        status_pages::set_published(state.cx(), &caller, &p.page_id, true).await?,
    ))
}

async fn unpublish(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
) -> ApiResult<Json<StatusPage>> {
    Ok(Json(
        status_pages::set_published(state.cx(), &caller, &p.page_id, false).await?,
    ))
}

async fn list_components(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesRead>,
    Path(p): Path<PagePath>,
) -> ApiResult<Json<Vec<StatusPageComponent>>> {
    Ok(Json(
        components::list(state.cx(), &caller, &p.page_id).await?,
    ))
}

async fn replace_components(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
    ApiJson(body): ApiJson<ComponentList>,
) -> ApiResult<Json<Vec<StatusPageComponent>>> {
    Ok(Json(
        components::replace(state.cx(), &caller, &p.page_id, body).await?,
    ))
}
