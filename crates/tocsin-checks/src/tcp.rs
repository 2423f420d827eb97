//! TCP checks: connect to `host:port`, optionally wrap the connection in TLS, optionally send a
//! payload and look for an expected substring in the reply, then evaluate assertions.
//!
//! This module also owns the plumbing the other socket-level kinds share (config reading with
//! dotted error paths, host validation, connect with per-phase timings, the TLS client setup and
//! certificate expiry, assertion evaluation), so PING, DNS and WEBSOCKET behave the same way.
//!
//! Config shape (inside the monitor's `config`; `host` and `port` are monitor fields):
//! ```json
//! {
//!   "tls": {"enabled": true, "verify": true, "serverName": "example.com"},
//!   "send": "PING\r\n",
//!   "expect": "PONG",
//!   "assertions": [{"target": "latency", "operator": "lt", "value": 500}]
//! }
//! ```
//! `tls.enabled` defaults to `true` when the `tls` object is present, `tls.verify` to `true`,
//! `tls.serverName` to `host`. The reply is read only when `expect` is set or an assertion looks
//! at `reply`; it is capped at 64 KiB.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::assertions::{Assertion, Observation, Target};
use crate::config::{field_names, TcpConfig, TcpTlsConfig};
use crate::spec::{FieldError, RunOptions, SpecInput};
use crate::{AddressPolicy, Outcome, Timings, Verdict};

/// Replies (TCP) and stored bodies are capped at this size.
pub(crate) const REPLY_CAP: usize = 64 * 1024;

/// How long to keep reading after the last chunk when no `expect` says when the reply is done.
const IDLE_GAP: Duration = Duration::from_millis(150);

/// A validated TCP check.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSpec {
    pub host: String,
    pub port: u16,
    /// `None` for plain TCP.
    pub tls: Option<TlsOptions>,
    pub send: Option<String>,
    pub expect: Option<String>,
    pub assertions: Vec<Assertion>,
}

/// TLS settings of a TCP check.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsOptions {
    /// Verify the certificate chain and the name against the built-in web PKI roots.
    pub verify: bool,
    /// SNI and verification name; `None` uses the host.
    pub server_name: Option<String>,
}

const TCP_TARGETS: &[Target] = &[
    Target::Latency,
    Target::Reply,
    Target::CertificateDaysLeft,
    Target::ResolvedIp,
];

impl TcpSpec {
    pub fn parse(input: &SpecInput<'_>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let host = parse_host(input.host, "host", &mut errors);
        let port = match input.port {
            None => {
                errors.push(FieldError::new("port", "is required for TCP checks"));
                None
            }
            Some(0) => {
                errors.push(FieldError::new("port", "must be between 1 and 65535"));
                None
            }
            Some(p) => Some(p),
        };

        let mut cfg = ConfigReader::new(input.config, "config", field_names::<TcpConfig>());
        let tls = cfg.object("tls").and_then(|tls_map| {
            let mut tls = ConfigReader::new(tls_map, "config.tls", field_names::<TcpTlsConfig>());
            let enabled = tls.bool("enabled").unwrap_or(true);
            let verify = tls.bool("verify").unwrap_or(true);
            let server_name = tls.string("serverName").and_then(|name| {
                let mut name_errors = Vec::new();
                let parsed = parse_host(Some(name), "config.tls.serverName", &mut name_errors);
                tls.errors.extend(name_errors);
                parsed
            });
            cfg.errors.append(&mut tls.errors);
            enabled.then_some(TlsOptions {
                verify,
                server_name,
            })
        });
        let send = cfg.bounded_string("send", REPLY_CAP);
        let expect = cfg.bounded_string("expect", 4096);
        let assertions = cfg.assertions(TCP_TARGETS, "TCP");
        errors.append(&mut cfg.errors);

        match (host, port) {
            (Some(host), Some(port)) if errors.is_empty() => Ok(TcpSpec {
                host,
                port,
                tls,
                send,
                expect,
                assertions,
            }),
            _ => Err(errors),
        }
    }

