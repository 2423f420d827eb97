//! HTTP adapter for MCP grants, `GET /mcp/grants` and `DELETE /mcp/grants/{grant_id}`
//! (session only; operations in `domain::mcp_grants`).

use aide::axum::routing::{delete_with, get_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::NoContent;
use crate::auth::caps;
use crate::domain::mcp_grants::{self, GrantPath, McpGrant};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "MCP grants";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/mcp/grants",
            get_with(list, |op| {
                op.id("listMcpGrants")
                    .tag(TAG)
                    .summary("The OAuth grants you gave MCP clients in this workspace")
            }),
        )
        .api_route(
            "/mcp/grants/{grant_id}",
            delete_with(delete, |op| {
                op.id("deleteMcpGrant")
                    .tag(TAG)
                    .summary("Revoke a grant: its access and refresh tokens stop at once")
                    .response_with::<404, Json<crate::http::error::ErrorBody>, _>(|r| {
                        r.description("`MCP_GRANT_NOT_FOUND`")
                    })
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
) -> ApiResult<Json<Vec<McpGrant>>> {
    Ok(Json(mcp_grants::list(state.cx(), &caller).await?))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::SignedIn>,
    Path(p): Path<GrantPath>,
) -> ApiResult<NoContent> {
    mcp_grants::delete(state.cx(), &caller, &p.grant_id).await?;
    Ok(NoContent)
}
