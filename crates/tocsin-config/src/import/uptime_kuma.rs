//! Uptime Kuma's `kuma.db` (1.23 and 2.x): monitors of the types Tocsin has (`http`,
//! `keyword` and `json-query` as HTTP with an assertion, `port`, `ping`, `dns`,
//! `websocket-upgrade`, `push`), group monitors to projects, tags, notification providers with
//! a Tocsin channel type, maintenance (one-off and cron-like strategies, one window per
//! monitor) and status pages with their groups as components. Secrets are written as
//! `${TOCSIN_...}` placeholders; everything else that cannot be carried is a note.

use std::collections::{HashMap, HashSet};

use chrono::{NaiveDateTime, TimeZone};
use serde_json::{json, Map, Value};

use super::kuma_db::{self, KumaDb, Record};
use super::{ImportError, Imported};
use crate::model::{
    Channel, ChannelType, Component, File, Maintenance, Monitor, MonitorType, Project, StatusPage,
};
use crate::remote::env_word;

/// Reads the database at `path` (read-only) and maps it.
pub async fn import(path: &str) -> Result<Imported, ImportError> {
    let db = kuma_db::read(path).await?;
    Ok(convert(&db))
}

fn text(r: &Record, k: &str) -> Option<String> {
    match r.get(k)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn int(r: &Record, k: &str) -> Option<i64> {
    match r.get(k)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.round() as i64)),
        Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f.round() as i64),
        _ => None,
    }
}

fn flag(r: &Record, k: &str) -> bool {
    match r.get(k) {
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.as_str(), "1" | "true"),
        _ => false,
    }
}

/// A boolean column that is there and false (a column an older schema lacks is not "off").
fn off(r: &Record, k: &str) -> bool {
    r.get(k).is_some_and(|v| !v.is_null()) && !flag(r, k)
}

/// A JSON value Kuma keeps as text in a column (headers, status codes, notification config).
fn json_text(r: &Record, k: &str) -> Option<Value> {
    text(r, k).and_then(|s| serde_json::from_str(&s).ok())
}

/// Names unique in their list: a repeated one gets ` (2)`, ` (3)`, ... and a note.
#[derive(Default)]
struct Unique(HashSet<String>);

impl Unique {
    fn take(&mut self, wanted: &str, at: &str, notes: &mut Vec<String>) -> String {
        let mut name = wanted.to_string();
        let mut n = 2;
        while self.0.contains(&name) {
            name = format!("{wanted} ({n})");
            n += 1;
        }
        if name != wanted {
            notes.push(format!(
                "{at}: the name {wanted:?} is taken; named {name:?}"
            ));
        }
        self.0.insert(name.clone());
        name
    }
}

/// A secret of a channel as the placeholder `export` would write, with a note to set it.
fn secret(channel: &str, key: &str, at: &str, notes: &mut Vec<String>) -> Value {
    let var = format!("TOCSIN_{}_{}", env_word(channel), env_word(key));
    notes.push(format!(
        "{at}: a secret: set {var} to its value (not written into the file)"
    ));
    Value::String(format!("${{{var}}}"))
}

fn put(config: &mut Map<String, Value>, k: &str, v: Option<String>) {
    if let Some(v) = v {
        config.insert(k.into(), json!(v));
    }
}

