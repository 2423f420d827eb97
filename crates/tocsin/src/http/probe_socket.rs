//! The server side of a probe connection: `GET /probe/v1/connect`.
//!
//! The request must carry `Authorization: Bearer prb_...` (an unrevoked probe key, checked in
//! constant time against its stored hash; otherwise 401 `UNAUTHORIZED`) and may name its region
//! in `X-Tocsin-Probe-Region`, which must then be the key's (otherwise 403
//! `PROBE_REGION_MISMATCH`): the key, not the probe, decides the region. The route is not part
//! of the REST contract and stays out of the OpenAPI document, like `/auth/...`.
//!
//! Once upgraded, the session registers with the [`Registry`](crate::probes::Registry), greets the
//! probe, forwards the jobs dispatched to it and routes results back to their waiting
//! dispatches. A probe is *heard* when a frame arrives from it (a pong, results): only that
//! moves its region's `lastSeenAt` (in the registry at once, in the store at the next ping
//! tick), never the server's own sending, so a frozen probe's region shows when it was really
//! last heard from. Every ping interval the session pings the probe and notices a key revoked
//! meanwhile (the connection is then closed). The connection is dropped — and the region stops
//! being live — the moment the probe has been silent for [`silence_limit`] (two and a half ping
//! intervals: 25 s by default), measured from the last frame heard, not checked at the next
//! tick; a send the probe does not read (its socket buffers full) cannot hold the session past
//! that moment either. The session ends when the probe goes away or the server shuts down; the
//! server itself never depends on a probe.

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use futures::{SinkExt, StreamExt};
use tocsin_checks::Outcome;
use tokio::sync::oneshot;

use crate::domain::{CredentialProblem, DomainError};
use crate::http::error::ApiError;
use crate::http::AppState;
use crate::probes::keys;
use crate::probes::protocol::{
    silence_limit, ProbeMessage, ServerMessage, CONNECT_PATH, REGION_HEADER,
};
use crate::store::probes::{self, ProbeKeyRow};

/// Largest frame a probe may send: a batch of results with response bodies on failures.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

pub fn router() -> Router<AppState> {
    Router::new().route(CONNECT_PATH, get(connect))
}

async fn connect(
    State(state): State<AppState>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or(DomainError::Unauthorized)?;
    let key = keys::authenticate(state.db(), presented.trim())
        .await?
        .ok_or(DomainError::BadCredential(
            CredentialProblem::UnknownProbeKey,
        ))?;
    if let Some(claimed) = headers.get(REGION_HEADER).and_then(|v| v.to_str().ok()) {
        if claimed != key.region {
            return Err(DomainError::Forbidden(
                "PROBE_REGION_MISMATCH",
                format!(
                    "This probe key belongs to region {:?}, not {claimed:?}: run the probe in its key's region, or create a key for {claimed:?}.",
                    key.region
                ),
            )
            .into());
        }
    }
    let upgrade = upgrade.map_err(|_| {
        ApiError::form("This endpoint takes a WebSocket upgrade: connect with `tocsin probe`.")
    })?;
    Ok(upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| session(state, key, socket)))
}

/// Why a session ended, for the log.
#[derive(Debug, Clone, Copy)]
enum End {
    ProbeLeft,
    Silent,
    Revoked,
    ServerClosing,
    SendFailed,
}

