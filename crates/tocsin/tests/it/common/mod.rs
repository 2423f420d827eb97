//! The integration-test harness: a real server on a loopback port, on SQLite (a fresh temp
//! directory) or, when `TOCSIN_TEST_DATABASE_URL` names a PostgreSQL server, on a fresh
//! database created for the test and dropped by [`TestServer::stop`]. Every test runs the same
//! cases on whichever backend the run selects, so the suite is the backends' conformance test.
//!
//! This module is the one place the test areas share helpers (as zero-to-production's
//! `tests/api/helpers.rs`): the server and its callers here; the manual-clock step in
//! [`clock`]; monitor factories and reads in [`monitors`]; channels in [`channels`] and
//! [`alerting`]; pages, incidents and subscriptions in [`pages`]; custom domains and their DNS
//! in [`domains`]; regions in [`regions`]; loopback targets, receivers and mail in [`target`],
//! [`receiver`] and [`smtp`]; the real binary in [`binary`]. A helper one area alone needs
//! stays in that area's file.

#![allow(clippy::unwrap_used, clippy::type_complexity)]

/// Channels stored as rows and the outbox, for the alert and escalation tests.
pub mod alerting;
/// The real `tocsin` binary: ports, commands, readiness, signals.
pub mod binary;
/// Notification channels through the API, their history and signatures.
pub mod channels;
/// The manual clock's start, the check interval, timestamps and the scheduler step.
pub mod clock;
/// Custom domains and the loopback DNS server they are verified against.
pub mod domains;
/// Monitor factories, reads and pushes through the API.
pub mod monitors;
/// Status pages, components, incidents and subscriptions through the API.
pub mod pages;
/// A loopback HTTP receiver recording what notifications send.
pub mod receiver;
/// Regions as the API lists them, and waits on them.
pub mod regions;
/// A loopback SMTP sink, servers mailing to it, and reading the mail.
pub mod smtp;
/// A loopback HTTP target whose answer the test sets.
pub mod target;

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use reqwest::{Client, Method, Response, StatusCode};
use serde_json::{json, Value};
use sqlx::Connection;
use tocsin::clock::{ManualClock, SharedClock};
use tocsin::config::Config;
use tocsin::http::AppState;

/// A running server under test, its state, and what `stop` must clean up.
pub struct TestServer {
    pub base: String,
    pub state: AppState,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
    pg: Option<(String, String)>,
    database_url: Option<String>,
}

/// Changes a test makes to the configuration before the server starts.
pub type Tweak = Box<dyn FnOnce(&mut Config) + Send>;

/// How a test server starts: on a manual clock, and with configuration changes.
#[derive(Default)]
pub struct Options {
    pub clock: Option<SharedClock>,
    pub tweak: Option<Tweak>,
}

/// The admin URL of the PostgreSQL server to test on, if this run targets PostgreSQL.
pub fn pg_admin_url() -> Option<String> {
    std::env::var("TOCSIN_TEST_DATABASE_URL")
        .ok()
        .filter(|u| u.starts_with("postgres"))
}

impl TestServer {
    /// A server with the default configuration, on the real clock.
    pub async fn start() -> TestServer {
        TestServer::start_with(Options::default()).await
    }

    /// A server whose clock the test drives.
    pub async fn with_clock(start_ms: i64) -> (TestServer, Arc<ManualClock>) {
        let clock = ManualClock::new(start_ms);
        let srv = TestServer::start_with(Options {
            clock: Some(clock.clone()),
            tweak: None,
        })
        .await;
        (srv, clock)
    }

