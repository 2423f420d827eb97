//! The MCP tools: one row per tool (the `tool!` macro) naming the REST operation's line in
//! `auth::needs` (the declaration the REST route's extractor reads too), its input type and the
//! same `domain/` operation the REST handler calls. A row's requirement both gates the call and
//! is listed with the tool; its input schema is generated
//! by the project's schemars from the REST route's own request type (the path's ids and the
//! `If-Match` version become arguments beside the body's or query's fields); its result is the
//! REST response's JSON. The `tools/list` document is built once, in [`Catalog::build`].
//!
//! Billing (`/billing/...`) has no tool, on purpose: its operations need `billing:manage`, a
//! session-only capability no token can hold, so an agent never buys or reads a subscription.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{MetaObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::auth::error::AuthError;
use crate::auth::{needs, Caller, Capability, Requirement};
use crate::domain::monitors::{
    self as monitors, CreateMonitor, MonitorListQuery, MonitorPageQuery, UpdateMonitor,
};
use crate::domain::{
    alerts, channels, heartbeats, incidents, maintenance, pagination, postmortems, status_pages,
    DomainError,
};
use crate::http::error::ApiError;
use crate::http::extract::{parse_json, Validate};
use crate::http::AppState;

/// What a tool tells clients about its effects (MCP tool annotations).
#[derive(Debug, Clone, Copy)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
}

/// Reads nothing but reads.
const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
};
/// Makes something new on every call (a monitor, an incident, a check run, a test message).
const CREATE: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
};
/// Sets a state: calling it twice leaves the same state as once.
const SET: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: true,
};
/// Changes or removes what exists: data is lost or overwritten.
const OVERWRITE: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: true,
};

/// A call's arguments, split as the REST route splits its request: the path's ids, the
/// optional `If-Match` version, and the rest (the body or the query), as JSON.
pub struct Args {
    ids: Vec<String>,
    expected: Option<i64>,
    rest: Vec<u8>,
}

impl Args {
    fn id(&self, i: usize) -> &str {
        self.ids.get(i).map(String::as_str).unwrap_or_default()
    }

    /// The answer of an operation that removes the resource of the path's first id.
    fn removed(&self, done: Result<(), DomainError>) -> Result<Output, ApiError> {
        done?;
        Ok(Output::Removed(self.id(0).to_string()))
    }

    /// The body or query, deserialized and validated as the REST route does.
    fn input<T: DeserializeOwned + Validate>(&self) -> Result<T, ApiError> {
        parse_json(&self.rest)
    }
}

/// What an operation answered.
pub enum Output {
    /// The REST response body.
    Body(Value),
    /// The REST response body and the version its `ETag` carries.
    Versioned(Value, i64),
    /// A `204 No Content`: the id of what was removed.
    Removed(String),
}

type Run = fn(AppState, Caller, Args) -> BoxFuture<'static, Result<Output, ApiError>>;

/// One tool.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub hints: Hints,
    /// The path's ids, as argument names (`monitorId`, ...).
    pub ids: &'static [&'static str],
    /// Whether the REST route takes `If-Match` (here `expectedVersion`).
    pub versioned: bool,
    /// The capabilities of the REST operation's requirement.
    pub caps: &'static [Capability],
    require: fn(&Caller) -> Result<(), AuthError>,
    schema: fn() -> Map<String, Value>,
    run: Run,
}

impl ToolDef {
    /// A row of the table: `R` is the operation's requirement (an [`crate::auth::needs`] line, the
    /// one its REST route's extractor names), `I` its request type.
    fn new<R: Requirement, I: JsonSchema>(
        name: &'static str,
        description: &'static str,
        hints: Hints,
        ids: &'static [&'static str],
        versioned: bool,
        run: Run,
    ) -> ToolDef {
        ToolDef {
            name,
            description,
            hints,
            ids,
            versioned,
            caps: R::CAPS,
            require: Caller::require::<R>,
            schema: schema_of::<I>,
            run,
        }
    }
}

/// The input of a tool that takes nothing but ids.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

impl Validate for NoInput {}

fn body<T: Serialize>(v: T) -> Result<Output, ApiError> {
    Ok(Output::Body(to_json(&v)?))
}

