-- Monitors and projects. `seq` is a compact integer key used by high-volume tables
-- (heartbeats, rollups) instead of the 36-character id.
CREATE TABLE monitors (
    id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    url TEXT,
    host TEXT,
    port BIGINT,
    interval_s BIGINT NOT NULL,
    retries BIGINT NOT NULL,
    timeout_s BIGINT NOT NULL,
    tags TEXT NOT NULL,
    description TEXT,
    config TEXT NOT NULL,
    regions TEXT NOT NULL,
    region_strategy TEXT NOT NULL,
    quorum BIGINT,
    confirmations_required BIGINT NOT NULL,
    recovery_confirmations_required BIGINT NOT NULL,
    min_failure_duration_ms BIGINT NOT NULL,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    consecutive_successes BIGINT NOT NULL DEFAULT 0,
    pending_failure_since BIGINT,
    active BIGINT NOT NULL DEFAULT 1,
    push_token_hash TEXT UNIQUE,
    grace_s BIGINT,
    last_push_at BIGINT,
    dns_baseline TEXT,
    status_changed_at BIGINT NOT NULL,
    last_check_at BIGINT,
    -- When the monitor was created or last resumed: schedules and push deadlines start here.
    started_at BIGINT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX monitors_workspace ON monitors (workspace_id, id);
CREATE INDEX monitors_workspace_name ON monitors (workspace_id, name, id);

CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    position BIGINT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX projects_workspace ON projects (workspace_id, position);

CREATE TABLE project_monitors (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    PRIMARY KEY (project_id, monitor_id)
);
CREATE INDEX project_monitors_monitor ON project_monitors (monitor_id);

-- Allocates monitor `seq` values portably (no AUTOINCREMENT/SERIAL difference to care about).
CREATE TABLE sequences (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('monitor_seq', 0);
