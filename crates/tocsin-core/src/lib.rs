//! The pure monitoring logic of Tocsin: every decision the server makes about a monitor that
//! can be made without I/O. It owns
//!
//! - [`state`]: the monitor state machine (confirmations, minimum failure duration, recovery,
//!   degraded/changed statuses, maintenance) as a pure `step` function;
//! - [`schedule`]: when each monitor runs (stable per-monitor phase offsets on a fixed grid, so
//!   100,000 monitors neither stampede at the top of the minute nor drift);
//! - [`quorum`]: which regions check a monitor in a cycle and how their verdicts combine;
//! - [`push`]: push-monitor schedules (interval or cron in an IANA time zone), deadlines and
//!   what a push says ([`PushStatus`]);
//! - [`maintenance`]: when a maintenance window (one-off, daily, weekly, monthly or cron, in an
//!   IANA time zone, across DST changes) is active, and how far ahead it is announced;
//! - [`flap`]: whether a monitor changing between UP and DOWN again and again is flapping;
//! - [`partition`]: which partition a monitor belongs to, and which node should hold each
//!   partition when several share the checks;
//! - [`uptime`]: the uptime percentage of a count of checks.
//!
//! Nothing here reads the clock, touches the network or a database, or needs an async runtime:
//! the time is always a parameter, so callers (and tests) drive it. That is what lets the same
//! rules run in the server, in a remote probe and in property tests.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use tocsin_core::{aggregate, step, EventKind, MonitorState, StateSettings, Status, Verdict};
//!
//! let settings = StateSettings::new(2, 1, 0)?;
//! let now = Utc.timestamp_opt(1_750_000_000, 0).single().ok_or("time")?;
//! // Two of three regions failed: the cycle failed.
//! let results = [("eu", Some(Verdict::Down)), ("us", Some(Verdict::Down)), ("ap", None)];
//! let verdict = aggregate(&results, None).ok_or("nobody reported")?;
//! let up = MonitorState { status: Status::Up, ..MonitorState::initial() };
//! let first = step(&up, &settings, verdict.into(), now);
//! assert_eq!((first.state.status, first.event), (Status::Up, None)); // 1 of 2 confirmations
//! let second = step(&first.state, &settings, verdict.into(), now);
//! assert_eq!(second.event.map(|e| e.kind), Some(EventKind::Down));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod flap;
pub mod maintenance;
pub mod monitor_type;
pub mod partition;
pub mod push;
pub mod quorum;
pub mod schedule;
pub mod state;
pub mod uptime;

pub use flap::{FlapOutcome, FlapSettings, FlapSettingsError, FlapState};
pub use monitor_type::MonitorType;
pub use push::{
    deadline, is_overdue, CronSchedule, PushConfig, PushConfigError, PushExpectation, PushSchedule,
    PushStatus,
};
pub use quorum::{
    aggregate, ask_the_others, confirm_from_start, confirmation_order, decide_timed,
    down_is_settled, majority, pick_regions, CycleTiming, RegionRun, RegionStrategy,
};
pub use schedule::{next_run_after, start_offset, Grid};
pub use state::{
    accept_baseline, enter_maintenance, leave_maintenance, push_down, resume, step, CycleInput,
    Event, EventKind, MonitorState, SettingsError, StateSettings, Status, Transition,
    UnknownStatus, Verdict,
};
pub use uptime::uptime_percent;
