//! The push benchmark: `POST /push/{token}` over many distinct tokens, each answered only after
//! its heartbeat is committed, and a top-of-minute burst.
//!
//! Setup seeds `--push-tokens` PUSH monitors (default 100,000) straight into the store, with
//! tokens the bench knows, in the bench user's workspace. The steady scenario rotates through
//! the tokens, so each stays far below its 60-a-minute limit and every request is a real
//! recorded push. [`burst`] then sends five times the measured steady rate's worth of pushes
//! at once, over many connections, the way cron fleets fire at the top of a minute, and counts
//! anything but `202` and `429` as an error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue, Method, Request, Uri};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::scenario::{Fixture, RequestSpec};
use super::stats::new_histogram;
use tocsin::auth::secrets;
use tocsin::store::monitors::{self, MonitorRow};
use tocsin::store::{users, workspaces};

/// Monitors inserted per transaction while seeding.
const SEED_CHUNK: usize = 5_000;

/// Seeds `n` push monitors and returns the paths `/push/{token}` to rotate through.
pub async fn seed(fx: &Fixture, n: usize) -> anyhow::Result<Vec<String>> {
    fx.api_token().await?;
    let state = fx.app("push")?;
    let db = state.db();
    let user = users::find_by_email(db.reader(), super::scenario::BENCH_EMAIL)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the bench user is missing"))?;
    let ws = workspaces::list_for_user(db.reader(), &user.id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("the bench user has no workspace"))?;
    let now = state.clock().now_ms();
    let mut paths = Vec::with_capacity(n);
    let mut made = 0;
    while made < n {
        let mut tx = db.begin().await?;
        for _ in 0..SEED_CHUNK.min(n - made) {
            let token = secrets::generate("");
            let mut row = push_row(&ws.id, now, made);
            row.seq = monitors::next_seq(&mut *tx).await?;
            monitors::insert(&mut *tx, &row, Some(&secrets::hash(&token))).await?;
            paths.push(format!("/push/{token}"));
            made += 1;
        }
        tx.commit().await?;
    }
    // As a restarted server would have them: every token known in memory.
    state.push_tokens().preload(db).await?;
    Ok(paths)
}

/// A push monitor that has been reporting for an hour: the monitor scenarios' running row,
/// made an hourly job whose last push has just arrived. Seeding them UP measures the steady
/// state, where a push changes counters but not the status (the first push of each would add an
/// UP event).
fn push_row(workspace_id: &str, now: i64, i: usize) -> MonitorRow {
    let seed = super::seed::MonitorSeed {
        workspace_id: workspace_id.to_string(),
        count: 1,
        // Hourly jobs: the watcher has nothing to do during the run.
        interval_s: 3600,
        url: String::new(),
        timeout_s: 30,
    };
    let mut row = super::seed::row(&seed, 0, i, now);
    row.name = format!("bench job {i}");
    row.kind_text = "PUSH".into();
    row.url = None;
    row.grace_s = Some(60);
    row.last_push_at = Some(now);
    row.last_check_at = Some(now);
    row
}

/// The steady scenario's request: a push to the next token in turn.
pub async fn setup(fx: &Fixture, n: usize) -> anyhow::Result<RequestSpec> {
    let paths = seed(fx, n).await?;
    Ok(RequestSpec::rotating(Method::POST, paths))
}

/// What the burst did.
#[derive(Debug, Clone, Serialize)]
pub struct BurstReport {
    pub requests: usize,
    pub connections: usize,
    /// Answered 202.
    pub accepted: usize,
    /// Answered 429 (over a token's limit).
    pub rate_limited: usize,
    /// Anything else: other statuses, resets, timeouts.
    pub errors: usize,
    /// From the first request sent to the last answer read.
    pub drain_secs: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub sample_error: Option<String>,
}

/// Sends `requests` pushes at once over `connections` connections, rotating through `paths`,
/// and waits for every answer.
pub async fn burst(
    addr: std::net::SocketAddr,
    host: &str,
    paths: Arc<Vec<Uri>>,
    requests: usize,
    connections: usize,
) -> BurstReport {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let host = HeaderValue::from_str(host).unwrap_or(HeaderValue::from_static("localhost"));
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections.max(1) {
        let (next, paths, host) = (next.clone(), paths.clone(), host.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Tally::default();
            let Ok(stream) = TcpStream::connect(addr).await else {
                out.error("connect failed");
                return out;
            };
            let _ = stream.set_nodelay(true);
            let Ok((mut sender, conn)) = http1::handshake(TokioIo::new(stream)).await else {
                out.error("handshake failed");
                return out;
            };
            // `sender` moves into the loop and drops when it ends, which lets `conn` finish.
            let drive = async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        return out;
                    }
                    if sender.ready().await.is_err() {
                        out.error("connection closed");
                        return out;
                    }
                    let mut req = Request::new(Full::new(Bytes::new()));
                    *req.method_mut() = Method::POST;
                    *req.uri_mut() = paths[i % paths.len()].clone();
                    req.headers_mut().insert(header::HOST, host.clone());
                    let t = Instant::now();
                    match sender.send_request(req).await {
                        Ok(res) => {
                            let status = res.status().as_u16();
                            let mut body = res.into_body();
                            while let Some(Ok(_)) = body.frame().await {}
                            out.answer(status, t.elapsed());
                        }
                        Err(e) => {
                            out.error(&format!("request: {e}"));
                            return out;
                        }
                    }
                }
            };
            let (_, out) = tokio::join!(conn, drive);
            out
        }));
    }
    let mut total = Tally::default();
    let give_up = Instant::now() + Duration::from_secs(120);
    for t in tasks {
        match tokio::time::timeout_at(give_up, t).await {
            Ok(Ok(tally)) => total.merge(tally),
            _ => total.error("connection task did not finish"),
        }
    }
    let drain_secs = started.elapsed().as_secs_f64();
    BurstReport {
        requests,
        connections,
        accepted: total.accepted,
        rate_limited: total.limited,
        errors: total.errors
            + requests.saturating_sub(total.accepted + total.limited + total.errors),
        drain_secs,
        p50_ms: total.quantile_ms(0.50),
        p99_ms: total.quantile_ms(0.99),
        max_ms: total.latency.max() as f64 / 1000.0,
        sample_error: total.sample,
    }
}

struct Tally {
    accepted: usize,
    limited: usize,
    errors: usize,
    /// Microseconds.
    latency: hdrhistogram::Histogram<u64>,
    sample: Option<String>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            accepted: 0,
            limited: 0,
            errors: 0,
            latency: new_histogram(),
            sample: None,
        }
    }
}

impl Tally {
    fn quantile_ms(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            return 0.0;
        }
        self.latency.value_at_quantile(q) as f64 / 1000.0
    }

    fn answer(&mut self, status: u16, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
        self.latency.saturating_record(us);
        match status {
            202 => self.accepted += 1,
            429 => self.limited += 1,
            other => self.error(&format!("status {other}")),
        }
    }

    fn error(&mut self, what: &str) {
        self.errors += 1;
        if self.sample.is_none() {
            self.sample = Some(what.to_string());
        }
    }

    fn merge(&mut self, other: Tally) {
        self.accepted += other.accepted;
        self.limited += other.limited;
        self.errors += other.errors;
        let _ = self.latency.add(&other.latency);
        if self.sample.is_none() {
            self.sample = other.sample;
        }
    }
}
