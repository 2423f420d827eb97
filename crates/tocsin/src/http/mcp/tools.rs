//! The MCP tools: one row per tool naming the REST operation's requirement marker
//! (`auth::caps`), its input type and the same `domain/` operation the REST handler calls. A
//! row's marker both gates the call and is listed with the tool; its input schema is generated
//! by the project's schemars from the REST route's own request type (the path's ids and the
//! `If-Match` version become arguments beside the body's or query's fields); its result is the
//! REST response's JSON. The `tools/list` document is built once, in [`Catalog::build`].

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{MetaObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::app::Core;
use crate::auth::{caps, Caller, Capability, Requirement};
use crate::domain::monitors::{
    self as monitors, CreateMonitor, MonitorListQuery, MonitorPageQuery, UpdateMonitor,
};
use crate::domain::{
    alerts, channels, heartbeats, incidents, maintenance, pagination, postmortems, status_pages,
    DomainError,
};
use crate::http::error::ApiError;
use crate::http::extract::{parse_json, Validate};

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

type Run = fn(Core, Caller, Args) -> BoxFuture<'static, Result<Output, ApiError>>;

/// One tool.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub hints: Hints,
    /// The path's ids, as argument names (`monitorId`, ...).
    pub ids: &'static [&'static str],
    /// Whether the REST route takes `If-Match` (here `expectedVersion`).
    pub versioned: bool,
    /// The capabilities of the REST operation's marker.
    pub caps: &'static [Capability],
    require: fn(&Caller) -> Result<(), DomainError>,
    schema: fn() -> Map<String, Value>,
    run: Run,
}