/// One notification provider as a channel, or `None` (with a note) when Tocsin has no type
/// for it.
fn channel(row: &Record, names: &mut Unique, notes: &mut Vec<String>) -> Option<Channel> {
    let id = int(row, "id").unwrap_or_default();
    let cfg = json_text(row, "config").unwrap_or(Value::Null);
    let get = |k: &str| match cfg.get(k) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let provider = get("type").unwrap_or_default();
    let wanted = text(row, "name").unwrap_or_else(|| format!("notification {id}"));
    let at = format!("notification[{id}] ({wanted})");
    let kind = match provider.as_str() {
        "webhook" => ChannelType::Webhook,
        "slack" => ChannelType::Slack,
        "discord" => ChannelType::Discord,
        "teams" => ChannelType::Teams,
        "GoogleChat" => ChannelType::GoogleChat,
        "mattermost" => ChannelType::Mattermost,
        "telegram" => ChannelType::Telegram,
        "PagerDuty" => ChannelType::Pagerduty,
        "Opsgenie" => ChannelType::Opsgenie,
        "ntfy" => ChannelType::Ntfy,
        "pushover" => ChannelType::Pushover,
        "gotify" => ChannelType::Gotify,
        "matrix" => ChannelType::Matrix,
        "smtp" => ChannelType::Email,
        "twilio" => ChannelType::TwilioSms,
        other => {
            notes.push(format!(
                "{at}: no Tocsin channel type for provider {other:?}; not carried"
            ));
            return None;
        }
    };
    let name = names.take(&wanted, &at, notes);
    let mut config = Map::new();
    let mut secrets: Vec<&str> = vec![];
    match kind {
        ChannelType::Webhook => {
            put(&mut config, "url", get("webhookURL"));
            if get("webhookContentType").as_deref() == Some("custom")
                || get("webhookCustomBody").is_some()
            {
                notes.push(format!(
                    "{at}: the custom body is not carried: a webhook channel posts Standard Webhooks JSON"
                ));
            }
            if get("webhookAdditionalHeaders").is_some() {
                notes.push(format!(
                    "{at}: additional headers are not carried (they may hold credentials): add them as `headers` with ${{...}} values"
                ));
            }
        }
        ChannelType::Slack => secrets.push("webhookUrl"),
        ChannelType::Discord => secrets.push("webhookUrl"),
        ChannelType::Teams => secrets.push("webhookUrl"),
        ChannelType::GoogleChat => secrets.push("webhookUrl"),
        ChannelType::Mattermost => secrets.push("webhookUrl"),
        ChannelType::Telegram => {
            secrets.push("botToken");
            put(&mut config, "chatId", get("telegramChatID"));
            put(
                &mut config,
                "apiUrl",
                get("telegramServerUrl").filter(|u| u != "https://api.telegram.org"),
            );
        }
        ChannelType::Pagerduty => secrets.push("routingKey"),
        ChannelType::Opsgenie => {
            secrets.push("apiKey");
            put(
                &mut config,
                "priority",
                get("opsgeniePriority")
                    .filter(|p| matches!(p.as_str(), "1" | "2" | "3" | "4" | "5"))
                    .map(|p| format!("P{p}")),
            );
            if get("opsgenieRegion").as_deref() == Some("eu") {
                notes.push(format!(
                    "{at}: the EU region: set config.apiUrl to Opsgenie's EU API"
                ));
            }
        }
        ChannelType::Ntfy => {
            put(&mut config, "topic", get("ntfytopic"));
            put(&mut config, "serverUrl", get("ntfyserverurl"));
            match get("ntfyAuthenticationMethod").as_deref() {
                Some("accessToken") => secrets.push("token"),
                Some("usernamePassword") => notes.push(format!(
                    "{at}: username and password sign-in is not carried: use an access token"
                )),
                _ => {}
            }
            if let Some(p) = get("ntfyPriority").and_then(|p| p.parse::<i64>().ok()) {
                config.insert("priority".into(), json!(p.clamp(1, 5)));
            }
        }
        ChannelType::Pushover => {
            secrets.push("userKey");
            secrets.push("apiToken");
            if let Some(p) = get("pushoverpriority").and_then(|p| p.parse::<i64>().ok()) {
                config.insert("priority".into(), json!(p.clamp(-2, 2)));
            }
        }
        ChannelType::Gotify => {
            put(&mut config, "serverUrl", get("gotifyserverurl"));
            secrets.push("appToken");
            if let Some(p) = get("gotifyPriority").and_then(|p| p.parse::<i64>().ok()) {
                config.insert("priority".into(), json!(p.clamp(0, 10)));
            }
        }
        ChannelType::Matrix => {
            put(&mut config, "homeserverUrl", get("homeserverUrl"));
            put(&mut config, "roomId", get("internalRoomId"));
            secrets.push("accessToken");
        }
        ChannelType::Email => {
            super::email_recipients(get("smtpTo").as_deref(), &at, &mut config, notes);
            if get("smtpCC").is_some() || get("smtpBCC").is_some() {
                notes.push(format!("{at}: CC and BCC are not carried"));
            }
        }
        ChannelType::TwilioSms => {
            put(&mut config, "accountSid", get("twilioAccountSID"));
            secrets.push("authToken");
            put(&mut config, "from", get("twilioFromNumber"));
            put(&mut config, "to", get("twilioToNumber"));
        }
    }
    for key in secrets {
        config.insert(key.into(), secret(&name, key, &at, notes));
    }
    Some(Channel {
        name,
        kind,
        config,
        events: None,
        is_default: flag(row, "is_default").then_some(true),
        enabled: off(row, "active").then_some(false),
    })
}

