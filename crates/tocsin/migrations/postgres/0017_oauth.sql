-- OAuth 2.1 for MCP clients: registered clients, pending authorization requests (between the
-- authorize endpoint and the consent), grants (one per consent), their authorization codes and
-- their tokens. Every secret (client secret, consent code, authorization code, access and
-- refresh token) is stored as its SHA-256 only. Timestamps are BIGINT milliseconds (UTC).
CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    token_endpoint_auth_method TEXT NOT NULL,
    secret_hash TEXT,
    scope TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE oauth_requests (
    consent_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scopes TEXT NOT NULL,
    state TEXT,
    code_challenge TEXT NOT NULL,
    resource TEXT,
    expires_at BIGINT NOT NULL
);
CREATE INDEX oauth_requests_expiry ON oauth_requests (expires_at);

CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
    scopes TEXT NOT NULL,
    resource TEXT,
    status TEXT NOT NULL,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX oauth_grants_user ON oauth_grants (workspace_id, user_id, id);

CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);

CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
