//! The body of `GET /monitors`: every monitor of the workspace as one JSON array, built
//! without re-reading and re-converting every monitor's settings on every request.
//!
//! Each monitor's JSON is cut into the parts that only a user edit changes (pre-serialized
//! once and kept per workspace, keyed by monitor id and settings `version`) and the parts
//! that change without an edit (status, counters, `pendingFailureSince`, `lastPushAt`,
//! `lastCheckAt`, `staleSince`, `projectIds`, `notificationChannelIds`, `escalationPolicyId`),
//! which every request reads fresh. A request reads every listed monitor's
//! `version` with its state in one narrow query ([`store::monitor_list::states`]), so a cached
//! part is used only while the database still holds that version: another API node sharing
//! the database, or a write that bypassed this process, cannot make it stale. Parts of other
//! versions are rebuilt from the full rows through the same [`view`] as every other read.
//!
//! Requests for the same list share builds (see [`build`]): never one that began before a
//! write this process answered, so callers always see their own writes, nor one that began
//! before a notice of another node's write arrived ([`MonitorLists::note_remote_write`]).
//!
//! Concurrent builds are capped ([`MAX_BUILDS`]) so a burst of full lists cannot take every
//! reader connection from the scheduler and the heartbeat writer.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as OaResponse};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::Semaphore;

use crate::clock::rfc3339;
use crate::domain::monitors::{view, Monitor};
use crate::domain::DomainError;
use crate::http::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::store::corrupt::{self, CorruptRow};
use crate::store::monitor_channels::Settings;
use crate::store::monitor_list::{self, ListError, ListedState};
use crate::store::monitors::MonitorFilter;

/// Full-list builds at once, across workspaces; the rest wait their turn (they are short once
/// parts are cached). One, so a stream of full lists keeps at most one core and one reader
/// connection busy, and the scheduler and the heartbeat writer keep the rest.
pub const MAX_BUILDS: usize = 1;

/// Cached monitors across all workspaces beyond which the cache starts afresh: a bound on
/// memory, not an expected size (a part is a few hundred bytes).
const MAX_CACHED: usize = 500_000;

/// A JSON body serialized ahead, documented as `T`.
pub struct RawJson<T>(Bytes, PhantomData<T>);

impl<T> IntoResponse for RawJson<T> {
    fn into_response(self) -> Response {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            self.0,
        )
            .into_response()
    }
}

impl<T: JsonSchema> aide::OperationOutput for RawJson<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        <axum::Json<T> as aide::OperationOutput>::operation_response(ctx, op)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        <axum::Json<T> as aide::OperationOutput>::inferred_responses(ctx, op)
    }
}

/// One monitor's JSON without its fresh parts. Joined with them it is, byte for byte, what
/// `serde_json` writes for the [`Monitor`]:
/// `parts[..cuts[0]]` projectIds `parts[cuts[0]..cuts[1]]` status `parts[cuts[1]..cuts[2]]`
/// failures, successes, pendingFailureSince `parts[cuts[2]..]` lastPushAt,
/// notificationChannelIds, escalationPolicyId, lastCheckAt, staleSince `}`.
struct Part {
    version: i64,
    parts: Box<[u8]>,
    cuts: [usize; 3],
}

/// What waiting requests share: the body, or why it could not be built.
type Outcome = Result<Bytes, Arc<String>>;

/// A build not yet started, which requests for the same list join.
struct Pending {
    token: u64,
    build: Shared<BoxFuture<'static, Outcome>>,
}

/// A build under way, which requests join while no write has been answered since it began.
struct Running {
    token: u64,
    /// [`MonitorLists::writes`] when the build began reading.
    writes: u64,
    build: Shared<BoxFuture<'static, Outcome>>,
}

/// The parts of every monitor listed lately, per workspace, the builds waiting to start and
/// under way, and the cap on builds running.
pub struct MonitorLists {
    parts: RwLock<HashMap<String, HashMap<String, Arc<Part>>>>,
    pending: Mutex<HashMap<String, Pending>>,
    running: Mutex<HashMap<String, Running>>,
    next_token: AtomicU64,
    builds: Semaphore,
    /// Requests that may have written (any method but GET, HEAD and OPTIONS) answered so far
    /// by this process: see [`note_writes`].
    writes: AtomicU64,
}

