//! The public face of status pages through the real server: the summary API, the HTML page
//! and the feeds answer only for published pages (drafts and unpublished pages are the same
//! 404 as unknown slugs, at once after unpublishing); a component follows its monitor's status
//! (driven against a real loopback HTTP target on a manual clock) and the change shows within
//! a second; validators (`ETag`/304, `Last-Modified`, `Cache-Control`) and gzip; the HTML is
//! escaped, carries its CSP and landmarks, and stays small; the feeds are valid RSS and Atom.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;
use common::clock::{run_due, T0};
use common::monitors::{http_monitor, monitor};
use common::pages::{create_incident, create_page, put_components};
use common::target::Target;
use common::{expect_error, json_of, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

async fn public(srv: &TestServer, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(srv.url(path))
        .send()
        .await
        .unwrap()
}

async fn summary(srv: &TestServer, slug: &str) -> Value {
    json_of(
        public(srv, &format!("/api/v1/status-pages/{slug}/summary")).await,
        200,
    )
    .await
}

#[tokio::test]
async fn drafts_and_unpublished_pages_never_answer_in_public() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("drafts@example.com").await;
    let page = create_page(&u, json!({"name": "Secret plans", "slug": "secret"})).await;
    let id = page["id"].as_str().unwrap();
    put_components(&u, id, json!([{"name": "Launch"}])).await;

    let check_hidden = || async {
        let res = public(&srv, "/api/v1/status-pages/secret/summary").await;
        expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;
        for path in ["/s/secret", "/s/secret/feed.rss", "/s/secret/feed.atom"] {
            let res = public(&srv, path).await;
            assert_eq!(res.status().as_u16(), 404, "{path}");
            let ct = res.headers()["content-type"].to_str().unwrap().to_string();
            assert!(ct.starts_with("text/html"), "{path} answers a page: {ct}");
            let body = res.text().await.unwrap();
            assert!(
                !body.contains("Secret plans") && !body.contains("Launch"),
                "{body}"
            );
        }
    };
    check_hidden().await;
    // An unknown slug looks the same.
    let res = public(&srv, "/api/v1/status-pages/nothing-here/summary").await;
    expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;

    // Published: it answers; unpublished again: hidden at once (the cache is dropped).
    json_of(
        u.call(Method::POST, &format!("/status-pages/{id}/publish"), None)
            .await,
        200,
    )
    .await;
    let s = summary(&srv, "secret").await;
    assert_eq!(s["page"]["name"], "Secret plans");
    assert_eq!(s["components"][0]["name"], "Launch");
    let res = public(&srv, "/s/secret").await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.text().await.unwrap().contains("id=\"h-components\""));
    // A published page with no components has no empty "Components" section.
    let bare = create_page(&u, json!({"name": "Bare", "slug": "bare"})).await;
    let bare_id = bare["id"].as_str().unwrap();
    json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{bare_id}/publish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let html = public(&srv, "/s/bare").await.text().await.unwrap();
    assert!(
        html.contains("Bare") && !html.contains("h-components"),
        "{html}"
    );
    json_of(
        u.call(Method::POST, &format!("/status-pages/{id}/unpublish"), None)
            .await,
        200,
    )
    .await;
    check_hidden().await;
}

