//! The monitor state machine. It owns a monitor's `status`, `consecutiveFailures`,
//! `consecutiveSuccesses` and `pendingFailureSince`, and decides from one aggregated cycle
//! verdict what they become and whether a status-change [`Event`] is recorded.
//!
//! # Semantics
//!
//! - **Creation and resume** start from [`MonitorState::initial`]: `PENDING`, counters zero.
//!   Pausing is the caller's business: a paused monitor is simply not stepped.
//! - **Failures** (`Down` verdicts) count up `consecutiveFailures`; the first failure of a run
//!   sets `pendingFailureSince`. The monitor goes `DOWN` only when
//!   `consecutiveFailures >= confirmationsRequired` **and**
//!   `now - pendingFailureSince >= minFailureDurationMs`. Until then it keeps its previous
//!   status (an `UP` monitor stays `UP` while failures accumulate; a `PENDING` one stays
//!   `PENDING`, since a failure while pending counts toward `DOWN` like any other).
//! - **Successes** are `Up`, `Degraded` and `Changed` verdicts: the target answered. A success
//!   resets `consecutiveFailures` and `pendingFailureSince`; a failure resets
//!   `consecutiveSuccesses`. Both counters are exact (saturating at `u32::MAX`).
//! - **Recovery**: while `DOWN`, the monitor leaves `DOWN` only after
//!   `recoveryConfirmationsRequired` consecutive successes, and goes to the status the last
//!   verdict implies (`UP`, `DEGRADED` or `CHANGED`) with event kind [`EventKind::Up`].
//! - **Degraded** is immediate (no confirmations): a `Degraded` verdict makes a non-`DOWN`
//!   monitor `DEGRADED` (event `degraded`); the next `Up` verdict makes it `UP` (event `up`).
//! - **Changed** (DNS_DIFF) is immediate and *sticky*: a `Changed` verdict makes a non-`DOWN`
//!   monitor `CHANGED` (event `changed`), and later `Up`/`Degraded` verdicts do not clear it,
//!   because a detected change must be acknowledged by a person. The caller clears it with
//!   [`accept_baseline`] once the new answer set is accepted, which returns the monitor to
//!   `PENDING` so the next verdict (against the new baseline) decides afresh. Failures still
//!   take a `CHANGED` monitor `DOWN`; recovery from `DOWN` goes wherever the verdict says.
//! - **Maintenance** is a flag on the input ([`CycleInput::in_maintenance`]), because maintenance
//!   windows are resolved by the caller. While it is set the status is `MAINTENANCE`, counters
//!   stay at zero and no `down`/`up` event can fire; entering records one non-alerting
//!   [`EventKind::Maintenance`] event. When the flag clears, the machine restarts from
//!   [`MonitorState::initial`] *before* applying that cycle's verdict, exactly as on creation:
//!   the first success gives `UP` (non-alerting), failures must be confirmed again, and while
//!   they accumulate the status is `PENDING` (so a monitor never sits in `MAINTENANCE` after
//!   its window ended).
//! - **Events** are emitted iff the status changed, with `from`/`to`. Only some are worth an
//!   alert: see [`Event::is_alert_worthy`]. In particular the first `UP` after `PENDING` (or
//!   after maintenance) is recorded with kind `up` but does not alert "recovered", since
//!   nothing was down.
//! - **Push monitors** use [`push_down`]: a push with `status=down`, or a missed deadline,
//!   makes the monitor `DOWN` at once regardless of confirmations.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A monitor's (and a heartbeat's) status: the one type for it in every layer. Serialized
/// exactly as the API spells it ([`Status::as_str`], which is also the stored text).
///
/// With the `schema` feature it is the API document's `MonitorStatus` schema. The description
/// is spelled out rather than taken from this comment because the published document predates
/// this type and must stay byte-identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(
        rename = "MonitorStatus",
        description = "A monitor's (and a heartbeat's) status as the API documents it; the same values as\n [`tocsin_core::Status`], which owns the transitions."
    )
)]
pub enum Status {
    Up,
    Down,
    Degraded,
    Changed,
    Maintenance,
    Pending,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 6] = [
        Status::Up,
        Status::Down,
        Status::Degraded,
        Status::Changed,
        Status::Maintenance,
        Status::Pending,
    ];

    /// The spelling of the API (the serde form) and of the stored text columns.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Up => "UP",
            Status::Down => "DOWN",
            Status::Degraded => "DEGRADED",
            Status::Changed => "CHANGED",
            Status::Maintenance => "MAINTENANCE",
            Status::Pending => "PENDING",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A text that is no status's spelling (a corrupt or foreign stored value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown status {0:?}")]
