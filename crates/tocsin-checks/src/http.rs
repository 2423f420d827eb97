//! The HTTP(S) check: config validation ([`HttpSpec::parse`]) and one measured request
//! ([`check`]), following redirects by hand so every hop's DNS, TCP, TLS, first-byte and
//! transfer phases are timed on the real sockets rather than guessed from a black-box client.
//!
//! Config (the monitor's `config` object; every key optional except the monitor's `url`):
//!
//! ```json
//! {
//!   "method": "GET",                      // GET HEAD POST PUT PATCH DELETE OPTIONS
//!   "headers": {"X-Name": "value"},       // User-Agent defaults to Tocsin/<version>
//!   "body": "…",                          // at most 64 KiB
//!   "auth": {"type": "basic", "username": "u", "password": "p"}
//!         | {"type": "bearer", "token": "t"},
//!   "followRedirects": true,
//!   "maxRedirects": 5,                    // 0..=20
//!   "expect": {"statusCodes": [200, "200-299", "3xx"]},  // default: 2xx and 3xx
//!   "ipFamily": "any",                    // any | ipv4 | ipv6
//!   "tls": {"verify": true, "certExpiryWarnDays": 14, "certExpiryFailDays": 0},
//!   "assertions": [ … ],                  // see crate::assertions
//!   "storeResponseBody": false            // keep the body in the outcome
//! }
//! ```
//!
//! Semantics worth knowing:
//! * Redirects: only 301, 302, 303, 307 and 308 with a `Location` are followed; other 3xx
//!   responses are final. 301/302 turn a POST into a GET and 303 turns anything but HEAD into
//!   a GET (the body and its content type are dropped); 307/308 keep method and body.
//!   Credentials (`auth`, an `Authorization` header) and a configured `Host` are not sent to
//!   another origin. Revisiting a URL is a loop and fails at once; needing more than
//!   `maxRedirects` hops fails too. Phase timings are summed over hops, so they add up to
//!   roughly the total latency.
//! * Certificates: the leaf's days left (rounded down; negative once expired) is reported, as
//!   the minimum over all TLS hops. Fewer than `certExpiryWarnDays` days ⇒ DEGRADED, fewer than
//!   `certExpiryFailDays` ⇒ DOWN; an expired certificate is always DOWN. These thresholds apply
//!   even with `verify: false`, which only stops chain and name validation.
//! * Limits: response heads above 64 KiB and bodies above 8 MiB fail the check. The body is
//!   kept in the outcome (its first 64 KiB) only with `storeResponseBody: true`; assertions see
//!   everything read either way.
//! * Addresses: every hop's resolved addresses pass the run's
//!   [`AddressPolicy`](crate::AddressPolicy) before connecting, and the connection goes to an
//!   address that passed, so neither a redirect nor a name re-resolving elsewhere reaches a
//!   refused address.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::CertificateError;
use rustls_pki_types::ServerName;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use url::{Host, Position, Url};

use crate::assertions::{self, Assertion, Observation, Severity};
use crate::config::{
    field_names, BasicAuthConfig, BearerAuthConfig, HttpConfig, HttpExpectConfig, HttpTlsConfig,
};
use crate::spec::{FieldError, RunOptions, SpecInput};
use crate::{tls, AddressPolicy, Outcome, Timings, Verdict};

/// Largest request body a monitor may send.
pub const MAX_REQUEST_BODY: usize = 64 * 1024;
/// Largest response body read; beyond this the check fails rather than buffer without bound.
pub const MAX_RESPONSE_BODY: usize = 8 * 1024 * 1024;
/// How much of the response body is kept in the outcome.
pub const KEPT_RESPONSE_BODY: usize = 64 * 1024;
/// Largest response head (status line plus headers) accepted.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Most response headers accepted.
const MAX_RESPONSE_HEADERS: usize = 256;
/// Most request headers a monitor may configure.
const MAX_REQUEST_HEADERS: usize = 100;
/// Longest accepted URL.
const MAX_URL_LEN: usize = 4096;
/// Upper bound of `maxRedirects`.
pub const MAX_REDIRECTS_LIMIT: u8 = 20;
/// Most entries in `expect.statusCodes`.
const MAX_STATUS_ENTRIES: usize = 50;
/// Upper bound of the certificate thresholds, in days (ten years).
const MAX_CERT_DAYS: u32 = 3650;

const USER_AGENT: &str = concat!("Tocsin/", env!("CARGO_PKG_VERSION"));

// ---------------------------------------------------------------------------------------------
// Specification
// ---------------------------------------------------------------------------------------------

/// A validated HTTP(S) check.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSpec {
    pub url: Url,
    pub method: Method,
    /// Configured request headers, in document order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Option<String>,
    pub auth: Option<Auth>,
    pub follow_redirects: bool,
    pub max_redirects: u8,
    /// Accepted status codes; `None` means the default, 2xx and 3xx.
    pub expect_status: Option<Vec<StatusRange>>,
    pub ip_family: IpFamily,
    pub tls: TlsOptions,
    pub assertions: Vec<Assertion>,
    /// Keep the response body in the outcome (`storeResponseBody`).
    pub store_response_body: bool,
}

/// Credentials sent in the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    Basic { username: String, password: String },
    Bearer { token: String },
}

// Hand-written so secrets never reach logs through `{:?}`.
impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .finish_non_exhaustive(),
            Auth::Bearer { .. } => f.debug_struct("Bearer").finish_non_exhaustive(),
        }
    }
}

impl Auth {
    fn header_value(&self) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
        use base64::Engine as _;
        let text = match self {
            Auth::Basic { username, password } => format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            ),
            Auth::Bearer { token } => format!("Bearer {token}"),
        };
        let mut value = HeaderValue::from_str(&text)?;
        value.set_sensitive(true);
        Ok(value)
    }
}

/// An inclusive range of accepted status codes (a single code is a one-code range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRange {
    pub low: u16,
    pub high: u16,
}

impl StatusRange {
    pub fn contains(self, code: u16) -> bool {
        (self.low..=self.high).contains(&code)
    }
}

impl fmt::Display for StatusRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}", self.low)
        } else if (self.low / 100) * 100 == self.low && self.high == self.low + 99 {
            write!(f, "{}xx", self.low / 100)
        } else {
            write!(f, "{}-{}", self.low, self.high)
        }
    }
}

const DEFAULT_STATUS: [StatusRange; 2] = [
    StatusRange {
        low: 200,
        high: 299,
    },
    StatusRange {
        low: 300,
        high: 399,
    },
];

