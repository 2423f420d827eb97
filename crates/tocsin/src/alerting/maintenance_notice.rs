//! Telling status page subscribers about scheduled maintenance.
//!
//! **What people get.** A maintenance window belongs to a monitor; the pages that show that
//! monitor (published pages with a component over it) announce it on their "Scheduled
//! maintenance" list from [`HORIZON_MS`] before an occurrence starts until it ends. The
//! moment a window appears there is its announcement: the verified subscribers of those pages
//! (those who chose components only when one of the page's components over the monitor is
//! among them) get one "scheduled maintenance" email, queued as a subscriber delivery
//! (`super::subscriber_mail`) in the same outbox as incident news, so the same worker, retries
//! and history serve it.
//!
//! **Once.** An announcement is made once per window and schedule: the key is the monitor and
//! the schedule fields (first start, end, zone, recurrence), recorded in
//! `maintenance_announcements` in the transaction that queues the emails; whoever inserts the
//! key first sends, anyone else finds it and sends nothing. Editing the title or description
//! mails nobody; moving the window (or pointing it at another monitor) is news and is
//! announced again. A recurring window is announced once, for its first occurrence within the
//! horizon, the email saying how it repeats: mailing every night of a nightly window would
//! teach people to ignore the emails. No email is sent when an occurrence starts or ends (the
//! page shows it in progress), nor when a window is deleted.
//!
//! **When.** A window written (created or changed) with an occurrence already within the
//! horizon is announced in the window write's own transaction ([`announce`], called by
//! `domain::maintenance`). A window further away is announced by [`run`], which looks every
//! [`TICK`] on the scheduling node only (the scheduler lease, like the escalation timer), so
//! an announcement is at most a tick late, and a restart or another node taking the lease over
//! goes on from the durable keys.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::subscriber_mail::{self, SubscriberLinks};
use crate::clock::{from_ms, rfc3339};
use crate::cluster::lease::Role;
use crate::cx::Cx;
use crate::store::maintenance::{self, WindowRow};
use crate::store::status_pages;

/// How far ahead an occurrence is announced: the public pages list maintenance this far ahead
/// (the one figure both read lives in `tocsin-core`).
pub use tocsin_core::maintenance::ANNOUNCE_HORIZON_MS as HORIZON_MS;

/// How often the scheduling node looks for windows entering the horizon.
pub const TICK: Duration = Duration::from_secs(30);

/// The key an announcement is made once for: the window's monitor and schedule (not its
/// title or description). Pure.
pub fn schedule_key(w: &WindowRow) -> String {
    let text = format!(
        "{}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}",
        w.monitor_id,
        w.starts_at,
        w.ends_at,
        w.timezone,
        w.frequency,
        w.day_of_week,
        w.day_of_month,
        w.expression
    );
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The occurrence `[start, end)` to announce at `now_ms`: the first one in progress or
/// starting within [`HORIZON_MS`]. `None` when there is none (too far ahead, or over).
pub fn due_occurrence(w: &WindowRow, now_ms: i64) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let schedule = w.schedule().ok()?;
    schedule
        .occurrences(
            from_ms(now_ms),
            from_ms(now_ms.saturating_add(HORIZON_MS)),
            1,
        )
        .into_iter()
        .next()
}

/// Announces window `w` to the subscribers of the pages showing its monitor, if an occurrence
/// is due ([`due_occurrence`]) and its schedule was not announced yet; in the caller's
/// transaction. Returns how many emails it queued (the caller wakes the delivery worker after
/// its commit).
pub async fn announce(
    conn: &mut sqlx::AnyConnection,
    links: &SubscriberLinks,
    w: &WindowRow,
    now_ms: i64,
) -> Result<usize, sqlx::Error> {
    let Some((start, end)) = due_occurrence(w, now_ms) else {
        return Ok(0);
    };
    let pages = status_pages::published_showing(&mut *conn, &w.workspace_id, &w.monitor_id).await?;
    if pages.is_empty() {
        // Nobody to tell yet: a page that shows the monitor later still announces it.
        return Ok(0);
    }
    let key = schedule_key(w);
    if !maintenance::mark_announced(&mut *conn, w, &key, start.timestamp_millis(), now_ms).await? {
        return Ok(0);
    }
    let mut queued = 0;
    for p in &pages {
        let data = json!({
            "statusPage": subscriber_mail::page_data(&p.page_id, &p.name, &p.slug, links),
            "components": p.component_names,
            "maintenance": window_data(w, start, end),
        });
        queued += subscriber_mail::enqueue_maintenance(
            &mut *conn,
            &w.workspace_id,
            &p.page_id,
            &p.component_ids,
            &data,
            now_ms,
        )
        .await?;
    }
    tracing::info!(window = %w.id, pages = pages.len(), emails = queued, "maintenance announced");
    Ok(queued)
}

