//! The requirement of every operation, declared once each: the same marker enforces the check
//! at request time (the HTTP extractor, and [`Caller::require`](crate::auth::Caller::require)
//! in domain operations and other surfaces) and writes the operation's security and
//! `x-svc-required-capabilities` into the OpenAPI document.

use crate::auth::Capability as C;
use crate::requirement;

requirement!(IdentityRead => [C::IdentityRead]);
requirement!(WorkspaceManage => [C::WorkspaceManage]);
requirement!(MembersManage => [C::MembersManage]);
requirement!(AuditRead => [C::AuditRead]);
requirement!(BillingManage => [C::BillingManage]);
// Operations on the signed-in person's own account (API keys, switching workspace):
// a session is required; no token may act for them.
requirement!(SignedIn => [] person);
requirement!(SignedInIdentity => [C::IdentityRead] person);
requirement!(MonitorsRead => [C::MonitorsRead]);
requirement!(MonitorsWrite => [C::MonitorsWrite]);
requirement!(MonitorsDelete => [C::MonitorsDelete]);
requirement!(NotificationsRead => [C::NotificationsRead]);
requirement!(NotificationsWrite => [C::NotificationsWrite]);
requirement!(NotificationsDelete => [C::NotificationsDelete]);
requirement!(MaintenanceWrite => [C::MaintenanceWrite]);
requirement!(StatusPagesRead => [C::StatusPagesRead]);
requirement!(StatusPagesWrite => [C::StatusPagesWrite]);
requirement!(StatusPagesDelete => [C::StatusPagesDelete]);
requirement!(IncidentsRead => [C::IncidentsRead]);
requirement!(IncidentsWrite => [C::IncidentsWrite]);
requirement!(IncidentsDelete => [C::IncidentsDelete]);
requirement!(PostmortemsRead => [C::PostmortemsRead]);
requirement!(PostmortemsWrite => [C::PostmortemsWrite]);
requirement!(PostmortemsDelete => [C::PostmortemsDelete]);