    /// A server on a fresh database (SQLite directory or PostgreSQL database), with `opts`.
    pub async fn start_with(opts: Options) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut pg = None;
        let database_url = match pg_admin_url() {
            Some(admin) => {
                let name = format!("tocsin_t_{}", uuid::Uuid::now_v7().simple());
                let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.ok();
                let (prefix, _) = admin.rsplit_once('/').unwrap();
                let url = format!("{prefix}/{name}");
                pg = Some((admin, name));
                Some(url)
            }
            None => None,
        };
        TestServer::start_on(dir, pg, database_url, opts, None).await
    }

    async fn start_on(
        dir: tempfile::TempDir,
        pg: Option<(String, String)>,
        database_url: Option<String>,
        opts: Options,
        addr: Option<std::net::SocketAddr>,
    ) -> TestServer {
        let mut config = Config::for_dir(dir.path(), database_url.clone());
        let listener = tokio::net::TcpListener::bind(addr.unwrap_or(([127, 0, 0, 1], 0).into()))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        config.listen = addr;
        config.public_url = url::Url::parse(&format!("http://{addr}")).unwrap();
        // After the address: a tweak may put the server behind another public URL, as the
        // nodes of a cluster share one.
        if let Some(tweak) = opts.tweak {
            tweak(&mut config);
        }
        let state = tocsin::server::start(config, opts.clock).await.unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let run_state = state.clone();
        let handle = tokio::spawn(async move {
            tocsin::server::run(listener, run_state, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        TestServer {
            base: format!("http://{addr}"),
            state,
            shutdown: Some(tx),
            handle: Some(handle),
            _dir: dir,
            pg,
            database_url,
        }
    }

    /// A second server on this one's PostgreSQL database, as another node of a cluster would
    /// be (`None` on SQLite). Stop it before this one, which drops the database.
    pub async fn start_beside(&self, opts: Options) -> Option<TestServer> {
        let url = self.database_url.clone().filter(|_| self.pg.is_some())?;
        let dir = tempfile::tempdir().unwrap();
        Some(TestServer::start_on(dir, None, Some(url), opts, None).await)
    }

    /// Stops the server cleanly and starts a new one on the same data (same SQLite directory
    /// or PostgreSQL database), as a process restart would. The address changes.
    pub async fn restart(self, opts: Options) -> TestServer {
        self.restart_at(opts, None).await
    }

    /// Like [`TestServer::restart`], but listening on the same address again, as a restarted
    /// service behind a fixed port would (clients reconnecting to it find it there).
    pub async fn restart_same_port(self, opts: Options) -> TestServer {
        let addr = self.state.config().listen;
        self.restart_at(opts, Some(addr)).await
    }

    async fn restart_at(mut self, opts: Options, addr: Option<std::net::SocketAddr>) -> TestServer {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.await;
        }
        let pg = self.pg.take();
        let database_url = self.database_url.take();
        // Moving the directory out needs a placeholder for the emptied server being dropped.
        let dir = std::mem::replace(&mut self._dir, tempfile::tempdir().unwrap());
        TestServer::start_on(dir, pg, database_url, opts, addr).await
    }

    /// `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Stops the server and drops its PostgreSQL database.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.await;
        }
        if let Some((admin, name)) = self.pg.take() {
            if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await;
            }
        }
    }

    /// Marks `email`'s user verified, as `tocsin user verify` does: for tests that need what
    /// a verified address grants (invitations, email-domain pages) but are not about the
    /// emailed link.
    pub async fn verify_email(&self, email: &str) {
        let found = tocsin::domain::email_verification::verify_by_operator(self.state.cx(), email)
            .await
            .unwrap();
        assert!(found.is_some(), "no user {email}");
    }

    /// Signs up a new person; the returned client carries their session cookie and Origin.
    pub async fn sign_up(&self, email: &str) -> User {
        let client = Client::builder()
            .cookie_store(true)
            .default_headers({
                let mut h = reqwest::header::HeaderMap::new();
                h.insert(reqwest::header::ORIGIN, self.base.parse().unwrap());
                h
            })
            .build()
            .unwrap();
        let res = client
            .post(self.url("/auth/sign-up/email"))
            .json(&json!({"email": email, "password": "correct horse battery", "name": email.split('@').next().unwrap()}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "sign-up of {email}");
        let body: Value = res.json().await.unwrap();
        User {
            client,
            base: self.base.clone(),
            user_id: body["user"]["id"].as_str().unwrap().to_string(),
            workspace_id: body["workspace"]["id"].as_str().unwrap().to_string(),
            email: email.to_string(),
        }
    }
}

