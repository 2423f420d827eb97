-- Alerting (see src/alerting/): notification channels, the monitors they serve, escalation
-- policies, alerts, and deliveries, which are at once the outbox and its history.

CREATE TABLE notification_channels (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- EMAIL, WEBHOOK, SLACK, ... (the fifteen types of the API).
    type TEXT NOT NULL,
    -- The type's config as JSON, secrets included: they are needed to send, and are never
    -- read back through any surface (masked as ********).
    config TEXT NOT NULL,
    -- JSON array of the event types the channel takes.
    events TEXT NOT NULL,
    is_default INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX notification_channels_workspace ON notification_channels (workspace_id, id);

-- A monitor's own channels (`notificationChannelIds`), in the order given.
CREATE TABLE monitor_channels (
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    channel_id TEXT NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (monitor_id, channel_id)
);
CREATE INDEX monitor_channels_channel ON monitor_channels (channel_id);

CREATE TABLE escalation_policies (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX escalation_policies_workspace ON escalation_policies (workspace_id, id);

CREATE TABLE escalation_steps (
    id TEXT PRIMARY KEY,
    policy_id TEXT NOT NULL REFERENCES escalation_policies(id) ON DELETE CASCADE,
    -- 1, 2, 3 ...: the position in the policy.
    step_order INTEGER NOT NULL,
    delay_minutes INTEGER NOT NULL,
    -- JSON array of channel ids.
    channel_ids TEXT NOT NULL,
    UNIQUE (policy_id, step_order)
);

-- The monitor's escalation policy (`escalationPolicyId`); cleared when the policy goes.
ALTER TABLE monitors ADD COLUMN escalation_policy_id TEXT REFERENCES escalation_policies(id) ON DELETE SET NULL;

CREATE TABLE alerts (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
    -- OPEN, ACKNOWLEDGED, RESOLVED.
    status TEXT NOT NULL,
    cause TEXT NOT NULL,
    -- The monitor id while the alert is not resolved, NULL after: at most one open alert per
    -- monitor, enforced by the database rather than by care.
    open_key TEXT UNIQUE,
    escalation_policy_id TEXT,
    escalation_step INTEGER,
    next_escalation_at INTEGER,
    opened_at INTEGER NOT NULL,
    acknowledged_at INTEGER,
    acknowledged_by TEXT,
    resolved_at INTEGER,
    updated_at INTEGER NOT NULL
);
CREATE INDEX alerts_workspace ON alerts (workspace_id, id);
CREATE INDEX alerts_monitor ON alerts (monitor_id, id);
CREATE INDEX alerts_escalation ON alerts (next_escalation_at);

-- One row per delivery attempt. A row in PENDING is the outbox: due at `due_at`, claimed by a
-- worker until `claimed_until` (a worker that dies mid-send lets the claim lapse, and the
-- attempt is made again with the same `message_id`, which providers use to drop duplicates).
-- An attempt that fails becomes RETRYING and the next attempt is inserted PENDING; the last
-- one becomes FAILED. Failed attempts stay: this is the history the API pages through.
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    channel_id TEXT NOT NULL REFERENCES notification_channels(id) ON DELETE CASCADE,
    alert_id TEXT REFERENCES alerts(id) ON DELETE SET NULL,
    -- alert.opened, alert.resolved, test, ...
    event TEXT NOT NULL,
    -- Stable across attempts: the webhook-id, and the provider's dedup key where it has one.
    message_id TEXT NOT NULL,
    -- The Standard Webhooks body ({"type", "timestamp", "data"}) every provider renders from.
    payload TEXT NOT NULL,
    -- PENDING, DELIVERED, RETRYING, FAILED.
    status TEXT NOT NULL,
    -- 1, 2, 3 ...
    attempt INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    claimed_until INTEGER,
    response_status INTEGER,
    error TEXT,
    latency_ms INTEGER,
    -- SHA-256 (hex) of the bytes sent.
    payload_digest TEXT,
    created_at INTEGER NOT NULL,
    attempted_at INTEGER,
    delivered_at INTEGER
);
CREATE INDEX deliveries_due ON deliveries (status, due_at);
CREATE INDEX deliveries_channel ON deliveries (channel_id, id);
CREATE INDEX deliveries_alert ON deliveries (alert_id, id);
CREATE INDEX deliveries_message ON deliveries (message_id, attempt);
