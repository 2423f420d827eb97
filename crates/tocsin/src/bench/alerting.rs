//! The alerting scenarios of `tocsin bench` (`alert-latency`, `storm`, `storm-retry`): real
//! outages, not queued rows. The monitors' loopback target is switched to answer `500`, the
//! real scheduler checks them, each goes DOWN through the one transition path, which opens
//! its alert and enqueues an `alert.opened` webhook for the workspace's default channel, and
//! the delivery worker sends it to the [`Receiver`] here. What is measured is the alerting
//! path's own cost: from the alert's `openedAt` (the decision at the failing check's end) to
//! the receiver's answer, per alert; and for a storm, that every alert arrives exactly once,
//! also when the receiver refuses everything for a while.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::json;
use tokio::sync::oneshot;

use tocsin::cx::Cx;
use tocsin::ids::new_id;
use tocsin::server::AppState;
use tocsin::store::channels::ChannelRow;

/// The targets on the 2-core reference machine.
pub const TARGET_LATENCY_P99_MS: f64 = 250.0;
pub const TARGET_STORM_MAX_LATENCY_S: f64 = 10.0;
pub const TARGET_STORM_RSS_GROWTH_BYTES: u64 = 50 * 1024 * 1024;

/// What the receiver saw of one alert's first accepted delivery.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    opened_at_ms: i64,
    received_ms: i64,
}

#[derive(Default)]
struct Seen {
    /// By alert id: the first delivery answered 200.
    alerts: HashMap<String, Arrival>,
    /// Webhook ids answered 200: a second 200 for one id is a duplicate.
    ids: std::collections::HashSet<String>,
}

struct Shared {
    failing: AtomicBool,
    refused: AtomicU64,
    duplicates: AtomicU64,
    seen: Mutex<Seen>,
}

/// A loopback webhook receiver on its own thread and runtime (not counted as server CPU). It
/// answers `500` while told to fail, else records each `alert.opened` delivery and answers 200.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

fn wall_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Receiver {
    pub fn start() -> anyhow::Result<Receiver> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            failing: AtomicBool::new(false),
            refused: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            seen: Mutex::new(Seen::default()),
        });
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("bench-receiver".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = stop_rx => {}
                        _ = serve(listener, s) => {}
                    }
                });
            })?;
        Ok(Receiver {
            addr,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn set_failing(&self, failing: bool) {
        self.shared.failing.store(failing, Ordering::Relaxed);
    }

    fn alerts_received(&self) -> usize {
        self.shared.seen.lock().map(|s| s.alerts.len()).unwrap_or(0)
    }

    fn arrivals(&self) -> Vec<Arrival> {
        self.shared
            .seen
            .lock()
            .map(|s| s.alerts.values().copied().collect())
            .unwrap_or_default()
    }

    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shut();
    }
}