    fn wants_reply(&self) -> bool {
        self.expect.is_some() || self.assertions.iter().any(|a| a.target == Target::Reply)
    }
}

pub async fn check(spec: &TcpSpec, opts: &RunOptions) -> Outcome {
    let started = Instant::now();
    let deadline = deadline_for(opts, started);
    let connected = match connect(&spec.host, spec.port, deadline, &opts.address_policy).await {
        Ok(c) => c,
        Err(fail) => return fail.into_outcome(started),
    };
    let mut timings = Timings {
        dns: connected.dns_ms,
        tcp: connected.tcp_ms,
        ..Timings::default()
    };
    let resolved_ip = Some(connected.ip);

    let (convo, cert_days_left) = match &spec.tls {
        None => {
            let mut stream = connected.stream;
            let convo = converse(&mut stream, spec, deadline).await;
            // A polite close; the verdict does not depend on it.
            let _ = tokio::time::timeout(Duration::from_millis(200), stream.shutdown()).await;
            (convo, None)
        }
        Some(tls) => {
            let name = tls.server_name.as_deref().unwrap_or(&spec.host);
            match tls_handshake(connected.stream, name, tls.verify, deadline, opts.now).await {
                Err(message) => {
                    let mut outcome = Outcome::down(started.elapsed(), message);
                    outcome.resolved_ip = resolved_ip;
                    outcome.timings = Some(timings);
                    return outcome;
                }
                Ok(session) => {
                    timings.tls = Some(session.tls_ms);
                    let mut stream = session.stream;
                    let convo = converse(&mut stream, spec, deadline).await;
                    let _ =
                        tokio::time::timeout(Duration::from_millis(200), stream.shutdown()).await;
                    (convo, session.cert_days_left)
                }
            }
        }
    };

    timings.first_byte = convo.first_byte_ms;
    timings.transfer = convo.transfer_ms;
    let latency = started.elapsed();
    let reply_text = convo
        .reply
        .as_deref()
        .map(|r| String::from_utf8_lossy(r).into_owned());
    let mut outcome = Outcome {
        verdict: if convo.failure.is_some() {
            Verdict::Down
        } else {
            Verdict::Up
        },
        latency,
        message: convo.failure,
        timings: Some(timings),
        resolved_ip,
        cert_days_left,
        response_body: reply_text.clone(),
        ..Outcome::default()
    };
    let obs = Observation {
        latency_ms: ms(latency),
        cert_days_left,
        resolved_ip,
        reply: reply_text.as_deref(),
        ..Observation::default()
    };
    apply_assertions(&mut outcome, &spec.assertions, &obs);
    outcome
}

/// What the send/expect exchange produced.
struct Conversation {
    reply: Option<Vec<u8>>,
    failure: Option<String>,
    first_byte_ms: f64,
    transfer_ms: f64,
}

async fn converse<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    spec: &TcpSpec,
    deadline: Instant,
) -> Conversation {
    let mut convo = Conversation {
        reply: None,
        failure: None,
        first_byte_ms: 0.0,
        transfer_ms: 0.0,
    };
    if let Some(payload) = &spec.send {
        let write = async {
            stream.write_all(payload.as_bytes()).await?;
            stream.flush().await
        };
        match tokio::time::timeout_at(deadline.into(), write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                convo.failure = Some(format!("sending failed: {}", io_message(&e)));
                return convo;
            }
            Err(_) => {
                convo.failure = Some("sending timed out".to_string());
                return convo;
            }
        }
    }
    if !spec.wants_reply() {
        return convo;
    }

    let asked = Instant::now();
    let read = read_reply(stream, spec.expect.as_deref().map(str::as_bytes), deadline).await;
    if let Some(first) = read.first_byte {
        convo.first_byte_ms = ms(first.duration_since(asked));
        convo.transfer_ms = ms(read.finished.duration_since(first));
    }
    if let Some(expect) = &spec.expect {
        if read.end != ReadEnd::Found {
            let waited = ms(read.finished.duration_since(asked)).round();
            convo.failure = Some(match (&read.end, read.data.is_empty()) {
                (ReadEnd::Timeout, true) => format!("no reply within {waited} ms"),
                (ReadEnd::Error(e), _) => format!("reading reply failed: {e}"),
                (ReadEnd::Eof, true) => "connection closed without a reply".to_string(),
                (ReadEnd::Cap, _) => {
                    format!("reply does not contain {expect:?} within the first 64 KiB")
                }
                _ => format!("reply does not contain {expect:?}"),
            });
        }
    } else if let ReadEnd::Error(e) = &read.end {
        if read.data.is_empty() {
            convo.failure = Some(format!("reading reply failed: {e}"));
        }
    }
    convo.reply = Some(read.data);
    convo
}

