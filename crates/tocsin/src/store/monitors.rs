//! Monitors: the rows behind the monitor API, and the narrow entry points the scheduler,
//! executor and push ingestion use. Two kinds of writes exist and are kept apart:
//!
//! - **Settings** (name, target, config, intervals, regions, pause/resume...) are user edits:
//!   they bump `version`, which is the resource's `ETag`.
//! - **State** (`status`, the counters, `pending_failure_since`, `status_changed_at`,
//!   `last_check_at`, `dns_baseline`, `last_push_at`) is written by the monitoring machinery
//!   through [`update_state`], [`set_dns_baseline`] and [`set_last_push_at`]. These do **not**
//!   bump `version`: a check result is not an edit, and an editor's `If-Match` must not fail
//!   because a check ran in between. Settings writes never touch state columns, so the two
//!   cannot overwrite each other.
//!
//! Encodings: timestamps are integer milliseconds; `active` is 0/1; `tags`, `regions`,
//! `config` and `dns_baseline` are JSON text. `config` is stored without the `quorum` key,
//! which has a column of its own. The secret push token is never stored, only its SHA-256 in
//! `push_token_hash` (not part of [`MonitorRow`]).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sqlx::FromRow;
use tocsin_core::{MonitorState, MonitorType, PushSchedule, RegionStrategy, StateSettings, Status};

use super::corrupt::CorruptRow;
use super::{Exec, Versioned};
use crate::clock::from_ms;

