//! The monitor types, as the API spells them (and as they are stored). The check engine has its
//! own kinds for the types it runs; PUSH is not one of them.

use serde::{Deserialize, Serialize};

/// What a monitor checks. Stored as the API spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MonitorType {
    Http,
    Tcp,
    Ping,
    Dns,
    DnsDiff,
    #[serde(rename = "WEBSOCKET")]
    Websocket,
    Push,
}

impl MonitorType {
    pub fn as_str(self) -> &'static str {
        match self {
            MonitorType::Http => "HTTP",
            MonitorType::Tcp => "TCP",
            MonitorType::Ping => "PING",
            MonitorType::Dns => "DNS",
            MonitorType::DnsDiff => "DNS_DIFF",
            MonitorType::Websocket => "WEBSOCKET",
            MonitorType::Push => "PUSH",
        }
    }

    pub fn parse(s: &str) -> Option<MonitorType> {
        Some(match s {
            "HTTP" => MonitorType::Http,
            "TCP" => MonitorType::Tcp,
            "PING" => MonitorType::Ping,
            "DNS" => MonitorType::Dns,
            "DNS_DIFF" => MonitorType::DnsDiff,
            "WEBSOCKET" => MonitorType::Websocket,
            "PUSH" => MonitorType::Push,
            _ => return None,
        })
    }
}
