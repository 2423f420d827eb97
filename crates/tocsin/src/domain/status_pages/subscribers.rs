//! Subscribers of a status page: public subscription with double opt-in, the verify and
//! unsubscribe links, and the admin list (`status_pages:read`) and removal
//! (`status_pages:write`).
//!
//! - **Subscribe** (no credential, published pages only): `{"email", "componentIds"?}`. The
//!   answer is the same whatever the address's state, so nobody learns whether an address is
//!   subscribed: a new address is stored unverified and sent a confirmation email; an address
//!   that never confirmed, or unsubscribed, gets a fresh confirmation (and its new component
//!   choice, which only takes effect once confirmed); an active subscriber is left exactly as it
//!   is — a stranger must not be able to change someone's choice. To change components, a
//!   subscriber unsubscribes and subscribes again. The confirmation goes through the outbox
//!   (`alerting::subscriber_mail`), so the answer takes the same time either way and the email
//!   is retried. Rate limits per client address and per email address are the HTTP edge's.
//! - **Private pages**: subscribing to a `PASSWORD` or `EMAIL_DOMAINS` page needs the same
//!   access as reading it (the HTTP edge asks the page's gate first; without access the answer
//!   is the 404 of an unknown slug). When a page turns private, or who may read a private page
//!   changes (its password or its allowed domains), every subscriber is *suspended*
//!   (`SUSPENDED`): it is sent nothing until an admin re-admits it (`POST .../readmit`), or
//!   someone who may read the page subscribes the address again (which asks it to confirm).
//! - **Limits**: besides the edge's per-client and per-address budgets (the address counted as
//!   its [`mailbox`]: lowercased, without a plus-tag or quotes), a mailbox is sent at most
//!   `rate_limits.subscribe_confirmations_per_mailbox_day` confirmation emails a day across
//!   pages and nodes; past that the answer is the same 202 and nothing is sent.
//! - **Verify**: the link (`GET`) shows a page whose button (`POST`) confirms, so a mail scanner
//!   following the link confirms nothing. Confirming sets `verifiedAt` (the first time is
//!   kept); from then on the subscriber is sent the page's incident news. A verify link of a
//!   subscription that was unsubscribed since verifies nothing.
//! - On a server without an SMTP relay nothing can be confirmed, so a well-formed request for
//!   a page the caller may read is refused with 409 `SMTP_NOT_CONFIGURED` ([`no_email`]).
//! - **Unsubscribe** sets `unsubscribedAt`; queued email to the subscriber is then refused by
//!   the delivery worker. The row stays (its state shows in the admin list) until an admin
//!   deletes it, which deletes its email history too.
//!
//! The public actions have no caller and no audit entry (they are not workspace members'
//! writes); deleting a subscriber is audited.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::load;
use crate::alerting::subscriber_mail::{self, LinkKind, SubscriberLinks};
use crate::audit::{self, Entry};
use crate::auth::signed::Verify;
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::input::{check_email, Validate};
use crate::domain::pagination::{finish, PageParams};
use crate::domain::{check_write, DomainError, FieldError, Resource};
use crate::ids::new_id;
use crate::schema::Timestamp;
use crate::store::{self, subscribers::SubscriberRow};

/// More components than any page has; bounds the work one request can ask for.
const MAX_COMPONENTS: usize = 200;

/// `POST /api/v1/status-pages/{slug}/subscribers`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Subscribe {
    /// The address to send the page's incident news to (after it confirms).
    pub email: String,
    /// Components of the page to hear about; absent or empty for the whole page.
    pub component_ids: Option<Vec<String>>,
}

impl Validate for Subscribe {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let email = self.email.trim();
        check_email("email", email, &mut errors);
        if errors.is_empty() && email.parse::<lettre::Address>().is_err() {
            errors.push(FieldError::new("email", "must be an email address"));
        }
        if let Some(ids) = &self.component_ids {
            if ids.len() > MAX_COMPONENTS {
                errors.push(FieldError::new(
                    "componentIds",
                    format!("at most {MAX_COMPONENTS} components"),
                ));
            } else {
                for (i, id) in ids.iter().enumerate() {
                    if ids[..i].contains(id) {
                        errors.push(FieldError::new(format!("componentIds.{i}"), "duplicate"));
                    }
                }
            }
        }
        errors
    }
}

/// The answer to every well-formed subscription request.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct SubscribeAccepted {
    /// Always true: the same answer whether or not the address was already subscribed.
    pub accepted: bool,
    /// What happens next.
    pub message: String,
}

