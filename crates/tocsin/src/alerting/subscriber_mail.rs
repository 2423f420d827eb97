//! Email to status page subscribers: the confirmation of a new subscription, the news of
//! published incidents and scheduled maintenance, with the signed links they carry.
//!
//! **Why the deliveries table.** Subscriber email is queued as rows of `deliveries`, the
//! outbox channel notifications use, addressed to a subscriber instead of a channel (migration
//! `0013_subscribers.sql` makes `channel_id` nullable, adds `subscriber_id`, and a CHECK keeps
//! exactly one of the two). A sibling table would have needed its own claim, record and retry
//! queries and a second loop in the worker, or a worker generic over two tables, for rows
//! with the same lifecycle; with one table the delivery worker (`super::deliver`) claims,
//! retries on the same schedule, keeps the same history and shares `FOR UPDATE SKIP LOCKED`
//! between nodes with no second code path. Only the send step differs: it reads the
//! subscriber, refuses to mail one that unsubscribed, was suspended (its page turned private)
//! or was deleted since, and renders here. Suspended subscribers are not queued either.
//! The channel and alert histories filter by channel or alert, so these rows never show there.
//!
//! **Links.** Both are `auth::signed` tokens under the server's link secret (every node checks
//! them), prefixed by what they do so that one can never pass as the other (or as an alert
//! acknowledgement): `subv:<id>` verifies, for [`VERIFY_LIFETIME_MS`] after the subscription
//! was asked for; `subu:<id>` unsubscribes, for [`UNSUBSCRIBE_LIFETIME_MS`] after the email
//! carrying it was sent. Every email carries the unsubscribe link in its body and in
//! `List-Unsubscribe` with `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058: mail
//! clients unsubscribe by POSTing to it).
//!
//! **When.** Subscribers hear of an incident when it becomes public (created PUBLISHED, or
//! published later: `incident.created`), when an update is posted to a published incident
//! (`incident.updated`), and when a published incident is resolved (`incident.resolved`); see
//! `alerting::incident_notify` (for the API's incidents and the automatic ones alike). A
//! subscriber who chose components hears only of incidents naming one of them. Scheduled
//! maintenance is announced once per window schedule when it enters the page's maintenance
//! list (`super::maintenance_notice` decides when; [`MAINTENANCE_EVENT`]), to subscribers of
//! the whole page or of a component over the window's monitor.

use std::sync::Arc;

use maud::{html, Markup, DOCTYPE};
use serde_json::{json, Value};

use super::event::AlertEvent;
use super::outbox::envelope;
use crate::auth::signed::{self, Verify};
use crate::ids::new_id;
use crate::store::corrupt::stored_text;
use crate::store::deliveries::{self, NewDelivery};
use crate::store::subscribers::{self, SubscriberRow};

/// How long a confirmation link works after the subscription was asked for.
pub const VERIFY_LIFETIME_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// How long an unsubscribe link works after its email was sent (each email carries a fresh one).
pub const UNSUBSCRIBE_LIFETIME_MS: i64 = 365 * 24 * 60 * 60 * 1000;

/// The public paths the links point to (documented in the API; they answer HTML pages).
pub const VERIFY_PATH: &str = "/api/v1/subscribers/verify";
pub const UNSUBSCRIBE_PATH: &str = "/api/v1/subscribers/unsubscribe";

/// The `event` of a confirmation delivery (not a channel event: channels never see it).
pub const CONFIRM_EVENT: &str = "subscription.confirm";

/// The `event` of a maintenance announcement (subscribers only: channels never see it).
pub const MAINTENANCE_EVENT: &str = "maintenance.scheduled";

/// What a subscriber email is about: the `event` of a delivery addressed to a subscriber,
/// stored as its text ([`SubscriberEvent::as_str`]). A stored text none spells is a corrupt
/// row (`deliveries.event`), which the delivery worker reports and fails for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriberEvent {
    /// The confirmation of a new subscription ([`CONFIRM_EVENT`]).
    Confirm,
    /// A maintenance announcement ([`MAINTENANCE_EVENT`]).
    Maintenance,
    /// The incident news subscribers hear of, spelled as their webhook events.
    IncidentCreated,
    IncidentUpdated,
    IncidentResolved,
}

