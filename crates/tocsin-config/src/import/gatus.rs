//! Gatus `config.yaml`: endpoints to monitors (by the URL's scheme), conditions to
//! assertions, `alerting` providers to channels and each endpoint's `alerts` to its channels,
//! groups to projects, `external-endpoints` to push monitors.

use serde_json::{json, Map, Value};

use super::{go_duration_secs, ImportError, Imported};
use crate::model::{Channel, ChannelType, File, Monitor, MonitorType, Project};
use crate::remote::env_word;

fn text(v: &Value, k: &str) -> Option<String> {
    match v.get(k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A Gatus provider's secret, as a `${...}` reference: an environment reference Gatus
/// already used stays, a literal becomes a variable to set (and a note says which).
fn secret(value: Option<String>, var: String, from: &str, notes: &mut Vec<String>) -> Value {
    match value {
        Some(v) if v.starts_with("${") && v.ends_with('}') => Value::String(v),
        Some(_) => {
            notes.push(format!(
                "{from}: a secret: set {var} to its value (not written into the file)"
            ));
            Value::String(format!("${{{var}}}"))
        }
        None => Value::String(format!("${{{var}}}")),
    }
}

/// One `alerting.<provider>` as a channel, or `None` (with a note) for providers Tocsin lacks.
fn channel(provider: &str, cfg: &Value, notes: &mut Vec<String>) -> Option<Channel> {
    let from = format!("alerting.{provider}");
    let var = |k: &str| format!("TOCSIN_{}_{}", env_word(provider), env_word(k));
    let mut config = Map::new();
    let put_secret =
        |out: &mut Map<String, Value>, to: &str, from_key: &str, notes: &mut Vec<String>| {
            out.insert(
                to.into(),
                secret(
                    text(cfg, from_key),
                    var(to),
                    &format!("{from}.{from_key}"),
                    notes,
                ),
            );
        };
    let kind = match provider {
        "slack" | "discord" | "teams" | "teams-workflows" | "google-chat" | "mattermost" => {
            put_secret(&mut config, "webhookUrl", "webhook-url", notes);
            match provider {
                "slack" => ChannelType::Slack,
                "discord" => ChannelType::Discord,
                "google-chat" => ChannelType::GoogleChat,
                "mattermost" => ChannelType::Mattermost,
                _ => ChannelType::Teams,
            }
        }
        "pagerduty" => {
            put_secret(&mut config, "routingKey", "integration-key", notes);
            ChannelType::Pagerduty
        }
        "telegram" => {
            put_secret(&mut config, "botToken", "token", notes);
            config.insert("chatId".into(), json!(text(cfg, "id").unwrap_or_default()));
            if let Some(u) = text(cfg, "api-url") {
                config.insert("apiUrl".into(), json!(u));
            }
            ChannelType::Telegram
        }
        "ntfy" => {
            config.insert(
                "topic".into(),
                json!(text(cfg, "topic").unwrap_or_default()),
            );
            if let Some(u) = text(cfg, "url") {
                config.insert("serverUrl".into(), json!(u));
            }
            if cfg.get("token").is_some() {
                put_secret(&mut config, "token", "token", notes);
            }
            if let Some(p) = cfg.get("priority").and_then(Value::as_i64) {
                config.insert("priority".into(), json!(p));
            }
            ChannelType::Ntfy
        }
        "gotify" => {
            config.insert(
                "serverUrl".into(),
                json!(text(cfg, "server-url").unwrap_or_default()),
            );
            put_secret(&mut config, "appToken", "token", notes);
            ChannelType::Gotify
        }
        "pushover" => {
            put_secret(&mut config, "apiToken", "application-token", notes);
            put_secret(&mut config, "userKey", "user-key", notes);
            ChannelType::Pushover
        }
        "opsgenie" => {
            put_secret(&mut config, "apiKey", "api-key", notes);
            ChannelType::Opsgenie
        }
        "matrix" => {
            config.insert(
                "homeserverUrl".into(),
                json!(text(cfg, "server-url")
                    .unwrap_or_else(|| "https://matrix-client.matrix.org".into())),
            );
            put_secret(&mut config, "accessToken", "access-token", notes);
            config.insert(
                "roomId".into(),
                json!(text(cfg, "internal-room-id").unwrap_or_default()),
            );
            ChannelType::Matrix
        }
        "twilio" => {
            config.insert(
                "accountSid".into(),
                json!(text(cfg, "sid").unwrap_or_default()),
            );
            put_secret(&mut config, "authToken", "token", notes);
            config.insert("from".into(), json!(text(cfg, "from").unwrap_or_default()));
            config.insert("to".into(), json!(text(cfg, "to").unwrap_or_default()));
            ChannelType::TwilioSms
        }
        "email" => {
            super::email_recipients(text(cfg, "to").as_deref(), &from, &mut config, notes);
            ChannelType::Email
        }
        "custom" => {
            config.insert("url".into(), json!(text(cfg, "url").unwrap_or_default()));
            if cfg.get("body").is_some() || cfg.get("method").is_some() {
                notes.push(format!(
                    "{from}: method and body templates are not carried: a webhook channel posts Standard Webhooks JSON"
                ));
            }
            ChannelType::Webhook
        }
        other => {
            notes.push(format!(
                "{from}: no Tocsin channel type for provider {other:?}; not carried"
            ));
            return None;
        }
    };
    if cfg.get("default-alert").is_some() {
        notes.push(format!(
            "{from}.default-alert: thresholds are per monitor in Tocsin (confirmationsRequired); not carried"
        ));
    }
    Some(Channel {
        name: provider.to_string(),
        kind,
        config,
        events: None,
        is_default: None,
        enabled: None,
    })
}

/// One condition as a Tocsin assertion, a status list, or `None` when it cannot be carried.
enum Carried {
    Assertion(Value),
    Status(Value),
    Implied,
}

fn condition(cond: &str, kind: MonitorType) -> Option<Carried> {
    let ops = [
        ("==", "eq"),
        ("!=", "neq"),
        ("<=", "lte"),
        (">=", "gte"),
        ("<", "lt"),
        (">", "gt"),
    ];
    let (at, sym, op) = ops
        .iter()
        .filter_map(|(s, o)| cond.find(s).map(|i| (i, *s, *o)))
        .min_by_key(|(i, s, _)| (*i, std::cmp::Reverse(s.len())))?;
    let left = cond[..at].trim();
    let right = cond[at + sym.len()..].trim();
    let number = |s: &str| s.parse::<i64>().ok().map(Value::from);
    match left {
        "[STATUS]" => {
            let n = number(right)?;
            if op == "eq" {
                Some(Carried::Status(json!([n])))
            } else {
                Some(Carried::Assertion(
                    json!({"target": "statusCode", "operator": op, "value": n}),
                ))
            }
        }
        "[RESPONSE_TIME]" => Some(Carried::Assertion(
            json!({"target": "latency", "operator": op, "value": number(right)?}),
        )),
        "[CONNECTED]" if right == "true" && op == "eq" => Some(Carried::Implied),
        "[DNS_RCODE]" if right == "NOERROR" && op == "eq" => Some(Carried::Implied),
        "[CERTIFICATE_EXPIRATION]" => {
            let secs = go_duration_secs(right)?;
            Some(Carried::Assertion(json!({
                "target": "certificateDaysLeft", "operator": op, "value": secs / 86_400
            })))
        }
        "[IP]" => Some(Carried::Assertion(
            json!({"target": "resolvedIp", "operator": op, "value": right}),
        )),
        "[BODY]" if kind == MonitorType::Dns && op == "eq" => Some(Carried::Assertion(
            json!({"target": "dnsRecords", "operator": "contains", "value": right}),
        )),
        "[BODY]" => {
            if let Some(inner) = right.strip_prefix("pat(").and_then(|r| r.strip_suffix(')')) {
                let needle = inner.trim_matches('*');
                if needle.contains('*') || op != "eq" {
                    return None;
                }
                return Some(Carried::Assertion(
                    json!({"target": "body", "operator": "contains", "value": needle}),
                ));
            }
            if right.contains('(') {
                return None;
            }
            Some(Carried::Assertion(
                json!({"target": "body", "operator": op, "value": right}),
            ))
        }
        l if l.starts_with("[BODY].") || l.starts_with("[BODY][") => {
            if right.contains('(') {
                return None;
            }
            let path = format!(
                "$.{}",
                l.trim_start_matches("[BODY]").trim_start_matches('.')
            );
            let value = number(right)
                .or(match right {
                    "true" => Some(Value::Bool(true)),
                    "false" => Some(Value::Bool(false)),
                    _ => None,
                })
                .unwrap_or_else(|| Value::String(right.trim_matches('"').to_string()));
            Some(Carried::Assertion(json!({
                "target": "jsonPath", "property": path, "operator": op, "value": value
            })))
        }
        _ => None,
    }
}

fn split_host_port(rest: &str) -> (String, Option<i64>) {
    let rest = rest.split('/').next().unwrap_or_default();
    match rest.rsplit_once(':') {
        Some((h, p)) if p.parse::<i64>().is_ok() => (
            h.trim_start_matches('[').trim_end_matches(']').to_string(),
            p.parse().ok(),
        ),
        _ => (rest.to_string(), None),
    }
}

fn endpoint(i: usize, ep: &Value, channels: &[String], notes: &mut Vec<String>) -> Option<Monitor> {
    let name = text(ep, "name").unwrap_or_else(|| format!("endpoint {i}"));
    let at = format!("endpoints[{i}] ({name})");
    let url = text(ep, "url").unwrap_or_default();
    let mut m = Monitor {
        name: name.clone(),
        ..Monitor::default()
    };
    let mut config = Map::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url.as_str()));
    match scheme {
        "http" | "https" => {
            m.kind = MonitorType::Http;
            m.url = Some(url.clone());
            if let Some(method) = text(ep, "method") {
                config.insert("method".into(), json!(method.to_uppercase()));
            }
            if let Some(body) = text(ep, "body") {
                config.insert("body".into(), json!(body));
            }
            if let Some(h) = ep.get("headers").and_then(Value::as_object) {
                config.insert("headers".into(), Value::Object(h.clone()));
            }
        }
        "ws" | "wss" => {
            m.kind = MonitorType::Websocket;
            m.url = Some(url.clone());
            if let Some(body) = text(ep, "body") {
                config.insert("send".into(), json!(body));
            }
        }
        "tcp" => {
            m.kind = MonitorType::Tcp;
            let (h, p) = split_host_port(rest);
            m.host = Some(h);
            m.port = p;
        }
        "icmp" => {
            m.kind = MonitorType::Ping;
            m.host = Some(split_host_port(rest).0);
        }
        _ if ep.get("dns").is_some() => {
            m.kind = MonitorType::Dns;
            let dns = &ep["dns"];
            m.host = text(dns, "query-name");
            config.insert(
                "recordType".into(),
                json!(text(dns, "query-type").unwrap_or_else(|| "A".into())),
            );
            let server = if scheme.is_empty() {
                url.clone()
            } else {
                rest.to_string()
            };
            if !server.is_empty() {
                config.insert("resolver".into(), json!(server));
            }
        }
        _ => {
            notes.push(format!(
                "{at}: url {url:?}: no Tocsin monitor type for this scheme; endpoint not carried"
            ));
            return None;
        }
    }
    if let Some(iv) = text(ep, "interval") {
        match go_duration_secs(&iv) {
            Some(s) => m.interval = Some(s),
            None => notes.push(format!(
                "{at}: interval {iv:?} not understood; default kept"
            )),
        }
    }
    if ep.get("enabled").and_then(Value::as_bool) == Some(false) {
        m.active = Some(false);
    }
    if let Some(g) = text(ep, "group") {
        m.projects = Some(vec![g]);
    }
    let mut assertions = vec![];
    for (c, cond) in ep
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let cond = cond.as_str().unwrap_or_default();
        match condition(cond, m.kind) {
            Some(Carried::Assertion(a)) => assertions.push(a),
            Some(Carried::Status(codes)) => {
                config.insert("expect".into(), json!({ "statusCodes": codes }));
            }
            Some(Carried::Implied) => {}
            None => notes.push(format!("{at}.conditions[{c}]: {cond:?} not carried")),
        }
    }
    if !assertions.is_empty() {
        config.insert("assertions".into(), Value::Array(assertions));
    }
    let mut wanted = vec![];
    for (a, alert) in ep
        .get("alerts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let t = text(alert, "type").unwrap_or_default();
        if channels.contains(&t) {
            if !wanted.contains(&t) {
                wanted.push(t);
            }
        } else {
            notes.push(format!(
                "{at}.alerts[{a}]: provider {t:?} was not carried; alert dropped"
            ));
        }
        if let Some(n) = alert.get("failure-threshold").and_then(Value::as_i64) {
            m.confirmations_required = Some(n.clamp(1, 20));
        }
        if let Some(n) = alert.get("success-threshold").and_then(Value::as_i64) {
            m.recovery_confirmations_required = Some(n.clamp(1, 20));
        }
    }
    if !wanted.is_empty() {
        m.notification_channels = Some(wanted);
    }
    for k in ["client", "ui", "maintenance-windows"] {
        if ep.get(k).is_some() {
            notes.push(format!("{at}.{k}: not carried"));
        }
    }
    if !config.is_empty() {
        m.config = Some(config);
    }
    Some(m)
}