impl Default for MonitorLists {
    fn default() -> Self {
        MonitorLists {
            parts: RwLock::default(),
            pending: Mutex::default(),
            running: Mutex::default(),
            next_token: AtomicU64::new(0),
            builds: Semaphore::new(MAX_BUILDS),
            writes: AtomicU64::new(0),
        }
    }
}

/// Middleware: counts every answered request that may have written, before its response
/// leaves. A list request joins a build already under way only if this count has not moved
/// since the build began reading, so a caller always sees its own writes (and every write
/// answered by this process before its request): what it may miss is a check or push result
/// committed while the build ran, which is indistinguishable from asking a moment earlier.
pub async fn note_writes(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::http::Method;
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let response = next.run(req).await;
    if writes {
        state.monitor_lists().writes.fetch_add(1, Ordering::SeqCst);
    }
    response
}

impl MonitorLists {
    /// Counts a write answered by another node sharing the database (a feed notice from it):
    /// builds under way from then on are not joined, as for this process's own writes.
    pub fn note_remote_write(&self) {
        self.writes.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Debug, thiserror::Error)]
enum BuildError {
    #[error("encoding a monitor: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("the monitor part cache lock was poisoned")]
    Poisoned,
    #[error(transparent)]
    Corrupt(#[from] CorruptRow),
}

impl From<BuildError> for ApiError {
    fn from(e: BuildError) -> Self {
        DomainError::Internal(e.into()).into()
    }
}

fn list_error(e: ListError) -> ApiError {
    match e {
        ListError::Sqlx(e) => e.into(),
        other => DomainError::Internal(other.into()).into(),
    }
}

fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<(), serde_json::Error> {
    serde_json::to_writer(out, v)
}

/// Cuts a monitor's settings into a [`Part`]. The view's state fields are ignored.
fn part_of(m: &Monitor, version: i64) -> Result<Part, serde_json::Error> {
    let mut s = Vec::with_capacity(512);
    s.extend_from_slice(b"{\"id\":");
    put(&mut s, &m.id)?;
    s.extend_from_slice(b",\"workspaceId\":");
    put(&mut s, &m.workspace_id)?;
    s.extend_from_slice(b",\"projectIds\":");
    let c0 = s.len();
    s.extend_from_slice(b",\"name\":");
    put(&mut s, &m.name)?;
    s.extend_from_slice(b",\"type\":");
    put(&mut s, &m.kind)?;
    s.extend_from_slice(b",\"status\":");
    let c1 = s.len();
    s.extend_from_slice(b",\"url\":");
    put(&mut s, &m.url)?;
    s.extend_from_slice(b",\"host\":");
    put(&mut s, &m.host)?;
    s.extend_from_slice(b",\"port\":");
    put(&mut s, &m.port)?;
    s.extend_from_slice(b",\"interval\":");
    put(&mut s, &m.interval)?;
    s.extend_from_slice(b",\"retries\":");
    put(&mut s, &m.retries)?;
    s.extend_from_slice(b",\"timeout\":");
    put(&mut s, &m.timeout)?;
    s.extend_from_slice(b",\"tags\":");
    put(&mut s, &m.tags)?;
    s.extend_from_slice(b",\"description\":");
    put(&mut s, &m.description)?;
    s.extend_from_slice(b",\"config\":");
    put(&mut s, &m.config)?;
    s.extend_from_slice(b",\"regions\":");
    put(&mut s, &m.regions)?;
    s.extend_from_slice(b",\"regionStrategy\":");
    put(&mut s, &m.region_strategy)?;
    s.extend_from_slice(b",\"confirmationsRequired\":");
    put(&mut s, &m.confirmations_required)?;
    s.extend_from_slice(b",\"recoveryConfirmationsRequired\":");
    put(&mut s, &m.recovery_confirmations_required)?;
    s.extend_from_slice(b",\"minFailureDurationMs\":");
    put(&mut s, &m.min_failure_duration_ms)?;
    s.extend_from_slice(b",\"flapDetection\":");
    put(&mut s, &m.flap_detection)?;
    s.extend_from_slice(b",\"consecutiveFailures\":");
    let c2 = s.len();
    s.extend_from_slice(b",\"active\":");
    put(&mut s, &m.active)?;
    s.extend_from_slice(b",\"pushToken\":");
    put(&mut s, &m.push_token)?;
    s.extend_from_slice(b",\"gracePeriod\":");
    put(&mut s, &m.grace_period)?;
    s.extend_from_slice(b",\"lastPushAt\":");
    Ok(Part {
        version,
        parts: s.into_boxed_slice(),
        cuts: [c0, c1, c2],
    })
}

fn put_time(out: &mut Vec<u8>, ms: Option<i64>) -> Result<(), serde_json::Error> {
    match ms {
        Some(ms) => put(out, &rfc3339(ms)),
        None => {
            out.extend_from_slice(b"null");
            Ok(())
        }
    }
}

/// Appends one monitor: its cached part joined with its fresh state, projects and alerting
/// settings (fresh: deleting a policy or a channel changes them without a monitor edit).
fn write_monitor(
    out: &mut Vec<u8>,
    part: &Part,
    state: &ListedState,
    projects: Option<&Vec<String>>,
    alerting: Option<&Settings>,
    depends_on: Option<&Vec<String>>,
) -> Result<(), BuildError> {
    let [c0, c1, c2] = part.cuts;
    let p = &part.parts;
    out.extend_from_slice(&p[..c0]);
    match projects {
        Some(ids) => put(out, ids)?,
        None => out.extend_from_slice(b"[]"),
    }
    out.extend_from_slice(&p[c0..c1]);
    put(
        out,
        &corrupt::parse::<tocsin_core::Status>("monitors", &state.id, "status", &state.status)?,
    )?;
    out.extend_from_slice(&p[c1..c2]);
    put(out, &state.consecutive_failures)?;
    out.extend_from_slice(b",\"consecutiveSuccesses\":");
    put(out, &state.consecutive_successes)?;
    out.extend_from_slice(b",\"pendingFailureSince\":");
    put_time(out, state.pending_failure_since)?;
    out.extend_from_slice(&p[c2..]);
    put_time(out, state.last_push_at)?;
    out.extend_from_slice(b",\"notificationChannelIds\":");
    match alerting {
        Some((channels, _)) => put(out, channels)?,
        None => out.extend_from_slice(b"[]"),
    }
    out.extend_from_slice(b",\"escalationPolicyId\":");
    put(out, &alerting.and_then(|(_, p)| p.as_ref()))?;
    out.extend_from_slice(b",\"dependsOn\":");
    match depends_on {
        Some(ids) => put(out, ids)?,
        None => out.extend_from_slice(b"[]"),
    }
    out.extend_from_slice(b",\"lastCheckAt\":");
    put_time(out, state.last_check_at)?;
    out.extend_from_slice(b",\"staleSince\":");
    put_time(out, state.stale_since)?;
    out.extend_from_slice(b",\"flappingSince\":");
    put_time(out, state.flapping_since)?;
    out.push(b'}');
    Ok(())
}

impl MonitorLists {
    /// The cached part of each of `states` at its listed version (`None`: missing or of
    /// another version).
    fn lookup(
        &self,
        ws: &str,
        states: &[ListedState],
    ) -> Result<Vec<Option<Arc<Part>>>, BuildError> {
        let cache = self.parts.read().map_err(|_| BuildError::Poisoned)?;
        let Some(known) = cache.get(ws) else {
            return Ok(vec![None; states.len()]);
        };
        Ok(states
            .iter()
            .map(|s| known.get(&s.id).filter(|p| p.version == s.version).cloned())
            .collect())
    }

