//! `tocsin probe`: the remote probe. It connects out to the server's
//! [`CONNECT_PATH`](super::protocol::CONNECT_PATH) (so it works behind NAT), runs the jobs it
//! receives with the check engine (at most `max_in_flight` at once) and sends the results back in
//! batches (every [`FLUSH_EVERY`] or [`BATCH_MAX`] results, whichever comes first).
//!
//! The server pings every connection; a connection on which nothing (not even a ping) arrived
//! for [`MISSED_PINGS`] of the server's ping intervals counts as dropped, so a server host that
//! vanished without closing the connection is noticed too. When the connection fails or drops
//! it reconnects with capped exponential backoff plus
//! jitter, so it rides out server restarts; jobs in flight on a dropped connection are
//! abandoned (the server's deadline covers them). A refused key (401/403) is not retried: it
//! will not become valid by waiting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use rand::Rng;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;
use url::Url;

use super::protocol::MISSED_PINGS;
use super::protocol::{
    Job, JobResult, ProbeMessage, ServerMessage, WireOutcome, CONNECT_PATH, REGION_HEADER,
};
use crate::clock::{Clock, SystemClock};

/// Longest wait between results and their batch leaving.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Most results in one batch.
pub const BATCH_MAX: usize = 100;
const BACKOFF_FIRST: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// A connection that lasted this long was healthy: the next failure starts the backoff afresh.
const HEALTHY_AFTER: Duration = Duration::from_secs(10);

/// What `tocsin probe` was told.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The server's root URL (`http(s)://...`; `ws(s)://` works too).
    pub server: Url,
    pub region: String,
    pub key: String,
    /// Checks run at once, at most.
    pub max_in_flight: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("server URL {0}: must be http://, https://, ws:// or wss://")]
    BadUrl(String),
    #[error("the server refused this probe ({status}): {message}")]
    Refused { status: u16, message: String },
}

/// The WebSocket URL of the connect endpoint under `server`.
pub fn connect_url(server: &Url) -> Result<Url, ProbeError> {
    let scheme = match server.scheme() {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        _ => return Err(ProbeError::BadUrl(server.to_string())),
    };
    let mut url = server.clone();
    url.set_scheme(scheme)
        .map_err(|_| ProbeError::BadUrl(server.to_string()))?;
    let base = url.path().trim_end_matches('/').to_string();
    url.set_path(&format!("{base}{CONNECT_PATH}"));
    url.set_query(None);
    Ok(url)
}

/// Capped exponential backoff with full jitter.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Backoff {
    fn new() -> Backoff {
        Backoff {
            next: BACKOFF_FIRST,
        }
    }

    fn reset(&mut self) {
        self.next = BACKOFF_FIRST;
    }

    /// The next wait: uniformly in [next/2, next], so probes restarting together spread out.
    fn wait(&mut self) -> Duration {
        let ceiling = self.next;
        self.next = (self.next * 2).min(BACKOFF_CAP);
        let ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::thread_rng().gen_range(ms / 2..=ms.max(1)))
    }
}

