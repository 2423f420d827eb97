-- Status page subscribers' email goes through the same outbox as channel notifications (see
-- src/alerting/subscriber_mail.rs): a delivery is addressed to a notification channel or to a
-- subscriber, exactly one of the two. SQLite cannot drop a NOT NULL constraint in place, so
-- the table is rebuilt with its rows, indexes and the new column.

CREATE TABLE deliveries_new (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    channel_id TEXT REFERENCES notification_channels(id) ON DELETE CASCADE,
    alert_id TEXT REFERENCES alerts(id) ON DELETE SET NULL,
    event TEXT NOT NULL,
    message_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    claimed_until INTEGER,
    response_status INTEGER,
    error TEXT,
    latency_ms INTEGER,
    payload_digest TEXT,
    created_at INTEGER NOT NULL,
    attempted_at INTEGER,
    delivered_at INTEGER,
    -- The subscriber an email goes to (a status page's subscriber); deleting the subscriber
    -- deletes its history with it.
    subscriber_id TEXT REFERENCES subscribers(id) ON DELETE CASCADE,
    CHECK ((channel_id IS NULL) <> (subscriber_id IS NULL))
);
INSERT INTO deliveries_new (id, workspace_id, channel_id, alert_id, event, message_id, payload,
    status, attempt, due_at, claimed_until, response_status, error, latency_ms, payload_digest,
    created_at, attempted_at, delivered_at)
SELECT id, workspace_id, channel_id, alert_id, event, message_id, payload, status, attempt,
    due_at, claimed_until, response_status, error, latency_ms, payload_digest, created_at,
    attempted_at, delivered_at FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_new RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (status, due_at);
CREATE INDEX deliveries_channel ON deliveries (channel_id, id);
CREATE INDEX deliveries_alert ON deliveries (alert_id, id);
CREATE INDEX deliveries_message ON deliveries (message_id, attempt);
CREATE INDEX deliveries_subscriber ON deliveries (subscriber_id, id);

-- The admin list pages through a page's subscribers by id.
CREATE INDEX subscribers_page ON subscribers (status_page_id, id);
