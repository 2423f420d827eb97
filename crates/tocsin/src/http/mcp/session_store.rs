//! The MCP transport's session table: `rmcp` keeps each open session in the memory of the node
//! that opened it and calls this store when it opens one, ends one, or is asked about a session
//! it does not hold. Kept in the database every node shares, a session opened on one node of a
//! cluster is taken over by any other (which replays the client's `initialize` from here), and
//! `DELETE /mcp` on any node forgets it for every node that has not loaded it yet.

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::cx::Cx;
use crate::store::mcp_sessions;

/// How long a session is remembered in the table after it was opened.
pub const SESSION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

pub struct SessionTable {
    core: Cx,
}

impl SessionTable {
    pub fn new(core: Cx) -> Self {
        SessionTable { core }
    }
}

#[async_trait::async_trait]
impl SessionStore for SessionTable {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(text) = mcp_sessions::load(self.core.db().reader(), session_id).await? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&text)?))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        let now = self.core.clock().now_ms();
        mcp_sessions::save(self.core.db().writer(), session_id, &text, now).await?;
        // Sessions clients never ended are forgotten after a week.
        mcp_sessions::delete_older_than(self.core.db().writer(), now - SESSION_TTL_MS).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        mcp_sessions::delete(self.core.db().writer(), session_id).await?;
        Ok(())
    }
}
