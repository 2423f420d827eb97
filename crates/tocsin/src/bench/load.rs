//! The load driver: a fixed number of keep-alive HTTP/1.1 connections, each owned by one task
//! that sends the next request as soon as the previous response has been read to the end
//! (closed loop, no pipelining). It runs through a warm-up, then a measured window; only
//! requests that both start and finish inside the window count.
//!
//! The client shares the machine's cores with the server, so it is kept lean:
//! - the request is built once ([`Template`]); per request only the `HeaderMap` is cloned
//!   (values are reference-counted) and hyper does its own framing;
//! - each task drives its hyper connection itself (the connection future and the request loop
//!   are joined in one task) instead of spawning the connection as a second task, so a
//!   response wakes one task rather than hopping between two;
//! - response bodies are read frame by frame and dropped, never collected;
//! - latencies go into a per-task histogram, merged once at the end: no shared state, no locks.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Uri};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::cpu::{CpuSample, CpuUse};
use super::scenario::RequestSpec;
use super::stats::Tally;

/// How long a connection may still be busy after the window closes before it is abandoned and
/// counted as an error (a stuck server must not hang the bench).
const STRAGGLER_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed connect, so a dead server is not hammered in a tight loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(50);

/// Where to connect and what to send, prepared once per scenario.
#[derive(Clone)]
pub struct Template {
    addr: SocketAddr,
    method: Method,
    uri: Uri,
    /// Paths taken in turn instead of `uri`, with the shared position.
    rotate: Option<(
        std::sync::Arc<Vec<Uri>>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    )>,
    headers: HeaderMap,
    body: Bytes,
    /// Bodies taken in turn instead of `body`, with the shared position.
    bodies: Option<(
        std::sync::Arc<super::scenario::SignedBodies>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    )>,
}

impl Template {
    /// `base_path` is the target URL's path prefix ("" for the in-process server); `host` is
    /// the `Host` header value.
    pub fn new(
        addr: SocketAddr,
        host: &str,
        base_path: &str,
        spec: &RequestSpec,
    ) -> anyhow::Result<Template> {
        let path = format!("{}{}", base_path.trim_end_matches('/'), spec.path);
        let uri: Uri = path
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid request path {path:?}: {e}"))?;
        let mut headers = HeaderMap::with_capacity(spec.headers.len() + 2);
        headers.insert(
            header::HOST,
            HeaderValue::from_str(host).map_err(|_| anyhow::anyhow!("invalid host {host:?}"))?,
        );
        for (name, value) in &spec.headers {
            headers.append(name.clone(), value.clone());
        }
        let rotate = match &spec.rotate {
            Some(paths) => {
                let uris = paths
                    .iter()
                    .map(|p| {
                        let full = format!("{}{}", base_path.trim_end_matches('/'), p);
                        full.parse::<Uri>()
                            .map_err(|e| anyhow::anyhow!("invalid request path {full:?}: {e}"))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Some((std::sync::Arc::new(uris), std::sync::Arc::default()))
            }
            None => None,
        };
        Ok(Template {
            addr,
            method: spec.method.clone(),
            uri,
            rotate,
            headers,
            body: spec.body.clone(),
            bodies: spec.bodies.clone().map(|b| (b, std::sync::Arc::default())),
        })
    }

    /// The rotating paths, if any (the push burst reuses them).
    pub fn rotating_uris(&self) -> Option<std::sync::Arc<Vec<Uri>>> {
        self.rotate.as_ref().map(|(u, _)| u.clone())
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let signed = match &self.bodies {
            Some((b, next)) if !b.items.is_empty() => Some((
                &b.header,
                &b.items[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % b.items.len()],
            )),
            _ => None,
        };
        let body = signed
            .map(|(_, (body, _))| body.clone())
            .unwrap_or_else(|| self.body.clone());
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = match &self.rotate {
            Some((uris, next)) if !uris.is_empty() => {
                uris[next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % uris.len()].clone()
            }
            _ => self.uri.clone(),
        };
        *req.headers_mut() = self.headers.clone();
        if let Some((name, (_, value))) = signed {
            req.headers_mut().insert(name.clone(), value.clone());
        }
        req
    }
}

/// The time line of one load run.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// When measuring starts (the end of the warm-up).
    pub start: Instant,
    /// When measuring ends; connections stop sending at this point.
    pub end: Instant,
}

impl Window {
    pub fn starting_now(warmup: Duration, duration: Duration) -> Window {
        let start = Instant::now() + warmup;
        Window {
            start,
            end: start + duration,
        }
    }