#[derive(Debug, PartialEq)]
enum ReadEnd {
    /// The expected text arrived.
    Found,
    Eof,
    /// The reply reached [`REPLY_CAP`].
    Cap,
    /// The deadline passed.
    Timeout,
    /// No `expect`: data arrived and then the peer went quiet.
    Idle,
    Error(String),
}

struct ReplyRead {
    data: Vec<u8>,
    end: ReadEnd,
    first_byte: Option<Instant>,
    finished: Instant,
}

/// Reads until `expect` shows up, the peer closes, the cap is hit or the deadline passes. Without
/// `expect` a short quiet period after the first data ends the reply, because a server that keeps
/// the connection open gives no other signal that it is done.
async fn read_reply<S: AsyncRead + Unpin>(
    stream: &mut S,
    expect: Option<&[u8]>,
    deadline: Instant,
) -> ReplyRead {
    let mut data = Vec::new();
    let mut buf = vec![0u8; 8192];
    let mut first_byte = None;
    let end = loop {
        let wait_until = match (expect, data.is_empty()) {
            (None, false) => deadline.min(Instant::now() + IDLE_GAP),
            _ => deadline,
        };
        let room = REPLY_CAP - data.len();
        let want = room.min(buf.len());
        match tokio::time::timeout_at(wait_until.into(), stream.read(&mut buf[..want])).await {
            Err(_) if Instant::now() >= deadline => break ReadEnd::Timeout,
            Err(_) => break ReadEnd::Idle,
            Ok(Ok(0)) => break ReadEnd::Eof,
            Ok(Ok(n)) => {
                first_byte.get_or_insert_with(Instant::now);
                data.extend_from_slice(&buf[..n]);
                if expect.is_some_and(|e| contains(&data, e)) {
                    break ReadEnd::Found;
                }
                if data.len() >= REPLY_CAP {
                    break ReadEnd::Cap;
                }
            }
            Ok(Err(e)) => break ReadEnd::Error(io_message(&e)),
        }
    };
    ReplyRead {
        data,
        end,
        first_byte,
        finished: Instant::now(),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------------------------
// Shared with ping, dns and websocket.
// ---------------------------------------------------------------------------------------------

/// Milliseconds as the heartbeat shows them.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The instant by which a check should have finished on its own. It stops a little before the
/// monitor timeout so the check can report what it was waiting for, rather than the engine's
/// generic "timed out" outcome with no detail.
pub(crate) fn deadline_for(opts: &RunOptions, started: Instant) -> Instant {
    let margin = (opts.timeout / 10).min(Duration::from_millis(250));
    started + opts.timeout.saturating_sub(margin)
}

/// An I/O error in words, with the common socket failures spelled out.
pub(crate) fn io_message(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused".to_string(),
        ErrorKind::ConnectionReset => "connection reset by peer".to_string(),
        ErrorKind::ConnectionAborted => "connection aborted".to_string(),
        ErrorKind::BrokenPipe => "connection closed by peer (broken pipe)".to_string(),
        ErrorKind::UnexpectedEof => "connection closed unexpectedly".to_string(),
        _ => e.to_string(),
    }
}

/// Validates a monitor host: a hostname or an IP address (IPv6 with or without brackets).
/// Returns the host without brackets.
pub(crate) fn parse_host(
    host: Option<&str>,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let Some(raw) = host else {
        errors.push(FieldError::new(path, "is required"));
        return None;
    };
    let host = raw.trim();
    let unbracketed = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if unbracketed.parse::<IpAddr>().is_ok() {
        return Some(unbracketed.to_string());
    }
    if host.is_empty() {
        errors.push(FieldError::new(path, "must not be empty"));
        return None;
    }
    if !is_hostname(host) {
        errors.push(FieldError::new(path, "must be a hostname or an IP address"));
        return None;
    }
    Some(host.to_string())
}

/// Letters, digits, `-` and `_` in dot-separated labels of 1..=63 characters, 253 in all. An
/// underscore is allowed because service names (`_sip._tcp.example.com`) are queried by DNS checks.
pub(crate) fn is_hostname(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// Reads one JSON object's keys, collecting every problem with its dotted path. Unknown keys are
/// rejected up front; `null` counts as absent.
pub(crate) struct ConfigReader<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
    pub(crate) errors: Vec<FieldError>,
}

impl<'a> ConfigReader<'a> {
    pub(crate) fn new(map: &'a Map<String, Value>, prefix: &str, allowed: &[&str]) -> Self {
        let mut errors = Vec::new();
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                errors.push(FieldError::new(
                    format!("{prefix}.{key}"),
                    format!("unknown field; expected one of: {}", allowed.join(", ")),
                ));
            }
        }
        ConfigReader {
            map,
            prefix: prefix.to_string(),
            errors,
        }
    }

    pub(crate) fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    pub(crate) fn raw(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn type_error(&mut self, key: &str, expected: &str) {
        let path = self.path(key);
        self.errors
            .push(FieldError::new(path, format!("must be {expected}")));
    }

    pub(crate) fn bool(&mut self, key: &str) -> Option<bool> {
        let value = self.raw(key)?;
        let b = value.as_bool();
        if b.is_none() {
            self.type_error(key, "a boolean");
        }
        b
    }

    pub(crate) fn string(&mut self, key: &str) -> Option<&'a str> {
        let value = self.raw(key)?;
        let s = value.as_str();
        if s.is_none() {
            self.type_error(key, "a string");
        }
        s
    }

    /// A non-empty string of at most `max` bytes.
    pub(crate) fn bounded_string(&mut self, key: &str, max: usize) -> Option<String> {
        let s = self.string(key)?;
        if s.is_empty() {
            self.type_error(key, "a non-empty string");
            None
        } else if s.len() > max {
            let path = self.path(key);
            self.errors.push(FieldError::new(
                path,
                format!("must be at most {max} bytes"),
            ));
            None
        } else {
            Some(s.to_string())
        }
    }

    /// An integer in `min..=max`.
    pub(crate) fn integer(&mut self, key: &str, min: u64, max: u64) -> Option<u64> {
        let value = self.raw(key)?;
        match value.as_u64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.type_error(key, &format!("an integer between {min} and {max}"));
                None
            }
        }
    }

    /// A number in `min..=max`.
    pub(crate) fn number(&mut self, key: &str, min: f64, max: f64) -> Option<f64> {
        let value = self.raw(key)?;
        match value.as_f64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.type_error(key, &format!("a number between {min} and {max}"));
                None
            }
        }
    }

    pub(crate) fn object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        let value = self.raw(key)?;
        let o = value.as_object();
        if o.is_none() {
            self.type_error(key, "an object");
        }
        o
    }

    /// An array of strings; each bad item is reported at `<key>.<index>`.
    pub(crate) fn string_array(&mut self, key: &str) -> Option<Vec<String>> {
        let value = self.raw(key)?;
        let Some(items) = value.as_array() else {
            self.type_error(key, "an array of strings");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s.to_string()),
                None => {
                    ok = false;
                    let path = format!("{}.{key}.{i}", self.prefix);
                    self.errors.push(FieldError::new(path, "must be a string"));
                }
            }
        }
        ok.then_some(out)
    }

    /// `assertions`, parsed by the shared assertion language and restricted to the targets that
    /// make sense for this kind.
    pub(crate) fn assertions(&mut self, allowed: &[Target], kind: &str) -> Vec<Assertion> {
        let path = self.path("assertions");
        match crate::assertions::parse_assertions(self.raw("assertions"), &path) {
            Err(mut errs) => {
                self.errors.append(&mut errs);
                Vec::new()
            }
            Ok(list) => {
                for (i, a) in list.iter().enumerate() {
                    if !allowed.contains(&a.target) {
                        let names: Vec<String> =
                            allowed.iter().map(|t| t.as_str().to_string()).collect();
                        self.errors.push(FieldError::new(
                            format!("{path}.{i}.target"),
                            format!(
                                "{} is not available for {kind} checks; use one of: {}",
                                a.target.as_str(),
                                names.join(", ")
                            ),
                        ));
                    }
                }
                list
            }
        }
    }
}

