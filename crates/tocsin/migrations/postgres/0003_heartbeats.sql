-- Heartbeat storage, built for volume (see src/monitoring/heartbeats.rs for the full design).
-- Same tables as on SQLite; narrow integer types keep tuples small, and columns are ordered
-- widest first so alignment wastes nothing.

CREATE TABLE regions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE heartbeats (
    -- Milliseconds since the epoch.
    ts BIGINT NOT NULL,
    monitor_seq INTEGER NOT NULL,
    -- Tenths of a millisecond.
    latency INTEGER NOT NULL,
    region_id SMALLINT NOT NULL,
    -- 0 UP, 1 DOWN, 2 DEGRADED, 3 CHANGED, 4 MAINTENANCE, 5 PENDING.
    status SMALLINT NOT NULL,
    status_code SMALLINT,
    retry_count SMALLINT NOT NULL,
    -- Varints of dns, tcp, tls + 1 (0 = none), first byte, transfer, in 0.1 ms units.
    timings BYTEA,
    correlation_id TEXT,
    PRIMARY KEY (monitor_seq, ts, region_id)
);

CREATE INDEX heartbeats_correlation ON heartbeats (correlation_id)
    WHERE correlation_id IS NOT NULL;

CREATE TABLE heartbeat_details (
    ts BIGINT NOT NULL,
    monitor_seq INTEGER NOT NULL,
    region_id SMALLINT NOT NULL,
    message TEXT,
    response_headers TEXT,
    response_body TEXT,
    resolved_ip TEXT,
    assertion_results TEXT,
    PRIMARY KEY (monitor_seq, ts, region_id)
);

CREATE TABLE heartbeat_hourly (
    bucket_start BIGINT NOT NULL,
    latency_sum BIGINT NOT NULL,
    monitor_seq INTEGER NOT NULL,
    total INTEGER NOT NULL,
    up INTEGER NOT NULL,
    down INTEGER NOT NULL,
    degraded INTEGER NOT NULL,
    latency_min INTEGER,
    latency_max INTEGER,
    PRIMARY KEY (monitor_seq, bucket_start)
);

CREATE TABLE heartbeat_hourly_bins (
    bucket_start BIGINT NOT NULL,
    monitor_seq INTEGER NOT NULL,
    bin SMALLINT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (monitor_seq, bucket_start, bin)
);
