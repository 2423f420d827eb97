//! The typed input form of each check kind's `config`: one serde type per kind, declaring every
//! key the parser accepts, its JSON shape, its documentation and an example. The parsers take
//! their lists of accepted keys from these types ([`field_names`]), so a key cannot be accepted
//! without being declared here; the values are still validated by the hand-written parsers,
//! which report every problem with its path. With the `schema` feature the types derive
//! `JsonSchema`, and the server publishes them in its API document (names such as
//! `HttpConfig`), so clients, forms and tool schemas describe exactly what the parser reads.
//!
//! Schemas leave `additionalProperties` open: the parser, not the schema, refuses unknown keys,
//! and the server adds keys of its own (`quorum`) to the same object.

use std::cell::Cell;
use std::collections::BTreeMap;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::Serialize;
use serde_json::Value;

/// The JSON names of a struct type's fields, as serde spells them (after `rename_all`), taken
/// from the type's own `Deserialize` implementation. Empty for a type that is not a struct.
pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let seen = Cell::new(&[][..]);
    // The call always fails: the introspecting deserializer only records the field list.
    let _ = T::deserialize(FieldLister(&seen));
    seen.get()
}

/// A deserializer that records the field list serde asks a struct for, then stops.
struct FieldLister<'a>(&'a Cell<&'static [&'static str]>);

impl<'de> Deserializer<'de> for FieldLister<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("field listing only"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(de::Error::custom("field listing only"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Schemas whose values come from the parser's own name tables, so the two cannot disagree.
#[cfg(feature = "schema")]
mod names {
    use schemars::{json_schema, Schema, SchemaGenerator};

    fn one_of_names(names: Vec<&'static str>, description: &str) -> Schema {
        json_schema!({ "type": "string", "enum": names, "description": description })
    }

    pub fn http_method(_: &mut SchemaGenerator) -> Schema {
        one_of_names(
            crate::http::METHODS.to_vec(),
            "Request method (case-insensitive); default GET.",
        )
    }

    pub fn target(_: &mut SchemaGenerator) -> Schema {
        one_of_names(
            crate::assertions::Target::names(),
            "What the assertion looks at; each check type accepts a subset.",
        )
    }

    pub fn operator(_: &mut SchemaGenerator) -> Schema {
        one_of_names(
            crate::assertions::Operator::names(),
            "How the observed value is compared with `value`.",
        )
    }

    pub fn record_type(_: &mut SchemaGenerator) -> Schema {
        one_of_names(
            crate::dns::DnsRecordType::names(),
            "The record type queried (required).",
        )
    }
}

/// One assertion of `config.assertions`: what to look at, how to compare, and how bad a failure
/// is. `property` is required for the `header` (a header name) and `jsonPath` (an RFC 9535
/// path) targets and refused for the others; `value` is required by every operator except
/// `exists`, `empty` and `not_empty`, which refuse it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "schema",
    schemars(example = AssertionConfig::example())
)]
pub struct AssertionConfig {
    #[cfg_attr(feature = "schema", schemars(schema_with = "names::target"))]
    pub target: String,
    /// The header name (`header`) or JSON path (`jsonPath`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    #[cfg_attr(feature = "schema", schemars(schema_with = "names::operator"))]
    pub operator: String,
    /// The expected value: a number, a string (a regular expression for `matches`), or for
    /// `dnsRecords` an array of records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// `fail` (default) makes the check fail; `warn` makes it DEGRADED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<crate::assertions::Severity>,
}

impl AssertionConfig {
    pub fn example() -> Self {
        AssertionConfig {
            target: "statusCode".into(),
            property: None,
            operator: "eq".into(),
            value: Some(Value::from(200)),
            severity: None,
        }
    }
}

/// HTTP `config.auth`: credentials sent in the `Authorization` header (which must then not be
/// set in `headers`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum HttpAuthConfig {
    Basic(BasicAuthConfig),
    Bearer(BearerAuthConfig),
}

/// `"type": "basic"`: Basic authentication.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BasicAuthConfig {
    /// Must not contain `:`.
    pub username: String,
    pub password: String,
}

/// `"type": "bearer"`: a bearer token.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BearerAuthConfig {
    /// Not empty.
    pub token: String,
}

