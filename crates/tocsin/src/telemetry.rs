//! Logs and metrics. Logs go through `tracing` (human-readable or JSON); every request runs in a
//! span carrying its request id. Metrics use the `metrics` facade with a Prometheus recorder and
//! are rendered at `/metrics`: request counts and latency histograms per route and status,
//! database pool use, connected remote probes per region, and the scheduler's start lateness
//! and schedule size.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::app::Core;
use crate::config::LogFormat;

/// Installs the global log subscriber once; later calls (tests) are no-ops.
pub fn init_logging(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Human => builder.try_init(),
    };
}

/// The process-wide Prometheus recorder (one per process: several servers in one test binary
/// share it).
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
}

impl Metrics {
    pub fn global() -> Metrics {
        static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
        let handle = HANDLE
            .get_or_init(|| {
                let builder = PrometheusBuilder::new()
                    .set_buckets_for_metric(
                        Matcher::Full("http_request_duration_seconds".into()),
                        &[
                            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                            2.5, 5.0, 10.0,
                        ],
                    )
                    .and_then(|b| {
                        b.set_buckets_for_metric(
                            Matcher::Full("scheduler_start_lateness_seconds".into()),
                            &[
                                0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
                            ],
                        )
                    })
                    .unwrap_or_else(|_| PrometheusBuilder::new());
                let recorder = builder.build_recorder();
                let handle = recorder.handle();
                let _ = metrics::set_global_recorder(recorder);
                handle
            })
            .clone();
        Metrics { handle }
    }

    pub fn render(&self, state: &Core) -> String {
        let (size, idle) = state.db().pool_stats();
        metrics::gauge!("db_pool_connections", "state" => "open").set(size as f64);
        metrics::gauge!("db_pool_connections", "state" => "idle").set(idle as f64);
        metrics::gauge!("db_pool_connections", "state" => "in_use")
            .set(size.saturating_sub(idle as u32) as f64);
        // 1 on the node running the scheduler's slots (see `cluster::lease`).
        let leader = state.config().scheduler_enabled && state.scheduler_role().is_held();
        metrics::gauge!("scheduler_leader").set(if leader { 1.0 } else { 0.0 });
        // Every region a remote probe connected to since start, 0 once they are all gone.
        for (region, view) in state.probes().snapshot() {
            metrics::gauge!("probes_connected", "region" => region).set(view.probes.len() as f64);
        }
        self.handle.render()
    }
}
