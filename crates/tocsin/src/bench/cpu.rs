//! CPU time spent by the bench process during the measured window, split between the server's
//! threads and everything else (the client). Requests per second depend on how much CPU the
//! process actually got, which on a shared machine can be far less than its cores; CPU time
//! per request does not, so the report carries both.
//!
//! Linux only (reads `/proc/self/task/*/schedstat`, nanosecond run times); elsewhere, or when
//! the files are unreadable, the figures are simply absent. Threads that exit inside the window
//! are missed, which only affects short-lived blocking-pool threads.

use std::time::Duration;

/// Thread-name prefixes that belong to the in-process server: its runtime's workers and
/// blocking threads, sqlx's SQLite connection workers and the heartbeat writer's thread (names
/// are cut at 15 bytes).
const SERVER_THREADS: &[&str] = &["bench-server", "sqlx-sqlite", "heartbeat-write"];

/// Cumulative on-CPU time so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSample {
    pub server_ns: u64,
    pub total_ns: u64,
}

/// CPU used over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuUse {
    pub server: Duration,
    pub client: Duration,
}

impl CpuSample {
    /// Reads every thread's run time; `None` when the platform does not expose it.
    pub fn now() -> Option<CpuSample> {
        let mut sample = CpuSample::default();
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        for task in tasks.flatten() {
            let dir = task.path();
            // A thread may exit between listing and reading: skip it.
            let Ok(stat) = std::fs::read_to_string(dir.join("schedstat")) else {
                continue;
            };
            let Some(ns) = parse_schedstat(&stat) else {
                continue;
            };
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            sample.total_ns += ns;
            if SERVER_THREADS.iter().any(|p| comm.starts_with(p)) {
                sample.server_ns += ns;
            }
        }
        (sample.total_ns > 0).then_some(sample)
    }

    /// What was used between `self` (earlier) and `later`.
    pub fn until(&self, later: &CpuSample) -> CpuUse {
        let server = later.server_ns.saturating_sub(self.server_ns);
        let total = later.total_ns.saturating_sub(self.total_ns);
        CpuUse {
            server: Duration::from_nanos(server),
            client: Duration::from_nanos(total.saturating_sub(server)),
        }
    }
}

/// Run time so far of this process's threads whose name starts with `prefix` (a client the
/// bench runs beside the server, told apart from the rest).
pub fn threads_ns(prefix: &str) -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        if let Some(ns) = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| parse_schedstat(&s))
        {
            total += ns;
        }
    }
    Some(total)
}

/// The first field of a `schedstat` line: nanoseconds spent running.
fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_subtracts() {
        assert_eq!(
            parse_schedstat("211700780 429538986 110\n"),
            Some(211_700_780)
        );
        assert_eq!(parse_schedstat(""), None);
        let a = CpuSample {
            server_ns: 1_000,
            total_ns: 1_500,
        };
        let b = CpuSample {
            server_ns: 4_000,
            total_ns: 6_500,
        };
        assert_eq!(
            a.until(&b),
            CpuUse {
                server: Duration::from_nanos(3_000),
                client: Duration::from_nanos(2_000),
            }
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let s = CpuSample::now().expect("procfs is readable on Linux");
        assert!(s.total_ns >= s.server_ns);
    }
}