/// The address as stored: trimmed and lowercased.
pub fn normalized_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// The mailbox an address delivers to, as the limits count it: lowercased, the quotes of a
/// quoted local part and a `+tag` removed (`"Victim+1"@Example.com` is `victim@example.com`),
/// so variants of one address share its budget.
pub fn mailbox(email: &str) -> String {
    let email = normalized_email(email);
    let Some((local, domain)) = email.rsplit_once('@') else {
        return email;
    };
    let local = local
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or(local);
    let local = local.split('+').next().unwrap_or(local);
    format!("{local}@{domain}")
}

const DAY_MS: i64 = 24 * 3_600_000;

fn links(cx: &Cx) -> SubscriberLinks {
    SubscriberLinks::new(cx.config().public_url.as_str(), cx.link_secret())
}

/// The code of a subscription refused because this server sends no email.
pub const NO_EMAIL_CODE: &str = "SMTP_NOT_CONFIGURED";

/// The refusal of a subscription on a server without an SMTP relay: no confirmation could
/// ever reach the address, so it is said at once rather than "check your inbox".
pub fn no_email() -> DomainError {
    DomainError::Conflict(
        NO_EMAIL_CODE,
        "This server sends no email (it has no SMTP relay configured), so it cannot take \
         subscriptions: follow the page's RSS or Atom feed instead."
            .into(),
    )
}

/// Subscribes `input.email` to the published page at `slug` (see the module doc).
pub async fn subscribe(
    core: &Cx,
    slug: &str,
    input: Subscribe,
) -> Result<SubscribeAccepted, DomainError> {
    let page = store::status_pages::by_slug(core.db().reader(), slug)
        .await?
        .filter(|p| p.published != 0)
        .ok_or(DomainError::NotFound(Resource::StatusPage))?;
    input.check()?;
    let chosen = input.component_ids.unwrap_or_default();
    let components = store::status_pages::components(core.db().reader(), &page.id).await?;
    let mut errors = Vec::new();
    let mut names = Vec::new();
    for (i, id) in chosen.iter().enumerate() {
        match components.iter().find(|c| &c.id == id) {
            Some(c) => names.push(c.name.clone()),
            None => errors.push(FieldError::new(
                format!("componentIds.{i}"),
                "no component with this id on this status page",
            )),
        }
    }
    if !errors.is_empty() {
        return Err(DomainError::Validation {
            fields: errors,
            form: Vec::new(),
        });
    }
    if core.config().smtp.is_none() {
        return Err(no_email());
    }
    let email = normalized_email(&input.email);
    let encoded = json!(chosen).to_string();
    let now = core.clock().now_ms();
    let links = links(core);
    let page_data = subscriber_mail::page_data(&page.id, &page.name, &page.slug, &links);
    let mut tx = core.db().begin().await?;
    let existing = store::subscribers::by_email(&mut *tx, &page.id, &email).await?;
    let pending = match existing {
        None => {
            let row = SubscriberRow {
                id: new_id(),
                workspace_id: page.workspace_id.clone(),
                status_page_id: page.id.clone(),
                email,
                component_ids: encoded,
                verified_at: None,
                unsubscribed_at: None,
                created_at: now,
                suspended_at: None,
            };
            // 0: the same address subscribed at the same moment on another node, whose
            // confirmation is the one sent.
            (store::subscribers::insert(&mut *tx, &row).await? == 1).then_some(row)
        }
        Some(row)
            if row.verified_at.is_some()
                && row.unsubscribed_at.is_none()
                && row.suspended_at.is_none() =>
        {
            None
        }
        Some(mut row) => {
            store::subscribers::restart(&mut *tx, &row.id, &encoded).await?;
            row.component_ids = encoded;
            row.verified_at = None;
            row.unsubscribed_at = None;
            row.suspended_at = None;
            Some(row)
        }
    };
    // Past the mailbox's daily cap the subscription waits unconfirmed and nothing is sent;
    // the answer stays the same, so the cap tells nobody anything about the address.
    let cap = i64::from(
        core.config()
            .rate_limits
            .subscribe_confirmations_per_mailbox_day,
    );
    let mut sent = false;
    if let Some(row) = &pending {
        let mailbox = mailbox(&row.email);
        let recent =
            store::subscribers::confirmations_since(&mut *tx, &mailbox, now - DAY_MS).await?;
        if recent < cap {
            store::subscribers::prune_confirmations(&mut *tx, now - DAY_MS).await?;
            store::subscribers::record_confirmation(&mut *tx, &mailbox, now).await?;
            subscriber_mail::enqueue_confirmation(&mut tx, row, page_data, &names, now).await?;
            sent = true;
        }
    }
    tx.commit().await?;
    if sent {
        core.wake_deliveries();
    }
    Ok(SubscribeAccepted {
        accepted: true,
        message: "If this address is not subscribed yet, a confirmation email is on its way: \
                  follow its link to start receiving updates."
            .into(),
    })
}

