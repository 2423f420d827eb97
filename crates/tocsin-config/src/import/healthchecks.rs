//! Healthchecks' `GET /api/v3/checks/` JSON: each check a push monitor. Simple checks
//! (`timeout`) expect a push every `timeout` seconds; cron checks (`schedule`, `tz`) keep
//! their schedule and zone; `grace` is the grace period; `tags` (space-separated) the tags.

use serde_json::{json, Map, Value};

use super::{ImportError, Imported};
use crate::model::{File, Monitor, MonitorType};

/// Reads a Healthchecks checks list.
pub fn import(text: &str) -> Result<Imported, ImportError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| ImportError(format!("not JSON: {e}")))?;
    let checks = doc.get("checks").and_then(Value::as_array).ok_or_else(|| {
        ImportError("no `checks` list: expected the JSON of GET /api/v3/checks/".into())
    })?;
    let mut notes = vec![];
    let mut file = File {
        version: 1,
        ..File::default()
    };
    let mut seen: Vec<String> = vec![];
    for (i, c) in checks.iter().enumerate() {
        let base = c
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .or_else(|| c.get("slug").and_then(Value::as_str))
            .unwrap_or("check")
            .to_string();
        // Healthchecks allows two checks of one name; Tocsin's file keys by name.
        let mut name = base.clone();
        let mut n = 2;
        while seen.contains(&name) {
            name = format!("{base} ({n})");
            n += 1;
        }
        if name != base {
            notes.push(format!(
                "checks[{i}] ({base}): name already used; imported as {name:?}"
            ));
        }
        seen.push(name.clone());
        let at = format!("checks[{i}] ({name})");
        let mut m = Monitor {
            name: name.clone(),
            kind: MonitorType::Push,
            ..Monitor::default()
        };
        if let Some(d) = c
            .get("desc")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
        {
            m.description = Some(d.to_string());
        }
        let tags: Vec<String> = c
            .get("tags")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if !tags.is_empty() {
            m.tags = Some(tags);
        }
        if let Some(g) = c.get("grace").and_then(Value::as_i64) {
            m.grace_period = Some(g);
        }
        match c.get("schedule").and_then(Value::as_str) {
            Some(schedule)
                if c.get("timeout").is_none()
                    || c.get("kind").and_then(Value::as_str) == Some("cron") =>
            {
                let mut config = Map::new();
                config.insert("schedule".into(), json!(schedule));
                if let Some(tz) = c.get("tz").and_then(Value::as_str) {
                    config.insert("timezone".into(), json!(tz));
                }
                m.config = Some(config);
            }
            _ => match c.get("timeout").and_then(Value::as_i64) {
                Some(t) => m.interval = Some(t),
                None => notes.push(format!(
                    "{at}: neither timeout nor schedule; default interval"
                )),
            },
        }
        if c.get("status").and_then(Value::as_str) == Some("paused") {
            m.active = Some(false);
        }
        if c.get("channels")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            notes.push(format!(
                "{at}: integrations (channels) are not in the checks API; add notificationChannels by hand"
            ));
        }
        for (k, what) in [
            ("start_kw", "start keywords"),
            ("success_kw", "success keywords"),
            ("failure_kw", "failure keywords"),
            ("methods", "allowed methods"),
        ] {
            if c.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
            {
                notes.push(format!("{at}: {what} ({k}) not carried"));
            }
        }
        if c.get("manual_resume").and_then(Value::as_bool) == Some(true) {
            notes.push(format!("{at}: manual_resume not carried"));
        }
        if c.get("ping_url").is_some() || c.get("unique_key").is_some() {
            notes.push(format!(
                "{at}: the ping URL changes: point the job at the push URL Tocsin gives on create"
            ));
        }
        file.monitors.push(m);
    }
    Ok(Imported { file, notes })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn simple_and_cron() {
        let text = r#"{"checks": [
            {"name": "Backups", "tags": "prod www", "grace": 900, "timeout": 86400, "status": "up", "ping_url": "https://hc-ping.com/x"},
            {"name": "Nightly", "grace": 3600, "schedule": "15 5 * * *", "tz": "Europe/Riga", "status": "paused"}
        ]}"#;
        let out = import(text).unwrap();
        let m = &out.file.monitors;
        assert_eq!(m[0].interval, Some(86400));
        assert_eq!(
            m[0].tags.as_deref(),
            Some(&["prod".to_string(), "www".to_string()][..])
        );
        assert_eq!(m[1].config.as_ref().unwrap()["timezone"], "Europe/Riga");
        assert_eq!(m[1].active, Some(false));
        assert_eq!(out.notes.len(), 1);
    }
}