/// `data.status` (a plain JSONata path) as the JSONPath `$.data.status`; anything more (a
/// function, a filter, arithmetic) has no JSONPath equivalent here.
fn json_path(expr: &str) -> Option<String> {
    let expr = expr.trim().trim_start_matches("$.");
    let ok = !expr.is_empty()
        && expr.split('.').all(|seg| {
            let (name, rest) = seg.split_once('[').unwrap_or((seg, ""));
            let name_ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            let index_ok = rest.is_empty()
                || rest
                    .strip_suffix(']')
                    .is_some_and(|i| i.chars().all(|c| c.is_ascii_digit()) && !i.is_empty());
            name_ok && index_ok
        });
    ok.then(|| format!("$.{expr}"))
}

/// The expected value of a JSON query: a number or boolean where it reads as one.
fn typed(v: &str) -> Value {
    if let Ok(n) = v.parse::<i64>() {
        return json!(n);
    }
    if let Ok(f) = v.parse::<f64>() {
        return json!(f);
    }
    match v {
        "true" => json!(true),
        "false" => json!(false),
        _ => json!(v),
    }
}

/// An HTTP-family monitor's `config` (http, keyword, json-query).
fn http_config(
    row: &Record,
    kind: &str,
    name: &str,
    at: &str,
    notes: &mut Vec<String>,
) -> Option<Map<String, Value>> {
    let mut config = Map::new();
    let url = text(row, "url").unwrap_or_default();
    if let Some(m) = text(row, "method").map(|m| m.to_uppercase()) {
        if m != "GET" {
            config.insert("method".into(), json!(m));
        }
    }
    match json_text(row, "headers") {
        Some(Value::Object(h)) if !h.is_empty() => {
            let h: Map<String, Value> = h
                .into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, Value::String(v))
                })
                .collect();
            config.insert("headers".into(), Value::Object(h));
        }
        Some(_) => {}
        None if text(row, "headers").is_some() => {
            notes.push(format!("{at}: headers are not a JSON object; not carried"))
        }
        None => {}
    }
    if let Some(body) = text(row, "body") {
        config.insert("body".into(), json!(body));
    }
    if let Some(Value::Array(codes)) = json_text(row, "accepted_statuscodes_json") {
        let codes: Vec<Value> = codes
            .into_iter()
            .filter_map(|c| match c {
                Value::String(s) => Some(s.parse::<u16>().map(Value::from).unwrap_or(json!(s))),
                Value::Number(n) => Some(Value::Number(n)),
                _ => None,
            })
            .collect();
        if !codes.is_empty() {
            config.insert("expect".into(), json!({ "statusCodes": codes }));
        }
    }
    match int(row, "maxredirects") {
        Some(0) => {
            config.insert("followRedirects".into(), json!(false));
        }
        Some(n) => {
            config.insert("maxRedirects".into(), json!(n.clamp(1, 20)));
        }
        None => {}
    }
    if flag(row, "ignore_tls") && url.starts_with("https://") {
        config.insert("tls".into(), json!({ "verify": false }));
    }
    let var = |k: &str| format!("${{TOCSIN_{}_{}}}", env_word(name), env_word(k));
    match text(row, "auth_method").as_deref() {
        Some("basic") => {
            let user = text(row, "basic_auth_user").unwrap_or_default();
            config.insert(
                "auth".into(),
                json!({"type": "basic", "username": user, "password": var("password")}),
            );
            notes.push(format!(
                "{at}: a secret: set TOCSIN_{}_PASSWORD to the basic-auth password (not written into the file)",
                env_word(name)
            ));
        }
        Some("bearer") => {
            config.insert(
                "auth".into(),
                json!({"type": "bearer", "token": var("token")}),
            );
            notes.push(format!(
                "{at}: a secret: set TOCSIN_{}_TOKEN to the bearer token (not written into the file)",
                env_word(name)
            ));
        }
        Some(other) => notes.push(format!(
            "{at}: authentication {other:?} is not carried (Tocsin has basic and bearer)"
        )),
        None => {}
    }
    let mut assertions = vec![];
    match kind {
        "keyword" => {
            let keyword = text(row, "keyword").unwrap_or_default();
            let op = if flag(row, "invert_keyword") {
                "not_contains"
            } else {
                "contains"
            };
            assertions.push(json!({"target": "body", "operator": op, "value": keyword}));
        }
        "json-query" => {
            let expr = text(row, "json_path").unwrap_or_default();
            let expected = text(row, "expected_value").unwrap_or_default();
            let op = match text(row, "json_path_operator").as_deref() {
                None | Some("==") => Some("eq"),
                Some("!=") => Some("neq"),
                Some("<") => Some("lt"),
                Some("<=") => Some("lte"),
                Some(">") => Some("gt"),
                Some(">=") => Some("gte"),
                Some("contains") => Some("contains"),
                Some(_) => None,
            };
            match (json_path(&expr), op) {
                (Some(path), Some(op)) => assertions.push(json!({
                    "target": "jsonPath", "property": path, "operator": op, "value": typed(&expected)
                })),
                _ => {
                    notes.push(format!(
                        "{at}: the JSON query {expr:?} is a JSONata expression with no JSONPath equivalent; monitor not carried"
                    ));
                    return None;
                }
            }
        }
        _ => {}
    }
    if !assertions.is_empty() {
        config.insert("assertions".into(), Value::Array(assertions));
    }
    Some(config)
}

