//! The per-type schemas of a monitor's `config` in the API document: the `config` field stays
//! an open object that names them all; each schema's keys are exactly the keys its parser
//! accepts; and each schema's example, taken from the document the real binary serves, parses
//! with the engine's parser and creates a monitor (201) that keeps it.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::binary::{self, free_port, wait_ready};
use serde_json::{json, Map, Value};
use tocsin::domain::monitors::config::PushConfig;
use tocsin_checks::config::{
    field_names, AssertionConfig, BasicAuthConfig, BearerAuthConfig, DnsConfig, HttpConfig,
    HttpExpectConfig, HttpTlsConfig, PingConfig, TcpConfig, TcpTlsConfig, WebSocketConfig,
    WebSocketTlsConfig,
};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{CheckSpec, MonitorKind};

/// Each monitor type, the component describing its `config`, and the target fields it needs.
/// The targets are never contacted: the monitors are created paused.
fn types() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "HTTP",
            "HttpConfig",
            json!({"url": "https://example.com/health"}),
        ),
        (
            "TCP",
            "TcpConfig",
            json!({"host": "127.0.0.1", "port": 6379}),
        ),
        ("DNS", "DnsConfig", json!({"host": "example.com"})),
        ("DNS_DIFF", "DnsDiffConfig", json!({"host": "example.com"})),
        (
            "WEBSOCKET",
            "WebSocketConfig",
            json!({"url": "wss://example.com/socket"}),
        ),
        ("PING", "PingConfig", json!({"host": "127.0.0.1"})),
        ("PUSH", "PushConfig", json!({})),
    ]
}

fn component<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "no component {name}");
    schema
}

fn property_names(doc: &Value, name: &str) -> BTreeSet<String> {
    component(doc, name)["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{name} has no properties"))
        .keys()
        .cloned()
        .collect()
}

fn names(fields: &[&str]) -> BTreeSet<String> {
    fields.iter().map(|f| f.to_string()).collect()
}

#[test]
fn config_fields_are_open_objects_naming_every_type() {
    let doc = tocsin::http::openapi::document();
    let refs: BTreeSet<String> = types()
        .iter()
        .map(|(_, c, _)| format!("#/components/schemas/{c}"))
        .collect();
    for owner in ["CreateMonitor", "UpdateMonitor", "Monitor"] {
        let config = &component(doc, owner)["properties"]["config"];
        assert_eq!(config["additionalProperties"], json!(true), "{owner}");
        let named: BTreeSet<String> = config["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["$ref"].as_str().map(str::to_string))
            .collect();
        assert_eq!(named, refs, "{owner}");
        for (_, c, _) in types() {
            let schema = component(doc, c);
            assert!(schema["description"].is_string(), "{c} has no description");
            assert!(
                schema["additionalProperties"].is_null(),
                "{c} must leave additional properties open"
            );
        }
    }
}

/// The parsers take their accepted keys from these types (`field_names`), so equal property
/// names here mean the document lists exactly what the parsers accept, nested objects too.
#[test]
fn schema_properties_are_the_keys_the_parsers_accept() {
    let doc = tocsin::http::openapi::document();
    let cases: [(&str, &[&str]); 13] = [
        ("HttpConfig", field_names::<HttpConfig>()),
        ("HttpExpectConfig", field_names::<HttpExpectConfig>()),
        ("HttpTlsConfig", field_names::<HttpTlsConfig>()),
        ("BasicAuthConfig", field_names::<BasicAuthConfig>()),
        ("BearerAuthConfig", field_names::<BearerAuthConfig>()),
        ("TcpConfig", field_names::<TcpConfig>()),
        ("TcpTlsConfig", field_names::<TcpTlsConfig>()),
        ("DnsConfig", field_names::<DnsConfig>()),
        ("WebSocketConfig", field_names::<WebSocketConfig>()),
        ("WebSocketTlsConfig", field_names::<WebSocketTlsConfig>()),
        ("PingConfig", field_names::<PingConfig>()),
        ("AssertionConfig", field_names::<AssertionConfig>()),
        ("PushConfig", field_names::<PushConfig>()),
    ];
    for (name, fields) in cases {
        assert!(!fields.is_empty(), "{name}");
        assert_eq!(property_names(doc, name), names(fields), "{name}");
    }
    // DNS_DIFF reads DNS's keys.
    assert_eq!(
        component(doc, "DnsDiffConfig")["allOf"],
        json!([{"$ref": "#/components/schemas/DnsConfig"}])
    );
    // The enumerations come from the parsers' own tables.
    let targets = &component(doc, "AssertionConfig")["properties"]["target"]["enum"];
    assert_eq!(targets.as_array().unwrap().len(), 9, "{targets}");
    let record_types = &component(doc, "DnsConfig")["properties"]["recordType"]["enum"];
    assert!(record_types.as_array().unwrap().contains(&json!("AAAA")));
}

fn example(doc: &Value, name: &str) -> Map<String, Value> {
    component(doc, name)["examples"][0]
        .as_object()
        .unwrap_or_else(|| panic!("{name} has no example"))
        .clone()
}

#[tokio::test]
async fn every_example_parses_and_creates_a_monitor_on_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let email = "schemas@example.com";
    let token = binary::seed(dir.path(), email, "monitors:read,monitors:write");
    let port = free_port();
    let mut child = binary::serve(dir.path(), port, &[]);
    wait_ready(port).await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();

    let doc: Value = client
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for (kind, name, target) in types() {
        let config = example(&doc, name);
        if let Some(engine_kind) = MonitorKind::from_api_name(kind) {
            let input = SpecInput {
                url: target["url"].as_str(),
                host: target["host"].as_str(),
                port: target["port"].as_u64().map(|p| u16::try_from(p).unwrap()),
                config: &config,
            };
            if let Err(e) = CheckSpec::parse(engine_kind, &input) {
                panic!("the {name} example does not parse: {e:?}");
            }
        }
        let mut body = target.as_object().unwrap().clone();
        body.insert("name".into(), json!(format!("{kind} example")));
        body.insert("type".into(), json!(kind));
        body.insert("active".into(), json!(false));
        body.insert("config".into(), Value::Object(config.clone()));
        let res = client
            .post(format!("{base}/monitors"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let created: Value = res.json().await.unwrap();
        assert_eq!(status, 201, "{name} example: {created}");
        assert_eq!(created["config"], Value::Object(config), "{name}");

        // A key its schema does not list is refused.
        let mut unknown = example(&doc, name);
        unknown.insert("undocumented".into(), json!(1));
        body.insert("config".into(), Value::Object(unknown));
        let res = client
            .post(format!("{base}/monitors"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let refused: Value = res.json().await.unwrap();
        assert_eq!(
            refused["code"],
            json!("VALIDATION_ERROR"),
            "{name}: {refused}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
