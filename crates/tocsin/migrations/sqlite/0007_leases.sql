-- Named leases held by one node of a cluster at a time (see src/cluster/lease.rs). Only
-- PostgreSQL deployments contend for them; on SQLite (one node) the table stays empty.
CREATE TABLE leases (
    -- What the lease is for, e.g. `scheduler`.
    name TEXT PRIMARY KEY,
    -- The holding node's id (a UUIDv7 drawn at process start).
    holder TEXT NOT NULL,
    -- Bumped whenever the lease changes hands.
    term BIGINT NOT NULL,
    -- Milliseconds since the epoch, by the database's clock: past it, anyone may take over.
    expires_at BIGINT NOT NULL
);