/// What a monitor row becomes.
enum Mapped {
    Monitor(Box<Monitor>),
    Group,
    Skipped,
}

const DNS_TYPES: [&str; 10] = [
    "A", "AAAA", "CNAME", "MX", "NS", "TXT", "SOA", "SRV", "CAA", "PTR",
];

fn monitor(row: &Record, name: &str, at: &str, notes: &mut Vec<String>) -> Mapped {
    let kind = text(row, "type").unwrap_or_default();
    let mut m = Monitor {
        name: name.to_string(),
        ..Monitor::default()
    };
    let mut config = Map::new();
    match kind.as_str() {
        "group" => return Mapped::Group,
        "http" | "keyword" | "json-query" => {
            m.kind = MonitorType::Http;
            m.url = text(row, "url");
            match http_config(row, &kind, name, at, notes) {
                Some(c) => config = c,
                None => return Mapped::Skipped,
            }
        }
        "port" => {
            m.kind = MonitorType::Tcp;
            m.host = text(row, "hostname");
            m.port = int(row, "port");
        }
        "ping" => {
            m.kind = MonitorType::Ping;
            m.host = text(row, "hostname");
            if let Some(n) = int(row, "ping_count") {
                config.insert("count".into(), json!(n.clamp(1, 10)));
            }
            if let Some(size) = int(row, "packet_size").filter(|s| *s != 56) {
                config.insert("packetSize".into(), json!(size.clamp(0, 65_500)));
            }
        }
        "dns" => {
            m.kind = MonitorType::Dns;
            m.host = text(row, "hostname");
            let rtype = text(row, "dns_resolve_type")
                .unwrap_or_else(|| "A".into())
                .to_uppercase();
            if !DNS_TYPES.contains(&rtype.as_str()) {
                notes.push(format!(
                    "{at}: DNS record type {rtype:?} is not one Tocsin queries; monitor not carried"
                ));
                return Mapped::Skipped;
            }
            config.insert("recordType".into(), json!(rtype));
            let servers = text(row, "dns_resolve_server").unwrap_or_default();
            let mut servers = servers.split(',').map(str::trim).filter(|s| !s.is_empty());
            if let Some(server) = servers.next() {
                let resolver = match int(row, "port") {
                    Some(p) if p != 53 && !server.contains(':') => format!("{server}:{p}"),
                    _ => server.to_string(),
                };
                config.insert("resolver".into(), json!(resolver));
            }
            if servers.next().is_some() {
                notes.push(format!(
                    "{at}: only the first DNS resolver is carried (Tocsin asks one)"
                ));
            }
            if matches!(json_text(row, "conditions"), Some(Value::Array(c)) if !c.is_empty()) {
                notes.push(format!("{at}: the DNS conditions are not carried"));
            }
        }
        "websocket-upgrade" => {
            m.kind = MonitorType::Websocket;
            m.url = text(row, "url");
            let protocols: Vec<String> = text(row, "ws_subprotocol")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if !protocols.is_empty() {
                config.insert("subprotocols".into(), json!(protocols));
            }
            if flag(row, "ignore_tls") && m.url.as_deref().is_some_and(|u| u.starts_with("wss:")) {
                config.insert("tls".into(), json!({ "verify": false }));
            }
        }
        "push" => {
            m.kind = MonitorType::Push;
            notes.push(format!(
                "{at}: the push token is not carried: the push URL changes (Tocsin gives a new token on create)"
            ));
        }
        other => {
            notes.push(format!(
                "{at}: type {other:?} has no Tocsin monitor type; not carried"
            ));
            return Mapped::Skipped;
        }
    }
    let interval = int(row, "interval").filter(|i| *i > 0);
    m.interval = interval;
    if m.kind != MonitorType::Push {
        // Kuma's timeout may reach its interval; Tocsin's must stay below it and 120 s.
        let ceiling = interval.map_or(120, |i| (i - 1).clamp(1, 120));
        m.timeout = int(row, "timeout")
            .filter(|t| *t > 0)
            .map(|t| t.clamp(1, ceiling));
    }
    // Kuma retries before it marks a monitor down: Tocsin counts the failures in a row.
    if let Some(r) = int(row, "maxretries").filter(|r| *r > 0) {
        if r + 1 > 20 {
            notes.push(format!(
                "{at}: {r} retries: Tocsin confirms a failure at most 20 times in a row"
            ));
        }
        m.confirmations_required = Some((r + 1).min(20));
    }
    m.description = text(row, "description");
    if off(row, "active") {
        m.active = Some(false);
    }
    if flag(row, "upside_down") {
        notes.push(format!("{at}: upside-down mode is not carried"));
    }
    if int(row, "resend_interval").is_some_and(|r| r > 0) {
        notes.push(format!(
            "{at}: repeated notifications while down are not carried: use an escalation policy"
        ));
    }
    if int(row, "proxy_id").is_some() {
        notes.push(format!("{at}: the proxy is not carried"));
    }
    if !config.is_empty() {
        m.config = Some(config);
    }
    Mapped::Monitor(Box::new(m))
}

