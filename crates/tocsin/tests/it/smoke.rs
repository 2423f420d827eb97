//! Harness self-check: a server starts on the selected backend and answers.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::TestServer;

#[tokio::test]
async fn server_starts_and_is_ready() {
    let srv = TestServer::start().await;
    let res = reqwest::get(srv.url("/readyz")).await.unwrap();
    assert_eq!(res.status(), 200);
    srv.stop().await;
}