pub struct UnknownStatus(pub String);

impl std::str::FromStr for Status {
    type Err = UnknownStatus;

    /// The inverse of [`Status::as_str`]; anything else is an error, never a default.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// The aggregated verdict of one check cycle (see [`crate::quorum::aggregate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Up,
    Down,
    /// Reachable, but a `warn` assertion failed (or a certificate is near expiry).
    Degraded,
    /// DNS_DIFF: the answer set differs from the accepted baseline.
    Changed,
}

impl Verdict {
    /// Whether the target answered. `Degraded` and `Changed` are successes for counting.
    pub fn is_success(self) -> bool {
        !matches!(self, Verdict::Down)
    }

    /// The status a success verdict leads to.
    fn success_status(self) -> Status {
        match self {
            Verdict::Up => Status::Up,
            Verdict::Degraded => Status::Degraded,
            Verdict::Changed => Status::Changed,
            // Not reached for successes; kept total so no panic path exists.
            Verdict::Down => Status::Down,
        }
    }
}

/// One step's input: the cycle verdict plus whether the monitor is in a maintenance window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CycleInput {
    pub verdict: Verdict,
    /// Resolved by the caller from the monitor's maintenance windows.
    pub in_maintenance: bool,
}

impl CycleInput {
    /// A cycle outside maintenance.
    pub fn new(verdict: Verdict) -> Self {
        CycleInput {
            verdict,
            in_maintenance: false,
        }
    }

    /// A cycle inside a maintenance window (the verdict is recorded by the caller as a
    /// heartbeat but does not move the machine).
    pub fn maintenance(verdict: Verdict) -> Self {
        CycleInput {
            verdict,
            in_maintenance: true,
        }
    }
}

impl From<Verdict> for CycleInput {
    fn from(verdict: Verdict) -> Self {
        CycleInput::new(verdict)
    }
}

/// The monitor fields the machine owns, named as the API names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorState {
    pub status: Status,
    pub consecutive_failures: u32,
    pub consecutive_successes: u32,
    /// Time of the first failure of the current failing run; `None` while not failing.
    pub pending_failure_since: Option<DateTime<Utc>>,
}

impl MonitorState {
    /// The state on creation and on resume: `PENDING`, counters reset.
    pub fn initial() -> Self {
        MonitorState {
            status: Status::Pending,
            consecutive_failures: 0,
            consecutive_successes: 0,
            pending_failure_since: None,
        }
    }

    /// The state inside a maintenance window.
    fn maintenance() -> Self {
        MonitorState {
            status: Status::Maintenance,
            ..MonitorState::initial()
        }
    }
}

impl Default for MonitorState {
    fn default() -> Self {
        MonitorState::initial()
    }
}

/// Why [`StateSettings::new`] rejected a setting. The `Display` text names the API field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("confirmationsRequired must be at least 1")]
    ConfirmationsRequired,
    #[error("recoveryConfirmationsRequired must be at least 1")]
    RecoveryConfirmationsRequired,
}

impl SettingsError {
    /// The API field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            SettingsError::ConfirmationsRequired => "confirmationsRequired",
            SettingsError::RecoveryConfirmationsRequired => "recoveryConfirmationsRequired",
        }
    }
}

/// The monitor settings the machine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateSettings {
    /// Consecutive failures needed before `DOWN` (>= 1; 0 is treated as 1).
    pub confirmations_required: u32,
    /// Consecutive successes needed to leave `DOWN` (>= 1; 0 is treated as 1).
    pub recovery_confirmations_required: u32,
    /// How long a failing run must have lasted before `DOWN`. Unsigned, so always >= 0.
    pub min_failure_duration_ms: u64,
}

