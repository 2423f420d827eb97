-- Monitors and projects. `seq` is a compact integer key used by high-volume tables
-- (heartbeats, rollups) instead of the 36-character id.
CREATE TABLE monitors (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    url TEXT,
    host TEXT,
    port INTEGER,
    interval_s INTEGER NOT NULL,
    retries INTEGER NOT NULL,
    timeout_s INTEGER NOT NULL,
    tags TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    regions TEXT NOT NULL,
    region_strategy TEXT NOT NULL,
    quorum INTEGER,
    confirmations_required INTEGER NOT NULL,
    recovery_confirmations_required INTEGER NOT NULL,
    min_failure_duration_ms INTEGER NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    consecutive_successes INTEGER NOT NULL DEFAULT 0,
    pending_failure_since INTEGER,
    active INTEGER NOT NULL DEFAULT 1,
    push_token_hash TEXT UNIQUE,
    grace_s INTEGER,
    last_push_at INTEGER,
    dns_baseline TEXT,
    status_changed_at INTEGER NOT NULL,
    last_check_at INTEGER,
    -- When the monitor was created or last resumed: schedules and push deadlines start here.
    started_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX monitors_workspace ON monitors (workspace_id, id);
CREATE INDEX monitors_workspace_name ON monitors (workspace_id, name, id);

CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    position INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX projects_workspace ON projects (workspace_id, position);

CREATE TABLE project_monitors (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (project_id, monitor_id)
);
CREATE INDEX project_monitors_monitor ON project_monitors (monitor_id);

-- Allocates monitor `seq` values portably (no AUTOINCREMENT/SERIAL difference to care about).
CREATE TABLE sequences (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('monitor_seq', 0);
