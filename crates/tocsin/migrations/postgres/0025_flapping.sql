-- Flap detection (see tocsin-core's flap.rs and src/monitoring/flapping.rs).
-- Settings, edited with the monitor: a monitor flaps after `flap_transitions` changes between
-- UP and DOWN within `flap_window_minutes`; both NULL turn detection off. Existing monitors get
-- the default, 5 changes in 30 minutes.
ALTER TABLE monitors ADD COLUMN flap_transitions INTEGER DEFAULT 5;
ALTER TABLE monitors ADD COLUMN flap_window_minutes INTEGER DEFAULT 30;
-- State, written with the status change that moves it (no version bump): since when the
-- monitor flaps (NULL while it does not), and the times (ms) of its recent changes between UP
-- and DOWN, a JSON array of at most max(flap_transitions, 2) numbers inside the window.
ALTER TABLE monitors ADD COLUMN flapping_since BIGINT;
ALTER TABLE monitors ADD COLUMN flap_changes TEXT NOT NULL DEFAULT '[]';
-- The scheduling node looks for flapping monitors whose window has gone quiet.
CREATE INDEX monitors_flapping ON monitors (flapping_since) WHERE flapping_since IS NOT NULL;
-- A flapping monitor's changes page nobody; it sends `monitor.flapping` and `monitor.stable`
-- instead. Channels that take pages (`alert.opened`) take those too, so existing channels keep
-- hearing of such monitors (their `events` is a compact JSON array of strings).
UPDATE notification_channels
SET events = substr(events, 1, length(events) - 1) || ',"monitor.flapping","monitor.stable"]'
WHERE events LIKE '%"alert.opened"%' AND events NOT LIKE '%"monitor.flapping"%';
