//! The assertion language shared by every check kind. An assertion names what it looks at
//! (`target`), how to compare (`operator`), the expected value, and how bad a failure is
//! (`severity`). Each kind fills an [`Observation`] with what it saw; [`evaluate`] turns the
//! assertions plus the observation into `assertionResults` and the verdict they imply.
//! [`parse_assertions`] validates the JSON form once, at the API edge.
//!
//! JSON form (inside a monitor's `config.assertions` array, at most [`MAX_ASSERTIONS`] items):
//! `{"target": "statusCode", "operator": "eq", "value": 200, "severity": "fail"}`
//! `{"target": "header", "property": "content-type", "operator": "contains", "value": "json"}`
//! `{"target": "jsonPath", "property": "$.status", "operator": "eq", "value": "ok"}`
//!
//! Keys: `target` and `operator` are required; `property` is required for `header` (a header
//! name, matched case-insensitively) and `jsonPath` (an RFC 9535 path), and rejected for every
//! other target; `value` is required by every operator except `exists`, `empty` and
//! `not_empty` (which reject it); `severity` is `fail` (default) or `warn`. Unknown keys are
//! rejected.
//!
//! # What each target yields
//!
//! * `statusCode`, `latency` (total, in ms), `certificateDaysLeft`: a number. Only `eq`, `neq`,
//!   `lt`, `lte`, `gt`, `gte`, `exists` and `matches` (against the decimal text) are accepted.
//! * `header`: the header's values joined with `", "`; absent when the response lacks it.
//! * `body`, `reply`: the text as observed (HTTP bodies are the first 8 MiB at most).
//! * `jsonPath`: the body parsed as JSON, then queried. No node is *absent*; one node is that
//!   node; several nodes are treated as one JSON array of them. A body that is not JSON makes
//!   the value *unavailable* (every operator fails, with the parse error as the reason).
//! * `dnsRecords`: the answer set. `lt`/`lte`/`gt`/`gte` are rejected.
//! * `resolvedIp`: the address connected to, as text. `lt`/`lte`/`gt`/`gte` are rejected.
//!
//! # Operators
//!
//! * `eq` / `neq`: numbers compare numerically (`200` equals `200.0`). Text compares exactly,
//!   except that a numeric `value` compares numerically with text that parses as a number, and
//!   `resolvedIp` compares parsed addresses (`::1` equals `0::1`). JSON nodes compare as JSON,
//!   with numbers compared numerically and a string equal to a scalar whose text is the same
//!   (`"5"` equals `5`). For `dnsRecords`, a string `value` means "exactly this one record" and an
//!   array means "exactly this set", order-insensitive and ASCII-case-insensitive.
//! * `lt`, `lte`, `gt`, `gte`: numeric; `value` must be a number (or numeric string). Text and
//!   JSON strings are parsed as numbers; an actual that is not a number fails.
//! * `contains` / `not_contains`: substring for text and JSON strings; element membership for
//!   JSON arrays (with `eq` equality); key membership for JSON objects; record membership for
//!   `dnsRecords` (ASCII-case-insensitive).
//! * `matches`: `value` is a regular expression (Rust `regex` syntax, unanchored), compiled at
//!   parse time. Numbers match against their decimal text, JSON strings against their content,
//!   other JSON against its serialization, `dnsRecords` pass when any record matches.
//! * `exists`: the value is present (a header that is present but empty exists).
//! * `empty`: the value is absent, or is `""`, `null`, `[]`, `{}` or an empty record set.
//!   `not_empty` is the opposite, and fails when the value is absent.
//!
//! An absent value (missing header, JSON path without match, no certificate...) fails every
//! operator except `neq`, `not_contains` and `empty`, which pass: nothing is there to equal or
//! contain the value. An unavailable value (body is not JSON) fails every operator.
//!
//! # Verdict
//!
//! Every assertion is reported. The verdict is `Down` when any `fail` assertion failed, else
//! `Degraded` when any `warn` assertion failed, else `Up`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome::{AssertionResult, Verdict};
use crate::spec::FieldError;

/// Most assertions one monitor may carry.
pub const MAX_ASSERTIONS: usize = 50;
/// Longest accepted regular expression source, in bytes.
const MAX_REGEX_LEN: usize = 1024;
/// Compiled-size limit for regular expressions, so a hostile pattern cannot eat memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Longest `actual` text reported in a result; bodies can be large and results are stored.
const MAX_ACTUAL_CHARS: usize = 256;

/// How bad a failed assertion is: `warn` makes the check DEGRADED, `fail` makes it fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warn,
    #[default]
    Fail,
}

/// What an assertion looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Target {
    StatusCode,
    /// Total latency in milliseconds.
    Latency,
    /// A response header; `property` names it (case-insensitive).
    Header,
    /// The response body as text.
    Body,
    /// An RFC 9535 JSON path into the body; `property` holds the path.
    JsonPath,
    /// Days until the TLS certificate expires.
    CertificateDaysLeft,
    /// The DNS answer set (each record's normalized text).
    DnsRecords,
    ResolvedIp,
    /// The first WebSocket (or TCP) reply message.
    Reply,
}

impl Target {
    const ALL: [(&'static str, Target); 9] = [
        ("statusCode", Target::StatusCode),
        ("latency", Target::Latency),
        ("header", Target::Header),
        ("body", Target::Body),
        ("jsonPath", Target::JsonPath),
        ("certificateDaysLeft", Target::CertificateDaysLeft),
        ("dnsRecords", Target::DnsRecords),
        ("resolvedIp", Target::ResolvedIp),
        ("reply", Target::Reply),
    ];

    /// Every JSON spelling, in table order.
    pub fn names() -> Vec<&'static str> {
        Target::ALL.iter().map(|(n, _)| *n).collect()
    }

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        Target::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    fn is_numeric(self) -> bool {
        matches!(
            self,
            Target::StatusCode | Target::Latency | Target::CertificateDaysLeft
        )
    }