impl SubscriberEvent {
    pub const ALL: [SubscriberEvent; 5] = [
        SubscriberEvent::Confirm,
        SubscriberEvent::Maintenance,
        SubscriberEvent::IncidentCreated,
        SubscriberEvent::IncidentUpdated,
        SubscriberEvent::IncidentResolved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SubscriberEvent::Confirm => CONFIRM_EVENT,
            SubscriberEvent::Maintenance => MAINTENANCE_EVENT,
            SubscriberEvent::IncidentCreated => AlertEvent::IncidentCreated.as_str(),
            SubscriberEvent::IncidentUpdated => AlertEvent::IncidentUpdated.as_str(),
            SubscriberEvent::IncidentResolved => AlertEvent::IncidentResolved.as_str(),
        }
    }

    /// The email of an incident event; `None` for an event subscribers are never emailed.
    pub fn of_incident(event: AlertEvent) -> Option<SubscriberEvent> {
        match event {
            AlertEvent::IncidentCreated => Some(SubscriberEvent::IncidentCreated),
            AlertEvent::IncidentUpdated => Some(SubscriberEvent::IncidentUpdated),
            AlertEvent::IncidentResolved => Some(SubscriberEvent::IncidentResolved),
            _ => None,
        }
    }
}

stored_text!(SubscriberEvent, "subscriber email event");

const VERIFY_PREFIX: &str = "subv:";
const UNSUBSCRIBE_PREFIX: &str = "subu:";

/// What a link does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Verify,
    Unsubscribe,
}

impl LinkKind {
    fn prefix(self) -> &'static str {
        match self {
            LinkKind::Verify => VERIFY_PREFIX,
            LinkKind::Unsubscribe => UNSUBSCRIBE_PREFIX,
        }
    }
}

/// The server's address and link secret.
#[derive(Clone)]
pub struct SubscriberLinks {
    base: String,
    secret: Arc<[u8]>,
}

impl SubscriberLinks {
    pub fn new(public_url: &str, secret: &[u8]) -> SubscriberLinks {
        SubscriberLinks {
            base: public_url.trim_end_matches('/').to_string(),
            secret: Arc::from(secret),
        }
    }

    pub fn token(&self, kind: LinkKind, subscriber_id: &str, expires_ms: i64) -> String {
        signed::sign(
            &self.secret,
            &format!("{}{subscriber_id}", kind.prefix()),
            expires_ms,
        )
    }

    /// The confirmation link of a subscription asked for at `asked_ms`.
    pub fn verify_url(&self, subscriber_id: &str, asked_ms: i64) -> String {
        let t = self.token(
            LinkKind::Verify,
            subscriber_id,
            asked_ms.saturating_add(VERIFY_LIFETIME_MS),
        );
        format!("{}{VERIFY_PATH}?token={t}", self.base)
    }

    /// The unsubscribe link of an email sent at `now_ms`.
    pub fn unsubscribe_url(&self, subscriber_id: &str, now_ms: i64) -> String {
        let t = self.token(
            LinkKind::Unsubscribe,
            subscriber_id,
            now_ms.saturating_add(UNSUBSCRIBE_LIFETIME_MS),
        );
        format!("{}{UNSUBSCRIBE_PATH}?token={t}", self.base)
    }

    /// The public page of `slug`.
    pub fn page_url(&self, slug: &str) -> String {
        format!("{}/s/{slug}", self.base)
    }

    /// The subscriber a token of `kind` names, if its signature holds and it has not expired.
    pub fn check(&self, kind: LinkKind, token: &str, now_ms: i64) -> Verify {
        match signed::verify(&self.secret, token, now_ms) {
            Verify::Valid(payload) => match payload.strip_prefix(kind.prefix()) {
                Some(id) if !id.is_empty() => Verify::Valid(id.to_string()),
                _ => Verify::Invalid,
            },
            other => other,
        }
    }
}

impl From<&super::ack_link::Links> for SubscriberLinks {
    /// The same address and secret as the alert links: what the status transition path holds.
    fn from(l: &super::ack_link::Links) -> SubscriberLinks {
        SubscriberLinks::new(l.base(), l.secret())
    }
}

/// The page facts every subscriber email carries (`data.statusPage`).
pub fn page_data(page_id: &str, name: &str, slug: &str, links: &SubscriberLinks) -> Value {
    json!({"id": page_id, "name": name, "slug": slug, "url": links.page_url(slug)})
}

async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    s: &SubscriberRow,
    event: SubscriberEvent,
    payload: &str,
    now: i64,
) -> Result<String, sqlx::Error> {
    let message_id = format!("msg_{}", new_id());
    deliveries::enqueue(
        conn,
        &NewDelivery {
            workspace_id: &s.workspace_id,
            channel_id: None,
            subscriber_id: Some(&s.id),
            alert_id: None,
            event: event.as_str(),
            message_id: &message_id,
            payload,
            now,
        },
    )
    .await
}

