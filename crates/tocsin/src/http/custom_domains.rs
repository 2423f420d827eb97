//! Serving status pages at their custom domains: a request whose `Host` is a verified domain
//! of a page (`domain::status_pages::domains`) gets that page, before any route is chosen.
//!
//! [`wrap`] puts [`route_by_host`] around the whole application router (an outer router whose
//! only service is the application, so the middleware runs before the application's routing
//! and can rewrite the path it routes on; `Router::layer` alone runs after routing). On a
//! custom domain `/` becomes `/s/{slug}`, `/feed.rss` and `/feed.atom` the page's feeds and
//! `/postmortems/...` its postmortem pages; the page's own absolute links (`/s/{slug}/...`,
//! `/api/v1/status-pages/{slug}/...`) pass as they are; every other path, and every path of a
//! domain whose page is unpublished, is a 404 page. Any other host — first of all the
//! server's own (`--public-url`), but also an IP address or a name that is no verified
//! domain — reaches the application unchanged.
//!
//! The server's own host, IP addresses and single-label names skip any lookup, so the API
//! pays one header comparison. Other hosts are looked up once and remembered for [`TTL_MS`]
//! (at most [`MAX_ENTRIES`], then the cache starts over), including "not a domain of ours".
//! The cache follows the change feed: a `StatusPageChanged` or `Resync` notice from any node
//! (published, unpublished, a domain verified or deleted) empties it before the next lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::broadcast::Receiver;

use crate::cluster::feed::{Delivery, Notice};
use crate::cx::Cx;
use crate::http::AppState;
use crate::store;

/// How long a host's answer is trusted before it is read again (a net under the feed).
pub const TTL_MS: i64 = 5_000;
/// Past this many remembered hosts the cache starts over, bounding memory under a flood of
/// made-up `Host` headers.
pub const MAX_ENTRIES: usize = 10_000;

/// Marks a request that arrived at a page's custom domain (its links and redirects then use
/// the domain's own paths, `/` for the page).
#[derive(Debug, Clone, Copy)]
pub struct OnCustomDomain;

/// Wraps the application router so that custom domains are routed before it.
pub fn wrap(state: &AppState, app: Router) -> Router {
    let hosts = HostRouting::new(state.cx());
    Router::new()
        .fallback_service(app)
        .layer(middleware::from_fn_with_state(hosts, route_by_host))
}

/// What a host is to this server.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// No verified domain: the application answers as for any host.
    NotOurs,
    /// The verified domain of a published page, by slug.
    Page(String),
    /// The verified domain of an unpublished page: nothing to show.
    Unpublished,
}

/// The host -> page lookups and their cache (cheap to clone).
#[derive(Clone)]
pub struct HostRouting(Arc<Inner>);

struct Inner {
    core: Cx,
    /// The server's own host name, lowercase, no port.
    own_host: String,
    cache: Mutex<Cache>,
}

struct Cache {
    entries: HashMap<String, (Target, i64)>,
    /// Bumped whenever the cache is emptied, so an answer read from the database before a
    /// change is not stored after it.
    generation: u64,
    feed: Receiver<Delivery>,
}