/// One monitor as stored. Use the typed accessors rather than the raw text columns; the
/// check machinery works on `monitoring::monitor::Monitor`, this row parsed once.
#[derive(Debug, Clone, FromRow)]
pub struct MonitorRow {
    pub id: String,
    /// Compact integer key for high-volume tables (heartbeats, rollups).
    pub seq: i64,
    pub workspace_id: String,
    pub name: String,
    /// `HTTP`, `TCP`, ... (see [`MonitorRow::kind`]).
    #[sqlx(rename = "type")]
    pub kind_text: String,
    /// `UP`, `DOWN`, ... (see [`MonitorRow::status`]).
    #[sqlx(rename = "status")]
    pub status_text: String,
    pub url: Option<String>,
    pub host: Option<String>,
    pub port: Option<i64>,
    /// Seconds between checks (PUSH: between expected pushes when no cron schedule is set).
    pub interval_s: i64,
    pub retries: i64,
    /// Seconds one attempt may take.
    pub timeout_s: i64,
    /// JSON array of strings.
    pub tags: String,
    pub description: Option<String>,
    /// JSON object, without `quorum`.
    pub config: String,
    /// JSON array of region names.
    pub regions: String,
    pub region_strategy: String,
    /// Failure quorum for the `all` strategy; `None` means a majority of reporting regions.
    pub quorum: Option<i64>,
    pub confirmations_required: i64,
    pub recovery_confirmations_required: i64,
    pub min_failure_duration_ms: i64,
    pub consecutive_failures: i64,
    pub consecutive_successes: i64,
    pub pending_failure_since: Option<i64>,
    pub active: i64,
    /// PUSH: grace period in seconds; `None` for other types.
    pub grace_s: Option<i64>,
    pub last_push_at: Option<i64>,
    /// DNS_DIFF: JSON array of the accepted answer set; `None` until the first answer.
    pub dns_baseline: Option<String>,
    pub status_changed_at: i64,
    pub last_check_at: Option<i64>,
    /// When monitoring was created or last resumed: schedules and push deadlines start here.
    pub started_at: i64,
    /// When the monitor became stale (no result for three intervals, or no live probe in any
    /// of its regions); `None` while results come in.
    pub stale_since: Option<i64>,
    /// Until when (ms, exclusive) the monitor is in a maintenance window, as the scheduling
    /// node last applied it (`monitoring::maintenance`); `None` outside any. Time-based, so a
    /// window is over at its end whether or not anything clears the column.
    pub maintenance_until: Option<i64>,
    /// 1 when the active window keeps its checks out of uptime figures.
    pub maintenance_excluded: i64,
    /// Flap detection: changes between UP and DOWN within [`MonitorRow::flap_window_minutes`]
    /// that make the monitor flap; `None` (with the window) when detection is off.
    pub flap_transitions: Option<i64>,
    pub flap_window_minutes: Option<i64>,
    /// Since when the monitor flaps (`monitoring::flapping`); `None` while it does not.
    pub flapping_since: Option<i64>,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

pub(crate) const COLUMNS: &str =
    "id, seq, workspace_id, name, type, status, url, host, port, interval_s, \
     retries, timeout_s, tags, description, config, regions, region_strategy, quorum, \
     confirmations_required, recovery_confirmations_required, min_failure_duration_ms, \
     consecutive_failures, consecutive_successes, pending_failure_since, active, grace_s, \
     last_push_at, dns_baseline, status_changed_at, last_check_at, started_at, stale_since, \
     maintenance_until, maintenance_excluded, flap_transitions, flap_window_minutes, \
     flapping_since, version, created_at, updated_at";

/// [`COLUMNS`] for the push path inside the heartbeat writer's transaction: the columns the
/// state machine and push deadlines read, with the display-only ones (name, url, tags, ...)
/// left empty, so the writer does not copy them out of every pushed monitor's row.
pub(crate) const PUSH_COLUMNS: &str =
    "id, seq, '' AS workspace_id, '' AS name, type, status, NULL AS url, NULL AS host, \
     NULL AS port, interval_s, retries, timeout_s, '[]' AS tags, NULL AS description, config, \
     '[]' AS regions, region_strategy, quorum, confirmations_required, \
     recovery_confirmations_required, min_failure_duration_ms, consecutive_failures, \
     consecutive_successes, pending_failure_since, active, grace_s, last_push_at, \
     NULL AS dns_baseline, status_changed_at, last_check_at, started_at, NULL AS stale_since, \
     maintenance_until, maintenance_excluded, flap_transitions, flap_window_minutes, \
     flapping_since, version, created_at, updated_at";

fn string_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn to_u32(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

fn at(ms: Option<i64>) -> Option<DateTime<Utc>> {
    ms.map(from_ms)
}

impl MonitorRow {
    /// The monitor type; `None` only for a row this build does not know. For a filter (is this
    /// a push monitor?); a read that shows or changes the monitor takes [`MonitorRow::monitor_type`].
    pub fn kind(&self) -> Option<MonitorType> {
        MonitorType::parse(&self.kind_text)
    }

    /// The monitor type; a value no type spells is a (reported) corrupt row, never a guessed
    /// type.
    pub fn monitor_type(&self) -> Result<MonitorType, CorruptRow> {
        MonitorType::parse(&self.kind_text)
            .ok_or_else(|| CorruptRow::new("monitors", &self.id, "type", &self.kind_text))
    }

    /// The stored status; a value no status spells is a (reported) corrupt row, never a
    /// guessed status.
    pub fn status(&self) -> Result<Status, CorruptRow> {
        super::corrupt::parse("monitors", &self.id, "status", &self.status_text)
    }

    /// Whether a maintenance window holds the monitor at `at_ms`: `Some(excluded)` (whether
    /// its checks stay out of uptime figures) inside one, `None` outside.
    pub fn maintenance_at(&self, at_ms: i64) -> Option<bool> {
        self.maintenance_until
            .filter(|until| at_ms < *until)
            .map(|_| self.maintenance_excluded != 0)
    }

    /// False while paused.
    pub fn is_active(&self) -> bool {
        self.active != 0
    }

    pub fn tags(&self) -> Vec<String> {
        string_list(&self.tags)
    }

    pub fn regions(&self) -> Vec<String> {
        string_list(&self.regions)
    }

    /// The stored config (never contains `quorum`; see [`MonitorRow::quorum`]).
    pub fn config(&self) -> Map<String, Value> {
        serde_json::from_str(&self.config).unwrap_or_default()
    }

    /// How the monitor's regions share its cycles; a value no strategy spells is a (reported)
    /// corrupt row, never the default strategy.
    pub fn region_strategy(&self) -> Result<RegionStrategy, CorruptRow> {
        RegionStrategy::parse(&self.region_strategy).ok_or_else(|| {
            CorruptRow::new(
                "monitors",
                &self.id,
                "region_strategy",
                &self.region_strategy,
            )
        })
    }

    pub fn state_settings(&self) -> StateSettings {
        StateSettings {
            confirmations_required: to_u32(self.confirmations_required),
            recovery_confirmations_required: to_u32(self.recovery_confirmations_required),
            min_failure_duration_ms: u64::try_from(self.min_failure_duration_ms).unwrap_or(0),
        }
    }

    /// The fields the state machine owns, for [`tocsin_core::step`].
    pub fn monitor_state(&self) -> Result<MonitorState, CorruptRow> {
        Ok(MonitorState {
            status: self.status()?,
            consecutive_failures: to_u32(self.consecutive_failures),
            consecutive_successes: to_u32(self.consecutive_successes),
            pending_failure_since: at(self.pending_failure_since),
        })
    }

    /// DNS_DIFF: the accepted answer set, `None` until the first answer becomes the baseline.
    pub fn dns_baseline(&self) -> Option<Vec<String>> {
        self.dns_baseline.as_deref().map(string_list)
    }

    /// PUSH: when pushes are expected. A cron `config.schedule` (with optional
    /// `config.timezone`, default UTC) wins; otherwise one push every `interval_s` seconds.
    /// The grace period is `grace_s`. `None` for other types.
    pub fn push_schedule(&self) -> Option<PushSchedule> {
        if self.kind()? != MonitorType::Push {
            return None;
        }
        let grace = self
            .grace_s
            .unwrap_or(i64::from(tocsin_core::push::DEFAULT_GRACE_SECS));
        let config = self.config();
        let result = match config.get("schedule").and_then(Value::as_str) {
            Some(expr) => {
                let tz = config
                    .get("timezone")
                    .and_then(Value::as_str)
                    .unwrap_or("UTC");
                PushSchedule::cron(expr, tz, grace)
            }
            None => PushSchedule::interval(self.interval_s, grace),
        };
        result.ok()
    }

    /// The flap detection settings; `None` when off (or, for a row this build cannot read,
    /// out of range: detection is then off rather than guessed).
    pub fn flap_settings(&self) -> Option<tocsin_core::FlapSettings> {
        let t = u32::try_from(self.flap_transitions?).ok()?;
        let w = u32::try_from(self.flap_window_minutes?).ok()?;
        tocsin_core::FlapSettings::new(t, w).ok()
    }

    pub fn started_at(&self) -> DateTime<Utc> {
        from_ms(self.started_at)
    }

    pub fn last_push_at(&self) -> Option<DateTime<Utc>> {
        at(self.last_push_at)
    }
}

/// Allocates the next `seq` (call inside the creating transaction).
pub async fn next_seq<'e>(e: impl Exec<'e>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "UPDATE sequences SET value = value + 1 WHERE name = 'monitor_seq' RETURNING value",
    )
    .fetch_one(e)
    .await
}