/// Which address family to connect over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpFamily {
    #[default]
    Any,
    Ipv4,
    Ipv6,
}

impl IpFamily {
    fn allows(self, ip: IpAddr) -> bool {
        match self {
            IpFamily::Any => true,
            IpFamily::Ipv4 => ip.is_ipv4(),
            IpFamily::Ipv6 => ip.is_ipv6(),
        }
    }
}

/// `config.tls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsOptions {
    pub verify: bool,
    pub cert_expiry_warn_days: u32,
    pub cert_expiry_fail_days: u32,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            verify: true,
            cert_expiry_warn_days: 14,
            cert_expiry_fail_days: 0,
        }
    }
}

/// The request methods a check may use, as the API spells them (matched case-insensitively).
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

impl HttpSpec {
    /// Validates the monitor's `url` and `config`, reporting every problem with its path.
    pub fn parse(input: &SpecInput<'_>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let config = input.config;
        let known = field_names::<HttpConfig>();
        for key in config.keys() {
            if !known.contains(&key.as_str()) {
                errors.push(FieldError::new(format!("config.{key}"), "unknown key"));
            }
        }
        let url = match input.url {
            Some(u) => parse_url(u, "url", &mut errors),
            None => {
                errors.push(FieldError::new("url", "is required"));
                None
            }
        };

        let method = match get(config, "method") {
            None => Some(Method::GET),
            Some(Value::String(m)) => match METHODS.iter().find(|x| x.eq_ignore_ascii_case(m)) {
                Some(m) => Method::from_bytes(m.as_bytes()).ok(),
                None => {
                    errors.push(FieldError::new(
                        "config.method",
                        "must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
                    ));
                    None
                }
            },
            Some(_) => {
                errors.push(FieldError::new("config.method", "must be a string"));
                None
            }
        };

        let headers = parse_headers(get(config, "headers"), &mut errors);
        let body = match get(config, "body") {
            None => None,
            Some(Value::String(b)) if b.len() <= MAX_REQUEST_BODY => Some(b.clone()),
            Some(Value::String(_)) => {
                errors.push(FieldError::new(
                    "config.body",
                    format!("must be at most {} KiB", MAX_REQUEST_BODY / 1024),
                ));
                None
            }
            Some(_) => {
                errors.push(FieldError::new("config.body", "must be a string"));
                None
            }
        };
        let auth = parse_auth(get(config, "auth"), &mut errors);
        if auth.is_some()
            && headers
                .iter()
                .any(|(name, _)| *name == header::AUTHORIZATION)
        {
            errors.push(FieldError::new(
                "config.auth",
                "conflicts with the Authorization header",
            ));
        }
        let follow_redirects = parse_bool(config, "followRedirects", true, &mut errors);
        let store_response_body = parse_bool(config, "storeResponseBody", false, &mut errors);
        let max_redirects = parse_uint(
            get(config, "maxRedirects"),
            "config.maxRedirects",
            5,
            u32::from(MAX_REDIRECTS_LIMIT),
            &mut errors,
        )
        .and_then(|n| u8::try_from(n).ok());
        let expect_status = parse_expect(get(config, "expect"), &mut errors);
        let ip_family = match get(config, "ipFamily") {
            None => IpFamily::Any,
            Some(Value::String(s)) if s == "any" => IpFamily::Any,
            Some(Value::String(s)) if s == "ipv4" => IpFamily::Ipv4,
            Some(Value::String(s)) if s == "ipv6" => IpFamily::Ipv6,
            Some(_) => {
                errors.push(FieldError::new(
                    "config.ipFamily",
                    "must be one of any, ipv4, ipv6",
                ));
                IpFamily::Any
            }
        };
        if let Some(u) = &url {
            let literal = match u.host() {
                Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
                Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
                _ => None,
            };
            if let Some(ip) = literal.filter(|ip| !ip_family.allows(*ip)) {
                errors.push(FieldError::new(
                    "config.ipFamily",
                    format!("conflicts with the URL's address {ip}"),
                ));
            }
        }
        let tls = parse_tls(get(config, "tls"), &mut errors);
        let assertions =
            match assertions::parse_assertions(get(config, "assertions"), "config.assertions") {
                Ok(a) => a,
                Err(e) => {
                    errors.extend(e);
                    Vec::new()
                }
            };

        match (
            url,
            method,
            follow_redirects,
            max_redirects,
            expect_status,
            store_response_body,
        ) {
            (
                Some(url),
                Some(method),
                Some(follow_redirects),
                Some(max_redirects),
                Some(expect),
                Some(store_response_body),
            ) if errors.is_empty() => Ok(HttpSpec {
                url,
                method,
                headers,
                body,
                auth,
                follow_redirects,
                max_redirects,
                expect_status: expect,
                ip_family,
                tls,
                assertions,
                store_response_body,
            }),
            _ => Err(errors),
        }
    }

    /// The accepted status ranges (the default when none are configured).
    pub fn accepted_status(&self) -> &[StatusRange] {
        self.expect_status.as_deref().unwrap_or(&DEFAULT_STATUS)
    }
}

/// A config value, treating JSON `null` as absent.
fn get<'a>(config: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    config.get(key).filter(|v| !v.is_null())
}

fn parse_url(text: &str, path: &str, errors: &mut Vec<FieldError>) -> Option<Url> {
    if text.len() > MAX_URL_LEN {
        errors.push(FieldError::new(
            path,
            format!("must be at most {MAX_URL_LEN} characters"),
        ));
        return None;
    }
    let mut url = match Url::parse(text) {
        Ok(u) => u,
        Err(e) => {
            errors.push(FieldError::new(path, format!("not a valid URL: {e}")));
            return None;
        }
    };
    if !matches!(url.scheme(), "http" | "https") {
        errors.push(FieldError::new(path, "scheme must be http or https"));
        return None;
    }
    if url.host_str().is_none_or(str::is_empty) {
        errors.push(FieldError::new(path, "must have a host"));
        return None;
    }
    if !url.username().is_empty() || url.password().is_some() {
        errors.push(FieldError::new(
            path,
            "must not embed credentials; use config.auth",
        ));
        return None;
    }
    // Fragments are never sent to the server.
    url.set_fragment(None);
    Some(url)
}

