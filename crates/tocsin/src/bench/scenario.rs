//! The benchmark's scenarios. A scenario is a name, a one-line description, and an async
//! `setup` that prepares whatever the request needs (a user, a key, monitors...) and returns the
//! one request the load driver then repeats ([`RequestSpec`]).
//!
//! Adding a scenario for a new feature means writing one setup function and one entry in
//! [`all`]. Setup gets a [`Fixture`]: the in-process server's state (when the bench started the
//! server) and a lazily-minted API token shared by every scenario of the run, so the costs of
//! creating a user (argon2) and a key are paid once.

use axum::http::{header, HeaderName, HeaderValue, Method};
use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use tocsin::server::AppState;

/// The scenario every other one is compared with.
pub const BASELINE: &str = "baseline";

/// The request a scenario repeats. Built once; the driver clones it per request, and every
/// part is reference-counted (`Bytes`, `HeaderValue`), so a clone copies no payload.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: Method,
    /// Path and query, relative to the target's base URL (`/workspace`).
    pub path: String,
    /// When set, requests take these paths in turn instead of `path` (one push token each).
    pub rotate: Option<std::sync::Arc<Vec<String>>>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// When set, requests take these bodies in turn instead of `body`, each with its own
    /// value of the named header (signed webhook events: one signature per body).
    pub bodies: Option<std::sync::Arc<SignedBodies>>,
}

/// Bodies sent in turn, each with its own value of one header.
#[derive(Debug)]
pub struct SignedBodies {
    pub header: HeaderName,
    pub items: Vec<(Bytes, HeaderValue)>,
}

impl RequestSpec {
    pub fn get(path: &str) -> RequestSpec {
        RequestSpec {
            method: Method::GET,
            path: path.to_string(),
            rotate: None,
            headers: Vec::new(),
            body: Bytes::new(),
            bodies: None,
        }
    }

    /// `method` on each of `paths` in turn.
    pub fn rotating(method: Method, paths: Vec<String>) -> RequestSpec {
        RequestSpec {
            method,
            path: paths.first().cloned().unwrap_or_else(|| "/".into()),
            rotate: Some(std::sync::Arc::new(paths)),
            headers: Vec::new(),
            body: Bytes::new(),
            bodies: None,
        }
    }

    /// Adds `Authorization: Bearer <token>`; the value is marked sensitive so it never shows in
    /// debug output.
    pub fn bearer(mut self, token: &str) -> anyhow::Result<RequestSpec> {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            anyhow::anyhow!("the API token contains characters not allowed in a header")
        })?;
        value.set_sensitive(true);
        self.headers.push((header::AUTHORIZATION, value));
        Ok(self)
    }

    /// The request as a browser sends it: it accepts a gzip-compressed answer.
    pub fn gzip(mut self) -> RequestSpec {
        self.headers.push((
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, deflate, br"),
        ));
        self
    }
}

/// What a scenario's setup can use.
pub struct Fixture {
    /// The server's state when the bench runs it in-process; `None` against `--url`.
    state: Option<AppState>,
    /// The API token: given by `--token`, or minted on first use.
    token: OnceCell<String>,
    /// How many push monitors the push scenario seeds.
    pub push_tokens: usize,
}

/// The person the bench acts as on an in-process server.
pub const BENCH_EMAIL: &str = "bench@tocsin.invalid";
pub const BENCH_PASSWORD: &str = "bench-password-not-secret";

impl Fixture {
    pub fn in_process(state: AppState) -> Fixture {
        Fixture {
            state: Some(state),
            token: OnceCell::new(),
            push_tokens: 100_000,
        }
    }

    pub fn external(token: String) -> Fixture {
        Fixture {
            state: None,
            token: OnceCell::new_with(Some(token)),
            push_tokens: 100_000,
        }
    }

    /// The in-process server's state, for scenarios that seed data directly.
    pub fn state(&self, scenario: &str) -> anyhow::Result<&AppState> {
        self.app(scenario)
    }

    /// [`Fixture::state`] with what the HTTP edge holds beside it (the credential caches).
    pub fn app(&self, scenario: &str) -> anyhow::Result<&AppState> {
        self.state.as_ref().ok_or_else(|| {
            anyhow::anyhow!("scenario {scenario} needs the in-process server (drop --url)")
        })
    }