impl StateSettings {
    /// Validated settings.
    pub fn new(
        confirmations_required: u32,
        recovery_confirmations_required: u32,
        min_failure_duration_ms: u64,
    ) -> Result<Self, SettingsError> {
        if confirmations_required == 0 {
            return Err(SettingsError::ConfirmationsRequired);
        }
        if recovery_confirmations_required == 0 {
            return Err(SettingsError::RecoveryConfirmationsRequired);
        }
        Ok(StateSettings {
            confirmations_required,
            recovery_confirmations_required,
            min_failure_duration_ms,
        })
    }

    // The fields are public (settings come from storage), so the machine clamps rather than
    // trusting them: a stored 0 must not make a single blip page anyone.
    fn confirmations(&self) -> u32 {
        self.confirmations_required.max(1)
    }

    fn recovery_confirmations(&self) -> u32 {
        self.recovery_confirmations_required.max(1)
    }
}

impl Default for StateSettings {
    /// One failure, one success, no minimum duration.
    fn default() -> Self {
        StateSettings {
            confirmations_required: 1,
            recovery_confirmations_required: 1,
            min_failure_duration_ms: 0,
        }
    }
}

/// What a status change was about. Serialized lowercase (`down`, `up`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Any status -> `DOWN`.
    Down,
    /// `DOWN` -> `UP`/`DEGRADED`/`CHANGED` (recovery), or any other status -> `UP`.
    Up,
    /// A non-`DOWN` status -> `DEGRADED`.
    Degraded,
    /// A non-`DOWN` status -> `CHANGED`.
    Changed,
    /// Any status -> `MAINTENANCE`.
    Maintenance,
    /// Any status -> `PENDING` (maintenance ended with failures not yet confirmed or with no
    /// verdict at all, or a baseline was accepted).
    Pending,
}

impl EventKind {
    /// The stored (and API) spelling, the same as the serde form.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Down => "down",
            EventKind::Up => "up",
            EventKind::Degraded => "degraded",
            EventKind::Changed => "changed",
            EventKind::Maintenance => "maintenance",
            EventKind::Pending => "pending",
        }
    }
}

/// A recorded status change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: EventKind,
    pub from: Status,
    pub to: Status,
}

impl Event {
    fn between(from: Status, to: Status) -> Event {
        let kind = match to {
            Status::Down => EventKind::Down,
            Status::Up => EventKind::Up,
            // Leaving DOWN is a recovery whatever the new status, so it alerts as `up`.
            Status::Degraded | Status::Changed if from == Status::Down => EventKind::Up,
            Status::Degraded => EventKind::Degraded,
            Status::Changed => EventKind::Changed,
            Status::Maintenance => EventKind::Maintenance,
            Status::Pending => EventKind::Pending,
        };
        Event { kind, from, to }
    }

    /// Whether notification channels should hear about this change. `up` alerts only when
    /// something was actually wrong before (`DOWN`, `DEGRADED`, `CHANGED`): the first `UP` after
    /// `PENDING` or after maintenance is recorded but is not a recovery. `maintenance` and
    /// `pending` never alert.
    pub fn is_alert_worthy(&self) -> bool {
        match self.kind {
            EventKind::Down | EventKind::Degraded | EventKind::Changed => true,
            EventKind::Up => !matches!(self.from, Status::Pending | Status::Maintenance),
            EventKind::Maintenance | EventKind::Pending => false,
        }
    }
}

/// The result of one step: the new state and, iff the status changed, the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    pub state: MonitorState,
    pub event: Option<Event>,
}

impl Transition {
    fn new(from: Status, state: MonitorState) -> Transition {
        let event = (from != state.status).then(|| Event::between(from, state.status));
        Transition { state, event }
    }
}

/// Applies one check cycle's verdict. Pure: `now` is the cycle's time (used only for
/// `pendingFailureSince` and the minimum failure duration).
pub fn step(
    state: &MonitorState,
    settings: &StateSettings,
    input: CycleInput,
    now: DateTime<Utc>,
) -> Transition {
    if input.in_maintenance {
        return Transition::new(state.status, MonitorState::maintenance());
    }
    let base = base_state(state);
    let next = if input.verdict.is_success() {
        on_success(&base, settings, input.verdict)
    } else {
        on_failure(&base, settings, now, false)
    };
    Transition::new(state.status, next)
}

