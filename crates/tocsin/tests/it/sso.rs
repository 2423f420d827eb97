//! Single sign-on through a real OpenID provider: panva's certified `oidc-provider` on a
//! loopback port (`oidc/provider.mjs`; `npm ci` runs in `oidc/` the first time a test needs
//! it), one per test, with a browser played by a cookie-keeping client that follows each
//! redirect itself. Sign-in lands on `next` and finds the same person again; linking by a
//! verified email only; a provider's new users join its workspace as viewers who can change
//! nothing (REST and MCP); forged, replayed and tampered answers sign nobody in; the provider
//! rotating its keys is followed; `requireSso` refuses members' passwords and not owners';
//! a provider stopped mid-flow gives a page; and on PostgreSQL a flow started on one node
//! finishes on another.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use reqwest::header::{HeaderMap, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::{Client, Method, Response, StatusCode};
use serde_json::{json, Value};
use tocsin::config::OidcProvider;

use crate::common::{self, expect_error, json_of, Options, TestServer, User};

const CLIENT_ID: &str = "tocsin";
const CLIENT_SECRET: &str = "tocsin-test-secret";

fn oidc_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/oidc")
}

/// Installs the provider's packages from the committed lock file, once: a file lock keeps
/// parallel tests (and test processes) from running `npm ci` together.
fn install_provider() {
    let dir = oidc_dir();
    let ready = || {
        dir.join("node_modules/oidc-provider/package.json").exists()
            && dir.join("node_modules/jose/package.json").exists()
    };
    if ready() {
        return;
    }
    let lock = std::fs::File::create(dir.join(".npm-ci.lock")).unwrap();
    lock.lock().unwrap();
    if !ready() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm (Node.js) is needed for the single sign-on tests");
        assert!(status.success(), "npm ci in {}", dir.display());
    }
}

/// A running OpenID provider.
struct Idp {
    child: Child,
    issuer: String,
    admin: Client,
}

impl Idp {
    async fn start() -> Idp {
        Idp::start_with("client_secret_basic").await
    }

    /// A provider whose discovery offers only `auth_method` at its token endpoint.
    async fn start_with(auth_method: &str) -> Idp {
        let auth_method = auth_method.to_string();
        tokio::task::spawn_blocking(move || {
            install_provider();
            let mut child = Command::new("node")
                .arg("provider.mjs")
                .current_dir(oidc_dir())
                .env("OIDC_CLIENT_ID", CLIENT_ID)
                .env("OIDC_CLIENT_SECRET", CLIENT_SECRET)
                .env("OIDC_AUTH_METHOD", &auth_method)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("node");
            let mut line = String::new();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            out.read_line(&mut line).unwrap();
            // Whatever else it says is read and dropped, so it never writes to a closed pipe.
            std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
            let issuer = line
                .trim()
                .strip_prefix("READY ")
                .unwrap_or_else(|| panic!("the provider said {line:?}"))
                .to_string();
            Idp {
                child,
                issuer,
                admin: Client::new(),
            }
        })
        .await
        .unwrap()
    }

