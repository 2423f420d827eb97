-- Plans sold through Stripe (see src/billing/). One row per workspace that has a Stripe
-- customer: its subscription as the newest applied event described it. Timestamps are
-- milliseconds; `event_created` is the Stripe `created` (seconds) of the newest event applied,
-- so an older event arriving late changes nothing (compared in the UPDATE itself).
CREATE TABLE billing_accounts (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL UNIQUE,
    subscription_id TEXT,
    -- none, trialing, active, past_due, canceled, incomplete, unpaid
    status TEXT NOT NULL DEFAULT 'none',
    price_id TEXT,
    current_period_start BIGINT,
    current_period_end BIGINT,
    cancel_at_period_end BIGINT NOT NULL DEFAULT 0,
    event_created BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL
);

-- Every webhook event applied, written in the transaction of its effect: the primary key makes
-- a redelivery (or the same event reaching two nodes at once) apply once.
CREATE TABLE billing_events (
    event_id TEXT PRIMARY KEY,
    event_type TEXT NOT NULL,
    workspace_id TEXT,
    created BIGINT NOT NULL,
    applied_at BIGINT NOT NULL
);
