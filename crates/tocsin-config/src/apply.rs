//! Making a plan true: one API call per change (a page's components are a second), in the
//! plan's order, names turned into ids as they become known. Updates and deletes send the
//! version the plan was computed on (`If-Match`): a change made in the UI since then stops the
//! run instead of being overwritten. A failure stops the run; what was done stays done, and
//! running it again finishes the job.

use std::collections::HashMap;

use reqwest::Method;
use serde_json::{json, Map, Value};

use crate::client::{ApiError, Client};
use crate::load::{FileError, Loaded};
use crate::plan::{items, remote_ids, Change, Kind, Op, Plan};
use crate::remote::{self, Remote};

/// Names to ids, per kind.
#[derive(Debug, Clone, Default)]
pub struct Ids(HashMap<(Kind, String), String>);

impl Ids {
    /// The ids of what the server holds now.
    pub fn of(remote: &Remote) -> Ids {
        let exported = remote.export();
        let mut map = HashMap::new();
        for kind in Kind::ALL {
            let ids = remote_ids(remote, kind);
            for ((key, _), id) in items(&exported, kind).into_iter().zip(ids) {
                map.insert((kind, key), id);
            }
        }
        Ids(map)
    }

    pub fn get(&self, kind: Kind, key: &str) -> Option<&String> {
        self.0.get(&(kind, key.to_string()))
    }
}

/// Why an apply stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The server refused a change; the field error is mapped to the file.
    #[error("{0}")]
    Refused(FileError),
    /// The item changed since the plan.
    #[error("{0} changed since the plan was computed: plan again")]
    Conflict(String),
    #[error("{0}")]
    Api(#[from] ApiError),
    #[error("{0}")]
    Other(String),
}

/// The outcome of a run: changes done, and (on failure) the error and what was not done.
#[derive(Debug)]
pub struct Report {
    pub done: Vec<String>,
    pub failed: Option<(String, ApplyError)>,
    pub not_done: Vec<String>,
}

fn describe(c: &Change) -> String {
    let sign = match c.op {
        Op::Create => '+',
        Op::Update { .. } => '~',
        Op::Delete => '-',
    };
    format!("{sign} {} {:?}", c.kind.label(), c.key)
}

/// The API's name of a file field, where they differ.
fn api_field(kind: Kind, field: &str) -> &str {
    match (kind, field) {
        (Kind::Monitor, "notificationChannels") => "notificationChannelIds",
        (Kind::Monitor, "escalationPolicy") => "escalationPolicyId",
        (Kind::Monitor, "projects") => "projectIds",
        (Kind::Maintenance, "monitor") => "monitorId",
        _ => field,
    }
}

/// A file path for a field the server named (`notificationChannelIds[1]` -> `notificationChannels[1]`).
fn file_field(kind: Kind, api: &str) -> String {
    let pairs: &[(&str, &str)] = match kind {
        Kind::Monitor => &[
            ("notificationChannelIds", "notificationChannels"),
            ("escalationPolicyId", "escalationPolicy"),
            ("projectIds", "projects"),
        ],
        Kind::Maintenance => &[("monitorId", "monitor")],
        Kind::Policy => &[("notificationChannelIds", "notificationChannels")],
        Kind::Page => &[("monitorId", "monitor")],
        _ => &[],
    };
    let mut out = api.to_string();
    for (a, f) in pairs {
        out = out.replace(a, f);
    }
    out
}

struct Run<'a> {
    client: &'a Client,
    loaded: &'a Loaded,
    ids: Ids,
}

