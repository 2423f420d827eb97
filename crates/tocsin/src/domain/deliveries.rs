//! Delivery history: every attempt to send a notification, as the API shows it (`Delivery`),
//! and its cursor pages (newest first) for one channel (`GET
//! /notification-channels/{id}/deliveries`, `notifications:read`) or one alert (`GET
//! /alerts/{id}/deliveries`, `monitors:read`), filtered by `status` and `event`. A failed
//! attempt stays in the history; a retry is a new item with `attempt` one higher.

use chrono::{DateTime, Utc};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::input::Validate;
use super::pagination::{finish, PageParams};
use super::{DomainError, FieldError, Resource};
use crate::alerting::event::AlertEvent;
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::store;
use crate::store::corrupt::CorruptRow;
use crate::store::deliveries::{DeliveryFilter, DeliveryRow};

/// Where an attempt is: the stored status, typed at the storage seam.
pub use crate::store::deliveries::DeliveryStatus;

/// The schema of one event name (`alert.opened` ...).
pub fn event_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = AlertEvent::ALL.iter().map(|e| e.as_str()).collect();
    json_schema!({ "type": "string", "enum": names })
}

fn optional_event_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = AlertEvent::ALL.iter().map(|e| e.as_str()).collect();
    json_schema!({ "type": ["string", "null"], "enum": names })
}

/// One attempt to deliver one notification to one channel.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Delivery {
    pub id: String,
    pub channel_id: String,
    /// The alert it is about; null for `test` and events without an alert.
    pub alert_id: Option<String>,
    #[schemars(schema_with = "event_schema")]
    pub event: String,
    pub status: DeliveryStatus,
    /// 1 for the first attempt of a notification, then 2, 3 ...
    pub attempt: i64,
    /// The provider's HTTP status, when it answered.
    pub response_status: Option<i64>,
    /// Why the attempt failed (transport error, or the start of the provider's answer).
    pub error: Option<String>,
    /// How long the attempt took.
    pub latency_ms: Option<i64>,
    #[schemars(with = "DateTime<Utc>")]
    pub created_at: String,
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub delivered_at: Option<String>,
}

/// The API shape of a stored attempt; a status this build cannot read is a (reported) corrupt
/// row.
pub fn view(r: &DeliveryRow) -> Result<Delivery, CorruptRow> {
    let status = crate::store::corrupt::parse("deliveries", &r.id, "status", &r.status)?;
    Ok(Delivery {
        id: r.id.clone(),
        // The histories are a channel's or an alert's: subscriber email never shows here.
        channel_id: r.channel_id.clone().unwrap_or_default(),
        alert_id: r.alert_id.clone(),
        event: r.event.clone(),
        status,
        attempt: r.attempt,
        response_status: r.response_status,
        error: r.error.clone(),
        latency_ms: r.latency_ms,
        created_at: rfc3339(r.created_at),
        delivered_at: r.delivered_at.map(rfc3339),
    })
}

/// One page of attempts, newest first.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct DeliveryPage {
    pub deliveries: Vec<Delivery>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    pub next_cursor: Option<String>,
}

/// `?cursor=&limit=&status=&event=`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeliveryQuery {
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    pub limit: Option<u32>,
    /// Only attempts in this status.
    pub status: Option<DeliveryStatus>,
    /// Only attempts of this event.
    #[schemars(schema_with = "optional_event_schema")]
    pub event: Option<String>,
}

impl DeliveryQuery {
    fn page(&self) -> PageParams {
        PageParams {
            cursor: self.cursor.clone(),
            limit: self.limit,
        }
    }
}

impl Validate for DeliveryQuery {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = self.page().validate();
        if let Some(e) = &self.event {
            if AlertEvent::parse(e).is_none() {
                errors.push(FieldError::new("event", "is not an event type"));
            }
        }
        errors
    }
}

/// Whose history to page through.
#[derive(Debug, Clone, Copy)]
pub enum DeliveriesOf<'a> {
    Channel(&'a str),
    Alert(&'a str),
}

/// A page of the history of one channel (`notifications:read`) or one alert
/// (`monitors:read`); `NOTIFICATION_CHANNEL_NOT_FOUND` / `ALERT_NOT_FOUND` when it is not one
/// of the caller's workspace.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    of: DeliveriesOf<'_>,
    query: &DeliveryQuery,
) -> Result<DeliveryPage, DomainError> {
    let ws = &caller.workspace_id;
    let mut filter = DeliveryFilter {
        status: query.status.map(|s| s.as_str().to_string()),
        event: query.event.clone(),
        ..DeliveryFilter::default()
    };
    match of {
        DeliveriesOf::Channel(id) => {
            caller.require::<caps::NotificationsRead>()?;
            store::channels::get(cx.db().reader(), ws, id)
                .await?
                .ok_or(DomainError::NotFound(Resource::NotificationChannel))?;
            filter.channel_id = Some(id.to_string());
        }
        DeliveriesOf::Alert(id) => {
            caller.require::<caps::MonitorsRead>()?;
            if !store::deliveries::alert_exists(cx.db().reader(), ws, id).await? {
                return Err(DomainError::NotFound(Resource::Alert));
            }
            filter.alert_id = Some(id.to_string());
        }
    }
    query.check()?;
    let params = query.page();
    let limit = params.limit();
    let rows = store::deliveries::page(
        cx.db().reader(),
        ws,
        &filter,
        &params.after(),
        i64::from(limit) + 1,
    )
    .await?;
    let (rows, next_cursor) = finish(rows, limit, |r| r.id.clone());
    Ok(DeliveryPage {
        // A corrupt row is reported and left out of the page (see `store::corrupt`).
        deliveries: crate::store::corrupt::readable(rows.iter().map(view)),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_delivery_status_round_trips_and_strangers_are_errors() {
        crate::store::corrupt::assert_round_trip(&DeliveryStatus::ALL, DeliveryStatus::as_str);
    }
}
