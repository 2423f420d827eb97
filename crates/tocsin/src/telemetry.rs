//! Logs and metrics. Logs go through `tracing` (human-readable or JSON); every request runs in a
//! span carrying its request id. Metrics use the `metrics` facade with a Prometheus recorder and
//! are rendered at `/metrics`: request counts and latency histograms per route and status,
//! database pool use, connected remote probes per region, probe errors, stale monitors,
//! notification attempts by channel type and outcome, the notification queue's depth and the
//! age of its oldest due attempt, the
//! scheduler's start lateness and schedule size, and per-monitor series (status, last latency,
//! checks by result, certificate days left) labelled by monitor id, name, type and region.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;
use crate::monitoring::runner::Runner;

/// Installs the global log subscriber once; later calls (tests) are no-ops.
pub fn init_logging(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_new(quiet_rmcp(level))
        .unwrap_or_else(|_| EnvFilter::new(quiet_rmcp("info")));
    // Colour only for a person at a terminal: a file, a pipe or a journal gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Human => builder.try_init(),
    };
}

/// `level` with the MCP SDK held to warnings unless the filter names it: `rmcp` logs two INFO
/// lines for every stateless `/mcp` request (its per-request service starting and finishing),
/// which at the default level would be a log line per agent call and their formatting cost.
fn quiet_rmcp(level: &str) -> String {
    let default = level.split(',').map(str::trim).find(|d| !d.contains('='));
    let verbose = default.is_some_and(|d| {
        ["info", "debug", "trace"]
            .iter()
            .any(|v| d.eq_ignore_ascii_case(v))
    });
    if verbose && !level.contains("rmcp") {
        format!("{level},rmcp=warn")
    } else {
        level.to_string()
    }
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

    /// The exposition: the recorder's metrics, then one series family per monitor figure
    /// ([`monitor_series`]). Every metric the README names is present from the first scrape,
    /// at zero when nothing happened yet.
    pub async fn render(&self, state: &Runner) -> String {
        let (size, idle) = state.cx().db().pool_stats();
        metrics::gauge!("db_pool_connections", "state" => "open").set(size as f64);
        metrics::gauge!("db_pool_connections", "state" => "idle").set(idle as f64);
        metrics::gauge!("db_pool_connections", "state" => "in_use")
            .set(size.saturating_sub(idle as u32) as f64);
        // 1 on the node running the scheduler's slots (see `cluster::lease`).
        let leader = state.cx().config().scheduler_enabled && state.scheduler_role().is_held();
        metrics::gauge!("scheduler_leader").set(if leader { 1.0 } else { 0.0 });
        // Every region with a probe key, and every region a probe connected to since start:
        // 0 while none of its probes is connected.
        let mut regions = state.probes().snapshot();
        if let Ok(known) = crate::store::probes::active_regions(state.cx().db().reader()).await {
            for (name, _) in known {
                regions.entry(name).or_default();
            }
        }
        for (region, view) in regions {
            metrics::gauge!("probes_connected", "region" => region.clone())
                .set(view.probes.len() as f64);
            metrics::counter!("probe_errors_total", "region" => region, "reason" => "resource")
                .increment(0);
        }
        metrics::counter!("probe_errors_total", "region" => "local", "reason" => "resource")
            .increment(0);
        // The built-in probe is always connected.
        metrics::gauge!("probes_connected", "region" => "local").set(1.0);
        // Present before the first run or shed, at zero (registering is enough).
        metrics::gauge!("scheduler_monitors").set(state.scheduler_stats().scheduled() as f64);
        // The partitions of the monitors this node checks (see `monitoring::partitions`).
        let partitions = if state.cx().config().scheduler_enabled {
            state.partitions().held_count()
        } else {
            0
        };
        metrics::gauge!("scheduler_partitions").set(partitions as f64);
        metrics::counter!("scheduler_runs_shed_total").increment(0);
        metrics::counter!("scheduler_slots_skipped_total").increment(0);
        metrics::counter!("monitors_skipped_corrupt_total").increment(0);
        let _ = metrics::histogram!("scheduler_start_lateness_seconds");
        // Notifications: attempts by channel type and outcome (counted by the worker), the
        // pending attempts, and how long the oldest due one has waited.
        for outcome in ["delivered", "retrying", "failed"] {
            metrics::counter!("notification_deliveries_total", "channel_type" => "WEBHOOK", "outcome" => outcome)
                .increment(0);
        }
        let now = state.cx().clock().now_ms();
        if let Ok((depth, oldest)) =
            crate::store::deliveries::queue_stats(state.cx().db().reader(), now).await
        {
            metrics::gauge!("notification_queue_depth").set(depth as f64);
            let age = oldest.map_or(0, |due| (now - due).max(0));
            metrics::gauge!("notification_oldest_pending_seconds").set(age as f64 / 1000.0);
        }
        if let Ok(n) = crate::store::monitors::count_stale(state.cx().db().reader()).await {
            metrics::gauge!("monitors_stale").set(n as f64);
        }
        let mut out = self.handle.render();
        match crate::store::monitors::list_for_metrics(state.cx().db().reader()).await {
            Ok(monitors) => monitor_series(&mut out, &monitors, state.check_stats()),
            Err(e) => tracing::warn!(error = %e, "could not read monitors for /metrics"),
        }
        out
    }
}

