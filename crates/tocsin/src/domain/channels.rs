//! Notification channels: where alerts are sent. Reads need `notifications:read`, creating,
//! editing and sending a test `notifications:write`, deleting `notifications:delete`.
//!
//! The record: `id, workspaceId, name, type, config, events, isDefault, enabled, createdAt,
//! updatedAt`. `config` is the type's own (checked by its provider in
//! `alerting::channels`, errors at `config.<key>`); its secrets are never read back: every
//! read shows `********`, and an update that sends `********` back keeps the stored value. A
//! `WEBHOOK` channel without a `secret` gets a generated `whsec_` secret; the create response
//! is the one place it is shown. `events` (default: every event) filters what the channel
//! takes; `isDefault` channels serve monitors that name no channel and no policy; a disabled
//! channel takes nothing (its queued attempts fail with "the channel is disabled") except an
//! explicit test. Audit entries carry the masked config only.
//!
//! An `EMAIL` channel sends through the server's SMTP relay (`--smtp-url`, `--smtp-from`). On
//! a server without one its mails could never leave, so creating one, enabling one
//! (`enabled: true`) or rewriting an enabled one's `config` is refused there (400 at `type`);
//! renaming, disabling and deleting one stay possible, so a channel left by an operator who
//! removed the relay can be cleaned up. (A channel's type cannot be changed by an update.)

use chrono::{DateTime, Utc};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::deliveries::{self, Delivery};
use super::input::{check_name, Validate};
use super::pagination::{finish, PageParams};
use super::{check_write, DomainError, FieldError, Resource};
use crate::alerting::channels::{self, ChannelType, ConfigError};
use crate::alerting::event::AlertEvent;
use crate::alerting::outbox::{self, Notification};
use crate::audit::{self, Entry};
use crate::auth::{caps, needs, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::mail::Mailer;
use crate::store::corrupt::CorruptRow;
use crate::store::{self, channels::ChannelRow};

const MAX_NAME_CHARS: usize = 100;

const CONFIG_DESCRIPTION: &str = "The type's settings: the `<Type>ChannelConfig` schema whose \
`x-channel-type` is the channel's `type` applies (`TelegramChannelConfig` for TELEGRAM, ...; keys \
of other types are refused). EMAIL sends with the server's SMTP relay and is refused on a server \
without one. A WEBHOOK `secret` is generated when absent and shown only in the create response. \
`apiUrl`/`serverUrl` override the provider's address (self-hosted servers). Secrets (the keys \
marked `format: password`, and every WEBHOOK header value) read back as `********`; send \
`********` to keep one unchanged.";

fn config_schema(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": true,
        "description": CONFIG_DESCRIPTION,
        "anyOf": channels::config_schemas(generator),
    })
}

fn optional_config_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut any_of = channels::config_schemas(generator);
    any_of.push(json_schema!({"type": "null"}));
    json_schema!({
        "type": ["object", "null"],
        "additionalProperties": true,
        "description": CONFIG_DESCRIPTION,
        "anyOf": any_of,
    })
}

fn events_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = AlertEvent::ALL.iter().map(|e| e.as_str()).collect();
    json_schema!({"type": "array", "items": {"type": "string", "enum": names}})
}

fn optional_events_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = AlertEvent::ALL.iter().map(|e| e.as_str()).collect();
    json_schema!({"type": ["array", "null"], "items": {"type": "string", "enum": names}})
}

/// A notification channel.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct NotificationChannel {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ChannelType,
    /// Secrets masked as `********` (except a WEBHOOK's `secret` in the create response).
    #[schemars(schema_with = "config_schema")]
    pub config: Value,
    /// The events the channel takes.
    #[schemars(schema_with = "events_schema")]
    pub events: Vec<String>,
    /// Serves every monitor that names no channel and no escalation policy.
    pub is_default: bool,
    pub enabled: bool,
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: String,
    #[schemars(with = "DateTime<Utc>")]
    pub updated_at: String,
}

/// One page of channels, in creation order.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct NotificationChannelPage {
    pub notification_channels: Vec<NotificationChannel>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// The stored type of a channel; an unknown one is a (reported) corrupt row.