/// Allocates `n` consecutive `seq` values at once and returns the first (bulk creation: one
/// statement instead of one per monitor). `n` must be at least 1.
pub async fn reserve_seqs<'e>(e: impl Exec<'e>, n: i64) -> Result<i64, sqlx::Error> {
    let last: i64 = sqlx::query_scalar(
        "UPDATE sequences SET value = value + $1 WHERE name = 'monitor_seq' RETURNING value",
    )
    .bind(n)
    .fetch_one(e)
    .await?;
    Ok(last - n + 1)
}

pub async fn insert<'e>(
    e: impl Exec<'e>,
    m: &MonitorRow,
    push_token_hash: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO monitors (id, seq, workspace_id, name, type, status, url, host, port, interval_s, \
         retries, timeout_s, tags, description, config, regions, region_strategy, quorum, \
         confirmations_required, recovery_confirmations_required, min_failure_duration_ms, \
         consecutive_failures, consecutive_successes, pending_failure_since, active, push_token_hash, \
         grace_s, last_push_at, dns_baseline, status_changed_at, last_check_at, started_at, version, \
         created_at, updated_at, flap_transitions, flap_window_minutes) VALUES ($1, $2, $3, $4, $5, \
         $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, \
         $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37)",
    )
    .bind(&m.id)
    .bind(m.seq)
    .bind(&m.workspace_id)
    .bind(&m.name)
    .bind(&m.kind_text)
    .bind(&m.status_text)
    .bind(&m.url)
    .bind(&m.host)
    .bind(m.port)
    .bind(m.interval_s)
    .bind(m.retries)
    .bind(m.timeout_s)
    .bind(&m.tags)
    .bind(&m.description)
    .bind(&m.config)
    .bind(&m.regions)
    .bind(&m.region_strategy)
    .bind(m.quorum)
    .bind(m.confirmations_required)
    .bind(m.recovery_confirmations_required)
    .bind(m.min_failure_duration_ms)
    .bind(m.consecutive_failures)
    .bind(m.consecutive_successes)
    .bind(m.pending_failure_since)
    .bind(m.active)
    .bind(push_token_hash)
    .bind(m.grace_s)
    .bind(m.last_push_at)
    .bind(&m.dns_baseline)
    .bind(m.status_changed_at)
    .bind(m.last_check_at)
    .bind(m.started_at)
    .bind(m.version)
    .bind(m.created_at)
    .bind(m.updated_at)
    .bind(m.flap_transitions)
    .bind(m.flap_window_minutes)
    .execute(e)
    .await
    .map(|_| ())
}