/// A Kuma local date-time (`2030-01-01 02:00:00`, `2030-01-01T02:00`) in `tz`, as RFC 3339 UTC.
fn instant(local: &str, tz: chrono_tz::Tz) -> Option<chrono::DateTime<chrono::Utc>> {
    let local = local.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(local) {
        return Some(t.with_timezone(&chrono::Utc));
    }
    let naive = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S%.fZ",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(local, f).ok())?;
    tz.from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&chrono::Utc))
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The maintenance's time zone: its own, or the server's for `SAME_AS_SERVER`.
fn zone(row: &Record, server_tz: Option<&str>) -> Option<chrono_tz::Tz> {
    let tz = text(row, "timezone").unwrap_or_else(|| "SAME_AS_SERVER".into());
    let tz = if tz == "SAME_AS_SERVER" {
        server_tz?.to_string()
    } else {
        tz
    };
    tz.parse().ok()
}

/// One maintenance as a window of each of its monitors.
fn maintenance(
    row: &Record,
    monitors: &[String],
    server_tz: Option<&str>,
    titles: &mut Unique,
    notes: &mut Vec<String>,
) -> Vec<Maintenance> {
    let id = int(row, "id").unwrap_or_default();
    let title = text(row, "title").unwrap_or_else(|| format!("maintenance {id}"));
    let at = format!("maintenance[{id}] ({title})");
    let strategy = text(row, "strategy").unwrap_or_else(|| "single".into());
    if off(row, "active") {
        notes.push(format!("{at}: paused; not carried"));
        return vec![];
    }
    if monitors.is_empty() {
        notes.push(format!(
            "{at}: no carried monitor (a Tocsin window belongs to a monitor); not carried"
        ));
        return vec![];
    }
    let tz = match zone(row, server_tz) {
        Some(tz) => tz,
        None => {
            notes.push(format!(
                "{at}: time zone {:?} not known; read as UTC",
                text(row, "timezone").unwrap_or_default()
            ));
            chrono_tz::UTC
        }
    };
    let start = text(row, "start_date").and_then(|d| instant(&d, tz));
    let (starts, ends, recurring) = match strategy.as_str() {
        "single" => {
            let end = text(row, "end_date").and_then(|d| instant(&d, tz));
            match (start, end) {
                (Some(s), Some(e)) => (s, e, None),
                _ => {
                    notes.push(format!("{at}: no start or end date; not carried"));
                    return vec![];
                }
            }
        }
        "cron" | "recurring-weekday" | "recurring-day-of-month" | "recurring-interval" => {
            if strategy == "recurring-interval" && int(row, "interval_day").is_some_and(|d| d > 1) {
                notes.push(format!(
                    "{at}: every {} days: Tocsin repeats daily, weekly, monthly or by cron; not carried",
                    int(row, "interval_day").unwrap_or_default()
                ));
                return vec![];
            }
            let cron = text(row, "cron")
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let duration = int(row, "duration").unwrap_or(0);
            let length = chrono::TimeDelta::try_seconds(duration).filter(|_| duration > 0);
            let Some(length) =
                length.filter(|_| cron.split(' ').count() == 5 && !cron.contains(['L', '#', '?']))
            else {
                notes.push(format!(
                    "{at}: schedule {cron:?} for {duration} s is not a standard 5-field cron with a duration; not carried"
                ));
                return vec![];
            };
            // From the start of its date range, or from the day it was made; cron picks the times.
            let from = start.unwrap_or_else(|| {
                chrono::Utc
                    .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
                    .single()
                    .unwrap_or_default()
            });
            (
                from,
                from + length,
                Some(Map::from_iter([
                    ("frequency".to_string(), json!("cron")),
                    ("expression".to_string(), json!(cron)),
                ])),
            )
        }
        other => {
            notes.push(format!(
                "{at}: strategy {other:?} (started and stopped by hand) is not carried"
            ));
            return vec![];
        }
    };
    let mut out = vec![];
    for m in monitors {
        let wanted = if monitors.len() == 1 {
            title.clone()
        } else {
            format!("{title} ({m})")
        };
        out.push(Maintenance {
            title: titles.take(&wanted, &at, notes),
            monitor: m.clone(),
            starts_at: rfc3339(starts),
            ends_at: rfc3339(ends),
            timezone: Some(tz.name().to_string()),
            recurring: recurring.clone(),
            exclude_from_uptime: None,
            description: text(row, "description"),
        });
    }
    out
}

