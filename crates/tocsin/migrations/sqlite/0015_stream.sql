-- The live stream (`GET /stream`): each node with open streams reads what changed since its
-- last look, and a resuming stream replays its workspace's events after its cursor.
CREATE INDEX monitor_events_workspace_id ON monitor_events (workspace_id, id);
CREATE INDEX alerts_updated ON alerts (updated_at);
CREATE INDEX incidents_updated ON incidents (updated_at);
