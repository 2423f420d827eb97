//! Writing a file as YAML people read and diff: block style, keys in a fixed order (the item's
//! key first), strings quoted only when YAML would read them as something else.

use serde_json::Value;

use crate::model::File;

/// An item's keys written first, in this order; the rest follow alphabetically.
const FIRST: &[&str] = &["name", "title", "slug", "type"];

/// The file's own keys, in the order changes are applied.
const TOP: &[&str] = &[
    "version",
    "notificationChannels",
    "escalationPolicies",
    "projects",
    "monitors",
    "maintenanceWindows",
    "statusPages",
];

/// The file as YAML.
pub fn to_yaml(file: &File) -> String {
    let v = serde_json::to_value(file).unwrap_or(Value::Null);
    let mut out = String::new();
    for key in TOP {
        if let Some(item) = v.get(*key) {
            out.push_str(key);
            out.push(':');
            child(item, 0, &mut out);
        }
    }
    out
}

/// Any JSON value as YAML (importers' output uses it for their notes too).
pub fn value_to_yaml(v: &Value) -> String {
    let mut out = String::new();
    block(v, 0, &mut out);
    out
}

fn ordered(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut keys: Vec<(&String, &Value)> = map.iter().collect();
    keys.sort_by_key(|(k, _)| {
        (
            FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len()),
            (*k).clone(),
        )
    });
    keys
}

fn is_scalar(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => true,
    }
}

/// Writes `v` as the content of a block at `indent` (the caller wrote the key or dash).
fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, item) in ordered(m) {
                out.push_str(&pad);
                out.push_str(&scalar(&Value::String(k.clone())));
                out.push(':');
                child(item, indent, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                out.push_str(&pad);
                out.push('-');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        // The first key on the dash's line, the rest below it.
                        let mut first = true;
                        for (k, x) in ordered(m) {
                            if first {
                                out.push(' ');
                                first = false;
                            } else {
                                out.push_str(&" ".repeat(indent + 2));
                            }
                            out.push_str(&scalar(&Value::String(k.clone())));
                            out.push(':');
                            child(x, indent + 2, out);
                        }
                    }
                    Value::Array(inner) if !inner.is_empty() => {
                        out.push('\n');
                        block(item, indent + 2, out);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&pad);
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

/// The value after `key:` at `indent`.
fn child(v: &Value, indent: usize, out: &mut String) {
    if is_scalar(v) {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    } else {
        out.push('\n');
        let inner = if v.is_array() { indent } else { indent + 2 };
        block(v, inner, out);
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            if plain_safe(s) {
                s.clone()
            } else {
                // A JSON string is a valid YAML double-quoted scalar.
                serde_json::to_string(s).unwrap_or_default()
            }
        }
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn plain_safe(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return false;
    }
    let reread = crate::yaml::parse(&format!("k: {s}\n"));
    match reread {
        Ok(doc) => {
            doc.value.get("k") == Some(&Value::String(s.to_string()))
                && !s.contains([
                    '#', '\n', '\'', '"', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>', '%',
                    '@', '`',
                ])
                && !s.contains(": ")
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_back_the_same() {
        let v = json!({
            "version": 1,
            "monitors": [
                {"name": "a: b", "type": "HTTP", "tags": ["x", "true", "12"], "config": {"headers": {"X": "y"}, "expect": {"statusCodes": [200, "2xx"]}}, "flapDetection": null, "port": 443},
                {"name": "#c", "type": "TCP", "tags": []}
            ],
            "statusPages": [{"slug": "s", "name": "", "components": [{"name": "n", "monitor": "a: b"}]}],
            "nested": [[1, 2], []]
        });
        let text = value_to_yaml(&v);
        let back = crate::yaml::parse(&text).unwrap().value;
        assert_eq!(back, v, "{text}");
    }
}
