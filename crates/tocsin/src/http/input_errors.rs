//! What a body or query string that does not deserialize is told. serde, serde_json,
//! serde_urlencoded and the parsers behind them (integers, chrono, url) speak Rust
//! (`invalid type: string "60", expected i64`, `invalid digit found in string`); this module
//! turns their messages into the API's words (integer, number, string, boolean, array, object,
//! one of the listed values, an RFC 3339 date-time) for the field that failed. serde gives no
//! structured error kind across formats, only its stable message shapes, so those are matched.

use crate::domain::FieldError;

/// How a field that wants a date-time is told.
const RFC3339: &str = "must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z";

/// Fields counted in seconds, named in the message so `"60"` and `1.5` say what to send.
const SECONDS: &[&str] = &["interval", "timeout", "gracePeriod"];

/// The failure of one field (`field` is its dotted path), or of the document when `None`.
pub enum Failure {
    Field(FieldError),
    Document(String),
}

/// Translates a deserializer's message for the value at `path` (`None`: the document root).
pub fn translate(full: &str, path: Option<&str>) -> Failure {
    let raw = full.split(" at line ").next().unwrap_or(full);
    // Serde names a missing or unknown field from inside the object holding it, without
    // the path of that field itself: it is the object's path plus the named field.
    if let Some(name) = quoted_after(raw, "missing field `") {
        return Failure::Field(FieldError::new(join(path, name), "is required"));
    }
    if let Some(name) = quoted_after(raw, "unknown field `") {
        let known = listed(raw);
        let message = match known {
            Some(list) => format!("is not a known field; the known fields are {list}"),
            None => "is not a known field".to_string(),
        };
        return Failure::Field(FieldError::new(join(path, name), message));
    }
    if let Some(name) = quoted_after(raw, "duplicate field `") {
        return Failure::Field(FieldError::new(join(path, name), "is given more than once"));
    }
    let Some(field) = path else {
        return Failure::Document(document(full));
    };
    Failure::Field(FieldError::new(field, value(raw, field)))
}

/// The message for a value of the wrong type or out of range at `field`.
fn value(raw: &str, field: &str) -> String {
    let last = field.rsplit('.').next().unwrap_or(field);
    if let Some(rest) = raw.strip_prefix("unknown variant `") {
        let got = rest.split('`').next().unwrap_or_default();
        return match listed(raw) {
            Some(list) => format!("must be one of {list}, not {got:?}"),
            None => format!("is not one of the accepted values: {got:?}"),
        };
    }
    let (got, expected) = if let Some(rest) = raw.strip_prefix("invalid type: ") {
        split_expected(rest)
    } else if let Some(rest) = raw.strip_prefix("invalid value: ") {
        split_expected(rest)
    } else if let Some(rest) = raw.strip_prefix("invalid length ") {
        let (n, exp) = split_expected(rest);
        (n.map(|n| format!("{n} items")), exp)
    } else {
        (None, parse_failure(raw))
    };
    let Some(expected) = expected else {
        return format!("is not valid: {raw}");
    };
    let mut wanted = expected_words(&expected);
    if wanted == RFC3339 {
        return with_got(RFC3339.to_string(), got);
    }
    if SECONDS.contains(&last) && wanted.contains("integer") {
        wanted = format!("{wanted} number of seconds");
    }
    with_got(format!("must be {wanted}"), got)
}

fn with_got(message: String, got: Option<String>) -> String {
    match got {
        Some(g) => format!("{message}, not {g}"),
        None => message,
    }
}

/// `string "60", expected i64` as (`a string ("60")`, `i64`).
fn split_expected(rest: &str) -> (Option<String>, Option<String>) {
    match rest.split_once(", expected ") {
        Some((got, exp)) => (Some(got_words(got)), Some(exp.to_string())),
        None => (None, None),
    }
}

/// What was sent, in JSON's words.
fn got_words(got: &str) -> String {
    if let Some(s) = got.strip_prefix("string ") {
        return format!("the string {s}");
    }
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(v) = got.strip_prefix(prefix) {
            return v.trim_matches('`').to_string();
        }
    }
    match got {
        "null" | "unit value" => "null".into(),
        "sequence" => "an array".into(),
        "map" => "an object".into(),
        other => other.to_string(),
    }
}

/// A parser's own message (integers, floats, booleans from a query string; chrono; url) as
/// the type it wanted, in serde's words for [`expected_words`].
fn parse_failure(raw: &str) -> Option<String> {
    const INTEGER: &[&str] = &[
        "invalid digit found in string",
        "cannot parse integer from empty string",
        "number too large to fit in target type",
        "number too small to fit in target type",
    ];
    const CHRONO: &[&str] = &[
        "input contains invalid characters",
        "premature end of input",
        "trailing input",
        "input is out of range",
        "input is not enough for unique date and time",
        "no possible date and time matching input",
    ];
    if INTEGER.contains(&raw) {
        Some("i64".into())
    } else if raw == "invalid float literal" {
        Some("f64".into())
    } else if raw.starts_with("provided string was not `true` or `false`") {
        Some("a boolean".into())
    } else if CHRONO.contains(&raw) {
        Some("an RFC 3339 formatted date and time string".into())
    } else {
        None
    }
}

