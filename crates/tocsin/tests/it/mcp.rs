//! The MCP transport at `/mcp` against the real server, on the backend under test: protocol
//! version negotiation and `initialize` with an `Mcp-Session-Id`, `tools/list` (annotations,
//! input schemas from the REST request types), `tools/call` of get/create monitor and
//! acknowledge alert answering the REST JSON, a missing capability and a failed operation as
//! tool errors with the envelope's code, an unknown tool as a JSON-RPC error, the surface rules
//! (403s both ways), the 401 challenge naming the protected-resource metadata, ending a session
//! with DELETE, and (on PostgreSQL) a session opened on one node served by another.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::clock::{tick, T0};
use common::target::Target;
use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::{Client, Method};
use serde_json::{json, Value};

const VERSION: &str = "2025-06-18";

/// A minimal Streamable HTTP client: JSON-RPC over POST, answers read from JSON or SSE.
struct Mcp {
    client: Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: u64,
}

/// The JSON-RPC messages of a response body, whether `application/json` or an SSE stream.
fn messages(content_type: &str, text: &str) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect()
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(text).unwrap()]
    }
}

impl Mcp {
    fn new(base: &str, token: &str) -> Mcp {
        Mcp {
            client: Client::new(),
            url: format!("{base}/mcp"),
            token: token.to_string(),
            session: None,
            next_id: 1,
        }
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        let mut req = self
            .client
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(s) = &self.session {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", VERSION);
        }
        req.send().await.unwrap()
    }

    /// Sends a request; returns the HTTP status and the JSON-RPC response to it.
    async fn request(&mut self, method: &str, params: Value) -> (u16, Value) {
        let id = self.next_id;
        self.next_id += 1;
        let res = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let status = res.status().as_u16();
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = res.text().await.unwrap();
        let answer = messages(&ct, &text)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| json!({"raw": text}));
        (status, answer)
    }

    /// `initialize` and `notifications/initialized`; returns the initialize result.
    async fn initialize(&mut self, version: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let res = self
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "tocsin-test", "version": "1"}
                }}),
            )
            .await;
        assert_eq!(res.status().as_u16(), 200);
        self.session = res
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        assert!(self.session.is_some(), "initialize opens a session");
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = res.text().await.unwrap();
        let answer = messages(&ct, &text)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap();
        let res = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(res.status().as_u16(), 202);
        answer["result"].clone()
    }

    /// `tools/call`; returns the tool result.
    async fn call(&mut self, name: &str, args: Value) -> Value {
        let (status, answer) = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await;
        assert_eq!(status, 200, "{answer}");
        assert!(answer.get("result").is_some(), "{name}: {answer}");
        answer["result"].clone()
    }
}

fn ok(result: &Value) -> Value {
    assert_eq!(result["isError"], json!(false), "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    let structured = result["structuredContent"].clone();
    if text.is_object() {
        assert_eq!(text, structured, "text and structured content agree");
    } else {
        assert_eq!(structured, json!({"items": text}));
    }
    text
}

fn tool_error(result: &Value, code: &str) -> Value {
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(result["structuredContent"]["code"], json!(code), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("{code}: ")), "{text}");
    result["structuredContent"].clone()
}

#[tokio::test]
async fn initialize_negotiates_the_version_and_opens_a_session() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token_on(&["monitors:read"], &["mcp"]).await;

    let mut mcp = Mcp::new(&srv.base, &token);
    let init = mcp.initialize(VERSION).await;
    assert_eq!(init["protocolVersion"], VERSION);
    assert_eq!(init["serverInfo"]["name"], "tocsin");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
    assert!(init["capabilities"]["prompts"].is_object(), "{init}");
    assert!(init["instructions"].as_str().unwrap().contains("Tocsin"));
    // The session serves the next requests.
    let (status, answer) = mcp.request("ping", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(answer["result"], json!({}), "{answer}");

    // A version the server does not speak: it answers one it does.
    let mut other = Mcp::new(&srv.base, &token);
    let init = other.initialize("1999-01-01").await;
    let offered = init["protocolVersion"].as_str().unwrap();
    assert_ne!(offered, "1999-01-01");
    assert!(offered.starts_with("20"), "{offered}");
    srv.stop().await;
}