    /// Whether `op` means something for this target (see the module docs).
    fn supports(self, op: Operator) -> bool {
        use Operator::*;
        match self {
            Target::StatusCode | Target::Latency | Target::CertificateDaysLeft => {
                matches!(op, Eq | Neq | Lt | Lte | Gt | Gte | Exists | Matches)
            }
            Target::DnsRecords | Target::ResolvedIp => !matches!(op, Lt | Lte | Gt | Gte),
            Target::Header | Target::Body | Target::JsonPath | Target::Reply => true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
    Contains,
    NotContains,
    Matches,
    Exists,
    Empty,
    NotEmpty,
}

impl Operator {
    const ALL: [(&'static str, Operator); 12] = [
        ("eq", Operator::Eq),
        ("neq", Operator::Neq),
        ("lt", Operator::Lt),
        ("lte", Operator::Lte),
        ("gt", Operator::Gt),
        ("gte", Operator::Gte),
        ("contains", Operator::Contains),
        ("not_contains", Operator::NotContains),
        ("matches", Operator::Matches),
        ("exists", Operator::Exists),
        ("empty", Operator::Empty),
        ("not_empty", Operator::NotEmpty),
    ];

    /// Every JSON spelling, in table order.
    pub fn names() -> Vec<&'static str> {
        Operator::ALL.iter().map(|(n, _)| *n).collect()
    }

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        Operator::ALL
            .iter()
            .find(|(_, o)| *o == self)
            .map_or("?", |(n, _)| n)
    }

    fn takes_value(self) -> bool {
        !matches!(
            self,
            Operator::Exists | Operator::Empty | Operator::NotEmpty
        )
    }

    fn is_ordering(self) -> bool {
        matches!(
            self,
            Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte
        )
    }
}

/// A validated assertion (regexes and JSON paths are compiled at parse time).
#[derive(Debug, Clone)]
pub struct Assertion {
    pub target: Target,
    pub property: Option<String>,
    pub operator: Operator,
    pub value: Option<serde_json::Value>,
    pub severity: Severity,
    /// Compiled form of `value` when `operator` is `matches`.
    pub regex: Option<regex::Regex>,
    /// Compiled form of `property` when `target` is `jsonPath`.
    pub json_path: Option<serde_json_path::JsonPath>,
}

impl PartialEq for Assertion {
    fn eq(&self, other: &Self) -> bool {
        self.target == other.target
            && self.property == other.property
            && self.operator == other.operator
            && self.value == other.value
            && self.severity == other.severity
    }
}

/// What a check attempt saw, for assertions to look at. Kinds fill what applies to them.
#[derive(Debug, Clone, Default)]
pub struct Observation<'a> {
    pub status_code: Option<u16>,
    pub latency_ms: f64,
    pub headers: Option<&'a BTreeMap<String, Vec<String>>>,
    pub body: Option<&'a str>,
    pub cert_days_left: Option<i64>,
    pub dns_records: Option<&'a [String]>,
    pub resolved_ip: Option<IpAddr>,
    pub reply: Option<&'a str>,
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// Parses the JSON form of an assertion list. `path` is the dotted prefix of the list (e.g.
/// `config.assertions`); each error is pathed to the offending item or key
/// (`config.assertions.2.value`). `None` and `null` mean "no assertions".
pub fn parse_assertions(
    value: Option<&Value>,
    path: &str,
) -> Result<Vec<Assertion>, Vec<FieldError>> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(vec![FieldError::new(
                path,
                "must be an array of assertions",
            )])
        }
    };
    if items.len() > MAX_ASSERTIONS {
        return Err(vec![FieldError::new(
            path,
            format!(
                "at most {MAX_ASSERTIONS} assertions are allowed, got {}",
                items.len()
            ),
        )]);
    }
    let mut errors = Vec::new();
    let mut parsed = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if let Some(a) = parse_one(item, &format!("{path}.{i}"), &mut errors) {
            parsed.push(a);
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// Parses one item, pushing every problem found; `None` when there was at least one.
fn parse_one(item: &Value, path: &str, errors: &mut Vec<FieldError>) -> Option<Assertion> {
    let Some(obj) = item.as_object() else {
        errors.push(FieldError::new(path, "must be an object"));
        return None;
    };
    let before = errors.len();
    let keys = crate::config::field_names::<crate::config::AssertionConfig>();
    for key in obj.keys() {
        if !keys.contains(&key.as_str()) {
            errors.push(FieldError::new(
                format!("{path}.{key}"),
                format!("unknown key; expected one of {}", keys.join(", ")),
            ));
        }
    }

    let target = parse_name(
        obj.get("target"),
        &format!("{path}.target"),
        &Target::ALL,
        errors,
    );
    let operator = parse_name(
        obj.get("operator"),
        &format!("{path}.operator"),
        &Operator::ALL,
        errors,
    );
    let severity = match obj.get("severity") {
        None | Some(Value::Null) => Some(Severity::Fail),
        Some(Value::String(s)) if s == "fail" => Some(Severity::Fail),
        Some(Value::String(s)) if s == "warn" => Some(Severity::Warn),
        Some(_) => {
            errors.push(FieldError::new(
                format!("{path}.severity"),
                "must be \"fail\" or \"warn\"",
            ));
            None
        }
    };

    // The rest depends on knowing the target and operator.
    let (Some(target), Some(operator)) = (target, operator) else {
        return None;
    };
    if !target.supports(operator) {
        errors.push(FieldError::new(
            format!("{path}.operator"),
            format!(
                "operator \"{}\" is not supported for target \"{}\"",
                operator.as_str(),
                target.as_str()
            ),
        ));
        return None;
    }

    let property = parse_property(
        target,
        obj.get("property"),
        &format!("{path}.property"),
        errors,
    );
    let value_path = format!("{path}.value");
    let value = obj.get("value");
    let mut regex = None;
    if operator.takes_value() {
        match value {
            None => errors.push(FieldError::new(
                &value_path,
                format!("is required for operator \"{}\"", operator.as_str()),
            )),
            Some(v) => {
                if let Err(message) = check_value(target, operator, v) {
                    errors.push(FieldError::new(&value_path, message));
                } else if operator == Operator::Matches {
                    match compile_regex(v) {
                        Ok(r) => regex = Some(r),
                        Err(message) => errors.push(FieldError::new(&value_path, message)),
                    }
                }
            }
        }
    } else if !matches!(value, None | Some(Value::Null)) {
        errors.push(FieldError::new(
            &value_path,
            format!("operator \"{}\" takes no value", operator.as_str()),
        ));
    }

    if errors.len() != before {
        return None;
    }
    let (property, json_path) = property?;
    Some(Assertion {
        target,
        property,
        operator,
        value: if operator.takes_value() {
            value.cloned()
        } else {
            None
        },
        severity: severity?,
        regex,
        json_path,
    })
}

/// Looks a required string up in a name table, reporting the accepted spellings on failure.
fn parse_name<T: Copy>(
    value: Option<&Value>,
    path: &str,
    table: &[(&'static str, T)],
    errors: &mut Vec<FieldError>,
) -> Option<T> {
    let names = || table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    match value {
        None | Some(Value::Null) => {
            errors.push(FieldError::new(path, "is required"));
            None
        }
        Some(Value::String(s)) => match table.iter().find(|(n, _)| n == s) {
            Some((_, t)) => Some(*t),
            None => {
                errors.push(FieldError::new(
                    path,
                    format!("unknown value \"{s}\"; expected one of {}", names()),
                ));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(
                path,
                format!("must be a string, one of {}", names()),
            ));
            None
        }
    }
}

type ParsedProperty = (Option<String>, Option<serde_json_path::JsonPath>);

/// Validates `property` for the target: a header name, a JSON path, or nothing.
fn parse_property(
    target: Target,
    value: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<ParsedProperty> {
    let needs = matches!(target, Target::Header | Target::JsonPath);
    match (needs, value) {
        (false, None | Some(Value::Null)) => Some((None, None)),
        (false, Some(_)) => {
            errors.push(FieldError::new(
                path,
                format!("not allowed for target \"{}\"", target.as_str()),
            ));
            None
        }
        (true, None | Some(Value::Null)) => {
            let what = if target == Target::Header {
                "a header name"
            } else {
                "a JSON path"
            };
            errors.push(FieldError::new(
                path,
                format!("is required for target \"{}\" ({what})", target.as_str()),
            ));
            None
        }
        (true, Some(Value::String(s))) if target == Target::Header => {
            if http::HeaderName::from_bytes(s.as_bytes()).is_ok() {
                Some((Some(s.clone()), None))
            } else {
                errors.push(FieldError::new(path, "not a valid HTTP header name"));
                None
            }
        }
        (true, Some(Value::String(s))) => match serde_json_path::JsonPath::parse(s) {
            Ok(p) => Some((Some(s.clone()), Some(p))),
            Err(e) => {
                errors.push(FieldError::new(path, format!("invalid JSON path: {e}")));
                None
            }
        },
        (true, Some(_)) => {
            errors.push(FieldError::new(path, "must be a string"));
            None
        }
    }
}

/// Checks `value`'s type against what the target and operator need.
fn check_value(target: Target, operator: Operator, value: &Value) -> Result<(), String> {
    if operator.is_ordering() || (target.is_numeric() && operator != Operator::Matches) {
        return match as_number(value) {
            Some(_) => Ok(()),
            None => Err("must be a number".into()),
        };
    }
    match operator {
        Operator::Matches => match value {
            Value::String(_) => Ok(()),
            _ => Err("must be a string holding a regular expression".into()),
        },
        Operator::Eq | Operator::Neq if target == Target::DnsRecords => match value {
            Value::String(_) => Ok(()),
            Value::Array(a) if a.iter().all(Value::is_string) => Ok(()),
            _ => {
                Err("must be a string (one record) or an array of strings (the record set)".into())
            }
        },
        Operator::Contains | Operator::NotContains if target == Target::DnsRecords => match value {
            Value::String(_) => Ok(()),
            _ => Err("must be a string (a record)".into()),
        },
        // JSON nodes can equal anything JSON, including null, arrays and objects.
        Operator::Eq | Operator::Neq if target == Target::JsonPath => Ok(()),
        _ => match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(()),
            _ => Err("must be a string, number or boolean".into()),
        },
    }
}

fn compile_regex(value: &Value) -> Result<regex::Regex, String> {
    let pattern = value.as_str().unwrap_or_default();
    if pattern.len() > MAX_REGEX_LEN {
        return Err(format!(
            "regular expression longer than {MAX_REGEX_LEN} bytes"
        ));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("invalid regular expression: {e}"))
}

/// A JSON number, or a string holding a finite number.
fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_number(s),
        _ => None,
    }
}

fn parse_number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// What a target yielded for one assertion.
enum Actual<'a> {
    Num(f64),
    Text(String),
    Json(Value),
    Records(&'a [String]),
    /// Nothing there (missing header, no match...); the string says what is missing.
    Absent(String),
    /// The value could not be computed (body is not JSON); every operator fails.
    Unavailable(String),
}

impl Actual<'_> {
    /// The `actual` string reported in results.
    fn display(&self) -> Option<String> {
        let text = match self {
            Actual::Num(n) => fmt_num(*n),
            Actual::Text(s) => s.clone(),
            Actual::Json(v) => json_text(v),
            Actual::Records(r) => r.join(", "),
            Actual::Absent(_) | Actual::Unavailable(_) => return None,
        };
        Some(truncate(&text, MAX_ACTUAL_CHARS))
    }
}

