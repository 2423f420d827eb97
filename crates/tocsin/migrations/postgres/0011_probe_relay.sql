-- Remote probes may connect to any node of a cluster sharing one PostgreSQL database (see
-- src/probes/relay.rs). On SQLite there is one node and these tables stay empty.

-- Which node holds live probe connections of which region, refreshed every few seconds: the
-- node running the scheduler reads it to find a region's probes on other nodes. A row not
-- refreshed for a while belongs to a node that died.
CREATE TABLE probe_presence (
    node_id TEXT NOT NULL,
    region TEXT NOT NULL,
    -- JSON array of the connected probes' names.
    probe_names TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (node_id, region)
);

-- A check the scheduling node hands to the node holding a probe of its region, and the
-- probe's answer coming back. Deleted once answered or given up.
CREATE TABLE probe_relay_jobs (
    id TEXT PRIMARY KEY,
    from_node TEXT NOT NULL,
    to_node TEXT NOT NULL,
    region TEXT NOT NULL,
    -- The job as the probe protocol sends it (JSON).
    job TEXT NOT NULL,
    -- The probe's outcome (JSON), or NULL until it answers; the JSON null when it could not.
    result TEXT,
    deadline_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX probe_relay_jobs_deadline ON probe_relay_jobs (deadline_at);