    async fn admin(&self, method: Method, path: &str, body: Value) {
        let res = self
            .admin
            .request(method, format!("{}{path}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 204, "{path}");
    }

    /// Sets the claims of account `sub`.
    async fn account(&self, sub: &str, claims: Value) {
        self.admin(Method::PUT, &format!("/admin/accounts/{sub}"), claims)
            .await;
    }

    /// Makes the token endpoint's ID tokens re-signed with these changes (`{}`: none).
    async fn tamper(&self, how: Value) {
        self.admin(Method::POST, "/admin/tamper", how).await;
    }

    /// Replaces the signing key; the old one is no longer published.
    async fn rotate(&self) {
        self.admin(Method::POST, "/admin/rotate", json!({})).await;
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn provider(&self, workspace: Option<&str>, role: &str) -> OidcProvider {
        OidcProvider {
            id: "acme".into(),
            name: "Acme".into(),
            issuer: self.issuer.clone(),
            client_id: CLIENT_ID.into(),
            client_secret: CLIENT_SECRET.into(),
            scopes: vec!["openid".into(), "email".into(), "profile".into()],
            workspace: workspace.map(str::to_string),
            default_role: role.into(),
        }
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.stop();
    }
}

fn with_provider(p: OidcProvider) -> Options {
    Options {
        clock: None,
        tweak: Some(Box::new(move |c| c.sso = vec![p])),
    }
}

fn location(res: &Response) -> String {
    res.headers()
        .get(LOCATION)
        .unwrap_or_else(|| panic!("no Location on {}", res.status()))
        .to_str()
        .unwrap()
        .to_string()
}

/// `url` with query parameter `name` set to `value`.
fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut u = url::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = u
        .query_pairs()
        .filter(|(k, _)| k != name)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    u.query_pairs_mut()
        .clear()
        .extend_pairs(pairs)
        .append_pair(name, value);
    u.to_string()
}

fn param(url: &str, name: &str) -> String {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

/// A person's browser: one cookie jar for Tocsin and the provider, every redirect followed
/// by the test.
struct Browser {
    tocsin: Client,
    idp: Client,
}

/// A started flow: the provider's authorization URL and the flow cookie's value.
struct Started {
    authorize: String,
    flow_cookie: String,
}

impl Browser {
    fn new(base: &str) -> Browser {
        let jar = Arc::new(reqwest::cookie::Jar::default());
        let mut h = HeaderMap::new();
        h.insert(ORIGIN, base.parse().unwrap());
        Browser {
            tocsin: Client::builder()
                .cookie_provider(jar.clone())
                .redirect(reqwest::redirect::Policy::none())
                .default_headers(h)
                .build()
                .unwrap(),
            idp: Client::builder()
                .cookie_provider(jar)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    async fn start(&self, base: &str, next: &str) -> Started {
        let res = self
            .tocsin
            .get(format!("{base}/auth/sso/acme/start"))
            .query(&[("next", next)])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 302, "start");
        let flow_cookie = res
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("svc.sso_flow="))
            .map(|c| c.split(';').next().unwrap().to_string())
            .expect("the flow cookie");
        Started {
            authorize: location(&res),
            flow_cookie,
        }
    }

    /// Signs in at the provider as `login`; the callback URL it sends the browser to.
    async fn authorize(&self, url: &str, login: &str) -> String {
        let mut url = with_param(url, "login_hint", login);
        for _ in 0..10 {
            let res = self.idp.get(&url).send().await.unwrap();
            let status = res.status();
            assert!(status.is_redirection(), "provider at {url}: {status}");
            let next = url::Url::parse(&url)
                .unwrap()
                .join(&location(&res))
                .unwrap()
                .to_string();
            if next.contains("/auth/sso/") {
                return next;
            }
            url = next;
        }
        panic!("the provider never sent the browser back");
    }

    async fn get(&self, url: &str) -> Response {
        self.tocsin.get(url).send().await.unwrap()
    }

    /// The whole sign-in as `login`; the callback's response.
    async fn sign_in(&self, base: &str, next: &str, login: &str) -> Response {
        let started = self.start(base, next).await;
        let callback = self.authorize(&started.authorize, login).await;
        self.get(&callback).await
    }

    /// The session the browser holds at `base`, if any.
    async fn session(&self, base: &str) -> Option<Value> {
        let res = self.get(&format!("{base}/auth/get-session")).await;
        (res.status() == 200).then_some(res.json().await.unwrap())
    }

    /// The signed-in person, as the shared helpers take them.
    async fn user(&self, base: &str) -> User {
        let s = self.session(base).await.expect("a session");
        User {
            client: self.tocsin.clone(),
            base: base.to_string(),
            user_id: s["user"]["id"].as_str().unwrap().to_string(),
            workspace_id: s["workspace"]["id"].as_str().unwrap().to_string(),
            email: s["user"]["email"].as_str().unwrap().to_string(),
        }
    }
}

fn sets_session(res: &Response) -> bool {
    res.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|c| c.starts_with("svc.session_token=") && !c.starts_with("svc.session_token=;"))
}

/// A callback that signed the person in and sends them to `next`.
async fn landed(res: Response, next: &str) {
    if res.status() != 302 {
        panic!("{}: {}", res.status(), res.text().await.unwrap_or_default());
    }
    assert_eq!(location(&res), next);
    assert!(sets_session(&res), "a session cookie");
}

/// A refusal: an HTML page with `status` saying `words`, and no session.
async fn refused(res: Response, status: u16, words: &str) {
    assert_eq!(res.status().as_u16(), status);
    assert!(!sets_session(&res), "no session on a refusal");
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/html"), "{ct}");
    let body = res.text().await.unwrap();
    assert!(body.contains(words), "{words:?} in {body}");
}

async fn audit_actions(owner: &User) -> String {
    owner
        .call(Method::GET, "/audit-log?limit=200", None)
        .await
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn signing_in_lands_on_next_and_finds_the_same_person_again() {
    let idp = Idp::start().await;
    let srv = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;

    let list = json_of(
        Client::new()
            .get(srv.url("/auth/sso/providers"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(list, json!([{"id": "acme", "name": "Acme"}]));

    let browser = Browser::new(&srv.base);
    let res = browser
        .sign_in(&srv.base, "/app/monitors?status=down", "alice")
        .await;
    landed(res, "/app/monitors?status=down").await;
    let first = browser.user(&srv.base).await;
    assert_eq!(first.email, "alice@example.test");
    // A workspace of her own, as sign-up gives, which she owns.
    let mine = json_of(first.call(Method::GET, "/workspaces", None).await, 200).await;
    assert_eq!(mine.to_string().matches("\"owner\"").count(), 1, "{mine}");

    // Another browser, the same person.
    let again = Browser::new(&srv.base);
    landed(again.sign_in(&srv.base, "/app/", "alice").await, "/app/").await;
    let second = again.user(&srv.base).await;
    assert_eq!(second.user_id, first.user_id);
    assert_eq!(second.workspace_id, first.workspace_id);
    let audit = audit_actions(&first).await;
    assert_eq!(audit.matches("auth.sso_sign_in").count(), 2, "{audit}");

    // A `next` leading anywhere else becomes the dashboard.
    for foreign in [
        "https://evil.example/x",
        "//evil.example/x",
        "/\\evil.example",
        "app",
    ] {
        let b = Browser::new(&srv.base);
        landed(b.sign_in(&srv.base, foreign, "alice").await, "/app/").await;
    }
    // A provider this server does not have is a page, not an envelope.
    refused(
        browser.get(&srv.url("/auth/sso/nobody/start")).await,
        404,
        "no sign-in provider",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn a_first_sign_in_links_by_verified_email_only() {
    let idp = Idp::start().await;
    let srv = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;
    let bob = srv.sign_up("bob@example.test").await;
    idp.account(
        "bob-unverified",
        json!({"email": "bob@example.test", "email_verified": false, "name": "Bob?"}),
    )
    .await;
    let b = Browser::new(&srv.base);
    refused(
        b.sign_in(&srv.base, "/app/", "bob-unverified").await,
        401,
        "did not say the address is verified",
    )
    .await;
    assert!(b.session(&srv.base).await.is_none());

    idp.account(
        "bob-verified",
        json!({"email": "Bob@Example.test", "email_verified": true, "name": "Bob"}),
    )
    .await;
    // A fresh browser: the provider would otherwise keep the earlier person signed in.
    let b = Browser::new(&srv.base);
    landed(b.sign_in(&srv.base, "/app/", "bob-verified").await, "/app/").await;
    let linked = b.user(&srv.base).await;
    assert_eq!(linked.user_id, bob.user_id);
    // Linked, Bob has two ways in, and the members list says so.
    let me = json_of(
        bob.call(
            Method::GET,
            &format!("/workspace/members/{}", bob.user_id),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(me["signInMethods"], json!(["password", "sso:acme"]), "{me}");
    // The provider vouched for the address.
    assert_eq!(
        b.session(&srv.base).await.unwrap()["user"]["emailVerified"],
        true
    );

    // Without an email claim there is nobody to find or make.
    idp.account("mute", json!({"name": "Mute"})).await;
    refused(
        Browser::new(&srv.base)
            .sign_in(&srv.base, "/app/", "mute")
            .await,
        401,
        "did not share an email address",
    )
    .await;
    srv.stop().await;
}

/// A minimal MCP client: `initialize`, then `tools/call`.
async fn mcp_tool(base: &str, token: &str, name: &str, args: Value) -> Value {
    let client = Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut req = client
            .post(format!("{base}/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-06-18");
        }
        req.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "sso-test", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = init.text().await;
    let res = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(session.clone()),
    )
    .await
    .unwrap();
    assert_eq!(res.status(), 202);
    let res = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": name, "arguments": args}}),
        Some(session),
    )
    .await
    .unwrap();
    let text = res.text().await.unwrap();
    let answer: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m["id"] == json!(2))
        .unwrap_or_else(|| panic!("{text}"));
    answer["result"].clone()
}

#[tokio::test]
async fn a_providers_new_people_join_its_workspace_as_viewers_who_change_nothing() {
    let idp = Idp::start().await;
    let srv =
        TestServer::start_with(with_provider(idp.provider(Some("acme-team"), "viewer"))).await;
    let ada = srv.sign_up("ada@example.test").await;
    json_of(
        ada.call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"slug": "acme-team"})),
        )
        .await,
        200,
    )
    .await;
    let monitor =
        common::monitors::create_id(&ada, common::monitors::http_body("http://127.0.0.1:9/")).await;

    let b = Browser::new(&srv.base);
    landed(b.sign_in(&srv.base, "/app/", "dave").await, "/app/").await;
    let dave = b.user(&srv.base).await;
    assert_eq!(dave.workspace_id, ada.workspace_id);
    let members = json_of(ada.call(Method::GET, "/workspace/members", None).await, 200).await;
    let row = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["userId"] == dave.user_id.as_str() || m["id"] == dave.user_id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("dave in {members}"));
    assert_eq!(row["role"], "viewer");
    // The members list says how each person signs in: Dave through the provider only.
    assert_eq!(row["signInMethods"], json!(["sso:acme"]), "{row}");
    let owner_row = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["userId"] == ada.user_id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(owner_row["signInMethods"], json!(["password"]));
    let one = json_of(
        ada.call(
            Method::GET,
            &format!("/workspace/members/{}", dave.user_id),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(one["signInMethods"], json!(["sso:acme"]));
    let audit = audit_actions(&ada).await;
    assert!(audit.contains("member.joined_by_sso"), "{audit}");
    // A viewer reads every `*:read`, the audit log included.
    let seen = audit_actions(&dave).await;
    assert!(seen.contains("member.joined_by_sso"), "{seen}");

    // Reads work; every write is refused.
    json_of(dave.call(Method::GET, "/monitors", None).await, 200).await;
    json_of(
        dave.call(Method::GET, &format!("/monitors/{monitor}"), None)
            .await,
        200,
    )
    .await;
    json_of(dave.call(Method::GET, "/workspace", None).await, 200).await;
    for (method, path, body) in [
        (
            Method::POST,
            "/monitors".to_string(),
            Some(common::monitors::http_body("http://127.0.0.1:9/")),
        ),
        (Method::DELETE, format!("/monitors/{monitor}"), None),
        (Method::POST, format!("/monitors/{monitor}/pause"), None),
        (
            Method::POST,
            "/status-pages".to_string(),
            Some(json!({"name": "x", "slug": "xyz-page"})),
        ),
        (
            Method::PATCH,
            "/workspace/settings".to_string(),
            Some(json!({"name": "mine"})),
        ),
    ] {
        let res = dave.call(method.clone(), &path, body).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    // A viewer cannot mint a key that writes.
    let res = dave
        .call(
            Method::POST,
            "/api-keys",
            Some(json!({"name": "w", "permissions": ["monitors:write"], "surfaces": ["mcp"]})),
        )
        .await;
    common::field_error(res, "permissions.0").await;

    // A key made while Dave was a member writes nothing once he is a viewer again (MCP).
    let member_path = format!("/workspace/members/{}", dave.user_id);
    json_of(
        ada.call(Method::PATCH, &member_path, Some(json!({"role": "member"})))
            .await,
        200,
    )
    .await;
    let token = dave
        .token_on(&["monitors:read", "monitors:write"], &["mcp"])
        .await;
    json_of(
        ada.call(Method::PATCH, &member_path, Some(json!({"role": "viewer"})))
            .await,
        200,
    )
    .await;
    let created = mcp_tool(
        &srv.base,
        &token,
        "create_monitor",
        common::monitors::http_body("http://127.0.0.1:9/"),
    )
    .await;
    assert_eq!(created["isError"], true, "{created}");
    assert_eq!(
        created["structuredContent"]["code"],
        "INSUFFICIENT_CAPABILITY"
    );
    let listed = mcp_tool(&srv.base, &token, "list_monitors", json!({})).await;
    assert_eq!(listed["isError"], false, "{listed}");

    // Invitations know the role too.
    let inv = json_of(
        ada.call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "erin@example.test", "role": "viewer"})),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(inv["role"], "viewer");
    srv.stop().await;
}

#[tokio::test]
async fn forged_replayed_and_tampered_answers_sign_nobody_in() {
    let idp = Idp::start().await;
    let srv = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;
    let base = srv.base.clone();

    // A genuine sign-in, whose nonce and callback are used again below.
    let first = Browser::new(&base);
    let genuine = first.start(&base, "/app/").await;
    let genuine_nonce = param(&genuine.authorize, "nonce");
    let genuine_callback = first.authorize(&genuine.authorize, "alice").await;
    landed(first.get(&genuine_callback).await, "/app/").await;

    // The same callback again, with its flow cookie: already used (on every node).
    let replay = Client::new()
        .get(&genuine_callback)
        .header("cookie", format!("svc.sso_flow={}", genuine.flow_cookie))
        .send()
        .await
        .unwrap();
    refused(replay, 400, "already completed").await;

    // A callback whose state was changed.
    let b = Browser::new(&base);
    let s = b.start(&base, "/app/").await;
    let cb = b.authorize(&s.authorize, "alice").await;
    refused(
        b.get(&with_param(&cb, "state", "forged")).await,
        400,
        "does not belong",
    )
    .await;
    assert!(b.session(&base).await.is_none());

    // A callback in a browser that never started the flow.
    let s = b.start(&base, "/app/").await;
    let cb = b.authorize(&s.authorize, "alice").await;
    refused(
        Client::new().get(&cb).send().await.unwrap(),
        400,
        "not started in this browser",
    )
    .await;

    // An ID token carrying the nonce of an earlier sign-in.
    let b = Browser::new(&base);
    let s = b.start(&base, "/app/").await;
    let cb = b
        .authorize(&with_param(&s.authorize, "nonce", &genuine_nonce), "alice")
        .await;
    refused(b.get(&cb).await, 401, "did not pass").await;
    assert!(b.session(&base).await.is_none());

    // Tokens signed by another key, for another audience, or expired.
    for (how, status, words) in [
        (json!({"foreignKey": true}), 401, "did not pass"),
        (json!({"aud": "someone-else"}), 401, "did not pass"),
        (json!({"expired": true}), 401, "clocks"),
    ] {
        idp.tamper(how.clone()).await;
        let b = Browser::new(&base);
        refused(b.sign_in(&base, "/app/", "alice").await, status, words).await;
        assert!(b.session(&base).await.is_none(), "{how}");
    }
    idp.tamper(json!({})).await;

    // The person cancels at the provider.
    refused(
        Browser::new(&base).sign_in(&base, "/app/", "cancel").await,
        401,
        "Sign-in cancelled",
    )
    .await;

    // The provider rotates its signing key: the new key is fetched and the sign-in works.
    idp.rotate().await;
    let b = Browser::new(&base);
    landed(b.sign_in(&base, "/app/", "alice").await, "/app/").await;
    assert_eq!(b.user(&base).await.email, "alice@example.test");
    srv.stop().await;
}

#[tokio::test]
async fn require_sso_refuses_a_members_password_and_not_an_owners() {
    let idp = Idp::start_with("client_secret_post").await;
    let srv = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;
    let ada = srv.sign_up("ada@example.test").await;
    let frank = srv.sign_up("frank@example.test").await;
    srv.verify_email("frank@example.test").await;
    common::join(&ada, &frank, "admin").await;

    // Only owners change it.
    expect_error(
        frank
            .call(
                Method::PATCH,
                "/workspace/settings",
                Some(json!({"requireSso": true})),
            )
            .await,
        403,
        "OWNER_REQUIRED",
    )
    .await;
    let settings = json_of(
        ada.call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"requireSso": true})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(settings["requireSso"], true);
    let read = json_of(
        ada.call(Method::GET, "/workspace/settings", None).await,
        200,
    )
    .await;
    assert_eq!(read["requireSso"], true);

    let password = |email: &str, pw: &str| {
        Client::new()
            .post(srv.url("/auth/sign-in/email"))
            .json(&json!({"email": email, "password": pw}))
            .send()
    };
    let body = expect_error(
        password("frank@example.test", "correct horse battery")
            .await
            .unwrap(),
        403,
        "SSO_REQUIRED",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("/auth/sso/acme/start"),
        "{body}"
    );
    // A wrong password says nothing more than before.
    expect_error(
        password("frank@example.test", "wrong horse battery")
            .await
            .unwrap(),
        401,
        "INVALID_CREDENTIALS",
    )
    .await;
    json_of(
        password("ada@example.test", "correct horse battery")
            .await
            .unwrap(),
        200,
    )
    .await;

    // Frank still signs in through the provider (linked by his verified address), with the
    // client authenticating in the request body as this provider's discovery asks.
    let b = Browser::new(&srv.base);
    idp.account(
        "frank",
        json!({"email": "frank@example.test", "email_verified": true}),
    )
    .await;
    landed(b.sign_in(&srv.base, "/app/", "frank").await, "/app/").await;
    assert_eq!(b.user(&srv.base).await.user_id, frank.user_id);

    // Turned off, the password works again.
    json_of(
        ada.call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"requireSso": false})),
        )
        .await,
        200,
    )
    .await;
    json_of(
        password("frank@example.test", "correct horse battery")
            .await
            .unwrap(),
        200,
    )
    .await;
    srv.stop().await;

    // A server without a provider cannot require one.
    let plain = TestServer::start().await;
    let owner = plain.sign_up("olga@example.test").await;
    let res = owner
        .call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"requireSso": true})),
        )
        .await;
    common::field_error(res, "requireSso").await;
    plain.stop().await;
}

