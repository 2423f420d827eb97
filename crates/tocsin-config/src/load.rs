//! Loading a file: parse, read into the model (unknown keys and wrong types refused), then
//! the checks the server cannot make for us (version, duplicate keys, references by name)
//! and `${ENV}` secrets. Every error names `FILE:LINE: path`.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;

use crate::model::File;
use crate::yaml::{self, Located};

/// One problem with the file, where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct FileError {
    pub file: String,
    pub line: Option<usize>,
    pub path: String,
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: ", self.file)?,
            None => write!(f, "{}: ", self.file)?,
        }
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Every problem found, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct FileErrors(pub Vec<FileError>);

impl fmt::Display for FileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FileErrors {}

/// A loaded file: the model with secrets resolved, and where each node was.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub name: String,
    pub file: File,
    pub doc: Located,
    /// Paths whose value came from the environment (never printed).
    pub secrets: HashSet<String>,
}

impl Loaded {
    /// An error at `path` of this file.
    pub fn error(&self, path: &str, message: impl Into<String>) -> FileError {
        FileError {
            file: self.name.clone(),
            line: self.doc.line_of(path),
            path: path.to_string(),
            message: message.into(),
        }
    }
}

/// Loads `text`, read from `name`; `env` looks up `${VAR}`.
pub fn load(
    name: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Loaded, FileErrors> {
    let doc = yaml::parse(text).map_err(|e| {
        FileErrors(vec![FileError {
            file: name.to_string(),
            line: Some(e.line),
            path: e.path,
            message: e.message,
        }])
    })?;
    let mut loaded = Loaded {
        name: name.to_string(),
        file: File::default(),
        doc,
        secrets: HashSet::new(),
    };
    let mut value = loaded.doc.value.clone();
    let mut errors = vec![];
    resolve_env(
        &mut value,
        "",
        env,
        &mut loaded.secrets,
        &mut |path, msg| errors.push((path, msg)),
    );
    let file: File = match serde_path_to_error::deserialize(&value) {
        Ok(f) => f,
        Err(e) => {
            let path = e.path().to_string();
            let path = if path == "." { String::new() } else { path };
            let message = tidy(&e.inner().to_string());
            // An unknown key is reported at the key itself.
            let at = match unknown_key(&message) {
                Some(k) if !path.ends_with(&k) => yaml::child_key(&path, &k),
                _ => path,
            };
            return Err(FileErrors(vec![loaded.error(&at, message)]));
        }
    };
    loaded.file = file;
    let mut out: Vec<FileError> = errors
        .into_iter()
        .map(|(p, m)| loaded.error(&p, m))
        .collect();
    out.extend(check(&loaded));
    if out.is_empty() {
        Ok(loaded)
    } else {
        out.sort_by_key(|e| e.line);
        Err(FileErrors(out))
    }
}

fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_string())
}

/// serde's messages, in the file's words.
fn tidy(message: &str) -> String {
    message
        .replace("invalid type: ", "wrong type: ")
        .replace("i64", "an integer")
        .replace("u32", "an integer")
}

/// Replaces `${VAR}` in every string, noting which paths held a secret.
fn resolve_env(
    v: &mut Value,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &mut HashSet<String>,
    err: &mut dyn FnMut(String, String),
) {
    match v {
        Value::String(s) if s.contains("${") => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                out.push_str(&rest[..start]);
                let after = &rest[start + 2..];
                let Some(end) = after.find('}') else {
                    err(path.to_string(), "`${` without its closing `}`".into());
                    return;
                };
                let var = &after[..end];
                match env(var) {
                    Some(val) => out.push_str(&val),
                    None => {
                        err(
                            path.to_string(),
                            format!("environment variable {var} is not set"),
                        );
                        return;
                    }
                }
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            secrets.insert(path.to_string());
            *s = out;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                resolve_env(item, &yaml::child_index(path, i), env, secrets, err);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                resolve_env(item, &yaml::child_key(path, k), env, secrets, err);
            }
        }
        _ => {}
    }
}

