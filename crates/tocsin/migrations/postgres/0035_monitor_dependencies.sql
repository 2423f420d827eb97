-- Monitor dependencies (see src/alerting/root_cause.rs): a monitor's `dependsOn`, in the order
-- given. Deleting either monitor removes the edge, so a dependent of a deleted monitor simply
-- stops depending on it.
CREATE TABLE monitor_dependencies (
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    depends_on_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    PRIMARY KEY (monitor_id, depends_on_id)
);
-- The walk from a root down to its dependents.
CREATE INDEX monitor_dependencies_up ON monitor_dependencies (depends_on_id);

-- The alert of a dependency that was DOWN when this one opened: it sends nothing and does not
-- escalate; NULL for a root (every alert before this migration is one).
ALTER TABLE alerts ADD COLUMN root_cause_alert_id TEXT REFERENCES alerts(id) ON DELETE SET NULL;
CREATE INDEX alerts_root_cause ON alerts (root_cause_alert_id) WHERE root_cause_alert_id IS NOT NULL;