/// A row of the table: `R` is the REST route's requirement marker, `I` its request type.
fn def<R: Requirement, I: JsonSchema>(
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

fn to_json<T: Serialize>(v: &T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(|e| ApiError::Domain(DomainError::Internal(e.into())))
}

/// Every tool.
fn table() -> Vec<ToolDef> {
    use caps::*;
    const MONITOR: &[&str] = &["monitorId"];
    vec![
        // Monitors.
        def::<MonitorsRead, MonitorPageQuery>(
            "list_monitors",
            "List the workspace's monitors, one page at a time (cursor, limit) in id order, filtered by status, type, tag, project or a search text. Same as GET /monitors/page.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(monitors::page(&core, &caller, &a.input::<MonitorPageQuery>()?).await?)
                })
            },
        ),
        def::<MonitorsRead, MonitorListQuery>(
            "search_monitors",
            "Find monitors by a search text (name or target) and filters (status, type, tag, project); answers every match. Same as GET /monitors.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(monitors::list(&core, &caller, &a.input::<MonitorListQuery>()?).await?)
                })
            },
        ),
        def::<MonitorsRead, NoInput>(
            "get_monitor",
            "One monitor: its settings, current status and last check. Same as GET /monitors/{monitorId}.",
            READ,
            MONITOR,
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    let v = monitors::get(&core, &caller, a.id(0)).await?;
                    Ok(Output::Versioned(to_json(&v.value)?, v.version))
                })
            },
        ),
        def::<MonitorsWrite, CreateMonitor>(
            "create_monitor",
            "Create a monitor (name and type required; config per type). A PUSH monitor's token is in this answer only. Same as POST /monitors.",
            CREATE,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(monitors::create(&core, &caller, &a.input::<CreateMonitor>()?).await?)
                })
            },
        ),
        def::<MonitorsWrite, UpdateMonitor>(
            "update_monitor",
            "Change a monitor's settings: absent fields stay, null clears a nullable one. Pass expectedVersion to refuse the change if the monitor changed since you read it. Same as PATCH /monitors/{monitorId}.",
            OVERWRITE,
            MONITOR,
            true,
            |core, caller, a| {
                Box::pin(async move {
                    let input = a.input::<UpdateMonitor>()?;
                    let v = monitors::update(&core, &caller, a.id(0), a.expected, &input).await?;
                    Ok(Output::Versioned(to_json(&v.value)?, v.version))
                })
            },
        ),
        def::<MonitorsWrite, NoInput>(
            "pause_monitor",
            "Stop checking a monitor; its status is kept. Same as POST /monitors/{monitorId}/pause.",
            SET,
            MONITOR,
            true,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    let v = monitors::pause(&core, &caller, a.id(0), a.expected).await?;
                    Ok(Output::Versioned(to_json(&v.value)?, v.version))
                })
            },
        ),
        def::<MonitorsWrite, NoInput>(
            "resume_monitor",
            "Start checking a paused monitor again, from PENDING. Same as POST /monitors/{monitorId}/resume.",
            SET,
            MONITOR,
            true,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    let v = monitors::resume(&core, &caller, a.id(0), a.expected).await?;
                    Ok(Output::Versioned(to_json(&v.value)?, v.version))
                })
            },
        ),
        def::<MonitorsDelete, NoInput>(
            "delete_monitor",
            "Delete a monitor and all its history. Cannot be undone. Same as DELETE /monitors/{monitorId}.",
            OVERWRITE,
            MONITOR,
            true,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    monitors::delete(&core, &caller, a.id(0), a.expected).await?;
                    Ok(Output::Removed(a.id(0).to_string()))
                })
            },
        ),
        def::<MonitorsWrite, NoInput>(
            "check_monitor_now",
            "Run a monitor's check now, in the background; its results are heartbeats with the returned correlationId (list_heartbeats). Same as POST /monitors/{monitorId}/check.",
            CREATE,
            MONITOR,
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    body(monitors::check_now(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        def::<MonitorsRead, heartbeats::HeartbeatQuery>(
            "list_heartbeats",
            "A monitor's check results, newest first, filtered by time range, status, region or correlationId. Same as GET /monitors/{monitorId}/heartbeats.",
            READ,
            MONITOR,
            false,
            |core, caller, a| {
                Box::pin(async move {
                    let q = a.input::<heartbeats::HeartbeatQuery>()?;
                    body(heartbeats::list(&core, &caller, a.id(0), &q).await?)
                })
            },
        ),
        def::<MonitorsRead, heartbeats::RangeQuery>(
            "get_uptime",
            "A monitor's uptime percentage and average response time over a time range (default: the last 24 hours). Same as GET /monitors/{monitorId}/uptime.",
            READ,
            MONITOR,
            false,
            |core, caller, a| {
                Box::pin(async move {
                    let q = a.input::<heartbeats::RangeQuery>()?;
                    body(heartbeats::uptime(&core, &caller, a.id(0), &q).await?)
                })
            },
        ),
        def::<MonitorsRead, heartbeats::RangeQuery>(
            "get_hourly_stats",
            "A monitor's hourly figures (checks, failures, response times) over a time range. Same as GET /monitors/{monitorId}/stats/hourly.",
            READ,
            MONITOR,
            false,
            |core, caller, a| {
                Box::pin(async move {
                    let q = a.input::<heartbeats::RangeQuery>()?;
                    body(heartbeats::hourly(&core, &caller, a.id(0), &q).await?)
                })
            },
        ),
        def::<MonitorsRead, NoInput>(
            "get_monitor_stats",
            "How many of the workspace's monitors are up, down, degraded, paused... Same as GET /monitors/stats.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    body(monitors::stats(&core, &caller).await?)
                })
            },
        ),
        // Maintenance windows.
        def::<MonitorsRead, maintenance::WindowQuery>(
            "list_maintenance_windows",
            "Maintenance windows, optionally of one monitor. Same as GET /maintenance-windows.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(maintenance::list(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<MaintenanceWrite, maintenance::CreateMaintenanceWindow>(
            "create_maintenance_window",
            "Schedule a maintenance window (one-off or recurring) for some monitors: checks in it alert nobody. Same as POST /maintenance-windows.",
            CREATE,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(maintenance::create(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<MaintenanceWrite, NoInput>(
            "delete_maintenance_window",
            "Delete a maintenance window. Same as DELETE /maintenance-windows/{windowId}.",
            OVERWRITE,
            &["windowId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    maintenance::delete(&core, &caller, a.id(0)).await?;
                    Ok(Output::Removed(a.id(0).to_string()))
                })
            },
        ),
        // Alerts.
        def::<MonitorsRead, alerts::AlertPageQuery>(
            "list_alerts",
            "Alerts (a monitor that went DOWN), newest first, filtered by status or monitor, one page at a time. Same as GET /alerts.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(alerts::page(&core, &caller, &a.input::<alerts::AlertPageQuery>()?).await?)
                })
            },
        ),
        def::<MonitorsWrite, NoInput>(
            "acknowledge_alert",
            "Acknowledge an alert: escalation stops, and everyone sees who took it. Same as POST /alerts/{alertId}/acknowledge.",
            SET,
            &["alertId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    body(alerts::acknowledge(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        // Notification channels.
        def::<NotificationsRead, pagination::PageParams>(
            "list_notification_channels",
            "Notification channels (email, Slack, webhooks...), secrets masked, one page at a time. Same as GET /notification-channels.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(channels::list(&core, &caller, &a.input::<pagination::PageParams>()?).await?)
                })
            },
        ),
        def::<NotificationsWrite, NoInput>(
            "test_notification_channel",
            "Send a test message through a channel; answers the delivery. Same as POST /notification-channels/{channelId}/test.",
            CREATE,
            &["channelId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    body(channels::send_test(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        // Status pages.
        def::<StatusPagesRead, NoInput>(
            "list_status_pages",
            "The workspace's status pages. Same as GET /status-pages.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    body(status_pages::list(&core, &caller).await?)
                })
            },
        ),
        def::<StatusPagesRead, NoInput>(
            "get_status_page",
            "One status page. Same as GET /status-pages/{pageId}.",
            READ,
            &["pageId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    versioned(status_pages::get(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        // Incidents.
        def::<IncidentsRead, incidents::IncidentQuery>(
            "list_incidents",
            "Incidents of the workspace's status pages, filtered by page, status or visibility. Same as GET /incidents.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(incidents::list(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<IncidentsRead, NoInput>(
            "get_incident",
            "One incident with its updates. Same as GET /incidents/{incidentId}.",
            READ,
            &["incidentId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    versioned(incidents::get(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        def::<IncidentsWrite, incidents::CreateIncident>(
            "open_incident",
            "Open an incident on a status page (draft or published). Same as POST /incidents.",
            CREATE,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(incidents::create(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<IncidentsWrite, incidents::UpdateIncident>(
            "update_incident",
            "Change an incident's title, impact, components or schedule. Same as PATCH /incidents/{incidentId}.",
            OVERWRITE,
            &["incidentId"],
            true,
            |core, caller, a| {
                Box::pin(async move {
                    let input = a.input()?;
                    versioned(incidents::update(&core, &caller, a.id(0), a.expected, input).await?)
                })
            },
        ),
        def::<IncidentsWrite, incidents::PostIncidentUpdate>(
            "post_incident_update",
            "Post an update on an incident (its new status and a message). Same as POST /incidents/{incidentId}/updates.",
            CREATE,
            &["incidentId"],
            true,
            |core, caller, a| {
                Box::pin(async move {
                    let input = a.input()?;
                    versioned(
                        incidents::post_update(&core, &caller, a.id(0), a.expected, input).await?,
                    )
                })
            },
        ),
        def::<IncidentsWrite, incidents::ResolveIncident>(
            "resolve_incident",
            "Resolve an incident, with an optional closing message. Same as POST /incidents/{incidentId}/resolve.",
            SET,
            &["incidentId"],
            true,
            |core, caller, a| {
                Box::pin(async move {
                    let input = a.input()?;
                    versioned(incidents::resolve(&core, &caller, a.id(0), a.expected, input).await?)
                })
            },
        ),
        def::<IncidentsWrite, NoInput>(
            "publish_incident",
            "Publish a draft incident on its status page. Same as POST /incidents/{incidentId}/publish.",
            SET,
            &["incidentId"],
            true,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    versioned(incidents::publish(&core, &caller, a.id(0), a.expected).await?)
                })
            },
        ),
        // Postmortems.
        def::<PostmortemsRead, postmortems::PostmortemQuery>(
            "list_postmortems",
            "Postmortems, optionally of one incident. Same as GET /postmortems.",
            READ,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(postmortems::list(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<PostmortemsRead, NoInput>(
            "get_postmortem",
            "One postmortem (Markdown and rendered HTML). Same as GET /postmortems/{postmortemId}.",
            READ,
            &["postmortemId"],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    versioned(postmortems::get(&core, &caller, a.id(0)).await?)
                })
            },
        ),
        def::<PostmortemsWrite, postmortems::CreatePostmortem>(
            "create_postmortem",
            "Write a postmortem (Markdown) for a resolved incident; it stays a draft until published. Same as POST /postmortems.",
            CREATE,
            &[],
            false,
            |core, caller, a| {
                Box::pin(async move {
                    body(postmortems::create(&core, &caller, a.input()?).await?)
                })
            },
        ),
        def::<PostmortemsWrite, NoInput>(
            "publish_postmortem",
            "Publish a postmortem on its incident's status page. Same as POST /postmortems/{postmortemId}/publish.",
            SET,
            &["postmortemId"],
            true,
            |core, caller, a| {
                Box::pin(async move {
                    a.input::<NoInput>()?;
                    versioned(postmortems::publish(&core, &caller, a.id(0), a.expected).await?)
                })
            },
        ),
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
        core: Core,
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