/// One monitor of one workspace.
pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<MonitorRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM monitors WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// One monitor by id, whatever its workspace: for the scheduler reloading a monitor named by
/// the change feed. Never use it on behalf of a caller.
pub async fn get_by_id<'e>(e: impl Exec<'e>, id: &str) -> Result<Option<MonitorRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM monitors WHERE id = $1");
    sqlx::query_as(&sql).bind(id).fetch_optional(e).await
}

/// [`COLUMNS`] for a scheduled run whose settings the scheduler already holds: the state the
/// run steps and what says whether it runs at all, with the settings' columns (name, config,
/// regions, ...) left empty, so each check does not copy them out of its row. Only good with
/// settings parsed from the same `version` (see [`get_for_run`]).
const RUN_COLUMNS: &str =
    "id, seq, '' AS workspace_id, '' AS name, type, status, NULL AS url, NULL AS host, \
     NULL AS port, interval_s, retries, timeout_s, '[]' AS tags, NULL AS description, \
     '{}' AS config, '[]' AS regions, region_strategy, quorum, confirmations_required, \
     recovery_confirmations_required, min_failure_duration_ms, consecutive_failures, \
     consecutive_successes, pending_failure_since, active, grace_s, last_push_at, dns_baseline, \
     status_changed_at, last_check_at, started_at, stale_since, maintenance_until, \
     maintenance_excluded, flap_transitions, flap_window_minutes, flapping_since, version, \
     created_at, updated_at";

/// A monitor's row just before a scheduled check of it, for a run holding settings parsed
/// from version `held` of the row: the state alone when the row is still at that version, the
/// whole row when it moved on (or nothing is held). Runs starting together read their states
/// in one statement ([`super::group_read`]), through the read lane when a lane connection is
/// free, else through the read pool (see [`super::lane`]).
pub async fn get_for_run(
    db: &super::Db,
    id: &str,
    held: Option<i64>,
) -> Result<Option<MonitorRow>, sqlx::Error> {
    let row = db.run_rows().get(id, |ids| states_for_run(db, ids)).await?;
    match row {
        Some(r) if Some(r.version) != held => get_by_id(db.reader(), id).await,
        other => Ok(other),
    }
}

/// The [`RUN_COLUMNS`] of the monitors `ids`, with their ids.
async fn states_for_run(
    db: &super::Db,
    ids: Vec<String>,
) -> Result<Vec<(String, MonitorRow)>, sqlx::Error> {
    // The list is padded to a power of two with its last id, so a connection prepares a
    // handful of statements rather than one per group size.
    let width = ids.len().max(1).next_power_of_two();
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM monitors WHERE id IN ({})",
        super::in_list(1, width)
    );
    let mut q = sqlx::query_as::<_, MonitorRow>(&sql);
    for i in 0..width {
        q = q.bind(ids.get(i).or(ids.last()).map_or("", String::as_str));
    }
    let rows = match db.lane().lease().await {
        Some(mut lease) => {
            let rows = q.fetch_all(lease.conn()).await?;
            lease.done();
            rows
        }
        None => q.fetch_all(db.reader()).await?,
    };
    Ok(rows.into_iter().map(|r| (r.id.clone(), r)).collect())
}

/// Filters of a monitor listing; every one optional, all combined with AND.
#[derive(Debug, Clone, Default)]
pub struct MonitorFilter {
    pub status: Option<Status>,
    pub kind: Option<MonitorType>,
    /// Monitors carrying this tag (ASCII-case-insensitive).
    pub tag: Option<String>,
    pub project_id: Option<String>,
    /// Case-insensitive (ASCII) substring of the name.
    pub search: Option<String>,
}

/// Escapes `%`, `_` and the escape character itself for `LIKE ... ESCAPE '!'`.
fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '!' | '%' | '_') {
            out.push('!');
        }
        out.push(c);
    }
    out
}

