//! The capability vocabulary (equal to the OAuth scope vocabulary) and which roles hold what.
//! Seventeen capabilities may be put on a token; four are session-only and can only be
//! exercised by a person signed in with the session cookie.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::store::corrupt::{stored_text, UnknownValue};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum Capability {
    #[serde(rename = "monitors:read")]
    MonitorsRead,
    #[serde(rename = "monitors:write")]
    MonitorsWrite,
    #[serde(rename = "monitors:delete")]
    MonitorsDelete,
    #[serde(rename = "status_pages:read")]
    StatusPagesRead,
    #[serde(rename = "status_pages:write")]
    StatusPagesWrite,
    #[serde(rename = "status_pages:delete")]
    StatusPagesDelete,
    #[serde(rename = "incidents:read")]
    IncidentsRead,
    #[serde(rename = "incidents:write")]
    IncidentsWrite,
    #[serde(rename = "incidents:delete")]
    IncidentsDelete,
    #[serde(rename = "postmortems:read")]
    PostmortemsRead,
    #[serde(rename = "postmortems:write")]
    PostmortemsWrite,
    #[serde(rename = "postmortems:delete")]
    PostmortemsDelete,
    #[serde(rename = "notifications:read")]
    NotificationsRead,
    #[serde(rename = "notifications:write")]
    NotificationsWrite,
    #[serde(rename = "notifications:delete")]
    NotificationsDelete,
    #[serde(rename = "maintenance:write")]
    MaintenanceWrite,
    #[serde(rename = "identity:read")]
    IdentityRead,
    #[serde(rename = "workspace:manage")]
    WorkspaceManage,
    #[serde(rename = "billing:manage")]
    BillingManage,
    #[serde(rename = "members:manage")]
    MembersManage,
    #[serde(rename = "audit:read")]
    AuditRead,
}

use Capability::*;

/// The seventeen capabilities a token may carry, in the spec's order.
pub const TOKEN_CAPABILITIES: [Capability; 17] = [
    MonitorsRead,
    MonitorsWrite,
    MonitorsDelete,
    StatusPagesRead,
    StatusPagesWrite,
    StatusPagesDelete,
    IncidentsRead,
    IncidentsWrite,
    IncidentsDelete,
    PostmortemsRead,
    PostmortemsWrite,
    PostmortemsDelete,
    NotificationsRead,
    NotificationsWrite,
    NotificationsDelete,
    MaintenanceWrite,
    IdentityRead,
];

/// What a viewer holds: every `*:read` capability, the session-only audit log's included (the
/// role's rule in the conventions), and nothing that writes.
pub const VIEWER_CAPABILITIES: [Capability; 7] = [
    MonitorsRead,
    StatusPagesRead,
    IncidentsRead,
    PostmortemsRead,
    NotificationsRead,
    IdentityRead,
    AuditRead,
];

pub const SESSION_ONLY: [Capability; 4] =
    [WorkspaceManage, BillingManage, MembersManage, AuditRead];

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            MonitorsRead => "monitors:read",
            MonitorsWrite => "monitors:write",
            MonitorsDelete => "monitors:delete",
            StatusPagesRead => "status_pages:read",
            StatusPagesWrite => "status_pages:write",
            StatusPagesDelete => "status_pages:delete",
            IncidentsRead => "incidents:read",
            IncidentsWrite => "incidents:write",
            IncidentsDelete => "incidents:delete",
            PostmortemsRead => "postmortems:read",
            PostmortemsWrite => "postmortems:write",
            PostmortemsDelete => "postmortems:delete",
            NotificationsRead => "notifications:read",
            NotificationsWrite => "notifications:write",
            NotificationsDelete => "notifications:delete",
            MaintenanceWrite => "maintenance:write",
            IdentityRead => "identity:read",
            WorkspaceManage => "workspace:manage",
            BillingManage => "billing:manage",
            MembersManage => "members:manage",
            AuditRead => "audit:read",
        }
    }

    /// The capability a text names, `None` for anything else (see the `FromStr`).
    pub fn parse(s: &str) -> Option<Capability> {
        s.parse().ok()
    }

    pub fn is_session_only(self) -> bool {
        SESSION_ONLY.contains(&self)
    }

    /// A short description, used for the OAuth scope table in the document.
    pub fn describe(self) -> &'static str {
        match self {
            MonitorsRead => "Read monitors and heartbeats",
            MonitorsWrite => "Create, update, pause and resume monitors; run on-demand checks",
            MonitorsDelete => "Delete monitors",
            StatusPagesRead => "Read status pages",
            StatusPagesWrite => "Create, update and publish status pages",
            StatusPagesDelete => "Delete status pages",
            IncidentsRead => "Read incidents",
            IncidentsWrite => "File, update, resolve and reopen incidents",
            IncidentsDelete => "Delete incidents",
            PostmortemsRead => "Read postmortems",
            PostmortemsWrite => "Write and publish postmortems",
            PostmortemsDelete => "Delete postmortems",
            NotificationsRead => "Read notification channels and delivery history",
            NotificationsWrite => "Manage notification channels and send tests",
            NotificationsDelete => "Delete notification channels",
            MaintenanceWrite => "Schedule maintenance windows",
            IdentityRead => "View workspace and plan",
            WorkspaceManage => "Manage workspace settings",
            BillingManage => "Manage billing",
            MembersManage => "Manage members and invitations",
            AuditRead => "Read the audit log",
        }
    }
}

