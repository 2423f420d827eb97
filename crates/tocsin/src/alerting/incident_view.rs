//! The API shape of a status page incident and its updates (`Incident`, `IncidentUpdate`,
//! `IncidentWithUpdates` of the interface, exactly) and the one mapping from stored rows to it.
//!
//! It lives here, below the domain, because three places render the same record: the REST
//! answers and MCP tools (`domain::incidents`, which re-exports everything here), the public
//! pages (`public/`), and the `data.incident` of every `incident.*` notification — including
//! those of incidents a monitor's alert opens on its own (`super::auto_incidents`), which runs
//! inside the status transition and may not import the domain. One mapping, so a webhook
//! consumer and an API client never see two shapes of one incident.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::schema::Timestamp;
use crate::store;
use crate::store::corrupt::{self, stored_text, CorruptRow};
use crate::store::incidents::{IncidentRow, UpdateRow};

/// Where the incident stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IncidentStatus {
    Investigating,
    Identified,
    Monitoring,
    Resolved,
}

impl IncidentStatus {
    pub const ALL: [IncidentStatus; 4] = [
        IncidentStatus::Investigating,
        IncidentStatus::Identified,
        IncidentStatus::Monitoring,
        IncidentStatus::Resolved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IncidentStatus::Investigating => "INVESTIGATING",
            IncidentStatus::Identified => "IDENTIFIED",
            IncidentStatus::Monitoring => "MONITORING",
            IncidentStatus::Resolved => "RESOLVED",
        }
    }
}

stored_text!(IncidentStatus, "incident status");

/// How bad the incident is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IncidentSeverity {
    None,
    Minor,
    Major,
    Critical,
}

impl IncidentSeverity {
    pub const ALL: [IncidentSeverity; 4] = [
        IncidentSeverity::None,
        IncidentSeverity::Minor,
        IncidentSeverity::Major,
        IncidentSeverity::Critical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IncidentSeverity::None => "NONE",
            IncidentSeverity::Minor => "MINOR",
            IncidentSeverity::Major => "MAJOR",
            IncidentSeverity::Critical => "CRITICAL",
        }
    }
}

stored_text!(IncidentSeverity, "incident severity");

/// Who sees the incident: DRAFT only the workspace, PUBLISHED the public page too, SCHEDULED
/// the public page once `scheduledFor` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IncidentVisibility {
    Draft,
    Published,
    Scheduled,
}

impl IncidentVisibility {
    pub const ALL: [IncidentVisibility; 3] = [
        IncidentVisibility::Draft,
        IncidentVisibility::Published,
        IncidentVisibility::Scheduled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IncidentVisibility::Draft => "DRAFT",
            IncidentVisibility::Published => store::incidents::PUBLISHED,
            IncidentVisibility::Scheduled => store::incidents::SCHEDULED,
        }
    }
}

stored_text!(IncidentVisibility, "incident visibility");

/// The typed status of a stored incident; an unknown word is a (reported) corrupt row.
pub fn status_of(r: &IncidentRow) -> Result<IncidentStatus, CorruptRow> {
    corrupt::parse("incidents", &r.id, "status", &r.status)
}

/// The typed visibility of a stored incident; an unknown word is a (reported) corrupt row,
/// never read as DRAFT or anything else.
pub fn visibility_of(r: &IncidentRow) -> Result<IncidentVisibility, CorruptRow> {
    corrupt::parse("incidents", &r.id, "visibility", &r.visibility)
}

