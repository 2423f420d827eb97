//! The notification event types: what a channel can subscribe to (`events`) and what a
//! delivery's `type` says.

use serde::{Deserialize, Serialize};

/// One notification event type, spelled as on the wire (`alert.opened` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AlertEvent {
    #[serde(rename = "alert.opened")]
    AlertOpened,
    #[serde(rename = "alert.escalated")]
    AlertEscalated,
    #[serde(rename = "alert.acknowledged")]
    AlertAcknowledged,
    #[serde(rename = "alert.resolved")]
    AlertResolved,
    #[serde(rename = "monitor.degraded")]
    MonitorDegraded,
    #[serde(rename = "monitor.changed")]
    MonitorChanged,
    #[serde(rename = "monitor.stale")]
    MonitorStale,
    #[serde(rename = "monitor.flapping")]
    MonitorFlapping,
    #[serde(rename = "monitor.stable")]
    MonitorStable,
    #[serde(rename = "region.down")]
    RegionDown,
    #[serde(rename = "certificate.expiring")]
    CertificateExpiring,
    #[serde(rename = "incident.created")]
    IncidentCreated,
    #[serde(rename = "incident.updated")]
    IncidentUpdated,
    #[serde(rename = "incident.resolved")]
    IncidentResolved,
    #[serde(rename = "test")]
    Test,
}

impl AlertEvent {
    pub const ALL: [AlertEvent; 15] = [
        AlertEvent::AlertOpened,
        AlertEvent::AlertEscalated,
        AlertEvent::AlertAcknowledged,
        AlertEvent::AlertResolved,
        AlertEvent::MonitorDegraded,
        AlertEvent::MonitorChanged,
        AlertEvent::MonitorStale,
        AlertEvent::MonitorFlapping,
        AlertEvent::MonitorStable,
        AlertEvent::RegionDown,
        AlertEvent::CertificateExpiring,
        AlertEvent::IncidentCreated,
        AlertEvent::IncidentUpdated,
        AlertEvent::IncidentResolved,
        AlertEvent::Test,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AlertEvent::AlertOpened => "alert.opened",
            AlertEvent::AlertEscalated => "alert.escalated",
            AlertEvent::AlertAcknowledged => "alert.acknowledged",
            AlertEvent::AlertResolved => "alert.resolved",
            AlertEvent::MonitorDegraded => "monitor.degraded",
            AlertEvent::MonitorChanged => "monitor.changed",
            AlertEvent::MonitorStale => "monitor.stale",
            AlertEvent::MonitorFlapping => "monitor.flapping",
            AlertEvent::MonitorStable => "monitor.stable",
            AlertEvent::RegionDown => "region.down",
            AlertEvent::CertificateExpiring => "certificate.expiring",
            AlertEvent::IncidentCreated => "incident.created",
            AlertEvent::IncidentUpdated => "incident.updated",
            AlertEvent::IncidentResolved => "incident.resolved",
            AlertEvent::Test => "test",
        }
    }

    /// The event a text names, `None` for anything else (see the `FromStr`).
    pub fn parse(s: &str) -> Option<AlertEvent> {
        s.parse().ok()
    }
}

crate::store::corrupt::stored_text!(AlertEvent, "event");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_through_serde_and_parse() {
        for e in AlertEvent::ALL {
            let json = serde_json::to_string(&e).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", e.as_str()));
            assert_eq!(AlertEvent::parse(e.as_str()), Some(e));
        }
        crate::store::corrupt::assert_round_trip(&AlertEvent::ALL, AlertEvent::as_str);
    }
}