/// Evaluates every assertion against what was observed: one result per assertion, in order,
/// and the verdict they imply (see the module docs).
pub fn evaluate(
    assertions: &[Assertion],
    obs: &Observation<'_>,
) -> (Vec<AssertionResult>, Verdict) {
    // Parse the body once, and only if some assertion needs it.
    let json: Option<Result<Value, String>> = assertions
        .iter()
        .any(|a| a.target == Target::JsonPath)
        .then(|| match obs.body {
            None => Err("no body observed".to_string()),
            Some(body) => {
                serde_json::from_str(body).map_err(|e| format!("body is not valid JSON: {e}"))
            }
        });

    let mut verdict = Verdict::Up;
    let results = assertions
        .iter()
        .enumerate()
        .map(|(index, a)| {
            let actual = observe(a, obs, json.as_ref());
            let outcome = apply(a, &actual);
            let desc = describe(a);
            let message = match &outcome {
                Ok(()) => format!("{desc}: passed"),
                Err(reason) => format!("{desc}: failed, {reason}"),
            };
            let passed = outcome.is_ok();
            if !passed {
                verdict = match (a.severity, verdict) {
                    (Severity::Fail, _) => Verdict::Down,
                    (Severity::Warn, Verdict::Up) => Verdict::Degraded,
                    (Severity::Warn, v) => v,
                };
            }
            AssertionResult {
                index,
                passed,
                actual: actual.display(),
                message,
                severity: a.severity,
            }
        })
        .collect();
    (results, verdict)
}

