//! Postmortems: write-ups of resolved incidents, in Markdown. Reads need `postmortems:read`,
//! writing and publishing `postmortems:write`, deleting `postmortems:delete`.
//!
//! Decisions the contract leaves open, kept here and in the OpenAPI descriptions:
//! - A postmortem is written for a RESOLVED incident of the workspace: an unknown incident (or
//!   another workspace's) is 400 `VALIDATION_ERROR` on `incidentId`; one that is not resolved
//!   is 409 `INCIDENT_NOT_RESOLVED`, the same code reopening uses. An incident may have more
//!   than one postmortem; one reopened later keeps its postmortems.
//! - `body` is kept exactly as written (up to 100,000 characters, may be empty while being
//!   drafted); `bodyHtml` is rendered from it on every read: CommonMark (with tables,
//!   strikethrough and task lists) by pulldown-cmark, then sanitised by ammonia, so raw HTML,
//!   scripts, event handlers and `javascript:` links in the Markdown come out inert.
//! - `published` is true once published (`publishedAt` set); publishing again changes nothing.
//!   `statusPageId` is the incident's page.
//! - `GET /postmortems` answers an array, newest first.
//!
//! Every write is audited in its transaction and then announced
//! ([`Notice::StatusPageChanged`], for the incident's page). [`postmortem_view`] is the one
//! mapping from a row to the API shape; the public pages use it with
//! `store::postmortems::published_for_page`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::incidents::IncidentStatus;
use super::input::{check_name, Validate};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::schema::Timestamp;
use crate::store::{self, postmortems::PostmortemRow};

pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_BODY_CHARS: usize = 100_000;

/// How many times a write is retried when another write came between its read and its write.
const ATTEMPTS: usize = 5;

/// A postmortem of a resolved incident.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Postmortem {
    pub id: String,
    pub workspace_id: String,
    pub incident_id: String,
    /// The incident's status page.
    pub status_page_id: String,
    pub title: String,
    /// Markdown, exactly as written.
    pub body: String,
    /// `body` rendered to HTML and sanitised (no scripts, event handlers or `javascript:`
    /// links): safe to insert into a page as it is.
    pub body_html: String,
    pub published: bool,
    #[schemars(with = "Option<Timestamp>")]
    pub published_at: Option<String>,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    #[schemars(with = "Timestamp")]
    pub updated_at: String,
}

/// Markdown to HTML that is safe to show: rendered, then sanitised with ammonia's defaults
/// (which also add `rel="noopener noreferrer"` to links).
pub fn render_markdown(markdown: &str) -> String {
    use pulldown_cmark::{html, Options, Parser};
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut rendered = String::with_capacity(markdown.len() + markdown.len() / 4);
    html::push_html(&mut rendered, Parser::new_ext(markdown, options));
    ammonia::clean(&rendered)
}

/// The API shape of a stored postmortem (renders the Markdown). Pure.
pub fn postmortem_view(p: &PostmortemRow) -> Postmortem {
    Postmortem {
        id: p.id.clone(),
        workspace_id: p.workspace_id.clone(),
        incident_id: p.incident_id.clone(),
        status_page_id: p.status_page_id.clone(),
        title: p.title.clone(),
        body: p.body.clone(),
        body_html: render_markdown(&p.body),
        published: p.published_at.is_some(),
        published_at: p.published_at.map(rfc3339),
        created_at: rfc3339(p.created_at),
        updated_at: rfc3339(p.updated_at),
    }
}

fn check_body(body: &str, errors: &mut Vec<FieldError>) {
    if body.chars().count() > MAX_BODY_CHARS {
        errors.push(FieldError::new(
            "body",
            format!("at most {MAX_BODY_CHARS} characters"),
        ));
    }
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<PostmortemRow, DomainError> {
    store::postmortems::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Postmortem))
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostmortemQuery {
    /// Only this incident's postmortems.
    pub incident_id: Option<String>,
}

impl Validate for PostmortemQuery {}

/// The workspace's postmortems, newest first (one incident's with `incidentId`).
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    q: PostmortemQuery,
) -> Result<Vec<Postmortem>, DomainError> {
    caller.require::<needs::ListPostmortems>()?;
    let rows = store::postmortems::list(
        cx.db().reader(),
        &caller.workspace_id,
        q.incident_id.as_deref().filter(|i| !i.is_empty()),
    )
    .await?;
    Ok(rows.iter().map(postmortem_view).collect())
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PostmortemPath {
    pub postmortem_id: String,
}

/// One postmortem and its version.
pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<(Postmortem, i64), DomainError> {
    caller.require::<needs::GetPostmortem>()?;
    let row = load(cx, caller, id).await?;
    Ok((postmortem_view(&row), row.version))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePostmortem {
    /// A RESOLVED incident of this workspace.
    pub incident_id: String,
    /// 1 to 200 characters.
    pub title: String,
    /// Markdown, at most 100,000 characters.
    pub body: String,
}

impl Validate for CreatePostmortem {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("title", &self.title, MAX_TITLE_CHARS, &mut errors);
        check_body(&self.body, &mut errors);
        errors
    }
}

/// Writes a postmortem (unpublished) for a resolved incident.
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    input: CreatePostmortem,
) -> Result<Postmortem, DomainError> {
    caller.require::<needs::CreatePostmortem>()?;
    input.check()?;
    let ws = &caller.workspace_id;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    // Read in the transaction that inserts, so the incident's status is the one written against.
    let incident = store::incidents::get(&mut *tx, ws, &input.incident_id)
        .await?
        .ok_or_else(|| {
            DomainError::field("incidentId", "no incident with this id in this workspace")
        })?;
    if crate::alerting::incident_view::status_of(&incident)? != IncidentStatus::Resolved {
        return Err(DomainError::Conflict(
            "INCIDENT_NOT_RESOLVED",
            format!(
                "This incident is not resolved (its status is {}): resolve it before writing its postmortem.",
                incident.status
            ),
        ));
    }
    let row = PostmortemRow {
        id: new_id(),
        workspace_id: ws.clone(),
        incident_id: incident.id.clone(),
        status_page_id: incident.status_page_id.clone(),
        title: input.title.trim().to_string(),
        body: input.body,
        published_at: None,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    store::postmortems::insert(&mut *tx, &row).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "postmortem.create",
            resource_type: "postmortem",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "incidentId": row.incident_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.status_page_id);
    Ok(postmortem_view(&row))
}

