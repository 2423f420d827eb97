//! HTTP adapter for the custom domains of status pages (operations, rules and the record's
//! shape in `domain::status_pages::domains`; serving a page by `Host` in
//! `http::custom_domains`).

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use axum::extract::{Path, State};
use axum::Json;

use super::extract::{ApiJson, Created, NoContent};
use crate::auth::caps;
use crate::domain::status_pages::domains::{self, AddDomain, DomainPath, StatusPageDomain};
use crate::domain::status_pages::PagePath;
use crate::http::auth::Auth;
use crate::http::error::ApiResult;
use crate::http::AppState;

const TAG: &str = "Status pages";

const HOW: &str = "A custom domain serves a published status page at `/` of that host (and its \
    feeds at `/feed.rss` and `/feed.atom`), chosen by the request's `Host` header, once \
    verified. Adding a domain answers the DNS record that proves control: a `TXT` record \
    named `_tocsin-challenge.<domain>` holding `tocsin-verification=<token>`. Publish it, \
    then verify. Point the domain itself (a CNAME or A/AAAA record) at this server, and \
    terminate TLS for it in front of the server.\n\n\
    A domain is unique across the server: one that another page holds is 409 \
    `DOMAIN_TAKEN`, unless that claim was never verified and is more than 7 days old, in \
    which case it is released to the new claim. A page has at most 10 domains; the page's \
    `customDomain` is its oldest verified one.";

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/status-pages/{page_id}/domains",
            get_with(list, |op| {
                op.id("listStatusPageDomains")
                    .tag(TAG)
                    .summary("A status page's custom domains, oldest first, with their verification records (`status_pages:read`)")
                    .description(HOW)
            })
            .post_with(add, |op| {
                op.id("addStatusPageDomain")
                    .tag(TAG)
                    .summary("Add a custom domain to a status page, unverified; answers the TXT record to publish; a domain held elsewhere on the server is 409 `DOMAIN_TAKEN` (`status_pages:write`)")
                    .description(HOW)
            }),
        )
        .api_route(
            "/status-pages/{page_id}/domains/{domain}",
            aide::axum::routing::delete_with(delete, |op| {
                op.id("deleteStatusPageDomain")
                    .tag(TAG)
                    .summary("Remove a custom domain from a status page; it stops serving the page at once (`status_pages:write`)")
            }),
        )
        .api_route(
            "/status-pages/{page_id}/domains/{domain}/verify",
            post_with(verify, |op| {
                op.id("verifyStatusPageDomain")
                    .tag(TAG)
                    .summary("Look up the domain's TXT record and, when it holds the expected value, mark the domain verified; otherwise 409 `DOMAIN_NOT_VERIFIED` saying what was expected and what was found (`status_pages:write`)")
                    .description(HOW)
            }),
        )
}

async fn list(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesRead>,
    Path(p): Path<PagePath>,
) -> ApiResult<Json<Vec<StatusPageDomain>>> {
    Ok(Json(domains::list(state.cx(), &caller, &p.page_id).await?))
}

async fn add(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<PagePath>,
    ApiJson(body): ApiJson<AddDomain>,
) -> ApiResult<Created<StatusPageDomain>> {
    Ok(Created(
        domains::add(state.cx(), &caller, &p.page_id, body).await?,
    ))
}

async fn verify(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<DomainPath>,
) -> ApiResult<Json<StatusPageDomain>> {
    Ok(Json(
        domains::verify(state.cx(), &caller, &p.page_id, &p.domain).await?,
    ))
}

async fn delete(
    State(state): State<AppState>,
    caller: Auth<caps::StatusPagesWrite>,
    Path(p): Path<DomainPath>,
) -> ApiResult<NoContent> {
    domains::delete(state.cx(), &caller, &p.page_id, &p.domain).await?;
    Ok(NoContent)
}