#[tokio::test]
async fn a_provider_stopped_mid_flow_gives_a_page_and_no_session() {
    let mut idp = Idp::start().await;
    let srv = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;
    let b = Browser::new(&srv.base);
    let s = b.start(&srv.base, "/app/").await;
    let cb = b.authorize(&s.authorize, "alice").await;
    idp.stop();
    refused(b.get(&cb).await, 400, "could not reach Acme").await;
    assert!(b.session(&srv.base).await.is_none());
    srv.stop().await;
}

#[tokio::test]
async fn a_flow_started_on_one_node_finishes_on_another() {
    let idp = Idp::start().await;
    let a = TestServer::start_with(with_provider(idp.provider(None, "member"))).await;
    let provider = idp.provider(None, "member");
    let public = a.state.config().public_url.clone();
    let Some(b) = a
        .start_beside(Options {
            clock: None,
            tweak: Some(Box::new(move |c| {
                c.sso = vec![provider];
                // The nodes of a cluster share one public address.
                c.public_url = public;
            })),
        })
        .await
    else {
        // Two nodes need PostgreSQL.
        a.stop().await;
        return;
    };
    let browser = Browser::new(&a.base);
    let s = browser.start(&a.base, "/app/alerts").await;
    let cb = browser.authorize(&s.authorize, "alice").await;
    // The balancer sends the callback to the other node.
    let on_b = cb.replace(&a.base, &b.base);
    assert_ne!(on_b, cb);
    landed(browser.get(&on_b).await, "/app/alerts").await;
    assert_eq!(browser.user(&b.base).await.email, "alice@example.test");
    assert_eq!(browser.user(&a.base).await.email, "alice@example.test");
    b.stop().await;
    a.stop().await;
}
