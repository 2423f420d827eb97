//! Importers: another tool's configuration to a Tocsin file, plus one line for each thing
//! that could not be carried over (printed on stderr by the CLI).

pub mod gatus;
pub mod healthchecks;
pub mod kuma_db;
pub mod uptime_kuma;

use serde_json::{json, Map, Value};

use crate::model::File;

/// A file made from another tool's configuration, and what it could not carry.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    pub file: File,
    pub notes: Vec<String>,
}

/// The input could not be read at all.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ImportError(pub String);

/// An email channel's `config.to` from another tool's comma-separated recipients, with the note
/// every such import carries (`at` names the source): the SMTP settings are the Tocsin
/// server's, not the channel's.
pub fn email_recipients(
    recipients: Option<&str>,
    at: &str,
    config: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let to: Vec<&str> = recipients
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    config.insert("to".into(), json!(to));
    notes.push(format!(
        "{at}: the SMTP settings (host, port, from, username, password) are the Tocsin server's, not the channel's"
    ));
}

/// Seconds of a Go-style duration (`90s`, `5m`, `1h30m`, `250ms`), as Gatus writes them.
pub fn go_duration_secs(text: &str) -> Option<i64> {
    let mut total_ms: f64 = 0.0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let ms = match &rest[..unit_len] {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total_ms += n * ms;
        rest = &rest[unit_len..];
    }
    Some((total_ms / 1000.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_recipients_are_trimmed_and_the_smtp_settings_noted() {
        let (mut config, mut notes) = (Map::new(), Vec::new());
        email_recipients(Some(" a@x.io, ,b@x.io"), "n[1]", &mut config, &mut notes);
        assert_eq!(config["to"], json!(["a@x.io", "b@x.io"]));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("n[1]: the SMTP settings"));
        email_recipients(None, "n[2]", &mut config, &mut notes);
        assert_eq!(config["to"], json!([]));
    }

    #[test]
    fn durations() {
        assert_eq!(go_duration_secs("5m"), Some(300));
        assert_eq!(go_duration_secs("1h30m"), Some(5400));
        assert_eq!(go_duration_secs("30s"), Some(30));
        assert_eq!(go_duration_secs("soon"), None);
    }
}
