//! Telling people about incidents: `incident.created`, `incident.updated` and
//! `incident.resolved` go to the workspace's notification channels whose `events` list them
//! (enabled ones; `data` is `{"statusPage", "incident", "update"}`, the update null when the
//! write added none), and the news of published incidents goes to the page's subscribers by
//! email (`super::subscriber_mail`).
//!
//! [`tell`] is the one entry point for every incident write, whoever makes it: the incident
//! operations of the API (`domain::incidents`) and the incidents a monitor's alert opens and
//! resolves (`super::auto_incidents`, inside the status transition). Both call it inside the
//! transaction that writes the incident, so the notifications exist exactly when the write
//! does, and both get the same events ([`news_events`]) with the same `data`
//! (`super::incident_view`).

use serde_json::{json, Value};

use super::event::AlertEvent;
use super::incident_view::{incident_record, update_record, IncidentStatus, IncidentVisibility};
use super::outbox::{self, Notification};
use super::subscriber_mail::{self, SubscriberLinks};
use crate::store;
use crate::store::incidents::{IncidentRow, UpdateRow};
use crate::store::monitor_channels as routing;

/// Which events an incident write makes (pure): the channels' event, always
/// (`incident.created` for a new incident, `incident.resolved` when it becomes RESOLVED,
/// `incident.updated` for any other change), and the subscribers' event, only for news the
/// public may see — the incident is PUBLISHED and not archived after the write:
/// `incident.created` when it becomes public (filed PUBLISHED, or published later),
/// `incident.resolved` when a public incident is resolved, `incident.updated` when an update is
/// posted to it. Edits of a public incident's title or components email nobody, and a
/// SCHEDULED incident whose time comes is shown on the page but not emailed (no write happens
/// then).
pub fn news_events(
    before: Option<&IncidentRow>,
    after: &IncidentRow,
    update_added: bool,
) -> (AlertEvent, Option<AlertEvent>) {
    // `tell` has read both rows already (a corrupt one tells nothing), so a word that does
    // not parse here matches nothing rather than standing for some other word.
    let resolved =
        |r: &IncidentRow| r.status.parse::<IncidentStatus>() == Ok(IncidentStatus::Resolved);
    let public = |r: &IncidentRow| {
        r.visibility.parse::<IncidentVisibility>() == Ok(IncidentVisibility::Published)
            && r.archived_at.is_none()
    };
    let became_resolved = resolved(after) && !before.is_some_and(resolved);
    let webhook = match before {
        None => AlertEvent::IncidentCreated,
        Some(_) if became_resolved => AlertEvent::IncidentResolved,
        Some(_) => AlertEvent::IncidentUpdated,
    };
    let email = if !public(after) {
        None
    } else if !before.is_some_and(public) {
        Some(AlertEvent::IncidentCreated)
    } else if became_resolved {
        Some(AlertEvent::IncidentResolved)
    } else if update_added {
        Some(AlertEvent::IncidentUpdated)
    } else {
        None
    };
    (webhook, email)
}

/// Enqueues what an incident write tells channels and subscribers ([`news_events`]) in the
/// write's transaction; returns how many deliveries it queued (the caller wakes the worker
/// after its commit). `before` is the incident as it was (`None` for a new one), `update` the
/// update this write added; `data` is `{"statusPage", "incident", "update"}`.
pub async fn tell(
    conn: &mut sqlx::AnyConnection,
    links: &SubscriberLinks,
    before: Option<&IncidentRow>,
    after: &IncidentRow,
    update: Option<&UpdateRow>,
    now: i64,
) -> Result<usize, sqlx::Error> {
    // A row this build cannot read (reported where it was read) tells nobody anything: the
    // news would have to guess what the incident says.
    let (Ok(incident), Ok(update)) = (
        incident_record(after),
        update.map(update_record).transpose(),
    ) else {
        return Ok(0);
    };
    if before.is_some_and(|b| incident_record(b).is_err()) {
        return Ok(0);
    }
    let (webhook, email) = news_events(before, after, update.is_some());
    let page = store::status_pages::get(&mut *conn, &after.workspace_id, &after.status_page_id)
        .await?
        .map(|p| subscriber_mail::page_data(&p.id, &p.name, &p.slug, links));
    let affected = after.component_ids();
    let news = IncidentNews {
        workspace_id: &after.workspace_id,
        page_id: &after.status_page_id,
        webhook,
        email,
        affected: &affected,
        data: json!({
            "statusPage": page,
            "incident": incident,
            "update": update,
        }),
        now,
    };
    enqueue(conn, &news).await
}

/// What one incident write tells.
#[derive(Debug, Clone)]
pub struct IncidentNews<'a> {
    pub workspace_id: &'a str,
    pub page_id: &'a str,
    /// The channels' event (every incident write has one).
    pub webhook: AlertEvent,
    /// The subscribers' event, when the write is news for the public.
    pub email: Option<AlertEvent>,
    /// The incident's components (subscribers who chose components hear of these only).
    pub affected: &'a [String],
    pub data: Value,
    pub now: i64,
}

/// Enqueues the webhook events and subscriber emails of `news` in the caller's transaction;
/// returns how many deliveries it queued (the caller wakes the worker after its commit).
pub async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    news: &IncidentNews<'_>,
) -> Result<usize, sqlx::Error> {
    let mut n = 0;
    let event = news.webhook.as_str();
    for t in routing::workspace_targets(&mut *conn, news.workspace_id).await? {
        if !t.takes(event) {
            continue;
        }
        outbox::enqueue(
            conn,
            &Notification {
                workspace_id: news.workspace_id,
                channel_id: &t.id,
                alert_id: None,
                event: news.webhook,
                data: &news.data,
                at_ms: news.now,
            },
        )
        .await?;
        n += 1;
    }
    if let Some(email) = news.email {
        n += subscriber_mail::enqueue_incident(
            conn,
            news.workspace_id,
            news.page_id,
            email,
            news.affected,
            &news.data,
            news.now,
        )
        .await?;
    }
    Ok(n)
}
