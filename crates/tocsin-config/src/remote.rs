//! What the server holds, read through the API in a few list calls (cursor pages where the
//! API pages), and the same state written as a configuration file: ids become names and
//! secrets become `${...}` placeholders.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::client::{ApiError, Client};
use crate::model::*;

/// The workspace as read: each resource's record, in the server's order.
#[derive(Debug, Clone, Default)]
pub struct Remote {
    pub channels: Vec<Value>,
    pub policies: Vec<Value>,
    pub projects: Vec<Value>,
    pub monitors: Vec<Value>,
    pub windows: Vec<Value>,
    /// Each page with its components.
    pub pages: Vec<(Value, Vec<Value>)>,
}

/// The masked value the API shows for a secret.
pub const MASK: &str = "********";

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn opt_s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn opt_i(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(Value::as_f64).map(|f| f as i64)
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

impl Remote {
    /// Reads the whole workspace.
    pub async fn read(client: &Client) -> Result<Remote, ApiError> {
        let (channels, policies, projects, monitors, windows, pages) = tokio::try_join!(
            client.list_pages("/notification-channels", "notificationChannels"),
            client.list("/escalation-policies"),
            client.list("/projects"),
            client.list_pages("/monitors/page", "monitors"),
            client.list("/maintenance-windows"),
            client.list("/status-pages"),
        )?;
        // One list per page, read at once rather than one after the other.
        let mut reads = tokio::task::JoinSet::new();
        for (i, page) in pages.iter().enumerate() {
            let client = client.clone();
            let path = format!("/status-pages/{}/components", s(page, "id"));
            reads.spawn(async move { (i, client.list(&path).await) });
        }
        let mut comps: Vec<Vec<Value>> = vec![vec![]; pages.len()];
        while let Some(done) = reads.join_next().await {
            let (i, list) = done.map_err(|e| ApiError::Transport(e.to_string()))?;
            comps[i] = list?;
        }
        let with_components = pages.into_iter().zip(comps).collect();
        Ok(Remote {
            channels,
            policies,
            projects,
            monitors,
            windows,
            pages: with_components,
        })
    }

    /// Ids to names of each referenced kind.
    pub fn names(&self) -> Names {
        let map = |list: &[Value], key: &str| {
            list.iter()
                .map(|v| (s(v, "id"), s(v, key)))
                .collect::<HashMap<_, _>>()
        };
        Names {
            channels: map(&self.channels, "name"),
            policies: map(&self.policies, "name"),
            projects: map(&self.projects, "name"),
            monitors: map(&self.monitors, "name"),
        }
    }

    /// The workspace as a file.
    pub fn export(&self) -> File {
        let n = self.names();
        File {
            version: 1,
            notification_channels: self.channels.iter().map(channel).collect(),
            escalation_policies: self.policies.iter().map(|p| policy(p, &n)).collect(),
            projects: self.projects.iter().map(project).collect(),
            monitors: self.monitors.iter().map(|m| monitor(m, &n)).collect(),
            maintenance_windows: self.windows.iter().map(|w| window(w, &n)).collect(),
            status_pages: self.pages.iter().map(|(p, c)| page(p, c, &n)).collect(),
        }
    }
}

/// Ids to names.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub channels: HashMap<String, String>,
    pub policies: HashMap<String, String>,
    pub projects: HashMap<String, String>,
    pub monitors: HashMap<String, String>,
}

fn name_all(ids: Vec<String>, names: &HashMap<String, String>) -> Vec<String> {
    ids.into_iter()
        .map(|id| names.get(&id).cloned().unwrap_or(id))
        .collect()
}

/// `SOME_NAME` from any text, for environment variable names.
pub fn env_word(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// Replaces every masked value with a `${...}` placeholder named after where it is.
fn placeholders(v: &mut Value, prefix: &str) {
    match v {
        Value::String(s) if s == MASK => *s = format!("${{{prefix}}}"),
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                placeholders(item, &format!("{prefix}_{}", env_word(k)));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                placeholders(item, &format!("{prefix}_{i}"));
            }
        }
        _ => {}
    }
}