fn kind_of(row: &ChannelRow) -> Result<ChannelType, CorruptRow> {
    crate::store::corrupt::parse("notification_channels", &row.id, "type", &row.kind)
}

fn stored_config(row: &ChannelRow) -> Value {
    serde_json::from_str(&row.config).unwrap_or_else(|_| json!({}))
}

fn stored_events(row: &ChannelRow) -> Vec<String> {
    serde_json::from_str(&row.events).unwrap_or_default()
}

/// The record with secrets masked.
pub fn view(row: &ChannelRow) -> Result<NotificationChannel, CorruptRow> {
    let kind = kind_of(row)?;
    Ok(NotificationChannel {
        id: row.id.clone(),
        workspace_id: row.workspace_id.clone(),
        name: row.name.clone(),
        kind,
        config: channels::mask(kind, &stored_config(row)),
        events: stored_events(row),
        is_default: row.is_default != 0,
        enabled: row.enabled != 0,
        created_at: rfc3339(row.created_at),
        updated_at: rfc3339(row.updated_at),
    })
}

fn config_errors(errors: Vec<ConfigError>) -> DomainError {
    errors
        .into_iter()
        .map(|e| FieldError::new(e.field, e.message))
        .collect::<Vec<_>>()
        .into()
}

fn check_events(events: &[String], errors: &mut Vec<FieldError>) {
    for (i, e) in events.iter().enumerate() {
        if AlertEvent::parse(e).is_none() {
            errors.push(FieldError::new(
                format!("events.{i}"),
                "is not an event type (alert.opened, alert.resolved, ...)",
            ));
        } else if events[..i].contains(e) {
            errors.push(FieldError::new(format!("events.{i}"), "duplicate"));
        }
    }
}

fn all_events() -> Vec<String> {
    AlertEvent::ALL
        .iter()
        .map(|e| e.as_str().to_string())
        .collect()
}

/// Keys with a hand-built schema are made optional by `serde(default)`, which also writes
/// `default: null` into the schema; generated clients read a default as "always sent", so it
/// is dropped (absent and `null` mean the same to these operations).
fn no_null_defaults(schema: &mut Schema) {
    let props = schema
        .as_object_mut()
        .and_then(|o| o.get_mut("properties"))
        .and_then(Value::as_object_mut);
    for p in props.into_iter().flat_map(|p| p.values_mut()) {
        if let Some(o) = p.as_object_mut() {
            if o.get("default") == Some(&Value::Null) {
                o.remove("default");
            }
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = no_null_defaults)]
pub struct CreateChannel {
    /// 1 to 100 characters.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ChannelType,
    #[schemars(schema_with = "config_schema")]
    pub config: Value,
    /// The events the channel takes (default: all).
    #[serde(default)]
    #[schemars(schema_with = "optional_events_schema")]
    pub events: Option<Vec<String>>,
    /// Default false.
    pub is_default: Option<bool>,
    /// Default true.
    pub enabled: Option<bool>,
}

impl Validate for CreateChannel {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("name", &self.name, MAX_NAME_CHARS, &mut errors);
        if let Some(e) = &self.events {
            check_events(e, &mut errors);
        }
        errors
    }
}

/// Refuses an `EMAIL` channel that could never send: this server has no SMTP relay.
fn check_relay(mailer: Option<&Mailer>, kind: ChannelType) -> Result<(), DomainError> {
    if kind == ChannelType::Email && mailer.is_none() {
        return Err(DomainError::field(
            "type",
            "this server has no SMTP relay configured (--smtp-url and --smtp-from), so an EMAIL \
             channel could never send: ask the operator to configure one, or use another type",
        ));
    }
    Ok(())
}

/// The provider's check of a config, after the generated parts are filled in.
fn prepare_config(kind: ChannelType, mut config: Value) -> Result<Value, DomainError> {
    if kind == ChannelType::Webhook {
        if let Some(obj) = config.as_object_mut() {
            if obj.get("secret").is_none_or(Value::is_null) {
                obj.insert(
                    "secret".into(),
                    Value::String(channels::webhook::generate_secret()),
                );
            }
        }
    }
    channels::provider(kind)
        .validate(&config)
        .map_err(config_errors)?;
    Ok(config)
}

