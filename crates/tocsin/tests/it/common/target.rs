//! A loopback HTTP target whose answer the test flips (every path, one status).

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;

/// A loopback HTTP server answering every path with the status the test sets.
pub struct Target {
    pub base: String,
    status: Arc<AtomicU16>,
    task: tokio::task::JoinHandle<()>,
}

impl Target {
    /// A target answering 200 until told otherwise.
    pub async fn start() -> Target {
        let status = Arc::new(AtomicU16::new(200));
        let app = axum::Router::new()
            .fallback(|State(s): State<Arc<AtomicU16>>| async move {
                StatusCode::from_u16(s.load(Ordering::SeqCst)).unwrap()
            })
            .with_state(status.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Target { base, status, task }
    }

    /// `path` on the target (`/health`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers `code` from now on.
    pub fn set(&self, code: u16) {
        self.status.store(code, Ordering::SeqCst);
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.task.abort();
    }
}
