//! The contract checks on the OpenAPI document: the committed `openapi.json` must equal what
//! the routes generate (so the contract never drifts silently), and the generated document
//! must keep the structural rules of the interface specification — unique operation ids,
//! declared capabilities, the four security schemes, error envelopes on every operation,
//! session-only operations reachable only by session, and declared path parameters.
//!
//! The rules are written out here from the specification rather than read from the crate, so
//! a change to the crate's vocabulary cannot quietly change what is being checked.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

/// The capability vocabulary of the interface: seventeen token capabilities (equal to the
/// OAuth scopes) followed by the four session-only ones.
const TOKEN_CAPABILITIES: [&str; 17] = [
    "monitors:read",
    "monitors:write",
    "monitors:delete",
    "status_pages:read",
    "status_pages:write",
    "status_pages:delete",
    "incidents:read",
    "incidents:write",
    "incidents:delete",
    "postmortems:read",
    "postmortems:write",
    "postmortems:delete",
    "notifications:read",
    "notifications:write",
    "notifications:delete",
    "maintenance:write",
    "identity:read",
];
const SESSION_ONLY: [&str; 4] = [
    "workspace:manage",
    "billing:manage",
    "members:manage",
    "audit:read",
];

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn committed_path() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../openapi.json");
    path.canonicalize().unwrap_or(path)
}

fn document() -> Value {
    serde_json::from_str(&tocsin::http::openapi::document_text())
        .expect("the generated document is JSON")
}

/// Every operation as `(label, path, path item, operation)`.
fn operations(doc: &Value) -> Vec<(String, String, &Value, &Value)> {
    let paths = doc["paths"].as_object().expect("`paths` is an object");
    let mut out = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                out.push((
                    format!("{} {path}", method.to_uppercase()),
                    path.clone(),
                    item,
                    op,
                ));
            }
        }
    }
    out
}

/// Follows a local `#/components/...` reference, once.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix("#/")
            .map(|p| doc.pointer(&format!("/{p}")).unwrap_or(&Value::Null))
            .unwrap_or(&Value::Null),
        None => v,
    }
}

#[test]
fn committed_document_matches_the_routes() {
    let generated = tocsin::http::openapi::document_text();
    let path = committed_path();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first_difference = committed
            .lines()
            .zip(generated.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}:\n  committed: {a}\n  generated: {b}", i + 1))
            .unwrap_or_else(|| "one document is a prefix of the other".to_string());
        panic!(
            "{} is out of date with the routes ({first_difference}).\n\
             The API changed; regenerate the committed contract with\n\n    \
             cargo run -p tocsin -- openapi > openapi.json\n\n\
             and review the diff before committing it.",
            path.display()
        );
    }
}

#[test]
fn document_is_openapi_3_1() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string());
    assert_eq!(doc["info"]["version"], "0.1.0");
    assert!(!operations(&doc).is_empty(), "the document has operations");
}

#[test]
fn operation_ids_are_unique() {
    let doc = document();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (label, _, _, op) in operations(&doc) {
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{label} has no operationId"));
        assert!(!id.is_empty(), "{label} has an empty operationId");
        if let Some(other) = seen.insert(id.to_string(), label.clone()) {
            panic!("operationId `{id}` is used by both {other} and {label}");
        }
    }
}

#[test]
fn every_operation_declares_known_capabilities() {
    let doc = document();
    let known: BTreeSet<&str> = TOKEN_CAPABILITIES
        .iter()
        .chain(SESSION_ONLY.iter())
        .copied()
        .collect();
    assert_eq!(known.len(), 21);
    for (label, _, _, op) in operations(&doc) {
        let caps = op["x-svc-required-capabilities"]
            .as_array()
            .unwrap_or_else(|| panic!("{label} lacks an x-svc-required-capabilities array"));
        for cap in caps {
            let cap = cap
                .as_str()
                .unwrap_or_else(|| panic!("{label}: capability {cap} is not a string"));
            assert!(
                known.contains(cap),
                "{label} requires `{cap}`, which is not one of the 21 capabilities"
            );
        }
        // An operation needing a capability needs a credential to carry it.
        let security = op["security"].as_array();
        if !caps.is_empty() {
            assert!(
                security.is_some_and(|s| !s.is_empty()),
                "{label} requires capabilities but declares no security scheme"
            );
        }
    }
}