/// Queues the confirmation email of `s` in the caller's transaction. `page` is
/// [`page_data`]; `component_names` are the components chosen (empty for the whole page).
pub async fn enqueue_confirmation(
    conn: &mut sqlx::AnyConnection,
    s: &SubscriberRow,
    page: Value,
    component_names: &[String],
    now: i64,
) -> Result<String, sqlx::Error> {
    let body = json!({
        "type": CONFIRM_EVENT,
        "timestamp": crate::clock::rfc3339(now),
        "data": {"statusPage": page, "components": component_names, "askedAt": now},
    });
    enqueue(conn, s, SubscriberEvent::Confirm, &body.to_string(), now).await
}

/// Queues `event` (an `incident.*` event; `data` holds `statusPage`, `incident` and `update`)
/// for every active subscriber of the page concerned by the incident's components, in the
/// caller's transaction. Returns how many emails it queued (none for an event that is no
/// incident news: subscribers are emailed nothing else).
pub async fn enqueue_incident(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    page_id: &str,
    event: AlertEvent,
    affected: &[String],
    data: &Value,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let Some(email) = SubscriberEvent::of_incident(event) else {
        return Ok(0);
    };
    let targets = subscribers::active(&mut *conn, ws, page_id).await?;
    let payload = envelope(event, now, data);
    let mut n = 0;
    for s in targets.iter().filter(|s| s.concerned_by(affected)) {
        enqueue(conn, s, email, &payload, now).await?;
        n += 1;
    }
    Ok(n)
}

/// Queues a maintenance announcement (`data` holds `statusPage`, `components` and
/// `maintenance`) for every active subscriber of the page concerned by `components` (the
/// page's components over the window's monitor), in the caller's transaction. Returns how
/// many emails it queued.
pub async fn enqueue_maintenance(
    conn: &mut sqlx::AnyConnection,
    ws: &str,
    page_id: &str,
    components: &[String],
    data: &Value,
    now: i64,
) -> Result<usize, sqlx::Error> {
    let targets = subscribers::active(&mut *conn, ws, page_id).await?;
    let body = json!({
        "type": MAINTENANCE_EVENT,
        "timestamp": crate::clock::rfc3339(now),
        "data": data,
    });
    let payload = body.to_string();
    let mut n = 0;
    for s in targets.iter().filter(|s| s.concerned_by(components)) {
        enqueue(conn, s, SubscriberEvent::Maintenance, &payload, now).await?;
        n += 1;
    }
    Ok(n)
}

/// A moment of a maintenance announcement in the window's zone: `Fri 27 Nov 2026 02:00 CET`
/// (UTC when the zone does not parse).
fn local_time(rfc: &str, zone: &str) -> String {
    let tz: chrono_tz::Tz = zone.parse().unwrap_or(chrono_tz::UTC);
    match chrono::DateTime::parse_from_rfc3339(rfc) {
        Ok(t) => t
            .with_timezone(&tz)
            .format("%a %-d %b %Y %H:%M %Z")
            .to_string(),
        Err(_) => rfc.to_string(),
    }
}

/// The maintenance announcement of a delivery.
fn maintenance_email(
    data: &Value,
    page_name: &str,
    page_url: &str,
    unsubscribe_url: String,
) -> SubscriberEmail {
    let title = text_at(data, &["maintenance", "title"]);
    let description = text_at(data, &["maintenance", "description"]);
    let zone = text_at(data, &["maintenance", "timezone"]);
    let from = local_time(&text_at(data, &["maintenance", "startsAt"]), &zone);
    let to = local_time(&text_at(data, &["maintenance", "endsAt"]), &zone);
    let components: Vec<String> = data
        .get("components")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let repeats = match text_at(data, &["maintenance", "recurring"]).as_str() {
        "daily" => Some("every day"),
        "weekly" => Some("every week"),
        "monthly" => Some("every month"),
        "cron" => Some("on a regular schedule"),
        _ => None,
    };
    let subject = format!("[{page_name}] Scheduled maintenance: {title}");
    let when = format!("From {from} to {to}");
    let affected = format!("Affected: {}", components.join(", "));
    let repeat_line = repeats.map(|r| {
        format!("This maintenance repeats {r} at the same time; this is the only email about it unless its schedule changes.")
    });
    let mut text = format!(
        "Scheduled maintenance on {page_name}: {title}
{when}
{affected}
"
    );
    if let Some(r) = &repeat_line {
        text.push_str(&format!(
            "{r}
"
        ));
    }
    if !description.is_empty() {
        text.push_str(&format!(
            "
{description}
"
        ));
    }
    text.push_str(&format!(
        "
Status page: {page_url}

Unsubscribe: {unsubscribe_url}
"
    ));
    let html = shell(
        &subject,
        html! {
            h1 { "Scheduled maintenance: " (title) }
            p { strong { (when) } }
            p { (affected) }
            @if let Some(r) = &repeat_line { p { (r) } }
            @if !description.is_empty() {
                @for line in description.lines() { p { (line) } }
            }
            p { a href=(page_url) { "View the status page of " (page_name) } }
        },
        &unsubscribe_url,
    );
    SubscriberEmail {
        subject,
        text,
        html,
        unsubscribe_url,
    }
}