fn versioned<T: Serialize>((v, version): (T, i64)) -> Result<Output, ApiError> {
    Ok(Output::Versioned(to_json(&v)?, version))
}

fn tagged<T: Serialize>(v: monitors::Versioned<T>) -> Result<Output, ApiError> {
    Ok(Output::Versioned(to_json(&v.value)?, v.version))
}

fn to_json<T: Serialize>(v: &T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::Domain(DomainError::Internal(e.into())))
}

/// One row of [`table`]:
///
/// `tool!(name: Need, Input, HINTS, [pathId, ...] if_match, "description", |core, caller, args, input| answer)`
///
/// `Need` is the operation's line in [`crate::auth::needs`] (the REST route's extractor names the
/// same line), `Input` the REST request's body or query type (the input schema, parsed and
/// validated before the answer runs, then bound to `input`), the ids are the REST path's
/// (read with `args.id(i)`), and `if_match` marks an operation the REST route version-locks
/// with `If-Match` (here `expectedVersion`, read as `args.expected`).
macro_rules! tool {
    ($name:ident: $need:ident, $input:ty, $hints:expr, [$($id:ident),*] $($lock:ident)?,
     $description:literal,
     |$core:ident, $caller:ident, $args:ident, $in:pat_param| $answer:expr) => {
        ToolDef::new::<needs::$need, $input>(
            stringify!($name),
            $description,
            $hints,
            &[$(stringify!($id)),*],
            tool!(@locked $($lock)?),
            |$core, $caller, $args| {
                Box::pin(async move {
                    let $in: $input = $args.input()?;
                    $answer
                })
            },
        )
    };
    (@locked) => { false };
    (@locked if_match) => { true };
}