/// Runs the probe until `cancel` fires (`Ok`) or the server refuses its key (`Err`).
pub async fn run(opts: ProbeOptions, cancel: CancellationToken) -> Result<(), ProbeError> {
    let url = connect_url(&opts.server)?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if url.scheme() == "ws" && !loopback {
        // The key and the checks' settings (credentials included) would cross the network
        // readable by anyone on the path.
        tracing::warn!(server = %opts.server, "not using https: the probe key and checks travel in clear");
    }
    let permits = Arc::new(Semaphore::new(opts.max_in_flight.max(1)));
    let mut backoff = Backoff::new();
    loop {
        let started = Instant::now();
        match connect_once(&url, &opts, &permits, &cancel).await {
            Ok(Ended::Cancelled) => return Ok(()),
            Ok(Ended::Dropped) => tracing::warn!("connection to the server lost"),
            Err(Failure::Refused { status, message }) => {
                return Err(ProbeError::Refused { status, message })
            }
            Err(Failure::Transient(e)) => tracing::warn!(error = %e, "could not reach the server"),
        }
        if started.elapsed() >= HEALTHY_AFTER {
            backoff.reset();
        }
        let wait = backoff.wait();
        tracing::info!(retry_in_ms = wait.as_millis() as u64, "reconnecting");
        tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

enum Ended {
    Cancelled,
    Dropped,
}

enum Failure {
    Refused { status: u16, message: String },
    Transient(tungstenite::Error),
}

async fn connect_once(
    url: &Url,
    opts: &ProbeOptions,
    permits: &Arc<Semaphore>,
    cancel: &CancellationToken,
) -> Result<Ended, Failure> {
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(Failure::Transient)?;
    let bearer =
        HeaderValue::from_str(&format!("Bearer {}", opts.key)).map_err(|_| Failure::Refused {
            status: 0,
            message: "the key holds characters a header cannot carry".into(),
        })?;
    let region = HeaderValue::from_str(&opts.region).map_err(|_| Failure::Refused {
        status: 0,
        message: "the region holds characters a header cannot carry".into(),
    })?;
    request.headers_mut().insert("authorization", bearer);
    request.headers_mut().insert(REGION_HEADER, region);
    let connecting = tokio_tungstenite::connect_async(request);
    let (socket, _) = tokio::select! {
        _ = cancel.cancelled() => return Ok(Ended::Cancelled),
        r = connecting => match r {
            Ok(ok) => ok,
            Err(tungstenite::Error::Http(res)) if matches!(res.status().as_u16(), 401 | 403) => {
                let message = res
                    .body()
                    .as_deref()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
                    .and_then(|v| v["message"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "key refused".into());
                return Err(Failure::Refused { status: res.status().as_u16(), message });
            }
            Err(e) => return Err(Failure::Transient(e)),
        },
    };
    let (mut tx, mut rx) = socket.split();
    let (results_tx, mut results_rx) = mpsc::channel::<JobResult>(BATCH_MAX * 4);
    // Dropping the set aborts the checks of a connection that is gone.
    let mut running: JoinSet<()> = JoinSet::new();
    let mut batch: Vec<JobResult> = Vec::with_capacity(BATCH_MAX);
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut watchdog = tokio::time::interval(Duration::from_secs(1));
    let mut heard = Instant::now();
    // Unknown until the welcome says how often the server pings.
    let mut silence_limit: Option<Duration> = None;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => {
                let _ = send_batch(&mut tx, &mut batch).await;
                let _ = tx.send(Message::Close(None)).await;
                return Ok(Ended::Cancelled);
            }
            frame = rx.next() => match frame {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Ok(Ended::Dropped),
                Some(Ok(Message::Text(text))) => match serde_json::from_str::<ServerMessage>(text.as_str()) {
                    Ok(ServerMessage::Welcome { region, name, ping_interval_ms }) => {
                        heard = Instant::now();
                        silence_limit = Some(Duration::from_millis(ping_interval_ms) * MISSED_PINGS);
                        tracing::info!(%region, %name, "connected to the server");
                    }
                    Ok(ServerMessage::Job { job }) => {
                        heard = Instant::now();
                        running.spawn(run_job(job, permits.clone(), results_tx.clone()));
                    }
                    Err(e) => tracing::warn!(error = %e, "unreadable server message ignored"),
                },
                // Pings are answered by the WebSocket library itself.
                Some(Ok(_)) => heard = Instant::now(),
            },
            _ = watchdog.tick() => {
                if silence_limit.is_some_and(|limit| heard.elapsed() > limit) {
                    tracing::warn!("the server has been silent too long");
                    return Ok(Ended::Dropped);
                }
            }
            Some(result) = results_rx.recv() => {
                batch.push(result);
                if batch.len() >= BATCH_MAX && send_batch(&mut tx, &mut batch).await.is_err() {
                    return Ok(Ended::Dropped);
                }
            }
            _ = flush.tick(), if !batch.is_empty() => {
                if send_batch(&mut tx, &mut batch).await.is_err() {
                    return Ok(Ended::Dropped);
                }
            }
            // Reap finished checks so the set does not grow.
            Some(_) = running.join_next(), if !running.is_empty() => {}
        }
    }
}

async fn run_job(job: Job, permits: Arc<Semaphore>, results: mpsc::Sender<JobResult>) {
    // The probe is its own process: its clock is the system clock (the server's stays its own).
    let result = match job.spec(SystemClock.now()) {
        Ok((spec, opts)) => {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let outcome = tocsin_checks::run(&spec, &opts).await;
            JobResult {
                id: job.id,
                outcome: Some(WireOutcome::from(outcome)),
                error: None,
            }
        }
        Err(error) => JobResult {
            id: job.id,
            outcome: None,
            error: Some(error),
        },
    };
    let _ = results.send(result).await;
}

async fn send_batch<S>(tx: &mut S, batch: &mut Vec<JobResult>) -> Result<(), ()>
where
    S: futures::Sink<Message> + Unpin,
{
    if batch.is_empty() {
        return Ok(());
    }
    let msg = ProbeMessage::Results {
        results: std::mem::take(batch),
    };
    let text = serde_json::to_string(&msg).map_err(|_| ())?;
    tx.send(Message::Text(text.into())).await.map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_urls() {
        let u = |s: &str| connect_url(&Url::parse(s).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(
            u("http://h:8080").map(|u| u.to_string()).ok(),
            Some("ws://h:8080/probe/v1/connect".into())
        );
        assert_eq!(
            u("https://h/base/").map(|u| u.to_string()).ok(),
            Some("wss://h/base/probe/v1/connect".into())
        );
        assert!(u("ftp://h").is_err());
    }

    #[test]
    fn backoff_grows_to_the_cap_with_jitter() {
        let mut b = Backoff::new();
        let mut last_ceiling = Duration::ZERO;
        for _ in 0..20 {
            let ceiling = b.next;
            let w = b.wait();
            assert!(
                w <= ceiling && w >= ceiling / 2,
                "{w:?} outside [{:?}, {ceiling:?}]",
                ceiling / 2
            );
            assert!(ceiling >= last_ceiling);
            last_ceiling = ceiling;
        }
        assert_eq!(last_ceiling, BACKOFF_CAP);
        b.reset();
        assert_eq!(b.next, BACKOFF_FIRST);
    }
}