/// A Kuma slug as a Tocsin one: 3 to 48 of a-z, 0-9 and single hyphens.
fn slug(kuma: &str) -> String {
    let mut out = String::new();
    for c in kuma.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.trim_matches('-').chars().take(48).collect();
    out = out.trim_end_matches('-').to_string();
    while out.len() < 3 {
        out.push_str("-kuma");
        out = out.trim_start_matches('-').to_string();
    }
    out
}

fn by_weight(rows: &mut [&Record]) {
    rows.sort_by_key(|r| (int(r, "weight").unwrap_or(0), int(r, "id").unwrap_or(0)));
}

/// Maps a read database to a Tocsin file and notes.
pub fn convert(db: &KumaDb) -> Imported {
    let mut notes = vec![];
    let mut file = File {
        version: 1,
        ..File::default()
    };

    // Channels.
    let mut channel_names = Unique::default();
    let mut channel_of: HashMap<i64, String> = HashMap::new();
    for row in db.rows("notification") {
        if let Some(c) = channel(row, &mut channel_names, &mut notes) {
            channel_of.insert(int(row, "id").unwrap_or_default(), c.name.clone());
            file.notification_channels.push(c);
        }
    }

    // Group monitors become projects; their members name the nearest one.
    let rows = db.rows("monitor");
    let by_id: HashMap<i64, &Record> = rows
        .iter()
        .filter_map(|r| Some((int(r, "id")?, r)))
        .collect();
    let mut project_names = Unique::default();
    let mut project_of: HashMap<i64, String> = HashMap::new();
    for row in rows {
        if text(row, "type").as_deref() == Some("group") {
            let id = int(row, "id").unwrap_or_default();
            let wanted = text(row, "name").unwrap_or_else(|| format!("group {id}"));
            let at = format!("monitor[{id}] ({wanted})");
            let name = project_names.take(&wanted, &at, &mut notes);
            notes.push(format!(
                "{at}: a group monitor: carried as the project {name:?} of its members (a group's own status and notifications are not carried)"
            ));
            project_of.insert(id, name.clone());
            file.projects.push(Project {
                name,
                description: text(row, "description"),
            });
        }
    }
    let group_of = |row: &Record| {
        let mut seen = HashSet::new();
        let mut parent = int(row, "parent");
        while let Some(p) = parent {
            if !seen.insert(p) {
                break;
            }
            if let Some(name) = project_of.get(&p) {
                return Some(name.clone());
            }
            parent = by_id.get(&p).and_then(|r| int(r, "parent"));
        }
        None
    };

    // Tags: `name` or `name:value`.
    let tag_name: HashMap<i64, String> = db
        .rows("tag")
        .iter()
        .filter_map(|r| Some((int(r, "id")?, text(r, "name")?)))
        .collect();
    let mut tags_of: HashMap<i64, Vec<String>> = HashMap::new();
    for r in db.rows("monitor_tag") {
        let (Some(m), Some(name)) = (
            int(r, "monitor_id"),
            int(r, "tag_id").and_then(|t| tag_name.get(&t)),
        ) else {
            continue;
        };
        let tag = match text(r, "value") {
            Some(v) => format!("{name}:{v}"),
            None => name.clone(),
        };
        let list = tags_of.entry(m).or_default();
        if !list.contains(&tag) {
            list.push(tag);
        }
    }
    let mut channels_of: HashMap<i64, Vec<String>> = HashMap::new();
    for r in db.rows("monitor_notification") {
        if let (Some(m), Some(c)) = (
            int(r, "monitor_id"),
            int(r, "notification_id").and_then(|n| channel_of.get(&n)),
        ) {
            let list = channels_of.entry(m).or_default();
            if !list.contains(c) {
                list.push(c.clone());
            }
        }
    }

    // Monitors.
    let mut monitor_names = Unique::default();
    let mut monitor_of: HashMap<i64, String> = HashMap::new();
    for row in rows {
        let id = int(row, "id").unwrap_or_default();
        let wanted = text(row, "name").unwrap_or_else(|| format!("monitor {id}"));
        let at = format!("monitor[{id}] ({wanted})");
        let Mapped::Monitor(mut m) = monitor(row, &wanted, &at, &mut notes) else {
            continue;
        };
        m.name = monitor_names.take(&wanted, &at, &mut notes);
        if let Some(tags) = tags_of.remove(&id) {
            let (fit, long): (Vec<String>, Vec<String>) =
                tags.into_iter().partition(|t| t.chars().count() <= 50);
            for t in long {
                notes.push(format!(
                    "{at}: tag {t:?} is longer than 50 characters; not carried"
                ));
            }
            if fit.len() > 20 {
                notes.push(format!("{at}: only the first 20 tags are carried"));
            }
            let fit: Vec<String> = fit.into_iter().take(20).collect();
            if !fit.is_empty() {
                m.tags = Some(fit);
            }
        }
        m.notification_channels = channels_of.remove(&id);
        m.projects = group_of(row).map(|p| vec![p]);
        monitor_of.insert(id, m.name.clone());
        file.monitors.push(*m);
    }

    // Maintenance.
    let server_tz = db
        .rows("setting")
        .iter()
        .find(|r| text(r, "key").as_deref() == Some("serverTimezone"))
        .and_then(|r| text(r, "value"))
        .map(|v| serde_json::from_str::<String>(&v).unwrap_or(v));
    let mut titles = Unique::default();
    for row in db.rows("maintenance") {
        let id = int(row, "id");
        let mut monitors = vec![];
        for r in db.rows("monitor_maintenance") {
            if int(r, "maintenance_id") == id {
                if let Some(name) = int(r, "monitor_id").and_then(|m| monitor_of.get(&m)) {
                    monitors.push(name.clone());
                }
            }
        }
        file.maintenance_windows.extend(maintenance(
            row,
            &monitors,
            server_tz.as_deref(),
            &mut titles,
            &mut notes,
        ));
    }

    // Status pages and their groups.
    let mut slugs = Unique::default();
    for page in db.rows("status_page") {
        let pid = int(page, "id");
        let kuma_slug = text(page, "slug").unwrap_or_default();
        let at = format!("status_page[{}] ({kuma_slug})", pid.unwrap_or_default());
        let wanted = slug(&kuma_slug);
        if wanted != kuma_slug {
            notes.push(format!(
                "{at}: the slug becomes {wanted:?} (Tocsin slugs are 3 to 48 of a-z, 0-9 and single hyphens)"
            ));
        }
        let mut groups: Vec<&Record> = db
            .rows("group")
            .iter()
            .filter(|g| int(g, "status_page_id") == pid && pid.is_some())
            .collect();
        by_weight(&mut groups);
        let mut components = vec![];
        for g in groups {
            let group = text(g, "name");
            let mut members: Vec<&Record> = db
                .rows("monitor_group")
                .iter()
                .filter(|r| int(r, "group_id") == int(g, "id"))
                .collect();
            by_weight(&mut members);
            if members.is_empty() {
                notes.push(format!(
                    "{at}: group {:?} has no monitors; not carried",
                    group.clone().unwrap_or_default()
                ));
            }
            for r in members {
                let mid = int(r, "monitor_id").unwrap_or_default();
                match monitor_of.get(&mid) {
                    Some(name) => components.push(Component {
                        name: name.clone(),
                        group: group.clone(),
                        description: None,
                        monitor: Some(name.clone()),
                    }),
                    None => notes.push(format!(
                        "{at}: monitor {mid} in group {:?} was not carried; left off the page",
                        group.clone().unwrap_or_default()
                    )),
                }
            }
        }
        let mut branding = Map::new();
        if let Some(css) = text(page, "custom_css") {
            branding.insert("customCss".into(), json!(css));
        }
        for (col, what) in [
            ("description", "description"),
            ("footer_text", "footer text"),
            ("google_analytics_tag_id", "analytics"),
            ("analytics_id", "analytics"),
        ] {
            if text(page, col).is_some() {
                notes.push(format!("{at}: the {what} is not carried"));
            }
        }
        file.status_pages.push(StatusPage {
            slug: slugs.take(&wanted, &at, &mut notes),
            name: text(page, "title").unwrap_or_else(|| kuma_slug.clone()),
            published: Some(flag(page, "published")),
            history_days: None,
            auto_incidents: None,
            branding: (!branding.is_empty()).then_some(branding),
            access: None,
            components: (!components.is_empty()).then_some(components),
        });
    }
    Imported { file, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonata_paths_to_jsonpath() {
        assert_eq!(json_path("status").as_deref(), Some("$.status"));
        assert_eq!(
            json_path("data.items[0].ok").as_deref(),
            Some("$.data.items[0].ok")
        );
        assert_eq!(json_path("$count(items)"), None);
        assert_eq!(json_path("a + b"), None);
    }

    #[test]
    fn slugs_fit_tocsin() {
        assert_eq!(slug("My_Status"), "my-status");
        assert_eq!(slug("ab"), "ab-kuma");
        assert_eq!(slug("ok-page"), "ok-page");
    }

    #[test]
    fn local_dates_in_their_zone() {
        let tz: chrono_tz::Tz = "Europe/Berlin".parse().unwrap_or(chrono_tz::UTC);
        let t = instant("2030-01-01 02:00:00", tz).map(rfc3339);
        assert_eq!(t.as_deref(), Some("2030-01-01T01:00:00Z"));
    }
}