/// Every tool.
fn table() -> Vec<ToolDef> {
    vec![
        // Monitors.
        tool!(list_monitors: ListMonitorsPage, MonitorPageQuery, READ, [],
            "List the workspace's monitors, one page at a time (cursor, limit) in id order, filtered by status, type, tag, project or a search text. Same as GET /monitors/page.",
            |core, caller, a, q| body(monitors::page(core.cx(), &caller, &q).await?)),
        tool!(search_monitors: ListMonitors, MonitorListQuery, READ, [],
            "Find monitors by a search text (name or target) and filters (status, type, tag, project); answers every match. Same as GET /monitors.",
            |core, caller, a, q| body(monitors::list(core.cx(), &caller, &q).await?)),
        tool!(get_monitor: GetMonitor, NoInput, READ, [monitorId],
            "One monitor: its settings, current status and last check. Same as GET /monitors/{monitorId}.",
            |core, caller, a, _| tagged(monitors::get(core.cx(), &caller, a.id(0)).await?)),
        tool!(create_monitor: CreateMonitor, CreateMonitor, CREATE, [],
            "Create a monitor (name and type required; config per type). A PUSH monitor's token is in this answer only. Same as POST /monitors.",
            |core, caller, a, q| body(monitors::create(core.cx(), &caller, &q).await?)),
        tool!(update_monitor: UpdateMonitor, UpdateMonitor, OVERWRITE, [monitorId] if_match,
            "Change a monitor's settings: absent fields stay, null clears a nullable one. Pass expectedVersion to refuse the change if the monitor changed since you read it. Same as PATCH /monitors/{monitorId}.",
            |core, caller, a, q| tagged(monitors::update(core.cx(), &caller, a.id(0), a.expected, &q).await?)),
        tool!(pause_monitor: PauseMonitor, NoInput, SET, [monitorId] if_match,
            "Stop checking a monitor; its status is kept. Same as POST /monitors/{monitorId}/pause.",
            |core, caller, a, _| tagged(monitors::pause(core.cx(), &caller, a.id(0), a.expected).await?)),
        tool!(resume_monitor: ResumeMonitor, NoInput, SET, [monitorId] if_match,
            "Start checking a paused monitor again, from PENDING. Same as POST /monitors/{monitorId}/resume.",
            |core, caller, a, _| tagged(monitors::resume(core.cx(), &caller, a.id(0), a.expected).await?)),
        tool!(delete_monitor: DeleteMonitor, NoInput, OVERWRITE, [monitorId] if_match,
            "Delete a monitor and all its history. Cannot be undone. Same as DELETE /monitors/{monitorId}.",
            |core, caller, a, _| a.removed(monitors::delete(core.cx(), &caller, a.id(0), a.expected).await)),
        tool!(check_monitor_now: CheckMonitor, NoInput, CREATE, [monitorId],
            "Run a monitor's check now, in the background; its results are heartbeats with the returned correlationId (list_heartbeats). Same as POST /monitors/{monitorId}/check.",
            |core, caller, a, _| body(monitors::check_now(core.runner(), core.on_demand(), &caller, a.id(0)).await?)),
        tool!(list_heartbeats: ListHeartbeats, heartbeats::HeartbeatQuery, READ, [monitorId],
            "A monitor's check results, newest first, filtered by time range, status, region or correlationId. Same as GET /monitors/{monitorId}/heartbeats.",
            |core, caller, a, q| body(heartbeats::list(core.cx(), &caller, a.id(0), &q).await?)),
        tool!(get_uptime: GetMonitorUptime, heartbeats::RangeQuery, READ, [monitorId],
            "A monitor's uptime percentage and average response time over a time range (default: the last 24 hours). Same as GET /monitors/{monitorId}/uptime.",
            |core, caller, a, q| body(heartbeats::uptime(core.cx(), &caller, a.id(0), &q).await?)),
        tool!(get_hourly_stats: ListHourlyStats, heartbeats::RangeQuery, READ, [monitorId],
            "A monitor's hourly figures (checks, failures, response times) over a time range. Same as GET /monitors/{monitorId}/stats/hourly.",
            |core, caller, a, q| body(heartbeats::hourly(core.cx(), &caller, a.id(0), &q).await?)),
        tool!(get_monitor_stats: GetMonitorStats, NoInput, READ, [],
            "How many of the workspace's monitors are up, down, degraded, paused... Same as GET /monitors/stats.",
            |core, caller, a, _| body(monitors::stats(core.cx(), &caller).await?)),
        // Maintenance windows.
        tool!(list_maintenance_windows: ListMaintenanceWindows, maintenance::WindowQuery, READ, [],
            "Maintenance windows, optionally of one monitor. Same as GET /maintenance-windows.",
            |core, caller, a, q| body(maintenance::list(core.cx(), &caller, q).await?)),
        tool!(create_maintenance_window: CreateMaintenanceWindow, maintenance::CreateMaintenanceWindow, CREATE, [],
            "Schedule a maintenance window (one-off or recurring) for some monitors: checks in it alert nobody. Same as POST /maintenance-windows.",
            |core, caller, a, q| body(maintenance::create(core.cx(), &caller, q).await?)),
        tool!(delete_maintenance_window: DeleteMaintenanceWindow, NoInput, OVERWRITE, [windowId],
            "Delete a maintenance window. Same as DELETE /maintenance-windows/{windowId}.",
            |core, caller, a, _| a.removed(maintenance::delete(core.cx(), &caller, a.id(0)).await)),
        // Alerts.
        tool!(list_alerts: ListAlerts, alerts::AlertPageQuery, READ, [],
            "Alerts (a monitor that went DOWN), newest first, filtered by status or monitor, one page at a time. Same as GET /alerts.",
            |core, caller, a, q| body(alerts::page(core.cx(), &caller, &q).await?)),
        tool!(acknowledge_alert: AcknowledgeAlert, NoInput, SET, [alertId],
            "Acknowledge an alert: escalation stops, and everyone sees who took it. Same as POST /alerts/{alertId}/acknowledge.",
            |core, caller, a, _| body(alerts::acknowledge(core.cx(), &caller, a.id(0)).await?)),
        // Notification channels.
        tool!(list_notification_channels: ListNotificationChannels, pagination::PageParams, READ, [],
            "Notification channels (email, Slack, webhooks...), secrets masked, one page at a time. Same as GET /notification-channels.",
            |core, caller, a, q| body(channels::list(core.cx(), &caller, &q).await?)),
        tool!(test_notification_channel: TestNotificationChannel, NoInput, CREATE, [channelId],
            "Send a test message through a channel; answers the delivery. Same as POST /notification-channels/{channelId}/test.",
            |core, caller, a, _| body(channels::send_test(core.cx(), &caller, a.id(0)).await?)),
        // Status pages.
        tool!(list_status_pages: ListStatusPages, NoInput, READ, [],
            "The workspace's status pages. Same as GET /status-pages.",
            |core, caller, a, _| body(status_pages::list(core.cx(), &caller).await?)),
        tool!(get_status_page: GetStatusPage, NoInput, READ, [pageId],
            "One status page. Same as GET /status-pages/{pageId}.",
            |core, caller, a, _| versioned(status_pages::get(core.cx(), &caller, a.id(0)).await?)),
        // Incidents.
        tool!(list_incidents: ListIncidents, incidents::IncidentQuery, READ, [],
            "Incidents of the workspace's status pages, filtered by page, status or visibility. Same as GET /incidents.",
            |core, caller, a, q| body(incidents::list(core.cx(), &caller, q).await?)),
        tool!(get_incident: GetIncident, NoInput, READ, [incidentId],
            "One incident with its updates. Same as GET /incidents/{incidentId}.",
            |core, caller, a, _| versioned(incidents::get(core.cx(), &caller, a.id(0)).await?)),
        tool!(open_incident: CreateIncident, incidents::CreateIncident, CREATE, [],
            "Open an incident on a status page (draft or published). Same as POST /incidents.",
            |core, caller, a, q| body(incidents::create(core.cx(), &caller, q).await?)),
        tool!(update_incident: UpdateIncident, incidents::UpdateIncident, OVERWRITE, [incidentId] if_match,
            "Change an incident's title, impact, components or schedule. Same as PATCH /incidents/{incidentId}.",
            |core, caller, a, q| versioned(incidents::update(core.cx(), &caller, a.id(0), a.expected, q).await?)),
        tool!(post_incident_update: PostIncidentUpdate, incidents::PostIncidentUpdate, CREATE, [incidentId] if_match,
            "Post an update on an incident (its new status and a message). Same as POST /incidents/{incidentId}/updates.",
            |core, caller, a, q| versioned(incidents::post_update(core.cx(), &caller, a.id(0), a.expected, q).await?)),
        tool!(resolve_incident: ResolveIncident, incidents::ResolveIncident, SET, [incidentId] if_match,
            "Resolve an incident, with an optional closing message. Same as POST /incidents/{incidentId}/resolve.",
            |core, caller, a, q| versioned(incidents::resolve(core.cx(), &caller, a.id(0), a.expected, q).await?)),
        tool!(publish_incident: PublishIncident, NoInput, SET, [incidentId] if_match,
            "Publish a draft incident on its status page. Same as POST /incidents/{incidentId}/publish.",
            |core, caller, a, _| versioned(incidents::publish(core.cx(), &caller, a.id(0), a.expected).await?)),
        // Postmortems.
        tool!(list_postmortems: ListPostmortems, postmortems::PostmortemQuery, READ, [],
            "Postmortems, optionally of one incident. Same as GET /postmortems.",
            |core, caller, a, q| body(postmortems::list(core.cx(), &caller, q).await?)),
        tool!(get_postmortem: GetPostmortem, NoInput, READ, [postmortemId],
            "One postmortem (Markdown and rendered HTML). Same as GET /postmortems/{postmortemId}.",
            |core, caller, a, _| versioned(postmortems::get(core.cx(), &caller, a.id(0)).await?)),
        tool!(create_postmortem: CreatePostmortem, postmortems::CreatePostmortem, CREATE, [],
            "Write a postmortem (Markdown) for a resolved incident; it stays a draft until published. Same as POST /postmortems.",
            |core, caller, a, q| body(postmortems::create(core.cx(), &caller, q).await?)),
        tool!(publish_postmortem: PublishPostmortem, NoInput, SET, [postmortemId] if_match,
            "Publish a postmortem on its incident's status page. Same as POST /postmortems/{postmortemId}/publish.",
            |core, caller, a, _| versioned(postmortems::publish(core.cx(), &caller, a.id(0), a.expected).await?)),
    ]
}

