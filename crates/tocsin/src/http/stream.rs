//! `GET /stream`: the dashboard's live stream of its workspace, as Server-Sent Events
//! (`monitors:read`; session cookie or bearer key). Outside the REST contract, so not in the
//! API document; refusals (401, 403, 429) are still the JSON envelope. What it carries and how
//! it resumes is [`crate::domain::stream`]; this adapter writes the frames and a
//! `: keep-alive` comment every 15 s.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use crate::auth::caps;
use crate::domain::stream::{self as ops, Out};
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub const PATH: &str = "/stream";
/// The comment sent when nothing else was for this long.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(stream))
}

#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    /// For clients that cannot set the `Last-Event-ID` header.
    #[serde(rename = "lastEventId")]
    last_event_id: Option<String>,
}

async fn stream(
    State(state): State<AppState>,
    caller: Auth<caps::MonitorsRead>,
    headers: HeaderMap,
    Query(query): Query<StreamQuery>,
) -> ApiResult<Response> {
    let from_header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let resume = from_header.or(query.last_event_id);
    let opened = ops::open(&state, &caller, resume.as_deref()).await?;
    let events = futures::stream::unfold(opened, |mut s| async move {
        let out = s.next().await?;
        let event = match out {
            Out::Event { event, id, data } => Event::default().event(event).id(id).data(data),
            Out::Cursor(id) => Event::default().id(id),
        };
        Some((Ok::<_, Infallible>(event), s))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive"))
        .into_response();
    // Proxies must pass frames on as they come.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-store"),
    );
    Ok(response)
}