    /// Keeps freshly built parts (never replacing a newer version: requests race); with
    /// `listed` (an unfiltered list), forgets the workspace's monitors not in it (deleted).
    fn keep(
        &self,
        ws: &str,
        fresh: &HashMap<String, Arc<Part>>,
        listed: Option<&[ListedState]>,
    ) -> Result<(), BuildError> {
        let mut cache = self.parts.write().map_err(|_| BuildError::Poisoned)?;
        let total: usize = cache.values().map(HashMap::len).sum();
        if total + fresh.len() > MAX_CACHED {
            // Over the bound the request still answers from its own parts; later ones rebuild.
            cache.clear();
        }
        let known = cache.entry(ws.to_string()).or_default();
        if let Some(listed) = listed.filter(|l| known.len() + fresh.len() > l.len()) {
            let ids: HashSet<&str> = listed.iter().map(|s| s.id.as_str()).collect();
            known.retain(|id, _| ids.contains(id.as_str()));
        }
        for (id, part) in fresh {
            match known.get(id) {
                Some(old) if old.version > part.version => {}
                _ => {
                    known.insert(id.clone(), part.clone());
                }
            }
        }
        Ok(())
    }
}

/// Every monitor of workspace `ws` that passes `filter`, as `GET /monitors` answers it.
///
/// Requests for the same list share builds: one that arrives while a build is under way joins
/// it if no write has been answered since that build began reading (see [`note_writes`]),
/// otherwise it waits for the next build, which starts its reads after every one of its
/// requests arrived. Either way a response reflects every write this process answered before
/// the request began, and a burst of N readers costs about one build instead of N.
pub async fn build(
    state: &AppState,
    ws: &str,
    filter: &MonitorFilter,
) -> ApiResult<RawJson<Vec<Monitor>>> {
    let key = format!(
        "{ws}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
        filter.status, filter.kind, filter.tag, filter.project_id, filter.search
    );
    let lists = state.monitor_lists();
    let flight = {
        let mut pending = lists.pending.lock().map_err(|_| BuildError::Poisoned)?;
        let under_way = lists
            .running
            .lock()
            .map_err(|_| BuildError::Poisoned)?
            .get(&key)
            .filter(|r| r.writes == lists.writes.load(Ordering::SeqCst))
            .map(|r| r.build.clone());
        match (pending.get(&key), under_way) {
            (Some(p), _) => p.build.clone(),
            (None, Some(build)) => build,
            (None, None) => {
                let token = lists.next_token.fetch_add(1, Ordering::Relaxed);
                let (state, ws, filter, key2) =
                    (state.clone(), ws.to_string(), filter.clone(), key.clone());
                let fut: BoxFuture<'static, Outcome> = async move {
                    run(&state, &ws, &filter, &key2, token)
                        .await
                        .map_err(|e| Arc::new(e.to_string()))
                }
                .boxed();
                let shared = fut.shared();
                pending.insert(
                    key,
                    Pending {
                        token,
                        build: shared.clone(),
                    },
                );
                shared
            }
        }
    };
    match flight.await {
        Ok(body) => Ok(RawJson(body, PhantomData)),
        Err(e) => Err(DomainError::Internal(anyhow::anyhow!("listing monitors: {e}")).into()),
    }
}