/// The inverse of [`Capability::as_str`]; any other text is an error, never dropped or
/// defaulted by the parse itself.
impl std::str::FromStr for Capability {
    type Err = UnknownValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TOKEN_CAPABILITIES
            .iter()
            .chain(SESSION_ONLY.iter())
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownValue {
                kind: "capability",
                value: s.to_string(),
            })
    }
}

/// A set of capabilities as a bit mask: checking one is a single AND on the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CapSet(u32);

impl CapSet {
    pub const EMPTY: CapSet = CapSet(0);

    pub fn of(caps: &[Capability]) -> CapSet {
        CapSet(caps.iter().fold(0, |acc, c| acc | bit(*c)))
    }

    pub fn contains(self, c: Capability) -> bool {
        self.0 & bit(c) != 0
    }

    pub fn intersect(self, other: CapSet) -> CapSet {
        CapSet(self.0 & other.0)
    }

    /// The capabilities in `required` this set lacks.
    pub fn missing(self, required: &[Capability]) -> Vec<Capability> {
        required
            .iter()
            .copied()
            .filter(|c| !self.contains(*c))
            .collect()
    }

    pub fn to_vec(self) -> Vec<Capability> {
        TOKEN_CAPABILITIES
            .iter()
            .chain(SESSION_ONLY.iter())
            .copied()
            .filter(|c| self.contains(*c))
            .collect()
    }
}

fn bit(c: Capability) -> u32 {
    1u32 << (c as u32)
}

/// A member's role in a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, including billing; a workspace always keeps at least one owner.
    Owner,
    /// Everything but billing: settings, members, audit log and all monitoring work.
    Admin,
    /// All monitoring work (the seventeen token capabilities), no administration.
    Member,
    /// Reads everything (every `*:read`: monitoring, the workspace's identity and its audit
    /// log) and changes nothing.
    Viewer,
}

impl Role {
    pub fn capabilities(self) -> CapSet {
        match self {
            Role::Owner => CapSet::of(&TOKEN_CAPABILITIES).union(CapSet::of(&SESSION_ONLY)),
            Role::Admin => CapSet::of(&TOKEN_CAPABILITIES).union(CapSet::of(&[
                WorkspaceManage,
                MembersManage,
                AuditRead,
            ])),
            Role::Member => CapSet::of(&TOKEN_CAPABILITIES),
            Role::Viewer => CapSet::of(&VIEWER_CAPABILITIES),
        }
    }

    pub const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Member, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }

    /// The role a text names, `None` for anything else (see the `FromStr`).
    pub fn parse(s: &str) -> Option<Role> {
        s.parse().ok()
    }
}

stored_text!(Role, "role");

impl CapSet {
    pub fn union(self, other: CapSet) -> CapSet {
        CapSet(self.0 | other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_and_capability_round_trips_and_strangers_are_errors() {
        crate::store::corrupt::assert_round_trip(&Role::ALL, Role::as_str);
        let all: Vec<Capability> = TOKEN_CAPABILITIES
            .iter()
            .chain(SESSION_ONLY.iter())
            .copied()
            .collect();
        crate::store::corrupt::assert_round_trip(&all, Capability::as_str);
    }

    #[test]
    fn names_round_trip_and_sets_work() {
        for c in TOKEN_CAPABILITIES.iter().chain(SESSION_ONLY.iter()) {
            assert_eq!(Capability::parse(c.as_str()), Some(*c));
            let json = serde_json::to_string(c).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
        let set = CapSet::of(&[MonitorsRead, AuditRead]);
        assert!(
            set.contains(MonitorsRead) && set.contains(AuditRead) && !set.contains(MonitorsWrite)
        );
        assert_eq!(
            set.missing(&[MonitorsRead, MonitorsWrite]),
            vec![MonitorsWrite]
        );
        assert!(!Role::Member.capabilities().contains(MembersManage));
        assert!(Role::Admin.capabilities().contains(MembersManage));
        assert!(!Role::Admin.capabilities().contains(BillingManage));
        assert_eq!(Role::Owner.capabilities().to_vec().len(), 21);
        let viewer = Role::Viewer.capabilities().to_vec();
        assert_eq!(viewer, VIEWER_CAPABILITIES.to_vec());
        // Every `*:read` there is, and nothing else: the member's reads and the audit log.
        let reads: Vec<Capability> = Role::Owner
            .capabilities()
            .to_vec()
            .into_iter()
            .filter(|c| c.as_str().ends_with(":read"))
            .collect();
        assert_eq!(viewer, reads);
        assert!(viewer.contains(&AuditRead) && !Role::Member.capabilities().contains(AuditRead));
    }
}