/// One email, rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriberEmail {
    pub subject: String,
    pub text: String,
    pub html: String,
    /// For `List-Unsubscribe`.
    pub unsubscribe_url: String,
}

fn text_at(v: &Value, path: &[&str]) -> String {
    let mut cur = v;
    for p in path {
        match cur.get(*p) {
            Some(next) => cur = next,
            None => return String::new(),
        }
    }
    cur.as_str().unwrap_or_default().to_string()
}

fn shell(title: &str, body: Markup, unsubscribe_url: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) } }
            body style="font-family: sans-serif; max-width: 40em; margin: auto; padding: 1em" {
                (body)
                hr;
                p style="font-size: smaller; color: #555" {
                    "You receive this because this address subscribed to this status page. "
                    a href=(unsubscribe_url) { "Unsubscribe" }
                }
            }
        }
    }
    .into_string()
}

/// Renders the email of a delivery to subscriber `subscriber_id`. Pure: `now_ms` dates the
/// unsubscribe link. An error only for a payload that is not JSON.
pub fn render(
    event: SubscriberEvent,
    payload: &str,
    subscriber_id: &str,
    links: &SubscriberLinks,
    now_ms: i64,
) -> Result<SubscriberEmail, serde_json::Error> {
    let body: Value = serde_json::from_str(payload)?;
    let data = body.get("data").cloned().unwrap_or(Value::Null);
    let page_name = text_at(&data, &["statusPage", "name"]);
    let page_url = text_at(&data, &["statusPage", "url"]);
    let unsubscribe_url = links.unsubscribe_url(subscriber_id, now_ms);
    let title = text_at(&data, &["incident", "title"]);
    let (subject, lead) = match event {
        SubscriberEvent::Confirm => {
            let asked = data
                .get("askedAt")
                .and_then(Value::as_i64)
                .unwrap_or(now_ms);
            let verify_url = links.verify_url(subscriber_id, asked);
            return Ok(confirmation_email(
                &data,
                &page_name,
                &page_url,
                &verify_url,
                unsubscribe_url,
            ));
        }
        SubscriberEvent::Maintenance => {
            return Ok(maintenance_email(
                &data,
                &page_name,
                &page_url,
                unsubscribe_url,
            ));
        }
        SubscriberEvent::IncidentCreated => (format!("[{page_name}] {title}"), "New incident"),
        SubscriberEvent::IncidentUpdated => {
            (format!("[{page_name}] Update: {title}"), "Incident update")
        }
        SubscriberEvent::IncidentResolved => (
            format!("[{page_name}] Resolved: {title}"),
            "Incident resolved",
        ),
    };
    let status = text_at(&data, &["incident", "status"]);
    let message = text_at(&data, &["update", "message"]);
    let mut text = format!("{lead} on {page_name}: {title}\nStatus: {status}\n");
    if !message.is_empty() {
        text.push_str(&format!("\n{message}\n"));
    }
    text.push_str(&format!(
        "\nStatus page: {page_url}\n\nUnsubscribe: {unsubscribe_url}\n"
    ));
    let html = shell(
        &subject,
        html! {
            h1 { (lead) ": " (title) }
            p { "Status: " strong { (status) } }
            @if !message.is_empty() {
                @for line in message.lines() { p { (line) } }
            }
            p { a href=(page_url) { "View the status page of " (page_name) } }
        },
        &unsubscribe_url,
    );
    Ok(SubscriberEmail {
        subject,
        text,
        html,
        unsubscribe_url,
    })
}

