-- Probe keys: one row per remote probe credential (see src/store/probes.rs). The key itself is
-- never stored, only its SHA-256. A region is known to the API when it is `local` or has at
-- least one unrevoked key here; the `regions` table of 0003 only maps region names to compact
-- ids for heartbeat storage and is not a registry.
CREATE TABLE probe_keys (
    -- UUIDv7.
    id TEXT PRIMARY KEY,
    -- Lowercase letters, digits and '-', 1 to 63 characters; never `local`.
    region TEXT NOT NULL,
    name TEXT NOT NULL,
    -- Lowercase hex SHA-256 of the `prb_...` key.
    key_hash TEXT NOT NULL UNIQUE,
    -- Milliseconds since the epoch.
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    -- When a probe holding this key last connected or answered a ping.
    last_seen_at BIGINT
);

CREATE INDEX probe_keys_live_region ON probe_keys (region) WHERE revoked_at IS NULL;