/// The `AND ...` clauses of `filter` and their values, in order. The first value takes the
/// placeholder `$first`; the caller binds the values after its own leading ones.
pub(crate) fn filter_sql(filter: &MonitorFilter, first: usize) -> (String, Vec<String>) {
    let mut sql = String::new();
    let mut binds: Vec<String> = Vec::new();
    let mut next = |sql: &mut String, clause: &str, value: String| {
        sql.push_str(&clause.replace("$?", &format!("${}", first + binds.len())));
        binds.push(value);
    };
    if let Some(s) = filter.status {
        next(&mut sql, " AND status = $?", super::status::text(s).into());
    }
    if let Some(k) = filter.kind {
        next(&mut sql, " AND type = $?", k.as_str().into());
    }
    if let Some(tag) = &filter.tag {
        // Tags are a JSON array of strings: look for the JSON-encoded tag, quotes included,
        // so "prod" does not match "production".
        let encoded = serde_json::to_string(tag).unwrap_or_default();
        next(
            &mut sql,
            " AND LOWER(tags) LIKE $? ESCAPE '!'",
            format!("%{}%", like_escape(&encoded.to_ascii_lowercase())),
        );
    }
    if let Some(p) = &filter.project_id {
        next(
            &mut sql,
            " AND EXISTS (SELECT 1 FROM project_monitors pm WHERE pm.monitor_id = m.id AND pm.project_id = $?)",
            p.clone(),
        );
    }
    if let Some(q) = &filter.search {
        next(
            &mut sql,
            " AND LOWER(name) LIKE $? ESCAPE '!'",
            format!("%{}%", like_escape(&q.to_ascii_lowercase())),
        );
    }
    (sql, binds)
}

/// Monitors of a workspace in id (creation) order, after `after` ("" for the first page),
/// at most `limit`. Keyset paging on the id keeps pages stable under inserts.
pub async fn list_page<'e>(
    e: impl Exec<'e>,
    ws: &str,
    filter: &MonitorFilter,
    after: &str,
    limit: i64,
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    let (clauses, binds) = filter_sql(filter, 3);
    let sql = format!(
        "SELECT {COLUMNS} FROM monitors m WHERE workspace_id = $1 AND id > $2{clauses} \
         ORDER BY id LIMIT ${}",
        binds.len() + 3
    );
    let mut q = sqlx::query_as(&sql).bind(ws).bind(after);
    for b in binds {
        q = q.bind(b);
    }
    q.bind(limit).fetch_all(e).await
}

/// How many monitors a workspace has (paused ones included: they count against the plan).
pub async fn count<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM monitors WHERE workspace_id = $1")
        .bind(ws)
        .fetch_one(e)
        .await
}

/// Monitor counts of a workspace by `(status, active)`.
pub async fn count_by_status<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<Vec<(String, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT status, active, COUNT(*) FROM monitors WHERE workspace_id = $1 GROUP BY status, active",
    )
    .bind(ws)
    .fetch_all(e)
    .await
}

/// Writes the user-editable settings, bumping `version` (checked against `expected` when
/// given). State columns are left alone, except `dns_baseline` which the caller may clear
/// when a DNS_DIFF monitor's query changed (`clear_baseline`). Returns rows affected.
pub async fn update_settings<'e>(
    e: impl Exec<'e>,
    m: &MonitorRow,
    clear_baseline: bool,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    let mut set = String::from(
        "name = $1, url = $2, host = $3, port = $4, interval_s = $5, retries = $6, \
         timeout_s = $7, tags = $8, description = $9, config = $10, regions = $11, region_strategy = $12, \
         quorum = $13, confirmations_required = $14, recovery_confirmations_required = $15, \
         min_failure_duration_ms = $16, grace_s = $17, updated_at = $18, \
         flap_transitions = $19, flap_window_minutes = $20",
    );
    if clear_baseline {
        set.push_str(", dns_baseline = NULL");
    }
    let write = Versioned::update(
        "monitors",
        &set,
        "workspace_id = $21 AND id = $22",
        expected,
    );
    write
        .run(e, |q| {
            q.bind(&m.name)
                .bind(&m.url)
                .bind(&m.host)
                .bind(m.port)
                .bind(m.interval_s)
                .bind(m.retries)
                .bind(m.timeout_s)
                .bind(&m.tags)
                .bind(&m.description)
                .bind(&m.config)
                .bind(&m.regions)
                .bind(&m.region_strategy)
                .bind(m.quorum)
                .bind(m.confirmations_required)
                .bind(m.recovery_confirmations_required)
                .bind(m.min_failure_duration_ms)
                .bind(m.grace_s)
                .bind(m.updated_at)
                .bind(m.flap_transitions)
                .bind(m.flap_window_minutes)
                .bind(&m.workspace_id)
                .bind(&m.id)
        })
        .await
}