#[tokio::test]
async fn a_component_follows_its_monitor_and_the_change_shows_within_a_second() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("follow@example.com").await;
    let mid = http_monitor(&u, &target.url("/health"), json!({})).await;
    let page = create_page(
        &u,
        json!({"name": "Acme", "slug": "acme", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let comps = put_components(
        &u,
        pid,
        json!([{"name": "API", "monitorId": mid, "group": "Core"}, {"name": "Docs"}]),
    )
    .await;

    clock.set_ms(T0);
    run_due(&srv, T0).await;
    assert_eq!(monitor(&u, &mid).await["status"], "UP");
    let s = summary(&srv, "acme").await;
    assert_eq!(s["status"], "OPERATIONAL");
    assert_eq!(s["components"][0]["id"], comps[0]["id"]);
    assert_eq!(s["components"][0]["status"], "OPERATIONAL");
    assert_eq!(s["components"][0]["group"], "Core");
    assert_eq!(s["components"][0]["uptime"]["24h"], 100.0);
    assert_eq!(s["components"][1]["uptime"]["24h"], Value::Null);
    assert_eq!(s["page"]["url"], srv.url("/s/acme"));
    assert!(s["activeIncidents"].as_array().unwrap().is_empty());
    assert!(s["scheduledMaintenance"].as_array().unwrap().is_empty());

    // The target fails until the monitor is DOWN; the summary shows it within a second.
    target.set(500);
    let mut t = T0;
    while monitor(&u, &mid).await["status"] != "DOWN" {
        t += 10_000;
        clock.set_ms(t);
        run_due(&srv, t).await;
        assert!(t < T0 + 300_000, "the monitor never went DOWN");
    }
    let changed = Instant::now();
    loop {
        let s = summary(&srv, "acme").await;
        if s["components"][0]["status"] == "MAJOR_OUTAGE" {
            // One of two components down: a partial outage of the page.
            assert_eq!(s["status"], "PARTIAL_OUTAGE");
            assert_eq!(s["components"][1]["status"], "OPERATIONAL");
            break;
        }
        assert!(
            changed.elapsed() < Duration::from_secs(1),
            "the summary still shows {s} a second after the change"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let html = public(&srv, "/s/acme").await.text().await.unwrap();
    assert!(html.contains("Partial system outage"), "{html}");
    assert!(html.contains("Major outage"));
}

#[tokio::test]
async fn validators_compression_and_the_html_page() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("html@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "<script>alert('name')</script>", "slug": "html", "published": true,
               "branding": {"language": "de", "primaryColor": "#aa0000",
                            "customCss": ".component{border:0}",
                            "footerLinks": [{"label": "Home \"x\"", "url": "https://acme.example/?a=1&b=2"}]}}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let components: Vec<Value> = (0..50)
        .map(|i| json!({"name": format!("<b>Component {i}</b>"), "group": format!("G{}", i % 5)}))
        .collect();
    put_components(&u, pid, Value::Array(components)).await;

    // Summary validators: ETag, Last-Modified, Cache-Control; 304 on a matching tag.
    let res = public(&srv, "/api/v1/status-pages/html/summary").await;
    assert_eq!(res.status().as_u16(), 200);
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    assert!(res.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("public"));
    assert!(res.headers().contains_key("last-modified"));
    let res = reqwest::Client::new()
        .get(srv.url("/api/v1/status-pages/html/summary"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 304);

    // The page: escaped, with its CSP, landmarks and language, small, and compressed.
    let res = public(&srv, "/s/html").await;
    assert_eq!(res.status().as_u16(), 200);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("style-src 'sha256-"),
        "{csp}"
    );
    assert!(!csp.contains("script-src"), "no script may run: {csp}");
    let html = res.text().await.unwrap();
    assert!(html.len() < 50 * 1024, "page is {} bytes", html.len());
    assert!(!html.contains("<script>"), "markup in names is escaped");
    assert!(html.contains("&lt;script&gt;alert('name')&lt;/script&gt;"));
    assert!(html.contains("&lt;b&gt;Component 7&lt;/b&gt;"));
    assert!(html.contains("<html lang=\"de\">"));
    assert!(html.contains("<main") && html.contains("<header") && html.contains("<footer"));
    assert!(html.contains("--brand:#aa0000") && html.contains(".component{border:0}"));
    assert!(html.contains("https://acme.example/?a=1&amp;b=2"));
    assert!(html.contains("All systems operational"));
    let gz = reqwest::Client::builder()
        .no_gzip()
        .build()
        .unwrap()
        .get(srv.url("/s/html"))
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    assert!(gz.bytes().await.unwrap().len() < 10 * 1024);
}

#[tokio::test]
async fn feeds_are_valid_rss_and_atom() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("feeds@example.com").await;
    create_page(
        &u,
        json!({"name": "Feeds & <Co>", "slug": "feeds", "published": true}),
    )
    .await;
    let res = public(&srv, "/s/feeds/feed.rss").await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/rss+xml"));
    let body = res.bytes().await.unwrap();
    let channel = rss::Channel::read_from(&body[..]).unwrap();
    assert_eq!(channel.title(), "Feeds & <Co> status");
    let res = public(&srv, "/s/feeds/feed.atom").await;
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/atom+xml"));
    let body = res.bytes().await.unwrap();
    let feed = atom_syndication::Feed::read_from(&body[..]).unwrap();
    assert_eq!(feed.title().as_str(), "Feeds & <Co> status");
}

#[tokio::test]
async fn the_embed_api_and_badges_answer_any_origin_for_a_valid_key_only() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("embed@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Embed <Co>", "slug": "embed", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let comps = put_components(&u, pid, json!([{"name": "API & \"Edge\""}])).await;
    let cid = comps[0]["id"].as_str().unwrap();
    let k = json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{pid}/publishable-keys"),
            Some(json!({"name": "site"})),
        )
        .await,
        201,
    )
    .await;
    let key = k["key"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();

    // By Bearer and by ?token=: the page's summary, readable from any origin.
    let res = client
        .get(srv.url("/api/v1/embed/status"))
        .bearer_auth(&key)
        .header("Origin", "https://customer.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    let by_bearer = json_of(res, 200).await;
    assert_eq!(by_bearer["page"]["slug"], "embed");
    let by_query = json_of(
        public(&srv, &format!("/api/v1/embed/status?token={key}")).await,
        200,
    )
    .await;
    assert_eq!(by_query, by_bearer);
    assert_eq!(by_query, summary(&srv, "embed").await);

    // The preflight allows the Authorization header.
    let res = client
        .request(Method::OPTIONS, srv.url("/api/v1/embed/status"))
        .header("Origin", "https://customer.example")
        .header("Access-Control-Request-Method", "GET")
        .header("Access-Control-Request-Headers", "authorization")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    let allowed = res.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("authorization"));

    // Badges: status of the page and of a component, uptime, styles; text escaped.
    let res = public(&srv, &format!("/api/v1/embed/badge.svg?token={key}")).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "image/svg+xml");
    assert!(res.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age"));
    let svg = res.text().await.unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("operational"),
        "{svg}"
    );
    assert!(svg.contains("Embed &lt;Co&gt;"));
    let svg = public(
        &srv,
        &format!("/api/v1/embed/badge.svg?token={key}&component={cid}&style=for-the-badge"),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(svg.contains("API &amp; &quot;EDGE&quot;"), "{svg}");
    let svg = public(
        &srv,
        &format!("/api/v1/embed/badge.svg?token={key}&uptime=30d"),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(
        svg.contains("uptime 30d") && svg.contains("no data"),
        "{svg}"
    );
    let res = public(
        &srv,
        &format!("/api/v1/embed/badge.svg?token={key}&style=plastic"),
    )
    .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "style");
    let res = public(
        &srv,
        &format!("/api/v1/embed/badge.svg?token={key}&component=nope"),
    )
    .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "component");

    // No key, a malformed or unknown key: 401. Unpublished: 404. Revoked: 401 at once.
    for path in [
        "/api/v1/embed/status".to_string(),
        "/api/v1/embed/status?token=pk_nope".to_string(),
        "/api/v1/embed/badge.svg?token=svc_notakey".to_string(),
    ] {
        expect_error(public(&srv, &path).await, 401, "UNAUTHORIZED").await;
    }
    json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{pid}/unpublish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let res = public(&srv, &format!("/api/v1/embed/status?token={key}")).await;
    expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;
    json_of(
        u.call(Method::POST, &format!("/status-pages/{pid}/publish"), None)
            .await,
        200,
    )
    .await;
    json_of(
        public(&srv, &format!("/api/v1/embed/status?token={key}")).await,
        200,
    )
    .await;
    let res = u
        .call(
            Method::DELETE,
            &format!(
                "/status-pages/{pid}/publishable-keys/{}",
                k["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(res.status().as_u16(), 204);
    let res = public(&srv, &format!("/api/v1/embed/status?token={key}")).await;
    expect_error(res, 401, "UNAUTHORIZED").await;

    // The widget script is served, and uses no HTML injection.
    let res = public(&srv, "/embed/widget.js").await;
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .contains("javascript"));
    let js = res.text().await.unwrap();
    assert!(js.contains("/api/v1/embed/status") && !js.contains("innerHTML ="));
}

#[tokio::test]
async fn an_alert_opens_an_automatic_incident_and_recovery_resolves_it() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = Target::start().await;
    let u = srv.sign_up("auto@example.com").await;
    let mid = http_monitor(&u, &target.url("/health"), json!({})).await;
    let page = create_page(
        &u,
        json!({"name": "Auto", "slug": "auto", "published": true, "autoIncidents": "PUBLISHED"}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    // A draft-mode page over the same monitor gets a DRAFT incident the public never sees.
    let drafts = create_page(
        &u,
        json!({"name": "Drafts", "slug": "auto-drafts", "published": true, "autoIncidents": "DRAFT"}),
    )
    .await;
    let comps = put_components(&u, pid, json!([{"name": "API", "monitorId": mid}])).await;
    put_components(
        &u,
        drafts["id"].as_str().unwrap(),
        json!([{"name": "API", "monitorId": mid}]),
    )
    .await;

    let mut t = T0;
    clock.set_ms(t);
    run_due(&srv, t).await;
    target.set(500);
    while monitor(&u, &mid).await["status"] != "DOWN" {
        t += 10_000;
        clock.set_ms(t);
        run_due(&srv, t).await;
        assert!(t < T0 + 300_000, "the monitor never went DOWN");
    }
    // Another failing check does not open a second incident.
    t += 10_000;
    clock.set_ms(t);
    run_due(&srv, t).await;

    let list = json_of(
        u.call(Method::GET, &format!("/incidents?statusPageId={pid}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(list["total"], 1, "{list}");
    let inc = &list["incidents"][0];
    assert_eq!(inc["autoGenerated"], true);
    assert_eq!(inc["sourceMonitorId"], mid.as_str());
    assert_eq!(inc["visibility"], "PUBLISHED");
    assert_eq!(inc["status"], "INVESTIGATING");
    assert_eq!(inc["affectedComponentIds"], json!([comps[0]["id"]]));
    let iid = inc["id"].as_str().unwrap().to_string();
    let draft_list = json_of(
        u.call(
            Method::GET,
            &format!("/incidents?statusPageId={}", drafts["id"].as_str().unwrap()),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(draft_list["incidents"][0]["visibility"], "DRAFT");

    // The public summary shows it within a second; the draft page's does not.
    let started = Instant::now();
    loop {
        let s = summary(&srv, "auto").await;
        if s["activeIncidents"].as_array().unwrap().len() == 1 {
            assert_eq!(s["activeIncidents"][0]["incident"]["id"], iid.as_str());
            assert_eq!(
                s["activeIncidents"][0]["updates"][0]["systemGenerated"],
                true
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(1), "{s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(summary(&srv, "auto-drafts").await["activeIncidents"]
        .as_array()
        .unwrap()
        .is_empty());

    // Recovery resolves it with a system-generated update.
    target.set(200);
    while monitor(&u, &mid).await["status"] != "UP" {
        t += 10_000;
        clock.set_ms(t);
        run_due(&srv, t).await;
        assert!(t < T0 + 600_000, "the monitor never recovered");
    }
    let got = json_of(
        u.call(Method::GET, &format!("/incidents/{iid}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(got["incident"]["status"], "RESOLVED");
    assert!(got["incident"]["resolvedAt"].is_string());
    let resolved_update = got["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["status"] == "RESOLVED")
        .unwrap();
    assert_eq!(resolved_update["systemGenerated"], true);
}

/// On PostgreSQL, two nodes: a page edited through one node, and a published incident, show
/// on the other node's public summary within a second (its rendered copy is dropped by the
/// feed, and the digest is the net).
#[tokio::test]
async fn a_change_made_on_one_node_shows_on_the_other_within_a_second() {
    let a = TestServer::start().await;
    let Some(b) = a.start_beside(common::Options::default()).await else {
        return; // SQLite: one node.
    };
    let u = a.sign_up("nodes@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Before", "slug": "nodes", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    assert_eq!(summary(&b, "nodes").await["page"]["name"], "Before");

    let wait_for = |what: &'static str, check: fn(&Value) -> bool| {
        let b = &b;
        async move {
            let started = Instant::now();
            loop {
                let s = summary(b, "nodes").await;
                if check(&s) {
                    return;
                }
                assert!(started.elapsed() < Duration::from_secs(1), "{what}: {s}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    json_of(
        u.call(
            Method::PATCH,
            &format!("/status-pages/{pid}"),
            Some(json!({"name": "After"})),
        )
        .await,
        200,
    )
    .await;
    wait_for("the new name", |s| s["page"]["name"] == "After").await;
    json_of(
        u.call(
            Method::POST,
            "/incidents",
            Some(
                json!({"statusPageId": pid, "title": "Slow logins", "visibility": "PUBLISHED",
                        "severity": "MINOR", "message": "Looking into it."}),
            ),
        )
        .await,
        201,
    )
    .await;
    wait_for("the incident", |s| {
        s["activeIncidents"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .await;
    json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{pid}/unpublish"),
            None,
        )
        .await,
        200,
    )
    .await;
    let started = Instant::now();
    loop {
        let res = public(&b, "/api/v1/status-pages/nodes/summary").await;
        if res.status().as_u16() == 404 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "still public on the other node"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.stop().await;
}

/// Files a published incident on page `pid` with `body`'s extra fields; its id.
async fn published_incident(u: &User, pid: &str, extra: Value) -> String {
    let mut body = json!({"statusPageId": pid, "visibility": "PUBLISHED"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let inc = create_incident(u, body).await;
    inc["incident"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_rss_feed_carries_incident_text_as_text_not_html() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("rss-text@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Feeds", "slug": "rss-text", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let hostile = "<img src=x onerror=alert(1)> & <script>alert(2)</script>";
    published_incident(
        &u,
        pid,
        json!({"title": "Outage", "message": format!("{hostile}\n]]><b>out</b>")}),
    )
    .await;
    let body = public(&srv, "/s/rss-text/feed.rss")
        .await
        .bytes()
        .await
        .unwrap();
    let channel = rss::Channel::read_from(&body[..]).unwrap();
    let description = channel.items()[0].description().unwrap().to_string();
    // Readers take the description as HTML: the text must come out as those characters.
    for raw in ["<img", "<script", "<b>"] {
        assert!(!description.contains(raw), "{raw} in {description}");
    }
    assert!(
        description.contains("&lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;"),
        "{description}"
    );
    assert!(
        description.contains("]]&gt;&lt;b&gt;out&lt;/b&gt;"),
        "{description}"
    );
    // Atom already says its content is text.
    let body = public(&srv, "/s/rss-text/feed.atom")
        .await
        .bytes()
        .await
        .unwrap();
    let feed = atom_syndication::Feed::read_from(&body[..]).unwrap();
    let content = feed.entries()[0].content().unwrap();
    assert_eq!(content.content_type(), Some("text"));
    assert!(content.value().unwrap().contains(hostile));
}

/// Every element's opening tag in `html` with more than one `class` attribute.
fn doubled_class_attributes(html: &str) -> Vec<String> {
    html.split('<')
        .filter_map(|t| t.split('>').next())
        .filter(|tag| tag.matches(" class=").count() > 1)
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_page_names_its_status_and_each_components_in_one_class() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("colours@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Colours", "slug": "colours", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    let comps = put_components(&u, pid, json!([{"name": "API"}, {"name": "Web"}])).await;
    let api = comps[0]["id"].as_str().unwrap();
    published_incident(
        &u,
        pid,
        json!({"title": "API down", "severity": "CRITICAL", "affectedComponentIds": [api]}),
    )
    .await;
    let mut html = String::new();
    for _ in 0..40 {
        html = public(&srv, "/s/colours").await.text().await.unwrap();
        if html.contains("Partial system outage") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(summary(&srv, "colours").await["status"], "PARTIAL_OUTAGE");
    assert_eq!(doubled_class_attributes(&html), Vec::<String>::new());
    assert!(
        html.contains(r#"<section class="overall s-part""#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="st s-major">Major outage</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="st s-ok">Operational</span>"#),
        "{html}"
    );
}

#[tokio::test]
async fn public_incidents_come_in_cursor_pages_stable_under_inserts() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let u = srv.sign_up("cursor@example.com").await;
    let page = create_page(
        &u,
        json!({"name": "Paged", "slug": "paged", "published": true}),
    )
    .await;
    let pid = page["id"].as_str().unwrap();
    // Two at the same millisecond: the id breaks the tie.
    let a = published_incident(&u, pid, json!({"title": "A"})).await;
    let b = published_incident(&u, pid, json!({"title": "B"})).await;
    clock.set_ms(T0 + 60_000);
    let c = published_incident(&u, pid, json!({"title": "C"})).await;
    let _draft = create_incident(&u, json!({"statusPageId": pid, "title": "Draft"})).await;
    let list = |q: String| {
        let srv = &srv;
        async move {
            json_of(
                public(srv, &format!("/api/v1/status-pages/paged/incidents{q}")).await,
                200,
            )
            .await
        }
    };
    let first = list("?limit=2".into()).await;
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["incidents", "nextCursor"], "{first}");
    let ids = |v: &Value| -> Vec<String> {
        v["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    };
    let got = ids(&first);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], c, "newest first");
    let cursor = first["nextCursor"].as_str().unwrap().to_string();
    // A newer incident published meanwhile does not shift the next page.
    clock.set_ms(T0 + 120_000);
    let d = published_incident(&u, pid, json!({"title": "D"})).await;
    let second = list(format!("?limit=2&cursor={cursor}")).await;
    assert_eq!(second["nextCursor"], Value::Null, "{second}");
    let mut all: Vec<String> = got.into_iter().chain(ids(&second)).collect();
    assert_eq!(all.len(), 3, "{second}");
    all.sort();
    let mut expected = vec![a.clone(), b.clone(), c.clone()];
    expected.sort();
    assert_eq!(all, expected);
    // One by one, the tie included: every incident once, newest first.
    let mut seen = Vec::new();
    let mut q = "?limit=1".to_string();
    loop {
        let p = list(q.clone()).await;
        seen.extend(ids(&p));
        match p["nextCursor"].as_str() {
            Some(next) => q = format!("?limit=1&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 4);
    assert_eq!(&seen[..2], [d, c]);
    // The default page holds them all; bad paging names its field.
    assert_eq!(ids(&list(String::new()).await).len(), 4);
    for (q, field) in [
        ("?limit=0", "limit"),
        ("?limit=201", "limit"),
        ("?cursor=nope", "cursor"),
    ] {
        let body = expect_error(
            public(&srv, &format!("/api/v1/status-pages/paged/incidents{q}")).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(body["field"], field, "{q}: {body}");
    }
}

#[tokio::test]
async fn badges_and_error_pages_carry_their_content_security_policy() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("csp@example.com").await;
    let page = create_page(&u, json!({"name": "Csp", "slug": "csp", "published": true})).await;
    let pid = page["id"].as_str().unwrap();
    let k = json_of(
        u.call(
            Method::POST,
            &format!("/status-pages/{pid}/publishable-keys"),
            Some(json!({"name": "site"})),
        )
        .await,
        201,
    )
    .await;
    let key = k["key"].as_str().unwrap();
    let res = public(&srv, &format!("/api/v1/embed/badge.svg?token={key}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        res.headers()["content-security-policy"],
        "default-src 'none'; style-src 'unsafe-inline'"
    );
    // The pages for people that say something went wrong: no script, no loads.
    let not_found = public(&srv, "/s/no-such-page").await;
    assert_eq!(not_found.status(), 404);
    let csp = not_found.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(not_found.headers()["x-content-type-options"], "nosniff");
    let feed = public(&srv, "/s/no-such-page/feed.rss").await;
    assert_eq!(feed.status(), 404);
    assert!(feed.headers().get("content-security-policy").is_some());
    let form = reqwest::Client::new()
        .post(srv.url("/s/csp/subscribe"))
        .form(&[("email", "not an address")])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 400);
    assert!(form.headers().get("content-security-policy").is_some());
    let link = public(&srv, "/api/v1/subscribers/verify?token=nope").await;
    assert_eq!(link.status(), 400);
    assert!(link.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
}
