//! The `mcp-get-monitor` scenarios: `tools/call` of `get_monitor` on `/mcp`, as an agent
//! reading one monitor repeatedly, with an OAuth access token (`mcp-get-monitor-oauth`: the
//! grant made by the authorization server's own steps, sign-in, authorize with PKCE, consent
//! and the code exchange) or a personal access token for the `mcp` surface. Requests use
//! the stateless form of the current protocol revision (`2026-07-28`: the version and client
//! capabilities in each request's `_meta`, no session), so every connection can repeat the very
//! same request.

use axum::http::{header, HeaderName, HeaderValue, Method};
use bytes::Bytes;
use serde_json::json;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::scenario::{Fixture, RequestSpec, BENCH_EMAIL, BENCH_PASSWORD};
use tocsin::domain::monitors::{self, CreateMonitor};
use tocsin::server::AppState;

const PROTOCOL: &str = "2026-07-28";

pub async fn get_monitor(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let core = fx.state("mcp-get-monitor")?;
    // Creates the bench user on first use.
    fx.api_token().await?;
    let token =
        tocsin::domain::api_keys::mint_for_user(core.cx(), BENCH_EMAIL, "bench-mcp", "all", "mcp")
            .await?;
    call(fx, core, &token).await
}

pub async fn get_monitor_oauth(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let core = fx.state("mcp-get-monitor-oauth")?;
    fx.api_token().await?;
    let token = oauth_access_token(core).await?;
    call(fx, core, &token).await
}

/// An access token of a fresh grant to a public client, by the steps an agent and its user
/// take (each a domain operation the OAuth routes call).
async fn oauth_access_token(core: &AppState) -> anyhow::Result<String> {
    use tocsin::domain::oauth;
    let fail = |step: &str, e: &dyn std::fmt::Debug| anyhow::anyhow!("bench OAuth {step}: {e:?}");
    let meta = tocsin::domain::users::ClientMeta {
        ip: None,
        user_agent: None,
    };
    let (_, session) = tocsin::domain::users::sign_in(
        core.cx(),
        tocsin::domain::users::SignIn {
            email: BENCH_EMAIL.into(),
            password: BENCH_PASSWORD.into(),
        },
        &meta,
    )
    .await?;
    let now = core.clock().now_ms();
    let person =
        tocsin::auth::caller::authenticate_session(core.cx(), &session, now, None, None).await?;
    let redirect = "http://127.0.0.1:9/callback";
    let client: oauth::ClientMetadata = serde_json::from_value(json!({
        "redirect_uris": [redirect],
        "token_endpoint_auth_method": "none",
        "client_name": "bench agent"
    }))?;
    let client = oauth::register(core.cx(), client)
        .await
        .map_err(|e| fail("register", &e))?;
    let verifier = "bench-verifier-0123456789-0123456789-0123456789";
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let query = oauth::AuthorizeQuery {
        response_type: Some("code".into()),
        client_id: Some(client.client_id.clone()),
        redirect_uri: Some(redirect.into()),
        scope: Some("monitors:read".into()),
        state: Some("bench".into()),
        code_challenge: Some(challenge),
        code_challenge_method: Some("S256".into()),
        resource: None,
    };
    let oauth::Authorized::Consent { consent_code, .. } =
        oauth::authorize(core.cx(), Some(&person), &query)
            .await
            .map_err(|e| fail("authorize", &e))?
    else {
        anyhow::bail!("bench OAuth authorize: asked to sign in with a session");
    };
    let answer = oauth::consent(
        core.cx(),
        &person,
        oauth::Consent {
            consent_code,
            accept: true,
            scope: None,
        },
    )
    .await?;
    let code = url::Url::parse(&answer.redirect_uri)?
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| {
            anyhow::anyhow!("bench OAuth consent: no code in {}", answer.redirect_uri)
        })?;
    let form = oauth::TokenForm {
        grant_type: Some("authorization_code".into()),
        code: Some(code),
        redirect_uri: Some(redirect.into()),
        code_verifier: Some(verifier.into()),
        refresh_token: None,
        scope: None,
        resource: None,
        client_id: Some(client.client_id.clone()),
        client_secret: None,
    };
    let auth = oauth::ClientAuth {
        basic: None,
        form_id: Some(client.client_id),
        form_secret: None,
    };
    let tokens = oauth::token(core.cx(), form, auth, None, None)
        .await
        .map_err(|e| fail("token", &e))?;
    Ok(tokens.access_token)
}

/// The request: a paused monitor (the scenario measures the read, not checks of a target that
/// does not exist), made with the bench's REST token, read with `token`.
async fn call(fx: &Fixture, core: &AppState, token: &str) -> anyhow::Result<RequestSpec> {
    let now = core.clock().now_ms();
    let rest = fx.api_token().await?;
    let app = fx.app("mcp-get-monitor")?;
    let authenticate = |token, surface| {
        tocsin::auth::caller::authenticate_key(
            core.cx(),
            app.token_caches(),
            token,
            now,
            None,
            None,
            surface,
        )
    };
    let caller = authenticate(rest, "rest").await?;
    let input: CreateMonitor = serde_json::from_value(json!({
        "name": "bench-mcp", "type": "HTTP", "url": "http://127.0.0.1:9/", "active": false
    }))?;
    let monitor = monitors::create(core.cx(), &caller, &input).await?;
    // The measured token may read it: the calls are answered with the monitor, not a tool
    // error (which would be a 200 as well, and cheaper).
    let agent = authenticate(token, "mcp").await?;
    monitors::get(core.cx(), &agent, &monitor.id).await?;
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "get_monitor",
            "arguments": {"monitorId": monitor.id},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    RequestSpec {
        method: Method::POST,
        path: "/mcp".into(),
        rotate: None,
        bodies: None,
        headers: vec![
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                header::ACCEPT,
                HeaderValue::from_static("application/json, text/event-stream"),
            ),
            (
                HeaderName::from_static("mcp-protocol-version"),
                HeaderValue::from_static(PROTOCOL),
            ),
            // The revision's standard headers repeat the method and the tool's name.
            (
                HeaderName::from_static("mcp-method"),
                HeaderValue::from_static("tools/call"),
            ),
            (
                HeaderName::from_static("mcp-name"),
                HeaderValue::from_static("get_monitor"),
            ),
        ],
        body: Bytes::from(serde_json::to_vec(&body)?),
    }
    .bearer(token)
}