/// Pauses a monitor (a user edit: bumps `version`). Its state is kept as it was.
pub async fn pause<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "monitors",
        "active = 0, updated_at = $1",
        "workspace_id = $2 AND id = $3",
        expected,
    )
    .run(e, |q| q.bind(now).bind(ws).bind(id))
    .await
}

/// Resumes a monitor: active again, and `started_at = now` so schedules and push deadlines
/// start afresh. The state it starts in ([`tocsin_core::resume`]) is written in the same
/// transaction by `monitoring::transition`.
pub async fn resume<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "monitors",
        "active = 1, started_at = $1, updated_at = $1",
        "workspace_id = $2 AND id = $3",
        expected,
    )
    .run(e, |q| q.bind(now).bind(ws).bind(id))
    .await
}

/// Replaces a PUSH monitor's token hash (the old token stops working with this commit).
pub async fn set_push_token_hash<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    hash: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "monitors",
        "push_token_hash = $1, updated_at = $2",
        "workspace_id = $3 AND id = $4 AND type = 'PUSH'",
        expected,
    )
    .run(e, |q| q.bind(hash).bind(now).bind(ws).bind(id))
    .await
}

/// A person accepted a DNS_DIFF monitor's new answers: the baseline is cleared (the next
/// answer becomes the new one). A user action, so `version` is bumped. The status change that
/// goes with it (see [`tocsin_core::accept_baseline`]) is written in the same transaction by
/// `monitoring::transition`.
pub async fn accept_baseline<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "monitors",
        "dns_baseline = NULL, updated_at = $1",
        "workspace_id = $2 AND id = $3",
        expected,
    )
    .run(e, |q| q.bind(now).bind(ws).bind(id))
    .await
}

/// Deletes a monitor (memberships go with it), checking `version` when `expected` is given.
/// Returns rows affected.
pub async fn delete<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::delete("monitors", "workspace_id = $1 AND id = $2", expected)
        .run(e, |q| q.bind(ws).bind(id))
        .await
}

/// Every active monitor the check engine runs (all types but PUSH), across workspaces, in id
/// order: what the scheduler loads at start and on a full rescan.
pub async fn list_active_for_scheduling<'e>(
    e: impl Exec<'e>,
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    list_scheduled_in(e, None).await
}

/// [`list_active_for_scheduling`] of the monitors in `partitions` only (`None`: all).
pub async fn list_scheduled_in<'e>(
    e: impl Exec<'e>,
    partitions: Option<&[usize]>,
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM monitors WHERE active = 1 AND type <> 'PUSH'{} ORDER BY id",
        super::in_partitions(partitions)
    );
    sqlx::query_as(&sql).fetch_all(e).await
}

/// How many active monitors each partition holds, as (partition, count) for the partitions
/// that hold any: what the nodes balance their shares by.
pub async fn counts_by_partition<'e>(e: impl Exec<'e>) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    let sql = format!(
        "SELECT seq % {n}, COUNT(*) FROM monitors WHERE active = 1 GROUP BY seq % {n}",
        n = tocsin_core::partition::COUNT
    );
    sqlx::query_as(&sql).fetch_all(e).await
}

/// The ids of every monitor (paused ones too) whose stored status is `status`.
pub async fn ids_with_status<'e>(
    e: impl Exec<'e>,
    status: Status,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM monitors WHERE status = $1 ORDER BY id")
        .bind(super::status::text(status))
        .fetch_all(e)
        .await
}

/// Every active PUSH monitor, across workspaces, in id order: what the deadline watcher needs.
pub async fn list_active_push<'e>(e: impl Exec<'e>) -> Result<Vec<MonitorRow>, sqlx::Error> {
    list_push_in(e, None).await
}

/// [`list_active_push`] of the monitors in `partitions` only (`None`: all).
pub async fn list_push_in<'e>(
    e: impl Exec<'e>,
    partitions: Option<&[usize]>,
) -> Result<Vec<MonitorRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM monitors WHERE active = 1 AND type = 'PUSH'{} ORDER BY id",
        super::in_partitions(partitions)
    );
    sqlx::query_as(&sql).fetch_all(e).await
}

/// The PUSH monitor whose token hashes to `hash` (paused ones included: the caller decides
/// what a push to a paused monitor means).
pub async fn get_by_push_token_hash<'e>(
    e: impl Exec<'e>,
    hash: &str,
) -> Result<Option<MonitorRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM monitors WHERE push_token_hash = $1");
    sqlx::query_as(&sql).bind(hash).fetch_optional(e).await
}