/// HTTP `config.expect`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HttpExpectConfig {
    /// 1 to 50 accepted status codes: a code (`200`, `"200"`), a range (`"200-299"`) or a class
    /// (`"2xx"`). Default: 2xx and 3xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_codes: Option<Vec<StatusCodeEntry>>,
}

/// One accepted status code, range or class.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum StatusCodeEntry {
    /// A status code, 100 to 599.
    Code(u16),
    /// `"200"`, `"200-299"` or `"2xx"`.
    Pattern(String),
}

/// HTTP `config.tls` (https URLs).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HttpTlsConfig {
    /// Verify the certificate chain and name; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// Days left on the certificate below which the check is DEGRADED, 0 to 3650; default 14.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = 3650)))]
    pub cert_expiry_warn_days: Option<u32>,
    /// Days left on the certificate below which the check fails, 0 to 3650; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = 3650)))]
    pub cert_expiry_fail_days: Option<u32>,
}

/// Which address family an HTTP check connects over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum IpFamilyName {
    Any,
    Ipv4,
    Ipv6,
}

/// The `config` of an HTTP monitor (the target is the monitor's `url`, `http://` or
/// `https://`). Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(example = HttpConfig::example()))]
pub struct HttpConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "names::http_method"))]
    pub method: Option<String>,
    /// Request headers, name to value; at most 100. `Content-Length` and `Transfer-Encoding`
    /// are set automatically and refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Request body, at most 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuthConfig>,
    /// Follow redirects; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_redirects: Option<bool>,
    /// Redirects followed at most, 0 to 20; default 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = 20)))]
    pub max_redirects: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<HttpExpectConfig>,
    /// Address family to connect over; default `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<IpFamilyName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<HttpTlsConfig>,
    /// At most 50. Targets: `statusCode`, `latency`, `header`, `body`, `jsonPath`,
    /// `certificateDaysLeft`, `resolvedIp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<Vec<AssertionConfig>>,
    /// Keep the first 64 KiB of the response body in the heartbeats of failed checks; default
    /// false (assertions on the body read it either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_response_body: Option<bool>,
}

impl HttpConfig {
    pub fn example() -> Self {
        HttpConfig {
            method: Some("GET".into()),
            headers: Some(BTreeMap::from([(
                "Accept".to_string(),
                "application/json".to_string(),
            )])),
            follow_redirects: Some(true),
            max_redirects: Some(5),
            expect: Some(HttpExpectConfig {
                status_codes: Some(vec![
                    StatusCodeEntry::Code(200),
                    StatusCodeEntry::Pattern("3xx".into()),
                ]),
            }),
            tls: Some(HttpTlsConfig {
                verify: Some(true),
                cert_expiry_warn_days: Some(14),
                cert_expiry_fail_days: None,
            }),
            assertions: Some(vec![AssertionConfig {
                target: "jsonPath".into(),
                property: Some("$.status".into()),
                operator: "eq".into(),
                value: Some(Value::from("ok")),
                severity: None,
            }]),
            ..HttpConfig::default()
        }
    }
}

/// TCP `config.tls`: present to speak TLS after connecting.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TcpTlsConfig {
    /// Default true; false connects in plain TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Verify the certificate chain and name; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
    /// SNI and verification name; default the monitor's `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// The `config` of a TCP monitor (the target is the monitor's `host` and `port`). Every key is
/// optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(example = TcpConfig::example()))]
pub struct TcpConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TcpTlsConfig>,
    /// Text sent after connecting, at most 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// Text the reply must contain, at most 4096 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// At most 50. Targets: `latency`, `reply`, `certificateDaysLeft`, `resolvedIp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<Vec<AssertionConfig>>,
}

impl TcpConfig {
    pub fn example() -> Self {
        TcpConfig {
            send: Some("PING\r\n".into()),
            expect: Some("+PONG".into()),
            ..TcpConfig::default()
        }
    }
}