impl Run<'_> {
    fn id(&self, kind: Kind, name: &str, path: &str) -> Result<String, ApplyError> {
        self.ids.get(kind, name).cloned().ok_or_else(|| {
            ApplyError::Refused(self.loaded.error(
                path,
                format!("{} {name:?} does not exist on the server", kind.label()),
            ))
        })
    }

    fn ids_of(&self, kind: Kind, v: &Value, path: &str) -> Result<Value, ApplyError> {
        let mut out = vec![];
        for (i, n) in v.as_array().into_iter().flatten().enumerate() {
            let name = n.as_str().unwrap_or_default();
            out.push(Value::String(self.id(
                kind,
                name,
                &format!("{path}[{i}]"),
            )?));
        }
        Ok(Value::Array(out))
    }

    /// One field of a file item as the API takes it.
    fn api_value(
        &self,
        kind: Kind,
        field: &str,
        v: &Value,
        path: &str,
    ) -> Result<Value, ApplyError> {
        Ok(match (kind, field) {
            (Kind::Monitor, "notificationChannels") => self.ids_of(Kind::Channel, v, path)?,
            (Kind::Monitor, "projects") => self.ids_of(Kind::Project, v, path)?,
            (Kind::Monitor, "dependsOn") => self.ids_of(Kind::Monitor, v, path)?,
            (Kind::Monitor, "escalationPolicy") | (Kind::Maintenance, "monitor") => {
                match v.as_str() {
                    None => Value::Null,
                    Some(n) => {
                        let target = if kind == Kind::Monitor {
                            Kind::Policy
                        } else {
                            Kind::Monitor
                        };
                        Value::String(self.id(target, n, path)?)
                    }
                }
            }
            (Kind::Policy, "steps") => {
                let mut steps = vec![];
                for (i, st) in v.as_array().into_iter().flatten().enumerate() {
                    steps.push(json!({
                        "delayMinutes": st["delayMinutes"],
                        "notificationChannelIds": self.ids_of(
                            Kind::Channel,
                            &st["notificationChannels"],
                            &format!("{path}[{i}].notificationChannels"),
                        )?,
                    }));
                }
                Value::Array(steps)
            }
            _ => v.clone(),
        })
    }

    /// The body of a create, or of an update of `fields`.
    fn body(
        &self,
        kind: Kind,
        index: usize,
        item: &Map<String, Value>,
        fields: Option<&[String]>,
    ) -> Result<Map<String, Value>, ApplyError> {
        let prefix = format!("{}[{index}]", kind.list());
        let mut body = Map::new();
        let wanted: Vec<(String, Value)> = match fields {
            None => item.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(fs) => fs
                .iter()
                .map(|f| {
                    let v = item.get(f).cloned().unwrap_or_else(|| {
                        if matches!(
                            f.as_str(),
                            "tags" | "notificationChannels" | "projects" | "dependsOn"
                        ) {
                            Value::Array(vec![])
                        } else {
                            Value::Null
                        }
                    });
                    (f.clone(), v)
                })
                .collect(),
        };
        for (k, v) in wanted {
            // Sent on their own: a page's components, a monitor's pause state on update,
            // and dependencies once every monitor exists.
            if (kind == Kind::Page && k == "components")
                || (kind == Kind::Monitor && k == "dependsOn")
                || (kind == Kind::Monitor && k == "active" && fields.is_some())
            {
                continue;
            }
            let path = format!("{prefix}.{k}");
            body.insert(
                api_field(kind, &k).to_string(),
                self.api_value(kind, &k, &v, &path)?,
            );
        }
        if kind == Kind::Channel && fields.is_none() && !body.contains_key("events") {
            body.insert("events".into(), Value::Null);
        }
        Ok(body)
    }

    /// A server refusal, pointed at the file where it can be.
    fn refused(&self, kind: Kind, index: Option<usize>, sub: &str, e: ApiError) -> ApplyError {
        match (&e, index) {
            (
                ApiError::Status {
                    code,
                    message,
                    field,
                    ..
                },
                Some(i),
            ) if code == "VALIDATION_ERROR" || code == "CONFLICT" || code.ends_with("_TAKEN") => {
                let mut path = format!("{}[{i}]{sub}", kind.list());
                if let Some(f) = field.as_deref().filter(|f| !f.is_empty()) {
                    let f = file_field(kind, f);
                    if f.starts_with('[') {
                        path.push_str(&f);
                    } else {
                        path = format!("{path}.{f}");
                    }
                }
                ApplyError::Refused(self.loaded.error(&path, format!("{message} ({code})")))
            }
            (ApiError::Status { code, .. }, _) if code == "VERSION_CONFLICT" => {
                ApplyError::Conflict(format!("{} {:?}", kind.label(), sub))
            }
            _ => ApplyError::Api(e),
        }
    }

    async fn send(
        &self,
        c: &Change,
        method: Method,
        path: &str,
        body: Option<&Value>,
        sub: &str,
    ) -> Result<crate::client::Answer, ApplyError> {
        self.client
            .call(method, path, body, c.etag.as_deref())
            .await
            .map_err(|e| match e.code() {
                "VERSION_CONFLICT" => {
                    ApplyError::Conflict(format!("{} {:?}", c.kind.label(), c.key))
                }
                _ => self.refused(c.kind, c.index, sub, e),
            })
    }

    async fn components(
        &self,
        index: usize,
        page_id: &str,
        item: &Map<String, Value>,
        new_page: bool,
    ) -> Result<(), ApplyError> {
        let Some(list) = item.get("components").and_then(Value::as_array) else {
            return Ok(());
        };
        // Components kept by name keep their ids (and so their history).
        let current = if new_page {
            vec![]
        } else {
            self.client
                .list(&format!("/status-pages/{page_id}/components"))
                .await?
        };
        let mut out = vec![];
        for (i, c) in list.iter().enumerate() {
            let mut comp = Map::new();
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Some(id) = current
                .iter()
                .find(|x| x.get("name").and_then(Value::as_str) == Some(name))
                .and_then(|x| x.get("id"))
            {
                comp.insert("id".into(), id.clone());
            }
            for k in ["name", "group", "description"] {
                if let Some(v) = c.get(k) {
                    comp.insert(k.into(), v.clone());
                }
            }
            if let Some(m) = c.get("monitor").and_then(Value::as_str) {
                let path = format!("statusPages[{index}].components[{i}].monitor");
                comp.insert(
                    "monitorId".into(),
                    Value::String(self.id(Kind::Monitor, m, &path)?),
                );
            }
            out.push(Value::Object(comp));
        }
        self.client
            .call(
                Method::PUT,
                &format!("/status-pages/{page_id}/components"),
                Some(&Value::Array(out)),
                None,
            )
            .await
            .map_err(|e| self.refused(Kind::Page, Some(index), ".components", e))?;
        Ok(())
    }

    async fn one(&mut self, c: &Change) -> Result<(), ApplyError> {
        let desired = items(&self.loaded.file, c.kind);
        let item = c.index.and_then(|i| desired.get(i)).map(|(_, m)| m);
        match (&c.op, item, c.index) {
            (Op::Create, Some(item), Some(index)) => {
                let body = Value::Object(self.body(c.kind, index, item, None)?);
                let answer = self
                    .send(c, Method::POST, c.kind.path(), Some(&body), "")
                    .await?;
                let id = answer
                    .body
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        ApplyError::Other(format!("{}: no id in the answer", describe(c)))
                    })?
                    .to_string();
                self.ids.0.insert((c.kind, c.key.clone()), id.clone());
                if c.kind == Kind::Page {
                    self.components(index, &id, item, true).await?;
                }
                Ok(())
            }
            (Op::Update { fields }, Some(item), Some(index)) => {
                let id = c.id.clone().unwrap_or_default();
                let names: Vec<String> = fields.iter().map(|f| f.field.clone()).collect();
                let body = self.body(c.kind, index, item, Some(&names))?;
                let path = format!("{}/{id}", c.kind.path());
                if !body.is_empty() {
                    self.send(c, Method::PATCH, &path, Some(&Value::Object(body)), "")
                        .await?;
                }
                if c.kind == Kind::Monitor && names.iter().any(|n| n == "active") {
                    let action = if item.get("active") == Some(&Value::Bool(false)) {
                        "pause"
                    } else {
                        "resume"
                    };
                    self.client
                        .call(Method::POST, &format!("{path}/{action}"), None, None)
                        .await?;
                }
                if c.kind == Kind::Page && names.iter().any(|n| n == "components") {
                    self.components(index, &id, item, false).await?;
                }
                Ok(())
            }
            (Op::Delete, _, _) => {
                let id = c.id.clone().unwrap_or_default();
                self.send(
                    c,
                    Method::DELETE,
                    &format!("{}/{id}", c.kind.path()),
                    None,
                    "",
                )
                .await?;
                Ok(())
            }
            _ => Err(ApplyError::Other(format!(
                "{}: not in the file",
                describe(c)
            ))),
        }
    }

    /// Sets the dependencies of monitors once all of them exist.
    async fn dependencies(&self, changes: &[Change]) -> Result<Vec<String>, ApplyError> {
        let mut done = vec![];
        let desired = items(&self.loaded.file, Kind::Monitor);
        for c in changes.iter().filter(|c| c.kind == Kind::Monitor) {
            let Some(index) = c.index else { continue };
            let wants = match &c.op {
                Op::Create => desired[index].1.contains_key("dependsOn"),
                Op::Update { fields } => fields.iter().any(|f| f.field == "dependsOn"),
                Op::Delete => false,
            };
            if !wants {
                continue;
            }
            let v = desired[index]
                .1
                .get("dependsOn")
                .cloned()
                .unwrap_or(Value::Array(vec![]));
            let ids = self.ids_of(Kind::Monitor, &v, &format!("monitors[{index}].dependsOn"))?;
            let id = self.id(Kind::Monitor, &c.key, &format!("monitors[{index}]"))?;
            self.client
                .call(
                    Method::PATCH,
                    &format!("/monitors/{id}"),
                    Some(&json!({ "dependsOn": ids })),
                    None,
                )
                .await
                .map_err(|e| self.refused(Kind::Monitor, Some(index), "", e))?;
            done.push(format!("~ monitor {:?} (dependsOn)", c.key));
        }
        Ok(done)
    }
}

