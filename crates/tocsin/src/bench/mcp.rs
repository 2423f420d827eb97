//! The `mcp-get-monitor` scenario: `tools/call` of `get_monitor` on `/mcp` with a personal
//! access token for the `mcp` surface, as an agent reading one monitor repeatedly. Requests use
//! the stateless form of the current protocol revision (`2026-07-28`: the version and client
//! capabilities in each request's `_meta`, no session), so every connection can repeat the very
//! same request.

use axum::http::{header, HeaderName, HeaderValue, Method};
use bytes::Bytes;
use serde_json::json;

use super::scenario::{Fixture, RequestSpec, BENCH_EMAIL};
use crate::domain::monitors::{self, CreateMonitor};

const PROTOCOL: &str = "2026-07-28";

pub async fn get_monitor(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let core = fx.state("mcp-get-monitor")?;
    // Creates the bench user on first use.
    fx.api_token().await?;
    let token =
        crate::domain::api_keys::mint_for_user(core, BENCH_EMAIL, "bench-mcp", "all", "mcp")
            .await?;
    let now = core.clock().now_ms();
    let caller =
        crate::auth::caller::authenticate_key(core, &token, now, None, None, "mcp").await?;
    // Paused: the scenario measures the read, not checks of a target that does not exist.
    let input: CreateMonitor = serde_json::from_value(json!({
        "name": "bench-mcp", "type": "HTTP", "url": "http://127.0.0.1:9/", "active": false
    }))?;
    let monitor = monitors::create(core, &caller, &input).await?;
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "get_monitor",
            "arguments": {"monitorId": monitor.id},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    RequestSpec {
        method: Method::POST,
        path: "/mcp".into(),
        rotate: None,
        headers: vec![
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            ),
            (
                HeaderName::from_static("mcp-protocol-version"),
                HeaderValue::from_static(PROTOCOL),
            ),
            // The revision's standard headers repeat the method and the tool's name.
            (
                HeaderName::from_static("mcp-method"),
                HeaderValue::from_static("tools/call"),
            ),
            (
                HeaderName::from_static("mcp-name"),
                HeaderValue::from_static("get_monitor"),
            ),
        ],
        body: Bytes::from(serde_json::to_vec(&body)?),
    }
    .bearer(&token)
}
