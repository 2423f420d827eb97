//! Driving time in tests: the instant every manual clock starts at, the check interval the
//! monitor factories use, the API's timestamp format, and the step that moves a manual clock
//! one interval on and runs the cycles that fell due (the scheduler's own entry point, so a
//! test runs exactly the code the background loop would).

use tocsin::clock::{Clock, ManualClock};
use tocsin::monitoring::cycle::CycleReport;
use tocsin::monitoring::scheduler;

use super::TestServer;

/// Where the suite's manual clocks start: 2023-11-14T22:13:20Z, a Tuesday.
pub const T0: i64 = 1_700_000_000_000;

/// The interval of the monitors the factories create (`"interval": 10`), in milliseconds.
pub const INTERVAL_MS: i64 = 10_000;

/// `ms` as the API writes timestamps (RFC 3339, UTC, milliseconds).
pub fn rfc(ms: i64) -> String {
    tocsin::clock::rfc3339(ms)
}

/// Runs every cycle due at `now_ms`, as the scheduler's loop would; the (monitor id, report)
/// of each cycle that ran.
pub async fn run_due(srv: &TestServer, now_ms: i64) -> Vec<(String, CycleReport)> {
    scheduler::run_due(srv.state.runner(), now_ms)
        .await
        .unwrap()
}

/// Moves `clock` one interval on and runs whatever is due; the reports of the cycles that ran.
pub async fn tick_reports(srv: &TestServer, clock: &ManualClock) -> Vec<(String, CycleReport)> {
    clock.advance_ms(INTERVAL_MS);
    run_due(srv, clock.now_ms()).await
}

/// Moves `clock` one interval on and runs whatever is due; how many cycles ran.
pub async fn tick(srv: &TestServer, clock: &ManualClock) -> usize {
    tick_reports(srv, clock).await.len()
}
