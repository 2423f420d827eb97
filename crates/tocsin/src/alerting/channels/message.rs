//! What a notification says, read once from the stored Standard Webhooks body
//! (`{"type", "timestamp", "data"}`) so that every provider shows the same facts: the monitor,
//! its status, the cause (`data.alert.cause`) and, when present, the one-click acknowledge link
//! (`data.links.acknowledge`). For `test` the data is `{"channel", "message"}`.

use serde_json::Value;

use crate::alerting::event::AlertEvent;

/// How bad the news is, for colours, priorities and severities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Critical,
    Warning,
    Info,
    Resolved,
}

/// One notification, ready to render.
#[derive(Debug, Clone)]
pub struct Message {
    pub event: AlertEvent,
    /// Stable across attempts (the webhook-id).
    pub message_id: String,
    /// The body exactly as stored: what a webhook sends and signs.
    pub body: String,
    /// `timestamp` of the body (RFC 3339).
    pub timestamp: String,
    pub data: Value,
    /// When this attempt is made (ms, from the server's clock).
    pub now_ms: i64,
    /// The alert's id, the dedup key of providers that have one (PagerDuty, Opsgenie).
    pub alert_id: Option<String>,
    pub monitor_name: Option<String>,
    /// `url` or `host` of the monitor.
    pub target: Option<String>,
    pub status: Option<String>,
    pub cause: Option<String>,
    pub acknowledge_url: Option<String>,
    pub alert_url: Option<String>,
    /// One line: what happened.
    pub title: String,
    pub severity: Severity,
}

