//! One consistent picture of a status page as the public sees it, built from the store in one
//! pass: the public summary (the `/summary` and embed answers) plus what only the HTML page
//! shows (per-day uptime bars, past incidents by day, postmortems). Every public answer about
//! a page is rendered from one snapshot, so a reader never sees half of a change.
//!
//! Statuses: a component shows its monitor's status on the page's five-value scale (DOWN is a
//! major outage, DEGRADED and CHANGED degraded, MAINTENANCE maintenance, anything else
//! operational), raised by the published, unresolved incidents that name it (CRITICAL a major
//! outage, MAJOR a partial one, MINOR degraded). The page is a major outage when every
//! component is; a partial outage when some component is down; otherwise the worst component.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, NaiveDate, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use schemars::JsonSchema;
use serde::Serialize;
use tocsin_core::{uptime_percent, Status};

use crate::clock::{from_ms, rfc3339};
use crate::cx::Cx;
use crate::domain::incidents::{incident_view, IncidentSeverity, IncidentWithUpdates};
use crate::domain::status_pages::branding::Branding;
use crate::domain::status_pages::{page_url, stored_branding};
use crate::schema::Timestamp;
use crate::store::{self, status_pages::PageRow};

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
/// How far ahead scheduled maintenance is listed: as far as it is announced to subscribers.
const MAINTENANCE_HORIZON_MS: i64 = tocsin_core::maintenance::ANNOUNCE_HORIZON_MS;
/// The most incidents one page shows (active and past together).
const MAX_INCIDENTS: i64 = 500;

/// A page's (or a component's) status on the public scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PageStatus {
    Operational,
    Maintenance,
    Degraded,
    PartialOutage,
    MajorOutage,
}

impl PageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PageStatus::Operational => "OPERATIONAL",
            PageStatus::Maintenance => "MAINTENANCE",
            PageStatus::Degraded => "DEGRADED",
            PageStatus::PartialOutage => "PARTIAL_OUTAGE",
            PageStatus::MajorOutage => "MAJOR_OUTAGE",
        }
    }

    /// Words for people.
    pub fn label(self) -> &'static str {
        match self {
            PageStatus::Operational => "Operational",
            PageStatus::Maintenance => "Under maintenance",
            PageStatus::Degraded => "Degraded performance",
            PageStatus::PartialOutage => "Partial outage",
            PageStatus::MajorOutage => "Major outage",
        }
    }

    fn of_monitor(s: Status, active: bool) -> PageStatus {
        if !active {
            return PageStatus::Operational;
        }
        match s {
            Status::Down => PageStatus::MajorOutage,
            Status::Degraded | Status::Changed => PageStatus::Degraded,
            Status::Maintenance => PageStatus::Maintenance,
            Status::Up | Status::Pending => PageStatus::Operational,
        }
    }

    /// What an active incident of this severity makes of the components it names.
    pub fn of_severity(severity: IncidentSeverity) -> PageStatus {
        match severity {
            IncidentSeverity::Critical => PageStatus::MajorOutage,
            IncidentSeverity::Major => PageStatus::PartialOutage,
            IncidentSeverity::Minor => PageStatus::Degraded,
            IncidentSeverity::None => PageStatus::Operational,
        }
    }
}

/// Uptime percentages over the last 24 hours, 7, 30 and 90 days (null without counted checks
/// or without a monitor).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[schemars(rename = "ComponentUptime")]
pub struct Uptime {
    #[serde(rename = "24h")]
    pub h24: Option<f64>,
    #[serde(rename = "7d")]
    pub d7: Option<f64>,
    #[serde(rename = "30d")]
    pub d30: Option<f64>,
    #[serde(rename = "90d")]
    pub d90: Option<f64>,
}

/// The page as the public summary names it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PublicStatusPage")]
pub struct PublicPage {
    pub name: String,
    pub slug: String,
    pub url: String,
    pub branding: Branding,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicComponent {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub group: Option<String>,
    pub status: PageStatus,
    pub uptime: Uptime,
}

/// A maintenance window active now or starting within 14 days, on the components whose
/// monitors it holds (its next occurrence, for a recurring window).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicMaintenance {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    #[schemars(with = "Timestamp")]
    pub starts_at: String,
    #[schemars(with = "Timestamp")]
    pub ends_at: String,
    /// True while it is going on.
    pub active: bool,
    pub component_ids: Vec<String>,
}