/// The state columns a check cycle (or a push) produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateUpdate {
    pub status: Status,
    pub consecutive_failures: i64,
    pub consecutive_successes: i64,
    pub pending_failure_since: Option<i64>,
    /// When `status` last changed (pass the old value when it did not).
    pub status_changed_at: i64,
    pub last_check_at: Option<i64>,
}

impl StateUpdate {
    /// The update for a state-machine result.
    pub fn from_state(
        s: &MonitorState,
        status_changed_at: i64,
        last_check_at: Option<i64>,
    ) -> Self {
        StateUpdate {
            status: s.status,
            consecutive_failures: i64::from(s.consecutive_failures),
            consecutive_successes: i64::from(s.consecutive_successes),
            pending_failure_since: s.pending_failure_since.map(|t| t.timestamp_millis()),
            status_changed_at,
            last_check_at,
        }
    }
}

/// Writes a monitor's state after a cycle. Does not bump `version` (see the module docs) and
/// applies only while the monitor is active: a result that lands after a pause is dropped
/// (0 rows). Returns rows affected.
pub async fn update_state<'e>(
    e: impl Exec<'e>,
    id: &str,
    u: &StateUpdate,
) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE monitors SET status = $1, consecutive_failures = $2, consecutive_successes = $3, \
         pending_failure_since = $4, status_changed_at = $5, last_check_at = $6 \
         WHERE id = $7 AND active = 1",
    )
    .bind(super::status::text(u.status))
    .bind(u.consecutive_failures)
    .bind(u.consecutive_successes)
    .bind(u.pending_failure_since)
    .bind(u.status_changed_at)
    .bind(u.last_check_at)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// One row of [`write_states`]: a monitor's new state columns, by `seq`.
#[derive(Debug, Clone, Copy)]
pub struct StateWrite<'a> {
    pub seq: i64,
    pub update: &'a StateUpdate,
    /// PUSH: the last push, written with the state when [`write_states`] is asked to.
    pub last_push_at: Option<i64>,
    /// Whether the write applies to a paused monitor too: a person's action (accepting a
    /// baseline) does; a check or push result does not, as it belongs to nobody once the
    /// monitor is paused or deleted.
    pub even_paused: bool,
}

/// The one batch state `UPDATE`: writes many monitors' state columns in one statement (see
/// [`super::batch`]), `last_push_at` too when `with_last_push` (push recording). Does not bump
/// `version`. Returns the seqs written. Used by the heartbeat writer ([`update_states`]) and by
/// every status change (`monitoring::transition`).
pub async fn write_states(
    tx: &mut super::Tx,
    rows: &[StateWrite<'_>],
    with_last_push: bool,
) -> Result<std::collections::HashSet<i64>, sqlx::Error> {
    use super::batch::{self, Col};
    if rows.is_empty() {
        return Ok(std::collections::HashSet::new());
    }
    const COLS: [Col; 9] = [
        batch::int("mseq"),
        batch::text("status"),
        batch::int("failures"),
        batch::int("successes"),
        batch::int("pending_since"),
        batch::int("changed_at"),
        batch::int("checked_at"),
        batch::int("pushed_at"),
        batch::int("even_paused"),
    ];
    // `mseq`, not `seq`: RETURNING must name the updated table's column unambiguously.
    let sql = format!(
        "WITH v AS ({}) \
         UPDATE monitors SET status = v.status, consecutive_failures = v.failures, \
         consecutive_successes = v.successes, pending_failure_since = v.pending_since, \
         status_changed_at = v.changed_at, last_check_at = v.checked_at{} \
         FROM v WHERE monitors.seq = v.mseq AND (monitors.active = 1 OR v.even_paused = 1) \
         RETURNING seq",
        batch::select_rows(super::backend_of(tx), &COLS, 1),
        if with_last_push {
            ", last_push_at = v.pushed_at"
        } else {
            ""
        },
    );
    let json = batch::encode(
        &rows
            .iter()
            .map(|r| {
                let u = r.update;
                (
                    r.seq,
                    super::status::text(u.status),
                    u.consecutive_failures,
                    u.consecutive_successes,
                    u.pending_failure_since,
                    u.status_changed_at,
                    u.last_check_at,
                    r.last_push_at,
                    i64::from(r.even_paused),
                )
            })
            .collect::<Vec<_>>(),
    )?;
    sqlx::query_scalar(&sql)
        .bind(json)
        .fetch_all(&mut **tx)
        .await
        .map(|seqs: Vec<i64>| seqs.into_iter().collect())
}

/// [`update_state`] for many active monitors by `seq`, in one statement (the heartbeat
/// writer's batch: counters that moved without a status change). Returns the seqs written.
pub async fn update_states(
    tx: &mut super::Tx,
    rows: &[(i64, &StateUpdate)],
) -> Result<std::collections::HashSet<i64>, sqlx::Error> {
    let rows: Vec<StateWrite<'_>> = rows
        .iter()
        .map(|(seq, update)| StateWrite {
            seq: *seq,
            update,
            last_push_at: None,
            even_paused: false,
        })
        .collect();
    write_states(tx, &rows, false).await
}

/// DNS_DIFF: stores the accepted answer set (`None` clears it). No `version` bump.
pub async fn set_dns_baseline<'e>(
    e: impl Exec<'e>,
    id: &str,
    baseline: Option<&[String]>,
) -> Result<u64, sqlx::Error> {
    let text = baseline.map(|b| serde_json::to_string(b).unwrap_or_else(|_| "[]".into()));
    Ok(
        sqlx::query("UPDATE monitors SET dns_baseline = $1 WHERE id = $2")
            .bind(text)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

/// PUSH: records when the last push arrived (never moves backwards). No `version` bump.
pub async fn set_last_push_at<'e>(e: impl Exec<'e>, id: &str, at: i64) -> Result<u64, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE monitors SET last_push_at = $1 WHERE id = $2 AND (last_push_at IS NULL OR last_push_at < $1)",
    )
    .bind(at)
    .bind(id)
    .execute(e)
    .await?
    .rows_affected())
}

