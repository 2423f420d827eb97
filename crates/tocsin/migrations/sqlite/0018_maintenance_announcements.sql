-- Which schedules of maintenance windows the subscribers of the status pages showing their
-- monitors were told of (src/alerting/maintenance_notice.rs): one row per window and schedule
-- key (monitor, first start, end, zone, recurrence), written in the transaction that queues
-- the emails. The key is the durable marker: whichever node, worker or window write gets
-- there first announces, the others find the row and send nothing.
CREATE TABLE maintenance_announcements (
    window_id TEXT NOT NULL REFERENCES maintenance_windows(id) ON DELETE CASCADE,
    schedule_key TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- The occurrence announced (its start), for the record.
    occurrence_start INTEGER NOT NULL,
    announced_at INTEGER NOT NULL,
    PRIMARY KEY (window_id, schedule_key)
);
