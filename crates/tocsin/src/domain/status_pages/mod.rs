//! Status pages: a workspace's public pages, their branding, components and publication.
//! Reads need `status_pages:read`; create, update, publish, unpublish and the component list
//! need `status_pages:write`; delete needs `status_pages:delete`.
//!
//! A slug is unique across the server (the public address is `/s/{slug}`), so a taken slug is
//! 409 `SLUG_TAKEN` whichever workspace holds it. Every write is audited in its transaction and
//! then announced ([`Notice::StatusPageChanged`]) so every node drops its rendered copy of the
//! page (`public::cache`). What the public sees is built in `crate::public`.

pub mod access;
pub mod branding;
pub mod components;
pub mod domains;
pub mod keys;
pub mod subscribers;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use self::branding::{Branding, BrandingInput};
use super::error::on_constraint;
use super::input::{check_name, check_slug, Validate};
use super::plans::{ensure_room, Quota};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::schema::Timestamp;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::{self, status_pages::PageRow};

const MAX_NAME_CHARS: usize = 100;
const DEFAULT_HISTORY_DAYS: i64 = 90;

/// Whether an alert on a component's monitor opens an incident on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AutoIncidents {
    /// Never.
    Off,
    /// A DRAFT incident, for a person to publish.
    Draft,
    /// A PUBLISHED incident, shown at once.
    Published,
}

impl AutoIncidents {
    pub const ALL: [AutoIncidents; 3] = [
        AutoIncidents::Off,
        AutoIncidents::Draft,
        AutoIncidents::Published,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AutoIncidents::Off => "OFF",
            AutoIncidents::Draft => "DRAFT",
            AutoIncidents::Published => "PUBLISHED",
        }
    }
}

crate::store::corrupt::stored_text!(AutoIncidents, "auto incidents setting");

/// A status page.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct StatusPage {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    /// Lowercase letters, digits and single hyphens, 3 to 48 characters; unique on the server.
    pub slug: String,
    /// Whether the public page and its public API answer; an unpublished page is 404 there.
    pub published: bool,
    /// The public page's address.
    pub url: String,
    pub branding: Branding,
    /// The verified custom domain serving the page at `/`, if any.
    pub custom_domain: Option<String>,
    /// Days of history the public page shows (uptime bars, past incidents), 7 to 90.
    pub history_days: i64,
    /// Whether an alert on a component's monitor opens an incident (`OFF`, `DRAFT`,
    /// `PUBLISHED`), with a system update when the monitor recovers.
    pub auto_incidents: AutoIncidents,
    /// Who may read the public page (`PUBLIC` by default).
    pub access: access::Access,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    #[schemars(with = "Timestamp")]
    pub updated_at: String,
}

/// The stored branding (a row always holds a valid object; an unreadable one shows defaults).
pub fn stored_branding(row: &PageRow) -> Branding {
    serde_json::from_str(&row.branding).unwrap_or_else(|_| Branding::defaults())
}

/// The public address of a page.
pub fn page_url(cx: &Cx, slug: &str) -> String {
    format!(
        "{}/s/{slug}",
        cx.config().public_url.as_str().trim_end_matches('/')
    )
}

/// The API shape of a stored page; a word this build cannot read is a (reported) corrupt row.
fn view(cx: &Cx, row: &PageRow, custom_domain: Option<String>) -> Result<StatusPage, CorruptRow> {
    Ok(StatusPage {
        id: row.id.clone(),
        workspace_id: row.workspace_id.clone(),
        name: row.name.clone(),
        slug: row.slug.clone(),
        published: row.published != 0,
        url: page_url(cx, &row.slug),
        branding: stored_branding(row),
        custom_domain,
        history_days: row.history_days,
        auto_incidents: corrupt::parse(
            "status_pages",
            &row.id,
            "auto_incidents",
            &row.auto_incidents,
        )?,
        access: access::view(row)?,
        created_at: rfc3339(row.created_at),
        updated_at: rfc3339(row.updated_at),
    })
}

async fn domain_of(cx: &Cx, row: &PageRow) -> Result<Option<String>, DomainError> {
    Ok(
        store::status_pages::verified_domains(cx.db().reader(), &row.workspace_id)
            .await?
            .into_iter()
            .find(|(page, _)| *page == row.id)
            .map(|(_, d)| d),
    )
}

