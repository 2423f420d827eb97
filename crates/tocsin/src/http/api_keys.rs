//! HTTP adapter for personal access tokens (operations and rules in `domain::api_keys`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, Created, IfMatch, Tagged};
use crate::auth::caps;
use crate::domain::api_keys::{self, ApiKey, CreateApiKey, IssuedApiKey, KeyPath, UpdateApiKey};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/api-keys",
            get_with(list, |op| {
                op.id("listApiKeys")
                    .tag("API keys")
                    .summary("The workspace's API keys")
            })
            .post_with(create, |op| {
                op.id("createApiKey")
                    .tag("API keys")
                    .summary("Mint a personal access token (the secret is shown once)")
            }),
        )
        .api_route(
            "/api-keys/{key_id}",
            get_with(get_one, |op| {
                op.id("getApiKey").tag("API keys").summary("One API key")
            })
            .patch_with(update, |op| {
                op.id("updateApiKey")
                    .tag("API keys")
                    .summary("Change name, permissions or expiry (version-locked)")
            }),
        )
        .api_route(
            "/api-keys/{key_id}/rotate",
            post_with(rotate, |op| {
                op.id("rotateApiKey")
                    .tag("API keys")
                    .summary("Issue a new secret; the old one stops at once")
            }),
        )
        .api_route(
            "/api-keys/{key_id}/revoke",
            post_with(revoke, |op| {
                op.id("revokeApiKey")
                    .tag("API keys")
                    .summary("Revoke the key for good")
            }),
        )
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    ApiJson(body): ApiJson<CreateApiKey>,
) -> ApiResult<Created<IssuedApiKey>> {
    Ok(Created(api_keys::create(state.cx(), &caller, body).await?))
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
) -> ApiResult<Json<Vec<ApiKey>>> {
    Ok(Json(api_keys::list(state.cx(), &caller).await?))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<KeyPath>,
) -> ApiResult<Tagged<ApiKey>> {
    let (key, version) = api_keys::get(state.cx(), &caller, &p.key_id).await?;
    Ok(Tagged(key, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<KeyPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateApiKey>,
) -> ApiResult<Tagged<ApiKey>> {
    let (key, version) = api_keys::update(state.cx(), &caller, &p.key_id, expected, body).await?;
    Ok(Tagged(key, version))
}

async fn rotate(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<KeyPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<Json<IssuedApiKey>> {
    Ok(Json(
        api_keys::rotate(state.cx(), &caller, &p.key_id, expected).await?,
    ))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<KeyPath>,
) -> ApiResult<Json<ApiKey>> {
    Ok(Json(
        api_keys::revoke(state.cx(), &caller, &p.key_id).await?,
    ))
}