/// Reads a Gatus configuration.
pub fn import(text_in: &str) -> Result<Imported, ImportError> {
    let doc = crate::yaml::parse(text_in)
        .map_err(|e| ImportError(format!("line {}: {}", e.line, e.message)))?
        .value;
    if !doc.is_object() {
        return Err(ImportError(
            "not a Gatus configuration (a YAML mapping)".into(),
        ));
    }
    let mut notes = vec![];
    let mut file = File {
        version: 1,
        ..File::default()
    };
    if let Some(alerting) = doc.get("alerting").and_then(Value::as_object) {
        for (provider, cfg) in alerting {
            if let Some(c) = channel(provider, cfg, &mut notes) {
                file.notification_channels.push(c);
            }
        }
    }
    let channels: Vec<String> = file
        .notification_channels
        .iter()
        .map(|c| c.name.clone())
        .collect();
    for (i, ep) in doc
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(m) = endpoint(i, ep, &channels, &mut notes) {
            file.monitors.push(m);
        }
    }
    for (i, ep) in doc
        .get("external-endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = text(ep, "name").unwrap_or_else(|| format!("external endpoint {i}"));
        let at = format!("external-endpoints[{i}] ({name})");
        let mut m = Monitor {
            name,
            kind: MonitorType::Push,
            ..Monitor::default()
        };
        match ep.get("heartbeat").and_then(|h| text(h, "interval")) {
            Some(iv) => m.interval = go_duration_secs(&iv),
            None => notes.push(format!(
                "{at}: no heartbeat interval: pushes expected at the default interval"
            )),
        }
        if let Some(g) = text(ep, "group") {
            m.projects = Some(vec![g]);
        }
        notes.push(format!(
            "{at}: token not carried: the push URL changes (Tocsin gives a new token on create)"
        ));
        file.monitors.push(m);
    }
    let mut groups: Vec<String> = vec![];
    for m in &file.monitors {
        for g in m.projects.iter().flatten() {
            if !groups.contains(g) {
                groups.push(g.clone());
            }
        }
    }
    file.projects = groups
        .into_iter()
        .map(|name| Project {
            name,
            description: None,
        })
        .collect();
    for k in [
        "storage",
        "security",
        "ui",
        "web",
        "maintenance",
        "announcements",
        "suites",
    ] {
        if doc.get(k).is_some() {
            notes.push(format!("{k}: not carried"));
        }
    }
    Ok(Imported { file, notes })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn conditions() {
        let a = |c: &str| match condition(c, MonitorType::Http) {
            Some(Carried::Assertion(v)) => v,
            _ => Value::Null,
        };
        assert_eq!(a("[RESPONSE_TIME] < 300")["operator"], "lt");
        assert_eq!(a("[BODY].status == UP")["property"], "$.status");
        assert_eq!(a("[CERTIFICATE_EXPIRATION] > 48h")["value"], 2);
        assert!(matches!(
            condition("[STATUS] == 200", MonitorType::Http),
            Some(Carried::Status(_))
        ));
        assert!(condition("len([BODY].data) > 0", MonitorType::Http).is_none());
    }
}
