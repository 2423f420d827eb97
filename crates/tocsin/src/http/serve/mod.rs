//! Serving the router on a TCP listener: the accept loop, each connection's timeouts, the cap
//! on open connections, and graceful shutdown with a deadline. Replaces `axum::serve`, which
//! runs hyper with no timer and no limit, so idle, slow-header and stalled-body connections
//! were held for ever and enough of them exhausted the process's descriptors.
//!
//! - `limits.rs`: the global and per-address connection caps, the descriptor limit;
//! - `activity.rs`: per-connection phases (head, busy, idle) and the watchdog closing a
//!   connection that waits too long in one;
//! - `body.rs`: the request-body deadline and the response body that ends a request;
//! - `io.rs`: the connection's IO (activity, permit, and the envelope on hyper's own refusals).
//!
//! HTTP/1 and HTTP/2 are both served (hyper-util's `auto` builder), with upgrades (the remote
//! probes' WebSocket), and every request carries `ConnectInfo<SocketAddr>`.

mod activity;
mod body;
mod io;
mod limits;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, StatusCode, Version};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

pub use body::BodyTimedOut;
pub use limits::{fit_to_descriptors, raise_descriptor_limit, ConnectionLimits, Refusal};

use activity::{Activity, Expired};
use body::{DeadlineBody, TrackedBody};
use io::ConnIo;

/// The connection settings (from `Config`).
#[derive(Debug, Clone)]
pub struct Options {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub body_timeout: Duration,
    /// Open connections at most, already fitted to the descriptor limit.
    pub max_connections: usize,
    /// Per client address; 0 for no share.
    pub max_connections_per_ip: usize,
    /// How long open requests may go on once shutdown begins (the caller's `shutdown` future
    /// answers the deadline itself, so that other work can share it).
    pub shutdown_grace: Duration,
}

impl Options {
    pub fn from_config(config: &crate::config::Config, descriptor_limit: Option<u64>) -> Self {
        let max_connections = fit_to_descriptors(config.max_connections, descriptor_limit);
        if max_connections < config.max_connections {
            tracing::warn!(
                configured = config.max_connections,
                max_connections,
                descriptor_limit,
                "max_connections lowered to fit the descriptor limit"
            );
        }
        Options {
            header_read_timeout: config.header_read_timeout,
            idle_timeout: config.idle_timeout,
            body_timeout: config.body_timeout,
            max_connections,
            max_connections_per_ip: config.max_connections_per_ip,
            shutdown_grace: config.shutdown_grace,
        }
    }
}

