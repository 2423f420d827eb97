-- Push ingestion: the Idempotency-Key of each recorded push, so a retry carrying the same key
-- for the same monitor collapses into the heartbeat the first attempt stored. Rows are written
-- in the same transaction as that heartbeat and pruned once older than the window (24 hours,
-- see src/push/mod.rs); a key older than the window counts as new again.
CREATE TABLE push_idempotency (
    monitor_seq BIGINT NOT NULL,
    key TEXT NOT NULL,
    -- Milliseconds since the epoch: when the first push with this key was recorded.
    created_at BIGINT NOT NULL,
    PRIMARY KEY (monitor_seq, key)
);

CREATE INDEX push_idempotency_created ON push_idempotency (created_at);
