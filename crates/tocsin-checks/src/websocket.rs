//! WEBSOCKET checks: open a `ws://` or `wss://` connection (HTTP/1.1 upgrade), optionally send a
//! text message and look for an expected substring in the first reply, then close cleanly and
//! evaluate assertions.
//!
//! Config shape (inside the monitor's `config`; `url` is the monitor field):
//! ```json
//! {"headers": {"Authorization": "Bearer x"}, "subprotocols": ["chat.v1"],
//!  "send": "ping", "expect": "pong", "tls": {"verify": true},
//!  "assertions": [{"target": "reply", "operator": "contains", "value": "pong"}]}
//! ```
//! * `headers`: extra handshake headers. Those the handshake itself owns (`Upgrade`,
//!   `Connection`, `Sec-WebSocket-Key`, `Sec-WebSocket-Version`, `Sec-WebSocket-Protocol`) are
//!   rejected; use `subprotocols` for the last one.
//! * `subprotocols`: offered in order; the server must pick one of them.
//! * `tls.verify` (wss only, default `true`).
//!
//! The first reply is awaited only when `expect` is set or an assertion looks at `reply`. Ping
//! and pong frames are not replies. Timings: `firstByte` is the upgrade (request to `101`),
//! `transfer` the wait for the reply.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use http::{HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::assertions::{Assertion, Observation, Target};
use crate::config::{self as input_types, field_names};
use crate::spec::{FieldError, RunOptions, SpecInput};
use crate::tcp::{
    apply_assertions, connect, deadline_for, ms, tls_handshake, ConfigReader, REPLY_CAP,
};
use crate::{Outcome, Timings, Verdict};

/// A validated WEBSOCKET check.
#[derive(Debug, Clone, PartialEq)]
pub struct WsSpec {
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    pub subprotocols: Vec<String>,
    pub send: Option<String>,
    pub expect: Option<String>,
    /// wss only: verify the server certificate.
    pub tls_verify: bool,
    pub assertions: Vec<Assertion>,
}

const WS_TARGETS: &[Target] = &[
    Target::Latency,
    Target::Reply,
    Target::CertificateDaysLeft,
    Target::ResolvedIp,
    Target::StatusCode,
    Target::Header,
];

/// Handshake headers the client library sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "upgrade",
    "connection",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
];

impl WsSpec {
    pub fn parse(input: &SpecInput<'_>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let url = match input.url.map(str::trim) {
            None | Some("") => {
                errors.push(FieldError::new("url", "is required for WEBSOCKET checks"));
                None
            }
            Some(raw) => match url::Url::parse(raw) {
                Err(e) => {
                    errors.push(FieldError::new("url", format!("is not a valid URL: {e}")));
                    None
                }
                Ok(u) if u.scheme() != "ws" && u.scheme() != "wss" => {
                    errors.push(FieldError::new("url", "must start with ws:// or wss://"));
                    None
                }
                Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                    errors.push(FieldError::new("url", "must name a host"));
                    None
                }
                Ok(u) => Some(u),
            },
        };

        let mut cfg = ConfigReader::new(
            input.config,
            "config",
            field_names::<input_types::WebSocketConfig>(),
        );
        let mut headers = Vec::new();
        if let Some(map) = cfg.object("headers") {
            for (name, value) in map {
                let path = format!("config.headers.{name}");
                if HeaderName::from_bytes(name.as_bytes()).is_err() {
                    cfg.errors
                        .push(FieldError::new(path, "is not a valid header name"));
                } else if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                    cfg.errors.push(FieldError::new(
                        path,
                        "is set by the WebSocket handshake and cannot be overridden",
                    ));
                } else {
                    match value.as_str() {
                        Some(v) if HeaderValue::from_str(v).is_ok() => {
                            headers.push((name.clone(), v.to_string()))
                        }
                        Some(_) => cfg
                            .errors
                            .push(FieldError::new(path, "is not a valid header value")),
                        None => cfg.errors.push(FieldError::new(path, "must be a string")),
                    }
                }
            }
        }
        let subprotocols = cfg.string_array("subprotocols").unwrap_or_default();
        for (i, p) in subprotocols.iter().enumerate() {
            if p.is_empty() || !p.chars().all(is_token_char) {
                cfg.errors.push(FieldError::new(
                    format!("config.subprotocols.{i}"),
                    "must be a non-empty token (letters, digits and !#$%&'*+-.^_`|~)",
                ));
            }
        }
        let send = cfg.bounded_string("send", REPLY_CAP);
        let expect = cfg.bounded_string("expect", 4096);
        let tls_verify = cfg
            .object("tls")
            .and_then(|tls_map| {
                let mut tls = ConfigReader::new(
                    tls_map,
                    "config.tls",
                    field_names::<input_types::WebSocketTlsConfig>(),
                );
                let verify = tls.bool("verify");
                cfg.errors.append(&mut tls.errors);
                verify
            })
            .unwrap_or(true);
        let assertions = cfg.assertions(WS_TARGETS, "WEBSOCKET");
        errors.append(&mut cfg.errors);

        match url {
            Some(url) if errors.is_empty() => Ok(WsSpec {
                url,
                headers,
                subprotocols,
                send,
                expect,
                tls_verify,
                assertions,
            }),
            _ => Err(errors),
        }
    }

    fn wants_reply(&self) -> bool {
        self.expect.is_some() || self.assertions.iter().any(|a| a.target == Target::Reply)
    }
}

