//! Status pages through the real server: CRUD with the exact record, server-wide unique slugs,
//! the version lock, capabilities and tenancy; branding validation (unsafe custom CSS, bad
//! colours, URLs, zones) with precise fields; the component list (kept ids, page order,
//! unknown monitors); and publication deciding what the public routes answer.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::monitors::create;
use common::pages::{create_page, put_components};
use common::{expect_error, field_error, json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn crud_slugs_version_lock_and_capabilities() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("pages@example.com").await;

    let page = create_page(&u, json!({"name": "Acme", "slug": "acme"})).await;
    let id = page["id"].as_str().unwrap().to_string();
    assert_eq!(page["workspaceId"], u.workspace_id.as_str());
    assert_eq!(page["published"], false, "a new page is a draft");
    assert_eq!(page["slug"], "acme");
    assert_eq!(page["url"], srv.url("/s/acme"));
    assert_eq!(page["customDomain"], Value::Null);
    assert_eq!(page["historyDays"], 90);
    assert_eq!(page["autoIncidents"], "OFF");
    assert_eq!(page["branding"]["timezone"], "UTC");
    assert_eq!(page["branding"]["language"], "en");
    assert_eq!(page["branding"]["footerLinks"], json!([]));
    let mut keys: Vec<&str> = page
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "access",
            "autoIncidents",
            "branding",
            "createdAt",
            "customDomain",
            "historyDays",
            "id",
            "name",
            "published",
            "slug",
            "updatedAt",
            "url",
            "workspaceId"
        ]
    );

    // Slugs are unique across the server, whichever workspace holds them.
    let other = srv.sign_up("other@example.com").await;
    let res = other
        .call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Mine", "slug": "acme"})),
        )
        .await;
    expect_error(res, 409, "SLUG_TAKEN").await;
    let theirs = create_page(&other, json!({"name": "Theirs", "slug": "theirs"})).await;

    // Bad slugs name their field.
    for bad in ["Acme", "a", "acme_x", "-acme", "ac--me", "acme!"] {
        let res = u
            .call(
                Method::POST,
                "/status-pages",
                Some(json!({"name": "x", "slug": bad})),
            )
            .await;
        field_error(res, "slug").await;
    }

    // Reads: list, one with ETag; another workspace's page is not found.
    let list = json_of(u.call(Method::GET, "/status-pages", None).await, 200).await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    let res = u
        .call(Method::GET, &format!("/status-pages/{id}"), None)
        .await;
    let etag = res.headers()["etag"].to_str().unwrap().to_string();
    json_of(res, 200).await;
    let res = u
        .call(
            Method::GET,
            &format!("/status-pages/{}", theirs["id"].as_str().unwrap()),
            None,
        )
        .await;
    expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;

    // PATCH merges branding key by key; a stale If-Match is refused.
    let patched = json_of(
        u.call(
            Method::PATCH,
            &format!("/status-pages/{id}"),
            Some(json!({"name": "Acme Inc", "branding": {"primaryColor": "#0a7", "timezone": "Europe/Berlin",
                "footerLinks": [{"label": "Home", "url": "https://acme.example"}]}})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["name"], "Acme Inc");
    assert_eq!(patched["branding"]["primaryColor"], "#0a7");
    let patched = json_of(
        u.call(
            Method::PATCH,
            &format!("/status-pages/{id}"),
            Some(json!({"branding": {"primaryColor": null, "language": "de"}})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["branding"]["primaryColor"], Value::Null);
    assert_eq!(patched["branding"]["timezone"], "Europe/Berlin");
    assert_eq!(patched["branding"]["language"], "de");
    assert_eq!(patched["branding"]["footerLinks"][0]["label"], "Home");
    let res = reqwest::Client::new()
        .patch(srv.url(&format!("/status-pages/{id}")))
        .bearer_auth(u.token(&["status_pages:write"]).await)
        .header("If-Match", etag)
        .json(&json!({"name": "lost"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    // Taking another page's slug by PATCH is refused too.
    let res = u
        .call(
            Method::PATCH,
            &format!("/status-pages/{id}"),
            Some(json!({"slug": "theirs"})),
        )
        .await;
    expect_error(res, 409, "SLUG_TAKEN").await;

    // Capabilities.
    let reader = Bearer::new(&srv.base, &u.token(&["status_pages:read"]).await);
    json_of(reader.call(Method::GET, "/status-pages", None).await, 200).await;
    let res = reader
        .call(Method::POST, &format!("/status-pages/{id}/publish"), None)
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;
    let writer = Bearer::new(&srv.base, &u.token(&["status_pages:write"]).await);
    let res = writer
        .call(Method::DELETE, &format!("/status-pages/{id}"), None)
        .await;
    expect_error(res, 403, "INSUFFICIENT_CAPABILITY").await;

    // Delete; then it is gone, and the slug is free again.
    let res = u
        .call(Method::DELETE, &format!("/status-pages/{id}"), None)
        .await;
    assert_eq!(res.status().as_u16(), 204);
    let res = u
        .call(Method::GET, &format!("/status-pages/{id}"), None)
        .await;
    expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;
    create_page(&other, json!({"name": "Now mine", "slug": "acme"})).await;
}

#[tokio::test]
async fn branding_is_validated_field_by_field() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("brand@example.com").await;
    let cases = [
        (
            json!({"customCss": "</style><script>alert(1)</script>"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "@import url(https://evil.example/x.css);"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "body{background:url(https://evil.example/t.png)}"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "a{}".repeat(8000)}),
            "branding.customCss",
        ),
        // A `/*` inside a string hides nothing from the browser's tokenizer.
        (
            json!({"customCss": "a{content:\"/*\"}body{background:url(https://x/t.png)}b{content:\"*/\"}"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "a{background:u\\72l(https://x/t.png)}"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "@\\69mport 'https://x/a.css';"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "a{background:image-set('https://x/t.png' 1x)}"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "@font-face{font-family:x;src:url(https://x/f.woff)}"}),
            "branding.customCss",
        ),
        (
            json!({"customCss": "a{width:expression(alert(1))}"}),
            "branding.customCss",
        ),
        (
            json!({"primaryColor": "red;}body{display:none"}),
            "branding.primaryColor",
        ),
        (
            json!({"backgroundColor": "#12345"}),
            "branding.backgroundColor",
        ),
        (
            json!({"logoUrl": "javascript:alert(1)"}),
            "branding.logoUrl",
        ),
        (
            json!({"faviconUrl": "/relative.ico"}),
            "branding.faviconUrl",
        ),
        (json!({"timezone": "Mars/Olympus"}), "branding.timezone"),
        (json!({"language": "EN_us"}), "branding.language"),
        (
            json!({"footerLinks": [{"label": "", "url": "https://x.example"}]}),
            "branding.footerLinks.0.label",
        ),
        (
            json!({"footerLinks": [{"label": "x", "url": "data:text/html,hi"}]}),
            "branding.footerLinks.0.url",
        ),
    ];
    for (branding, field) in cases {
        let res = u
            .call(
                Method::POST,
                "/status-pages",
                Some(json!({"name": "x", "slug": "brand", "branding": branding})),
            )
            .await;
        field_error(res, field).await;
    }
    let res = u
        .call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "x", "slug": "brand", "historyDays": 3})),
        )
        .await;
    field_error(res, "historyDays").await;
    // Nothing was created by the refusals; good CSS is kept as written.
    let list = json_of(u.call(Method::GET, "/status-pages", None).await, 200).await;
    assert_eq!(list, json!([]));
    let css = ".component{border-radius:0}\n.logo{background:url('data:image/png;base64,AA')}\n\
               /* url(https://x) in a comment */ .x::after{content:\"/* url( */\"}\n\
               @media (prefers-color-scheme:dark){.top{background:rgb(0 0 0 / 80%)}}";
    let page = create_page(
        &u,
        json!({"name": "x", "slug": "brand", "branding": {"customCss": css}}),
    )
    .await;
    assert_eq!(page["branding"]["customCss"], css);
}

#[tokio::test]
async fn components_keep_their_ids_and_order_and_name_bad_entries() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("components@example.com").await;
    let m = create(
        &u,
        json!({"name": "api", "type": "TCP", "host": "127.0.0.1", "port": 9, "interval": 60}),
    )
    .await;
    let mid = m["id"].as_str().unwrap();
    let page = create_page(&u, json!({"name": "Acme", "slug": "acme"})).await;
    let pid = page["id"].as_str().unwrap();

    let list = put_components(
        &u,
        pid,
        json!([
            {"name": "API", "monitorId": mid, "group": "Core", "description": "The REST API"},
            {"name": "Docs"}
        ]),
    )
    .await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["position"], 1);
    assert_eq!(list[0]["monitorId"], mid);
    assert_eq!(list[0]["group"], "Core");
    assert_eq!(list[0]["statusPageId"], pid);
    assert_eq!(list[1]["monitorId"], Value::Null);
    let api_id = list[0]["id"].as_str().unwrap().to_string();
    let mut keys: Vec<&str> = list[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "description",
            "group",
            "id",
            "monitorId",
            "name",
            "position",
            "statusPageId"
        ]
    );

    // Reorder and drop one: the kept component keeps its id and moves.
    let list = put_components(
        &u,
        pid,
        json!([{"name": "Status"}, {"id": api_id, "name": "Public API", "monitorId": mid}]),
    )
    .await;
    assert_eq!(list[1]["id"], api_id.as_str());
    assert_eq!(list[1]["position"], 2);
    assert_eq!(list[1]["name"], "Public API");
    let read = json_of(
        u.call(
            Method::GET,
            &format!("/status-pages/{pid}/components"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(read, list);

    // Bad entries name their index and field, and change nothing.
    let other = srv.sign_up("other@example.com").await;
    let theirs = create(
        &other,
        json!({"name": "x", "type": "TCP", "host": "127.0.0.1", "port": 9, "interval": 60}),
    )
    .await;
    for (body, field) in [
        (
            json!([{"name": "x", "monitorId": theirs["id"]}]),
            "0.monitorId",
        ),
        (
            json!([{"name": "ok"}, {"name": "x", "monitorId": "nope"}]),
            "1.monitorId",
        ),
        (json!([{"name": ""}]), "0.name"),
        // A type error found while reading the body names its place the same way as the
        // checks after it (`<index>.<field>`, as every list of the API does).
        (json!([{"name": "ok"}, {"name": 5}]), "1.name"),
        (json!([{"id": "not-a-component", "name": "x"}]), "0.id"),
        (
            json!([{"id": api_id, "name": "a"}, {"id": api_id, "name": "b"}]),
            "1.id",
        ),
    ] {
        let res = u
            .call(
                Method::PUT,
                &format!("/status-pages/{pid}/components"),
                Some(body),
            )
            .await;
        field_error(res, field).await;
    }
    let after = json_of(
        u.call(
            Method::GET,
            &format!("/status-pages/{pid}/components"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(after, list);
}

#[tokio::test]
async fn publishable_keys_are_shown_once_listed_by_hint_and_revoked() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("keys@example.com").await;
    let page = create_page(&u, json!({"name": "Acme", "slug": "acme"})).await;
    let pid = page["id"].as_str().unwrap();
    let path = format!("/status-pages/{pid}/publishable-keys");
    let k = json_of(
        u.call(Method::POST, &path, Some(json!({"name": "marketing site"})))
            .await,
        201,
    )
    .await;
    let key = k["key"].as_str().unwrap();
    assert!(key.starts_with("pk_") && key.len() > 40, "{key}");
    assert_eq!(k["statusPageId"], pid);
    assert_eq!(k["lastUsedAt"], Value::Null);
    let tail = &key[key.len() - 4..];
    assert_eq!(k["hint"], format!("pk_…{tail}"));

    let list = json_of(u.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert!(
        !list.to_string().contains(key),
        "the key is never read back"
    );
    let mut keys: Vec<&str> = list[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        vec![
            "createdAt",
            "hint",
            "id",
            "lastUsedAt",
            "name",
            "statusPageId"
        ]
    );

    let res = u.call(Method::POST, &path, Some(json!({"name": ""}))).await;
    field_error(res, "name").await;
    // Another workspace sees neither the page nor its keys.
    let other = srv.sign_up("other@example.com").await;
    let res = other.call(Method::GET, &path, None).await;
    expect_error(res, 404, "STATUS_PAGE_NOT_FOUND").await;

    let kid = k["id"].as_str().unwrap();
    let res = u.call(Method::DELETE, &format!("{path}/{kid}"), None).await;
    assert_eq!(res.status().as_u16(), 204);
    let res = u.call(Method::DELETE, &format!("{path}/{kid}"), None).await;
    expect_error(res, 404, "PUBLISHABLE_KEY_NOT_FOUND").await;
    assert_eq!(
        json_of(u.call(Method::GET, &path, None).await, 200).await,
        json!([])
    );
}
