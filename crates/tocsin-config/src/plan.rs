//! The difference between the file and the workspace, item by item and field by field, in
//! the order changes must be made (what others refer to first; deletions in reverse).
//!
//! Items are compared as the file writes them (names, not ids). A field the file leaves out
//! is not managed, except those listed in `cleared_when_absent`, whose absence means empty.
//! Objects inside a field (`config`, `branding`, `access`) compare by the keys the file sets;
//! a secret the server masks compares equal to whatever the file holds.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::File;
use crate::remote::{Remote, MASK};

/// The resource kinds, in the order they are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    Channel,
    Policy,
    Project,
    Monitor,
    Maintenance,
    Page,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Channel,
        Kind::Policy,
        Kind::Project,
        Kind::Monitor,
        Kind::Maintenance,
        Kind::Page,
    ];

    /// The word a plan uses.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Channel => "notification channel",
            Kind::Policy => "escalation policy",
            Kind::Project => "project",
            Kind::Monitor => "monitor",
            Kind::Maintenance => "maintenance window",
            Kind::Page => "status page",
        }
    }

    /// The file's list.
    pub fn list(self) -> &'static str {
        match self {
            Kind::Channel => "notificationChannels",
            Kind::Policy => "escalationPolicies",
            Kind::Project => "projects",
            Kind::Monitor => "monitors",
            Kind::Maintenance => "maintenanceWindows",
            Kind::Page => "statusPages",
        }
    }

    /// The key field.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Maintenance => "title",
            Kind::Page => "slug",
            _ => "name",
        }
    }

    /// The API's collection path.
    pub fn path(self) -> &'static str {
        match self {
            Kind::Channel => "/notification-channels",
            Kind::Policy => "/escalation-policies",
            Kind::Project => "/projects",
            Kind::Monitor => "/monitors",
            Kind::Maintenance => "/maintenance-windows",
            Kind::Page => "/status-pages",
        }
    }

    /// Fields whose absence from an item means "none".
    fn cleared_when_absent(self) -> &'static [Cleared] {
        fn null() -> Value {
            Value::Null
        }
        fn empty() -> Value {
            Value::Array(vec![])
        }
        match self {
            Kind::Monitor => &[
                ("description", null),
                ("tags", empty),
                ("notificationChannels", empty),
                ("escalationPolicy", null),
                ("projects", empty),
                ("dependsOn", empty),
            ],
            Kind::Project | Kind::Maintenance => &[("description", null)],
            _ => &[],
        }
    }
}

/// A field whose absence means a value, and that value.
type Cleared = (&'static str, fn() -> Value);

/// One field that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub from: Value,
    pub to: Value,
    /// Its value is a secret: printed as `(secret)`.
    pub secret: bool,
}

/// What happens to one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    Create,
    Update { fields: Vec<FieldChange> },
    Delete,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kind: Kind,
    pub key: String,
    #[serde(flatten)]
    pub op: Op,
    /// The server's id (updates and deletes).
    pub id: Option<String>,
    /// The item's index in the file (creates and updates).
    #[serde(skip, default)]
    pub index: Option<usize>,
    /// The version the change is based on (updates and deletes), sent as `If-Match`.
    pub etag: Option<String>,
}

/// The changes, and what the file does not name but stays (without `--prune`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub left_alone: Vec<(Kind, String)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Each kind's items as JSON objects keyed by their key, in order.
pub fn items(file: &File, kind: Kind) -> Vec<(String, Map<String, Value>)> {
    fn all<T: Serialize>(list: &[T], key: &str) -> Vec<(String, Map<String, Value>)> {
        list.iter()
            .filter_map(|item| match serde_json::to_value(item) {
                Ok(Value::Object(m)) => Some((
                    m.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    m,
                )),
                _ => None,
            })
            .collect()
    }
    let key = kind.key();
    match kind {
        Kind::Channel => all(&file.notification_channels, key),
        Kind::Policy => all(&file.escalation_policies, key),
        Kind::Project => all(&file.projects, key),
        Kind::Monitor => all(&file.monitors, key),
        Kind::Maintenance => all(&file.maintenance_windows, key),
        Kind::Page => all(&file.status_pages, key),
    }
}