/// RFC 7230 token characters, which is what a subprotocol name must consist of.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub async fn check(spec: &WsSpec, opts: &RunOptions) -> Outcome {
    let started = Instant::now();
    let deadline = deadline_for(opts, started);
    let host = match spec.url.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(h) => h.to_string(),
        None => return Outcome::down(started.elapsed(), "URL has no host"),
    };
    let port = spec.url.port_or_known_default().unwrap_or(80);

    let connected = match connect(&host, port, deadline, &opts.address_policy).await {
        Ok(c) => c,
        Err(fail) => return fail.into_outcome(started),
    };
    let mut timings = Timings {
        dns: connected.dns_ms,
        tcp: connected.tcp_ms,
        ..Timings::default()
    };
    let mut outcome = Outcome {
        resolved_ip: Some(connected.ip),
        ..Outcome::default()
    };

    if spec.url.scheme() == "wss" {
        match tls_handshake(connected.stream, &host, spec.tls_verify, deadline, opts.now).await {
            Err(message) => {
                outcome.message = Some(message);
            }
            Ok(session) => {
                timings.tls = Some(session.tls_ms);
                outcome.cert_days_left = session.cert_days_left;
                session_over(session.stream, spec, deadline, &mut timings, &mut outcome).await;
            }
        }
    } else {
        session_over(connected.stream, spec, deadline, &mut timings, &mut outcome).await;
    }

    outcome.latency = started.elapsed();
    outcome.timings = Some(timings);
    if outcome.message.is_some() {
        outcome.verdict = Verdict::Down;
        return outcome;
    }
    outcome.verdict = Verdict::Up;
    // The observation borrows what the outcome will keep, so take those out while scoring.
    let headers = outcome.response_headers.take();
    let reply = outcome.response_body.take();
    let obs = Observation {
        status_code: outcome.status_code,
        latency_ms: ms(outcome.latency),
        headers: headers.as_ref(),
        cert_days_left: outcome.cert_days_left,
        resolved_ip: outcome.resolved_ip,
        reply: reply.as_deref(),
        ..Observation::default()
    };
    apply_assertions(&mut outcome, &spec.assertions, &obs);
    outcome.response_headers = headers;
    outcome.response_body = reply;
    outcome
}

