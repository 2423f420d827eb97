//! The public status page as HTML, rendered from a [`Snapshot`] with maud (compiled
//! templates: every value is escaped on output, so HTML in a name, a title or an update is
//! shown as text, never run).
//!
//! The page works without JavaScript (there is none), uses landmarks and headings a screen
//! reader can walk, states every colour in words as well, follows `prefers-color-scheme`, and
//! fits a phone. It stays small: the uptime bars are one empty element per day with its figure
//! in a `title`, and the answer is compressed (`cache.rs`). Its Content-Security-Policy allows
//! only its own style block (by hash), images from https and data URLs, and no script.

use chrono::{DateTime, NaiveDate};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use sha2::{Digest, Sha256};

use super::lang;
use super::snapshot::{local, Day, PageStatus, Snapshot};
use crate::domain::incidents::IncidentWithUpdates;
use crate::domain::status_pages::branding::is_hex_colour;

/// The product's icon, the favicon of every page that has none of its own (inline, so it
/// needs no route and no load beyond the `img-src data:` every such page's CSP allows).
pub const ICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='8' fill='%230b5cad'/%3E%3Cpath d='M8 3.2a3 3 0 0 0-3 3v2.6L3.8 10.6h8.4L11 8.8V6.2a3 3 0 0 0-3-3zM6.6 11.4a1.4 1.4 0 0 0 2.8 0z' fill='%23fff'/%3E%3C/svg%3E";

/// Styles every page shares; the page's colours and custom CSS follow them.
const BASE_CSS: &str = include_str!("page.css");

/// A rendered page and the Content-Security-Policy that goes with it.
pub struct Html {
    pub body: String,
    pub csp: String,
}

/// The page's style block: base styles, brand colours, custom CSS (as it passes the check).
fn styles(s: &Snapshot) -> String {
    let b = &s.summary.page.branding;
    let mut css = String::from(BASE_CSS);
    css.push_str(&run_widths(s));
    let mut vars = String::new();
    if let Some(c) = b.primary_color.as_deref().filter(|c| is_hex_colour(c)) {
        vars.push_str(&format!("--brand:{c};"));
    }
    if let Some(c) = b.background_color.as_deref().filter(|c| is_hex_colour(c)) {
        vars.push_str(&format!("--bg-light:{c};"));
    }
    if !vars.is_empty() {
        css.push_str(&format!(":root{{{vars}}}"));
    }
    // Checked when saved; checked again here, so CSS saved under an older, weaker check is
    // left out rather than served.
    if let Some(custom) = b
        .custom_css
        .as_ref()
        .filter(|c| crate::domain::status_pages::branding::check_css(c).is_ok())
    {
        css.push('\n');
        css.push_str(custom);
    }
    css
}

fn csp_for(style: &str) -> String {
    use base64::Engine as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src https: data:; \
         form-action 'self'; base-uri 'none'; frame-ancestors *"
    )
}

fn headline(status: PageStatus) -> &'static str {
    match status {
        PageStatus::Operational => "All systems operational",
        PageStatus::Maintenance => "Maintenance in progress",
        PageStatus::Degraded => "Some systems are degraded",
        PageStatus::PartialOutage => "Partial system outage",
        PageStatus::MajorOutage => "Major system outage",
    }
}

fn class_of(status: PageStatus) -> &'static str {
    match status {
        PageStatus::Operational => "s-ok",
        PageStatus::Maintenance => "s-mnt",
        PageStatus::Degraded => "s-deg",
        PageStatus::PartialOutage => "s-part",
        PageStatus::MajorOutage => "s-major",
    }
}

/// The bar class of a day: no data, maintenance, or how much of it was up.
fn day_class(d: &Day) -> &'static str {
    match d.uptime {
        _ if d.maintenance => "w",
        None => "n",
        Some(u) if u >= 99.95 => "o",
        Some(u) if u >= 99.0 => "m",
        Some(u) if u >= 95.0 => "p",
        Some(_) => "x",
    }
}

/// The words of a day's figure.
fn day_figure(d: &Day) -> String {
    let figure = match d.uptime {
        Some(u) => format!("{} uptime", pct(u)),
        None => "no data".into(),
    };
    if d.maintenance {
        format!("{figure}, maintenance")
    } else {
        figure
    }
}

/// Consecutive days with the same colour and figure, shown as one bar as wide as the run
/// (a healthy quarter is a handful of elements, not ninety), titled with its dates.
struct Run<'a> {
    first: &'a Day,
    last: &'a Day,
    len: usize,
    class: &'static str,
    figure: String,
}

