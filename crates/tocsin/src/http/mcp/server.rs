//! The MCP server behind `/mcp`: what `initialize` advertises, `tools/list` (the document
//! [`tools::Catalog`] built once), `tools/call` (a tool's failure is a tool result with
//! `isError` carrying the REST envelope's `code` and `message`; only protocol faults are
//! JSON-RPC errors), resources for monitors and status pages, and two prompts. Each request
//! acts as the [`Caller`] the transport's auth step attached to it.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, ListPromptsResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::tools::{Catalog, Output};
use crate::auth::Caller;
use crate::domain::monitors;
use crate::domain::status_pages;
use crate::http::error::ApiError;
use crate::http::AppState;

const INSTRUCTIONS: &str = "Tocsin monitors websites and services, alerts people when they fail, \
and publishes status pages. Tools act on one workspace with the capabilities of the token used. \
Results are the REST API's JSON. A failing tool answers isError with the API's error `code` \
(e.g. MONITOR_NOT_FOUND, VALIDATION_ERROR, INSUFFICIENT_CAPABILITY) and `message`.";

const MONITOR_URI: &str = "tocsin://monitors/";
const STATUS_PAGE_URI: &str = "tocsin://status-pages/";

#[derive(Clone)]
pub struct TocsinMcp {
    core: AppState,
    catalog: Arc<Catalog>,
}

impl TocsinMcp {
    pub fn new(core: AppState, catalog: Arc<Catalog>) -> Self {
        TocsinMcp { core, catalog }
    }
}

/// The caller the `/mcp` auth step attached to this request.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("request without an authenticated caller", None))
}

/// A tool's answer as MCP content: the REST JSON as text, and as `structuredContent` (which
/// must be an object, so a list is under `items`).
fn success(output: Output) -> CallToolResult {
    let (value, version) = match output {
        Output::Body(v) => (v, None),
        Output::Versioned(v, n) => (v, Some(n)),
        Output::Removed(id) => (json!({"deleted": id}), None),
    };
    let text = value.to_string();
    let structured = match value {
        Value::Object(_) => value,
        other => json!({ "items": other }),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    if let Some(n) = version {
        let mut meta = MetaObject::new();
        meta.0.insert("version".into(), json!(n));
        result.meta = Some(meta);
    }
    result
}

/// A failed call as a tool error: the REST error envelope, as text and structured.
pub fn failure(e: ApiError) -> CallToolResult {
    if e.status().is_server_error() {
        tracing::error!(error = %e, "MCP tool failed");
    }
    let envelope = e.envelope();
    let value = serde_json::to_value(&envelope).unwrap_or_else(|_| json!({}));
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "{}: {}",
        envelope.code, envelope.message
    ))]);
    result.structured_content = Some(value);
    result
}

fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "triage_outage",
            Some("Triage an outage: find what is down, since when, what changed, and who was told."),
            Some(vec![PromptArgument::new("monitorId")
                .with_description("The monitor to start from (optional: otherwise every DOWN monitor)")
                .with_required(false)]),
        ),
        Prompt::new(
            "write_postmortem",
            Some("Write a postmortem from an incident: timeline from its updates and the monitors' heartbeats, impact, cause, follow-ups."),
            Some(vec![PromptArgument::new("incidentId")
                .with_description("The resolved incident to write up")
                .with_required(true)]),
        ),
    ]
}

fn prompt_text(name: &str, args: &serde_json::Map<String, Value>) -> Option<String> {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    match name {
        "triage_outage" => Some(match arg("monitorId") {
            Some(id) => format!(
                "Triage the outage of monitor {id}. Call get_monitor for its status and last check, \
                 list_heartbeats for the failing results (errors, status codes, regions), \
                 get_uptime for the last 24 hours, list_alerts with monitorId {id} to see whether \
                 the alert is acknowledged, and list_maintenance_windows in case it is planned. \
                 Then say what is failing, since when, in which regions, and propose next steps \
                 (acknowledge_alert, open_incident on the affected status page)."
            ),
            None => "Triage the current outage. Call get_monitor_stats, then search_monitors with \
                 status DOWN; for each, get_monitor and list_heartbeats to find the error, and \
                 list_alerts with status OPEN to see who has acknowledged. Group monitors failing \
                 for the same reason, say what is down since when, and propose next steps \
                 (acknowledge_alert, open_incident on the affected status page)."
                .to_string(),
        }),
        "write_postmortem" => {
            let id = arg("incidentId")?;
            Some(format!(
                "Write a postmortem for incident {id}. Call get_incident for its timeline of \
                 updates and affected components; for the monitors of those components, \
                 list_heartbeats and get_hourly_stats over the incident's span. Write Markdown \
                 with: summary, impact (who, how long), timeline (UTC), root cause, what went \
                 well, what went badly, and follow-up actions. Then offer to save it with \
                 create_postmortem (incidentId {id}) and, once approved, publish_postmortem."
            ))
        }
        _ => None,
    }
}

impl ServerHandler for TocsinMcp {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("tocsin", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.catalog.listed().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.catalog.get(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}: see tools/list", request.name),
                None,
            ));
        };
        let caller = caller_of(&context)?;
        let result = match tool
            .call(self.core.clone(), caller, request.arguments)
            .await
        {
            Ok(out) => success(out),
            Err(e) => failure(e),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caller = caller_of(&context)?;
        let mut out = Vec::new();
        // Each kind is listed when the token may read it.
        let query: Option<monitors::MonitorListQuery> = serde_json::from_value(json!({})).ok();
        let listed = match &query {
            Some(q) => monitors::list(self.core.cx(), &caller, q).await.ok(),
            None => None,
        };
        if let Some(list) = listed {
            for m in list {
                out.push(
                    Resource::new(format!("{MONITOR_URI}{}", m.id), m.name.clone())
                        .with_description("A monitor: settings, status and last check (JSON)")
                        .with_mime_type("application/json"),
                );
            }
        }
        if let Ok(pages) = status_pages::list(self.core.cx(), &caller).await {
            for p in pages {
                out.push(
                    Resource::new(format!("{STATUS_PAGE_URI}{}", p.id), p.name.clone())
                        .with_description("A status page (JSON)")
                        .with_mime_type("application/json"),
                );
            }
        }
        Ok(ListResourcesResult::with_all_items(out))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let uri = request.uri.as_str();
        let read = if let Some(id) = uri.strip_prefix(MONITOR_URI) {
            monitors::get(self.core.cx(), &caller, id)
                .await
                .map(|v| serde_json::to_value(v.value))
        } else if let Some(id) = uri.strip_prefix(STATUS_PAGE_URI) {
            status_pages::get(self.core.cx(), &caller, id)
                .await
                .map(|(p, _)| serde_json::to_value(p))
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri}"),
                None,
            ));
        };
        match read {
            Ok(Ok(v)) => {
                Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(v.to_string(), uri).with_mime_type("application/json")
                ])
                .into())
            }
            Ok(Err(e)) => Err(ErrorData::internal_error(e.to_string(), None)),
            Err(e) => {
                let env = ApiError::Domain(e).envelope();
                Err(ErrorData::resource_not_found(
                    format!("{}: {}", env.code, env.message),
                    serde_json::to_value(env).ok(),
                ))
            }
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let Some(text) = prompt_text(&request.name, &args) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt {} or missing argument: see prompts/list",
                    request.name
                ),
                None,
            ));
        };
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).into())
    }
}