/// A push monitor's failure: a push with `status=down`, or no push before the deadline. The
/// monitor goes `DOWN` at once, ignoring `confirmationsRequired` and `minFailureDurationMs`
/// (the sender already decided, or the silence has already lasted the whole grace period).
/// Counters move as for any failure. Inside maintenance it behaves like [`step`] does there.
pub fn push_down(state: &MonitorState, in_maintenance: bool, now: DateTime<Utc>) -> Transition {
    if in_maintenance {
        return Transition::new(state.status, MonitorState::maintenance());
    }
    let base = base_state(state);
    let next = on_failure(&base, &StateSettings::default(), now, true);
    Transition::new(state.status, next)
}

/// A maintenance window became active with no check at that instant: the monitor goes
/// `MAINTENANCE` at once (one non-alerting [`EventKind::Maintenance`] event), exactly as a
/// cycle inside the window would put it. Leaving is left to the next verdict ([`step`] or
/// [`push_down`] with the flag cleared), so the status after a window is the next check's.
pub fn enter_maintenance(state: &MonitorState) -> Transition {
    Transition::new(state.status, MonitorState::maintenance())
}

/// A maintenance window ended and no verdict is at hand to leave it with (a push monitor whose
/// job has said nothing since the window began): a `MAINTENANCE` monitor goes `PENDING` with
/// counters reset, with one non-alerting [`EventKind::Pending`] event, exactly the state
/// [`step`] restarts from after maintenance; its next verdict (a push, or a missed deadline)
/// decides. Any other status is left alone.
pub fn leave_maintenance(state: &MonitorState) -> Transition {
    if state.status == Status::Maintenance {
        Transition::new(state.status, MonitorState::initial())
    } else {
        Transition {
            state: *state,
            event: None,
        }
    }
}

/// The caller accepted a DNS_DIFF monitor's new answer set: a `CHANGED` monitor returns to
/// `PENDING` with counters reset, so the next verdict (against the new baseline) decides its
/// status without alerting. Any other status is left alone (a `DOWN` monitor stays `DOWN`).
pub fn accept_baseline(state: &MonitorState) -> Transition {
    if state.status == Status::Changed {
        Transition::new(state.status, MonitorState::initial())
    } else {
        Transition {
            state: *state,
            event: None,
        }
    }
}

/// The monitor was resumed after a pause: it starts afresh from [`MonitorState::initial`], as on
/// creation. A status other than `PENDING` before the pause gives a (non-alerting) `pending`
/// event, so the event stream never ends on a status the monitor no longer has.
pub fn resume(state: &MonitorState) -> Transition {
    Transition::new(state.status, MonitorState::initial())
}

/// Leaving maintenance restarts evaluation exactly as on creation.
fn base_state(state: &MonitorState) -> MonitorState {
    if state.status == Status::Maintenance {
        MonitorState::initial()
    } else {
        *state
    }
}

fn on_success(base: &MonitorState, settings: &StateSettings, verdict: Verdict) -> MonitorState {
    let successes = base.consecutive_successes.saturating_add(1);
    let status = match base.status {
        Status::Down if successes < settings.recovery_confirmations() => Status::Down,
        // CHANGED is sticky until the baseline is accepted; see the module docs.
        Status::Changed => Status::Changed,
        _ => verdict.success_status(),
    };
    MonitorState {
        status,
        consecutive_failures: 0,
        consecutive_successes: successes,
        pending_failure_since: None,
    }
}

fn on_failure(
    base: &MonitorState,
    settings: &StateSettings,
    now: DateTime<Utc>,
    immediate: bool,
) -> MonitorState {
    let failures = base.consecutive_failures.saturating_add(1);
    // The run starts at its first failure. A stored state with failures but no timestamp
    // (should not happen) is repaired by starting the run now, the conservative choice.
    let since = match base.pending_failure_since {
        Some(since) if base.consecutive_failures > 0 => since,
        _ => now,
    };
    // A clock that stepped backwards makes the run look negative: count it as zero so far.
    let lasted_ms = u64::try_from(now.signed_duration_since(since).num_milliseconds()).unwrap_or(0);
    let confirmed = immediate
        || (failures >= settings.confirmations() && lasted_ms >= settings.min_failure_duration_ms);
    MonitorState {
        status: if confirmed { Status::Down } else { base.status },
        consecutive_failures: failures,
        consecutive_successes: 0,
        pending_failure_since: Some(since),
    }
}

#[cfg(test)]
mod tests;