/// Extracts what the assertion's target looks at.
fn observe<'a>(
    a: &Assertion,
    obs: &Observation<'a>,
    json: Option<&Result<Value, String>>,
) -> Actual<'a> {
    match a.target {
        Target::StatusCode => match obs.status_code {
            Some(c) => Actual::Num(f64::from(c)),
            None => Actual::Absent("no status code observed".into()),
        },
        Target::Latency => Actual::Num(obs.latency_ms),
        Target::CertificateDaysLeft => match obs.cert_days_left {
            // Day counts are far below 2^53, so the conversion is exact.
            Some(d) => Actual::Num(d as f64),
            None => Actual::Absent("no TLS certificate observed".into()),
        },
        Target::Header => {
            let name = a.property.as_deref().unwrap_or_default();
            let values = obs.headers.and_then(|h| {
                h.iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            });
            match values {
                Some(v) => Actual::Text(v.join(", ")),
                None => Actual::Absent(format!("header \"{name}\" not present")),
            }
        }
        Target::Body => match obs.body {
            Some(b) => Actual::Text(b.to_string()),
            None => Actual::Absent("no body observed".into()),
        },
        Target::Reply => match obs.reply {
            Some(r) => Actual::Text(r.to_string()),
            None => Actual::Absent("no reply observed".into()),
        },
        Target::ResolvedIp => match obs.resolved_ip {
            Some(ip) => Actual::Text(ip.to_string()),
            None => Actual::Absent("no resolved IP observed".into()),
        },
        Target::DnsRecords => match obs.dns_records {
            Some(r) => Actual::Records(r),
            None => Actual::Absent("no DNS records observed".into()),
        },
        Target::JsonPath => match (json, a.json_path.as_ref()) {
            (Some(Ok(doc)), Some(path)) => {
                let nodes = path.query(doc).all();
                match nodes.len() {
                    0 => Actual::Absent(format!(
                        "JSON path {} matched nothing",
                        a.property.as_deref().unwrap_or_default()
                    )),
                    1 => Actual::Json(nodes[0].clone()),
                    _ => Actual::Json(Value::Array(nodes.into_iter().cloned().collect())),
                }
            }
            (Some(Err(e)), _) => Actual::Unavailable(e.clone()),
            // Only reachable for a hand-built assertion without a compiled path.
            (_, None) | (None, _) => Actual::Unavailable("JSON path not compiled".into()),
        },
    }
}

/// Applies the operator; `Err` holds the human reason for a failure.
fn apply(a: &Assertion, actual: &Actual<'_>) -> Result<(), String> {
    let got = || match actual.display() {
        Some(s) => format!("got {}", quote_if_text(actual, &s)),
        None => "got nothing".to_string(),
    };
    match actual {
        Actual::Unavailable(why) => return Err(why.clone()),
        Actual::Absent(why) => {
            return match a.operator {
                Operator::Neq | Operator::NotContains | Operator::Empty => Ok(()),
                _ => Err(why.clone()),
            }
        }
        _ => {}
    }
    let value = a.value.as_ref().unwrap_or(&Value::Null);
    let pass = match a.operator {
        Operator::Exists => true,
        Operator::Empty => is_empty(actual),
        Operator::NotEmpty => !is_empty(actual),
        Operator::Eq => equals(a.target, actual, value),
        Operator::Neq => !equals(a.target, actual, value),
        Operator::Contains => contains(actual, value),
        Operator::NotContains => !contains(actual, value),
        Operator::Matches => {
            let Some(re) = a.regex.as_ref() else {
                return Err("regular expression not compiled".into());
            };
            match actual {
                Actual::Records(r) => r.iter().any(|rec| re.is_match(rec)),
                other => other.display_full().is_some_and(|s| re.is_match(&s)),
            }
        }
        Operator::Lt | Operator::Lte | Operator::Gt | Operator::Gte => {
            let Some(expected) = as_number(value) else {
                return Err("expected value is not a number".into());
            };
            let Some(n) = actual_number(actual) else {
                return Err(format!("{}, which is not a number", got()));
            };
            match a.operator {
                Operator::Lt => n < expected,
                Operator::Lte => n <= expected,
                Operator::Gt => n > expected,
                _ => n >= expected,
            }
        }
    };
    if pass {
        Ok(())
    } else {
        Err(got())
    }
}

impl Actual<'_> {
    /// Like [`Actual::display`] but untruncated, for regex matching.
    fn display_full(&self) -> Option<String> {
        match self {
            Actual::Num(n) => Some(fmt_num(*n)),
            Actual::Text(s) => Some(s.clone()),
            Actual::Json(v) => Some(json_text(v)),
            Actual::Records(r) => Some(r.join(", ")),
            Actual::Absent(_) | Actual::Unavailable(_) => None,
        }
    }
}

fn actual_number(actual: &Actual<'_>) -> Option<f64> {
    match actual {
        Actual::Num(n) => Some(*n),
        Actual::Text(s) => parse_number(s),
        Actual::Json(v) => as_number(v),
        _ => None,
    }
}

fn is_empty(actual: &Actual<'_>) -> bool {
    match actual {
        Actual::Text(s) => s.is_empty(),
        Actual::Json(v) => match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        },
        Actual::Records(r) => r.is_empty(),
        Actual::Num(_) => false,
        Actual::Absent(_) | Actual::Unavailable(_) => true,
    }
}

