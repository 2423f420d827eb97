-- Raw heartbeats are partitioned by day on PostgreSQL, so that retention drops a whole day in
-- one statement instead of deleting its rows one by one (at a million monitors every minute a
-- day is 1.4 billion rows: deleting them row by row, and vacuuming behind them, would cost as
-- much as inserting them).
--
-- The rows already stored stay where they are: the old table becomes one partition covering
-- everything up to the start of the day after its newest row (no row is copied), and retention
-- deletes from it row by row until all of it is past retention, then drops it whole. Daily
-- partitions are created ahead by the server (`store::heartbeat_partitions`); a default
-- partition catches a row no daily partition covers, so a write never fails for want of one.
ALTER TABLE heartbeats RENAME TO heartbeats_before;
ALTER TABLE heartbeats_before RENAME CONSTRAINT heartbeats_pkey TO heartbeats_before_pkey;
ALTER INDEX heartbeats_correlation RENAME TO heartbeats_before_correlation;

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
) PARTITION BY RANGE (ts);

CREATE INDEX heartbeats_correlation ON heartbeats (correlation_id)
    WHERE correlation_id IS NOT NULL;

DO $$
DECLARE
    day CONSTANT BIGINT := 86400000;
    newest BIGINT;
    upto BIGINT;
BEGIN
    SELECT GREATEST(COALESCE(MAX(ts), 0), (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT)
        INTO newest FROM heartbeats_before;
    upto := (newest / day + 1) * day;
    EXECUTE format(
        'ALTER TABLE heartbeats ATTACH PARTITION heartbeats_before FOR VALUES FROM (MINVALUE) TO (%s)',
        upto);
END $$;

CREATE TABLE heartbeats_default PARTITION OF heartbeats DEFAULT;