/// Drops nulls and empty lists inside an object, recursively: the file shows what is set.
fn compact(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
        .map(|(k, v)| {
            let v = match v {
                Value::Object(m) => Value::Object(compact(m)),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

fn object(v: &Value, k: &str) -> Map<String, Value> {
    v.get(k)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

pub fn channel(c: &Value) -> Channel {
    let name = s(c, "name");
    let mut config = Value::Object(compact(&object(c, "config")));
    placeholders(&mut config, &format!("TOCSIN_{}", env_word(&name)));
    Channel {
        kind: serde_json::from_value(c["type"].clone()).unwrap_or_default(),
        config: match config {
            Value::Object(m) => m,
            _ => Map::new(),
        },
        events: Some(strings(c, "events")),
        is_default: c.get("isDefault").and_then(Value::as_bool),
        enabled: c.get("enabled").and_then(Value::as_bool),
        name,
    }
}

pub fn policy(p: &Value, n: &Names) -> Policy {
    let mut steps: Vec<&Value> = p
        .get("steps")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    steps.sort_by_key(|st| opt_i(st, "stepOrder"));
    Policy {
        name: s(p, "name"),
        steps: steps
            .into_iter()
            .map(|st| Step {
                delay_minutes: opt_i(st, "delayMinutes").unwrap_or(0),
                notification_channels: name_all(strings(st, "notificationChannelIds"), &n.channels),
            })
            .collect(),
    }
}

pub fn project(p: &Value) -> Project {
    Project {
        name: s(p, "name"),
        description: opt_s(p, "description"),
    }
}

pub fn monitor(m: &Value, n: &Names) -> Monitor {
    let flap = match m.get("flapDetection") {
        Some(Value::Null) => Some(None),
        Some(v) => serde_json::from_value(v.clone()).ok().map(Some),
        None => None,
    };
    Monitor {
        name: s(m, "name"),
        kind: serde_json::from_value(m["type"].clone()).unwrap_or_default(),
        description: opt_s(m, "description"),
        url: opt_s(m, "url"),
        host: opt_s(m, "host"),
        port: opt_i(m, "port"),
        interval: opt_i(m, "interval"),
        timeout: opt_i(m, "timeout"),
        retries: opt_i(m, "retries"),
        confirmations_required: opt_i(m, "confirmationsRequired"),
        recovery_confirmations_required: opt_i(m, "recoveryConfirmationsRequired"),
        min_failure_duration_ms: opt_i(m, "minFailureDurationMs"),
        grace_period: opt_i(m, "gracePeriod"),
        regions: Some(strings(m, "regions")),
        region_strategy: opt_s(m, "regionStrategy"),
        tags: non_empty(strings(m, "tags")),
        active: m.get("active").and_then(Value::as_bool),
        flap_detection: flap,
        config: Some(compact(&object(m, "config"))),
        notification_channels: non_empty(name_all(
            strings(m, "notificationChannelIds"),
            &n.channels,
        )),
        escalation_policy: opt_s(m, "escalationPolicyId")
            .map(|id| n.policies.get(&id).cloned().unwrap_or(id)),
        projects: non_empty(name_all(strings(m, "projectIds"), &n.projects)),
        depends_on: non_empty(name_all(strings(m, "dependsOn"), &n.monitors)),
    }
}

pub fn window(w: &Value, n: &Names) -> Maintenance {
    let monitor_id = s(w, "monitorId");
    Maintenance {
        title: s(w, "title"),
        monitor: n.monitors.get(&monitor_id).cloned().unwrap_or(monitor_id),
        starts_at: s(w, "startsAt"),
        ends_at: s(w, "endsAt"),
        timezone: opt_s(w, "timezone"),
        recurring: w.get("recurring").and_then(Value::as_object).cloned(),
        exclude_from_uptime: w.get("excludeFromUptime").and_then(Value::as_bool),
        description: opt_s(w, "description"),
    }
}

pub fn page(p: &Value, comps: &[Value], n: &Names) -> StatusPage {
    let slug = s(p, "slug");
    let access = p.get("access").map(|a| Access {
        visibility: opt_s(a, "visibility"),
        allowed_email_domains: non_empty(strings(a, "allowedEmailDomains")),
        password: a
            .get("passwordSet")
            .and_then(Value::as_bool)
            .filter(|set| *set)
            .map(|_| format!("${{TOCSIN_PAGE_{}_PASSWORD}}", env_word(&slug))),
    });
    let mut comps: Vec<&Value> = comps.iter().collect();
    comps.sort_by_key(|c| opt_i(c, "position"));
    StatusPage {
        name: s(p, "name"),
        published: p.get("published").and_then(Value::as_bool),
        history_days: opt_i(p, "historyDays"),
        auto_incidents: opt_s(p, "autoIncidents"),
        branding: Some(compact(&object(p, "branding"))),
        access,
        components: Some(
            comps
                .into_iter()
                .map(|c| Component {
                    name: s(c, "name"),
                    group: opt_s(c, "group"),
                    description: opt_s(c, "description"),
                    monitor: opt_s(c, "monitorId")
                        .map(|id| n.monitors.get(&id).cloned().unwrap_or(id)),
                })
                .collect(),
        ),
        slug,
    }
}