#[tokio::test]
async fn tools_list_names_every_tool_with_annotations_and_the_rest_schemas() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token_on(&["monitors:read"], &["mcp"]).await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let (_, answer) = mcp.request("tools/list", json!({})).await;
    let tools = answer["result"]["tools"].as_array().unwrap().clone();
    let by_name = |n: &str| -> Value {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no tool {n}"))
            .clone()
    };
    for name in [
        "list_monitors",
        "search_monitors",
        "get_monitor",
        "create_monitor",
        "update_monitor",
        "pause_monitor",
        "resume_monitor",
        "delete_monitor",
        "check_monitor_now",
        "list_heartbeats",
        "get_uptime",
        "get_hourly_stats",
        "get_monitor_stats",
        "list_maintenance_windows",
        "create_maintenance_window",
        "delete_maintenance_window",
        "list_alerts",
        "acknowledge_alert",
        "list_notification_channels",
        "test_notification_channel",
        "list_status_pages",
        "get_status_page",
        "list_incidents",
        "get_incident",
        "open_incident",
        "update_incident",
        "resolve_incident",
        "publish_incident",
        "list_postmortems",
        "get_postmortem",
        "create_postmortem",
        "publish_postmortem",
    ] {
        let t = by_name(name);
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["description"].as_str().unwrap().len() > 10);
    }
    for t in &tools {
        let a = &t["annotations"];
        // Read-only tools are never destructive; every tool says what it is.
        assert!(a["readOnlyHint"].is_boolean(), "{t}");
        if a["readOnlyHint"] == json!(true) {
            assert_eq!(a["destructiveHint"], json!(false), "{t}");
        }
    }

    let get = by_name("get_monitor");
    assert_eq!(get["annotations"]["readOnlyHint"], json!(true));
    assert_eq!(get["inputSchema"]["required"], json!(["monitorId"]));
    assert_eq!(
        get["_meta"]["requiredCapabilities"],
        json!(["monitors:read"])
    );
    let delete = by_name("delete_monitor");
    assert_eq!(delete["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(delete["annotations"]["destructiveHint"], json!(true));
    assert_eq!(
        delete["_meta"]["requiredCapabilities"],
        json!(["monitors:delete"])
    );
    let create = by_name("create_monitor");
    assert_eq!(create["annotations"]["idempotentHint"], json!(false));
    assert_eq!(create["annotations"]["destructiveHint"], json!(false));
    let ack = by_name("acknowledge_alert");
    assert_eq!(ack["annotations"]["idempotentHint"], json!(true));
    assert_eq!(
        ack["_meta"]["requiredCapabilities"],
        json!(["monitors:write"])
    );

    // The input schema is the REST request's: the same properties as the API document's
    // CreateMonitor, and the path's id beside UpdateMonitor's fields.
    let doc = json_of(
        Client::new()
            .get(srv.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&create["inputSchema"]["properties"]),
        keys(&doc["components"]["schemas"]["CreateMonitor"]["properties"])
    );
    let update = by_name("update_monitor");
    let mut want = keys(&doc["components"]["schemas"]["UpdateMonitor"]["properties"]);
    want.push("expectedVersion".into());
    want.push("monitorId".into());
    want.sort();
    assert_eq!(keys(&update["inputSchema"]["properties"]), want);
    srv.stop().await;
}

/// `{monitorId}` and `{monitor_id}` alike: a path with its parameters' names dropped.
fn path_shape(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn every_tool_requires_what_its_rest_operation_requires() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token_on(&["monitors:read"], &["mcp"]).await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let (_, answer) = mcp.request("tools/list", json!({})).await;
    let tools = answer["result"]["tools"].as_array().unwrap().clone();
    assert!(tools.len() >= 30, "{}", tools.len());
    let doc = json_of(
        Client::new()
            .get(srv.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    for t in &tools {
        // Each description ends by naming its REST operation: "Same as GET /monitors/{monitorId}."
        let description = t["description"].as_str().unwrap();
        let (_, same) = description
            .rsplit_once("Same as ")
            .unwrap_or_else(|| panic!("{} names no REST operation", t["name"]));
        let (method, path) = same.trim_end_matches('.').split_once(' ').unwrap();
        let shape = path_shape(path);
        let (_, item) = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(p, _)| path_shape(p) == shape)
            .unwrap_or_else(|| panic!("{}: no REST path {path}", t["name"]));
        let op = &item[method.to_lowercase()];
        assert!(op.is_object(), "{}: no {method} {path}", t["name"]);
        assert_eq!(
            t["_meta"]["requiredCapabilities"], op["x-svc-required-capabilities"],
            "{} and {method} {path} must require the same",
            t["name"]
        );
        // The path's parameters are the tool's required arguments.
        let required = t["inputSchema"]["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for p in path.split('{').skip(1) {
            let id = p.split('}').next().unwrap();
            assert!(
                required.contains(&json!(id)),
                "{}: {id} not required",
                t["name"]
            );
        }
    }
    srv.stop().await;
}

#[tokio::test]
async fn tools_call_creates_and_reads_monitors_as_the_rest_api_answers_them() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    let rest = Bearer::new(&srv.base, &ada.token(&["monitors:read"]).await);
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;

    let created = ok(&mcp
        .call(
            "create_monitor",
            json!({"name": "api", "type": "HTTP", "url": "http://127.0.0.1:9/health", "interval": 60}),
        )
        .await);
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["name"], "api");
    let via_rest = json_of(
        rest.call(Method::GET, &format!("/monitors/{id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(via_rest, created);

    let got = mcp.call("get_monitor", json!({"monitorId": id})).await;
    assert_eq!(ok(&got), via_rest);
    assert_eq!(got["_meta"]["version"], json!(1), "{got}");

    // Lists are the REST array, under `items` in the structured content.
    let found = ok(&mcp.call("search_monitors", json!({"search": "api"})).await);
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(found[0]["id"], json!(id));

    // Failures are tool errors carrying the envelope.
    let missing = mcp
        .call("get_monitor", json!({"monitorId": "mon_nope"}))
        .await;
    tool_error(&missing, "MONITOR_NOT_FOUND");
    let invalid = mcp.call("create_monitor", json!({"name": "x"})).await;
    let env = tool_error(&invalid, "VALIDATION_ERROR");
    assert_eq!(env["field"], "type", "{env}");
    let no_id = mcp.call("get_monitor", json!({})).await;
    assert_eq!(tool_error(&no_id, "VALIDATION_ERROR")["field"], "monitorId");
    let stray = mcp
        .call("get_monitor", json!({"monitorId": id, "colour": "red"}))
        .await;
    tool_error(&stray, "VALIDATION_ERROR");

    // A stale expectedVersion is refused like a stale If-Match.
    let stale = mcp
        .call(
            "pause_monitor",
            json!({"monitorId": id, "expectedVersion": 7}),
        )
        .await;
    tool_error(&stale, "VERSION_CONFLICT");
    let paused = ok(&mcp
        .call(
            "pause_monitor",
            json!({"monitorId": id, "expectedVersion": 1}),
        )
        .await);
    assert_eq!(paused["active"], json!(false), "{paused}");

    // An unknown tool is a protocol error, not a tool result.
    let (status, answer) = mcp
        .request(
            "tools/call",
            json!({"name": "drop_database", "arguments": {}}),
        )
        .await;
    assert_eq!(status, 200);
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    srv.stop().await;
}

#[tokio::test]
async fn a_missing_capability_is_a_tool_error_and_nothing_is_written() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token_on(&["monitors:read"], &["mcp"]).await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let refused = mcp
        .call(
            "create_monitor",
            json!({"name": "api", "type": "HTTP", "url": "http://127.0.0.1:9/"}),
        )
        .await;
    let env = tool_error(&refused, "INSUFFICIENT_CAPABILITY");
    assert!(
        env["message"].as_str().unwrap().contains("monitors:write"),
        "{env}"
    );
    let all = ok(&mcp.call("search_monitors", json!({})).await);
    assert_eq!(all, json!([]));
    srv.stop().await;
}

#[tokio::test]
async fn an_agent_acknowledges_an_alert() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let created = ok(&mcp
        .call(
            "create_monitor",
            json!({"name": "api", "type": "HTTP", "url": format!("{}/health", target.base), "interval": 10, "timeout": 5}),
        )
        .await);
    let id = created["id"].as_str().unwrap().to_string();
    tick(&srv, &clock).await;
    target.set(500);
    tick(&srv, &clock).await;

    let page = ok(&mcp.call("list_alerts", json!({"status": "open"})).await);
    let alerts = page["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{page}");
    assert_eq!(alerts[0]["monitorId"], json!(id));
    let alert_id = alerts[0]["id"].as_str().unwrap().to_string();

    let acked = ok(&mcp
        .call("acknowledge_alert", json!({"alertId": alert_id}))
        .await);
    assert_eq!(acked["id"], json!(alert_id));
    assert!(acked["acknowledgedAt"].is_string(), "{acked}");
    let via_rest = json_of(
        ada.call(Method::GET, &format!("/alerts/{alert_id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(via_rest["acknowledgedAt"], acked["acknowledgedAt"]);
    srv.stop().await;
}

#[tokio::test]
async fn surfaces_are_enforced_both_ways() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let rest_only = ada.token_on(&["monitors:read"], &["rest"]).await;
    let mut mcp = Mcp::new(&srv.base, &rest_only);
    let res = mcp
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await;
    expect_error(res, 403, "SURFACE_NOT_ALLOWED").await;
    mcp.session = None;

    let mcp_only = ada.token_on(&["monitors:read"], &["mcp"]).await;
    let res = Bearer::new(&srv.base, &mcp_only)
        .call(Method::GET, "/monitors", None)
        .await;
    expect_error(res, 403, "SURFACE_NOT_ALLOWED").await;

    // A key for both works on both.
    let both = ada.token_on(&["monitors:read"], &["rest", "mcp"]).await;
    let res = Bearer::new(&srv.base, &both)
        .call(Method::GET, "/monitors", None)
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let mut mcp = Mcp::new(&srv.base, &both);
    mcp.initialize(VERSION).await;
    srv.stop().await;
}

#[tokio::test]
async fn without_a_valid_token_the_answer_is_401_naming_the_resource_metadata() {
    let srv = TestServer::start().await;
    let want = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
        srv.base
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let client = Client::new();
    for auth in [None, Some("Bearer svc_not_a_real_key"), Some("Basic abc")] {
        let mut req = client
            .post(srv.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let res = req.send().await.unwrap();
        let header = res
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        assert_eq!(header.as_deref(), Some(want.as_str()), "{auth:?}");
        expect_error(res, 401, "UNAUTHORIZED").await;
    }
    // GET (the server's stream) and DELETE are guarded the same way.
    for method in [Method::GET, Method::DELETE] {
        let res = client
            .request(method, srv.url("/mcp"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401);
        assert!(res.headers().get("www-authenticate").is_some());
    }
    srv.stop().await;
}

#[tokio::test]
async fn delete_ends_the_session() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token_on(&["monitors:read"], &["mcp"]).await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let session = mcp.session.clone().unwrap();
    let (status, _) = mcp.request("tools/list", json!({})).await;
    assert_eq!(status, 200);

    let res = Client::new()
        .delete(srv.url("/mcp"))
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);

    let (status, _) = mcp.request("tools/list", json!({})).await;
    assert_eq!(status, 404, "an ended session is not found");
    srv.stop().await;
}

#[tokio::test]
async fn resources_and_prompts() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let created = ok(&mcp
        .call(
            "create_monitor",
            json!({"name": "db", "type": "TCP", "host": "127.0.0.1", "port": 9}),
        )
        .await);
    let id = created["id"].as_str().unwrap();
    let (_, listed) = mcp.request("resources/list", json!({})).await;
    let uri = format!("tocsin://monitors/{id}");
    assert!(
        listed["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == json!(uri) && r["name"] == "db"),
        "{listed}"
    );
    let (_, read) = mcp.request("resources/read", json!({"uri": uri})).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(body, created);

    let (_, prompts) = mcp.request("prompts/list", json!({})).await;
    let names: Vec<&str> = prompts["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["triage_outage", "write_postmortem"]);
    let (_, p) = mcp
        .request(
            "prompts/get",
            json!({"name": "write_postmortem", "arguments": {"incidentId": "inc_1"}}),
        )
        .await;
    let text = p["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("inc_1") && text.contains("get_incident"),
        "{text}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_session_opened_on_one_node_is_served_by_another() {
    let srv = TestServer::start().await;
    let Some(other) = srv.start_beside(common::Options::default()).await else {
        srv.stop().await;
        return; // SQLite: one node.
    };
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    let mut on_a = Mcp::new(&srv.base, &token);
    on_a.initialize(VERSION).await;
    let created = ok(&on_a
        .call(
            "create_monitor",
            json!({"name": "api", "type": "HTTP", "url": "http://127.0.0.1:9/"}),
        )
        .await);

    // The same session, on the other node: no initialize again.
    let mut on_b = Mcp::new(&other.base, &token);
    on_b.session = on_a.session.clone();
    on_b.next_id = 100;
    let got = ok(&on_b
        .call("get_monitor", json!({"monitorId": created["id"]}))
        .await);
    assert_eq!(got, created);

    // Ended on B, it is gone for a node that has not seen it.
    let res = Client::new()
        .delete(other.url("/mcp"))
        .bearer_auth(&token)
        .header("mcp-session-id", on_a.session.clone().unwrap())
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let third = srv.start_beside(common::Options::default()).await.unwrap();
    let mut on_c = Mcp::new(&third.base, &token);
    on_c.session = on_a.session.clone();
    let (status, _) = on_c.request("tools/list", json!({})).await;
    assert_eq!(status, 404);
    third.stop().await;
    other.stop().await;
    srv.stop().await;
}

#[tokio::test]
async fn a_stateless_request_of_the_current_revision_needs_no_session() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    let mut mcp = Mcp::new(&srv.base, &token);
    mcp.initialize(VERSION).await;
    let created = ok(&mcp
        .call(
            "create_monitor",
            json!({"name": "api", "type": "HTTP", "url": "http://127.0.0.1:9/"}),
        )
        .await);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let res = Client::new()
        .post(srv.url("/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "get_monitor")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "get_monitor", "arguments": {"monitorId": created["id"]}, "_meta": meta}}),
        )
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    assert!(res.headers().get("mcp-session-id").is_none());
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    let text = res.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    let answer = messages(&ct, &text)
        .into_iter()
        .find(|m| m["id"] == 9)
        .unwrap();
    assert_eq!(ok(&answer["result"]), created);
    srv.stop().await;
}