/// The checks across items: version, unique keys, references.
fn check(l: &Loaded) -> Vec<FileError> {
    let f = &l.file;
    let mut out = vec![];
    if f.version != 1 {
        out.push(l.error("version", "must be 1"));
    }
    fn unique<'a>(
        l: &Loaded,
        list: &str,
        key: &str,
        names: impl Iterator<Item = &'a str>,
        out: &mut Vec<FileError>,
    ) -> HashMap<&'a str, usize> {
        let mut seen = HashMap::new();
        for (i, n) in names.enumerate() {
            if let Some(first) = seen.insert(n, i) {
                seen.insert(n, first);
                let path = format!("{list}[{i}].{key}");
                let first_line = l
                    .doc
                    .line_of(&format!("{list}[{first}].{key}"))
                    .map(|x| format!(" (line {x})"))
                    .unwrap_or_default();
                out.push(l.error(
                    &path,
                    format!("duplicate {key} {n:?}: already used by {list}[{first}]{first_line}"),
                ));
            }
        }
        seen
    }
    let channels = unique(
        l,
        "notificationChannels",
        "name",
        f.notification_channels.iter().map(|c| c.name.as_str()),
        &mut out,
    );
    let policies = unique(
        l,
        "escalationPolicies",
        "name",
        f.escalation_policies.iter().map(|p| p.name.as_str()),
        &mut out,
    );
    let projects = unique(
        l,
        "projects",
        "name",
        f.projects.iter().map(|p| p.name.as_str()),
        &mut out,
    );
    let monitors = unique(
        l,
        "monitors",
        "name",
        f.monitors.iter().map(|m| m.name.as_str()),
        &mut out,
    );
    unique(
        l,
        "maintenanceWindows",
        "title",
        f.maintenance_windows.iter().map(|m| m.title.as_str()),
        &mut out,
    );
    unique(
        l,
        "statusPages",
        "slug",
        f.status_pages.iter().map(|p| p.slug.as_str()),
        &mut out,
    );
    let mut reference = |path: String, name: &str, known: &HashMap<&str, usize>, what: &str| {
        if !known.contains_key(name) {
            out.push(l.error(&path, format!("no {what} named {name:?} in this file")));
        }
    };
    for (i, p) in f.escalation_policies.iter().enumerate() {
        for (s, step) in p.steps.iter().enumerate() {
            for (c, name) in step.notification_channels.iter().enumerate() {
                reference(
                    format!("escalationPolicies[{i}].steps[{s}].notificationChannels[{c}]"),
                    name,
                    &channels,
                    "notification channel",
                );
            }
        }
    }
    for (i, m) in f.monitors.iter().enumerate() {
        for (c, name) in m.notification_channels.iter().flatten().enumerate() {
            reference(
                format!("monitors[{i}].notificationChannels[{c}]"),
                name,
                &channels,
                "notification channel",
            );
        }
        if let Some(p) = &m.escalation_policy {
            reference(
                format!("monitors[{i}].escalationPolicy"),
                p,
                &policies,
                "escalation policy",
            );
        }
        for (c, name) in m.projects.iter().flatten().enumerate() {
            reference(
                format!("monitors[{i}].projects[{c}]"),
                name,
                &projects,
                "project",
            );
        }
        for (c, name) in m.depends_on.iter().flatten().enumerate() {
            reference(
                format!("monitors[{i}].dependsOn[{c}]"),
                name,
                &monitors,
                "monitor",
            );
        }
    }
    for (i, w) in f.maintenance_windows.iter().enumerate() {
        reference(
            format!("maintenanceWindows[{i}].monitor"),
            &w.monitor,
            &monitors,
            "monitor",
        );
    }
    for (i, p) in f.status_pages.iter().enumerate() {
        for (c, comp) in p.components.iter().flatten().enumerate() {
            if let Some(m) = &comp.monitor {
                reference(
                    format!("statusPages[{i}].components[{c}].monitor"),
                    m,
                    &monitors,
                    "monitor",
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn first(text: &str) -> String {
        load("f.yaml", text, &no_env).unwrap_err().0[0].to_string()
    }

    #[test]
    fn errors_name_file_line_and_field() {
        assert_eq!(
            first("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n    interval: often\n"),
            "f.yaml:5: monitors[0].interval: wrong type: string \"often\", expected an integer"
        );
        assert!(
            first("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n    intervall: 3\n")
                .starts_with("f.yaml:5: monitors[0].intervall: unknown field `intervall`")
        );
        assert_eq!(
            first("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n    notificationChannels: [ops]\n"),
            "f.yaml:5: monitors[0].notificationChannels[0]: no notification channel named \"ops\" in this file"
        );
        assert_eq!(
            first("version: 1\nprojects:\n  - name: a\n  - name: a\n"),
            "f.yaml:4: projects[1].name: duplicate name \"a\": already used by projects[0] (line 3)"
        );
        assert_eq!(
            first("version: 1\nnotificationChannels:\n  - name: a\n    type: SLACK\n    config: {webhookUrl: \"${NOPE}\"}\n"),
            "f.yaml:5: notificationChannels[0].config.webhookUrl: environment variable NOPE is not set"
        );
        assert!(first("version: 1\nmonitors: [\n").starts_with("f.yaml:"));
    }

    #[test]
    fn secrets_resolve_from_the_environment() {
        let env = |k: &str| (k == "HOOK").then(|| "https://h.example/x".to_string());
        let l = load(
            "f.yaml",
            "version: 1\nnotificationChannels:\n  - name: a\n    type: SLACK\n    config: {webhookUrl: \"${HOOK}\"}\n",
            &env,
        )
        .unwrap();
        assert_eq!(
            l.file.notification_channels[0].config["webhookUrl"],
            "https://h.example/x"
        );
        assert!(l
            .secrets
            .contains("notificationChannels[0].config.webhookUrl"));
    }
}