fn equals(target: Target, actual: &Actual<'_>, value: &Value) -> bool {
    match actual {
        Actual::Num(n) => as_number(value) == Some(*n),
        Actual::Text(s) => {
            if target == Target::ResolvedIp {
                if let (Ok(a), Some(Ok(b))) = (
                    s.parse::<IpAddr>(),
                    value.as_str().map(str::parse::<IpAddr>),
                ) {
                    return a == b;
                }
            }
            match value {
                Value::Number(n) => match (parse_number(s), n.as_f64()) {
                    (Some(a), Some(b)) => a == b,
                    _ => *s == n.to_string(),
                },
                other => *s == scalar_text(other),
            }
        }
        Actual::Json(v) => json_equal(v, value),
        Actual::Records(records) => {
            let mut got: Vec<String> = records.iter().map(|r| r.to_ascii_lowercase()).collect();
            let mut want: Vec<String> = match value {
                Value::Array(a) => a
                    .iter()
                    .map(|v| scalar_text(v).to_ascii_lowercase())
                    .collect(),
                other => vec![scalar_text(other).to_ascii_lowercase()],
            };
            got.sort();
            got.dedup();
            want.sort();
            want.dedup();
            got == want
        }
        Actual::Absent(_) | Actual::Unavailable(_) => false,
    }
}

fn contains(actual: &Actual<'_>, value: &Value) -> bool {
    let needle = scalar_text(value);
    match actual {
        Actual::Text(s) => s.contains(&needle),
        Actual::Json(Value::String(s)) => s.contains(&needle),
        Actual::Json(Value::Array(items)) => items.iter().any(|i| json_equal(i, value)),
        Actual::Json(Value::Object(o)) => o.contains_key(&needle),
        Actual::Json(other) => other.to_string().contains(&needle),
        Actual::Records(r) => r.iter().any(|rec| rec.eq_ignore_ascii_case(&needle)),
        Actual::Num(n) => fmt_num(*n).contains(&needle),
        Actual::Absent(_) | Actual::Unavailable(_) => false,
    }
}

/// JSON equality, lenient about number representation and string-vs-scalar.
fn json_equal(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(s), other @ (Value::Number(_) | Value::Bool(_)))
        | (other @ (Value::Number(_) | Value::Bool(_)), Value::String(s)) => {
            let text = other.to_string();
            *s == text
        }
        _ => false,
    }
}

/// A scalar's text: strings unquoted, everything else as JSON.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A JSON node's text: strings unquoted, everything else serialized.
fn json_text(v: &Value) -> String {
    scalar_text(v)
}