/// One build: waits for a permit, moves from the pending map to the running one (later
/// requests join it or start the next build), then reads and writes the body.
async fn run(
    state: &AppState,
    ws: &str,
    filter: &MonitorFilter,
    key: &str,
    token: u64,
) -> ApiResult<Bytes> {
    let lists = state.monitor_lists();
    let permit = lists
        .builds
        .acquire()
        .await
        .map_err(|e| DomainError::Internal(e.into()))?;
    {
        let mut pending = lists.pending.lock().map_err(|_| BuildError::Poisoned)?;
        if let Some(p) = pending.remove(key) {
            if p.token == token {
                // Read the write count before reading the database: a write answered after
                // this point stops requests from joining (see `note_writes`).
                let writes = lists.writes.load(Ordering::SeqCst);
                lists
                    .running
                    .lock()
                    .map_err(|_| BuildError::Poisoned)?
                    .insert(
                        key.to_string(),
                        Running {
                            token,
                            writes,
                            build: p.build,
                        },
                    );
            } else {
                pending.insert(key.to_string(), p);
            }
        }
    }
    let body = read_and_write(state, ws, filter).await;
    {
        let mut running = lists.running.lock().map_err(|_| BuildError::Poisoned)?;
        if running.get(key).is_some_and(|r| r.token == token) {
            running.remove(key);
        }
    }
    drop(permit);
    body
}