fn parse_headers(
    value: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> Vec<(HeaderName, HeaderValue)> {
    let Some(value) = value else {
        return Vec::new();
    };
    let Some(obj) = value.as_object() else {
        errors.push(FieldError::new(
            "config.headers",
            "must be an object of name → string",
        ));
        return Vec::new();
    };
    if obj.len() > MAX_REQUEST_HEADERS {
        errors.push(FieldError::new(
            "config.headers",
            format!("at most {MAX_REQUEST_HEADERS} headers are allowed"),
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, v) in obj {
        let path = format!("config.headers.{name}");
        let Ok(header_name) = HeaderName::from_bytes(name.as_bytes()) else {
            errors.push(FieldError::new(path, "not a valid HTTP header name"));
            continue;
        };
        // Framing headers are computed from the body; a user value would corrupt the request.
        if header_name == header::CONTENT_LENGTH || header_name == header::TRANSFER_ENCODING {
            errors.push(FieldError::new(
                path,
                "is set automatically and cannot be configured",
            ));
            continue;
        }
        let Some(text) = v.as_str() else {
            errors.push(FieldError::new(path, "must be a string"));
            continue;
        };
        match HeaderValue::from_str(text) {
            Ok(hv) => out.push((header_name, hv)),
            Err(_) => errors.push(FieldError::new(path, "not a valid HTTP header value")),
        }
    }
    out
}

fn parse_auth(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<Auth> {
    let value = value?;
    let Some(obj) = value.as_object() else {
        errors.push(FieldError::new("config.auth", "must be an object"));
        return None;
    };
    let kind = obj.get("type").and_then(Value::as_str);
    // `type` selects the variant; the variant's own keys come from its input type.
    let allowed: &[&str] = match kind {
        Some("basic") => field_names::<BasicAuthConfig>(),
        Some("bearer") => field_names::<BearerAuthConfig>(),
        _ => {
            errors.push(FieldError::new(
                "config.auth.type",
                "must be \"basic\" or \"bearer\"",
            ));
            return None;
        }
    };
    let before = errors.len();
    for key in obj.keys() {
        if key != "type" && !allowed.contains(&key.as_str()) {
            errors.push(FieldError::new(format!("config.auth.{key}"), "unknown key"));
        }
    }
    let mut string = |key: &str| -> Option<String> {
        match obj.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                errors.push(FieldError::new(
                    format!("config.auth.{key}"),
                    "must be a string",
                ));
                None
            }
            None => {
                errors.push(FieldError::new(format!("config.auth.{key}"), "is required"));
                None
            }
        }
    };
    let auth = if kind == Some("basic") {
        let username = string("username");
        let password = string("password");
        if username.as_deref().is_some_and(|u| u.contains(':')) {
            errors.push(FieldError::new(
                "config.auth.username",
                "must not contain ':'",
            ));
        }
        Auth::Basic {
            username: username?,
            password: password?,
        }
    } else {
        let token = string("token")?;
        if token.is_empty() {
            errors.push(FieldError::new("config.auth.token", "must not be empty"));
        }
        Auth::Bearer { token }
    };
    if auth.header_value().is_err() {
        let path = match auth {
            Auth::Basic { .. } => "config.auth",
            Auth::Bearer { .. } => "config.auth.token",
        };
        errors.push(FieldError::new(
            path,
            "contains characters not allowed in an HTTP header",
        ));
    }
    (errors.len() == before).then_some(auth)
}

fn parse_bool(
    config: &Map<String, Value>,
    key: &str,
    default: bool,
    errors: &mut Vec<FieldError>,
) -> Option<bool> {
    match get(config, key) {
        None => Some(default),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            errors.push(FieldError::new(
                format!("config.{key}"),
                "must be a boolean",
            ));
            None
        }
    }
}

fn parse_uint(
    value: Option<&Value>,
    path: &str,
    default: u32,
    max: u32,
    errors: &mut Vec<FieldError>,
) -> Option<u32> {
    match value {
        None => Some(default),
        Some(v) => match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= max)
        {
            Some(n) => Some(n),
            None => {
                errors.push(FieldError::new(
                    path,
                    format!("must be an integer from 0 to {max}"),
                ));
                None
            }
        },
    }
}

/// `Some(None)` = default status set; `None` = invalid.
fn parse_expect(
    value: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> Option<Option<Vec<StatusRange>>> {
    let Some(value) = value else {
        return Some(None);
    };
    let Some(obj) = value.as_object() else {
        errors.push(FieldError::new("config.expect", "must be an object"));
        return None;
    };
    let before = errors.len();
    let known = field_names::<HttpExpectConfig>();
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            errors.push(FieldError::new(
                format!("config.expect.{key}"),
                "unknown key",
            ));
        }
    }
    let codes = match obj.get("statusCodes").filter(|v| !v.is_null()) {
        None => None,
        Some(Value::Array(items)) if items.is_empty() || items.len() > MAX_STATUS_ENTRIES => {
            errors.push(FieldError::new(
                "config.expect.statusCodes",
                format!("must hold 1 to {MAX_STATUS_ENTRIES} entries"),
            ));
            None
        }
        Some(Value::Array(items)) => {
            let mut ranges = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match parse_status_entry(item) {
                    Ok(r) => ranges.push(r),
                    Err(m) => {
                        errors.push(FieldError::new(format!("config.expect.statusCodes.{i}"), m))
                    }
                }
            }
            Some(ranges)
        }
        Some(_) => {
            errors.push(FieldError::new(
                "config.expect.statusCodes",
                "must be an array",
            ));
            None
        }
    };
    (errors.len() == before).then_some(codes)
}

/// `200`, `"200"`, `"200-299"` or `"2xx"`.
fn parse_status_entry(item: &Value) -> Result<StatusRange, String> {
    const BAD: &str = "must be a status code (100-599), a range like \"200-299\", or \"2xx\"";
    let code = |n: u64| u16::try_from(n).ok().filter(|c| (100..=599).contains(c));
    let (low, high) = match item {
        Value::Number(n) => {
            let c = n.as_u64().and_then(code).ok_or(BAD)?;
            (c, c)
        }
        Value::String(s) => {
            let s = s.trim();
            let num = |t: &str| t.trim().parse::<u64>().ok().and_then(code).ok_or(BAD);
            if let Some((a, b)) = s.split_once('-') {
                (num(a)?, num(b)?)
            } else if let Some(d) = s.strip_suffix("xx").or_else(|| s.strip_suffix("XX")) {
                match d.parse::<u16>() {
                    Ok(d @ 1..=5) => (d * 100, d * 100 + 99),
                    _ => return Err(BAD.into()),
                }
            } else {
                let c = num(s)?;
                (c, c)
            }
        }
        _ => return Err(BAD.into()),
    };
    if low > high {
        return Err(format!("range start {low} is above its end {high}"));
    }
    Ok(StatusRange { low, high })
}