async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(answer(&shared, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(shared: &Shared, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let status = |code: StatusCode| {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = code;
        r
    };
    let webhook_id = req
        .headers()
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let Ok(body) = req.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let received_ms = wall_ms();
    if shared.failing.load(Ordering::Relaxed) {
        shared.refused.fetch_add(1, Ordering::Relaxed);
        return status(StatusCode::INTERNAL_SERVER_ERROR);
    }
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&body.to_bytes()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    if doc["type"] != "alert.opened" {
        return status(StatusCode::OK);
    }
    let alert = &doc["data"]["alert"];
    let (Some(id), Some(opened)) = (alert["id"].as_str(), alert["openedAt"].as_str()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Ok(opened) = chrono::DateTime::parse_from_rfc3339(opened) else {
        return status(StatusCode::BAD_REQUEST);
    };
    if let Ok(mut seen) = shared.seen.lock() {
        if let Some(wid) = webhook_id {
            if !seen.ids.insert(wid) {
                shared.duplicates.fetch_add(1, Ordering::Relaxed);
            }
        }
        seen.alerts.entry(id.to_string()).or_insert(Arrival {
            opened_at_ms: opened.timestamp_millis(),
            received_ms,
        });
    }
    status(StatusCode::OK)
}

/// What one outage of every monitor produced.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AlertFigures {
    /// Alerts the outage opened (rows in `alerts`).
    pub opened: u64,
    /// Distinct alerts whose `alert.opened` the receiver accepted.
    pub received: u64,
    /// Opened alerts never received.
    pub lost: u64,
    /// Deliveries accepted twice (same webhook id).
    pub duplicates: u64,
    /// Attempts the receiver refused while failing, and attempts the history holds as not
    /// delivered (retries visible to the API).
    pub refused_attempts: u64,
    pub failed_attempts_in_history: u64,
    /// From `openedAt` to the receiver's answer.
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_max_ms: f64,
    /// From the first alert's opening to the last arrival.
    pub span_secs: f64,
    /// Growth of the process's resident memory over the outage (peak minus before).
    pub rss_growth_bytes: u64,
    /// Checks stored over the outage, and the server threads' CPU per check over it (what
    /// `storm-deps` is compared with).
    pub checks: u64,
    pub server_cpu_us_per_check: f64,
}

/// Inserts the workspace's default WEBHOOK channel, taking `alert.opened` only, pointed at `url`.
pub async fn default_channel(cx: &Cx, workspace_id: &str, url: &str) -> anyhow::Result<()> {
    let now = cx.clock().now_ms();
    tocsin::store::channels::insert(
        cx.db().writer(),
        &ChannelRow {
            id: new_id(),
            workspace_id: workspace_id.to_string(),
            name: "bench receiver".into(),
            kind: "WEBHOOK".into(),
            config:
                json!({"url": url, "secret": tocsin::alerting::channels::webhook::generate_secret()})
                    .to_string(),
            events: json!(["alert.opened"]).to_string(),
            is_default: 1,
            enabled: 1,
            version: 1,
            created_at: now,
            updated_at: now,
        },
    )
    .await?;
    Ok(())
}

/// `storm-deps`: the first of `ids` becomes the root (2 confirmations, so every other
/// monitor notices the outage first and holds its page), every other one depends on it.
pub async fn depend_on_first(cx: &Cx, ids: &[String]) -> anyhow::Result<()> {
    let Some((root, rest)) = ids.split_first() else {
        return Ok(());
    };
    let mut tx = cx.db().begin().await?;
    sqlx::query("UPDATE monitors SET confirmations_required = 2 WHERE id = $1")
        .bind(root)
        .execute(&mut *tx)
        .await?;
    for chunk in rest.chunks(500) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| format!("(${}, $1, 0)", i + 2))
            .collect();
        let sql = format!(
            "INSERT INTO monitor_dependencies (monitor_id, depends_on_id, position) VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(root);
        for id in chunk {
            q = q.bind(id);
        }
        q.execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What `storm-deps` adds to a storm's figures.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DepsFigures {
    pub alerts: AlertFigures,
    /// `data.dependents` of the root's page, as stored: the dependents whose pages were held
    /// when the root's transaction began (those that commit after it open under the root).
    pub dependents: u64,
    /// Alerts under a root (`rootCauseAlertId` set) once the outage settled.
    pub under_root: u64,
    /// From the root's opening to its page's first attempt (the rest of the latency is the
    /// sending): where the root's page waited.
    pub root_attempted_after_ms: Option<i64>,
    /// Checks stored over the outage, and the server threads' CPU per check.
    pub checks: u64,
    pub server_cpu_us_per_check: f64,
}

/// How one outage runs.
pub struct Outage<'a> {
    pub state: &'a AppState,
    pub rt: &'a tokio::runtime::Runtime,
    pub receiver: &'a Receiver,
    /// The monitors' target: set to fail to start the outage.
    pub target_failing: Arc<AtomicBool>,
    pub monitors: usize,
    /// The receiver refuses everything for this long from the outage's start.
    pub refuse_for: Option<Duration>,
    /// Longest wait for every alert to arrive.
    pub timeout: Duration,
}

impl Outage<'_> {
    /// Starts the outage and waits until the receiver holds `monitors` alerts (or the timeout).
    pub fn run(&self) -> anyhow::Result<AlertFigures> {
        let before = super::measure::rss_bytes().unwrap_or(0);
        let mut peak = before;
        let checks_before = self.heartbeats()?;
        let cpu_before = super::cpu::CpuSample::now();
        if self.refuse_for.is_some() {
            self.receiver.set_failing(true);
        }
        let started = Instant::now();
        self.target_failing.store(true, Ordering::Relaxed);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            peak = peak.max(super::measure::rss_bytes().unwrap_or(0));
            if let Some(refuse) = self.refuse_for {
                if started.elapsed() >= refuse {
                    self.receiver.set_failing(false);
                }
            }
            if self.receiver.alerts_received() >= self.monitors || started.elapsed() > self.timeout
            {
                break;
            }
        }
        self.receiver.set_failing(false);
        let cpu = cpu_before
            .zip(super::cpu::CpuSample::now())
            .map(|(a, b)| a.until(&b).server);
        let checks = self.heartbeats()?.saturating_sub(checks_before);
        let mut figures = self.figures(before, peak)?;
        figures.checks = checks;
        figures.server_cpu_us_per_check =
            cpu.map_or(f64::NAN, |c| c.as_secs_f64() * 1e6 / (checks.max(1) as f64));
        Ok(figures)
    }

    /// Heartbeats stored so far.
    fn heartbeats(&self) -> anyhow::Result<u64> {
        let n: i64 = self.rt.block_on(
            sqlx::query_scalar("SELECT COUNT(*) FROM heartbeats")
                .fetch_one(self.state.db().reader()),
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// `storm-deps`: starts the outage, waits for the root's page, then `settle` more (past
    /// every hold) so that a page the holds failed to fold would be seen.
    pub fn run_deps(&self, settle: Duration) -> anyhow::Result<DepsFigures> {
        let before = super::measure::rss_bytes().unwrap_or(0);
        let count = |sql: &'static str| -> anyhow::Result<u64> {
            let n: i64 = self
                .rt
                .block_on(sqlx::query_scalar(sql).fetch_one(self.state.db().reader()))?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let checks_before = count("SELECT COUNT(*) FROM heartbeats")?;
        let cpu_before = super::cpu::CpuSample::now();
        let started = Instant::now();
        self.target_failing.store(true, Ordering::Relaxed);
        while self.receiver.alerts_received() < 1 && started.elapsed() < self.timeout {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(settle);
        let cpu = cpu_before
            .zip(super::cpu::CpuSample::now())
            .map(|(a, b)| a.until(&b).server);
        let checks = count("SELECT COUNT(*) FROM heartbeats")?.saturating_sub(checks_before);
        let peak = super::measure::rss_bytes().unwrap_or(0);
        let mut alerts = self.figures(before, peak)?;
        let payload: Option<String> = self.rt.block_on(
            sqlx::query_scalar(
                "SELECT payload FROM deliveries WHERE event = 'alert.opened' AND attempt = 1 \
                 ORDER BY id LIMIT 1",
            )
            .fetch_optional(self.state.db().reader()),
        )?;
        let dependents = payload
            .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
            .and_then(|v| v["data"]["dependents"].as_array().map(|a| a.len() as u64))
            .unwrap_or(0);
        let server_cpu_us_per_check =
            cpu.map_or(f64::NAN, |c| c.as_secs_f64() * 1e6 / (checks.max(1) as f64));
        alerts.checks = checks;
        alerts.server_cpu_us_per_check = server_cpu_us_per_check;
        let under_root =
            count("SELECT COUNT(*) FROM alerts WHERE root_cause_alert_id IS NOT NULL")?;
        let root_attempted_after_ms: Option<i64> = self.rt.block_on(
            sqlx::query_scalar(
                "SELECT d.attempted_at - a.opened_at FROM deliveries d \
                 JOIN alerts a ON a.id = d.alert_id WHERE d.event = 'alert.opened' \
                 AND d.attempted_at IS NOT NULL ORDER BY d.attempted_at LIMIT 1",
            )
            .fetch_optional(self.state.db().reader()),
        )?;
        Ok(DepsFigures {
            root_attempted_after_ms,
            under_root,
            alerts,
            dependents,
            checks,
            server_cpu_us_per_check,
        })
    }

    fn figures(&self, before: u64, peak: u64) -> anyhow::Result<AlertFigures> {
        let count = |sql: &'static str| -> anyhow::Result<u64> {
            let n: i64 = self
                .rt
                .block_on(sqlx::query_scalar(sql).fetch_one(self.state.db().reader()))?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let opened = count("SELECT COUNT(*) FROM alerts")?;
        let failed_in_history = count(
            "SELECT COUNT(*) FROM deliveries WHERE event = 'alert.opened' AND status <> 'DELIVERED' \
             AND status <> 'PENDING'",
        )?;
        let arrivals = self.receiver.arrivals();
        let mut latencies: Vec<i64> = arrivals
            .iter()
            .map(|a| (a.received_ms - a.opened_at_ms).max(0))
            .collect();
        latencies.sort_unstable();
        let pick = |q: f64| -> f64 {
            if latencies.is_empty() {
                return f64::NAN;
            }
            let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
            latencies[i] as f64
        };
        let first_open = arrivals.iter().map(|a| a.opened_at_ms).min().unwrap_or(0);
        let last_arrival = arrivals.iter().map(|a| a.received_ms).max().unwrap_or(0);
        let received = arrivals.len() as u64;
        Ok(AlertFigures {
            opened,
            received,
            lost: opened.saturating_sub(received),
            duplicates: self.receiver.shared.duplicates.load(Ordering::Relaxed),
            refused_attempts: self.receiver.shared.refused.load(Ordering::Relaxed),
            failed_attempts_in_history: failed_in_history,
            latency_p50_ms: pick(0.50),
            latency_p99_ms: pick(0.99),
            latency_max_ms: latencies.last().map_or(f64::NAN, |&v| v as f64),
            span_secs: (last_arrival - first_open).max(0) as f64 / 1000.0,
            rss_growth_bytes: peak.saturating_sub(before),
            checks: 0,
            server_cpu_us_per_check: f64::NAN,
        })
    }
}