/// Evaluates `assertions` against what the check saw and folds the result into `outcome`: the
/// worse verdict wins, and failed assertions are named in the message.
pub(crate) fn apply_assertions(
    outcome: &mut Outcome,
    assertions: &[Assertion],
    obs: &Observation<'_>,
) {
    if assertions.is_empty() {
        return;
    }
    let (results, verdict) = crate::assertions::evaluate(assertions, obs);
    let failed: Vec<String> = results
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.message.clone())
        .collect();
    outcome.assertion_results = results;
    if severity_rank(verdict) > severity_rank(outcome.verdict) {
        outcome.verdict = verdict;
    }
    if !failed.is_empty() {
        let failed = failed.join("; ");
        outcome.message = Some(match outcome.message.take() {
            Some(m) => format!("{m}; {failed}"),
            None => failed,
        });
    }
    if outcome.verdict != Verdict::Up && outcome.message.is_none() {
        outcome.message = Some("assertions failed".to_string());
    }
}

/// Worse verdicts rank higher. A DNS change outranks a warning so it is not hidden by one.
pub(crate) fn severity_rank(v: Verdict) -> u8 {
    match v {
        Verdict::Up => 0,
        Verdict::Degraded => 1,
        Verdict::Changed => 2,
        Verdict::Down => 3,
    }
}

