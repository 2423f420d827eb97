-- When the monitor became stale: active, yet no check result for three intervals (or none of
-- its regions has a live probe). NULL while results come in. Set and cleared with a `stale` /
-- `fresh` monitor event by the node holding the scheduler role (see src/monitoring/staleness.rs).
ALTER TABLE monitors ADD COLUMN stale_since BIGINT;