/// The reads and the body of one build.
async fn read_and_write(state: &AppState, ws: &str, filter: &MonitorFilter) -> ApiResult<Bytes> {
    let lists = state.monitor_lists();
    let db = state.db();
    // Memberships beside the states: two reader connections, one wait.
    let (states, projects, alerting, dependencies) = tokio::join!(
        monitor_list::states(db.reader(), db.backend(), ws, filter),
        monitor_list::memberships(db.reader(), ws),
        crate::store::monitor_channels::of_workspace(db.reader(), ws),
        crate::store::dependencies::of_workspace(db.reader(), ws)
    );
    let (states, projects, alerting, dependencies) = (
        states.map_err(list_error)?,
        projects?,
        alerting?,
        dependencies?,
    );
    let mut parts = lists.lookup(ws, &states)?;
    let stale: Vec<&str> = states
        .iter()
        .zip(&parts)
        .filter(|(_, p)| p.is_none())
        .map(|(s, _)| s.id.as_str())
        .collect();
    if !stale.is_empty() {
        // Rows read now may be of a newer version than the state read just before: that
        // version is committed too, so its part is the one to show.
        let rows = monitor_list::rows(db.reader(), ws, &stale).await?;
        let mut fresh = HashMap::with_capacity(rows.len());
        for row in &rows {
            let part = part_of(
                &view(row, Vec::new()).map_err(BuildError::from)?,
                row.version,
            )
            .map_err(BuildError::from)?;
            fresh.insert(row.id.clone(), Arc::new(part));
        }
        for (s, p) in states.iter().zip(parts.iter_mut()) {
            if p.is_none() {
                *p = fresh.get(&s.id).cloned();
            }
        }
        let unfiltered = filter_is_empty(filter).then_some(states.as_slice());
        lists.keep(ws, &fresh, unfiltered)?;
    }

    // About what a monitor's JSON takes, so the buffer rarely grows while written.
    let mut out = Vec::with_capacity(2 + states.len() * 640);
    out.push(b'[');
    let mut first = true;
    // A monitor without a part was deleted between the two reads: left out, as if listed a
    // moment later.
    for (s, part) in states.iter().zip(&parts) {
        let Some(part) = part else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        write_monitor(
            &mut out,
            part,
            s,
            projects.get(&s.id),
            alerting.get(&s.id),
            dependencies.get(&s.id),
        )?;
    }
    out.push(b']');
    Ok(Bytes::from(out))
}

