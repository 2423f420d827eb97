-- The version of each alert, its ETag: every change to an alert (acknowledged, resolved, an
-- escalation step reached) adds one, and `POST /alerts/{id}/acknowledge` with a stale
-- `If-Match` answers 409 VERSION_CONFLICT.
ALTER TABLE alerts ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