/// Sets (`Some`) or clears (`None`) an active monitor's `stale_since`, only when it changes
/// that way; returns the monitor's stored status when it did.
pub async fn set_stale_since<'e>(
    e: impl Exec<'e>,
    id: &str,
    since: Option<i64>,
) -> Result<Option<String>, sqlx::Error> {
    let sql = if since.is_some() {
        "UPDATE monitors SET stale_since = $1 WHERE id = $2 AND active = 1 \
         AND stale_since IS NULL RETURNING status"
    } else {
        "UPDATE monitors SET stale_since = $1 WHERE id = $2 AND stale_since IS NOT NULL \
         RETURNING status"
    };
    sqlx::query_scalar(sql)
        .bind(since)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// What staleness is judged by: an active checked monitor's silence, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Overdue {
    pub id: String,
    pub interval_s: i64,
    pub last_check_at: Option<i64>,
    pub started_at: i64,
    /// JSON array of region names.
    pub regions: String,
    pub stale_since: Option<i64>,
}

/// Every active non-PUSH monitor not marked stale.
pub async fn unmarked_checked_ids<'e>(e: impl Exec<'e>) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM monitors WHERE active = 1 AND type <> 'PUSH' AND stale_since IS NULL \
         ORDER BY id",
    )
    .fetch_all(e)
    .await
}

/// The rows of those of `ids` that are active non-PUSH monitors: the candidates the scheduler
/// found silent in memory, judged by what is stored.
pub async fn overdue_rows<'e>(
    e: impl Exec<'e>,
    ids: &[String],
) -> Result<Vec<Overdue>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, interval_s, last_check_at, started_at, regions, stale_since FROM monitors \
         WHERE active = 1 AND type <> 'PUSH' AND id IN ({}) ORDER BY id",
        super::in_list(1, ids.len())
    );
    let mut q = sqlx::query_as(&sql);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

/// How many active monitors are stale now.
pub async fn count_stale<'e>(e: impl Exec<'e>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM monitors WHERE active = 1 AND stale_since IS NOT NULL")
        .fetch_one(e)
        .await
}

/// What `/metrics` labels an active monitor with, and its status.
#[derive(Debug, Clone, FromRow)]
pub struct MetricLabels {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    #[sqlx(rename = "type")]
    pub kind_text: String,
    #[sqlx(rename = "status")]
    pub status_text: String,
}

/// Every active monitor of every workspace, for `/metrics`.
pub async fn list_for_metrics<'e>(e: impl Exec<'e>) -> Result<Vec<MetricLabels>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, workspace_id, name, type, status FROM monitors WHERE active = 1 ORDER BY id",
    )
    .fetch_all(e)
    .await
}
