-- Heartbeat storage, built for volume (see src/monitoring/heartbeats.rs for the full design).
--
-- Every check result is one row of `heartbeats`: a WITHOUT ROWID table clustered on its key, so
-- a row costs the key once and a monitor's history is contiguous on disk. Columns are small
-- integers (SQLite stores 0 and 1 in zero bytes): status codes, latency in 0.1 ms units,
-- phase timings packed into one short varint blob. The heavy parts of a result (message,
-- headers, body, resolved IP, assertion results) live in `heartbeat_details`, written only for
-- results that are not plain UP ones.

-- Region names to compact ids.
CREATE TABLE regions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE heartbeats (
    monitor_seq INTEGER NOT NULL,
    -- Milliseconds since the epoch.
    ts INTEGER NOT NULL,
    region_id INTEGER NOT NULL,
    -- 0 UP, 1 DOWN, 2 DEGRADED, 3 CHANGED, 4 MAINTENANCE, 5 PENDING.
    status INTEGER NOT NULL,
    -- Tenths of a millisecond.
    latency INTEGER NOT NULL,
    status_code INTEGER,
    -- Varints of dns, tcp, tls + 1 (0 = none), first byte, transfer, in 0.1 ms units.
    timings BLOB,
    retry_count INTEGER NOT NULL,
    -- Set by on-demand checks, so their caller can find the result.
    correlation_id TEXT,
    PRIMARY KEY (monitor_seq, ts, region_id)
) WITHOUT ROWID;

CREATE INDEX heartbeats_correlation ON heartbeats (correlation_id)
    WHERE correlation_id IS NOT NULL;

-- The heavy parts of non-UP results, keyed like the heartbeat they belong to.
CREATE TABLE heartbeat_details (
    monitor_seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    region_id INTEGER NOT NULL,
    message TEXT,
    response_headers TEXT,
    response_body TEXT,
    resolved_ip TEXT,
    assertion_results TEXT,
    PRIMARY KEY (monitor_seq, ts, region_id)
);

-- One row per monitor and UTC hour, over every region. Latency figures cover the checks that
-- got an answer (status other than DOWN), in 0.1 ms units.
CREATE TABLE heartbeat_hourly (
    monitor_seq INTEGER NOT NULL,
    bucket_start INTEGER NOT NULL,
    total INTEGER NOT NULL,
    up INTEGER NOT NULL,
    down INTEGER NOT NULL,
    degraded INTEGER NOT NULL,
    latency_sum INTEGER NOT NULL,
    latency_min INTEGER,
    latency_max INTEGER,
    PRIMARY KEY (monitor_seq, bucket_start)
) WITHOUT ROWID;

-- The latency histogram of each hourly row: sample counts per log-linear bin (see
-- src/monitoring/histogram.rs). Percentiles of any range merge these.
CREATE TABLE heartbeat_hourly_bins (
    monitor_seq INTEGER NOT NULL,
    bucket_start INTEGER NOT NULL,
    bin INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (monitor_seq, bucket_start, bin)
) WITHOUT ROWID;
