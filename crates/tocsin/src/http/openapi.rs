//! The OpenAPI 3.1 document, generated from the routes themselves: each handler's extractors
//! and return type describe its parameters, bodies, responses, security and required
//! capabilities. The document is built once per process and served at `/openapi.json`; the
//! committed `openapi.json` at the repository root is checked against it by a test.

use std::sync::OnceLock;

use aide::axum::routing::get_with;
use aide::axum::ApiRouter;
use aide::openapi::OpenApi;
use axum::Json;
use serde_json::{json, Value};

use crate::auth::capability::TOKEN_CAPABILITIES;
use crate::http::AppState;

/// Every REST route, documented.
pub fn api_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .merge(super::ops::router())
        .merge(super::workspace::router())
        .merge(super::members::router())
        .merge(super::invitations::router())
        .merge(super::api_keys::router())
        .merge(super::mcp_grants::router())
        .merge(super::audit::router())
        .merge(super::monitors::router())
        .merge(super::projects::router())
        .merge(super::maintenance::router())
        .merge(super::status_pages::router())
        .merge(super::status_page_domains::router())
        .merge(super::public::router())
        .merge(super::subscribers::router())
        .merge(super::embed::router())
        .merge(super::heartbeats::router())
        .merge(super::events::router())
        .merge(super::push::router())
        .merge(super::regions::router())
        .merge(super::channels::router())
        .merge(super::alerts::router())
        .merge(super::escalation::router())
        .merge(super::incidents::router())
        .merge(super::postmortems::router())
        .api_route(
            "/openapi.json",
            get_with(serve_document, |op| {
                op.id("getOpenApiDocument")
                    .tag("Operations")
                    .summary("This document")
            }),
        )
}

async fn serve_document() -> Json<Value> {
    Json(document().clone())
}

/// Builds the routes and the document together, so they cannot disagree.
pub fn build() -> (axum::Router<AppState>, Value) {
    aide::generate::infer_responses(true);
    aide::generate::extract_schemas(true);
    // Aide reports where an explicit response wins over an inferred one; that is intended here.
    aide::generate::on_error(|e| tracing::debug!(error = %e, "openapi generation"));
    let mut api = OpenApi::default();
    let router = api_routes().finish_api(&mut api);
    let mut doc = serde_json::to_value(&api).unwrap_or_else(|_| json!({}));
    finish(&mut doc);
    // The router's build is the document's build: `/openapi.json` serves this one rather than
    // generating it a second time.
    let _ = DOC.set(doc.clone());
    (router, doc)
}

static DOC: OnceLock<Value> = OnceLock::new();

/// The document (built on first use, or kept from the router's build).
pub fn document() -> &'static Value {
    if let Some(doc) = DOC.get() {
        return doc;
    }
    // `build` fills `DOC` itself (the first build wins if two race).
    let (_, doc) = build();
    DOC.get_or_init(|| doc)
}

/// The document as committed: pretty-printed with a trailing newline.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(document()).unwrap_or_default();
    s.push('\n');
    s
}

/// Fills in what the routes do not say themselves: version, info, security schemes, and the
/// explicit marks of public operations.
fn finish(doc: &mut Value) {
    doc["openapi"] = json!("3.1.0");
    doc["info"] = json!({
        "title": "Tocsin API",
        "version": "0.1.0",
        "description": "Uptime monitoring, alerting and status pages. Authenticate with a personal access token (`Authorization: Bearer svc_...`) or the session cookie `svc.session_token`. Errors always use the `Error` envelope; clients branch on `code`."
    });
    let scopes: serde_json::Map<String, Value> = TOKEN_CAPABILITIES
        .iter()
        .map(|c| (c.as_str().to_string(), json!(c.describe())))
        .collect();
    let components = doc
        .as_object_mut()
        .map(|d| d.entry("components").or_insert_with(|| json!({})));
    if let Some(components) = components {
        components["securitySchemes"] = json!({
            "apiKey": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "svc_<token>",
                "description": "Personal access token (prefix `svc_`)."
            },
            "sessionCookie": {
                "type": "apiKey",
                "in": "cookie",
                "name": "svc.session_token",
                "description": "Session cookie set by the sign-in flow under /auth. Unsafe methods also need a matching Origin header."
            },
            "oauth2": {
                "type": "oauth2",
                "description": "OAuth 2.1 authorization code with PKCE (S256), for MCP clients. Discovery: /.well-known/oauth-authorization-server/auth.",
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "/auth/oauth2/authorize",
                        "tokenUrl": "/auth/oauth2/token",
                        "refreshUrl": "/auth/oauth2/token",
                        "scopes": scopes
                    }
                }
            },
            "publishableKey": {
                "type": "http",
                "scheme": "bearer",
                "description": "Read-only key scoped to one status page, safe in browser code; may also be sent as the query parameter `token`."
            }
        });
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, op) in item.iter_mut() {
                if !matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "patch" | "delete" | "head" | "options"
                ) {
                    continue;
                }
                let Some(op) = op.as_object_mut() else {
                    continue;
                };
                if !op.contains_key("x-svc-required-capabilities") {
                    op.insert("x-svc-required-capabilities".into(), json!([]));
                    op.insert("security".into(), json!([]));
                }
                let responses = op.entry("responses").or_insert_with(|| json!({}));
                if let Some(r) = responses.as_object_mut() {
                    r.entry("500").or_insert_with(|| {
                        json!({"description": "Internal error (`INTERNAL`)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
                    });
                }
            }
        }
    }
}