impl Cache {
    /// Applies the notices received since the last call: any change to a status page, a
    /// `Resync` or a lag (notices lost) empties the cache.
    fn follow_feed(&mut self) {
        let mut clear = false;
        loop {
            match self.feed.try_recv() {
                Ok(Delivery {
                    notice: Notice::StatusPageChanged { .. } | Notice::Resync,
                    ..
                })
                | Err(TryRecvError::Lagged(_)) => clear = true,
                Ok(_) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        if clear {
            self.entries.clear();
            self.generation += 1;
        }
    }
}

impl HostRouting {
    pub fn new(core: &Cx) -> HostRouting {
        HostRouting(Arc::new(Inner {
            own_host: crate::domain::status_pages::domains::own_host(core),
            cache: Mutex::new(Cache {
                entries: HashMap::new(),
                generation: 0,
                feed: core.feed().subscribe_all(),
            }),
            core: core.clone(),
        }))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.0.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `host` (lowercase, no port) is, from memory when fresh.
    async fn target(&self, host: &str) -> Result<Target, sqlx::Error> {
        let now = self.0.core.clock().now_ms();
        let generation = {
            let mut cache = self.cache();
            cache.follow_feed();
            if let Some((target, at)) = cache.entries.get(host) {
                if now - at < TTL_MS {
                    return Ok(target.clone());
                }
            }
            cache.generation
        };
        let target =
            match store::status_page_domains::verified_host(self.0.core.db().reader(), host).await?
            {
                None => Target::NotOurs,
                Some((slug, true)) => Target::Page(slug),
                Some((_, false)) => Target::Unpublished,
            };
        let mut cache = self.cache();
        cache.follow_feed();
        if cache.generation == generation {
            if cache.entries.len() >= MAX_ENTRIES {
                cache.entries.clear();
            }
            cache
                .entries
                .insert(host.to_string(), (target.clone(), now));
        }
        Ok(target)
    }
}

/// The request's host name: lowercase, without port or trailing dot (`None` when absent).
fn request_host(req: &Request) -> Option<String> {
    let raw = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))?;
    let authority: axum::http::uri::Authority = raw.parse().ok()?;
    let host = authority.host();
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether `host` cannot be a custom domain, whatever the database holds: an IP address
/// (bracketed IPv6 included) or a single label such as `localhost`.
fn never_a_domain(host: &str) -> bool {
    host.starts_with('[') || !host.contains('.') || host.parse::<std::net::IpAddr>().is_ok()
}

/// Routes requests for custom domains to their page; everything else passes untouched.
pub async fn route_by_host(
    State(hosts): State<HostRouting>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(host) = request_host(&req) else {
        return next.run(req).await;
    };
    if host == hosts.0.own_host || never_a_domain(&host) {
        return next.run(req).await;
    }
    let target = match hosts.target(&host).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, host = %host, "custom domain lookup failed");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Status page unavailable",
                "The status page cannot be shown right now. Please try again in a moment.",
            );
        }
    };
    let slug = match target {
        Target::NotOurs => return next.run(req).await,
        Target::Unpublished => return not_found(),
        Target::Page(slug) => slug,
    };
    let Some(path) = page_path(&slug, req.uri().path()) else {
        return not_found();
    };
    let mut parts = req.uri().clone().into_parts();
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    parts.path_and_query = path_and_query.parse().ok();
    match Uri::from_parts(parts) {
        Ok(uri) => *req.uri_mut() = uri,
        Err(_) => return not_found(),
    }
    req.extensions_mut().insert(OnCustomDomain);
    next.run(req).await
}

/// Where a path of a custom domain is served in the application, if anywhere.
fn page_path(slug: &str, path: &str) -> Option<String> {
    let own = format!("/s/{slug}");
    let api = format!("/api/v1/status-pages/{slug}/");
    match path {
        "" | "/" => Some(own),
        "/feed.rss" | "/feed.atom" => Some(format!("{own}{path}")),
        p if p.starts_with("/postmortems/") => Some(format!("{own}{p}")),
        p if p == own || p.starts_with(&format!("{own}/")) || p.starts_with(&api) => {
            Some(p.to_string())
        }
        _ => None,
    }
}

fn not_found() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no published status page at this address.",
    )
}

/// A page for people (custom domains are visited by browsers, not API clients), in the look
/// of the public pages' own error pages.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    crate::http::people_page::PeoplePage::text(title, text).respond(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_a_custom_domain_map_to_the_page() {
        assert_eq!(page_path("acme", "/").as_deref(), Some("/s/acme"));
        assert_eq!(
            page_path("acme", "/feed.rss").as_deref(),
            Some("/s/acme/feed.rss")
        );
        assert_eq!(
            page_path("acme", "/feed.atom").as_deref(),
            Some("/s/acme/feed.atom")
        );
        assert_eq!(
            page_path("acme", "/postmortems/x1").as_deref(),
            Some("/s/acme/postmortems/x1")
        );
        assert_eq!(
            page_path("acme", "/s/acme/feed.rss").as_deref(),
            Some("/s/acme/feed.rss")
        );
        assert_eq!(
            page_path("acme", "/api/v1/status-pages/acme/summary").as_deref(),
            Some("/api/v1/status-pages/acme/summary")
        );
        for other in [
            "/monitors",
            "/app/",
            "/s/other",
            "/s/acme-two",
            "/api/v1/status-pages/other/summary",
            "/healthz",
            "/openapi.json",
        ] {
            assert_eq!(page_path("acme", other), None, "{other}");
        }
    }

    #[test]
    fn addresses_and_bare_names_are_never_domains() {
        for h in ["127.0.0.1", "[::1]", "localhost", "10.0.0.1"] {
            assert!(never_a_domain(h), "{h}");
        }
        assert!(!never_a_domain("status.example.com"));
    }

    #[test]
    fn the_host_loses_its_port_case_and_trailing_dot() {
        let req = Request::builder()
            .uri("/")
            .header(header::HOST, "Status.Example.COM.:8443")
            .body(axum::body::Body::empty())
            .unwrap_or_default();
        assert_eq!(request_host(&req).as_deref(), Some("status.example.com"));
        let req = Request::builder()
            .uri("http://[::1]:8080/")
            .body(axum::body::Body::empty())
            .unwrap_or_default();
        assert_eq!(request_host(&req).as_deref(), Some("[::1]"));
    }
}