    fn contains(&self, t: Instant) -> bool {
        t >= self.start && t <= self.end
    }
}

/// Runs `connections` closed-loop connections against `template` over `window` and returns
/// their merged tally. Must be called on the client runtime: the tasks are spawned onto it.
pub async fn drive(
    template: Template,
    connections: usize,
    window: Window,
) -> (Tally, Option<CpuUse>) {
    // Samples CPU time at both edges of the window; reading procfs briefly blocks this
    // runtime, twice per scenario, which is noise next to the window.
    let cpu = tokio::spawn(async move {
        tokio::time::sleep_until(window.start).await;
        let first = CpuSample::now()?;
        tokio::time::sleep_until(window.end).await;
        Some(first.until(&CpuSample::now()?))
    });
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        let t = template.clone();
        tasks.push(tokio::spawn(async move { connection(t, window).await }));
    }
    let mut total = Tally::default();
    let give_up = window.end + STRAGGLER_GRACE;
    for task in tasks {
        let abort = task.abort_handle();
        match tokio::time::timeout_at(give_up, task).await {
            Ok(Ok(tally)) => total.merge(&tally),
            Ok(Err(join)) => total.io_error(format!("connection task failed: {join}")),
            Err(_) => {
                abort.abort();
                total.io_error("connection still busy well after the window closed");
            }
        }
    }
    let cpu = cpu.await.ok().flatten();
    (total, cpu)
}

/// Why an inner request loop returned.
enum LoopEnd {
    /// The window closed.
    Done,
    /// The connection broke; open another one.
    Reconnect,
}

/// One connection's life: connect, loop requests until the window closes, reconnect after
/// failures.
async fn connection(template: Template, window: Window) -> Tally {
    let mut tally = Tally::default();
    while Instant::now() < window.end {
        let stream = match TcpStream::connect(template.addr).await {
            Ok(s) => s,
            Err(e) => {
                note_io_error(&mut tally, &window, format!("connect: {e}"));
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        // Small requests and responses: waiting for Nagle would add latency, not save work.
        let _ = stream.set_nodelay(true);
        let (sender, conn) = match http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(e) => {
                note_io_error(&mut tally, &window, format!("handshake: {e}"));
                continue;
            }
        };
        // Both futures are polled by this task. When the loop ends it drops `sender`, which
        // lets `conn` finish; when `conn` fails, the pending request errors and the loop ends.
        let (conn_result, end) =
            tokio::join!(conn, requests(&template, sender, &window, &mut tally));
        if let Err(e) = conn_result {
            // The loop has usually counted this already through the failed request.
            if matches!(end, LoopEnd::Done) {
                note_io_error(&mut tally, &window, format!("connection: {e}"));
            }
        }
        if matches!(end, LoopEnd::Done) {
            break;
        }
    }
    tally
}

async fn requests(
    template: &Template,
    mut sender: http1::SendRequest<Full<Bytes>>,
    window: &Window,
    tally: &mut Tally,
) -> LoopEnd {
    loop {
        if let Err(e) = sender.ready().await {
            note_io_error(tally, window, format!("connection closed: {e}"));
            return LoopEnd::Reconnect;
        }
        let started = Instant::now();
        if started >= window.end {
            return LoopEnd::Done;
        }
        let response = match sender.send_request(template.request()).await {
            Ok(r) => r,
            Err(e) => {
                note_io_error(tally, window, format!("request: {e}"));
                return LoopEnd::Reconnect;
            }
        };
        let status = response.status();
        let mut body = response.into_body();
        while let Some(frame) = body.frame().await {
            if let Err(e) = frame {
                note_io_error(tally, window, format!("reading body: {e}"));
                return LoopEnd::Reconnect;
            }
        }
        let finished = Instant::now();
        if started >= window.start && finished <= window.end {
            if status.is_success() {
                tally.success(finished - started);
            } else {
                tally.status_error(status.as_u16());
            }
        }
    }
}

/// Counts an I/O failure if it happened while measuring. Failures during the warm-up are not
/// counted, matching how requests are counted, but the first one is kept as the sample so a
/// server that never answers still explains itself.
fn note_io_error(tally: &mut Tally, window: &Window, what: String) {
    if window.contains(Instant::now()) {
        tally.io_error(what);
    } else if tally.sample_error.is_none() {
        tally.sample_error = Some(what);
    }
}