/// The confirmation email of a new subscription.
fn confirmation_email(
    data: &Value,
    page_name: &str,
    page_url: &str,
    verify_url: &str,
    unsubscribe_url: String,
) -> SubscriberEmail {
    let components: Vec<String> = data
        .get("components")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let scope = if components.is_empty() {
        "every incident on the page".to_string()
    } else {
        format!("incidents affecting {}", components.join(", "))
    };
    let subject = format!("Confirm your subscription to {page_name}");
    let text = format!(
        "Someone, hopefully you, asked to receive email about {scope} of the status page \
         {page_name} ({page_url}).\n\nConfirm the subscription: {verify_url}\n\nThe link \
         works for 7 days. If you did not ask for this, ignore this email: nothing will be \
         sent.\n\nUnsubscribe: {unsubscribe_url}\n"
    );
    let html = shell(
        &subject,
        html! {
            h1 { (subject) }
            p { "Someone, hopefully you, asked to receive email about " (scope)
                " of the status page " a href=(page_url) { (page_name) } "." }
            p { a href=(verify_url) { "Confirm the subscription" } }
            p { "The link works for 7 days. If you did not ask for this, ignore this email: nothing will be sent." }
        },
        &unsubscribe_url,
    );
    SubscriberEmail {
        subject,
        text,
        html,
        unsubscribe_url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_their_stored_text() {
        crate::store::corrupt::assert_round_trip(&SubscriberEvent::ALL, SubscriberEvent::as_str);
        assert_eq!(
            SubscriberEvent::of_incident(AlertEvent::IncidentResolved),
            Some(SubscriberEvent::IncidentResolved)
        );
        assert_eq!(SubscriberEvent::of_incident(AlertEvent::AlertOpened), None);
    }

    #[test]
    fn links_name_their_subscriber_and_cannot_stand_for_each_other() {
        let l = SubscriberLinks::new("http://x/", b"secret");
        let v = l.token(LinkKind::Verify, "s1", 1_000);
        assert_eq!(
            l.check(LinkKind::Verify, &v, 999),
            Verify::Valid("s1".into())
        );
        assert_eq!(l.check(LinkKind::Verify, &v, 1_000), Verify::Expired);
        assert_eq!(l.check(LinkKind::Unsubscribe, &v, 0), Verify::Invalid);
        let ack = signed::sign(b"secret", "ack:s1", 1_000);
        assert_eq!(l.check(LinkKind::Unsubscribe, &ack, 0), Verify::Invalid);
        assert!(l
            .unsubscribe_url("s1", 0)
            .starts_with("http://x/api/v1/subscribers/unsubscribe?token="));
    }

    #[test]
    fn incident_mail_escapes_text_and_carries_the_unsubscribe_link() {
        let l = SubscriberLinks::new("http://x", b"secret");
        let body = envelope(
            AlertEvent::IncidentUpdated,
            0,
            &json!({"statusPage": {"name": "Acme", "url": "http://x/s/acme"},
                   "incident": {"title": "<b>API</b>", "status": "MONITORING"},
                   "update": {"message": "Fixed <script>"}}),
        );
        let m = render(SubscriberEvent::IncidentUpdated, &body, "s1", &l, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.subject, "[Acme] Update: <b>API</b>");
        assert!(m.html.contains("&lt;b&gt;API&lt;/b&gt;"));
        assert!(!m.html.contains("<script>"));
        assert!(m.text.contains(&m.unsubscribe_url));
        assert!(m.html.contains("/api/v1/subscribers/unsubscribe?token="));
        assert!(render(SubscriberEvent::IncidentUpdated, "{not json", "s1", &l, 0).is_err());
    }

    #[test]
    fn maintenance_mail_gives_the_times_in_the_windows_zone_and_says_it_repeats() {
        let l = SubscriberLinks::new("http://x", b"secret");
        let body = json!({"type": MAINTENANCE_EVENT, "timestamp": "2026-11-26T00:00:00.000Z",
            "data": {"statusPage": {"name": "Acme", "url": "http://x/s/acme"},
                     "components": ["API"],
                     "maintenance": {"title": "<i>DB</i> upgrade", "description": "Read-only.",
                                     "startsAt": "2026-11-27T01:00:00.000Z",
                                     "endsAt": "2026-11-27T02:00:00.000Z",
                                     "timezone": "Europe/Berlin", "recurring": "weekly"}}})
        .to_string();
        let m = render(SubscriberEvent::Maintenance, &body, "s1", &l, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.subject, "[Acme] Scheduled maintenance: <i>DB</i> upgrade");
        assert!(
            m.text
                .contains("From Fri 27 Nov 2026 02:00 CET to Fri 27 Nov 2026 03:00 CET"),
            "{}",
            m.text
        );
        assert!(m.text.contains("Affected: API") && m.text.contains("repeats every week"));
        assert!(m.html.contains("&lt;i&gt;DB&lt;/i&gt;") && m.text.contains(&m.unsubscribe_url));
    }
}