    /// An API token with every capability for the bench user's workspace. Against an
    /// in-process server the first call creates the user and mints the key.
    pub async fn api_token(&self) -> anyhow::Result<&str> {
        let token = self
            .token
            .get_or_try_init(|| async {
                let state = self.state("api-token")?;
                let input = tocsin::domain::users::SignUp {
                    email: BENCH_EMAIL.into(),
                    password: BENCH_PASSWORD.into(),
                    name: Some("Bench".into()),
                };
                tocsin::domain::users::create_user(state.cx(), &input, true)
                    .await
                    .map_err(|e| anyhow::anyhow!("creating the bench user: {e}"))?;
                tocsin::domain::api_keys::mint_for_user(
                    state.cx(),
                    BENCH_EMAIL,
                    "bench",
                    "all",
                    "rest",
                )
                .await
            })
            .await?;
        Ok(token)
    }
}

impl Fixture {
    /// The bench user's workspace (creating the user and key first if needed), for scenarios
    /// that seed data the token can read.
    pub async fn workspace_id(&self) -> anyhow::Result<String> {
        self.api_token().await?;
        let state = self.state("workspace")?;
        let user = tocsin::store::users::find_by_email(state.db().reader(), BENCH_EMAIL)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the bench user vanished"))?;
        tocsin::store::workspaces::list_for_user(state.db().reader(), &user.id)
            .await?
            .into_iter()
            .next()
            .map(|w| w.id)
            .ok_or_else(|| anyhow::anyhow!("the bench user has no workspace"))
    }
}

type SetupFn = for<'a> fn(&'a Fixture) -> BoxFuture<'a, anyhow::Result<RequestSpec>>;

/// One benchmark scenario.
pub struct Scenario {
    pub name: &'static str,
    // What the scenario measures, for whoever reads the table: the run prints the `--help`
    // list instead, and the binary reads no field nobody prints.
    #[allow(dead_code)]
    pub about: &'static str,
    pub setup: SetupFn,
}

/// Every scenario, in the order they run. The baseline comes first so later ratios compare
/// against a figure taken under the same conditions.
pub fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: BASELINE,
            about: "GET /healthz: a trivial handler behind the full middleware stack",
            setup: |_| Box::pin(async { Ok(RequestSpec::get("/healthz")) }),
        },
        Scenario {
            name: "push",
            about:
                "POST /push/{token} over many distinct push tokens, each answered after its commit",
            setup: |fx| Box::pin(async move { super::push::setup(fx, fx.push_tokens).await }),
        },
        Scenario {
            name: "workspace",
            about: "GET /workspace with a bearer API key: the authenticated, cached hot path",
            setup: |fx| {
                Box::pin(
                    async move { RequestSpec::get("/workspace").bearer(fx.api_token().await?) },
                )
            },
        },
        Scenario {
            name: "mcp-get-monitor",
            about: "POST /mcp tools/call get_monitor with an mcp token (stateless 2026-07-28 requests)",
            setup: |fx| Box::pin(async move { super::mcp::get_monitor(fx).await }),
        },
        Scenario {
            name: "mcp-get-monitor-oauth",
            about: "The same call with an OAuth access token (a grant made by sign-in, authorize with PKCE, consent and the code exchange)",
            setup: |fx| Box::pin(async move { super::mcp::get_monitor_oauth(fx).await }),
        },
        Scenario {
            name: "billing-webhook",
            about: "POST /billing/stripe/webhook: distinct signed customer.subscription.updated events, each applied (plan change and audit entry)",
            setup: |fx| Box::pin(async move { super::billing::setup(fx).await }),
        },
        Scenario {
            name: "status-summary",
            about: "GET /api/v1/status-pages/{slug}/summary of a page of 50 components with 90 days of history",
            setup: |fx| Box::pin(async move { super::status_page::summary(fx).await }),
        },
        Scenario {
            name: "status-summary-gzip",
            about: "The same summary fetched as browsers and the embed widget fetch it (Accept-Encoding: gzip): the cached compressed copy",
            setup: |fx| Box::pin(async move { Ok(super::status_page::summary(fx).await?.gzip()) }),
        },
        Scenario {
            name: "status-page",
            about: "GET /s/{slug}: the same page as HTML",
            setup: |fx| Box::pin(async move { super::status_page::page(fx).await }),
        },
        Scenario {
            name: "status-badge",
            about: "GET /api/v1/embed/badge.svg?token=pk_...: the same page's SVG badge by publishable key",
            setup: |fx| Box::pin(async move { super::status_page::badge(fx).await }),
        },
    ]
}

/// The names, for `--help` and error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_baseline_first() {
        let n = names();
        assert_eq!(n.first(), Some(&BASELINE));
        let mut sorted = n.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n.len());
    }

    #[test]
    fn bearer_rejects_header_breaking_tokens() {
        assert!(RequestSpec::get("/x").bearer("svc_abc").is_ok());
        assert!(RequestSpec::get("/x").bearer("svc_a\r\nX-Evil: 1").is_err());
    }
}
