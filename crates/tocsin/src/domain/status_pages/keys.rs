//! Publishable keys of a status page (`pk_...`): read-only, one page each, safe to put in a
//! browser page (they read only what the public page shows), revocable. Listing needs
//! `status_pages:read`; creating and revoking need `status_pages:write`. The key itself is
//! shown once, in the create answer; only its SHA-256 is stored.
//!
//! [`resolve`] turns a presented key into its page for the embed API and badges: unknown,
//! malformed and revoked keys are all 401 `UNAUTHORIZED`. Revoking announces the page, and
//! every node's resolved-key memory (`public::keys`) forgets that page's keys.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{announce, load};
use crate::audit::{self, Entry};
use crate::auth::{caps, secrets, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::input::{check_name, Validate};
use crate::domain::{check_write, DomainError, FieldError, Resource};
use crate::ids::new_id;
use crate::schema::Timestamp;
use crate::store::{self, publishable_keys::KeyRow};

/// The prefix of publishable keys.
pub const PREFIX: &str = "pk_";
const MAX_KEYS_PER_PAGE: usize = 20;

/// A publishable key as listed (never the key itself).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct PublishableKey {
    pub id: String,
    pub status_page_id: String,
    pub name: String,
    /// `pk_` and the key's last four characters, to recognise it.
    pub hint: String,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    /// When the key last read the page (coalesced to about a minute); null if never.
    #[schemars(with = "Option<Timestamp>")]
    pub last_used_at: Option<String>,
}

/// A new key: the record plus the key, shown this once.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct CreatedPublishableKey {
    pub id: String,
    pub status_page_id: String,
    pub name: String,
    pub hint: String,
    /// The key (`pk_...`): store it now, it is never shown again.
    pub key: String,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
    #[schemars(with = "Option<Timestamp>")]
    pub last_used_at: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePublishableKey {
    /// 1 to 100 characters, such as where the key is used.
    pub name: String,
}

impl Validate for CreatePublishableKey {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("name", &self.name, 100, &mut errors);
        errors
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeyPath {
    pub page_id: String,
    pub key_id: String,
}

fn view(k: &KeyRow) -> PublishableKey {
    PublishableKey {
        id: k.id.clone(),
        status_page_id: k.status_page_id.clone(),
        name: k.name.clone(),
        hint: k.prefix.clone(),
        created_at: rfc3339(k.created_at),
        last_used_at: k.last_used_at.map(rfc3339),
    }
}

/// A page's keys, oldest first.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
) -> Result<Vec<PublishableKey>, DomainError> {
    caller.require::<caps::StatusPagesRead>()?;
    let page = load(cx, caller, page_id).await?;
    let rows =
        store::publishable_keys::list(cx.db().reader(), &caller.workspace_id, &page.id).await?;
    Ok(rows.iter().map(view).collect())
}

/// Mints a key for a page.
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    input: CreatePublishableKey,
) -> Result<CreatedPublishableKey, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    input.check()?;
    let page = load(cx, caller, page_id).await?;
    let existing =
        store::publishable_keys::list(cx.db().reader(), &caller.workspace_id, &page.id).await?;
    if existing.len() >= MAX_KEYS_PER_PAGE {
        return Err(DomainError::Conflict(
            "TOO_MANY_KEYS",
            format!("A status page holds at most {MAX_KEYS_PER_PAGE} publishable keys: revoke one first."),
        ));
    }
    let key = secrets::generate(PREFIX);
    let now = cx.clock().now_ms();
    let row = KeyRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        status_page_id: page.id.clone(),
        name: input.name.trim().to_string(),
        prefix: secrets::hint_with(PREFIX, &key),
        key_hash: secrets::hash(&key),
        created_at: now,
        last_used_at: None,
    };
    let mut tx = cx.db().begin().await?;
    store::publishable_keys::insert(&mut *tx, &row).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "publishable_key.create",
            resource_type: "publishable_key",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "statusPageId": page.id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(CreatedPublishableKey {
        id: row.id,
        status_page_id: row.status_page_id,
        name: row.name,
        hint: row.prefix,
        key,
        created_at: rfc3339(row.created_at),
        last_used_at: None,
    })
}

/// Revokes a key: it stops working at once on every node.
pub async fn delete(cx: &Cx, caller: &Caller, path: &KeyPath) -> Result<(), DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let page = load(cx, caller, &path.page_id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows =
        store::publishable_keys::delete(&mut *tx, &caller.workspace_id, &page.id, &path.key_id)
            .await?;
    check_write(rows, None, DomainError::NotFound(Resource::PublishableKey))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "publishable_key.delete",
            resource_type: "publishable_key",
            resource_id: &path.key_id,
            metadata: json!({"statusPageId": page.id}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &page.id);
    Ok(())
}

impl Validate for KeyPath {}