/// The `data.maintenance` of an announcement: the window and the occurrence announced.
fn window_data(w: &WindowRow, start: DateTime<Utc>, end: DateTime<Utc>) -> Value {
    json!({
        "id": w.id,
        "title": w.title,
        "description": w.description,
        "startsAt": rfc3339(start.timestamp_millis()),
        "endsAt": rfc3339(end.timestamp_millis()),
        "timezone": w.timezone,
        "recurring": w.frequency,
    })
}

/// Announces every window owed an announcement at `now_ms`; returns how many emails it queued.
/// Tests call it with a manual clock; [`run`] calls it on the scheduling node.
pub async fn run_due(core: &Cx, now_ms: i64) -> Result<usize, sqlx::Error> {
    let reader = core.db().reader();
    let done: HashSet<(String, String)> = maintenance::announced_keys(reader, now_ms)
        .await?
        .into_iter()
        .collect();
    let links = SubscriberLinks::new(core.config().public_url.as_str(), core.link_secret());
    let mut queued = 0;
    for w in maintenance::to_announce(reader, now_ms).await? {
        if done.contains(&(w.id.clone(), schedule_key(&w))) || due_occurrence(&w, now_ms).is_none()
        {
            continue;
        }
        let mut tx = core.db().begin().await?;
        // Read again in the transaction: the window may have changed or gone since the scan.
        let Some(w) = maintenance::get(&mut *tx, &w.workspace_id, &w.id).await? else {
            continue;
        };
        queued += announce(&mut tx, &links, &w, now_ms).await?;
        tx.commit().await?;
    }
    if queued > 0 {
        core.wake_deliveries();
    }
    Ok(queued)
}

/// Announces due windows every [`TICK`] while this node holds the scheduler role, until
/// `cancel`.
pub async fn run(core: Cx, role: Role, cancel: CancellationToken) {
    super::on_the_scheduling_node(
        core,
        role,
        cancel,
        TICK,
        "announce maintenance windows",
        |core, now| async move { run_due(&core, now).await },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> WindowRow {
        WindowRow {
            id: "w1".into(),
            workspace_id: "ws".into(),
            monitor_id: "m1".into(),
            title: "Database upgrade".into(),
            description: None,
            starts_at: 1_700_000_000_000,
            ends_at: 1_700_003_600_000,
            timezone: "UTC".into(),
            frequency: None,
            day_of_week: None,
            day_of_month: None,
            expression: None,
            exclude_from_uptime: 0,
            version: 1,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn the_key_follows_the_schedule_not_the_words() {
        let w = window();
        let mut renamed = w.clone();
        renamed.title = "Another title".into();
        renamed.description = Some("More words".into());
        assert_eq!(schedule_key(&w), schedule_key(&renamed));
        let mut moved = w.clone();
        moved.starts_at += 60_000;
        assert_ne!(schedule_key(&w), schedule_key(&moved));
        let mut elsewhere = w.clone();
        elsewhere.monitor_id = "m2".into();
        assert_ne!(schedule_key(&w), schedule_key(&elsewhere));
    }

    #[test]
    fn an_occurrence_is_due_from_the_horizon_until_it_ends() {
        let w = window();
        let too_early = w.starts_at - HORIZON_MS - 1;
        assert_eq!(due_occurrence(&w, too_early), None);
        assert!(due_occurrence(&w, w.starts_at - HORIZON_MS + 1).is_some());
        assert!(due_occurrence(&w, w.starts_at + 1).is_some(), "in progress");
        assert_eq!(due_occurrence(&w, w.ends_at), None, "over");
    }
}
