//! HTTP adapter for reading the audit log (operation in `domain::audit`).

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use axum::extract::State;
use axum::Json;

use super::extract::ApiQuery;
use crate::auth::caps;
use crate::domain::audit::{self, AuditLogPage, AuditQuery};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/audit-log",
        get_with(list, |op| {
            op.id("listAuditLog")
                .tag("Audit log")
                .summary("Workspace activity, newest first")
        }),
    )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::AuditRead>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Json<AuditLogPage>> {
    Ok(Json(audit::list(state.cx(), &caller, q).await?))
}
