-- MCP sessions (see src/http/mcp/): what a node needs to take over a Streamable HTTP session
-- another node opened — the client's `initialize` parameters — so a client may reach any node
-- of a cluster. A session carries no authority: every request presents its own token.
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY,
    -- The client's InitializeRequestParams as JSON.
    state TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX mcp_sessions_created ON mcp_sessions (created_at);