fn parse_tls(value: Option<&Value>, errors: &mut Vec<FieldError>) -> TlsOptions {
    let mut tls = TlsOptions::default();
    let Some(value) = value else {
        return tls;
    };
    let Some(obj) = value.as_object() else {
        errors.push(FieldError::new("config.tls", "must be an object"));
        return tls;
    };
    let known = field_names::<HttpTlsConfig>();
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            errors.push(FieldError::new(format!("config.tls.{key}"), "unknown key"));
        }
    }
    match get(obj, "verify") {
        None => {}
        Some(Value::Bool(b)) => tls.verify = *b,
        Some(_) => errors.push(FieldError::new("config.tls.verify", "must be a boolean")),
    }
    let warn = get(obj, "certExpiryWarnDays");
    if let Some(n) = parse_uint(
        warn,
        "config.tls.certExpiryWarnDays",
        14,
        MAX_CERT_DAYS,
        errors,
    ) {
        tls.cert_expiry_warn_days = n;
    }
    let fail = get(obj, "certExpiryFailDays");
    if let Some(n) = parse_uint(
        fail,
        "config.tls.certExpiryFailDays",
        0,
        MAX_CERT_DAYS,
        errors,
    ) {
        tls.cert_expiry_fail_days = n;
    }
    tls
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// Why a request could not produce a response. Each variant's text is the outcome message.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("DNS resolution failed for {host}: {reason}")]
    Dns { host: String, reason: String },
    #[error("no {family} address found for {host}")]
    NoAddress { host: String, family: &'static str },
    #[error("{0}")]
    Connect(String),
    #[error("{0}")]
    Tls(String),
    #[error("{0}")]
    Protocol(String),
    #[error("response body larger than {} MiB", MAX_RESPONSE_BODY / (1024 * 1024))]
    BodyTooLarge,
    #[error("{0}")]
    Redirect(String),
    /// The run's address policy refuses every address of the hop.
    #[error("{0}")]
    Refused(String),
    #[error("could not build the request: {0}")]
    Request(String),
    #[error("timed out after {0} ms")]
    Timeout(u128),
    /// The probe ran out of a resource of its own (see [`crate::fault`]).
    #[error("{}", crate::fault::fault_message(.0))]
    ProbeFault(&'static str),
}

/// What the attempt gathered so far; survives failures so a DOWN still shows what was seen.
struct Gathered {
    timings: Timings,
    measured: bool,
    resolved_ip: Option<IpAddr>,
    cert_days_left: Option<i64>,
    status_code: Option<u16>,
    headers: Option<BTreeMap<String, Vec<String>>>,
    /// Everything read of the last response body (at most [`MAX_RESPONSE_BODY`]).
    body: Vec<u8>,
    /// The run's time ([`RunOptions::now`]), for certificate days left.
    now: chrono::DateTime<chrono::Utc>,
}

impl Gathered {
    fn new(now: chrono::DateTime<chrono::Utc>) -> Self {
        Gathered {
            timings: Timings::default(),
            measured: false,
            resolved_ip: None,
            cert_days_left: None,
            status_code: None,
            headers: None,
            body: Vec::new(),
            now,
        }
    }

    fn note_cert(&mut self, days: i64) {
        self.cert_days_left = Some(self.cert_days_left.map_or(days, |d| d.min(days)));
    }
}

/// Runs one HTTP(S) check attempt. Never panics on target behaviour; every failure becomes a
/// DOWN outcome with a message. Bounded by `opts.timeout` even when called outside
/// [`crate::run`].
pub async fn check(spec: &HttpSpec, opts: &RunOptions) -> Outcome {
    let started = Instant::now();
    let mut gathered = Gathered::new(opts.now);
    let result = match tokio::time::timeout(
        opts.timeout,
        fetch_following(spec, &opts.address_policy, &mut gathered),
    )
    .await
    {
        Ok(r) => r,
        Err(_) => Err(HttpError::Timeout(opts.timeout.as_millis())),
    };
    let latency = started.elapsed();
    if let Err(HttpError::ProbeFault(resource)) = &result {
        return Outcome::probe_fault(latency, resource);
    }
    finish(spec, gathered, result, latency)
}

/// Turns what was gathered into the outcome: status expectation, certificate thresholds and
/// assertions all apply once a response arrived.
fn finish(
    spec: &HttpSpec,
    gathered: Gathered,
    result: Result<(), HttpError>,
    latency: Duration,
) -> Outcome {
    let body_text = String::from_utf8_lossy(&gathered.body);
    let kept = truncate_utf8(&body_text, KEPT_RESPONSE_BODY).to_string();
    let mut outcome = Outcome {
        verdict: Verdict::Up,
        latency,
        status_code: gathered.status_code,
        timings: gathered.measured.then_some(gathered.timings),
        response_headers: gathered.headers.clone(),
        response_body: gathered
            .headers
            .as_ref()
            .filter(|_| spec.store_response_body)
            .map(|_| kept),
        resolved_ip: gathered.resolved_ip,
        cert_days_left: gathered.cert_days_left,
        ..Outcome::default()
    };
    let mut down: Vec<String> = Vec::new();
    let mut degraded: Vec<String> = Vec::new();

    if let Err(e) = &result {
        down.push(e.to_string());
    }
    // A handshake that failed on an expired certificate already said so.
    if let (Ok(()), Some(days)) = (&result, gathered.cert_days_left) {
        let tls = spec.tls;
        if days < 0 {
            down.push(expired_message(days));
        } else if days < i64::from(tls.cert_expiry_fail_days) {
            down.push(format!(
                "certificate expires in {days} days (fail threshold {} days)",
                tls.cert_expiry_fail_days
            ));
        } else if days < i64::from(tls.cert_expiry_warn_days) {
            degraded.push(format!(
                "certificate expires in {days} days (warning threshold {} days)",
                tls.cert_expiry_warn_days
            ));
        }
    }
    if let (Ok(()), Some(code)) = (&result, gathered.status_code) {
        let accepted = spec.accepted_status();
        if !accepted.iter().any(|r| r.contains(code)) {
            let list = accepted
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("/");
            down.push(format!("expected status {list}, got {code}"));
        }
    }
    // Assertions need a response; without one the failure message says everything.
    if result.is_ok() && gathered.status_code.is_some() {
        let obs = Observation {
            status_code: gathered.status_code,
            latency_ms: latency.as_secs_f64() * 1000.0,
            headers: gathered.headers.as_ref(),
            body: Some(&body_text),
            cert_days_left: gathered.cert_days_left,
            resolved_ip: gathered.resolved_ip,
            ..Observation::default()
        };
        let (results, _) = assertions::evaluate(&spec.assertions, &obs);
        for r in results.iter().filter(|r| !r.passed) {
            match r.severity {
                Severity::Fail => down.push(r.message.clone()),
                Severity::Warn => degraded.push(r.message.clone()),
            }
        }
        outcome.assertion_results = results;
    }

    outcome.verdict = if !down.is_empty() {
        Verdict::Down
    } else if !degraded.is_empty() {
        Verdict::Degraded
    } else {
        Verdict::Up
    };
    if outcome.verdict != Verdict::Up {
        down.extend(degraded);
        outcome.message = Some(down.join("; "));
    }
    outcome
}

fn expired_message(days_left: i64) -> String {
    // days_left is rounded down, so -1 means "expired less than a day ago".
    match -days_left - 1 {
        0 => "certificate expired less than a day ago".to_string(),
        1 => "certificate expired 1 day ago".to_string(),
        n => format!("certificate expired {n} days ago"),
    }
}

/// One request of a redirect chain: what to send, and what earlier hops changed.
struct Hop {
    url: Url,
    method: Method,
    body: Option<String>,
    /// False once the chain left the configured origin: credentials and a configured `Host`
    /// are not sent elsewhere.
    same_origin: bool,
    /// A 301/302/303 turned the request into a GET: the configured content type goes too.
    body_dropped: bool,
}

/// Requests the URL, following redirects as configured; the last response lands in `g`.
async fn fetch_following(
    spec: &HttpSpec,
    policy: &AddressPolicy,
    g: &mut Gathered,
) -> Result<(), HttpError> {
    let mut hop = Hop {
        url: spec.url.clone(),
        method: spec.method.clone(),
        body: spec.body.clone(),
        same_origin: true,
        body_dropped: false,
    };
    let mut visited: Vec<String> = vec![hop.url.to_string()];
    let mut seen: HashSet<(String, Method)> = HashSet::new();
    seen.insert((hop.url.to_string(), hop.method.clone()));
    let mut redirects: u8 = 0;
    loop {
        let location = fetch_once(spec, policy, &hop, g).await?;
        let Some(location) = location.filter(|_| spec.follow_redirects) else {
            return Ok(());
        };
        let mut next = hop.url.join(&location).map_err(|e| {
            HttpError::Redirect(format!("invalid redirect location {location:?}: {e}"))
        })?;
        next.set_fragment(None);
        if !matches!(next.scheme(), "http" | "https") || next.host_str().is_none() {
            return Err(HttpError::Redirect(format!(
                "redirect to unsupported location {location:?}"
            )));
        }
        // 301/302 historically turn POST into GET; 303 means "GET the result".
        let to_get = match g.status_code {
            Some(301 | 302) => hop.method == Method::POST,
            Some(303) => hop.method != Method::HEAD,
            _ => false,
        };
        if to_get {
            hop.method = Method::GET;
            hop.body = None;
            hop.body_dropped = true;
        }
        visited.push(next.to_string());
        if !seen.insert((next.to_string(), hop.method.clone())) {
            return Err(HttpError::Redirect(format!(
                "redirect loop: {}",
                visited.join(" → ")
            )));
        }
        if redirects >= spec.max_redirects {
            return Err(HttpError::Redirect(format!(
                "too many redirects (more than {})",
                spec.max_redirects
            )));
        }
        redirects += 1;
        if next.origin() != hop.url.origin() {
            hop.same_origin = false;
        }
        hop.url = next;
    }
}

/// One request on a fresh connection. Returns the `Location` of a redirect, if any.
async fn fetch_once(
    spec: &HttpSpec,
    policy: &AddressPolicy,
    hop: &Hop,
    g: &mut Gathered,
) -> Result<Option<String>, HttpError> {
    let url = &hop.url;
    // A redirect's response replaces the previous one.
    g.status_code = None;
    g.headers = None;
    g.body.clear();
    g.measured = true;

    let port = url.port_or_known_default().unwrap_or(80);
    let (addrs, lookup_time) = resolve(url, spec.ip_family).await?;
    g.timings.dns += ms(lookup_time);
    // Judged here, on this hop's own resolution, and only these addresses are connected to.
    let addrs = policy
        .keep_allowed(addrs, |ip| *ip)
        .map_err(HttpError::Refused)?;

    let t = Instant::now();
    let (tcp, addr) = connect(&addrs, port).await?;
    g.timings.tcp += ms(t.elapsed());
    g.resolved_ip = Some(addr.ip());

    let request = build_request(spec, hop)?;
    if url.scheme() == "https" {
        let t = Instant::now();
        let tls = tls_handshake(tcp, url, spec.tls.verify, g).await;
        g.timings.tls = Some(g.timings.tls.unwrap_or(0.0) + ms(t.elapsed()));
        exchange(tls?, request, g).await
    } else {
        exchange(tcp, request, g).await
    }
    .map(|()| {
        // 300, 304 and 305 are not redirects to follow, even with a Location.
        let redirect = g
            .status_code
            .is_some_and(|c| matches!(c, 301 | 302 | 303 | 307 | 308));
        let location = g
            .headers
            .as_ref()
            .and_then(|h| h.get("location"))
            .and_then(|v| v.first());
        location.filter(|_| redirect).cloned()
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Addresses to try, in order, and the time the lookup took. IP literals and `localhost`
/// need no lookup, so their DNS phase is exactly zero.
async fn resolve(url: &Url, family: IpFamily) -> Result<(Vec<IpAddr>, Duration), HttpError> {
    let domain = match url.host() {
        Some(Host::Ipv4(ip)) => return Ok((vec![IpAddr::V4(ip)], Duration::ZERO)),
        Some(Host::Ipv6(ip)) => return Ok((vec![IpAddr::V6(ip)], Duration::ZERO)),
        Some(Host::Domain(d)) => d.trim_end_matches('.').to_ascii_lowercase(),
        None => return Err(HttpError::Request("URL has no host".into())),
    };
    let family_name = match family {
        IpFamily::Any => "IP",
        IpFamily::Ipv4 => "IPv4",
        IpFamily::Ipv6 => "IPv6",
    };
    let no_address = || HttpError::NoAddress {
        host: domain.clone(),
        family: family_name,
    };
    // RFC 6761: localhost names always mean loopback, whatever DNS says.
    if domain == "localhost" || domain.ends_with(".localhost") {
        let loopback = [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ];
        let ips: Vec<IpAddr> = loopback
            .into_iter()
            .filter(|ip| family.allows(*ip))
            .collect();
        return Ok((ips, Duration::ZERO));
    }
    let started = Instant::now();
    use hickory_resolver::config::LookupIpStrategy;
    let dns_error = |e: &dyn fmt::Display| HttpError::Dns {
        host: domain.clone(),
        reason: e.to_string(),
    };
    let mut builder =
        hickory_resolver::TokioResolver::builder_tokio().map_err(|e| dns_error(&e))?;
    builder.options_mut().ip_strategy = match family {
        IpFamily::Any => LookupIpStrategy::Ipv4thenIpv6,
        IpFamily::Ipv4 => LookupIpStrategy::Ipv4Only,
        IpFamily::Ipv6 => LookupIpStrategy::Ipv6Only,
    };
    let resolver = builder.build();
    let lookup = match resolver.lookup_ip(format!("{domain}.")).await {
        Ok(l) => l,
        Err(e) if e.is_no_records_found() || e.is_nx_domain() => return Err(no_address()),
        Err(e) => return Err(dns_error(&e)),
    };
    let ips: Vec<IpAddr> = lookup.iter().filter(|ip| family.allows(*ip)).collect();
    if ips.is_empty() {
        return Err(no_address());
    }
    Ok((ips, started.elapsed()))
}

/// Connects to the first address that accepts; the error describes the last failure.
async fn connect(addrs: &[IpAddr], port: u16) -> Result<(TcpStream, SocketAddr), HttpError> {
    let mut last = None;
    for ip in addrs {
        let addr = SocketAddr::new(*ip, port);
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                // Requests are written in one go; Nagle would only delay them.
                let _ = stream.set_nodelay(true);
                return Ok((stream, addr));
            }
            Err(e) => last = Some((addr, e)),
        }
    }
    Err(match last {
        None => HttpError::Connect("no address to connect to".into()),
        Some((addr, e)) => match crate::fault::local_io_fault(&e) {
            Some(resource) => HttpError::ProbeFault(resource),
            None => HttpError::Connect(match e.kind() {
                io::ErrorKind::ConnectionRefused => format!("connection refused by {addr}"),
                io::ErrorKind::TimedOut => format!("connection to {addr} timed out"),
                io::ErrorKind::HostUnreachable => format!("host unreachable: {addr}"),
                io::ErrorKind::NetworkUnreachable => format!("network unreachable: {addr}"),
                _ => format!("connection to {addr} failed: {e}"),
            }),
        },
    })
}

fn build_request(spec: &HttpSpec, hop: &Hop) -> Result<http::Request<Full<Bytes>>, HttpError> {
    let url = &hop.url;
    let target = &url[Position::BeforePath..Position::AfterQuery];
    let mut builder = http::Request::builder()
        .method(hop.method.clone())
        .uri(target);
    let configured = |name: &HeaderName| spec.headers.iter().any(|(n, _)| n == name);
    if !configured(&header::HOST) || !hop.same_origin {
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        builder = builder.header(header::HOST, host);
    }
    if !configured(&header::USER_AGENT) {
        builder = builder.header(header::USER_AGENT, USER_AGENT);
    }
    if !configured(&header::ACCEPT) {
        builder = builder.header(header::ACCEPT, "*/*");
    }
    for (name, value) in &spec.headers {
        let skip = match *name {
            header::AUTHORIZATION | header::HOST => !hop.same_origin,
            header::CONTENT_TYPE => hop.body_dropped,
            _ => false,
        };
        if !skip {
            builder = builder.header(name, value);
        }
    }
    if let (Some(auth), true) = (&spec.auth, hop.same_origin) {
        let value = auth
            .header_value()
            .map_err(|e| HttpError::Request(e.to_string()))?;
        builder = builder.header(header::AUTHORIZATION, value);
    }
    let payload = hop
        .body
        .as_deref()
        .map(|b| Bytes::copy_from_slice(b.as_bytes()))
        .unwrap_or_default();
    builder
        .body(Full::new(payload))
        .map_err(|e| HttpError::Request(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

async fn tls_handshake(
    tcp: TcpStream,
    url: &Url,
    verify: bool,
    g: &mut Gathered,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, HttpError> {
    let (mut config, capture) =
        tls::client_config(verify).map_err(|e| HttpError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];

    let server_name = match url.host() {
        Some(Host::Ipv4(ip)) => ServerName::IpAddress(IpAddr::V4(ip).into()),
        Some(Host::Ipv6(ip)) => ServerName::IpAddress(IpAddr::V6(ip).into()),
        Some(Host::Domain(d)) => ServerName::try_from(d.trim_end_matches('.').to_string())
            .map_err(|e| HttpError::Tls(format!("invalid TLS server name {d:?}: {e}")))?,
        None => return Err(HttpError::Request("URL has no host".into())),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let result = connector.connect(server_name, tcp).await;

    // The leaf is known even when verification rejected it, so an expired certificate says so.
    let days = capture
        .leaf()
        .and_then(|der| tls::cert_days_left(&der, g.now));
    if let Some(d) = days {
        g.note_cert(d);
    }
    result.map_err(|e| HttpError::Tls(tls_error_message(&e, url, days)))
}

fn tls_error_message(e: &io::Error, url: &Url, days: Option<i64>) -> String {
    let Some(rustls_error) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                "TLS handshake failed: connection closed by server".into()
            }
            io::ErrorKind::ConnectionReset => {
                "TLS handshake failed: connection reset by peer".into()
            }
            _ => format!("TLS handshake failed: {e}"),
        };
    };
    let host = url.host_str().unwrap_or_default();
    match rustls_error {
        rustls::Error::InvalidCertificate(cert_error) => match cert_error {
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => match days {
                Some(d) if d < 0 => expired_message(d),
                _ => "certificate expired".into(),
            },
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "certificate is not valid yet".into()
            }
            CertificateError::UnknownIssuer => {
                "certificate not trusted: unknown issuer (self-signed or incomplete chain)".into()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("certificate is not valid for {host}")
            }
            CertificateError::Revoked => "certificate has been revoked".into(),
            other => format!("invalid certificate: {other:?}"),
        },
        rustls::Error::InvalidMessage(_) => {
            format!("TLS handshake failed: the server did not answer with TLS ({rustls_error})")
        }
        other => format!("TLS handshake failed: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 exchange
// ---------------------------------------------------------------------------------------------

/// A stream that remembers when the last write finished, so time to first byte is measured
/// from the moment the request actually left, not from when hyper was handed it.
struct TimedIo<S> {
    inner: S,
    last_write: Arc<Mutex<Option<Instant>>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(1..)) = r {
            self.stamp();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(1..)) = r {
            self.stamp();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    // Flushes are not stamped: hyper flushes on every poll, including after the response
    // arrived, which would make the first byte look instantaneous.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S> TimedIo<S> {
    fn stamp(&self) {
        if let Ok(mut t) = self.last_write.lock() {
            *t = Some(Instant::now());
        }
    }
}

/// Sends the request over `stream` and reads the response into `g`, timing first byte and
/// transfer. The connection is driven in this task (not spawned) so that dropping the check,
/// e.g. on timeout, closes the socket at once.
async fn exchange<S>(
    stream: S,
    request: http::Request<Full<Bytes>>,
    g: &mut Gathered,
) -> Result<(), HttpError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let last_write = Arc::new(Mutex::new(None));
    let io = TokioIo::new(TimedIo {
        inner: stream,
        last_write: last_write.clone(),
    });
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_header_size(MAX_RESPONSE_HEAD)
        .max_headers(MAX_RESPONSE_HEADERS)
        .handshake::<_, Full<Bytes>>(io)
        .await
        .map_err(|e| HttpError::Protocol(describe_hyper_error(&e, "sending the request")))?;

    let sent_at = Instant::now();
    let work = async {
        let response = sender.send_request(request).await.map_err(|e| {
            HttpError::Protocol(describe_hyper_error(&e, "waiting for the response"))
        })?;
        let head_at = Instant::now();
        let written = last_write.lock().ok().and_then(|t| *t).unwrap_or(sent_at);
        g.timings.first_byte += ms(head_at.saturating_duration_since(written));
        let (parts, mut body) = response.into_parts();
        g.status_code = Some(parts.status.as_u16());
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in &parts.headers {
            headers
                .entry(name.as_str().to_string())
                .or_default()
                .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
        g.headers = Some(headers);

        let read = async {
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| {
                    HttpError::Protocol(describe_hyper_error(&e, "reading the body"))
                })?;
                if let Ok(data) = frame.into_data() {
                    if g.body.len() + data.len() > MAX_RESPONSE_BODY {
                        return Err(HttpError::BodyTooLarge);
                    }
                    g.body.extend_from_slice(&data);
                }
            }
            Ok(())
        };
        let r = read.await;
        g.timings.transfer += ms(head_at.elapsed());
        r
    };

    tokio::pin!(conn);
    tokio::pin!(work);
    let mut conn_done = false;
    loop {
        tokio::select! {
            r = &mut work => return r,
            // When the connection ends or fails, the request future learns it too and
            // resolves with the error; keep polling it for that.
            _ = &mut conn, if !conn_done => conn_done = true,
        }
    }
}

/// A human description of a hyper error, naming the phase it happened in.
fn describe_hyper_error(e: &hyper::Error, phase: &str) -> String {
    // `is_parse_too_large` only exists with hyper's server feature; the client sees the same
    // error kind, identifiable by its text ("message head is too large", or too many headers).
    if e.is_parse() && e.to_string().contains("too large") {
        return format!(
            "response headers too large (over {} KiB or more than {MAX_RESPONSE_HEADERS} headers)",
            MAX_RESPONSE_HEAD / 1024
        );
    }
    if e.is_parse() || e.is_parse_status() {
        return format!("invalid HTTP response: {e}");
    }
    // Walk the source chain for an I/O error: resets are the common case worth naming.
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io_error) = s.downcast_ref::<io::Error>() {
            return match io_error.kind() {
                io::ErrorKind::ConnectionReset => format!("connection reset by peer while {phase}"),
                io::ErrorKind::BrokenPipe => format!("connection closed by peer while {phase}"),
                io::ErrorKind::UnexpectedEof => format!("connection closed by peer while {phase}"),
                _ => format!("I/O error while {phase}: {io_error}"),
            };
        }
        source = s.source();
    }
    if e.is_incomplete_message() {
        return format!("connection closed before the response was complete (while {phase})");
    }
    if e.is_canceled() || e.is_closed() {
        return format!("connection closed while {phase}");
    }
    format!("HTTP error while {phase}: {e}")
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(url: Option<&str>, config: Value) -> Result<HttpSpec, Vec<String>> {
        let config = config.as_object().cloned().unwrap();
        let input = SpecInput {
            url,
            host: None,
            port: None,
            config: &config,
        };
        HttpSpec::parse(&input).map_err(|e| e.into_iter().map(|e| e.path).collect())
    }

    #[test]
    fn defaults() {
        let s = parse(Some("https://example.com/health?x=1#frag"), json!({})).unwrap();
        assert_eq!(s.method, Method::GET);
        assert!(s.follow_redirects);
        assert_eq!(s.max_redirects, 5);
        assert_eq!(s.accepted_status(), &DEFAULT_STATUS);
        assert_eq!(s.ip_family, IpFamily::Any);
        assert_eq!(s.tls, TlsOptions::default());
        assert_eq!(s.url.as_str(), "https://example.com/health?x=1");
        assert!(s.assertions.is_empty());
    }

    #[test]
    fn full_config() {
        let s = parse(
            Some("http://127.0.0.1:8080/"),
            json!({
                "method": "post",
                "headers": {"X-Test": "1", "Content-Type": "application/json"},
                "body": "{}",
                "auth": {"type": "basic", "username": "u", "password": "p"},
                "followRedirects": false,
                "maxRedirects": 20,
                "expect": {"statusCodes": [200, "201", "300-302", "4xx"]},
                "ipFamily": "ipv4",
                "tls": {"verify": false, "certExpiryWarnDays": 30, "certExpiryFailDays": 7},
                "assertions": [{"target": "statusCode", "operator": "eq", "value": 200}]
            }),
        )
        .unwrap();
        assert_eq!(s.method, Method::POST);
        assert_eq!(s.headers.len(), 2);
        assert_eq!(s.body.as_deref(), Some("{}"));
        assert_eq!(
            s.auth,
            Some(Auth::Basic {
                username: "u".into(),
                password: "p".into()
            })
        );
        assert!(!s.follow_redirects);
        assert_eq!(s.max_redirects, 20);
        let list: Vec<String> = s
            .accepted_status()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(list, vec!["200", "201", "300-302", "4xx"]);
        assert_eq!(s.ip_family, IpFamily::Ipv4);
        assert_eq!(
            s.tls,
            TlsOptions {
                verify: false,
                cert_expiry_warn_days: 30,
                cert_expiry_fail_days: 7
            }
        );
        assert_eq!(s.assertions.len(), 1);
    }

    #[test]
    fn error_paths() {
        assert_eq!(parse(None, json!({})).unwrap_err(), vec!["url"]);
        assert_eq!(parse(Some("ftp://x"), json!({})).unwrap_err(), vec!["url"]);
        assert_eq!(
            parse(Some("not a url"), json!({})).unwrap_err(),
            vec!["url"]
        );
        assert_eq!(
            parse(Some("http://u:p@x.com"), json!({})).unwrap_err(),
            vec!["url"]
        );
        let p = |config: Value| parse(Some("http://example.com"), config).unwrap_err();
        assert_eq!(p(json!({"bogus": 1})), vec!["config.bogus"]);
        assert_eq!(p(json!({"url": "http://x"})), vec!["config.url"]);
        assert_eq!(p(json!({"method": "TRACE"})), vec!["config.method"]);
        assert_eq!(
            p(json!({"headers": {"bad name": "x"}})),
            vec!["config.headers.bad name"]
        );
        assert_eq!(
            p(json!({"headers": {"x-a": "line\nbreak"}})),
            vec!["config.headers.x-a"]
        );
        assert_eq!(
            p(json!({"headers": {"x-a": 1}})),
            vec!["config.headers.x-a"]
        );
        assert_eq!(
            p(json!({"headers": {"Content-Length": "1"}})),
            vec!["config.headers.Content-Length"]
        );
        assert_eq!(p(json!({"headers": []})), vec!["config.headers"]);
        assert_eq!(
            p(json!({"body": "x".repeat(MAX_REQUEST_BODY + 1)})),
            vec!["config.body"]
        );
        assert_eq!(p(json!({"body": 5})), vec!["config.body"]);
        assert_eq!(
            p(json!({"auth": {"type": "digest"}})),
            vec!["config.auth.type"]
        );
        assert_eq!(
            p(json!({"auth": {"type": "basic", "username": "u"}})),
            vec!["config.auth.password"]
        );
        assert_eq!(
            p(json!({"auth": {"type": "basic", "username": "u", "password": "p", "token": "t"}})),
            vec!["config.auth.token"]
        );
        assert_eq!(
            p(json!({"auth": {"type": "bearer"}})),
            vec!["config.auth.token"]
        );
        assert_eq!(
            p(json!({"auth": {"type": "bearer", "token": "a\nb"}})),
            vec!["config.auth.token"]
        );
        assert_eq!(
            p(json!({"auth": {"type": "bearer", "token": "t"}, "headers": {"authorization": "x"}})),
            vec!["config.auth"]
        );
        assert_eq!(
            p(json!({"followRedirects": "yes"})),
            vec!["config.followRedirects"]
        );
        assert_eq!(p(json!({"maxRedirects": 21})), vec!["config.maxRedirects"]);
        assert_eq!(p(json!({"maxRedirects": -1})), vec!["config.maxRedirects"]);
        assert_eq!(
            p(json!({"expect": {"statusCodes": []}})),
            vec!["config.expect.statusCodes"]
        );
        assert_eq!(
            p(json!({"expect": {"statusCodes": [200, "abc", 99, "300-200", "6xx"]}})),
            vec![
                "config.expect.statusCodes.1",
                "config.expect.statusCodes.2",
                "config.expect.statusCodes.3",
                "config.expect.statusCodes.4"
            ]
        );
        assert_eq!(
            p(json!({"expect": {"codes": [200]}})),
            vec!["config.expect.codes"]
        );
        assert_eq!(p(json!({"ipFamily": "ipv5"})), vec!["config.ipFamily"]);
        assert_eq!(p(json!({"tls": {"verify": 1}})), vec!["config.tls.verify"]);
        assert_eq!(
            p(json!({"tls": {"certExpiryWarnDays": -3}})),
            vec!["config.tls.certExpiryWarnDays"]
        );
        assert_eq!(
            p(json!({"tls": {"certExpiryFailDays": "x"}})),
            vec!["config.tls.certExpiryFailDays"]
        );
        assert_eq!(p(json!({"tls": {"pin": "x"}})), vec!["config.tls.pin"]);
        assert_eq!(
            p(json!({"assertions": [{"target": "body", "operator": "matches", "value": "("}]})),
            vec!["config.assertions.0.value"]
        );
        assert_eq!(
            parse(Some("http://[::1]/"), json!({"ipFamily": "ipv4"})).unwrap_err(),
            vec!["config.ipFamily"]
        );
        // Every error is reported, not just the first.
        assert_eq!(
            p(json!({"method": 1, "maxRedirects": "x", "ipFamily": 4})),
            vec!["config.method", "config.maxRedirects", "config.ipFamily"]
        );
    }

    #[test]
    fn status_range_display() {
        assert_eq!(
            StatusRange {
                low: 200,
                high: 299
            }
            .to_string(),
            "2xx"
        );
        assert_eq!(
            StatusRange {
                low: 200,
                high: 204
            }
            .to_string(),
            "200-204"
        );
        assert_eq!(
            StatusRange {
                low: 404,
                high: 404
            }
            .to_string(),
            "404"
        );
    }

    #[test]
    fn expiry_messages() {
        assert_eq!(
            expired_message(-1),
            "certificate expired less than a day ago"
        );
        assert_eq!(expired_message(-2), "certificate expired 1 day ago");
        assert_eq!(expired_message(-4), "certificate expired 3 days ago");
    }

    #[test]
    fn auth_debug_hides_secrets() {
        let a = Auth::Basic {
            username: "u".into(),
            password: "hunter2".into(),
        };
        assert!(!format!("{a:?}").contains("hunter2"));
        let b = Auth::Bearer {
            token: "tok".into(),
        };
        assert!(!format!("{b:?}").contains("tok"));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }
}