fn filter_is_empty(f: &MonitorFilter) -> bool {
    f.status.is_none()
        && f.kind.is_none()
        && f.tag.is_none()
        && f.project_id.is_none()
        && f.search.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::monitors::MonitorRow;

    fn row(i: i64) -> MonitorRow {
        MonitorRow {
            id: format!("0190-{i}"),
            seq: i,
            workspace_id: "ws\"1".into(),
            name: format!("caf\u{e9} \"{i}\" \\ \u{1}"),
            kind_text: ["HTTP", "TCP", "PUSH", "DNS_DIFF", "WEBSOCKET"][(i % 5) as usize].into(),
            status_text: "UP".into(),
            url: (i % 2 == 0).then(|| "https://example.com/h?q=1&r=\u{2028}".into()),
            host: (i % 2 == 1).then(|| "example.com".into()),
            port: (i % 3 == 0).then_some(8443),
            interval_s: 60,
            retries: i,
            timeout_s: 30,
            tags: r#"["prod","b\u00e9"]"#.into(),
            description: (i % 2 == 0).then(|| "line\nbreak".into()),
            config: r#"{"z":1,"method":"GET","headers":{"X-A":"1"},"f":1.5e300,"n":null}"#.into(),
            regions: r#"["local","eu"]"#.into(),
            region_strategy: "all".into(),
            quorum: (i % 2 == 0).then_some(2),
            confirmations_required: 2,
            recovery_confirmations_required: 3,
            min_failure_duration_ms: 1_000,
            consecutive_failures: 0,
            consecutive_successes: 0,
            pending_failure_since: None,
            active: i % 2,
            grace_s: (i % 5 == 2).then_some(60),
            last_push_at: None,
            dns_baseline: None,
            status_changed_at: 0,
            last_check_at: None,
            started_at: 0,
            stale_since: None,
            maintenance_until: None,
            maintenance_excluded: 0,
            flap_transitions: Some(5),
            flap_window_minutes: Some(30),
            flapping_since: None,
            version: i,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn joined_parts_are_byte_for_byte_the_serialized_view() {
        let states = [
            ("DOWN", 3, 0, Some(1_700_000_000_123), None),
            ("UP", 0, 7, None, Some(1_700_000_001_000)),
            ("DEGRADED", 1, 2, Some(0), Some(-5)),
        ];
        for i in 0..10 {
            for (st, failures, successes, pending, push) in states {
                let mut r = row(i);
                r.status_text = st.into();
                r.consecutive_failures = failures;
                r.consecutive_successes = successes;
                r.pending_failure_since = pending;
                r.last_push_at = push;
                r.last_check_at = pending;
                // The row is active: a stale one shows its staleSince.
                r.stale_since = pending.map(|p| p + 7);
                r.flapping_since = pending.map(|p| p + 9);
                let projects: Vec<String> = (0..i % 3).map(|p| format!("p{p}")).collect();
                let alerting: Settings = (
                    (0..i % 3).map(|c| format!("c\"{c}")).collect(),
                    (i % 2 == 0).then(|| format!("pol-{i}")),
                );
                let expected = serde_json::to_vec(&crate::domain::monitors::view::with_alerting(
                    view(&r, projects.clone()).unwrap(),
                    Some(alerting.clone()),
                ))
                .unwrap();

                // The part is cut from a view with other state, as the cache holds it.
                let part = part_of(&view(&row(i), Vec::new()).unwrap(), r.version).unwrap();
                let listed = ListedState {
                    id: r.id.clone(),
                    version: r.version,
                    status: r.status_text.clone(),
                    consecutive_failures: failures,
                    consecutive_successes: successes,
                    pending_failure_since: pending,
                    last_push_at: push,
                    last_check_at: pending,
                    // The list's query shows it only for active monitors, as the view does.
                    stale_since: pending.map(|p| p + 7).filter(|_| i % 2 == 1),
                    flapping_since: r.flapping_since,
                };
                let mut got = Vec::new();
                let projects = (!projects.is_empty()).then_some(&projects);
                write_monitor(&mut got, &part, &listed, projects, Some(&alerting), None).unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
    }

    /// A stored status no status spells used to show as PENDING in both; it is now an error
    /// in both (a corrupt row is reported, never guessed).
    #[test]
    fn a_corrupt_status_is_an_error_in_the_view_and_the_list() {
        let mut r = row(1);
        r.status_text = "what".into();
        assert!(view(&r, Vec::new()).is_err());
        let part = part_of(&view(&row(1), Vec::new()).unwrap(), r.version).unwrap();
        let listed = ListedState {
            id: r.id.clone(),
            version: r.version,
            status: r.status_text.clone(),
            consecutive_failures: 0,
            consecutive_successes: 0,
            pending_failure_since: None,
            last_push_at: None,
            last_check_at: None,
            stale_since: None,
            flapping_since: None,
        };
        let mut got = Vec::new();
        assert!(matches!(
            write_monitor(&mut got, &part, &listed, None, None, None),
            Err(BuildError::Corrupt(_))
        ));
    }
}
