//! Schema transforms shared by the response types of every surface (the OpenAPI document and
//! the MCP tool schemas). They shape JSON Schema only and know nothing of any layer, so any
//! module may name them.

/// For response objects whose every field is always present (nullable ones as `null`) and
/// which carry nothing else: all properties required, no additional ones. The schema
/// generator otherwise treats `Option` fields as optional, which would let clients believe a
/// nullable field may be missing.
pub fn exact_object(schema: &mut schemars::Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let names: Vec<serde_json::Value> = obj
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().map(serde_json::Value::String).collect())
        .unwrap_or_default();
    obj.insert("required".into(), serde_json::Value::Array(names));
    obj.insert(
        "additionalProperties".into(),
        serde_json::Value::Bool(false),
    );
}

/// The schema of a timestamp field: RFC 3339 `date-time`. Fields keep their `String` type (they
/// are formatted once by `clock::rfc3339`) and borrow this type's schema.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