/// The status page a link belongs to, as its pages for people show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLook {
    pub name: String,
    /// The page's public address.
    pub url: String,
    /// Its primary colour, when it has one.
    pub colour: Option<String>,
    /// Its language (the branding's), which the pages are written in where they can be.
    pub language: String,
}

/// What a verify or unsubscribe link found or did, for the page shown to the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The verify link is good; the page asks to confirm (GET).
    ConfirmVerify {
        page: PageLook,
    },
    /// The subscription is confirmed (now or before).
    Verified {
        page: PageLook,
    },
    /// The unsubscribe link is good; the page asks to confirm (GET).
    ConfirmUnsubscribe {
        page: PageLook,
    },
    /// The subscription is ended (now or before).
    Unsubscribed {
        page: PageLook,
    },
    /// A verify link of a subscription ended since: nothing was verified.
    NotActive {
        page: PageLook,
    },
    Expired,
    /// Not a link this server signed, or its subscriber was deleted.
    Invalid,
}

/// A link's subscriber with its page.
type Found = (SubscriberRow, PageLook);

/// The subscriber a link names, or what to tell the person instead.
async fn resolve(
    cx: &Cx,
    kind: LinkKind,
    token: &str,
) -> Result<Result<Found, LinkOutcome>, DomainError> {
    let now = cx.clock().now_ms();
    let links = links(cx);
    let id = match links.check(kind, token, now) {
        Verify::Valid(id) => id,
        Verify::Expired => return Ok(Err(LinkOutcome::Expired)),
        Verify::Invalid => return Ok(Err(LinkOutcome::Invalid)),
    };
    let Some(row) = store::subscribers::by_id(cx.db().reader(), &id).await? else {
        return Ok(Err(LinkOutcome::Invalid));
    };
    let look = match store::status_pages::by_id(cx.db().reader(), &row.status_page_id).await? {
        Some(p) => {
            let branding = super::stored_branding(&p);
            PageLook {
                url: links.page_url(&p.slug),
                colour: branding.primary_color,
                language: branding.language,
                name: p.name,
            }
        }
        None => return Ok(Err(LinkOutcome::Invalid)),
    };
    Ok(Ok((row, look)))
}

/// Follows a verify link: `apply` false only checks it (the page for `GET`, which a mail
/// scanner may fetch), true confirms the subscription (`POST`, from that page's button).
pub async fn verify_link(cx: &Cx, token: &str, apply: bool) -> Result<LinkOutcome, DomainError> {
    let (row, page) = match resolve(cx, LinkKind::Verify, token).await? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if row.unsubscribed_at.is_some() {
        return Ok(LinkOutcome::NotActive { page });
    }
    if !apply {
        return Ok(if row.verified_at.is_some() {
            LinkOutcome::Verified { page }
        } else {
            LinkOutcome::ConfirmVerify { page }
        });
    }
    let now = cx.clock().now_ms();
    let rows = store::subscribers::verify(cx.db().writer(), &row.id, now).await?;
    Ok(if rows == 0 {
        LinkOutcome::NotActive { page }
    } else {
        LinkOutcome::Verified { page }
    })
}

/// Follows an unsubscribe link: `apply` false only checks it (the page for `GET`), true ends
/// the subscription (`POST`, from the page's button or a mail client's one-click request).
pub async fn unsubscribe_link(
    cx: &Cx,
    token: &str,
    apply: bool,
) -> Result<LinkOutcome, DomainError> {
    let (row, page) = match resolve(cx, LinkKind::Unsubscribe, token).await? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    if row.unsubscribed_at.is_some() {
        return Ok(LinkOutcome::Unsubscribed { page });
    }
    if !apply {
        return Ok(LinkOutcome::ConfirmUnsubscribe { page });
    }
    let now = cx.clock().now_ms();
    store::subscribers::unsubscribe(cx.db().writer(), &row.id, now).await?;
    Ok(LinkOutcome::Unsubscribed { page })
}

/// Where a subscription stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SubscriberState {
    /// Waiting for the address to confirm; sent nothing but the confirmation.
    Pending,
    /// Confirmed: sent the page's incident news.
    Active,
    /// Unsubscribed: sent nothing.
    Unsubscribed,
    /// Confirmed, but the page turned private since: sent nothing until an admin re-admits it
    /// (`POST /status-pages/{page_id}/subscribers/{subscriber_id}/readmit`).
    Suspended,
}

/// A subscriber of a status page.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Subscriber {
    pub id: String,
    pub status_page_id: String,
    /// Lowercased.
    pub email: String,
    /// The components chosen; empty for the whole page.
    pub component_ids: Vec<String>,
    /// Whether the address confirmed the subscription.
    pub verified: bool,
    #[schemars(with = "Option<Timestamp>")]
    pub verified_at: Option<String>,
    pub state: SubscriberState,
    #[schemars(with = "Option<Timestamp>")]
    pub unsubscribed_at: Option<String>,
    /// When the page turned private (the subscriber is sent nothing until re-admitted).
    #[schemars(with = "Option<Timestamp>")]
    pub suspended_at: Option<String>,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
}