/// An incident on a status page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Incident {
    pub id: String,
    pub status_page_id: String,
    pub workspace_id: String,
    pub title: String,
    pub status: IncidentStatus,
    pub severity: IncidentSeverity,
    pub visibility: IncidentVisibility,
    /// Components of the incident's page.
    pub affected_component_ids: Vec<String>,
    /// The monitor whose alert opened it, for an auto-generated incident.
    pub source_monitor_id: Option<String>,
    /// Opened by a monitor's alert rather than by a person.
    pub auto_generated: bool,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    #[schemars(with = "Timestamp")]
    pub updated_at: String,
    /// Set while the status is RESOLVED.
    #[schemars(with = "Option<Timestamp>")]
    pub resolved_at: Option<String>,
    /// Set while the visibility is PUBLISHED.
    #[schemars(with = "Option<Timestamp>")]
    pub published_at: Option<String>,
    /// Set while the visibility is SCHEDULED: when the public page starts showing it.
    #[schemars(with = "Option<Timestamp>")]
    pub scheduled_for: Option<String>,
    /// When it was archived; archived incidents leave the public page.
    #[schemars(with = "Option<Timestamp>")]
    pub archived_at: Option<String>,
}

/// One message on an incident's timeline; its `status` is what the incident moved to.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct IncidentUpdate {
    pub id: String,
    pub incident_id: String,
    pub message: String,
    pub status: IncidentStatus,
    /// Written by the service (a resolve or reopen without a message), not by a person.
    pub system_generated: bool,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    /// Updates are not edited: always null for now.
    #[schemars(with = "Option<Timestamp>")]
    pub updated_at: Option<String>,
}

/// One page of incidents and how many match the filters in all.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct IncidentList {
    pub incidents: Vec<Incident>,
    /// Incidents matching the filters, across all pages.
    pub total: i64,
}

/// An incident and its updates, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct IncidentWithUpdates {
    pub incident: Incident,
    pub updates: Vec<IncidentUpdate>,
}

/// The API shape of a stored incident; a status, severity or visibility this build cannot
/// read is a (reported) corrupt row.
pub fn incident_record(r: &IncidentRow) -> Result<Incident, CorruptRow> {
    Ok(Incident {
        id: r.id.clone(),
        status_page_id: r.status_page_id.clone(),
        workspace_id: r.workspace_id.clone(),
        title: r.title.clone(),
        status: status_of(r)?,
        severity: corrupt::parse("incidents", &r.id, "severity", &r.severity)?,
        visibility: visibility_of(r)?,
        affected_component_ids: r.component_ids(),
        source_monitor_id: r.source_monitor_id.clone(),
        auto_generated: r.auto_generated != 0,
        created_at: rfc3339(r.created_at),
        updated_at: rfc3339(r.updated_at),
        resolved_at: r.resolved_at.map(rfc3339),
        published_at: r.published_at.map(rfc3339),
        scheduled_for: r.scheduled_for.map(rfc3339),
        archived_at: r.archived_at.map(rfc3339),
    })
}

/// The API shape of a stored update; an unknown status is a (reported) corrupt row.
pub fn update_record(u: &UpdateRow) -> Result<IncidentUpdate, CorruptRow> {
    Ok(IncidentUpdate {
        id: u.id.clone(),
        incident_id: u.incident_id.clone(),
        message: u.message.clone(),
        status: corrupt::parse("incident_updates", &u.id, "status", &u.status)?,
        system_generated: u.system_generated != 0,
        created_at: rfc3339(u.created_at),
        updated_at: u.updated_at.map(rfc3339),
    })
}

/// An incident with its updates (given newest first, as the store reads them): the one
/// mapping the REST answers and the public pages share. Pure but for reporting a corrupt
/// row: the incident's own columns make the whole view fail; an update that cannot be read is
/// left out of its list (see [`crate::store::corrupt`]).
pub fn incident_view(
    row: &IncidentRow,
    updates: &[UpdateRow],
) -> Result<IncidentWithUpdates, CorruptRow> {
    Ok(IncidentWithUpdates {
        incident: incident_record(row)?,
        updates: corrupt::readable(updates.iter().map(update_record)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::corrupt::assert_round_trip;

    #[test]
    fn every_stored_word_round_trips_and_strangers_are_errors() {
        assert_round_trip(&IncidentStatus::ALL, IncidentStatus::as_str);
        assert_round_trip(&IncidentSeverity::ALL, IncidentSeverity::as_str);
        assert_round_trip(&IncidentVisibility::ALL, IncidentVisibility::as_str);
    }
}