/// The `config` of a DNS monitor (the name queried is the monitor's `host`; for PTR also an IP
/// address). `recordType` is required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(example = DnsConfig::example()))]
pub struct DnsConfig {
    #[cfg_attr(feature = "schema", schemars(schema_with = "names::record_type"))]
    pub record_type: String,
    /// An IP address with an optional port (`"9.9.9.9"`, `"127.0.0.1:5353"`); default the
    /// system resolver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<String>,
    /// `udp` (default) or `tcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<DnsProtocolName>,
    /// Records that must all be in the answer, in the record type's text form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Vec<String>>,
    /// At most 50. Targets: `dnsRecords`, `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<Vec<AssertionConfig>>,
}

impl DnsConfig {
    pub fn example() -> Self {
        DnsConfig {
            record_type: "A".into(),
            // Loopback: clients and fuzzers send examples as they are.
            resolver: Some("127.0.0.1:5353".into()),
            expected: Some(vec!["192.0.2.10".into()]),
            ..DnsConfig::default()
        }
    }
}

/// The transport of a DNS query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum DnsProtocolName {
    Udp,
    Tcp,
}

/// The `config` of a DNS_DIFF monitor: the same keys as DNS. The first answer becomes the
/// baseline; a later answer that differs from it fails the check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct DnsDiffConfig(pub DnsConfig);

// Written by hand: a derived schema of a transparent type would be DNS's itself, and the
// document names DNS_DIFF's schema (and its example) on its own.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for DnsDiffConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DnsDiffConfig".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let dns = generator.subschema_for::<DnsConfig>();
        let example = serde_json::to_value(DnsDiffConfig::example()).unwrap_or_default();
        schemars::json_schema!({
            "description": "The `config` of a DNS_DIFF monitor: the same keys as DNS. The first \
                answer becomes the baseline; a later answer that differs from it fails the check.",
            "allOf": [dns],
            "examples": [example],
        })
    }
}

impl DnsDiffConfig {
    pub fn example() -> Self {
        DnsDiffConfig(DnsConfig {
            record_type: "MX".into(),
            ..DnsConfig::default()
        })
    }
}

/// WEBSOCKET `config.tls` (wss URLs).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebSocketTlsConfig {
    /// Verify the certificate chain and name; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<bool>,
}

/// The `config` of a WEBSOCKET monitor (the target is the monitor's `url`, `ws://` or
/// `wss://`). Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(example = WebSocketConfig::example()))]
pub struct WebSocketConfig {
    /// Handshake headers, name to value; the handshake's own headers are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Subprotocols offered, as tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprotocols: Option<Vec<String>>,
    /// A text message sent after the handshake, at most 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// Text the first reply must contain, at most 4096 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<WebSocketTlsConfig>,
    /// At most 50. Targets: `latency`, `reply`, `certificateDaysLeft`, `resolvedIp`,
    /// `statusCode`, `header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<Vec<AssertionConfig>>,
}

impl WebSocketConfig {
    pub fn example() -> Self {
        WebSocketConfig {
            subprotocols: Some(vec!["graphql-ws".into()]),
            send: Some("ping".into()),
            expect: Some("pong".into()),
            ..WebSocketConfig::default()
        }
    }
}

/// The `config` of a PING monitor (the target is the monitor's `host`). Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(example = PingConfig::example()))]
pub struct PingConfig {
    /// Echo requests per check, 1 to 10; default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10)))]
    pub count: Option<u32>,
    /// Milliseconds between requests, 10 to 5000; default 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 10, max = 5000)))]
    pub interval_ms: Option<u32>,
    /// Payload bytes, 0 to 65500; default 56.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = 65500)))]
    pub packet_size: Option<u32>,
    /// Packet loss tolerated, 0 to 100 percent; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 0, max = 100)))]
    pub max_loss_percent: Option<f64>,
    /// At most 50. Targets: `latency`, `resolvedIp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertions: Option<Vec<AssertionConfig>>,
}

