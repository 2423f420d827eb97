-- Monitor events: one durable row per status change (see src/store/events.rs). Written in the
-- same transaction as the monitor's state update, so a status and its event are never apart.

-- The last event seq handed out per monitor. Allocating through the monitor row (an UPDATE
-- ... RETURNING) serializes concurrent writers for one monitor, so seqs never collide.
ALTER TABLE monitors ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;

CREATE TABLE monitor_events (
    -- UUIDv7.
    id TEXT PRIMARY KEY,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    -- 1, 2, 3 ... per monitor: the order of the changes.
    seq INTEGER NOT NULL,
    -- down, up, degraded, changed, certificate_expiring, maintenance, pending.
    kind TEXT NOT NULL,
    from_status TEXT NOT NULL,
    to_status TEXT NOT NULL,
    message TEXT,
    -- 1 when notification channels should hear of it.
    alert INTEGER NOT NULL,
    -- Milliseconds since the epoch.
    created_at INTEGER NOT NULL,
    UNIQUE (monitor_id, seq)
);