#[test]
fn security_schemes_are_the_four_of_the_interface() {
    let doc = document();
    let schemes = &doc["components"]["securitySchemes"];

    assert_eq!(schemes["apiKey"]["type"], "http");
    assert_eq!(schemes["apiKey"]["scheme"], "bearer");

    assert_eq!(schemes["sessionCookie"]["type"], "apiKey");
    assert_eq!(schemes["sessionCookie"]["in"], "cookie");
    assert_eq!(schemes["sessionCookie"]["name"], "svc.session_token");

    assert_eq!(schemes["oauth2"]["type"], "oauth2");
    let flow = &schemes["oauth2"]["flows"]["authorizationCode"];
    assert!(flow["authorizationUrl"].is_string());
    assert!(flow["tokenUrl"].is_string());
    let scopes: BTreeSet<&str> = flow["scopes"]
        .as_object()
        .expect("the authorization-code flow lists its scopes")
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = TOKEN_CAPABILITIES.iter().copied().collect();
    assert_eq!(
        scopes, expected,
        "OAuth scopes are the 17 token capabilities"
    );

    assert!(
        schemes["publishableKey"].is_object(),
        "the publishableKey scheme is declared"
    );

    // Every scheme an operation names exists.
    for (label, _, _, op) in operations(&doc) {
        for requirement in op["security"].as_array().into_iter().flatten() {
            for name in requirement
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                assert!(
                    schemes.get(name).is_some(),
                    "{label} names the undeclared security scheme `{name}`"
                );
            }
        }
    }
}

#[test]
fn every_operation_documents_its_errors_with_the_envelope() {
    let doc = document();
    let error = &doc["components"]["schemas"]["Error"];
    let required: BTreeSet<&str> = error["required"]
        .as_array()
        .expect("the Error schema lists required fields")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        required,
        BTreeSet::from(["statusCode", "code", "message"]),
        "the Error envelope's required fields"
    );
    for field in ["statusCode", "code", "message", "field", "flattened"] {
        assert!(
            error["properties"].get(field).is_some(),
            "the Error schema has `{field}`"
        );
    }

    for (label, _, _, op) in operations(&doc) {
        let responses = op["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{label} has no responses"));
        let errors: Vec<(&String, &Value)> = responses
            .iter()
            .filter(|(status, _)| status.parse::<u16>().is_ok_and(|s| s >= 400))
            .collect();
        assert!(!errors.is_empty(), "{label} documents no error status");
        // Pages for people (the subscriber links followed from an email) answer their errors
        // as pages too; what they say is documented as `text/html`.
        // So are the feeds of the public pages (their 200 is the feed's own type).
        let html_page = responses.get("200").is_some_and(|r| {
            let content = &resolve(&doc, r)["content"];
            ["text/html", "application/rss+xml", "application/atom+xml"]
                .iter()
                .any(|t| content.get(*t).is_some())
        });
        for (status, response) in errors {
            let response = resolve(&doc, response);
            if html_page && response["content"].get("text/html").is_some() {
                continue;
            }
            let schema = &response["content"]["application/json"]["schema"];
            assert_eq!(
                schema["$ref"], "#/components/schemas/Error",
                "{label} response {status} is not the Error envelope"
            );
        }
        // Authenticated operations can always be refused for credentials.
        let authenticated = op["security"].as_array().is_some_and(|s| !s.is_empty());
        if authenticated {
            assert!(
                responses.contains_key("401"),
                "{label} is authenticated but does not document 401"
            );
        }
    }
}

