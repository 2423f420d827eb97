-- Maintenance windows (see src/domain/maintenance.rs and src/monitoring/maintenance.rs).

CREATE TABLE maintenance_windows (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT,
    starts_at INTEGER NOT NULL,
    ends_at INTEGER NOT NULL,
    -- IANA name.
    timezone TEXT NOT NULL,
    -- NULL for a one-off window; daily, weekly, monthly or cron.
    frequency TEXT,
    day_of_week INTEGER,
    day_of_month INTEGER,
    expression TEXT,
    exclude_from_uptime INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX maintenance_windows_workspace ON maintenance_windows (workspace_id, id);
CREATE INDEX maintenance_windows_monitor ON maintenance_windows (monitor_id);

-- The window a monitor is in, as the scheduling node last applied it: until when (ms; NULL
-- when in none) and whether its checks stay out of uptime figures. Checks and pushes read it
-- with the monitor row, so no lookup is added to their path.
ALTER TABLE monitors ADD COLUMN maintenance_until INTEGER;
ALTER TABLE monitors ADD COLUMN maintenance_excluded INTEGER NOT NULL DEFAULT 0;