/// A failed connection attempt, with whatever was learned before it failed.
pub(crate) struct ConnectFailure {
    pub(crate) message: String,
    pub(crate) resolved_ip: Option<IpAddr>,
    pub(crate) dns_ms: f64,
    /// The probe ran out of a resource of its own (see [`crate::fault`]).
    pub(crate) fault: Option<&'static str>,
}

impl ConnectFailure {
    pub(crate) fn into_outcome(self, started: Instant) -> Outcome {
        if let Some(resource) = self.fault {
            return Outcome::probe_fault(started.elapsed(), resource);
        }
        let mut outcome = Outcome::down(started.elapsed(), self.message);
        outcome.resolved_ip = self.resolved_ip;
        outcome.timings = Some(Timings {
            dns: self.dns_ms,
            ..Timings::default()
        });
        outcome
    }
}

pub(crate) struct Connected {
    pub(crate) stream: TcpStream,
    pub(crate) ip: IpAddr,
    pub(crate) dns_ms: f64,
    pub(crate) tcp_ms: f64,
}

/// Resolves `host` with the system resolver (skipped for IP literals) and connects to the first
/// address that accepts and `policy` allows, all before `deadline`.
pub(crate) async fn connect(
    host: &str,
    port: u16,
    deadline: Instant,
    policy: &AddressPolicy,
) -> Result<Connected, ConnectFailure> {
    let dns_started = Instant::now();
    let addrs = resolve(host, port, deadline, policy)
        .await
        .map_err(|message| ConnectFailure {
            message,
            fault: None,
            resolved_ip: None,
            dns_ms: ms(dns_started.elapsed()),
        })?;
    let dns_ms = ms(dns_started.elapsed());

    let mut last = None;
    let mut fault = None;
    for addr in &addrs {
        // The last address's failure is the one reported.
        fault = None;
        let tcp_started = Instant::now();
        let message = match tokio::time::timeout_at(deadline.into(), TcpStream::connect(addr)).await
        {
            Ok(Ok(stream)) => {
                // Checks write small payloads and wait for answers; batching only adds delay.
                let _ = stream.set_nodelay(true);
                return Ok(Connected {
                    stream,
                    ip: addr.ip(),
                    dns_ms,
                    tcp_ms: ms(tcp_started.elapsed()),
                });
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("connection refused by {addr}")
            }
            Ok(Err(e)) => {
                fault = crate::fault::local_io_fault(&e);
                format!("could not connect to {addr}: {}", io_message(&e))
            }
            Err(_) => format!(
                "connection to {addr} timed out after {} ms",
                ms(tcp_started.elapsed()).round()
            ),
        };
        last = Some((message, addr.ip()));
        if Instant::now() >= deadline {
            break;
        }
    }
    // `resolve` never returns an empty list, so `last` is set whenever the loop ran.
    let (message, resolved_ip) = match last {
        Some((message, ip)) => (message, Some(ip)),
        None => (format!("{host} has no addresses"), None),
    };
    Err(ConnectFailure {
        message,
        resolved_ip,
        dns_ms,
        fault,
    })
}