/// The public summary of a page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "PublicStatusSummary")]
pub struct Summary {
    pub page: PublicPage,
    pub status: PageStatus,
    pub components: Vec<PublicComponent>,
    /// Published, unresolved incidents, newest first, with their updates.
    pub active_incidents: Vec<IncidentWithUpdates>,
    pub scheduled_maintenance: Vec<PublicMaintenance>,
    /// When anything the summary shows last changed.
    #[schemars(with = "Timestamp")]
    pub updated_at: String,
}

/// One day of a component's uptime bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Day {
    pub date: NaiveDate,
    /// None when the day holds no counted check.
    pub uptime: Option<f64>,
    pub maintenance: bool,
}

/// A published postmortem as the page links it.
#[derive(Debug, Clone)]
pub struct PostmortemLink {
    pub id: String,
    pub incident_id: String,
    pub title: String,
}

/// Everything a public answer about one page is rendered from.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub page_id: String,
    pub summary: Summary,
    /// Per component (same order as `summary.components`), one entry per day, oldest first.
    pub bars: Vec<Vec<Day>>,
    /// Resolved published incidents in the page's history, newest first.
    pub past_incidents: Vec<IncidentWithUpdates>,
    pub postmortems: Vec<PostmortemLink>,
    pub timezone: Tz,
    pub history_days: i64,
    /// Milliseconds; `summary.updated_at` as a number (for `Last-Modified`).
    pub updated_at_ms: i64,
    /// The next moment (server clock, ms) the page changes by time alone, with no row
    /// changing: a scheduled incident's `scheduledFor`, a maintenance window's start or end.
    /// The rendered copy is not served past it.
    pub valid_until_ms: Option<i64>,
    /// Who may read the page.
    pub gate: super::access::Gate,
    /// Whether this server sends email (it has an SMTP relay): without it the page offers
    /// no subscribe form, since no confirmation could reach anyone.
    pub email: bool,
}