/// Upgrade, exchange and close over an established (maybe TLS) stream. Failures are recorded as
/// `outcome.message`.
async fn session_over<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    spec: &WsSpec,
    deadline: Instant,
    timings: &mut Timings,
    outcome: &mut Outcome,
) {
    let mut request = match spec.url.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => {
            outcome.message = Some(format!("cannot build the upgrade request: {e}"));
            return;
        }
    };
    for (name, value) in &spec.headers {
        // Both were validated at parse time.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            request.headers_mut().insert(n, v);
        }
    }
    if !spec.subprotocols.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&spec.subprotocols.join(", ")) {
            request.headers_mut().insert("sec-websocket-protocol", v);
        }
    }

    // Replies are kept up to the cap; larger messages are refused rather than buffered.
    let config = WebSocketConfig::default().max_message_size(Some(4 * 1024 * 1024));
    let upgrade_started = Instant::now();
    let handshake = tokio_tungstenite::client_async_with_config(request, stream, Some(config));
    let (mut ws, response) = match tokio::time::timeout_at(deadline.into(), handshake).await {
        Err(_) => {
            outcome.message = Some(format!(
                "WebSocket handshake timed out after {} ms",
                ms(upgrade_started.elapsed()).round()
            ));
            return;
        }
        Ok(Err(WsError::Http(response))) => {
            let status = response.status();
            outcome.status_code = Some(status.as_u16());
            outcome.response_headers = Some(header_map(response.headers()));
            outcome.response_body = response.body().as_ref().map(|b| capped_text(b));
            outcome.message = Some(
                format!(
                    "WebSocket handshake rejected: HTTP {} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )
                .trim_end()
                .to_string(),
            );
            return;
        }
        Ok(Err(e)) => {
            outcome.message = Some(format!("WebSocket handshake failed: {e}"));
            return;
        }
        Ok(Ok(pair)) => pair,
    };
    timings.first_byte = ms(upgrade_started.elapsed());
    outcome.status_code = Some(response.status().as_u16());
    outcome.response_headers = Some(header_map(response.headers()));

    if let Some(text) = &spec.send {
        let sent =
            tokio::time::timeout_at(deadline.into(), ws.send(Message::text(text.as_str()))).await;
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                outcome.message = Some(format!("sending the message failed: {e}"));
                close(&mut ws, deadline).await;
                return;
            }
            Err(_) => {
                outcome.message = Some("sending the message timed out".to_string());
                return;
            }
        }
    }

    if spec.wants_reply() {
        let waiting = Instant::now();
        let reply = first_reply(&mut ws, deadline).await;
        timings.transfer = ms(waiting.elapsed());
        match reply {
            Err(message) => outcome.message = Some(message),
            Ok(text) => {
                if let Some(expect) = &spec.expect {
                    if !text.contains(expect.as_str()) {
                        outcome.message = Some(format!("reply does not contain {expect:?}"));
                    }
                }
                outcome.response_body = Some(text);
            }
        }
    }
    close(&mut ws, deadline).await;
}

/// The first data message, as text (binary replies are decoded lossily).
async fn first_reply<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    deadline: Instant,
) -> Result<String, String> {
    let started = Instant::now();
    loop {
        let next = match tokio::time::timeout_at(deadline.into(), ws.next()).await {
            Err(_) => {
                return Err(format!(
                    "no reply within {} ms",
                    ms(started.elapsed()).round()
                ))
            }
            Ok(next) => next,
        };
        match next {
            None => return Err("connection closed without a reply".to_string()),
            Some(Err(e)) => return Err(format!("reading the reply failed: {e}")),
            Some(Ok(Message::Text(t))) => return Ok(capped_text(t.as_bytes())),
            Some(Ok(Message::Binary(b))) => return Ok(capped_text(&b)),
            Some(Ok(Message::Close(frame))) => {
                return Err(match frame {
                    Some(f) => format!(
                        "server closed the connection without a reply ({} {})",
                        f.code, f.reason
                    )
                    .trim_end()
                    .to_string(),
                    None => "server closed the connection without a reply".to_string(),
                })
            }
            // Control frames are not replies; tungstenite answers pings itself.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
        }
    }
}

/// Sends a Close frame and waits briefly for the server's, so the server sees a clean close.
/// Nothing here affects the verdict.
async fn close<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>, deadline: Instant) {
    let limit = deadline.min(Instant::now() + Duration::from_millis(500));
    let _ = tokio::time::timeout_at(limit.into(), async {
        if ws.close(None).await.is_ok() {
            while let Some(Ok(_)) = ws.next().await {}
        }
    })
    .await;
}

fn capped_text(bytes: &[u8]) -> String {
    let end = bytes.len().min(REPLY_CAP);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn header_map(headers: &http::HeaderMap) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        map.entry(name.as_str().to_string())
            .or_default()
            .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    map
}
