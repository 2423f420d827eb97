-- Maintenance windows (see src/domain/maintenance.rs and src/monitoring/maintenance.rs).

CREATE TABLE maintenance_windows (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT,
    starts_at BIGINT NOT NULL,
    ends_at BIGINT NOT NULL,
    -- IANA name.
    timezone TEXT NOT NULL,
    -- NULL for a one-off window; daily, weekly, monthly or cron.
    frequency TEXT,
    day_of_week BIGINT,
    day_of_month BIGINT,
    expression TEXT,
    exclude_from_uptime BIGINT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX maintenance_windows_workspace ON maintenance_windows (workspace_id, id);
CREATE INDEX maintenance_windows_monitor ON maintenance_windows (monitor_id);

-- The window a monitor is in, as the scheduling node last applied it: until when (ms; NULL
-- when in none) and whether its checks stay out of uptime figures. Checks and pushes read it
-- with the monitor row, so no lookup is added to their path.
ALTER TABLE monitors ADD COLUMN maintenance_until BIGINT;
ALTER TABLE monitors ADD COLUMN maintenance_excluded BIGINT NOT NULL DEFAULT 0;