/// Under `--notify-deny-private-addresses`, a URL the config names that every request would
/// be refused for is refused now, on its field, rather than failing at every delivery.
async fn check_destinations(cx: &Cx, config: &Value) -> Result<(), DomainError> {
    if !cx.config().notify_deny_private_addresses {
        return Ok(());
    }
    let mut errors = Vec::new();
    for (field, url) in channels::written_urls(config) {
        if let Some(ip) = channels::outbound::private_destination(&url).await {
            errors.push(FieldError::new(
                field,
                format!(
                    "points at {ip}, a loopback, private or link-local address, which this \
                     server does not call (--notify-deny-private-addresses)"
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

/// Creates a channel. The response is the only read that shows a WEBHOOK's `secret`.
pub async fn create(
    core: &Cx,
    mailer: Option<&Mailer>,
    caller: &Caller,
    input: CreateChannel,
) -> Result<NotificationChannel, DomainError> {
    caller.require::<caps::NotificationsWrite>()?;
    input.check()?;
    check_relay(mailer, input.kind)?;
    let config = prepare_config(input.kind, input.config)?;
    check_destinations(core, &config).await?;
    let current = store::channels::count(core.db().reader(), &caller.workspace_id).await?;
    crate::domain::plans::ensure_room(
        core,
        &caller.workspace_id,
        crate::domain::plans::Quota::NotificationChannels,
        current,
    )
    .await?;
    let now = core.clock().now_ms();
    let row = ChannelRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: input.name.trim().to_string(),
        kind: input.kind.as_str().to_string(),
        config: config.to_string(),
        events: json!(input.events.unwrap_or_else(all_events)).to_string(),
        is_default: i64::from(input.is_default.unwrap_or(false)),
        enabled: i64::from(input.enabled.unwrap_or(true)),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let mut tx = core.db().begin().await?;
    store::channels::insert(&mut *tx, &row).await?;
    let mut shown = view(&row)?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "notification_channel.create",
            resource_type: "notification_channel",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "type": row.kind, "config": shown.config,
                "events": shown.events, "isDefault": shown.is_default, "enabled": shown.enabled}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    if input.kind == ChannelType::Webhook {
        if let (Some(obj), Some(secret)) = (shown.config.as_object_mut(), config.get("secret")) {
            obj.insert("secret".into(), secret.clone());
        }
    }
    Ok(shown)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChannelPath {
    pub channel_id: String,
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<ChannelRow, DomainError> {
    store::channels::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::NotificationChannel))
}

/// One channel and its version.
pub async fn get(
    cx: &Cx,
    caller: &Caller,
    id: &str,
) -> Result<(NotificationChannel, i64), DomainError> {
    caller.require::<caps::NotificationsRead>()?;
    let row = load(cx, caller, id).await?;
    Ok((view(&row)?, row.version))
}

/// The workspace's channels, a cursor page at a time.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page: &PageParams,
) -> Result<NotificationChannelPage, DomainError> {
    caller.require::<needs::ListNotificationChannels>()?;
    page.check()?;
    let limit = page.limit();
    let rows = store::channels::page(
        cx.db().reader(),
        &caller.workspace_id,
        &page.after(),
        i64::from(limit) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, limit, |r| r.id.clone());
    Ok(NotificationChannelPage {
        // A corrupt row is reported and left out of the page (see `store::corrupt`).
        notification_channels: crate::store::corrupt::readable(rows.iter().map(view)),
        next_cursor,
    })
}

/// Fields to change; absent ones stay. `config` replaces the whole config, where `********`
/// keeps a stored secret.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = no_null_defaults)]
pub struct UpdateChannel {
    pub name: Option<String>,
    // `default`: absent is allowed (and the schema, built by hand, says so through it).
    #[serde(default)]
    #[schemars(schema_with = "optional_config_schema")]
    pub config: Option<Value>,
    #[serde(default)]
    #[schemars(schema_with = "optional_events_schema")]
    pub events: Option<Vec<String>>,
    pub is_default: Option<bool>,
    pub enabled: Option<bool>,
}

impl Validate for UpdateChannel {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            check_name("name", n, MAX_NAME_CHARS, &mut errors);
        }
        if let Some(e) = &self.events {
            check_events(e, &mut errors);
        }
        errors
    }
}

/// Edits a channel if `expected` (when given) is still its version.
pub async fn update(
    core: &Cx,
    mailer: Option<&Mailer>,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateChannel,
) -> Result<(NotificationChannel, i64), DomainError> {
    caller.require::<caps::NotificationsWrite>()?;
    input.check()?;
    let mut row = load(core, caller, id).await?;
    let kind = kind_of(&row)?;
    // Enabling, or rewriting the config of a channel that stays enabled, needs the relay.
    let enabled = input.enabled.unwrap_or(row.enabled != 0);
    if enabled && (input.enabled == Some(true) || input.config.is_some()) {
        check_relay(mailer, kind)?;
    }
    if let Some(config) = &input.config {
        let merged = channels::keep_secrets(kind, config, &stored_config(&row));
        let config = prepare_config(kind, merged)?;
        check_destinations(core, &config).await?;
        row.config = config.to_string();
    }
    if let Some(n) = &input.name {
        row.name = n.trim().to_string();
    }
    if let Some(e) = input.events {
        row.events = json!(e).to_string();
    }
    if let Some(d) = input.is_default {
        row.is_default = i64::from(d);
    }
    if let Some(e) = input.enabled {
        row.enabled = i64::from(e);
    }
    let now = core.clock().now_ms();
    row.updated_at = now;
    let shown = view(&row)?;
    let mut tx = core.db().begin().await?;
    let rows = store::channels::update(&mut *tx, &row, expected).await?;
    check_write(
        rows,
        expected,
        DomainError::NotFound(Resource::NotificationChannel),
    )?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "notification_channel.update",
            resource_type: "notification_channel",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "type": row.kind, "config": shown.config,
                "events": shown.events, "isDefault": shown.is_default, "enabled": shown.enabled}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    get(core, caller, id).await
}

/// Deletes a channel, its history and its monitor bindings.
pub async fn delete(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<(), DomainError> {
    caller.require::<caps::NotificationsDelete>()?;
    let row = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::channels::delete(&mut *tx, &caller.workspace_id, &row.id, expected).await?;
    check_write(
        rows,
        expected,
        DomainError::NotFound(Resource::NotificationChannel),
    )?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "notification_channel.delete",
            resource_type: "notification_channel",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "type": row.kind}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// What a test notification says.
pub const TEST_MESSAGE: &str =
    "This is a test notification from Tocsin: if you can read it, the channel works.";

/// Queues a real `test` delivery to the channel (even a disabled one: it was asked for), sent
/// and recorded like any other; returns its first attempt, still `PENDING`.
pub async fn send_test(core: &Cx, caller: &Caller, id: &str) -> Result<Delivery, DomainError> {
    caller.require::<needs::TestNotificationChannel>()?;
    let row = load(core, caller, id).await?;
    let now = core.clock().now_ms();
    let data = json!({
        "channel": {"id": row.id, "name": row.name, "type": row.kind},
        "message": TEST_MESSAGE,
    });
    let mut tx = core.db().begin().await?;
    let delivery_id = outbox::enqueue(
        &mut tx,
        &Notification {
            workspace_id: &caller.workspace_id,
            channel_id: &row.id,
            alert_id: None,
            event: AlertEvent::Test,
            data: &data,
            at_ms: now,
        },
    )
    .await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "notification_channel.test",
            resource_type: "notification_channel",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "type": row.kind, "deliveryId": delivery_id}),
        },
        now,
    )
    .await?;
    let stored = store::deliveries::get(&mut *tx, &caller.workspace_id, &delivery_id)
        .await?
        .ok_or_else(|| DomainError::Internal(anyhow::anyhow!("the queued test vanished")))?;
    tx.commit().await?;
    core.wake_deliveries();
    Ok(deliveries::view(&stored)?)
}