/// A monitor's status as a number, as other monitoring tools export it: 0 DOWN, 1 UP,
/// 2 PENDING, 3 MAINTENANCE, 4 DEGRADED, 5 CHANGED.
fn status_value(status: &str) -> u8 {
    match status {
        "DOWN" => 0,
        "UP" => 1,
        "MAINTENANCE" => 3,
        "DEGRADED" => 4,
        "CHANGED" => 5,
        _ => 2,
    }
}

/// A label value in the exposition format: backslash, double quote and newline escaped.
fn label(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str("=\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The per-monitor families: `monitor_status` for every active monitor (from the store, so
/// every node answers it), and, from the node that checks them, `monitor_response_time_ms`,
/// `monitor_checks_total{result}` and `monitor_cert_days_remaining` per region. Written by
/// hand rather than through the recorder so that a deleted or paused monitor's series leave
/// with it instead of lingering.
fn monitor_series(
    out: &mut String,
    monitors: &[crate::store::monitors::MetricLabels],
    stats: &crate::monitoring::check_stats::CheckStats,
) {
    use std::fmt::Write;
    let keep = monitors.iter().map(|m| m.id.as_str()).collect();
    let figures = stats.snapshot_retaining(&keep);
    let labels = |m: &crate::store::monitors::MetricLabels| {
        let mut l = String::new();
        label(&mut l, "monitor_id", &m.id);
        l.push(',');
        label(&mut l, "monitor_name", &m.name);
        l.push(',');
        label(&mut l, "monitor_type", &m.kind_text);
        l.push(',');
        label(&mut l, "workspace_id", &m.workspace_id);
        l
    };
    out.push_str(
        "# HELP monitor_status 0 DOWN, 1 UP, 2 PENDING, 3 MAINTENANCE, 4 DEGRADED, 5 CHANGED\n",
    );
    out.push_str("# TYPE monitor_status gauge\n");
    for m in monitors {
        let _ = writeln!(
            out,
            "monitor_status{{{}}} {}",
            labels(m),
            status_value(&m.status_text)
        );
    }
    let with_region = |m, region: &str| {
        let mut l = labels(m);
        l.push(',');
        label(&mut l, "region", region);
        l
    };
    out.push_str("# HELP monitor_response_time_ms Latency of the last check, per region\n");
    out.push_str("# TYPE monitor_response_time_ms gauge\n");
    for m in monitors {
        for (region, f) in figures.get(&m.id).into_iter().flatten() {
            let _ = writeln!(
                out,
                "monitor_response_time_ms{{{}}} {}",
                with_region(m, region),
                f.last_latency_ms
            );
        }
    }
    out.push_str("# HELP monitor_checks_total Checks by result, per region\n");
    out.push_str("# TYPE monitor_checks_total counter\n");
    for m in monitors {
        for (region, f) in figures.get(&m.id).into_iter().flatten() {
            for result in ["up", "down", "degraded", "changed"] {
                let n = f.checks.get(result).copied().unwrap_or(0);
                let mut l = with_region(m, region);
                l.push(',');
                label(&mut l, "result", result);
                let _ = writeln!(out, "monitor_checks_total{{{l}}} {n}");
            }
        }
    }
    out.push_str("# HELP monitor_cert_days_remaining Days until the TLS certificate expires\n");
    out.push_str("# TYPE monitor_cert_days_remaining gauge\n");
    for m in monitors {
        for (region, f) in figures.get(&m.id).into_iter().flatten() {
            if let Some(days) = f.cert_days_left {
                let _ = writeln!(
                    out,
                    "monitor_cert_days_remaining{{{}}} {days}",
                    with_region(m, region)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        label(&mut out, "monitor_name", "a \"b\"\\c\nd");
        assert_eq!(out, r#"monitor_name="a \"b\"\\c\nd""#);
    }

    #[test]
    fn statuses_have_fixed_numbers() {
        assert_eq!(status_value("DOWN"), 0);
        assert_eq!(status_value("UP"), 1);
        assert_eq!(status_value("PENDING"), 2);
        assert_eq!(status_value("DEGRADED"), 4);
    }
}
