//! Flap detection: whether a monitor that keeps changing between UP and DOWN is *flapping*,
//! and when it starts and stops.
//!
//! # Rule
//!
//! - A monitor is flapping once it has changed between UP and DOWN at least
//!   [`FlapSettings::transitions`] times within the last [`FlapSettings::window_ms`]: the
//!   change that makes the count reach it *starts* flapping.
//! - It stops once a whole window passes with at most one change: at any moment `now` when
//!   the window `(now - window, now]` holds at most one change. A change that arrives after
//!   such a quiet window first ends the flapping (the quiet window was already over), then
//!   counts afresh.
//! - Without settings (detection off) nothing flaps, and a flapping monitor stops at once.
//!
//! What the caller does with it (no alerts while flapping, one notice at each end) is the
//! caller's business. The state keeps only the change times inside the window, at most
//! `max(transitions, 2)` of them, which is all either rule can need, so it stays small enough
//! to store with the monitor. Times are milliseconds of the caller's clock; nothing here reads
//! a clock.

use serde::{Deserialize, Serialize};

/// Fewest changes a flapping threshold may ask for.
pub const MIN_TRANSITIONS: u32 = 2;
/// Most changes a flapping threshold may ask for.
pub const MAX_TRANSITIONS: u32 = 100;
/// Shortest window, in minutes.
pub const MIN_WINDOW_MINUTES: u32 = 1;
/// Longest window, in minutes (a day).
pub const MAX_WINDOW_MINUTES: u32 = 1_440;

/// How many changes in how long make a monitor flap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlapSettings {
    /// Changes within the window that start flapping (2 to 100).
    pub transitions: u32,
    /// The window, in minutes (1 to 1,440).
    pub window_minutes: u32,
}

/// Settings outside their documented ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FlapSettingsError {
    #[error("transitions must be between {MIN_TRANSITIONS} and {MAX_TRANSITIONS}")]
    Transitions,
    #[error("windowMinutes must be between {MIN_WINDOW_MINUTES} and {MAX_WINDOW_MINUTES}")]
    WindowMinutes,
}

impl FlapSettings {
    /// The default: 5 changes within 30 minutes.
    pub const DEFAULT: FlapSettings = FlapSettings {
        transitions: 5,
        window_minutes: 30,
    };

    /// Checked settings.
    pub fn new(transitions: u32, window_minutes: u32) -> Result<Self, FlapSettingsError> {
        if !(MIN_TRANSITIONS..=MAX_TRANSITIONS).contains(&transitions) {
            return Err(FlapSettingsError::Transitions);
        }
        if !(MIN_WINDOW_MINUTES..=MAX_WINDOW_MINUTES).contains(&window_minutes) {
            return Err(FlapSettingsError::WindowMinutes);
        }
        Ok(FlapSettings {
            transitions,
            window_minutes,
        })
    }

    /// The window in milliseconds.
    pub fn window_ms(&self) -> i64 {
        i64::from(self.window_minutes) * 60_000
    }

    /// How many change times the state keeps.
    fn keep(&self) -> usize {
        self.transitions.max(2) as usize
    }
}

impl Default for FlapSettings {
    fn default() -> Self {
        FlapSettings::DEFAULT
    }
}

/// A monitor's flap state: since when it flaps, and its recent changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlapState {
    /// When the current flapping began (ms); `None` while it does not flap.
    pub flapping_since: Option<i64>,
    /// Times (ms) of the recent changes between UP and DOWN, oldest first.
    pub changes: Vec<i64>,
}

/// What one call decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlapOutcome {
    /// Flapping ended (before the change, for [`record_change`]).
    pub ended: bool,
    /// Flapping started with this many changes in the window.
    pub started: Option<u32>,
}

/// How many of `changes` lie in the window ending at `now`: `(now - window, now]`.
pub fn changes_in_window(changes: &[i64], window_ms: i64, now: i64) -> u32 {
    let from = now.saturating_sub(window_ms);
    let n = changes.iter().filter(|&&t| t > from && t <= now).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl FlapState {
    /// Whether the monitor flaps.
    pub fn is_flapping(&self) -> bool {
        self.flapping_since.is_some()
    }

    /// Drops the changes that left the window ending at `now` and keeps at most what the
    /// rules need.
    fn prune(&mut self, settings: &FlapSettings, now: i64) {
        let from = now.saturating_sub(settings.window_ms());
        self.changes.retain(|&t| t > from);
        let keep = settings.keep();
        if self.changes.len() > keep {
            self.changes.drain(..self.changes.len() - keep);
        }
    }
}

/// Time passing to `now` with no change: ends flapping when the window ending at `now` holds
/// at most one change (or detection is off). The periodic check calls it; a change calls it
/// first through [`record_change`].
pub fn tick(state: &FlapState, settings: Option<&FlapSettings>, now: i64) -> (FlapState, bool) {
    let Some(settings) = settings else {
        return (FlapState::default(), state.is_flapping());
    };
    let mut next = state.clone();
    next.prune(settings, now);
    let quiet = changes_in_window(&next.changes, settings.window_ms(), now) <= 1;
    let ended = next.is_flapping() && quiet;
    if ended {
        next.flapping_since = None;
    }
    (next, ended)
}

/// A change between UP and DOWN at `at`: ends flapping if the window before it was quiet,
/// then counts it and starts flapping when the window now holds at least `transitions`.
pub fn record_change(
    state: &FlapState,
    settings: Option<&FlapSettings>,
    at: i64,
) -> (FlapState, FlapOutcome) {
    let (mut next, ended) = tick(state, settings, at);
    let mut outcome = FlapOutcome {
        ended,
        started: None,
    };
    let Some(settings) = settings else {
        return (next, outcome);
    };
    // Out-of-order times (a late push batch) are kept sorted; the window still decides.
    let pos = next.changes.partition_point(|&t| t <= at);
    next.changes.insert(pos, at);
    next.prune(settings, at.max(next.changes.last().copied().unwrap_or(at)));
    let n = changes_in_window(&next.changes, settings.window_ms(), at);
    if !next.is_flapping() && n >= settings.transitions {
        next.flapping_since = Some(at);
        outcome.started = Some(n);
    }
    (next, outcome)
}

#[cfg(test)]
mod tests;
