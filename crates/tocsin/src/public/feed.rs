//! RSS 2.0 and Atom feeds of a page's published incidents, newest first: one item per
//! incident, its updates in the body, its id the incident's address on the page, so a feed
//! reader shows each incident once and marks it changed when an update is posted. Written by
//! the `rss` and `atom_syndication` crates, which escape every value as XML. RSS readers take
//! an item's `<description>` as HTML (the crate writes it as CDATA), so the incident text goes
//! there HTML-escaped, one `<p>` per update: a `<script>` in an update or in a push's `msg`
//! reads as those characters. Atom says `type="text"` and carries the text as it is.

use chrono::DateTime;

use super::snapshot::Snapshot;
use crate::domain::incidents::IncidentWithUpdates;

/// The incidents a feed carries, newest first.
fn incidents(s: &Snapshot) -> Vec<&IncidentWithUpdates> {
    let mut all: Vec<&IncidentWithUpdates> = s
        .summary
        .active_incidents
        .iter()
        .chain(s.past_incidents.iter())
        .collect();
    all.sort_by(|a, b| b.incident.created_at.cmp(&a.incident.created_at));
    all
}

/// The text of an incident: its updates, newest first, one paragraph each.
fn body(i: &IncidentWithUpdates) -> String {
    i.updates
        .iter()
        .rev()
        .map(|u| format!("{} ({}): {}", u.status.as_str(), u.created_at, u.message))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// [`body`] as HTML for RSS: each update a paragraph of escaped text.
fn body_html(i: &IncidentWithUpdates) -> String {
    let paragraphs = body(i);
    maud::html! {
        @for para in paragraphs.split("\n\n") { p { (para) } }
    }
    .into_string()
}

fn link(s: &Snapshot, i: &IncidentWithUpdates) -> String {
    format!("{}#incident-{}", s.summary.page.url, i.incident.id)
}

fn rfc2822(ts: &str) -> String {
    DateTime::parse_from_rfc3339(ts)
        .map(|d| d.to_rfc2822())
        .unwrap_or_default()
}

/// The RSS 2.0 document.
pub fn rss(s: &Snapshot) -> String {
    let items: Vec<rss::Item> = incidents(s)
        .into_iter()
        .map(|i| {
            let mut item = rss::Item::default();
            item.set_title(format!(
                "{} [{}]",
                i.incident.title,
                i.incident.status.as_str()
            ));
            item.set_link(link(s, i));
            item.set_description(body_html(i));
            item.set_pub_date(rfc2822(&i.incident.created_at));
            let mut guid = rss::Guid::default();
            guid.set_value(format!("{}:{}", i.incident.id, i.incident.updated_at));
            guid.set_permalink(false);
            item.set_guid(guid);
            item
        })
        .collect();
    let mut channel = rss::Channel::default();
    channel.set_title(format!("{} status", s.summary.page.name));
    channel.set_link(s.summary.page.url.clone());
    channel.set_description(format!("Incidents and updates of {}", s.summary.page.name));
    channel.set_last_build_date(rfc2822(&s.summary.updated_at));
    channel.set_items(items);
    channel.to_string()
}

/// The Atom document.
pub fn atom(s: &Snapshot) -> String {
    let updated = |ts: &str| {
        DateTime::parse_from_rfc3339(ts).unwrap_or_else(|_| DateTime::UNIX_EPOCH.fixed_offset())
    };
    let entries: Vec<atom_syndication::Entry> = incidents(s)
        .into_iter()
        .map(|i| {
            let mut e = atom_syndication::Entry::default();
            e.set_id(format!("urn:tocsin:incident:{}", i.incident.id));
            e.set_title(format!(
                "{} [{}]",
                i.incident.title,
                i.incident.status.as_str()
            ));
            e.set_updated(updated(&i.incident.updated_at));
            e.set_published(Some(updated(&i.incident.created_at)));
            let mut l = atom_syndication::Link::default();
            l.set_href(link(s, i));
            e.set_links(vec![l]);
            let mut content = atom_syndication::Content::default();
            content.set_content_type(Some("text".to_string()));
            content.set_value(Some(body(i)));
            e.set_content(Some(content));
            e
        })
        .collect();
    let mut feed = atom_syndication::Feed::default();
    feed.set_id(format!("urn:tocsin:status-page:{}", s.page_id));
    feed.set_title(format!("{} status", s.summary.page.name));
    feed.set_updated(updated(&s.summary.updated_at));
    let mut l = atom_syndication::Link::default();
    l.set_href(s.summary.page.url.clone());
    feed.set_links(vec![l]);
    feed.set_entries(entries);
    feed.to_string()
}