/// Numbers without a useless fraction (`200`, not `200.0`), else at most 3 decimals.
fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{n:.0}")
    } else {
        let s = format!("{n:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

fn quote_if_text(actual: &Actual<'_>, shown: &str) -> String {
    match actual {
        Actual::Text(_) | Actual::Json(Value::String(_)) => format!("{shown:?}"),
        _ => shown.to_string(),
    }
}

/// `header "content-type" contains "json"`, `statusCode eq 200`, `body not_empty`.
fn describe(a: &Assertion) -> String {
    let mut s = a.target.as_str().to_string();
    if let Some(p) = &a.property {
        match a.target {
            Target::Header => s.push_str(&format!(" \"{p}\"")),
            _ => s.push_str(&format!(" {p}")),
        }
    }
    s.push(' ');
    s.push_str(a.operator.as_str());
    if let Some(v) = &a.value {
        s.push(' ');
        s.push_str(&truncate(&v.to_string(), MAX_ACTUAL_CHARS));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value) -> Assertion {
        parse_assertions(Some(&json!([v])), "config.assertions")
            .unwrap()
            .remove(0)
    }

    fn errs(v: Value) -> Vec<(String, String)> {
        parse_assertions(Some(&v), "config.assertions")
            .unwrap_err()
            .into_iter()
            .map(|e| (e.path, e.message))
            .collect()
    }

    fn paths(v: Value) -> Vec<String> {
        errs(v).into_iter().map(|(p, _)| p).collect()
    }

    /// Evaluates a single assertion and returns (passed, actual).
    fn eval(v: Value, obs: &Observation<'_>) -> (bool, Option<String>) {
        let (r, _) = evaluate(&[one(v)], obs);
        (r[0].passed, r[0].actual.clone())
    }

    fn pass(v: Value, obs: &Observation<'_>) -> bool {
        eval(v, obs).0
    }

    fn headers() -> BTreeMap<String, Vec<String>> {
        let mut h = BTreeMap::new();
        h.insert(
            "content-type".into(),
            vec!["application/json; charset=utf-8".into()],
        );
        h.insert("x-empty".into(), vec![String::new()]);
        h.insert("content-length".into(), vec!["42".into()]);
        h.insert("set-cookie".into(), vec!["a=1".into(), "b=2".into()]);
        h
    }

    const BODY: &str = r#"{"status":"ok","count":5,"price":"12.5","tags":["a","b"],"obj":{"k":1},"none":null,"empty":""}"#;

    fn http_obs<'a>(h: &'a BTreeMap<String, Vec<String>>) -> Observation<'a> {
        Observation {
            status_code: Some(200),
            latency_ms: 120.5,
            headers: Some(h),
            body: Some(BODY),
            cert_days_left: Some(30),
            resolved_ip: Some("127.0.0.1".parse().unwrap()),
            ..Observation::default()
        }
    }

    #[test]
    fn absent_and_null_mean_no_assertions() {
        assert!(parse_assertions(None, "config.assertions")
            .unwrap()
            .is_empty());
        assert!(parse_assertions(Some(&Value::Null), "x")
            .unwrap()
            .is_empty());
        assert!(parse_assertions(Some(&json!([])), "x").unwrap().is_empty());
    }

    #[test]
    fn parses_full_form_and_defaults_severity() {
        let a = one(
            json!({"target":"header","property":"Content-Type","operator":"contains","value":"json"}),
        );
        assert_eq!(a.target, Target::Header);
        assert_eq!(a.property.as_deref(), Some("Content-Type"));
        assert_eq!(a.operator, Operator::Contains);
        assert_eq!(a.severity, Severity::Fail);
        let a = one(json!({"target":"statusCode","operator":"eq","value":200,"severity":"warn"}));
        assert_eq!(a.severity, Severity::Warn);
        let a = one(json!({"target":"jsonPath","property":"$.a","operator":"exists"}));
        assert!(a.json_path.is_some());
        let a = one(json!({"target":"body","operator":"matches","value":"^ok"}));
        assert!(a.regex.is_some());
    }

    #[test]
    fn parse_errors_have_exact_paths() {
        assert_eq!(
            errs(json!({})),
            vec![(
                "config.assertions".into(),
                "must be an array of assertions".into()
            )]
        );
        assert_eq!(paths(json!([1])), vec!["config.assertions.0"]);
        assert_eq!(
            paths(json!([{"target":"nope","operator":"eq","value":1}])),
            vec!["config.assertions.0.target"]
        );
        assert_eq!(
            paths(json!([{"operator":"eq","value":1}])),
            vec!["config.assertions.0.target"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"like","value":"x"}])),
            vec!["config.assertions.0.operator"]
        );
        assert_eq!(
            paths(json!([{"target":"body"}])),
            vec!["config.assertions.0.operator"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"exists","severity":"fatal"}])),
            vec!["config.assertions.0.severity"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"exists","colour":"red"}])),
            vec!["config.assertions.0.colour"]
        );
        // Regex that does not compile, at index 2.
        assert_eq!(
            paths(json!([
                {"target":"statusCode","operator":"eq","value":200},
                {"target":"body","operator":"contains","value":"ok"},
                {"target":"body","operator":"matches","value":"(unclosed"}
            ])),
            vec!["config.assertions.2.value"]
        );
        assert_eq!(
            paths(json!([{"target":"jsonPath","property":"$[","operator":"exists"}])),
            vec!["config.assertions.0.property"]
        );
        assert_eq!(
            paths(json!([{"target":"jsonPath","operator":"exists"}])),
            vec!["config.assertions.0.property"]
        );
        assert_eq!(
            paths(json!([{"target":"header","operator":"exists"}])),
            vec!["config.assertions.0.property"]
        );
        assert_eq!(
            paths(json!([{"target":"header","property":"bad name","operator":"exists"}])),
            vec!["config.assertions.0.property"]
        );
        assert_eq!(
            paths(json!([{"target":"body","property":"x","operator":"exists"}])),
            vec!["config.assertions.0.property"]
        );
        assert_eq!(
            paths(json!([{"target":"latency","operator":"lt","value":"fast"}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"gt","value":true}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"statusCode","operator":"eq"}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"statusCode","operator":"eq","value":"ok"}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"exists","value":"x"}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"body","operator":"contains","value":{"a":1}}])),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            paths(json!([{"target":"dnsRecords","operator":"eq","value":[1]}])),
            vec!["config.assertions.0.value"]
        );
        // Operators that mean nothing for the target.
        assert_eq!(
            paths(json!([{"target":"statusCode","operator":"contains","value":"2"}])),
            vec!["config.assertions.0.operator"]
        );
        assert_eq!(
            paths(json!([{"target":"dnsRecords","operator":"gt","value":1}])),
            vec!["config.assertions.0.operator"]
        );
        assert_eq!(
            paths(json!([{"target":"resolvedIp","operator":"lt","value":1}])),
            vec!["config.assertions.0.operator"]
        );
        // Several errors in one item and across items, in document order.
        assert_eq!(
            paths(json!([
                {"target":"bogus","operator":"bogus","severity":1},
                {"target":"body","operator":"matches","value":"["}
            ])),
            vec![
                "config.assertions.0.target",
                "config.assertions.0.operator",
                "config.assertions.0.severity",
                "config.assertions.1.value"
            ]
        );
    }

    #[test]
    fn at_most_50_assertions() {
        let item = json!({"target":"statusCode","operator":"eq","value":200});
        let ok = Value::Array(vec![item.clone(); 50]);
        assert_eq!(
            parse_assertions(Some(&ok), "config.assertions")
                .unwrap()
                .len(),
            50
        );
        let too_many = Value::Array(vec![item; 51]);
        assert_eq!(paths(too_many), vec!["config.assertions"]);
    }

    #[test]
    fn numeric_targets_all_comparisons() {
        let h = headers();
        let obs = http_obs(&h);
        for (target, actual) in [
            ("statusCode", 200.0),
            ("latency", 120.5),
            ("certificateDaysLeft", 30.0),
        ] {
            let t = |op: &str, v: f64| pass(json!({"target":target,"operator":op,"value":v}), &obs);
            assert!(t("eq", actual) && !t("eq", actual + 1.0), "{target} eq");
            assert!(t("neq", actual + 1.0) && !t("neq", actual), "{target} neq");
            assert!(t("lt", actual + 1.0) && !t("lt", actual), "{target} lt");
            assert!(t("lte", actual) && !t("lte", actual - 1.0), "{target} lte");
            assert!(t("gt", actual - 1.0) && !t("gt", actual), "{target} gt");
            assert!(t("gte", actual) && !t("gte", actual + 1.0), "{target} gte");
            assert!(pass(json!({"target":target,"operator":"exists"}), &obs));
        }
        // Numeric strings are accepted as values.
        assert!(pass(
            json!({"target":"statusCode","operator":"eq","value":"200"}),
            &obs
        ));
        assert!(pass(
            json!({"target":"statusCode","operator":"matches","value":"^2\\d\\d$"}),
            &obs
        ));
        assert!(!pass(
            json!({"target":"statusCode","operator":"matches","value":"^3"}),
            &obs
        ));
        assert_eq!(
            eval(
                json!({"target":"latency","operator":"lt","value":1000}),
                &obs
            )
            .1
            .as_deref(),
            Some("120.5")
        );
        assert_eq!(
            eval(
                json!({"target":"statusCode","operator":"eq","value":200}),
                &obs
            )
            .1
            .as_deref(),
            Some("200")
        );
    }

    #[test]
    fn missing_numeric_values_fail_except_negations() {
        let obs = Observation::default();
        assert!(!pass(
            json!({"target":"statusCode","operator":"eq","value":200}),
            &obs
        ));
        assert!(pass(
            json!({"target":"statusCode","operator":"neq","value":200}),
            &obs
        ));
        assert!(!pass(
            json!({"target":"certificateDaysLeft","operator":"exists"}),
            &obs
        ));
        assert!(!pass(
            json!({"target":"certificateDaysLeft","operator":"gt","value":1}),
            &obs
        ));
        let (r, _) = evaluate(
            &[one(
                json!({"target":"statusCode","operator":"eq","value":200}),
            )],
            &obs,
        );
        assert_eq!(r[0].actual, None);
        assert!(
            r[0].message.contains("no status code observed"),
            "{}",
            r[0].message
        );
    }

    #[test]
    fn header_target_all_operators() {
        let h = headers();
        let obs = http_obs(&h);
        let t = |op: &str, prop: &str, v: Option<Value>| {
            let mut a = json!({"target":"header","property":prop,"operator":op});
            if let Some(v) = v {
                a["value"] = v;
            }
            pass(a, &obs)
        };
        assert!(t(
            "eq",
            "Content-Type",
            Some(json!("application/json; charset=utf-8"))
        ));
        assert!(!t("eq", "content-type", Some(json!("application/json"))));
        assert!(t("neq", "content-type", Some(json!("text/html"))));
        assert!(t("neq", "x-missing", Some(json!("x"))));
        assert!(t("contains", "content-type", Some(json!("json"))));
        assert!(!t("contains", "content-type", Some(json!("html"))));
        assert!(!t("contains", "x-missing", Some(json!("html"))));
        assert!(t("not_contains", "content-type", Some(json!("html"))));
        assert!(!t("not_contains", "content-type", Some(json!("json"))));
        assert!(t("not_contains", "x-missing", Some(json!("json"))));
        assert!(t(
            "matches",
            "content-type",
            Some(json!("^application/\\w+"))
        ));
        assert!(!t("matches", "content-type", Some(json!("^text/"))));
        assert!(t("exists", "x-empty", None));
        assert!(!t("exists", "x-missing", None));
        assert!(t("empty", "x-empty", None));
        assert!(t("empty", "x-missing", None));
        assert!(!t("empty", "content-type", None));
        assert!(t("not_empty", "content-type", None));
        assert!(!t("not_empty", "x-empty", None));
        assert!(!t("not_empty", "x-missing", None));
        // Numeric comparisons parse the header text.
        assert!(t("lt", "content-length", Some(json!(100))));
        assert!(t("lte", "content-length", Some(json!(42))));
        assert!(t("gt", "content-length", Some(json!(41))));
        assert!(t("gte", "content-length", Some(json!("42"))));
        assert!(!t("gt", "content-type", Some(json!(1))));
        assert!(t("eq", "content-length", Some(json!(42.0))));
        // Multiple values are joined.
        assert!(t("eq", "set-cookie", Some(json!("a=1, b=2"))));
        let (_, actual) = eval(
            json!({"target":"header","property":"content-length","operator":"exists"}),
            &obs,
        );
        assert_eq!(actual.as_deref(), Some("42"));
    }

    #[test]
    fn body_and_reply_targets_all_operators() {
        for target in ["body", "reply"] {
            let obs = Observation {
                body: Some("hello world 17"),
                reply: Some("hello world 17"),
                ..Observation::default()
            };
            let empty = Observation {
                body: Some(""),
                reply: Some(""),
                ..Observation::default()
            };
            let none = Observation::default();
            let t = |op: &str, v: Option<Value>, o: &Observation<'_>| {
                let mut a = json!({"target":target,"operator":op});
                if let Some(v) = v {
                    a["value"] = v;
                }
                pass(a, o)
            };
            assert!(t("eq", Some(json!("hello world 17")), &obs), "{target}");
            assert!(!t("eq", Some(json!("hello")), &obs));
            assert!(t("neq", Some(json!("hello")), &obs));
            assert!(t("contains", Some(json!("world")), &obs));
            assert!(!t("contains", Some(json!("mars")), &obs));
            assert!(t("not_contains", Some(json!("mars")), &obs));
            assert!(t("matches", Some(json!("w.rld \\d+$")), &obs));
            assert!(!t("matches", Some(json!("^world")), &obs));
            assert!(t("exists", None, &obs));
            assert!(t("exists", None, &empty));
            assert!(!t("exists", None, &none));
            assert!(t("empty", None, &empty));
            assert!(!t("empty", None, &obs));
            assert!(t("not_empty", None, &obs));
            assert!(!t("not_empty", None, &empty));
            let num = Observation {
                body: Some(" 17 "),
                reply: Some(" 17 "),
                ..Observation::default()
            };
            assert!(t("lt", Some(json!(18)), &num));
            assert!(t("lte", Some(json!(17)), &num));
            assert!(t("gt", Some(json!(16.5)), &num));
            assert!(t("gte", Some(json!(17)), &num));
            assert!(!t("lt", Some(json!(18)), &obs), "text is not a number");
        }
    }

    #[test]
    fn long_actuals_are_truncated() {
        let body = "x".repeat(1000);
        let obs = Observation {
            body: Some(&body),
            ..Observation::default()
        };
        let (_, actual) = eval(
            json!({"target":"body","operator":"contains","value":"y"}),
            &obs,
        );
        assert_eq!(actual.unwrap().chars().count(), MAX_ACTUAL_CHARS + 1);
    }

    #[test]
    fn json_path_target_all_operators() {
        let h = headers();
        let obs = http_obs(&h);
        let t = |path: &str, op: &str, v: Option<Value>| {
            let mut a = json!({"target":"jsonPath","property":path,"operator":op});
            if let Some(v) = v {
                a["value"] = v;
            }
            pass(a, &obs)
        };
        assert!(t("$.status", "eq", Some(json!("ok"))));
        assert!(!t("$.status", "eq", Some(json!("down"))));
        assert!(t("$.count", "eq", Some(json!(5))));
        assert!(t("$.count", "eq", Some(json!(5.0))));
        assert!(t("$.count", "eq", Some(json!("5"))));
        assert!(t("$.tags", "eq", Some(json!(["a", "b"]))));
        assert!(t("$.none", "eq", Some(Value::Null)));
        assert!(t("$.status", "neq", Some(json!("down"))));
        assert!(t("$.missing", "neq", Some(json!("down"))));
        assert!(t("$.count", "lt", Some(json!(6))));
        assert!(t("$.count", "lte", Some(json!(5))));
        assert!(t("$.price", "gt", Some(json!(12))));
        assert!(t("$.price", "gte", Some(json!(12.5))));
        assert!(!t("$.status", "gt", Some(json!(1))));
        assert!(t("$.status", "contains", Some(json!("o"))));
        assert!(t("$.tags", "contains", Some(json!("b"))));
        assert!(!t("$.tags", "contains", Some(json!("c"))));
        assert!(t("$.obj", "contains", Some(json!("k"))));
        assert!(t("$.tags", "not_contains", Some(json!("c"))));
        assert!(t("$.status", "matches", Some(json!("^o.$"))));
        assert!(t("$.obj", "matches", Some(json!("\"k\":1"))));
        assert!(t("$.none", "exists", None));
        assert!(!t("$.missing", "exists", None));
        assert!(t("$.none", "empty", None));
        assert!(t("$.empty", "empty", None));
        assert!(t("$.missing", "empty", None));
        assert!(!t("$.tags", "empty", None));
        assert!(t("$.tags", "not_empty", None));
        assert!(!t("$.missing", "not_empty", None));
        // Several nodes form an array.
        assert!(t("$.tags[*]", "eq", Some(json!(["a", "b"]))));
        assert!(t("$..k", "eq", Some(json!(1))));
        let (_, actual) = eval(
            json!({"target":"jsonPath","property":"$.status","operator":"exists"}),
            &obs,
        );
        assert_eq!(actual.as_deref(), Some("ok"));
    }

    #[test]
    fn json_path_on_non_json_body_fails_every_operator() {
        let obs = Observation {
            body: Some("<html>"),
            ..Observation::default()
        };
        for op in ["neq", "not_contains", "empty", "exists"] {
            let mut a = json!({"target":"jsonPath","property":"$.a","operator":op});
            if op != "exists" && op != "empty" {
                a["value"] = json!("x");
            }
            let (r, v) = evaluate(&[one(a)], &obs);
            assert!(!r[0].passed, "{op}");
            assert_eq!(v, Verdict::Down);
            assert!(r[0].message.contains("not valid JSON"), "{}", r[0].message);
        }
    }

    #[test]
    fn dns_records_target_all_operators() {
        let records = vec!["93.184.216.34".to_string(), "93.184.216.35".to_string()];
        let obs = Observation {
            dns_records: Some(&records),
            ..Observation::default()
        };
        let no_records: Vec<String> = Vec::new();
        let empty = Observation {
            dns_records: Some(&no_records),
            ..Observation::default()
        };
        let t = |op: &str, v: Option<Value>, o: &Observation<'_>| {
            let mut a = json!({"target":"dnsRecords","operator":op});
            if let Some(v) = v {
                a["value"] = v;
            }
            pass(a, o)
        };
        assert!(t("contains", Some(json!("93.184.216.35")), &obs));
        assert!(
            !t("contains", Some(json!("93.184.216")), &obs),
            "membership, not substring"
        );
        assert!(t("not_contains", Some(json!("10.0.0.1")), &obs));
        assert!(t(
            "eq",
            Some(json!(["93.184.216.35", "93.184.216.34"])),
            &obs
        ));
        assert!(!t("eq", Some(json!(["93.184.216.34"])), &obs));
        assert!(!t("eq", Some(json!("93.184.216.34")), &obs));
        assert!(t("neq", Some(json!(["93.184.216.34"])), &obs));
        assert!(t("matches", Some(json!("\\.35$")), &obs));
        assert!(!t("matches", Some(json!("^10\\.")), &obs));
        assert!(t("exists", None, &obs));
        assert!(!t("exists", None, &Observation::default()));
        assert!(t("empty", None, &empty));
        assert!(!t("empty", None, &obs));
        assert!(t("not_empty", None, &obs));
        assert!(!t("not_empty", None, &empty));
        let mx = vec!["10 Mail.Example.com.".to_string()];
        let obs = Observation {
            dns_records: Some(&mx),
            ..Observation::default()
        };
        assert!(
            t("eq", Some(json!("10 mail.example.com.")), &obs),
            "case-insensitive"
        );
        let (_, actual) = eval(json!({"target":"dnsRecords","operator":"exists"}), &obs);
        assert_eq!(actual.as_deref(), Some("10 Mail.Example.com."));
    }

    #[test]
    fn resolved_ip_target() {
        let obs = Observation {
            resolved_ip: Some("::1".parse().unwrap()),
            ..Observation::default()
        };
        let t = |op: &str, v: Option<Value>| {
            let mut a = json!({"target":"resolvedIp","operator":op});
            if let Some(v) = v {
                a["value"] = v;
            }
            pass(a, &obs)
        };
        assert!(t("eq", Some(json!("0:0::1"))));
        assert!(t("neq", Some(json!("127.0.0.1"))));
        assert!(t("contains", Some(json!(":"))));
        assert!(t("not_contains", Some(json!("."))));
        assert!(t("matches", Some(json!("^::1$"))));
        assert!(t("exists", None));
        assert!(t("not_empty", None));
        assert!(!t("empty", None));
    }

    #[test]
    fn verdict_from_severities() {
        let obs = Observation {
            status_code: Some(500),
            latency_ms: 10.0,
            ..Observation::default()
        };
        let ok = json!({"target":"latency","operator":"lt","value":100});
        let warn = json!({"target":"latency","operator":"gt","value":100,"severity":"warn"});
        let fail = json!({"target":"statusCode","operator":"eq","value":200});
        let list = |v: Value| parse_assertions(Some(&v), "a").unwrap();
        assert_eq!(evaluate(&list(json!([ok.clone()])), &obs).1, Verdict::Up);
        assert_eq!(
            evaluate(&list(json!([ok.clone(), warn.clone()])), &obs).1,
            Verdict::Degraded
        );
        assert_eq!(
            evaluate(&list(json!([warn.clone(), fail.clone(), ok.clone()])), &obs).1,
            Verdict::Down
        );
        assert_eq!(evaluate(&[], &obs).1, Verdict::Up);
        let (results, _) = evaluate(&list(json!([ok, warn, fail])), &obs);
        assert_eq!(results.len(), 3);
        assert_eq!(
            results.iter().map(|r| r.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(
            results.iter().map(|r| r.passed).collect::<Vec<_>>(),
            vec![true, false, false]
        );
        assert_eq!(results[1].severity, Severity::Warn);
        assert_eq!(results[2].message, "statusCode eq 200: failed, got 500");
        assert_eq!(results[0].message, "latency lt 100: passed");
    }
}