fn runs(days: &[Day]) -> Vec<Run<'_>> {
    let mut out: Vec<Run<'_>> = Vec::new();
    for d in days {
        let (class, figure) = (day_class(d), day_figure(d));
        match out.last_mut() {
            Some(r) if r.class == class && r.figure == figure => {
                r.last = d;
                r.len += 1;
            }
            _ => out.push(Run {
                first: d,
                last: d,
                len: 1,
                class,
                figure,
            }),
        }
    }
    out
}

fn run_title(lang: &str, r: &Run<'_>) -> String {
    if r.len == 1 {
        format!("{}: {}", lang::date(lang, r.first.date), r.figure)
    } else {
        format!(
            "{} – {}: {}{}",
            lang::day_month(lang, r.first.date),
            lang::date(lang, r.last.date),
            r.figure,
            if r.figure == "no data" {
                ""
            } else {
                " each day"
            }
        )
    }
}

fn pct(u: f64) -> String {
    if u >= 99.995 || u == 0.0 {
        format!("{u:.0}%")
    } else {
        format!("{u:.2}%")
    }
}

/// A moment in the page's zone and language.
fn when(s: &Snapshot, ms: i64) -> String {
    lang::date_time(&s.summary.page.branding.language, local(s.timezone, ms))
}

fn iso_ms(s: &str) -> i64 {
    DateTime::parse_from_rfc3339(s)
        .map(|d| d.timestamp_millis())
        .unwrap_or(0)
}

fn status_words(s: &str) -> String {
    let mut w = s.to_ascii_lowercase();
    if let Some(first) = w.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    w
}

fn incident(s: &Snapshot, i: &IncidentWithUpdates, level: u8) -> Markup {
    let inc = &i.incident;
    let names: Vec<&str> = s
        .summary
        .components
        .iter()
        .filter(|c| inc.affected_component_ids.contains(&c.id))
        .map(|c| c.name.as_str())
        .collect();
    let postmortem = s.postmortems.iter().find(|p| p.incident_id == inc.id);
    html! {
        article.incident id={ "incident-" (inc.id) } {
            @if level == 3 { h3 { (inc.title) } } @else { h4 { (inc.title) } }
            p.meta {
                span.badge { (status_words(inc.status.as_str())) }
                @if inc.severity.as_str() != "NONE" { " · " (status_words(inc.severity.as_str())) " impact" }
                @if !names.is_empty() { " · Affects " (names.join(", ")) }
            }
            ol.updates {
                @for u in &i.updates {
                    li {
                        strong { (status_words(u.status.as_str())) } " — " (u.message)
                        " " time datetime=(u.created_at) { (when(s, iso_ms(&u.created_at))) }
                    }
                }
            }
            @if let Some(p) = postmortem {
                p { a href={ "/s/" (s.summary.page.slug) "/postmortems/" (p.id) } { "Postmortem: " (p.title) } }
            }
        }
    }
}

fn bars(lang: &str, days: &[Day]) -> Markup {
    html! {
        div.bars aria-hidden="true" {
            @for r in runs(days) {
                @if r.len == 1 {
                    b class=(r.class) title=(run_title(lang, &r)) {}
                } @else {
                    b class={ (r.class) " r" (r.len) } title=(run_title(lang, &r)) {}
                }
            }
        }
    }
}

/// The width classes (`.rN`) of the runs a page uses.
fn run_widths(s: &Snapshot) -> String {
    let mut widths: Vec<usize> = s
        .bars
        .iter()
        .flat_map(|days| runs(days).into_iter().map(|r| r.len))
        .filter(|&n| n > 1)
        .collect();
    widths.sort_unstable();
    widths.dedup();
    widths
        .iter()
        .map(|n| format!(".bars .r{n}{{flex:{n}}}"))
        .collect()
}