/// A page of the caller's workspace, or 404 `STATUS_PAGE_NOT_FOUND`.
pub async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<PageRow, DomainError> {
    store::status_pages::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::StatusPage))
}

fn slug_taken() -> DomainError {
    DomainError::Conflict(
        "SLUG_TAKEN",
        "Another status page already uses this slug: slugs are unique across the server, pick another one.".into(),
    )
}

fn check_history(days: Option<i64>, errors: &mut Vec<FieldError>) {
    if days.is_some_and(|d| !(7..=90).contains(&d)) {
        errors.push(FieldError::new("historyDays", "must be 7 to 90"));
    }
}

/// The workspace's pages, oldest first.
pub async fn list(cx: &Cx, caller: &Caller) -> Result<Vec<StatusPage>, DomainError> {
    caller.require::<needs::ListStatusPages>()?;
    let reader = cx.db().reader();
    let rows = store::status_pages::list(reader, &caller.workspace_id).await?;
    let domains = store::status_pages::verified_domains(reader, &caller.workspace_id).await?;
    // A corrupt row is reported and left out of the list (see `store::corrupt`).
    Ok(corrupt::readable(rows.iter().map(|r| {
        let domain = domains
            .iter()
            .find(|(p, _)| *p == r.id)
            .map(|(_, d)| d.clone());
        view(cx, r, domain)
    })))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateStatusPage {
    /// 1 to 100 characters.
    pub name: String,
    /// 3 to 48 characters of a-z, 0-9 and single hyphens; unique on the server.
    pub slug: String,
    /// Default false: a new page is a draft until published.
    pub published: Option<bool>,
    pub branding: Option<BrandingInput>,
    /// 7 to 90, default 90.
    pub history_days: Option<i64>,
    /// Default `OFF`.
    pub auto_incidents: Option<AutoIncidents>,
    /// Who may read the public page; default `PUBLIC`.
    pub access: Option<access::AccessInput>,
}

impl Validate for CreateStatusPage {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("name", &self.name, MAX_NAME_CHARS, &mut errors);
        check_slug("slug", &self.slug, &mut errors);
        check_history(self.history_days, &mut errors);
        if let Some(a) = &self.access {
            a.validate(&mut errors);
        }
        errors
    }
}

/// Creates a page (unpublished unless `published: true`).
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    input: CreateStatusPage,
) -> Result<StatusPage, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    input.check()?;
    let mut branding = Branding::defaults();
    if let Some(b) = input.branding {
        branding.merge(b);
    }
    let mut errors = Vec::new();
    branding.validate(&mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let current = store::status_pages::count(cx.db().reader(), &caller.workspace_id).await?;
    ensure_room(cx, &caller.workspace_id, Quota::StatusPages, current).await?;
    let now = cx.clock().now_ms();
    let mut row = PageRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: input.name.trim().to_string(),
        slug: input.slug,
        published: i64::from(input.published.unwrap_or(false)),
        branding: serde_json::to_string(&branding).map_err(anyhow::Error::from)?,
        history_days: input.history_days.unwrap_or(DEFAULT_HISTORY_DAYS),
        auto_incidents: input
            .auto_incidents
            .unwrap_or(AutoIncidents::Off)
            .as_str()
            .to_string(),
        visibility: access::Visibility::Public.as_str().to_string(),
        password_hash: None,
        allowed_email_domains: "[]".into(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    if let Some(a) = input.access {
        access::apply(&mut row, a).await?;
    }
    let mut tx = cx.db().begin().await?;
    store::status_pages::insert(&mut *tx, &row)
        .await
        .map_err(|e| on_constraint(e, &[("slug", slug_taken())]))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.create",
            resource_type: "status_page",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "slug": row.slug, "visibility": row.visibility}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.id);
    Ok(view(cx, &row, None)?)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PagePath {
    pub page_id: String,
}

/// One page and its version.
pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<(StatusPage, i64), DomainError> {
    caller.require::<needs::GetStatusPage>()?;
    let row = load(cx, caller, id).await?;
    let domain = domain_of(cx, &row).await?;
    Ok((view(cx, &row, domain)?, row.version))
}

/// Fields to change; absent ones stay. `branding` merges key by key (`null` clears a key).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateStatusPage {
    pub name: Option<String>,
    pub slug: Option<String>,
    pub published: Option<bool>,
    pub branding: Option<BrandingInput>,
    pub history_days: Option<i64>,
    pub auto_incidents: Option<AutoIncidents>,
    /// Who may read the public page; absent fields stay as they are.
    pub access: Option<access::AccessInput>,
}

