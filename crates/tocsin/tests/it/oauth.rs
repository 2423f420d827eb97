//! The OAuth 2.1 authorization server for MCP clients end to end, on a real server: discovery
//! documents, dynamic client registration (public and confidential, redirect URI rules, the
//! rate limit), the authorization code flow with PKCE through the sign-in redirect, the
//! consent POST and the token endpoint, refresh rotation and reuse revoking the grant, the
//! revocation endpoint, code expiry and reuse, scope narrowing and the role's ceiling, access
//! tokens refused on REST and resolved for `/mcp`, and the MCP grants routes.

#![allow(clippy::unwrap_used)]

use crate::common;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::{expect_error, json_of, Bearer, TestServer};
use reqwest::redirect::Policy;
use reqwest::{Client, Method, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// A signed-in person whose client does not follow redirects (to read the authorize answers).
struct Person {
    client: Client,
    base: String,
    user_id: String,
    workspace_id: String,
}

impl Person {
    async fn sign_up(srv: &TestServer, email: &str) -> Person {
        let client = Client::builder()
            .cookie_store(true)
            .redirect(Policy::none())
            .default_headers({
                let mut h = reqwest::header::HeaderMap::new();
                h.insert(reqwest::header::ORIGIN, srv.base.parse().unwrap());
                h
            })
            .build()
            .unwrap();
        let res = client
            .post(srv.url("/auth/sign-up/email"))
            .json(&json!({"email": email, "password": "correct horse battery", "name": "P"}))
            .send()
            .await
            .unwrap();
        let body = json_of(res, 200).await;
        Person {
            client,
            base: srv.base.clone(),
            user_id: body["user"]["id"].as_str().unwrap().into(),
            workspace_id: body["workspace"]["id"].as_str().unwrap().into(),
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }
}

fn pkce() -> (String, String) {
    let verifier = format!(
        "{}{}",
        uuid::Uuid::now_v7().simple(),
        uuid::Uuid::now_v7().simple()
    );
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn query_of(url: &str) -> Vec<(String, String)> {
    let full = if url.starts_with('/') {
        format!("http://x{url}")
    } else {
        url.to_string()
    };
    url::Url::parse(&full)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn param(url: &str, name: &str) -> Option<String> {
    query_of(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

fn location(res: &Response) -> String {
    assert_eq!(res.status().as_u16(), 302, "expected a redirect");
    res.headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

async fn post_form(srv: &TestServer, path: &str, pairs: &[(&str, &str)]) -> Response {
    post_form_auth(srv, path, pairs, None).await
}

async fn post_form_auth(
    srv: &TestServer,
    path: &str,
    pairs: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> Response {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let mut req = Client::new()
        .post(srv.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some((id, secret)) = basic {
        req = req.basic_auth(id, Some(secret));
    }
    req.send().await.unwrap()
}

async fn register(srv: &TestServer, body: Value) -> Response {
    Client::new()
        .post(srv.url("/auth/oauth2/register"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn public_client(srv: &TestServer) -> String {
    let res = register(
        srv,
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "Test agent", "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
    )
    .await;
    json_of(res, 201).await["client_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn authorize_path(client_id: &str, challenge: &str, scope: &str, state: &str) -> String {
    let q = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("scope", scope)
        .append_pair("state", state)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .finish();
    format!("/auth/oauth2/authorize?{q}")
}

/// Authorize (with the session) and consent; returns the consent answer's redirect URI.
async fn consent_with(
    srv: &TestServer,
    p: &Person,
    client_id: &str,
    challenge: &str,
    scope: &str,
    consent: Value,
) -> Response {
    let _ = srv;
    let res = p
        .call(
            Method::GET,
            &authorize_path(client_id, challenge, scope, "st-123"),
            None,
        )
        .await;
    let to = location(&res);
    assert!(to.starts_with("/app/oauth/consent?"), "{to}");
    assert_eq!(param(&to, "client_id").as_deref(), Some(client_id));
    let code = param(&to, "consent_code").unwrap();
    let mut body = consent;
    body["consent_code"] = json!(code);
    p.call(Method::POST, "/auth/oauth2/consent", Some(body))
        .await
}

/// The whole flow up to an authorization code: (code, state).
async fn code_for(
    srv: &TestServer,
    p: &Person,
    client_id: &str,
    challenge: &str,
    scope: &str,
) -> String {
    let res = consent_with(srv, p, client_id, challenge, scope, json!({"accept": true})).await;
    let answer = json_of(res, 200).await;
    let to = answer["redirectURI"].as_str().unwrap();
    assert!(to.starts_with(REDIRECT), "{to}");
    assert_eq!(param(to, "state").as_deref(), Some("st-123"));
    param(to, "code").unwrap()
}

async fn exchange(srv: &TestServer, client_id: &str, code: &str, verifier: &str) -> Response {
    post_form(
        srv,
        "/auth/oauth2/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("client_id", client_id),
        ],
    )
    .await
}

async fn refresh(srv: &TestServer, client_id: &str, token: &str) -> Response {
    post_form(
        srv,
        "/auth/oauth2/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", client_id),
        ],
    )
    .await
}

async fn oauth_error(res: Response, status: u16, error: &str) {
    let got = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{body}");
    assert_eq!(body["error"], error, "{body}");
    assert!(body["error_description"].is_string(), "{body}");
}

/// Resolves an access token as the `/mcp` auth step does.
async fn on_mcp(srv: &TestServer, token: &str) -> Result<tocsin::auth::Caller, String> {
    let now = srv.state.clock().now_ms();
    tocsin::auth::oauth::authenticate_access_token(
        srv.state.cx(),
        srv.state.oauth_tokens(),
        token,
        now,
        None,
        None,
    )
    .await
    .map_err(|e| e.code().to_string())
}

async fn audit_actions(p: &Person) -> Vec<String> {
    let all = json_of(p.call(Method::GET, "/audit-log", None).await, 200).await;
    all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn discovery_documents() {
    let srv = TestServer::start().await;
    let c = Client::new();
    let meta = json_of(
        c.get(srv.url("/.well-known/oauth-authorization-server/auth"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let base = &srv.base;
    assert_eq!(meta["issuer"], format!("{base}/auth"));
    assert_eq!(
        meta["authorization_endpoint"],
        format!("{base}/auth/oauth2/authorize")
    );
    assert_eq!(meta["token_endpoint"], format!("{base}/auth/oauth2/token"));
    assert_eq!(
        meta["registration_endpoint"],
        format!("{base}/auth/oauth2/register")
    );
    assert_eq!(
        meta["revocation_endpoint"],
        format!("{base}/auth/oauth2/revoke")
    );
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["response_types_supported"], json!(["code"]));
    assert_eq!(
        meta["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(
        meta["token_endpoint_auth_methods_supported"],
        json!(["none", "client_secret_basic", "client_secret_post"])
    );
    let scopes: Vec<&str> = meta["scopes_supported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(scopes.len(), 17);
    assert!(scopes.contains(&"monitors:read") && scopes.contains(&"identity:read"));
    assert!(!scopes.contains(&"audit:read"));

    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let pr = json_of(c.get(srv.url(path)).send().await.unwrap(), 200).await;
        assert_eq!(pr["resource"], format!("{base}/mcp"));
        assert_eq!(pr["authorization_servers"], json!([format!("{base}/auth")]));
        assert_eq!(pr["scopes_supported"].as_array().unwrap().len(), 17);
    }
    srv.stop().await;
}

#[tokio::test]
async fn registration_of_public_and_confidential_clients() {
    let srv = TestServer::start().await;
    // Public.
    let res = register(
        &srv,
        json!({"redirect_uris": [REDIRECT, "https://agent.example.com/cb"], "token_endpoint_auth_method": "none", "client_name": "Agent", "unknown_field": 1}),
    )
    .await;
    assert_eq!(res.headers().get("cache-control").unwrap(), "no-store");
    let public = json_of(res, 201).await;
    assert!(public["client_id"]
        .as_str()
        .unwrap()
        .starts_with("mcp_client_"));
    assert!(public.get("client_secret").is_none(), "{public}");
    assert_eq!(public["token_endpoint_auth_method"], "none");
    assert_eq!(public["client_name"], "Agent");
    assert_eq!(public["redirect_uris"].as_array().unwrap().len(), 2);

    // Confidential: a secret, shown once; the token endpoint wants it.
    let conf = json_of(
        register(
            &srv,
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"}),
        )
        .await,
        201,
    )
    .await;
    let id = conf["client_id"].as_str().unwrap();
    let secret = conf["client_secret"].as_str().unwrap();
    assert!(secret.starts_with("mcp_cs_") && secret.len() > 40);
    assert_eq!(conf["client_secret_expires_at"], 0);
    let p = Person::sign_up(&srv, "ada@example.com").await;
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, id, &challenge, "monitors:read").await;
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ];
    oauth_error(
        post_form_auth(
            &srv,
            "/auth/oauth2/token",
            &pairs,
            Some((id, "mcp_cs_wrong")),
        )
        .await,
        401,
        "invalid_client",
    )
    .await;
    let mut without = pairs.to_vec();
    without.push(("client_id", id));
    oauth_error(
        post_form(&srv, "/auth/oauth2/token", &without).await,
        401,
        "invalid_client",
    )
    .await;
    let ok = json_of(
        post_form_auth(&srv, "/auth/oauth2/token", &pairs, Some((id, secret))).await,
        200,
    )
    .await;
    assert!(ok["access_token"].as_str().unwrap().starts_with("mcp_at_"));

    // client_secret_post works too.
    let post_client = json_of(
        register(
            &srv,
            json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"}),
        )
        .await,
        201,
    )
    .await;
    let pid = post_client["client_id"].as_str().unwrap();
    let psecret = post_client["client_secret"].as_str().unwrap();
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, pid, &challenge, "monitors:read").await;
    json_of(
        post_form(
            &srv,
            "/auth/oauth2/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &verifier),
                ("client_id", pid),
                ("client_secret", psecret),
            ],
        )
        .await,
        200,
    )
    .await;

    // Bad redirect URIs and metadata.
    for bad in [
        json!({"redirect_uris": ["http://agent.example.com/cb"]}),
        json!({"redirect_uris": ["https://agent.example.com/cb#frag"]}),
        json!({"redirect_uris": ["javascript:alert(1)"]}),
        json!({"redirect_uris": ["/relative"]}),
        json!({"redirect_uris": []}),
        json!({"client_name": "no uris"}),
    ] {
        oauth_error(register(&srv, bad).await, 400, "invalid_redirect_uri").await;
    }
    for bad in [
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"}),
        json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
        json!({"redirect_uris": [REDIRECT], "response_types": ["token"]}),
        json!({"redirect_uris": [REDIRECT], "scope": "monitors:read audit:read"}),
    ] {
        oauth_error(register(&srv, bad).await, 400, "invalid_client_metadata").await;
    }
    let res = Client::new()
        .post(srv.url("/auth/oauth2/register"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    oauth_error(res, 400, "invalid_client_metadata").await;
    srv.stop().await;
}

#[tokio::test]
async fn registration_is_rate_limited_per_address() {
    let srv = TestServer::start().await;
    let limit = tocsin::auth::rate_limit::OAUTH_REGISTER_PER_MINUTE;
    for _ in 0..limit {
        public_client(&srv).await;
    }
    let res = register(
        &srv,
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
    )
    .await;
    let retry = res
        .headers()
        .get("retry-after")
        .unwrap()
        .to_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    assert!((1..=60).contains(&retry));
    expect_error(res, 429, "RATE_LIMITED").await;
    srv.stop().await;
}

#[tokio::test]
async fn code_flow_with_pkce_refresh_rotation_and_reuse_revoking_the_grant() {
    let srv = TestServer::start().await;
    let client_id = public_client(&srv).await;
    let p = Person::sign_up(&srv, "ada@example.com").await;
    let (verifier, challenge) = pkce();
    let scope = "monitors:read monitors:write identity:read";

    // Without a session: to the sign-in page, which comes back to this very URL.
    let path = authorize_path(&client_id, &challenge, scope, "st-123");
    let anon = Client::builder().redirect(Policy::none()).build().unwrap();
    let res = anon.get(srv.url(&path)).send().await.unwrap();
    let to = location(&res);
    assert!(to.starts_with("/app/sign-in?next="), "{to}");
    assert_eq!(param(&to, "next").as_deref(), Some(path.as_str()));

    // With it: the consent page, then the code.
    let code = code_for(&srv, &p, &client_id, &challenge, scope).await;

    // A wrong verifier is refused (and does not spend the code).
    let (other_verifier, _) = pkce();
    oauth_error(
        exchange(&srv, &client_id, &code, &other_verifier).await,
        400,
        "invalid_grant",
    )
    .await;
    // A different redirect_uri too.
    oauth_error(
        post_form(
            &srv,
            "/auth/oauth2/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", "http://127.0.0.1:1/other"),
                ("code_verifier", &verifier),
                ("client_id", &client_id),
            ],
        )
        .await,
        400,
        "invalid_grant",
    )
    .await;

    let res = exchange(&srv, &client_id, &code, &verifier).await;
    assert_eq!(res.headers().get("cache-control").unwrap(), "no-store");
    let t1 = json_of(res, 200).await;
    assert_eq!(t1["token_type"], "Bearer");
    assert_eq!(t1["expires_in"], 3600);
    assert_eq!(t1["scope"], scope);
    let access1 = t1["access_token"].as_str().unwrap().to_string();
    let refresh1 = t1["refresh_token"].as_str().unwrap().to_string();
    assert!(refresh1.starts_with("mcp_rt_"));

    // Access tokens are for /mcp only: REST says 403 SURFACE_NOT_ALLOWED; an unknown one 401.
    let rest = Bearer::new(&srv.base, &access1);
    expect_error(
        rest.call(Method::GET, "/monitors", None).await,
        403,
        "SURFACE_NOT_ALLOWED",
    )
    .await;
    let fake = Bearer::new(&srv.base, "mcp_at_notatoken");
    expect_error(
        fake.call(Method::GET, "/monitors", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;

    // On /mcp the token is the person in their workspace with the granted scopes only.
    let caller = on_mcp(&srv, &access1).await.unwrap();
    assert_eq!(caller.user_id, p.user_id);
    assert_eq!(caller.workspace_id, p.workspace_id);
    let caps: Vec<&str> = caller.caps.to_vec().iter().map(|c| c.as_str()).collect();
    assert_eq!(caps, ["monitors:read", "monitors:write", "identity:read"]);
    assert!(caller.require::<tocsin::auth::caps::MonitorsRead>().is_ok());
    assert!(caller
        .require::<tocsin::auth::caps::MonitorsDelete>()
        .is_err());

    // The grant is listed, exactly the spec's item, with lastUsedAt recorded.
    let mut grants = Value::Null;
    for _ in 0..50 {
        grants = json_of(p.call(Method::GET, "/mcp/grants", None).await, 200).await;
        if !grants[0]["lastUsedAt"].is_null() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let list = grants.as_array().unwrap();
    assert_eq!(list.len(), 1);
    let mut keys: Vec<&String> = list[0].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "clientId",
            "createdAt",
            "id",
            "lastUsedAt",
            "scopes",
            "updatedAt"
        ]
    );
    assert_eq!(list[0]["clientId"], client_id.as_str());
    assert_eq!(
        list[0]["scopes"],
        json!(["monitors:read", "monitors:write", "identity:read"])
    );
    assert!(list[0]["lastUsedAt"].is_string(), "{grants}");

    // The code was single-use: a second exchange fails and revokes what it issued.
    // (Checked on a second grant below, so this one can go on to refresh.)

    // Refresh rotates both tokens.
    let t2 = json_of(refresh(&srv, &client_id, &refresh1).await, 200).await;
    let refresh2 = t2["refresh_token"].as_str().unwrap().to_string();
    let access2 = t2["access_token"].as_str().unwrap().to_string();
    assert_ne!(refresh2, refresh1);
    assert_ne!(access2, access1);
    assert_eq!(t2["scope"], scope);
    assert!(on_mcp(&srv, &access2).await.is_ok());
    // Widening on refresh is refused.
    oauth_error(
        post_form(
            &srv,
            "/auth/oauth2/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh2),
                ("client_id", &client_id),
                ("scope", "monitors:delete"),
            ],
        )
        .await,
        400,
        "invalid_scope",
    )
    .await;

    // Reusing the spent refresh token revokes the whole grant: every token stops.
    oauth_error(
        refresh(&srv, &client_id, &refresh1).await,
        400,
        "invalid_grant",
    )
    .await;
    oauth_error(
        refresh(&srv, &client_id, &refresh2).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(on_mcp(&srv, &access2).await.unwrap_err(), "UNAUTHORIZED");
    assert_eq!(on_mcp(&srv, &access1).await.unwrap_err(), "UNAUTHORIZED");
    let grants = json_of(p.call(Method::GET, "/mcp/grants", None).await, 200).await;
    assert_eq!(grants, json!([]));
    let actions = audit_actions(&p).await;
    assert!(
        actions.contains(&"mcp_grant.create".to_string()),
        "{actions:?}"
    );
    assert!(
        actions.contains(&"mcp_grant.revoke_refresh_reuse".to_string()),
        "{actions:?}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn codes_are_single_use_and_expire_after_60_seconds() {
    let (srv, clock) = TestServer::with_clock(1_800_000_000_000).await;
    let client_id = public_client(&srv).await;
    let p = Person::sign_up(&srv, "ada@example.com").await;

    // Reuse: the second exchange fails, and the tokens of the first stop.
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, &client_id, &challenge, "monitors:read").await;
    let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    assert!(on_mcp(&srv, access).await.is_ok());
    oauth_error(
        exchange(&srv, &client_id, &code, &verifier).await,
        400,
        "invalid_grant",
    )
    .await;
    assert!(on_mcp(&srv, access).await.is_err());
    oauth_error(
        refresh(&srv, &client_id, t["refresh_token"].as_str().unwrap()).await,
        400,
        "invalid_grant",
    )
    .await;

    // Expiry: 60 s.
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, &client_id, &challenge, "monitors:read").await;
    clock.advance_ms(61_000);
    oauth_error(
        exchange(&srv, &client_id, &code, &verifier).await,
        400,
        "invalid_grant",
    )
    .await;
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, &client_id, &challenge, "monitors:read").await;
    clock.advance_ms(59_000);
    let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    assert!(on_mcp(&srv, access).await.is_ok());
    // Access tokens last an hour.
    clock.advance_ms(3600 * 1000);
    assert_eq!(on_mcp(&srv, access).await.unwrap_err(), "UNAUTHORIZED");
    let t = json_of(
        refresh(&srv, &client_id, t["refresh_token"].as_str().unwrap()).await,
        200,
    )
    .await;
    assert!(on_mcp(&srv, t["access_token"].as_str().unwrap())
        .await
        .is_ok());
    srv.stop().await;
}

#[tokio::test]
async fn revocation_endpoint_and_grant_deletion() {
    let srv = TestServer::start().await;
    let client_id = public_client(&srv).await;
    let p = Person::sign_up(&srv, "ada@example.com").await;

    // Revoking an access token stops it alone.
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, &client_id, &challenge, "monitors:read").await;
    let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    let refresh_token = t["refresh_token"].as_str().unwrap();
    assert!(on_mcp(&srv, access).await.is_ok());
    let res = post_form(
        &srv,
        "/auth/oauth2/revoke",
        &[("token", access), ("client_id", &client_id)],
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(on_mcp(&srv, access).await.is_err());
    // Revoking a refresh token takes the grant with it.
    let t = json_of(refresh(&srv, &client_id, refresh_token).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    let res = post_form(
        &srv,
        "/auth/oauth2/revoke",
        &[
            ("token", t["refresh_token"].as_str().unwrap()),
            ("token_type_hint", "refresh_token"),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(on_mcp(&srv, access).await.is_err());
    oauth_error(
        refresh(&srv, &client_id, t["refresh_token"].as_str().unwrap()).await,
        400,
        "invalid_grant",
    )
    .await;
    // Unknown tokens answer the same (RFC 7009); a missing token is a bad request.
    let res = post_form(
        &srv,
        "/auth/oauth2/revoke",
        &[("token", "mcp_rt_nothing"), ("client_id", &client_id)],
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    oauth_error(
        post_form(&srv, "/auth/oauth2/revoke", &[("client_id", &client_id)]).await,
        400,
        "invalid_request",
    )
    .await;

    // Deleting a grant from the list revokes it.
    let (verifier, challenge) = pkce();
    let code = code_for(&srv, &p, &client_id, &challenge, "monitors:read").await;
    let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    assert!(on_mcp(&srv, access).await.is_ok());
    let grants = json_of(p.call(Method::GET, "/mcp/grants", None).await, 200).await;
    assert_eq!(grants.as_array().unwrap().len(), 1);
    let id = grants[0]["id"].as_str().unwrap();

    // Session only: a personal access token may not list or delete grants.
    let ada = srv.sign_up("bob@example.com").await;
    let key = ada.token(&["monitors:read"]).await;
    let bearer = Bearer::new(&srv.base, &key);
    expect_error(
        bearer.call(Method::GET, "/mcp/grants", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    // Someone else's grant is not found.
    expect_error(
        ada.call(Method::DELETE, &format!("/mcp/grants/{id}"), None)
            .await,
        404,
        "MCP_GRANT_NOT_FOUND",
    )
    .await;

    let res = p
        .call(Method::DELETE, &format!("/mcp/grants/{id}"), None)
        .await;
    assert_eq!(res.status().as_u16(), 204);
    assert!(on_mcp(&srv, access).await.is_err());
    oauth_error(
        refresh(&srv, &client_id, t["refresh_token"].as_str().unwrap()).await,
        400,
        "invalid_grant",
    )
    .await;
    expect_error(
        p.call(Method::DELETE, &format!("/mcp/grants/{id}"), None)
            .await,
        404,
        "MCP_GRANT_NOT_FOUND",
    )
    .await;
    assert_eq!(
        json_of(p.call(Method::GET, "/mcp/grants", None).await, 200).await,
        json!([])
    );
    let actions = audit_actions(&p).await;
    assert!(
        actions.contains(&"mcp_grant.delete".to_string()),
        "{actions:?}"
    );
    assert!(
        actions.contains(&"mcp_grant.revoke".to_string()),
        "{actions:?}"
    );
    srv.stop().await;
}

#[tokio::test]
async fn scope_narrowing_refusal_and_the_role_ceiling() {
    let srv = TestServer::start().await;
    let client_id = public_client(&srv).await;
    let p = Person::sign_up(&srv, "ada@example.com").await;

    // The person narrows the scopes on the consent page.
    let (verifier, challenge) = pkce();
    let res = consent_with(
        &srv,
        &p,
        &client_id,
        &challenge,
        "monitors:read monitors:write incidents:read",
        json!({"accept": true, "scope": "incidents:read monitors:read"}),
    )
    .await;
    let to = json_of(res, 200).await["redirectURI"]
        .as_str()
        .unwrap()
        .to_string();
    let code = param(&to, "code").unwrap();
    let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
    assert_eq!(t["scope"], "monitors:read incidents:read");
    let caller = on_mcp(&srv, t["access_token"].as_str().unwrap())
        .await
        .unwrap();
    assert!(!caller
        .caps
        .contains(tocsin::auth::Capability::MonitorsWrite));

    // Widening on the consent page is refused.
    let (_, challenge) = pkce();
    let res = consent_with(
        &srv,
        &p,
        &client_id,
        &challenge,
        "monitors:read",
        json!({"accept": true, "scope": "monitors:read monitors:delete"}),
    )
    .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "scope");

    // Declining sends access_denied with the state.
    let (_, challenge) = pkce();
    let res = consent_with(
        &srv,
        &p,
        &client_id,
        &challenge,
        "monitors:read",
        json!({"accept": false}),
    )
    .await;
    let to = json_of(res, 200).await["redirectURI"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(to.starts_with(REDIRECT));
    assert_eq!(param(&to, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&to, "state").as_deref(), Some("st-123"));
    assert!(param(&to, "code").is_none());

    // The ceiling: even an owner's grant never carries a session-only capability.
    let res = p
        .call(
            Method::GET,
            &authorize_path(&client_id, &challenge, "monitors:read audit:read", "s2"),
            None,
        )
        .await;
    let to = location(&res);
    assert!(to.starts_with(REDIRECT), "{to}");
    assert_eq!(param(&to, "error").as_deref(), Some("invalid_scope"));
    assert_eq!(param(&to, "state").as_deref(), Some("s2"));

    // A grant follows its person's membership: a member who leaves loses it at once.
    let owner = srv.sign_up("owner@example.com").await;
    let inv = json_of(
        owner
            .call(
                Method::POST,
                "/workspace/invitations",
                Some(json!({"email": "bob@example.com", "role": "member"})),
            )
            .await,
        201,
    )
    .await;
    let bob = Person::sign_up(&srv, "bob@example.com").await;
    srv.verify_email("bob@example.com").await;
    let url = inv["acceptUrl"].as_str().unwrap();
    let token = url.split("token=").nth(1).unwrap().to_string();
    {
        json_of(
            bob.call(
                Method::POST,
                "/invitations/accept",
                Some(json!({"token": token})),
            )
            .await,
            200,
        )
        .await;
        let (verifier, challenge) = pkce();
        let code = code_for(&srv, &bob, &client_id, &challenge, "monitors:read").await;
        let t = json_of(exchange(&srv, &client_id, &code, &verifier).await, 200).await;
        let access = t["access_token"].as_str().unwrap();
        let c = on_mcp(&srv, access).await.unwrap();
        assert_eq!(c.workspace_id, owner.workspace_id);
        let res = owner
            .call(
                Method::DELETE,
                &format!("/workspace/members/{}", bob.user_id),
                None,
            )
            .await;
        assert!(res.status().is_success(), "{}", res.status());
        assert_eq!(on_mcp(&srv, access).await.unwrap_err(), "UNAUTHORIZED");
        // Revoked, not suspended: the refresh token mints nothing, and the grant is gone from
        // the person's list...
        let refresh_token = t["refresh_token"].as_str().unwrap();
        oauth_error(
            refresh(&srv, &client_id, refresh_token).await,
            400,
            "invalid_grant",
        )
        .await;
        // ...and joining again brings none of it back.
        let again = json_of(
            owner
                .call(
                    Method::POST,
                    "/workspace/invitations",
                    Some(json!({"email": "bob@example.com", "role": "member"})),
                )
                .await,
            201,
        )
        .await;
        let url = again["acceptUrl"].as_str().unwrap();
        let token = url.split("token=").nth(1).unwrap().to_string();
        let ws = json_of(
            bob.call(
                Method::POST,
                "/invitations/accept",
                Some(json!({"token": token})),
            )
            .await,
            200,
        )
        .await;
        assert_eq!(ws["id"], owner.workspace_id.as_str());
        assert_eq!(on_mcp(&srv, access).await.unwrap_err(), "UNAUTHORIZED");
        oauth_error(
            refresh(&srv, &client_id, refresh_token).await,
            400,
            "invalid_grant",
        )
        .await;
        let grants = json_of(bob.call(Method::GET, "/mcp/grants", None).await, 200).await;
        assert_eq!(grants, json!([]), "{grants}");
    }
    srv.stop().await;
}

#[tokio::test]
async fn authorize_errors_and_consent_guards() {
    let srv = TestServer::start().await;
    let client_id = public_client(&srv).await;
    let p = Person::sign_up(&srv, "ada@example.com").await;
    let (_, challenge) = pkce();

    // The client or redirect URI cannot be trusted: an HTML page, never a redirect.
    for path in [
        authorize_path("mcp_client_unknown", &challenge, "monitors:read", "s"),
        authorize_path(&client_id, &challenge, "monitors:read", "s")
            .replace("33418%2Fcallback", "33418%2Fevil"),
    ] {
        let res = p.call(Method::GET, &path, None).await;
        assert_eq!(res.status().as_u16(), 400, "{path}");
        let ct = res
            .headers()
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(ct.starts_with("text/html"), "{ct}");
        assert!(res.text().await.unwrap().contains("cannot be completed"));
    }
    // A loopback redirect URI may use any port (RFC 8252).
    let other_port =
        authorize_path(&client_id, &challenge, "monitors:read", "s").replace("33418", "40001");
    let to = location(&p.call(Method::GET, &other_port, None).await);
    assert!(to.starts_with("/app/oauth/consent?"), "{to}");

    // Other errors go back to the client with the state.
    let base = authorize_path(&client_id, &challenge, "monitors:read", "s9");
    for (path, error) in [
        (
            base.replace("code_challenge_method=S256", "code_challenge_method=plain"),
            "invalid_request",
        ),
        (base.replace(&challenge, ""), "invalid_request"),
        (
            base.replace("response_type=code", "response_type=token"),
            "unsupported_response_type",
        ),
        (
            base.replace("scope=monitors%3Aread", "scope=nothing"),
            "invalid_scope",
        ),
        (
            format!("{base}&resource=https%3A%2F%2Fother.example.com%2Fmcp"),
            "invalid_target",
        ),
    ] {
        let to = location(&p.call(Method::GET, &path, None).await);
        assert!(to.starts_with(REDIRECT), "{to}");
        assert_eq!(param(&to, "error").as_deref(), Some(error), "{path}");
        assert_eq!(param(&to, "state").as_deref(), Some("s9"));
    }
    // The right resource is accepted and bound into the grant.
    let with_resource = format!(
        "{base}&resource={}",
        form_urlencoded::byte_serialize(srv.url("/mcp").as_bytes()).collect::<String>()
    );
    let to = location(&p.call(Method::GET, &with_resource, None).await);
    assert!(to.starts_with("/app/oauth/consent?"), "{to}");
    let consent_code = param(&to, "consent_code").unwrap();

    // Consent needs the session and passes the Origin check; a code answers once.
    let key = srv
        .sign_up("bob@example.com")
        .await
        .token(&["monitors:read"])
        .await;
    let res = Bearer::new(&srv.base, &key)
        .call(
            Method::POST,
            "/auth/oauth2/consent",
            Some(json!({"consent_code": consent_code, "accept": true})),
        )
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let res = p
        .client
        .post(srv.url("/auth/oauth2/consent"))
        .header("origin", "https://evil.example.com")
        .json(&json!({"consent_code": consent_code, "accept": true}))
        .send()
        .await
        .unwrap();
    expect_error(res, 403, "INVALID_ORIGIN").await;
    json_of(
        p.call(
            Method::POST,
            "/auth/oauth2/consent",
            Some(json!({"consent_code": consent_code, "accept": true})),
        )
        .await,
        200,
    )
    .await;
    let body = expect_error(
        p.call(
            Method::POST,
            "/auth/oauth2/consent",
            Some(json!({"consent_code": consent_code, "accept": true})),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["field"], "consent_code");

    // The token endpoint's own errors.
    oauth_error(
        post_form(
            &srv,
            "/auth/oauth2/token",
            &[("grant_type", "password"), ("client_id", &client_id)],
        )
        .await,
        400,
        "unsupported_grant_type",
    )
    .await;
    oauth_error(
        post_form(
            &srv,
            "/auth/oauth2/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", "mcp_client_nobody"),
                ("code", "x"),
                ("code_verifier", "y"),
            ],
        )
        .await,
        401,
        "invalid_client",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn a_grant_revoked_on_one_node_stops_on_the_other_at_once() {
    let a = TestServer::start().await;
    // Two nodes share a database on PostgreSQL only.
    let Some(b) = a.start_beside(common::Options::default()).await else {
        a.stop().await;
        return;
    };
    let mut on_b = b.state.feed().subscribe_all();
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while on_b.recv().await.unwrap().notice != tocsin::cluster::feed::Notice::Resync {}
    })
    .await
    .unwrap();
    let client_id = public_client(&a).await;
    let p = Person::sign_up(&a, "ada@example.com").await;
    let (verifier, challenge) = pkce();
    let code = code_for(&a, &p, &client_id, &challenge, "monitors:read").await;
    let t = json_of(exchange(&a, &client_id, &code, &verifier).await, 200).await;
    let access = t["access_token"].as_str().unwrap();
    // Node b now holds the token in memory.
    assert!(on_mcp(&b, access).await.is_ok());
    let grants = json_of(p.call(Method::GET, "/mcp/grants", None).await, 200).await;
    let id = grants[0]["id"].as_str().unwrap();
    let res = p
        .call(Method::DELETE, &format!("/mcp/grants/{id}"), None)
        .await;
    assert_eq!(res.status().as_u16(), 204);
    // Well within the cache's 5 s lifetime: only the feed's notice can have dropped it.
    let started = std::time::Instant::now();
    while on_mcp(&b, access).await.is_ok() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "node b still accepts a revoked grant's token"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    b.stop().await;
    a.stop().await;
}