/// Whoever calls the API in a test (a signed-in [`User`] or a [`Bearer`] token), so the
/// shared factories serve both.
pub trait Caller {
    /// `method path` with an optional JSON body, as this caller.
    fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Response> + Send;
}

impl Caller for User {
    fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Response> + Send {
        User::call(self, method, path, body)
    }
}

impl Caller for Bearer {
    fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Response> + Send {
        Bearer::call(self, method, path, body)
    }
}

impl<C: Caller + Sync + Send> Caller for Arc<C> {
    fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> impl Future<Output = Response> + Send {
        C::call(self, method, path, body)
    }
}

/// A signed-in person.
pub struct User {
    pub client: Client,
    pub base: String,
    pub user_id: String,
    pub workspace_id: String,
    pub email: String,
}

impl User {
    /// `method path` with an optional JSON body, with this person's session.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path));
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }

    /// Mints an API key with these permissions (and `surfaces`, default rest) and returns its token.
    pub async fn token(&self, permissions: &[&str]) -> String {
        self.token_on(permissions, &["rest"]).await
    }

    /// Mints an API key with these permissions on these surfaces; its token.
    pub async fn token_on(&self, permissions: &[&str], surfaces: &[&str]) -> String {
        let res = self
            .call(
                Method::POST,
                "/api-keys",
                Some(json!({"name": "test", "permissions": permissions, "surfaces": surfaces})),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let body: Value = res.json().await.unwrap();
        body["token"].as_str().unwrap().to_string()
    }
}

/// A client authenticating with a bearer token.
pub struct Bearer {
    pub client: Client,
    pub base: String,
    pub token: String,
}

impl Bearer {
    /// A client of the server at `base` sending `token`.
    pub fn new(base: &str, token: &str) -> Bearer {
        Bearer {
            client: Client::new(),
            base: base.to_string(),
            token: token.to_string(),
        }
    }

    /// `method path` with an optional JSON body, with the bearer token.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let mut req = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }
}

/// `joiner` invited by `owner` into `owner`'s workspace with `role` (201) and accepting (200;
/// an invitation opens only to a verified address, so verify theirs first); the acceptance.
pub async fn join(owner: &User, joiner: &User, role: &str) -> Value {
    let inv = json_of(
        owner
            .call(
                Method::POST,
                "/workspace/invitations",
                Some(json!({"email": joiner.email, "role": role})),
            )
            .await,
        201,
    )
    .await;
    let token = inv["acceptUrl"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap()
        .to_string();
    json_of(
        joiner
            .call(
                Method::POST,
                "/invitations/accept",
                Some(json!({ "token": token })),
            )
            .await,
        200,
    )
    .await
}

/// A client that does not follow redirects, for asserting on them.
pub fn no_redirects() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Asserts an error envelope with this status and code; returns the body.
pub async fn expect_error(res: Response, status: u16, code: &str) -> Value {
    let got = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "status; body {body}");
    assert!(ct.starts_with("application/json"), "content-type {ct}");
    assert_eq!(body["statusCode"], json!(status), "statusCode in {body}");
    assert_eq!(body["code"], json!(code), "code in {body}");
    assert!(body["message"].is_string(), "message in {body}");
    body
}

/// Asserts a 400 `VALIDATION_ERROR` naming `field`; returns the body.
pub async fn field_error(res: Response, field: &str) -> Value {
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], field, "{body}");
    body
}

/// Asserts this status; returns the JSON body (`null` when there is none).
pub async fn json_of(res: Response, status: u16) -> Value {
    let got = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "status; body {body}");
    body
}

/// The keys of a JSON object, sorted: for asserting a record's exact shape.
pub fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// The `id` of each element of a JSON array, in order.
pub fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_string())
        .collect()
}