impl PingConfig {
    pub fn example() -> Self {
        PingConfig {
            count: Some(3),
            interval_ms: Some(200),
            max_loss_percent: Some(34.0),
            ..PingConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{json, Map};

    use super::*;
    use crate::spec::{CheckSpec, MonitorKind, SpecInput};

    fn object(v: &impl Serialize) -> Map<String, Value> {
        serde_json::to_value(v)
            .unwrap()
            .as_object()
            .cloned()
            .unwrap()
    }

    fn parse(kind: MonitorKind, config: &Map<String, Value>) -> Result<CheckSpec, Vec<String>> {
        let (url, host, port) = match kind {
            MonitorKind::Http => (Some("https://example.com/health"), None, None),
            MonitorKind::WebSocket => (Some("wss://example.com/socket"), None, None),
            MonitorKind::Tcp => (None, Some("example.com"), Some(6379)),
            _ => (None, Some("example.com"), None),
        };
        let input = SpecInput {
            url,
            host,
            port,
            config,
        };
        CheckSpec::parse(kind, &input).map_err(|e| {
            e.into_iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect()
        })
    }

    /// Each kind's config with every key set, so a key the type declares but the parser
    /// refuses (or ignores as unknown) shows up.
    fn full_configs() -> Vec<(MonitorKind, Map<String, Value>, &'static [&'static str])> {
        let assertion = |target: &str| AssertionConfig {
            target: target.into(),
            property: None,
            operator: "lt".into(),
            value: Some(json!(5000)),
            severity: Some(crate::assertions::Severity::Warn),
        };
        let http = HttpConfig {
            method: Some("post".into()),
            headers: Some(BTreeMap::from([("X-Probe".into(), "tocsin".into())])),
            body: Some("{}".into()),
            auth: Some(HttpAuthConfig::Bearer(BearerAuthConfig {
                token: "secret".into(),
            })),
            follow_redirects: Some(false),
            max_redirects: Some(0),
            expect: Some(HttpExpectConfig {
                status_codes: Some(vec![StatusCodeEntry::Pattern("200-204".into())]),
            }),
            ip_family: Some(IpFamilyName::Any),
            tls: Some(HttpTlsConfig {
                verify: Some(false),
                cert_expiry_warn_days: Some(30),
                cert_expiry_fail_days: Some(7),
            }),
            assertions: Some(vec![AssertionConfig {
                property: Some("content-type".into()),
                target: "header".into(),
                operator: "contains".into(),
                value: Some(json!("json")),
                severity: Some(crate::assertions::Severity::Fail),
            }]),
            store_response_body: Some(true),
        };
        let tcp = TcpConfig {
            tls: Some(TcpTlsConfig {
                enabled: Some(true),
                verify: Some(true),
                server_name: Some("example.com".into()),
            }),
            send: Some("PING\r\n".into()),
            expect: Some("PONG".into()),
            assertions: Some(vec![assertion("latency")]),
        };
        let dns = DnsConfig {
            record_type: "AAAA".into(),
            resolver: Some("127.0.0.1:5353".into()),
            protocol: Some(DnsProtocolName::Tcp),
            expected: Some(vec!["::1".into()]),
            assertions: Some(vec![assertion("latency")]),
        };
        let ws = WebSocketConfig {
            headers: Some(BTreeMap::from([("X-Probe".into(), "tocsin".into())])),
            subprotocols: Some(vec!["chat".into()]),
            send: Some("hello".into()),
            expect: Some("hello".into()),
            tls: Some(WebSocketTlsConfig {
                verify: Some(false),
            }),
            assertions: Some(vec![assertion("latency")]),
        };
        let ping = PingConfig {
            count: Some(10),
            interval_ms: Some(10),
            packet_size: Some(0),
            max_loss_percent: Some(100.0),
            assertions: Some(vec![assertion("latency")]),
        };
        vec![
            (
                MonitorKind::Http,
                object(&http),
                field_names::<HttpConfig>(),
            ),
            (MonitorKind::Tcp, object(&tcp), field_names::<TcpConfig>()),
            (MonitorKind::Dns, object(&dns), field_names::<DnsConfig>()),
            (
                MonitorKind::DnsDiff,
                object(&DnsDiffConfig(dns.clone())),
                field_names::<DnsDiffConfig>(),
            ),
            (
                MonitorKind::WebSocket,
                object(&ws),
                field_names::<WebSocketConfig>(),
            ),
            (
                MonitorKind::Ping,
                object(&ping),
                field_names::<PingConfig>(),
            ),
        ]
    }

    #[test]
    fn field_names_follow_serde_spelling() {
        assert_eq!(
            field_names::<PingConfig>(),
            [
                "count",
                "intervalMs",
                "packetSize",
                "maxLossPercent",
                "assertions"
            ]
        );
        assert_eq!(field_names::<DnsDiffConfig>(), field_names::<DnsConfig>());
        assert!(field_names::<StatusCodeEntry>().is_empty());
    }

    #[test]
    fn every_declared_key_is_accepted_by_the_parser() {
        for (kind, config, names) in full_configs() {
            let keys: Vec<&str> = config.keys().map(String::as_str).collect();
            let mut declared = names.to_vec();
            declared.sort_unstable();
            assert_eq!(
                keys, declared,
                "{kind:?}: the full config must set every key"
            );
            if let Err(e) = parse(kind, &config) {
                panic!("{kind:?} refused its full config: {e:?}");
            }
        }
    }

    #[test]
    fn keys_the_types_do_not_declare_are_refused() {
        for (kind, mut config, _) in full_configs() {
            config.insert("undeclared".into(), json!(1));
            let errors = parse(kind, &config).unwrap_err();
            assert!(
                errors.iter().any(|e| e.starts_with("config.undeclared:")),
                "{kind:?}: {errors:?}"
            );
        }
        let mut http = object(&HttpConfig::example());
        http.insert("tls".into(), json!({"verify": true, "pin": "x"}));
        http.insert("expect".into(), json!({"statusCodes": [200], "body": "x"}));
        http.insert(
            "auth".into(),
            json!({"type": "bearer", "token": "t", "username": "u"}),
        );
        let errors = parse(MonitorKind::Http, &http).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("config.auth.username:")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.starts_with("config.tls.pin:")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.starts_with("config.expect.body:")),
            "{errors:?}"
        );
    }

    #[test]
    fn examples_parse_with_the_parser() {
        let examples = [
            (MonitorKind::Http, object(&HttpConfig::example())),
            (MonitorKind::Tcp, object(&TcpConfig::example())),
            (MonitorKind::Dns, object(&DnsConfig::example())),
            (MonitorKind::DnsDiff, object(&DnsDiffConfig::example())),
            (MonitorKind::WebSocket, object(&WebSocketConfig::example())),
            (MonitorKind::Ping, object(&PingConfig::example())),
        ];
        for (kind, config) in examples {
            if let Err(e) = parse(kind, &config) {
                panic!("{kind:?} example refused: {e:?}");
            }
        }
        let assertions = json!({"assertions": [AssertionConfig::example()]});
        parse(MonitorKind::Http, assertions.as_object().unwrap()).unwrap();
    }

    #[test]
    fn configs_the_parser_accepts_deserialize_into_the_types() {
        // The parser's spellings that the types must read too: lowercase methods, numeric
        // strings as status codes, nulls as absent keys.
        let basic = object(&HttpAuthConfig::Basic(BasicAuthConfig {
            username: "a".into(),
            password: "b".into(),
        }));
        assert_eq!(basic.len(), 1 + field_names::<BasicAuthConfig>().len());
        let http = json!({"method": "head", "expect": {"statusCodes": ["2xx", 301]},
                          "body": null, "auth": basic});
        parse(MonitorKind::Http, http.as_object().unwrap()).unwrap();
        serde_json::from_value::<HttpConfig>(http).unwrap();
        for (kind, config, _) in full_configs() {
            let value = Value::Object(config);
            let round_trip = match kind {
                MonitorKind::Http => serde_json::to_value(
                    serde_json::from_value::<HttpConfig>(value.clone()).unwrap(),
                ),
                MonitorKind::Tcp => serde_json::to_value(
                    serde_json::from_value::<TcpConfig>(value.clone()).unwrap(),
                ),
                MonitorKind::Dns => serde_json::to_value(
                    serde_json::from_value::<DnsConfig>(value.clone()).unwrap(),
                ),
                MonitorKind::DnsDiff => serde_json::to_value(
                    serde_json::from_value::<DnsDiffConfig>(value.clone()).unwrap(),
                ),
                MonitorKind::WebSocket => serde_json::to_value(
                    serde_json::from_value::<WebSocketConfig>(value.clone()).unwrap(),
                ),
                MonitorKind::Ping => serde_json::to_value(
                    serde_json::from_value::<PingConfig>(value.clone()).unwrap(),
                ),
            };
            assert_eq!(round_trip.unwrap(), value, "{kind:?}");
        }
    }
}