/// The JSON Schema of `T` as the project's schemars writes it (draft 2020-12, definitions in
/// `$defs`), the same generator and type the API document uses for the REST request.
fn schema_of<T: JsonSchema>() -> Map<String, Value> {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    match generator.into_root_schema_for::<T>().to_value() {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A tool's input schema: its request type's schema with the path's ids (required strings)
/// and, for version-locked operations, `expectedVersion`.
fn input_schema(d: &ToolDef) -> Map<String, Value> {
    let mut schema = (d.schema)();
    schema.remove("$schema");
    schema.remove("title");
    let is_object = schema.get("type").and_then(Value::as_str) == Some("object")
        && !schema.contains_key("oneOf")
        && !schema.contains_key("anyOf");
    if !is_object {
        // A request type that is not a plain object (a tagged union): its fields sit beside
        // the ids through allOf.
        let defs = schema.remove("$defs");
        let inner = Value::Object(std::mem::take(&mut schema));
        schema.insert("type".into(), json!("object"));
        schema.insert("allOf".into(), json!([inner]));
        if let Some(defs) = defs {
            schema.insert("$defs".into(), defs);
        }
    }
    let mut extra = Map::new();
    for id in d.ids {
        extra.insert((*id).into(), json!({"type": "string", "description": format!("The {id} of the resource (its `id`).")}));
    }
    if d.versioned {
        extra.insert(
            "expectedVersion".into(),
            json!({"type": "integer", "minimum": 1, "description": "Refuse the change (VERSION_CONFLICT) unless the resource is still at this version (the `version` of the last answer's _meta); the REST If-Match header."}),
        );
    }
    let props = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        for (k, v) in extra {
            p.insert(k, v);
        }
    }
    if !d.ids.is_empty() {
        let required = schema.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = required {
            for id in d.ids {
                r.push(json!(id));
            }
        }
    }
    schema
}

/// The tools, by name, and the `tools/list` document, built once.
pub struct Catalog {
    defs: Vec<ToolDef>,
    by_name: HashMap<&'static str, usize>,
    listed: Vec<Tool>,
}

impl Catalog {
    pub fn build() -> Catalog {
        let defs = table();
        let by_name = defs.iter().enumerate().map(|(i, d)| (d.name, i)).collect();
        let listed = defs
            .iter()
            .map(|d| {
                let caps: Vec<&str> = d.caps.iter().map(|c| c.as_str()).collect();
                let mut meta = MetaObject::new();
                meta.0.insert("requiredCapabilities".into(), json!(caps));
                Tool::new(d.name, d.description, Arc::new(input_schema(d)))
                    .with_annotations(
                        ToolAnnotations::new()
                            .read_only(d.hints.read_only)
                            .destructive(d.hints.destructive)
                            .idempotent(d.hints.idempotent)
                            .open_world(false),
                    )
                    .with_meta(meta)
            })
            .collect();
        Catalog {
            defs,
            by_name,
            listed,
        }
    }

    /// The `tools/list` answer.
    pub fn listed(&self) -> &[Tool] {
        &self.listed
    }

    pub fn get(&self, name: &str) -> Option<&ToolDef> {
        self.by_name.get(name).map(|&i| &self.defs[i])
    }
}

impl ToolDef {
    /// Authorises `caller` with the REST operation's marker, splits the arguments and runs the
    /// operation.
    pub async fn call(
        &self,
        core: AppState,
        caller: Caller,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Output, ApiError> {
        (self.require)(&caller)?;
        let mut map = arguments.unwrap_or_default();
        let mut ids = Vec::with_capacity(self.ids.len());
        for name in self.ids {
            match map.remove(*name) {
                Some(Value::String(s)) if !s.is_empty() => ids.push(s),
                Some(_) => return Err(ApiError::field(*name, "must be a non-empty string")),
                None => return Err(ApiError::field(*name, "is required")),
            }
        }
        let expected = if self.versioned {
            match map.remove("expectedVersion") {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_i64().filter(|n| *n >= 1) {
                    Some(n) => Some(n),
                    None => {
                        return Err(ApiError::field(
                            "expectedVersion",
                            "must be a whole number of at least 1",
                        ))
                    }
                },
            }
        } else {
            None
        };
        let rest = serde_json::to_vec(&Value::Object(map))
            .map_err(|e| ApiError::Domain(DomainError::Internal(e.into())))?;
        (self.run)(
            core,
            caller,
            Args {
                ids,
                expected,
                rest,
            },
        )
        .await
    }
}