/// The socket addresses for `host` (an IP literal resolves to itself without a lookup) that
/// `policy` allows; the caller connects to these and no others, so what was judged is what is
/// reached.
pub(crate) async fn resolve(
    host: &str,
    port: u16,
    deadline: Instant,
    policy: &AddressPolicy,
) -> Result<Vec<SocketAddr>, String> {
    let addrs = if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        match tokio::time::timeout_at(deadline.into(), tokio::net::lookup_host((host, port))).await
        {
            Err(_) => return Err(format!("resolving {host} timed out")),
            Ok(Err(e)) => return Err(format!("could not resolve {host}: {e}")),
            Ok(Ok(addrs)) => addrs.collect(),
        }
    };
    if addrs.is_empty() {
        return Err(format!("{host} has no addresses"));
    }
    policy.keep_allowed(addrs, SocketAddr::ip)
}

pub(crate) struct TlsSession<S> {
    pub(crate) stream: tokio_rustls::client::TlsStream<S>,
    pub(crate) tls_ms: f64,
    pub(crate) cert_days_left: Option<i64>,
}

/// Runs a TLS handshake over `stream` for `server_name` (a hostname or an IP address); the
/// certificate's days left count from `now`.
pub(crate) async fn tls_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    server_name: &str,
    verify: bool,
    deadline: Instant,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<TlsSession<S>, String> {
    let (config, capture) = crate::tls::client_config(verify).map_err(|e| e.to_string())?;
    let config = Arc::new(config);
    let name = rustls_pki_types::ServerName::try_from(server_name.to_string())
        .map_err(|_| format!("invalid TLS server name {server_name:?}"))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let started = Instant::now();
    let stream =
        match tokio::time::timeout_at(deadline.into(), connector.connect(name, stream)).await {
            Err(_) => {
                return Err(format!(
                    "TLS handshake timed out after {} ms",
                    ms(started.elapsed()).round()
                ))
            }
            Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
            Ok(Ok(s)) => s,
        };
    let tls_ms = ms(started.elapsed());
    let cert_days_left = capture
        .leaf()
        .and_then(|leaf| crate::tls::cert_days_left(&leaf, now));
    Ok(TlsSession {
        stream,
        tls_ms,
        cert_days_left,
    })
}
