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
        .merge(super::billing::router())
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
        for (path, item) in routes_outside_aide() {
            paths.insert(path.to_string(), item);
        }
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

/// The routes served outside the documented router, described here by hand: the MCP transport
/// (`http::mcp`, whose bodies are JSON-RPC, free-form in this document) and the feeds of the
/// pages for people (`http::public::pages_router`).
fn routes_outside_aide() -> Vec<(&'static str, Value)> {
    let envelope = |description: &str| json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    let html = |description: &str| json!({"description": description, "content": {"text/html": {"schema": {"type": "string"}}}});
    let slug = json!({
        "name": "slug",
        "in": "path",
        "required": true,
        "description": "The status page's slug.",
        "schema": {"type": "string"}
    });
    let feed = |id: &str, kind: &str, media: &str| {
        json!({
            "get": {
                "operationId": id,
                "tags": ["Public status"],
                "summary": format!("A published status page's incidents as an {kind} feed, newest first, each with its updates (no credential)"),
                "description": "For feed readers. Private pages (`access.visibility` other than `PUBLIC`) read without access (the page cookie, or the session of a person the page admits) answer the same 404 page as an unknown slug, and with access are `Cache-Control: private, no-store`. Answers carry `ETag`, `Last-Modified` and `Cache-Control`; `If-None-Match` with the current tag is 304. Errors are small HTML pages, as for the page itself.",
                "parameters": [slug],
                "security": [],
                "x-svc-required-capabilities": [],
                "responses": {
                    "200": {"description": format!("The {kind} document"), "content": {media: {"schema": {"type": "string"}}}},
                    "304": {"description": "Not modified: the `If-None-Match` tag is current"},
                    "404": html("An HTML page: no published status page readable here"),
                    "503": html("An HTML page: try again in a moment")
                }
            }
        })
    };
    let mcp = json!({
        "post": {
            "operationId": "mcpTransport",
            "tags": ["MCP"],
            "summary": "The Model Context Protocol transport (Streamable HTTP): one JSON-RPC message per request (initialize, tools/list, tools/call, ...); needs an OAuth access token or a personal access token declaring the `mcp` surface",
            "description": "Request and response bodies are JSON-RPC 2.0 messages (free-form here). The answer is JSON, or an event stream (`text/event-stream`) when the server sends messages before the result. What a call may do is decided per tool by the caller's capabilities, so the transport itself requires none. A missing or bad token is 401 with `WWW-Authenticate` naming the protected resource metadata (`/.well-known/oauth-protected-resource`); a REST-only token is 403. The transport also answers `GET` (the server's event stream of a session) and `DELETE` (ending a session).",
            "security": [{"oauth2": []}, {"apiKey": []}],
            "x-svc-required-capabilities": [],
            "requestBody": {
                "required": true,
                "content": {"application/json": {"schema": {"description": "A JSON-RPC 2.0 request or notification"}}}
            },
            "responses": {
                "200": {
                    "description": "The JSON-RPC response",
                    "content": {
                        "application/json": {"schema": {"description": "A JSON-RPC 2.0 response"}},
                        "text/event-stream": {"schema": {"type": "string"}}
                    }
                },
                "202": {"description": "A notification or response was accepted; nothing to answer"},
                "400": envelope("Not a JSON-RPC message the transport accepts"),
                "401": envelope("No valid token (`UNAUTHORIZED`)"),
                "403": envelope("The token does not declare the `mcp` surface (`FORBIDDEN`)")
            }
        }
    });
    vec![
        ("/mcp", mcp),
        (
            "/s/{slug}/feed.rss",
            feed("getStatusPageRssFeed", "RSS 2.0", "application/rss+xml"),
        ),
        (
            "/s/{slug}/feed.atom",
            feed("getStatusPageAtomFeed", "Atom", "application/atom+xml"),
        ),
    ]
}