/// Reads the version of every item the plan updates or deletes, checking it is still the one
/// the plan was computed on.
pub async fn lock_versions(
    client: &Client,
    remote: &Remote,
    plan: &mut Plan,
) -> Result<(), ApplyError> {
    let exported = remote.export();
    for c in plan.changes.iter_mut() {
        let Some(id) = c.id.clone() else { continue };
        let answer = client.get(&format!("{}/{id}", c.kind.path())).await?;
        let names = remote.names();
        let now = match c.kind {
            Kind::Channel => serde_json::to_value(remote::channel(&answer.body)),
            Kind::Policy => serde_json::to_value(remote::policy(&answer.body, &names)),
            Kind::Project => serde_json::to_value(remote::project(&answer.body)),
            Kind::Monitor => serde_json::to_value(remote::monitor(&answer.body, &names)),
            Kind::Maintenance => serde_json::to_value(remote::window(&answer.body, &names)),
            // Components are read with the page's list; the page's own fields are checked.
            Kind::Page => {
                let comps: Vec<Value> = remote
                    .pages
                    .iter()
                    .find(|(p, _)| p.get("id").and_then(Value::as_str) == Some(id.as_str()))
                    .map(|(_, cs)| cs.clone())
                    .unwrap_or_default();
                serde_json::to_value(remote::page(&answer.body, &comps, &names))
            }
        }
        .unwrap_or(Value::Null);
        let then = items(&exported, c.kind)
            .into_iter()
            .find(|(k, _)| *k == c.key)
            .map(|(_, m)| Value::Object(m))
            .unwrap_or(Value::Null);
        if now != then {
            return Err(ApplyError::Conflict(format!(
                "{} {:?}",
                c.kind.label(),
                c.key
            )));
        }
        c.etag = answer.etag;
    }
    Ok(())
}

/// Runs `plan` against the server.
pub async fn apply(client: &Client, loaded: &Loaded, remote: &Remote, plan: &Plan) -> Report {
    let mut run = Run {
        client,
        loaded,
        ids: Ids::of(remote),
    };
    let mut done = vec![];
    for (i, c) in plan.changes.iter().enumerate() {
        match run.one(c).await {
            Ok(()) => done.push(describe(c)),
            Err(e) => {
                return Report {
                    done,
                    failed: Some((describe(c), e)),
                    not_done: plan.changes[i + 1..].iter().map(describe).collect(),
                }
            }
        }
    }
    match run.dependencies(&plan.changes).await {
        Ok(more) => done.extend(more),
        Err(e) => {
            return Report {
                done,
                failed: Some(("dependencies".into(), e)),
                not_done: vec![],
            }
        }
    }
    Report {
        done,
        failed: None,
        not_done: vec![],
    }
}
