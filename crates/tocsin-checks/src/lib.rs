//! The check engine: given a validated check specification, run one check against a real
//! target and describe what happened. It owns every probe protocol (HTTP(S), TCP, ICMP ping,
//! DNS, WebSocket) and the assertion language, and nothing else: it knows no database, no
//! HTTP server, no monitor state. The server's built-in probe and the remote `tocsin probe`
//! both call [`run`], so a check behaves the same wherever it runs.

pub mod address_policy;
pub mod assertions;
pub mod config;
pub mod dns;
pub mod fault;
pub mod http;
pub mod outcome;
pub mod ping;
pub mod spec;
pub mod tcp;
pub mod tls;
pub mod websocket;

pub use address_policy::AddressPolicy;
pub use outcome::{AssertionResult, Outcome, Timings, Verdict};
pub use spec::{CheckSpec, FieldError, MonitorKind, RunOptions};

/// Runs one check cycle: the check itself plus up to `opts.retries` immediate retries while it
/// fails, each bounded by `opts.timeout`. The returned outcome is the last attempt's, with
/// `retry_count` saying how many retries were spent.
pub async fn run(spec: &CheckSpec, opts: &RunOptions) -> Outcome {
    let mut retry_count = 0;
    loop {
        let mut outcome = run_once(spec, opts).await;
        // A probe fault is not retried: the probe, not the target, is short of something.
        if outcome.verdict != Verdict::Down
            || outcome.probe_fault.is_some()
            || retry_count >= opts.retries
        {
            outcome.retry_count = retry_count;
            return outcome;
        }
        retry_count += 1;
    }
}

/// One attempt, bounded by the monitor's timeout whatever the target does.
async fn run_once(spec: &CheckSpec, opts: &RunOptions) -> Outcome {
    let started = std::time::Instant::now();
    let attempt = async {
        match spec {
            CheckSpec::Http(c) => http::check(c, opts).await,
            CheckSpec::Tcp(c) => tcp::check(c, opts).await,
            CheckSpec::Ping(c) => ping::check(c, opts).await,
            CheckSpec::Dns(c) => dns::check(c, opts, None).await,
            CheckSpec::DnsDiff(c) => dns::check(c, opts, Some(opts.baseline.as_deref())).await,
            CheckSpec::WebSocket(c) => websocket::check(c, opts).await,
        }
    };
    match tokio::time::timeout(opts.timeout, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::down(
            started.elapsed(),
            format!("timed out after {} ms", opts.timeout.as_millis()),
        ),
    }
}