/// Fields to change; absent ones stay.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdatePostmortem {
    /// 1 to 200 characters.
    pub title: Option<String>,
    /// Markdown, at most 100,000 characters.
    pub body: Option<String>,
}

impl Validate for UpdatePostmortem {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(t) = &self.title {
            check_name("title", t, MAX_TITLE_CHARS, &mut errors);
        }
        if let Some(b) = &self.body {
            check_body(b, &mut errors);
        }
        errors
    }
}

/// A change to one postmortem's row, given the time of the write.
type ChangeFn<'a> = dyn Fn(&mut PostmortemRow, i64) + Send + Sync + 'a;

/// Applies `change` to postmortem `id` like `incidents::apply`: read in the write transaction,
/// a stale `expected` refused, written locked on the version read (retried if another write
/// came between), audited, committed, announced; a change that alters nothing writes nothing.
async fn apply(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    action: &str,
    change: &ChangeFn<'_>,
) -> Result<(Postmortem, i64), DomainError> {
    let ws = &caller.workspace_id;
    for _ in 0..ATTEMPTS {
        let now = cx.clock().now_ms();
        let mut tx = cx.db().begin().await?;
        let row = store::postmortems::get(&mut *tx, ws, id)
            .await?
            .ok_or(DomainError::NotFound(Resource::Postmortem))?;
        if expected.is_some_and(|v| v != row.version) {
            return Err(DomainError::VersionConflict);
        }
        let mut next = row.clone();
        change(&mut next, now);
        if next == row {
            return Ok((postmortem_view(&row), row.version));
        }
        next.updated_at = now;
        if store::postmortems::update(&mut *tx, &next, Some(row.version)).await? == 0 {
            continue;
        }
        audit::record(
            &mut *tx,
            caller,
            Entry {
                action,
                resource_type: "postmortem",
                resource_id: &next.id,
                metadata: json!({"title": next.title, "incidentId": next.incident_id}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        announce(cx, &next.status_page_id);
        next.version = row.version + 1;
        return Ok((postmortem_view(&next), next.version));
    }
    Err(DomainError::VersionConflict)
}

/// Edits a postmortem if `expected` (when given) is still its version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdatePostmortem,
) -> Result<(Postmortem, i64), DomainError> {
    caller.require::<caps::PostmortemsWrite>()?;
    input.check()?;
    let title = input.title.as_deref().map(|t| t.trim().to_string());
    let change = |row: &mut PostmortemRow, _now: i64| {
        if let Some(t) = &title {
            row.title = t.clone();
        }
        if let Some(b) = &input.body {
            row.body = b.clone();
        }
    };
    apply(cx, caller, id, expected, "postmortem.update", &change).await
}

/// Publishes a postmortem: `publishedAt` now (kept if it was already published).
pub async fn publish(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(Postmortem, i64), DomainError> {
    caller.require::<needs::PublishPostmortem>()?;
    let change = |row: &mut PostmortemRow, now: i64| {
        row.published_at = row.published_at.or(Some(now));
    };
    apply(cx, caller, id, expected, "postmortem.publish", &change).await
}

/// Deletes a postmortem.
pub async fn delete(cx: &Cx, caller: &Caller, id: &str) -> Result<(), DomainError> {
    caller.require::<caps::PostmortemsDelete>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::postmortems::delete(&mut *tx, &caller.workspace_id, &row.id).await?;
    check_write(rows, None, DomainError::NotFound(Resource::Postmortem))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "postmortem.delete",
            resource_type: "postmortem",
            resource_id: &row.id,
            metadata: json!({"title": row.title, "incidentId": row.incident_id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.status_page_id);
    Ok(())
}

fn announce(cx: &Cx, page_id: &str) {
    cx.announce(Notice::StatusPageChanged {
        page_id: page_id.to_string(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_anything_executable_is_removed() {
        let html = render_markdown(
            "# Cause\n\nThe **database** ran out of disk.\n\n\
             <script>alert(1)</script>\n\n\
             <img src=x onerror=\"alert(2)\">\n\n\
             [click](javascript:alert(3)) and [docs](https://example.com/a)\n\n\
             | a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h1>Cause</h1>"), "{html}");
        assert!(html.contains("<strong>database</strong>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        assert!(
            html.contains("href=\"https://example.com/a\""),
            "safe links stay: {html}"
        );
        let lower = html.to_lowercase();
        assert!(!lower.contains("<script"), "{html}");
        assert!(!lower.contains("onerror"), "{html}");
        assert!(!lower.contains("javascript:"), "{html}");
    }
}