/// The ids of the remote items of `kind`, in the same order as `Remote::export` lists them.
pub fn remote_ids(remote: &Remote, kind: Kind) -> Vec<String> {
    let ids = |list: &[Value]| {
        list.iter()
            .map(|v| {
                v.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    match kind {
        Kind::Channel => ids(&remote.channels),
        Kind::Policy => ids(&remote.policies),
        Kind::Project => ids(&remote.projects),
        Kind::Monitor => ids(&remote.monitors),
        Kind::Maintenance => ids(&remote.windows),
        Kind::Page => remote
            .pages
            .iter()
            .map(|(p, _)| {
                p.get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
    }
}

/// Whether an actual value is a secret the API masked (or its exported placeholder).
fn masked(v: &Value) -> bool {
    match v.as_str() {
        Some(s) => s == MASK || (s.starts_with("${") && s.ends_with('}') && !s[2..].contains("${")),
        None => false,
    }
}

/// Whether the actual value satisfies the desired one.
pub fn satisfies(desired: &Value, actual: &Value) -> bool {
    if masked(actual) {
        return true;
    }
    match (desired, actual) {
        (Value::Object(d), Value::Object(a)) => d
            .iter()
            .all(|(k, dv)| satisfies(dv, a.get(k).unwrap_or(&Value::Null))),
        (Value::Object(d), Value::Null) => d.values().all(Value::is_null),
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(x, y)| satisfies(x, y))
        }
        (Value::Array(d), Value::Null) => d.is_empty(),
        (Value::Null, Value::Array(a)) => a.is_empty(),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x == y || same_instant(x, y),
        _ => desired == actual,
    }
}

fn same_instant(a: &str, b: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The fields of one item that differ.
pub fn diff_item(
    kind: Kind,
    desired: &Map<String, Value>,
    actual: &Map<String, Value>,
    secret: &dyn Fn(&str) -> bool,
) -> Vec<FieldChange> {
    let mut out = vec![];
    for (k, dv) in desired {
        if k == kind.key() {
            continue;
        }
        let av = actual.get(k).cloned().unwrap_or(Value::Null);
        if !satisfies(dv, &av) {
            out.push(FieldChange {
                field: k.clone(),
                from: av,
                to: dv.clone(),
                secret: secret(k),
            });
        }
    }
    for (k, empty) in kind.cleared_when_absent() {
        if desired.contains_key(*k) {
            continue;
        }
        let to = empty();
        let av = actual.get(*k).cloned().unwrap_or(Value::Null);
        if !satisfies(&to, &av) {
            out.push(FieldChange {
                field: k.to_string(),
                from: av,
                to,
                secret: false,
            });
        }
    }
    out
}

/// The plan that makes the workspace `remote` what `file` says. `secret` tells whether a
/// path of the file (`monitors[2].config`) holds a secret somewhere below it.
pub fn plan(file: &File, remote: &Remote, prune: bool, secret: &dyn Fn(&str) -> bool) -> Plan {
    let actual_file = remote.export();
    let mut creates_updates = vec![];
    let mut deletes = vec![];
    let mut left_alone = vec![];
    for kind in Kind::ALL {
        let desired = items(file, kind);
        let actual = items(&actual_file, kind);
        let ids = remote_ids(remote, kind);
        for (index, (key, d)) in desired.iter().enumerate() {
            match actual.iter().position(|(k, _)| k == key) {
                None => creates_updates.push(Change {
                    kind,
                    key: key.clone(),
                    op: Op::Create,
                    id: None,
                    index: Some(index),
                    etag: None,
                }),
                Some(at) => {
                    let prefix = format!("{}[{index}]", kind.list());
                    let fields = diff_item(kind, d, &actual[at].1, &|field| {
                        secret(&format!("{prefix}.{field}"))
                    });
                    if !fields.is_empty() {
                        creates_updates.push(Change {
                            kind,
                            key: key.clone(),
                            op: Op::Update { fields },
                            id: ids.get(at).cloned(),
                            index: Some(index),
                            etag: None,
                        });
                    }
                }
            }
        }
        for (at, (key, _)) in actual.iter().enumerate() {
            if desired.iter().any(|(k, _)| k == key) {
                continue;
            }
            if prune {
                deletes.push(Change {
                    kind,
                    key: key.clone(),
                    op: Op::Delete,
                    id: ids.get(at).cloned(),
                    index: None,
                    etag: None,
                });
            } else {
                left_alone.push((kind, key.clone()));
            }
        }
    }
    deletes.reverse();
    // Pages and windows go first, so nothing still refers to what is deleted after them.
    deletes.sort_by_key(|c| std::cmp::Reverse(c.kind));
    creates_updates.extend(deletes);
    Plan {
        changes: creates_updates,
        left_alone,
    }
}

fn show(v: &Value, secret: bool) -> String {
    if secret {
        return "(secret)".into();
    }
    let text = v.to_string();
    if text.chars().count() > 120 {
        let cut: String = text.chars().take(117).collect();
        format!("{cut}...")
    } else {
        text
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mut c, mut u, mut d) = (0, 0, 0);
        for ch in &self.changes {
            match &ch.op {
                Op::Create => {
                    c += 1;
                    writeln!(f, "+ {} {:?}", ch.kind.label(), ch.key)?;
                }
                Op::Update { fields } => {
                    u += 1;
                    writeln!(f, "~ {} {:?}", ch.kind.label(), ch.key)?;
                    for fc in fields {
                        writeln!(
                            f,
                            "    {}: {} -> {}",
                            fc.field,
                            show(&fc.from, fc.secret),
                            show(&fc.to, fc.secret)
                        )?;
                    }
                }
                Op::Delete => {
                    d += 1;
                    writeln!(f, "- {} {:?}", ch.kind.label(), ch.key)?;
                }
            }
        }
        if !self.left_alone.is_empty() {
            writeln!(f, "Not in the file, left alone (--prune deletes them):")?;
            for (kind, key) in &self.left_alone {
                writeln!(f, "  {} {:?}", kind.label(), key)?;
            }
        }
        if self.changes.is_empty() {
            write!(f, "Nothing to do: the workspace matches the file.")
        } else {
            write!(f, "Plan: {c} to create, {u} to update, {d} to delete.")
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn comparison_rules() {
        assert!(satisfies(&json!({"a": 1}), &json!({"a": 1.0, "b": 2})));
        assert!(!satisfies(&json!({"a": 1}), &json!({"a": 2})));
        assert!(satisfies(&json!("s3cret"), &json!(MASK)));
        assert!(satisfies(
            &json!("2026-01-01T00:00:00Z"),
            &json!("2026-01-01T00:00:00.000Z")
        ));
        assert!(!satisfies(&json!([1, 2]), &json!([1])));
        assert!(satisfies(&json!([]), &Value::Null));
    }

    #[test]
    fn absent_lists_clear_and_other_absent_fields_stay() {
        let d = json!({"name": "a", "type": "HTTP"});
        let a = json!({"name": "a", "type": "HTTP", "interval": 30, "tags": ["x"]});
        let ch = diff_item(
            Kind::Monitor,
            d.as_object().unwrap(),
            a.as_object().unwrap(),
            &|_| false,
        );
        assert_eq!(ch.len(), 1);
        assert_eq!(ch[0].field, "tags");
    }
}