async fn session(state: AppState, key: ProbeKeyRow, socket: WebSocket) {
    let registry = state.probes();
    let now = state.clock().now_ms();
    let (_guard, mut jobs) = registry.register(&key.region, &key.name, now);
    if let Err(e) = probes::touch(state.db().writer(), &key.id, now).await {
        tracing::warn!(region = %key.region, error = %e, "could not record probe last_seen_at");
    }
    tracing::info!(region = %key.region, probe = %key.name, "probe connected");
    let (mut tx, mut rx) = socket.split();
    let interval = state.config().probe_ping_interval;
    let welcome = ServerMessage::Welcome {
        region: key.region.clone(),
        name: key.name.clone(),
        ping_interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
    };
    let mut pending: HashMap<u64, oneshot::Sender<Option<Outcome>>> = HashMap::new();
    let mut ping = tokio::time::interval(interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let silent_after = silence_limit(interval);
    let mut heard = Instant::now();
    // When the probe last sent anything (server clock, ms), and what was last stored: only
    // an answer from the probe moves `lastSeenAt`, never the server's own ping.
    let (mut heard_ms, mut recorded_ms) = (now, now);
    let welcomed = tokio::time::timeout(silent_after, send_json(&mut tx, &welcome)).await;
    let end = if !matches!(welcomed, Ok(Ok(()))) {
        End::SendFailed
    } else {
        loop {
            // The probe is gone at this moment unless a frame arrives first.
            let gone_at = tokio::time::Instant::from_std(heard + silent_after);
            tokio::select! {
                _ = registry.closing().cancelled() => break End::ServerClosing,
                _ = tokio::time::sleep_until(gone_at) => break End::Silent,
                Some(d) = jobs.recv() => {
                    let id = d.job.id;
                    let job = ServerMessage::Job { job: d.job };
                    match tokio::time::timeout_at(gone_at, send_json(&mut tx, &job)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(())) => break End::SendFailed,
                        Err(_) => break End::Silent,
                    }
                    pending.insert(id, d.reply);
                }
                frame = rx.next() => match frame {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break End::ProbeLeft,
                    Some(Ok(Message::Text(text))) => {
                        heard = Instant::now();
                        heard_ms = state.clock().now_ms();
                        registry.seen(&key.region, heard_ms);
                        match serde_json::from_str::<ProbeMessage>(text.as_str()) {
                            Ok(ProbeMessage::Results { results }) => {
                                for r in results {
                                    if let Some(slot) = pending.remove(&r.id) {
                                        if let Some(error) = &r.error {
                                            metrics::counter!("probe_errors_total", "region" => key.region.clone(), "reason" => "job").increment(1);
                                            tracing::warn!(region = %key.region, %error, "probe could not run a job");
                                        }
                                        // The dispatch may have given up already; nothing to do then.
                                        let _ = slot.send(r.outcome.map(Outcome::from));
                                    }
                                }
                            }
                            Err(e) => tracing::warn!(region = %key.region, error = %e, "unreadable probe message ignored"),
                        }
                    }
                    Some(Ok(_)) => {
                        heard = Instant::now();
                        heard_ms = state.clock().now_ms();
                        registry.seen(&key.region, heard_ms);
                    }
                },
                _ = ping.tick() => {
                    let sent = tx.send(Message::Ping(Default::default()));
                    match tokio::time::timeout_at(gone_at, sent).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => break End::SendFailed,
                        Err(_) => break End::Silent,
                    }
                    // Dispatches that gave up (deadline passed) no longer need their slots.
                    pending.retain(|_, slot| !slot.is_closed());
                    if heard_ms > recorded_ms {
                        recorded_ms = heard_ms;
                        match probes::touch(state.db().writer(), &key.id, heard_ms).await {
                            Ok(0) => break End::Revoked,
                            Ok(_) => {}
                            Err(e) => tracing::warn!(region = %key.region, error = %e, "could not record probe last_seen_at"),
                        }
                    }
                }
            }
        }
    };
    let reason = match end {
        End::Revoked => "probe key revoked",
        End::ServerClosing => "server shutting down",
        _ => "bye",
    };
    // A probe that stopped reading cannot take the close frame; do not wait on it.
    let close = tx.send(Message::Close(Some(CloseFrame {
        code: axum::extract::ws::close_code::AWAY,
        reason: reason.into(),
    })));
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), close).await;
    tracing::info!(region = %key.region, probe = %key.name, ended = ?end, "probe disconnected");
}

async fn send_json<S>(tx: &mut S, msg: &ServerMessage) -> Result<(), ()>
where
    S: futures::Sink<Message> + Unpin,
{
    let text = serde_json::to_string(msg).map_err(|_| ())?;
    tx.send(Message::Text(text.into())).await.map_err(|_| ())
}