#[test]
fn session_only_operations_accept_only_the_session_cookie() {
    let doc = document();
    for (label, _, _, op) in operations(&doc) {
        let caps: Vec<&str> = op["x-svc-required-capabilities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if caps.iter().any(|c| SESSION_ONLY.contains(c)) {
            let security = &op["security"];
            assert_eq!(
                security,
                &serde_json::json!([{ "sessionCookie": [] }]),
                "{label} needs a session-only capability, so `sessionCookie` must be its only scheme"
            );
        }
    }
}

#[test]
fn every_path_parameter_is_declared() {
    let doc = document();
    for (label, path, item, op) in operations(&doc) {
        let templated: BTreeSet<String> = path
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_string()))
            .collect();
        let declared: BTreeSet<String> = item["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(op["parameters"].as_array().into_iter().flatten())
            .map(|p| resolve(&doc, p))
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(
                    p["required"], true,
                    "{label}: path parameter {} must be required",
                    p["name"]
                );
                assert!(
                    p["schema"].is_object(),
                    "{label}: path parameter {} has no schema",
                    p["name"]
                );
                p["name"].as_str().unwrap_or_default().to_string()
            })
            .collect();
        assert_eq!(
            templated, declared,
            "{label}: the path's parameters and the declared path parameters differ"
        );
    }
}

/// The README says exactly how each list pages, what `--permissions all` grants, and shows a
/// monitor of every type.
#[test]
fn the_readme_matches_the_document_on_paging_permissions_and_monitor_types() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(params) = item["get"]["parameters"].as_array() else {
            continue;
        };
        let names: Vec<&str> = params.iter().filter_map(|p| p["name"].as_str()).collect();
        if names.contains(&"cursor") || names.contains(&"before") {
            let spelled = path.replace("{monitor_id}", "{id}");
            assert!(
                readme.contains(&format!("`GET {spelled}`")),
                "the README does not say how GET {path} pages"
            );
        }
    }
    let all = readme
        .split("`--permissions all`")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default();
    for cap in tocsin::auth::capability::TOKEN_CAPABILITIES {
        assert!(
            all.contains(&format!("`{}`", cap.as_str())),
            "{}",
            cap.as_str()
        );
    }
    for kind in [
        "HTTP",
        "TCP",
        "PING",
        "DNS",
        "DNS_DIFF",
        "WEBSOCKET",
        "PUSH",
    ] {
        assert!(
            readme.contains(&format!("\"type\":\"{kind}\"")),
            "no {kind} example in the README"
        );
    }
}

/// Routes served outside the documented router still have their entry: the MCP transport and
/// the public pages' feeds.
#[test]
fn the_mcp_transport_and_the_feeds_are_documented() {
    let doc = document();
    let mcp = &doc["paths"]["/mcp"]["post"];
    assert_eq!(mcp["operationId"], "mcpTransport", "{mcp}");
    assert_eq!(mcp["x-svc-required-capabilities"], serde_json::json!([]));
    let schemes: BTreeSet<&str> = mcp["security"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r.as_object().unwrap().keys().map(String::as_str))
        .collect();
    assert_eq!(schemes, BTreeSet::from(["oauth2", "apiKey"]));
    assert!(mcp["requestBody"]["content"]["application/json"].is_object());
    for status in ["200", "401", "403"] {
        assert!(mcp["responses"][status].is_object(), "/mcp {status}");
    }
    for (path, id, media) in [
        (
            "/s/{slug}/feed.rss",
            "getStatusPageRssFeed",
            "application/rss+xml",
        ),
        (
            "/s/{slug}/feed.atom",
            "getStatusPageAtomFeed",
            "application/atom+xml",
        ),
    ] {
        let op = &doc["paths"][path]["get"];
        assert_eq!(op["operationId"], id, "{path}");
        assert_eq!(op["security"], serde_json::json!([]), "{path}");
        assert_eq!(
            op["x-svc-required-capabilities"],
            serde_json::json!([]),
            "{path}"
        );
        assert!(
            op["responses"]["200"]["content"][media].is_object(),
            "{path}"
        );
        assert!(op["responses"]["404"].is_object(), "{path}");
    }
}