/// Renders the whole page.
pub fn page(s: &Snapshot) -> Html {
    let sum = &s.summary;
    let b = &sum.page.branding;
    let style = styles(s);
    let base = format!("/s/{}/", sum.page.slug);
    // Components under their group, in page order; ungrouped ones stand alone.
    let mut groups: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, c) in sum.components.iter().enumerate() {
        match groups
            .iter_mut()
            .find(|(g, _)| g.is_some() && *g == c.group.as_deref())
        {
            Some((_, members)) => members.push(i),
            None => groups.push((c.group.as_deref(), vec![i])),
        }
    }
    let today = local(s.timezone, s.updated_at_ms.max(0)).date_naive();
    let history: Vec<(NaiveDate, Vec<&IncidentWithUpdates>)> = {
        let mut days: Vec<(NaiveDate, Vec<&IncidentWithUpdates>)> = Vec::new();
        for i in &s.past_incidents {
            let d = local(s.timezone, iso_ms(&i.incident.created_at)).date_naive();
            match days.iter_mut().find(|(x, _)| *x == d) {
                Some((_, v)) => v.push(i),
                None => days.push((d, vec![i])),
            }
        }
        days
    };
    let recent: Vec<NaiveDate> = (0..7)
        .filter_map(|n| today.checked_sub_days(chrono::Days::new(n)))
        .collect();
    let body = html! {
        (DOCTYPE)
        html lang=(b.language) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (sum.page.name) " status" }
                link rel="icon" href=(b.favicon_url.as_deref().unwrap_or(ICON));
                link rel="alternate" type="application/rss+xml" title={ (sum.page.name) " incidents (RSS)" } href={ (base) "feed.rss" };
                link rel="alternate" type="application/atom+xml" title={ (sum.page.name) " incidents (Atom)" } href={ (base) "feed.atom" };
                style { (PreEscaped(&style)) }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    div.wrap {
                        @if let Some(logo) = &b.logo_url {
                            h1 { img.logo src=(logo) alt=(sum.page.name); }
                        } @else {
                            h1 { (sum.page.name) }
                        }
                    }
                }
                main #main .wrap {
                    section class={ "overall " (class_of(sum.status)) } aria-live="polite" {
                        h2 { (headline(sum.status)) }
                        p { "Updated " time datetime=(sum.updated_at) { (when(s, s.updated_at_ms)) } }
                    }
                    @if !sum.active_incidents.is_empty() {
                        section aria-labelledby="h-active" {
                            h2 #h-active { "Active incidents" }
                            @for i in &sum.active_incidents { (incident(s, i, 3)) }
                        }
                    }
                    @if !sum.scheduled_maintenance.is_empty() {
                        section aria-labelledby="h-maint" {
                            h2 #h-maint { "Scheduled maintenance" }
                            @for m in &sum.scheduled_maintenance {
                                article.maintenance {
                                    h3 { (m.title) }
                                    p.meta {
                                        span.badge { @if m.active { "In progress" } @else { "Scheduled" } }
                                        " " time datetime=(m.starts_at) { (when(s, iso_ms(&m.starts_at))) }
                                        " – " time datetime=(m.ends_at) { (when(s, iso_ms(&m.ends_at))) }
                                    }
                                    @if let Some(d) = &m.description { p { (d) } }
                                }
                            }
                        }
                    }
                    // A page without components yet says nothing about them rather than
                    // showing an empty heading.
                    @if !sum.components.is_empty() {
                    section aria-labelledby="h-components" {
                        h2 #h-components { "Components" }
                        @for (group, members) in &groups {
                            div.group {
                                @if let Some(g) = group { h3 { (g) } }
                                ul.components {
                                    @for &i in members {
                                        @let c = &sum.components[i];
                                        li.component {
                                            div.row {
                                                span.name { (c.name) }
                                                span class={ "st " (class_of(c.status)) } { (c.status.label()) }
                                            }
                                            @if let Some(d) = &c.description { p.desc { (d) } }
                                            (bars(&b.language, &s.bars[i]))
                                            p.legend {
                                                span { (s.history_days) " days ago" }
                                                span { @match c.uptime.d90 { Some(u) => { (pct(u)) " uptime" }, None => { "No data yet" } } }
                                                span { "Today" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    }
                    section aria-labelledby="h-history" {
                        h2 #h-history { "Past incidents" }
                        @for d in &recent {
                            @if !history.iter().any(|(x, _)| x == d) {
                                h3.day { (lang::date(&b.language, *d)) }
                                p.none { "No incidents reported." }
                            }
                            @for (x, list) in history.iter().filter(|(x, _)| x == d) {
                                h3.day { (lang::date(&b.language, *x)) }
                                @for i in list { (incident(s, i, 4)) }
                            }
                        }
                        @for (x, list) in history.iter().filter(|(x, _)| !recent.contains(x)) {
                            h3.day { (lang::date(&b.language, *x)) }
                            @for i in list { (incident(s, i, 4)) }
                        }
                    }
                    @if !s.email {
                        section.subscribe aria-labelledby="h-subscribe" {
                            h2 #h-subscribe { "Updates" }
                            p.fine {
                                "Updates by email are not available on this server. Follow the "
                                a href={ (base) "feed.rss" } { "RSS" } " or "
                                a href={ (base) "feed.atom" } { "Atom" } " feed to hear of incidents."
                            }
                        }
                    }
                    @if s.email { section.subscribe aria-labelledby="h-subscribe" {
                        h2 #h-subscribe { "Get updates by email" }
                        form method="post" action={ (base) "subscribe" } {
                            label for="sub-email" { "Email address" }
                            div.field {
                                input #sub-email type="email" name="email" required autocomplete="email" maxlength="254";
                                button type="submit" { "Subscribe" }
                            }
                            @if sum.components.len() > 1 {
                                details {
                                    summary { "Only some components" }
                                    fieldset {
                                        legend { "Tell me about" }
                                        @for c in &sum.components {
                                            label.pick { input type="checkbox" name="component" value=(c.id); " " (c.name) }
                                        }
                                    }
                                }
                            }
                            p.fine { "We email a link to confirm first. Every email has a link to unsubscribe." }
                        }
                    } }
                }
                footer.bottom {
                    div.wrap {
                        nav aria-label="Links" {
                            @for l in &b.footer_links { a href=(l.url) rel="noopener" { (l.label) } " · " }
                            a href={ (base) "feed.rss" } { "RSS" } " · "
                            a href={ (base) "feed.atom" } { "Atom" }
                        }
                        p.powered { "Powered by Tocsin" }
                    }
                }
            }
        }
    };
    Html {
        body: body.into_string(),
        csp: csp_for(&style),
    }
}

/// A postmortem's own page.
pub fn postmortem(s: &Snapshot, title: &str, body_html: &str, published_ms: i64) -> Html {
    let sum = &s.summary;
    let b = &sum.page.branding;
    let style = styles(s);
    let body = html! {
        (DOCTYPE)
        html lang=(b.language) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · " (sum.page.name) " status" }
                link rel="icon" href=(b.favicon_url.as_deref().unwrap_or(ICON));
                style { (PreEscaped(&style)) }
            }
            body {
                header.top { div.wrap { h1 { a href={ "/s/" (sum.page.slug) } { (sum.page.name) } } } }
                main #main .wrap {
                    article.postmortem {
                        h2 { (title) }
                        p.meta { "Published " (when(s, published_ms)) }
                        // Rendered from Markdown and sanitised when written (domain::postmortems).
                        div.body { (PreEscaped(body_html)) }
                    }
                    p { a href={ "/s/" (sum.page.slug) } { "← Back to the status page" } }
                }
            }
        }
    };
    Html {
        body: body.into_string(),
        csp: csp_for(&style),
    }
}