fn view(r: &SubscriberRow) -> Subscriber {
    let state = match (r.verified_at, r.unsubscribed_at, r.suspended_at) {
        (_, Some(_), _) => SubscriberState::Unsubscribed,
        (_, None, Some(_)) => SubscriberState::Suspended,
        (Some(_), None, None) => SubscriberState::Active,
        (None, None, None) => SubscriberState::Pending,
    };
    Subscriber {
        id: r.id.clone(),
        status_page_id: r.status_page_id.clone(),
        email: r.email.clone(),
        component_ids: r.component_ids(),
        verified: r.verified_at.is_some(),
        verified_at: r.verified_at.map(rfc3339),
        state,
        unsubscribed_at: r.unsubscribed_at.map(rfc3339),
        suspended_at: r.suspended_at.map(rfc3339),
        created_at: rfc3339(r.created_at),
    }
}

/// A page of subscribers, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct SubscriberPage {
    pub subscribers: Vec<Subscriber>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SubscriberPath {
    pub page_id: String,
    pub subscriber_id: String,
}

impl Validate for SubscriberPath {}

/// A status page's subscribers, in cursor pages.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    params: &PageParams,
) -> Result<SubscriberPage, DomainError> {
    caller.require::<caps::StatusPagesRead>()?;
    params.check()?;
    let page = load(cx, caller, page_id).await?;
    let rows = store::subscribers::page(
        cx.db().reader(),
        &caller.workspace_id,
        &page.id,
        &params.after(),
        i64::from(params.limit()) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, params.limit(), |r| r.id.clone());
    Ok(SubscriberPage {
        subscribers: rows.iter().map(view).collect(),
        next_cursor,
    })
}

/// Removes a subscriber and its email history; queued email to it is dropped with it.
pub async fn delete(cx: &Cx, caller: &Caller, path: &SubscriberPath) -> Result<(), DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let page = load(cx, caller, &path.page_id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::subscribers::delete(
        &mut *tx,
        &caller.workspace_id,
        &page.id,
        &path.subscriber_id,
    )
    .await?;
    check_write(rows, None, DomainError::NotFound(Resource::Subscriber))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "subscriber.delete",
            resource_type: "subscriber",
            resource_id: &path.subscriber_id,
            metadata: json!({"statusPageId": page.id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Lifts a subscriber's suspension: it is sent the page's news again (if it confirmed and did
/// not unsubscribe). Idempotent.
pub async fn readmit(
    cx: &Cx,
    caller: &Caller,
    path: &SubscriberPath,
) -> Result<Subscriber, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let page = load(cx, caller, &path.page_id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::subscribers::readmit(
        &mut *tx,
        &caller.workspace_id,
        &page.id,
        &path.subscriber_id,
    )
    .await?;
    check_write(rows, None, DomainError::NotFound(Resource::Subscriber))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "subscriber.readmit",
            resource_type: "subscriber",
            resource_id: &path.subscriber_id,
            metadata: json!({"statusPageId": page.id}),
        },
        now,
    )
    .await?;
    let row = store::subscribers::by_id(&mut *tx, &path.subscriber_id)
        .await?
        .ok_or(DomainError::NotFound(Resource::Subscriber))?;
    tx.commit().await?;
    Ok(view(&row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_addresses_and_duplicate_components_name_their_field() {
        let bad = |email: &str| Subscribe {
            email: email.into(),
            component_ids: None,
        };
        for e in ["", "nobody", "a@b", "a b@example.com", "a@exa\tmple.com"] {
            let fields: Vec<String> = bad(e).validate().into_iter().map(|f| f.field).collect();
            assert_eq!(fields, ["email"], "{e:?}");
        }
        assert!(bad(" Ada@Example.com ").validate().is_empty());
        assert_eq!(normalized_email(" Ada@Example.com "), "ada@example.com");
        for variant in [
            "victim@example.com",
            "Victim+1@Example.com",
            "\"victim\"@example.com",
            "\"Victim+x\"@EXAMPLE.com",
        ] {
            assert_eq!(mailbox(variant), "victim@example.com", "{variant}");
        }
        let dup = Subscribe {
            email: "a@example.com".into(),
            component_ids: Some(vec!["c1".into(), "c2".into(), "c1".into()]),
        };
        let fields: Vec<String> = dup.validate().into_iter().map(|f| f.field).collect();
        assert_eq!(fields, ["componentIds.2"]);
    }
}
