//! Importers: another tool's configuration to a Tocsin file, plus one line for each thing
//! that could not be carried over (printed on stderr by the CLI).

pub mod gatus;
pub mod healthchecks;
pub mod kuma_db;
pub mod uptime_kuma;

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
    fn durations() {
        assert_eq!(go_duration_secs("5m"), Some(300));
        assert_eq!(go_duration_secs("1h30m"), Some(5400));
        assert_eq!(go_duration_secs("30s"), Some(30));
        assert_eq!(go_duration_secs("soon"), None);
    }
}