/// serde's name for the expected type, in the API's words.
fn expected_words(exp: &str) -> String {
    let exp = exp.trim();
    let integer = |t: &str| {
        let digits = t.trim_start_matches(['i', 'u']);
        t.len() > digits.len()
            && t.len() - digits.len() == 1
            && matches!(digits, "8" | "16" | "32" | "64" | "128" | "size")
    };
    if integer(exp) {
        return if exp.starts_with('u') {
            "an integer of 0 or more".into()
        } else {
            "an integer".into()
        };
    }
    if exp.starts_with("a nonzero") {
        return "an integer other than 0".into();
    }
    match exp {
        "f32" | "f64" => "a number".into(),
        "a boolean" => "a boolean (true or false)".into(),
        "a string" | "a borrowed string" | "a character" | "a string or bytes" => "a string".into(),
        "a sequence" | "a tuple" => "an array".into(),
        "a map" => "an object".into(),
        _ if exp.starts_with("struct ") || exp.starts_with("enum ") => "an object".into(),
        _ if exp.starts_with("a sequence") || exp.starts_with("tuple") => "an array".into(),
        _ if exp.contains("RFC 3339") || exp.contains("date and time") => RFC3339.into(),
        _ if exp.contains("URL") => "a URL".into(),
        _ if exp.starts_with("one of ") || exp.starts_with('`') => format!("one of {exp}"),
        other => other.to_string(),
    }
}

/// The message for a document that is not a JSON object (or not JSON at all).
pub fn document(raw: &str) -> String {
    if raw.starts_with("invalid type: ") || raw.starts_with("invalid length ") {
        return "The body must be a JSON object: send {\"field\": value, ...}.".into();
    }
    if raw.starts_with("EOF while parsing") {
        return "The body ends before the JSON does: send the whole JSON document.".into();
    }
    if raw.starts_with("trailing characters") {
        return "The body has text after the JSON document: send exactly one JSON object.".into();
    }
    format!("The body is not valid JSON ({raw}): fix it and send it again.")
}

/// The text between `prefix` and the next backtick, if `raw` starts with `prefix`.
fn quoted_after<'a>(raw: &'a str, prefix: &str) -> Option<&'a str> {
    raw.strip_prefix(prefix)?.split('`').next()
}

/// The names serde lists after `expected one of ` (or `expected `), without backticks.
fn listed(raw: &str) -> Option<String> {
    let (_, list) = raw.split_once(", expected ")?;
    let list = list.strip_prefix("one of ").unwrap_or(list);
    if list.starts_with("there are no") {
        return None;
    }
    Some(list.replace('`', ""))
}

/// `name` under `path`; serde_path_to_error already ends the path with an unknown field's name.
fn join(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) if p == name || p.ends_with(&format!(".{name}")) => p.to_string(),
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(raw: &str, path: Option<&str>) -> (String, String) {
        match translate(raw, path) {
            Failure::Field(f) => (f.field, f.message),
            Failure::Document(d) => panic!("document error {d}"),
        }
    }

    #[test]
    fn types_are_named_in_the_apis_words() {
        assert_eq!(
            field(
                r#"invalid type: string "60", expected i64"#,
                Some("interval")
            )
            .1,
            r#"must be an integer number of seconds, not the string "60""#
        );
        assert_eq!(
            field("invalid value: integer `-1`, expected u32", Some("retries")).1,
            "must be an integer of 0 or more, not -1"
        );
        assert_eq!(
            field("invalid type: integer `1`, expected a string", Some("name")).1,
            "must be a string, not 1"
        );
        assert_eq!(
            field("invalid type: map, expected a sequence", Some("tags")).1,
            "must be an array, not an object"
        );
        assert_eq!(
            field(
                "unknown variant `FTP`, expected one of `HTTP`, `TCP`",
                Some("type")
            )
            .1,
            r#"must be one of HTTP, TCP, not "FTP""#
        );
        assert_eq!(
            field("invalid digit found in string", Some("limit")).1,
            "must be an integer"
        );
        assert_eq!(
            field("input contains invalid characters", Some("from")).1,
            RFC3339
        );
    }

    #[test]
    fn missing_and_unknown_fields_get_their_path() {
        assert_eq!(
            field("missing field `url`", None),
            ("url".into(), "is required".into())
        );
        assert_eq!(
            field("missing field `target`", Some("config.assertions.0")),
            ("config.assertions.0.target".into(), "is required".into())
        );
        let (f, m) = field("unknown field `nme`, expected `name` or `url`", None);
        assert_eq!(f, "nme");
        assert!(m.starts_with("is not a known field"), "{m}");
        let (f, _) = field("unknown field `x`, expected `y`", Some("config.x"));
        assert_eq!(f, "config.x");
    }

    #[test]
    fn documents_that_are_not_objects_say_so() {
        for raw in [
            "invalid length 0, expected struct CreateMonitor with 19 elements",
            "invalid type: string \"x\", expected struct CreateMonitor",
        ] {
            let Failure::Document(d) = translate(raw, None) else {
                panic!("{raw}")
            };
            assert!(d.contains("JSON object"), "{d}");
        }
    }
}