impl Validate for UpdateStatusPage {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            check_name("name", n, MAX_NAME_CHARS, &mut errors);
        }
        if let Some(s) = &self.slug {
            check_slug("slug", s, &mut errors);
        }
        check_history(self.history_days, &mut errors);
        if let Some(a) = &self.access {
            a.validate(&mut errors);
        }
        errors
    }
}

/// Changes a page if `expected` (when given) is still its version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateStatusPage,
) -> Result<(StatusPage, i64), DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    input.check()?;
    let mut row = load(cx, caller, id).await?;
    let mut branding = stored_branding(&row);
    if let Some(b) = input.branding {
        branding.merge(b);
        let mut errors = Vec::new();
        branding.validate(&mut errors);
        if !errors.is_empty() {
            return Err(errors.into());
        }
        row.branding = serde_json::to_string(&branding).map_err(anyhow::Error::from)?;
    }
    if let Some(n) = &input.name {
        row.name = n.trim().to_string();
    }
    if let Some(s) = input.slug {
        row.slug = s;
    }
    if let Some(p) = input.published {
        row.published = i64::from(p);
    }
    if let Some(d) = input.history_days {
        row.history_days = d;
    }
    if let Some(a) = input.auto_incidents {
        row.auto_incidents = a.as_str().to_string();
    }
    let mut action = "status_page.update";
    let readers_before = (
        row.visibility.clone(),
        row.password_hash.clone(),
        row.allowed_email_domains.clone(),
    );
    if let Some(a) = input.access {
        if access::apply(&mut row, a).await? {
            action = "status_page.password_change";
        }
    }
    // A page whose readers change to a private set suspends its subscribers: they subscribed
    // as readers of the page before, and get nothing until an admin re-admits them.
    let suspend = access::visibility_of(&row)? != access::Visibility::Public
        && readers_before
            != (
                row.visibility.clone(),
                row.password_hash.clone(),
                row.allowed_email_domains.clone(),
            );
    write(cx, caller, row, expected, action, suspend).await
}

/// Publishes or unpublishes a page (idempotent).
pub async fn set_published(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    published: bool,
) -> Result<StatusPage, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let mut row = load(cx, caller, id).await?;
    row.published = i64::from(published);
    let action = if published {
        "status_page.publish"
    } else {
        "status_page.unpublish"
    };
    Ok(write(cx, caller, row, None, action, false).await?.0)
}

async fn write(
    cx: &Cx,
    caller: &Caller,
    mut row: PageRow,
    expected: Option<i64>,
    action: &'static str,
    suspend_subscribers: bool,
) -> Result<(StatusPage, i64), DomainError> {
    let now = cx.clock().now_ms();
    row.updated_at = now;
    let mut tx = cx.db().begin().await?;
    let rows = store::status_pages::update(&mut *tx, &row, expected)
        .await
        .map_err(|e| on_constraint(e, &[("slug", slug_taken())]))?;
    check_write(rows, expected, DomainError::NotFound(Resource::StatusPage))?;
    if suspend_subscribers {
        store::subscribers::suspend_all(&mut *tx, &row.id, now).await?;
    }
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action,
            resource_type: "status_page",
            resource_id: &row.id,
            metadata: json!({
                "name": row.name,
                "slug": row.slug,
                "published": row.published != 0,
                "visibility": row.visibility,
            }),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.id);
    let row = load(cx, caller, &row.id).await?;
    let domain = domain_of(cx, &row).await?;
    Ok((view(cx, &row, domain)?, row.version))
}

/// Deletes a page with its components, domains, keys, incidents, postmortems and subscribers.
pub async fn delete(cx: &Cx, caller: &Caller, id: &str) -> Result<(), DomainError> {
    caller.require::<caps::StatusPagesDelete>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::status_pages::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::StatusPage))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.delete",
            resource_type: "status_page",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "slug": row.slug}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.id);
    Ok(())
}

/// Tells every node that what the page shows changed.
pub fn announce(cx: &Cx, page_id: &str) {
    cx.announce(Notice::StatusPageChanged {
        page_id: page_id.to_string(),
    });
}

impl Validate for PagePath {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_auto_incidents_setting_round_trips_and_strangers_are_errors() {
        corrupt::assert_round_trip(&AutoIncidents::ALL, AutoIncidents::as_str);
    }
}