/// Serves `router` until `shutdown` resolves with the shutdown's deadline; then stops
/// accepting, lets open requests finish until that deadline, closes what remains and returns.
/// The deadline comes from the caller, computed once when shutdown began, so whatever else
/// drains meanwhile (accepted on-demand checks) ends by the same instant.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    options: Options,
    shutdown: impl Future<Output = tokio::time::Instant> + Send + 'static,
) {
    let limits = ConnectionLimits::new(options.max_connections, options.max_connections_per_ip);
    let options = Arc::new(options);
    let graceful = CancellationToken::new();
    let force = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut backoff = AcceptBackoff::default();
    let mut refusals = RateLimitedLog::default();
    let mut shutdown = std::pin::pin!(shutdown);
    let deadline = loop {
        let (stream, peer) = tokio::select! {
            deadline = &mut shutdown => break deadline,
            accepted = listener.accept() => match accepted {
                Ok(a) => {
                    backoff.reset();
                    a
                }
                Err(e) => {
                    backoff.on_error(e).await;
                    continue;
                }
            },
        };
        let permit = match limits.try_acquire(peer.ip()) {
            Ok(p) => p,
            Err(why) => {
                metrics::counter!("http_connections_refused_total", "reason" => match why {
                    Refusal::Total => "max_connections",
                    Refusal::PerIp => "max_connections_per_ip",
                })
                .increment(1);
                refusals.note(|n| {
                    tracing::warn!(refused = n, reason = ?why, open = limits.open(), "connections refused: over the cap")
                });
                refuse(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        connections.spawn(connection(
            stream,
            peer,
            permit,
            router.clone(),
            Arc::clone(&options),
            graceful.clone(),
            force.clone(),
        ));
    };
    drop(listener);
    connections.close();
    graceful.cancel();
    tracing::info!(
        open = connections.len(),
        "stopped accepting; open requests get the shutdown grace"
    );
    if tokio::time::timeout_at(deadline, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            "connections still open after the shutdown grace are closed"
        );
        force.cancel();
        connections.wait().await;
    }
}

/// Serves one connection until it ends, times out, or shutdown closes it.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    permit: limits::Permit,
    router: Router,
    options: Arc<Options>,
    graceful: CancellationToken,
    force: CancellationToken,
) {
    let activity = Activity::new(options.header_read_timeout, options.idle_timeout);
    let io = TokioIo::new(ConnIo::new(stream, Arc::clone(&activity), permit));
    let body_timeout = options.body_timeout;
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let in_flight = requests.begin(req.version() == Version::HTTP_2);
        let mut req = req.map(|b| Body::new(DeadlineBody::new(b, body_timeout)));
        req.extensions_mut().insert(ConnectInfo(peer));
        let router = router.clone();
        async move {
            let mut res = match router.oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            if res.status() == StatusCode::REQUEST_TIMEOUT {
                // The rest of a stalled body would have to be read before another request:
                // close instead.
                res.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, Infallible>(res.map(|b| TrackedBody::new(b, in_flight)))
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's own header-read timeout is off: in hyper 1 it also runs while a keep-alive
    // connection waits for its next request, so it cannot differ from the idle timeout
    // (`activity.rs` enforces both). The timer is still hyper's clock for HTTP/2.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        .enable_connect_protocol();
    let conn = builder.serve_connection_with_upgrades(io, service);
    let mut conn = std::pin::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                break;
            }
            expired = activity.expired(), if !closing => match expired {
                // A head still incomplete: nothing to finish, drop the connection.
                Expired::Head => {
                    tracing::debug!(%peer, "request head not received in time; closing");
                    break;
                }
                Expired::Idle => {
                    closing = true;
                    conn.as_mut().graceful_shutdown();
                }
            },
            _ = graceful.cancelled(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = force.cancelled() => break,
        }
    }
}

/// A connection over the cap gets a 503 envelope if the socket takes it at once (never
/// waiting on the client), then is closed.
///
/// The envelope is HTTP/1's. An HTTP/2 client (h2c with prior knowledge) sees it as bytes
/// that are not a frame, then the close: a connection that failed before any stream was
/// opened. That is on purpose, and the right answer for the cap. A 503 followed by a GOAWAY
/// would need the protocol first: reading the client's preface (which may not have arrived
/// when the connection is accepted, so the refusal would wait on the client), then an HTTP/2
/// connection driven by hyper for this one answer. Both mean holding a task and a descriptor
/// for a connection the cap has just said there is no room for, and a flood of such clients
/// would hold as many. A close before any stream tells an HTTP/2 client what a GOAWAY with
/// last stream 0 would: nothing was processed, the request may be retried on a new
/// connection. `tests/it/hardening.rs` pins both answers.
fn refuse(stream: TcpStream) {
    static OVER_CAPACITY: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let body = crate::http::error::envelope_bytes(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            "too many open connections; retry shortly",
        );
        let mut out = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(&body);
        out
    });
    let _ = stream.try_write(&OVER_CAPACITY);
}

/// Accept errors other than a client giving up early are the process's (out of descriptors,
/// out of memory): back off, doubling from 5 ms to 1 s, rather than spin on a listener that
/// stays readable, and log once per 10 s with a count rather than on every attempt.
#[derive(Default)]
struct AcceptBackoff {
    delay: Option<Duration>,
    log: RateLimitedLog,
}

impl AcceptBackoff {
    fn reset(&mut self) {
        self.delay = None;
    }

    async fn on_error(&mut self, e: std::io::Error) {
        use std::io::ErrorKind;
        if matches!(
            e.kind(),
            ErrorKind::ConnectionAborted
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionRefused
        ) {
            return;
        }
        metrics::counter!("http_accept_errors_total").increment(1);
        self.log
            .note(|n| tracing::error!(error = %e, errors = n, "accept failed; backing off"));
        let delay = self.delay.map_or(Duration::from_millis(5), |d| {
            (d * 2).min(Duration::from_secs(1))
        });
        self.delay = Some(delay);
        tokio::time::sleep(delay).await;
    }
}

/// Logs the first event, then at most once per 10 s with the number seen since.
#[derive(Default)]
struct RateLimitedLog {
    last: Option<tokio::time::Instant>,
    count: u64,
}

impl RateLimitedLog {
    fn note(&mut self, log: impl FnOnce(u64)) {
        self.count += 1;
        let now = tokio::time::Instant::now();
        if self
            .last
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(10))
        {
            log(self.count);
            self.count = 0;
            self.last = Some(now);
        }
    }
}