fn text(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    match cur {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Message {
    /// Reads a stored body; `event` and `message_id` come from the delivery row, `now_ms` is
    /// the attempt's time.
    pub fn from_body(event: AlertEvent, message_id: &str, body: &str, now_ms: i64) -> Message {
        let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let data = parsed.get("data").cloned().unwrap_or(Value::Null);
        let monitor_name = text(&data, &["monitor", "name"]);
        let target = text(&data, &["monitor", "url"]).or_else(|| text(&data, &["monitor", "host"]));
        let status = text(&data, &["monitor", "status"]);
        let cause = text(&data, &["alert", "cause"]).or_else(|| text(&data, &["cause"]));
        let name = monitor_name
            .clone()
            .or_else(|| text(&data, &["region"]))
            .unwrap_or_else(|| "A monitor".into());
        let (title, severity) = match event {
            AlertEvent::AlertOpened => (format!("{name} is DOWN"), Severity::Critical),
            AlertEvent::AlertEscalated => (
                format!("Escalated: {name} is still DOWN"),
                Severity::Critical,
            ),
            AlertEvent::AlertAcknowledged => (format!("Acknowledged: {name}"), Severity::Info),
            AlertEvent::AlertResolved => (format!("Resolved: {name} is UP"), Severity::Resolved),
            AlertEvent::MonitorDegraded => (format!("{name} is DEGRADED"), Severity::Warning),
            AlertEvent::MonitorChanged => (format!("{name} changed"), Severity::Warning),
            AlertEvent::MonitorStale => {
                (format!("{name} is not being checked"), Severity::Critical)
            }
            AlertEvent::MonitorFlapping => (
                format!("{name} is flapping: alerts pause until it settles"),
                Severity::Warning,
            ),
            AlertEvent::MonitorStable => (
                format!(
                    "{name} stopped flapping: {}",
                    text(&data, &["status"]).unwrap_or_else(|| "settled".into())
                ),
                Severity::Info,
            ),
            AlertEvent::RegionDown => (
                format!("Region {name} has no live probe"),
                Severity::Critical,
            ),
            AlertEvent::CertificateExpiring => (
                format!("The certificate of {name} expires soon"),
                Severity::Warning,
            ),
            AlertEvent::IncidentCreated => (
                format!(
                    "Incident: {}",
                    text(&data, &["incident", "title"]).unwrap_or_else(|| name.clone())
                ),
                Severity::Warning,
            ),
            AlertEvent::IncidentUpdated => (
                format!(
                    "Incident updated: {}",
                    text(&data, &["incident", "title"]).unwrap_or_else(|| name.clone())
                ),
                Severity::Info,
            ),
            AlertEvent::IncidentResolved => (
                format!(
                    "Incident resolved: {}",
                    text(&data, &["incident", "title"]).unwrap_or_else(|| name.clone())
                ),
                Severity::Resolved,
            ),
            AlertEvent::Test => (
                format!(
                    "Test notification from Tocsin to {}",
                    text(&data, &["channel", "name"]).unwrap_or_else(|| "this channel".into())
                ),
                Severity::Info,
            ),
        };
        let title = match dependents_note(event, &data) {
            Some(note) => format!("{title} ({note})"),
            None => title,
        };
        Message {
            event,
            message_id: message_id.to_string(),
            body: body.to_string(),
            timestamp: text(&parsed, &["timestamp"]).unwrap_or_default(),
            alert_id: text(&data, &["alert", "id"]),
            monitor_name,
            target,
            status,
            cause,
            acknowledge_url: text(&data, &["links", "acknowledge"]),
            alert_url: text(&data, &["links", "alert"]),
            title,
            severity,
            data,
            now_ms,
        }
    }

    /// `(label, value)` lines: monitor, target, status, cause (or the test message).
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(m) = &self.monitor_name {
            out.push(("Monitor", m.clone()));
        }
        if let Some(t) = &self.target {
            out.push(("Target", t.clone()));
        }
        if let Some(s) = &self.status {
            out.push(("Status", s.clone()));
        }
        if let Some(c) = &self.cause {
            out.push(("Cause", c.clone()));
        }
        if let Some(m) = text(&self.data, &["message"]) {
            out.push(("Message", m));
        }
        if let Some(names) = dependent_names(&self.data) {
            out.push(("Dependents", names));
        }
        out
    }

    /// The plain-text body: the facts, one per line, then the links.
    pub fn plain(&self) -> String {
        let mut lines: Vec<String> = self
            .facts()
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        if let Some(a) = &self.acknowledge_url {
            lines.push(format!("Acknowledge: {a}"));
        }
        if let Some(a) = &self.alert_url {
            lines.push(format!("Alert: {a}"));
        }
        lines.join("\n")
    }

    /// A colour per severity (RGB).
    pub fn color(&self) -> u32 {
        match self.severity {
            Severity::Critical => 0xD9_30_25,
            Severity::Warning => 0xF2_A9_00,
            Severity::Info => 0x1E_6F_D9,
            Severity::Resolved => 0x2E_A0_43,
        }
    }

    pub fn color_hex(&self) -> String {
        format!("#{:06X}", self.color())
    }

    /// The id providers deduplicate on: the alert's, or the message's when there is no alert.
    pub fn dedup_key(&self) -> String {
        self.alert_id
            .clone()
            .unwrap_or_else(|| self.message_id.clone())
    }
}

/// "and N dependent monitors" for a root alert's page that stands for suppressed dependents
/// (`data.dependents`, see `alerting::root_cause`): every channel type shows it in the title.
fn dependents_note(event: AlertEvent, data: &Value) -> Option<String> {
    if !matches!(
        event,
        AlertEvent::AlertOpened | AlertEvent::AlertEscalated | AlertEvent::AlertResolved
    ) {
        return None;
    }
    let n = data.get("dependents")?.as_array()?.len();
    match n {
        0 => None,
        1 => Some("and 1 dependent monitor".to_string()),
        n => Some(format!("and {n} dependent monitors")),
    }
}

/// At most this many dependents are named in a message's facts; the rest are counted.
const NAMED_DEPENDENTS: usize = 10;

/// The dependents' names, for the facts: `a, b, c and 7 more`.
fn dependent_names(data: &Value) -> Option<String> {
    let list = data.get("dependents")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    let names: Vec<String> = list
        .iter()
        .take(NAMED_DEPENDENTS)
        .filter_map(|d| text(d, &["name"]))
        .collect();
    let mut out = names.join(", ");
    if list.len() > NAMED_DEPENDENTS {
        out.push_str(&format!(" and {} more", list.len() - NAMED_DEPENDENTS));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_alert_body_gives_monitor_status_cause_and_links() {
        let body = json!({"type": "alert.opened", "timestamp": "2026-01-01T00:00:00Z", "data": {
            "alert": {"id": "al1", "cause": "HTTP 503"},
            "monitor": {"id": "m1", "name": "API", "type": "HTTP", "url": "https://api.example.com", "status": "DOWN"},
            "links": {"acknowledge": "https://t/ack?x", "alert": "https://t/alerts/al1"}}})
        .to_string();
        let m = Message::from_body(AlertEvent::AlertOpened, "msg_1", &body, 0);
        assert_eq!(m.title, "API is DOWN");
        assert_eq!(m.cause.as_deref(), Some("HTTP 503"));
        assert_eq!(m.dedup_key(), "al1");
        assert!(m.plain().contains("Acknowledge: https://t/ack?x"));
        assert_eq!(m.severity, Severity::Critical);
    }

    #[test]
    fn a_root_page_counts_and_names_its_dependents() {
        let deps: Vec<Value> = (0..12)
            .map(|i| json!({"id": format!("m{i}"), "name": format!("svc{i}"), "status": "DOWN"}))
            .collect();
        let body = json!({"type": "alert.opened", "timestamp": "2026-01-01T00:00:00Z", "data": {
            "alert": {"id": "al1", "cause": "timeout"},
            "monitor": {"id": "db", "name": "DB", "type": "TCP", "host": "db", "status": "DOWN"},
            "dependents": deps}})
        .to_string();
        let m = Message::from_body(AlertEvent::AlertOpened, "msg_1", &body, 0);
        assert_eq!(m.title, "DB is DOWN (and 12 dependent monitors)");
        assert!(
            m.plain().contains("Dependents: svc0, svc1"),
            "{}",
            m.plain()
        );
        assert!(m.plain().contains(" and 2 more"), "{}", m.plain());
        let none =
            json!({"type": "alert.opened", "data": {"monitor": {"name": "DB"}, "dependents": []}})
                .to_string();
        assert_eq!(
            Message::from_body(AlertEvent::AlertOpened, "m", &none, 0).title,
            "DB is DOWN"
        );
    }

    #[test]
    fn a_test_body_names_the_channel_and_dedups_on_the_message() {
        let body = json!({"type": "test", "timestamp": "2026-01-01T00:00:00Z", "data": {
            "channel": {"id": "c", "name": "Ops", "type": "SLACK"}, "message": "hello"}})
        .to_string();
        let m = Message::from_body(AlertEvent::Test, "msg_2", &body, 0);
        assert!(m.title.contains("Ops"));
        assert_eq!(m.dedup_key(), "msg_2");
        assert!(m.plain().contains("Message: hello"));
    }
}
