//! HTTP adapter for notification channels and their delivery history (operations, rules and
//! the record's shape in `domain::channels` and `domain::deliveries`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{Accepted, ApiJson, ApiQuery, Created, IfMatch, NoContent, Tagged};
use crate::auth::{caps, needs};
use crate::domain::channels::{
    self, ChannelPath, CreateChannel, NotificationChannel, NotificationChannelPage, UpdateChannel,
};
use crate::domain::deliveries::{self, DeliveriesOf, Delivery, DeliveryPage, DeliveryQuery};
use crate::domain::pagination::PageParams;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Notifications";

/// What create and update say of the URLs a config names.
const DESTINATIONS: &str = "Every URL in `config` (`url`, `webhookUrl`, `serverUrl`, `apiUrl`, \
    `homeserverUrl`) must be an absolute http(s) URL that some server could answer: port 0, an \
    unspecified, broadcast or multicast address, or a name under `.invalid` is refused on its \
    field (`VALIDATION_ERROR`). When the server runs with `--notify-deny-private-addresses`, a \
    URL whose host is, or resolves only to, a loopback, private or link-local address is \
    refused the same way (and every send checks again, since names change). Whether the \
    receiver answers right now is not judged: `POST .../test` sends a real message and its \
    outcome is in the delivery history.";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/notification-channels",
            get_with(list, |op| {
                op.id("listNotificationChannels").tag(TAG).summary(
                    "The workspace's notification channels, a cursor page at a time; secrets masked (`notifications:read`)",
                )
            })
            .post_with(create, |op| {
                op.id("createNotificationChannel").tag(TAG).summary(
                    "Create a channel; a WEBHOOK's signing secret (generated when not given) is shown in this response only (`notifications:write`)",
                )
                .description(DESTINATIONS)
            }),
        )
        .api_route(
            "/notification-channels/{channel_id}",
            get_with(get_one, |op| {
                op.id("getNotificationChannel")
                    .tag(TAG)
                    .summary("One channel; secrets masked (`notifications:read`)")
            })
            .patch_with(update, |op| {
                op.id("updateNotificationChannel").tag(TAG).summary(
                    "Edit a channel; `********` keeps a stored secret; version-locked with If-Match (`notifications:write`)",
                )
                .description(DESTINATIONS)
            })
            .delete_with(delete, |op| {
                op.id("deleteNotificationChannel").tag(TAG).summary(
                    "Delete a channel, its delivery history and its monitor bindings (`notifications:delete`)",
                )
            }),
        )
        .api_route(
            "/notification-channels/{channel_id}/test",
            post_with(send_test, |op| {
                op.id("testNotificationChannel").tag(TAG).summary(
                    "Send a real `test` notification, queued and recorded like any other; answers its first attempt (`notifications:write`)",
                )
            }),
        )
        .api_route(
            "/notification-channels/{channel_id}/deliveries",
            get_with(list_deliveries, |op| {
                op.id("listNotificationChannelDeliveries").tag(TAG).summary(
                    "The channel's delivery attempts, newest first, filtered by status and event (`notifications:read`)",
                )
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<needs::ListNotificationChannels>,
    ApiQuery(q): ApiQuery<PageParams>,
) -> ApiResult<Json<NotificationChannelPage>> {
    Ok(Json(channels::list(state.cx(), &caller, &q).await?))
}

async fn create(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsWrite>,
    ApiJson(body): ApiJson<CreateChannel>,
) -> ApiResult<Created<NotificationChannel>> {
    Ok(Created(
        channels::create(state.cx(), state.mailer(), &caller, body).await?,
    ))
}

async fn get_one(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsRead>,
    Path(p): Path<ChannelPath>,
) -> ApiResult<Tagged<NotificationChannel>> {
    let (channel, version) = channels::get(state.cx(), &caller, &p.channel_id).await?;
    Ok(Tagged(channel, version))
}

async fn update(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsWrite>,
    Path(p): Path<ChannelPath>,
    IfMatch(expected): IfMatch,
    ApiJson(body): ApiJson<UpdateChannel>,
) -> ApiResult<Tagged<NotificationChannel>> {
    let (channel, version) = channels::update(
        state.cx(),
        state.mailer(),
        &caller,
        &p.channel_id,
        expected,
        body,
    )
    .await?;
    Ok(Tagged(channel, version))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsDelete>,
    Path(p): Path<ChannelPath>,
    IfMatch(expected): IfMatch,
) -> ApiResult<NoContent> {
    channels::delete(state.cx(), &caller, &p.channel_id, expected).await?;
    Ok(NoContent)
}

async fn send_test(
    State(state): State<AppState>,
    caller: Auth<needs::TestNotificationChannel>,
    Path(p): Path<ChannelPath>,
) -> ApiResult<Accepted<Delivery>> {
    Ok(Accepted(
        channels::send_test(state.cx(), &caller, &p.channel_id).await?,
    ))
}

async fn list_deliveries(
    State(state): State<AppState>,
    caller: Auth<caps::NotificationsRead>,
    Path(p): Path<ChannelPath>,
    ApiQuery(q): ApiQuery<DeliveryQuery>,
) -> ApiResult<Json<DeliveryPage>> {
    Ok(Json(
        deliveries::list(
            state.cx(),
            &caller,
            DeliveriesOf::Channel(&p.channel_id),
            &q,
        )
        .await?,
    ))
}
