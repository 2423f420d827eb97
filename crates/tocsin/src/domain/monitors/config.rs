//! The documented shape of a monitor's `config`: PUSH's own keys ([`PushConfig`]) and the
//! schema every surface gives the `config` field. The field stays an open object (the interface
//! fixes it as "string keys to any value"); its schema names the per-type schemas, which come
//! from the same types the parsers take their accepted keys from (`tocsin_checks::config` and
//! [`PushConfig`]), so the document cannot list a key the server refuses or miss one it reads.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use tocsin_checks::config::{
    DnsConfig, DnsDiffConfig, HttpConfig, PingConfig, TcpConfig, WebSocketConfig,
};

/// The `config` of a PUSH monitor. Pushes are expected every `interval` seconds unless
/// `schedule` is set; the top-level `gracePeriod` is the slack after each expected push. No
/// other keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(example = PushConfig::example())]
pub struct PushConfig {
    /// A 5-field cron expression saying when pushes are expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The IANA time zone `schedule` is read in; default UTC. Only with `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

impl PushConfig {
    pub fn example() -> Self {
        PushConfig {
            schedule: Some("0 3 * * *".into()),
            timezone: Some("Europe/Berlin".into()),
        }
    }
}

/// The per-type schemas, by the monitor type whose `config` each describes.
fn per_type(generator: &mut SchemaGenerator) -> Vec<Schema> {
    vec![
        generator.subschema_for::<HttpConfig>(),
        generator.subschema_for::<TcpConfig>(),
        generator.subschema_for::<DnsConfig>(),
        generator.subschema_for::<DnsDiffConfig>(),
        generator.subschema_for::<WebSocketConfig>(),
        generator.subschema_for::<PingConfig>(),
        generator.subschema_for::<PushConfig>(),
    ]
}

const DESCRIPTION: &str = "Type-specific settings: `HttpConfig` for HTTP, `TcpConfig` for TCP, \
`DnsConfig` for DNS, `DnsDiffConfig` for DNS_DIFF, `WebSocketConfig` for WEBSOCKET, \
`PingConfig` for PING, `PushConfig` for PUSH (the schema that applies is the one of the \
monitor's `type`; keys of other types are refused). Every type except PUSH also takes \
`quorum` (an integer, only with `regionStrategy: all`, 1 to the number of regions): how many \
regions must fail for a cycle to fail.";

/// The schema of a `config` that is always present (responses).
pub fn schema(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": true,
        "description": DESCRIPTION,
        "anyOf": per_type(generator),
    })
}

/// The schema of a `config` a request may leave out or send as `null`.
pub fn optional_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut any_of = per_type(generator);
    any_of.push(json_schema!({ "type": "null" }));
    json_schema!({
        "type": ["object", "null"],
        "additionalProperties": true,
        "description": DESCRIPTION,
        "anyOf": any_of,
    })
}