/// Builds the snapshot of a published page.
pub async fn build(cx: &Cx, page: &PageRow) -> Result<Snapshot, sqlx::Error> {
    let reader = cx.db().reader();
    let now = cx.clock().now_ms();
    let branding = stored_branding(page);
    let tz: Tz = branding.timezone.parse().unwrap_or(chrono_tz::UTC);
    let components = store::status_pages::components(reader, &page.id).await?;
    let monitor_ids: Vec<String> = components
        .iter()
        .filter_map(|c| c.monitor_id.clone())
        .collect();
    let monitors: HashMap<String, store::status_pages::MonitorState> =
        store::status_pages::monitor_states(reader, &page.workspace_id, &monitor_ids)
            .await?
            .into_iter()
            .map(|m| (m.id.clone(), m))
            .collect();
    let seqs: Vec<i64> = monitors.values().map(|m| m.seq).collect();

    // Uptime windows from whole rollup hours, and per-day figures in the page's zone.
    let hour = now - now.rem_euclid(HOUR_MS);
    let windows = [
        hour - 23 * HOUR_MS,
        hour - 7 * DAY_MS + HOUR_MS,
        hour - 30 * DAY_MS + HOUR_MS,
        hour - 90 * DAY_MS + HOUR_MS,
    ];
    let offset_ms = i64::from(
        tz.offset_from_utc_datetime(&from_ms(now).naive_utc())
            .fix()
            .local_minus_utc(),
    ) * 1000;
    let today = (now + offset_ms).div_euclid(DAY_MS);
    let first_day = today - page.history_days + 1;
    let from = (first_day * DAY_MS - offset_ms).min(windows[3]);
    let days = store::status_pages::daily_uptime(reader, &seqs, from, offset_ms).await?;
    let mut per_day: HashMap<i64, BTreeMap<i64, (i64, i64)>> = HashMap::new();
    for (seq, day, total, down) in days {
        per_day.entry(seq).or_default().insert(day, (total, down));
    }
    let uptime_windows = store::status_pages::window_uptime(reader, &seqs, &windows).await?;

    // Maintenance: which days of the bars held a window, and what is active or upcoming.
    let bars_from = from_ms(first_day * DAY_MS - offset_ms);
    let horizon = from_ms(now + MAINTENANCE_HORIZON_MS);
    let mut maintenance_days: HashMap<String, Vec<i64>> = HashMap::new();
    let mut upcoming = Vec::new();
    for w in store::maintenance::of_monitors(reader, &page.workspace_id, &monitor_ids).await? {
        let Ok(schedule) = w.schedule() else { continue };
        for (a, b) in schedule.occurrences(bars_from, from_ms(now), 400) {
            let (a, b) = (a.timestamp_millis(), b.timestamp_millis() - 1);
            for d in (a + offset_ms).div_euclid(DAY_MS)..=(b + offset_ms).div_euclid(DAY_MS) {
                maintenance_days
                    .entry(w.monitor_id.clone())
                    .or_default()
                    .push(d);
            }
        }
        if let Some(next) = schedule
            .occurrences(from_ms(now), horizon, 1)
            .into_iter()
            .next()
        {
            upcoming.push((w, next));
        }
    }

    // Incidents.
    let since = first_day * DAY_MS - offset_ms;
    let rows =
        store::incidents::public_for_page(reader, &page.id, now, since, MAX_INCIDENTS).await?;
    let mut updated_at_ms = page.updated_at;
    // An incident this build cannot read is reported and left off the page (see
    // `store::corrupt`): the page stays up.
    let incidents: Vec<IncidentWithUpdates> = rows
        .iter()
        .filter_map(|(row, updates)| {
            updated_at_ms = updated_at_ms.max(row.updated_at);
            incident_view(row, updates).ok()
        })
        .collect();
    let (active, past): (Vec<_>, Vec<_>) = incidents
        .into_iter()
        .partition(|i| i.incident.resolved_at.is_none());
    let postmortems = store::postmortems::published_for_page(reader, &page.id)
        .await?
        .into_iter()
        .map(|p| PostmortemLink {
            id: p.id,
            incident_id: p.incident_id,
            title: p.title,
        })
        .collect();

    let mut public_components = Vec::with_capacity(components.len());
    let mut bars = Vec::with_capacity(components.len());
    for c in &components {
        let monitor = c.monitor_id.as_ref().and_then(|id| monitors.get(id));
        let mut status = match monitor {
            Some(m) => {
                match store::corrupt::parse::<Status>("monitors", &m.id, "status", &m.status) {
                    Ok(s) => PageStatus::of_monitor(s, m.active != 0),
                    // Reported there; the component is left off the page rather than shown in a
                    // guessed state (see `store::corrupt`).
                    Err(_) => continue,
                }
            }
            None => PageStatus::Operational,
        };
        for i in &active {
            if i.incident.affected_component_ids.contains(&c.id) {
                status = status.max(PageStatus::of_severity(i.incident.severity));
            }
        }
        if let Some(m) = monitor {
            updated_at_ms = updated_at_ms.max(m.status_changed_at);
        }
        let uptime = monitor
            .and_then(|m| uptime_windows.get(&m.seq))
            .map(|w| Uptime {
                h24: uptime_percent(w[0].0, w[0].1),
                d7: uptime_percent(w[1].0, w[1].1),
                d30: uptime_percent(w[2].0, w[2].1),
                d90: uptime_percent(w[3].0, w[3].1),
            })
            .unwrap_or_default();
        let held = monitor
            .and_then(|m| maintenance_days.get(&m.id))
            .cloned()
            .unwrap_or_default();
        let rows = monitor.and_then(|m| per_day.get(&m.seq));
        bars.push(
            (first_day..=today)
                .map(|d| Day {
                    date: day_date(d),
                    uptime: rows
                        .and_then(|r| r.get(&d))
                        .and_then(|&(t, down)| uptime_percent(t, down)),
                    maintenance: held.contains(&d),
                })
                .collect(),
        );
        public_components.push(PublicComponent {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone(),
            group: c.group_name.clone(),
            status,
            uptime,
        });
    }

    let mut status = overall(&public_components);
    for i in &active {
        if i.incident.affected_component_ids.is_empty() {
            status = status.max(PageStatus::of_severity(i.incident.severity));
        }
    }

    let mut scheduled = Vec::new();
    for (w, (a, b)) in &upcoming {
        let component_ids: Vec<String> = components
            .iter()
            .filter(|c| c.monitor_id.as_deref() == Some(w.monitor_id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        scheduled.push(PublicMaintenance {
            id: w.id.clone(),
            title: w.title.clone(),
            description: w.description.clone(),
            starts_at: rfc3339(a.timestamp_millis()),
            ends_at: rfc3339(b.timestamp_millis()),
            active: a.timestamp_millis() <= now,
            component_ids,
        });
    }
    scheduled.sort_by(|x, y| x.starts_at.cmp(&y.starts_at).then(x.id.cmp(&y.id)));

    let next_incident = store::status_pages::next_scheduled_incident(reader, &page.id, now).await?;
    let valid_until_ms = upcoming
        .iter()
        .map(|(_, (a, b))| {
            let a = a.timestamp_millis();
            if a > now {
                a
            } else {
                b.timestamp_millis()
            }
        })
        .chain(next_incident)
        .filter(|&t| t > now)
        .min();

    Ok(Snapshot {
        page_id: page.id.clone(),
        summary: Summary {
            page: PublicPage {
                name: page.name.clone(),
                slug: page.slug.clone(),
                url: page_url(cx, &page.slug),
                branding,
            },
            status,
            components: public_components,
            active_incidents: active,
            scheduled_maintenance: scheduled,
            updated_at: rfc3339(updated_at_ms),
        },
        bars,
        past_incidents: past,
        postmortems,
        timezone: tz,
        history_days: page.history_days,
        updated_at_ms,
        valid_until_ms,
        // A visibility this build cannot read (reported there) fails the build: the page
        // answers 500 rather than admitting readers by a guessed rule.
        gate: super::access::Gate::of(page, cx.link_secret())
            .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        email: cx.config().smtp.is_some(),
    })
}

/// The page's status from its components' (operational without components).
fn overall(components: &[PublicComponent]) -> PageStatus {
    let worst = components
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(PageStatus::Operational);
    if worst == PageStatus::MajorOutage
        && components
            .iter()
            .any(|c| c.status != PageStatus::MajorOutage)
    {
        PageStatus::PartialOutage
    } else {
        worst
    }
}

/// The calendar date of a day number (days since 1970-01-01).
fn day_date(day: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp(day * 86_400, 0)
        .unwrap_or_default()
        .date_naive()
}

/// A moment in the page's zone.
pub fn local(tz: Tz, ms: i64) -> DateTime<Tz> {
    tz.from_utc_datetime(&from_ms(ms).naive_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(status: PageStatus) -> PublicComponent {
        PublicComponent {
            id: String::new(),
            name: String::new(),
            description: None,
            group: None,
            status,
            uptime: Uptime::default(),
        }
    }

    #[test]
    fn the_page_is_a_major_outage_only_when_every_component_is() {
        use PageStatus::*;
        let of = |s: &[PageStatus]| overall(&s.iter().copied().map(component).collect::<Vec<_>>());
        assert_eq!(of(&[]), Operational);
        assert_eq!(of(&[Operational, Maintenance]), Maintenance);
        assert_eq!(of(&[Operational, Degraded, Maintenance]), Degraded);
        assert_eq!(of(&[MajorOutage, Operational]), PartialOutage);
        assert_eq!(of(&[MajorOutage, MajorOutage]), MajorOutage);
        assert_eq!(of(&[PartialOutage, Operational]), PartialOutage);
    }

    #[test]
    fn monitor_statuses_map_to_the_public_scale() {
        assert_eq!(
            PageStatus::of_monitor(Status::Down, true),
            PageStatus::MajorOutage
        );
        assert_eq!(
            PageStatus::of_monitor(Status::Down, false),
            PageStatus::Operational
        );
        assert_eq!(
            PageStatus::of_monitor(Status::Changed, true),
            PageStatus::Degraded
        );
        assert_eq!(
            PageStatus::of_monitor(Status::Pending, true),
            PageStatus::Operational
        );
        assert_eq!(uptime_percent(3, 1), Some(66.6667));
        assert_eq!(uptime_percent(0, 0), None);
    }
}