/// What the sign-in page of a private status page offers.
pub enum SignIn<'a> {
    /// A password form posting to `action`; `wrong` after a refused attempt.
    Password { action: &'a str, wrong: bool },
    /// No form: how to get in (sign in to this server with an allowed email address and
    /// open the page at `sign_in_at`, its address on this server's own host, where the
    /// session cookie is sent; or ask the page's owner).
    EmailDomains { sign_in_at: &'a str },
}

/// The page shown instead of a private status page to someone not let in, in the page's
/// `language` (`lang::sign_in`). It names neither the page nor anything on it, and carries its
/// own CSP (no script, forms to this origin).
pub fn sign_in(kind: &SignIn<'_>, language: &str) -> Html {
    let (t, html_lang) = lang::sign_in(language);
    let style = "body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:10vh auto;padding:0 1rem}\
                 input,button{font:inherit;padding:.4rem .6rem}label{display:block;margin:.5rem 0 .2rem}\
                 .err{color:#b00020}@media(prefers-color-scheme:dark){body{background:#111;color:#eee}.err{color:#ff8a80}}";
    let body = html! {
        (DOCTYPE)
        html lang=(html_lang) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="robots" content="noindex";
                title { (t.title) }
                link rel="icon" href=(ICON);
                style { (PreEscaped(style)) }
            }
            body {
                main {
                    h1 { (t.title) }
                    @match kind {
                        SignIn::Password { action, wrong } => {
                            p { (t.password_intro) }
                            @if *wrong { p.err role="alert" { (t.wrong_password) } }
                            form method="post" action=(action) {
                                label for="password" { (t.password_label) }
                                input #password type="password" name="password" required autocomplete="current-password" autofocus;
                                " " button type="submit" { (t.submit) }
                            }
                        }
                        SignIn::EmailDomains { sign_in_at } => {
                            p { (t.domains_intro) }
                            p {
                                (t.domains_before_link)
                                a href=(sign_in_at) { (sign_in_at) }
                                (t.domains_after_link)
                            }
                        }
                    }
                }
            }
        }
    };
    use base64::Engine as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    Html {
        body: body.into_string(),
        csp: format!(
            "default-src 'none'; style-src 'sha256-{hash}'; img-src data:; form-action 'self'; \
             base-uri 'none'; frame-ancestors 'none'"
        ),
    }
}
