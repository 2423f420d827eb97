//! Identifiers: UUIDv7 strings, so they sort by creation time and keyset pages are stable.

pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// An alert's id where a monitor's, channel's or workspace's id (all plain strings) could be
/// passed by mistake: the delivery path (`alerting::outbox::Notification`) takes this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AlertId<'a>(pub &'a str);

impl AlertId<'_> {
    pub fn as_str(&self) -> &str {
        self.0
    }
}

impl std::fmt::Display for AlertId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
