-- Single sign-on (see src/auth/sso/ and src/domain/sso.rs): a person's identities at OpenID
-- providers, found by the provider's issuer and its subject, never by email.
CREATE TABLE sso_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    provider_id TEXT NOT NULL,
    email TEXT,
    created_at BIGINT NOT NULL,
    last_sign_in_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX sso_identities_user ON sso_identities (user_id);

-- Sign-in flows completed (the hash of their state), until their cookie would have expired:
-- a callback replayed on any node finds its flow already used.
CREATE TABLE sso_flows_used (
    state_hash TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);

-- A workspace whose non-owner members sign in through a provider only (1) or also with a
-- password (0).
ALTER TABLE workspaces ADD COLUMN require_sso BIGINT NOT NULL DEFAULT 0;
