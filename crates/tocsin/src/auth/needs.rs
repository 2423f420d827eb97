//! The requirement of each operation that more than one surface serves (the REST API and an
//! MCP tool), declared once, under the REST operation's `operationId`. The REST route's
//! extractor (`Auth<needs::GetMonitor>`, which also writes the OpenAPI security entry), the MCP
//! tool row that serves the same operation (which gates the call and lists the capabilities as
//! `_meta.requiredCapabilities`) and the domain operation's own check
//! (`caller.require::<needs::GetMonitor>()`) all name the line below, so they cannot disagree.
//! Each is an alias of an [`caps`](super::caps) marker: changing what an operation requires is
//! changing its line here.

use super::caps::*;

// Monitors.
pub type ListMonitors = MonitorsRead;
pub type ListMonitorsPage = MonitorsRead;
pub type GetMonitor = MonitorsRead;
pub type GetMonitorStats = MonitorsRead;
pub type ListMonitorSummaries = MonitorsRead;
pub type CreateMonitor = MonitorsWrite;
pub type UpdateMonitor = MonitorsWrite;
pub type PauseMonitor = MonitorsWrite;
pub type ResumeMonitor = MonitorsWrite;
pub type CheckMonitor = MonitorsWrite;
pub type DeleteMonitor = MonitorsDelete;
pub type ListHeartbeats = MonitorsRead;
pub type GetMonitorUptime = MonitorsRead;
pub type ListHourlyStats = MonitorsRead;

// Maintenance windows.
pub type ListMaintenanceWindows = MonitorsRead;
pub type CreateMaintenanceWindow = MaintenanceWrite;
pub type DeleteMaintenanceWindow = MaintenanceWrite;

// Alerts.
pub type ListAlerts = MonitorsRead;
pub type AcknowledgeAlert = MonitorsWrite;

// Notification channels.
pub type ListNotificationChannels = NotificationsRead;
pub type TestNotificationChannel = NotificationsWrite;

// Status pages.
pub type ListStatusPages = StatusPagesRead;
pub type GetStatusPage = StatusPagesRead;

// Incidents.
pub type ListIncidents = IncidentsRead;
pub type GetIncident = IncidentsRead;
pub type CreateIncident = IncidentsWrite;
pub type UpdateIncident = IncidentsWrite;
pub type PostIncidentUpdate = IncidentsWrite;
pub type ResolveIncident = IncidentsWrite;
pub type PublishIncident = IncidentsWrite;

// Postmortems.
pub type ListPostmortems = PostmortemsRead;
pub type GetPostmortem = PostmortemsRead;
pub type CreatePostmortem = PostmortemsWrite;
pub type PublishPostmortem = PostmortemsWrite;

// Billing (session only: `billing:manage`, owners).
pub type GetBillingSubscription = BillingManage;
pub type GetBillingUsage = BillingManage;
pub type ListBillingPlans = BillingManage;
pub type CreateBillingCheckout = BillingManage;
pub type CreateBillingPortal = BillingManage;
