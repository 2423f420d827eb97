//! `GET /stream`: the dashboard's live stream of its workspace, as Server-Sent Events
//! (`monitors:read`; session cookie or bearer key). Outside the REST contract, so not in the
//! API document; refusals (401, 403, 429) are still the JSON envelope. What it carries and how
//! it resumes is [`crate::domain::stream`]; the frames arrive encoded (once for every stream,
//! see [`crate::live`]), keep-alive comments included, and this adapter writes them as the
//! response body.

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use crate::auth::caps;
use crate::domain::stream as ops;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

pub const PATH: &str = "/stream";

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
    let opened = ops::open(state.cx(), state.live(), &caller, resume.as_deref()).await?;
    let chunks = futures::stream::unfold(opened, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((Ok::<_, Infallible>(chunk), s))
    });
    let mut response = Body::from_stream(chunks).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-store"),
    );
    // Proxies must pass frames on as they come.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}
