//! Projects over HTTP: CRUD, the workspace order, membership and its order, how a monitor's
//! `projectIds` follows it, version locks, isolation, capabilities and the audit trail.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::monitors::create_id;
use common::{expect_error, ids, json_of, Bearer, TestServer, User};
use reqwest::Method;
use serde_json::{json, Value};

/// An HTTP monitor `name` of `u` (defaults for everything but its URL); its id.
async fn monitor(u: &User, name: &str) -> String {
    create_id(
        u,
        json!({"name": name, "type": "HTTP", "url": "https://example.com"}),
    )
    .await
}

async fn project(u: &User, body: Value) -> Value {
    json_of(u.call(Method::POST, "/projects", Some(body)).await, 201).await
}

async fn project_ids_of(u: &User, monitor_id: &str) -> Value {
    let m = json_of(
        u.call(Method::GET, &format!("/monitors/{monitor_id}"), None)
            .await,
        200,
    )
    .await;
    m["projectIds"].clone()
}

#[tokio::test]
async fn projects_order_and_membership() {
    let srv = TestServer::start().await;
    let u = srv.sign_up("projects@example.com").await;
    let m1 = monitor(&u, "one").await;
    let m2 = monitor(&u, "two").await;
    let m3 = monitor(&u, "three").await;

    let a = project(&u, json!({"name": "Alpha", "description": "first"})).await;
    let keys: BTreeSet<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from([
            "id",
            "workspaceId",
            "name",
            "description",
            "position",
            "monitorIds",
            "createdAt",
            "updatedAt"
        ])
    );
    assert_eq!(a["position"], 0);
    assert_eq!(a["monitorIds"], json!([]));
    assert!(a["createdAt"].as_str().unwrap().ends_with('Z'));
    let b = project(&u, json!({"name": "Beta", "monitorIds": [m2, m1]})).await;
    assert_eq!(b["position"], 1);
    assert_eq!(b["monitorIds"], json!([m2, m1]));
    let c = project(&u, json!({"name": "Gamma"})).await;
    let (a_id, b_id, c_id) = (
        a["id"].as_str().unwrap(),
        b["id"].as_str().unwrap(),
        c["id"].as_str().unwrap(),
    );
    assert_eq!(project_ids_of(&u, &m1).await, json!([b_id]));

    // Order: named ones first, the rest after in their old order.
    let list = json_of(
        u.call(
            Method::POST,
            "/projects/order",
            Some(json!({"projectIds": [c_id]})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(ids(&list), [c_id, a_id, b_id]);
    let list = json_of(u.call(Method::GET, "/projects", None).await, 200).await;
    assert_eq!(ids(&list), [c_id, a_id, b_id]);
    assert_eq!(list[2]["monitorIds"], json!([m2, m1]));
    let res = u
        .call(
            Method::POST,
            "/projects/order",
            Some(json!({"projectIds": [a_id, "nope", a_id]})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    let fields: BTreeSet<&str> = body["flattened"]["fieldErrors"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields, BTreeSet::from(["projectIds.1", "projectIds.2"]));

    // Membership and order within a project, version-locked.
    let path = format!("/projects/{a_id}");
    let res = u.call(Method::GET, &path, None).await;
    assert_eq!(res.headers()["etag"], "\"1\"");
    let res = u
        .client
        .put(srv.url(&format!("{path}/monitors")))
        .header("If-Match", "\"1\"")
        .json(&json!({"monitorIds": [m3, m1]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["etag"], "\"2\"");
    assert_eq!(json_of(res, 200).await["monitorIds"], json!([m3, m1]));
    let res = u
        .client
        .put(srv.url(&format!("{path}/monitors")))
        .header("If-Match", "\"1\"")
        .json(&json!({"monitorIds": []}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    // The monitor lists its projects in project order (Gamma, Alpha, Beta).
    assert_eq!(project_ids_of(&u, &m1).await, json!([a_id, b_id]));

    let res = u
        .call(
            Method::PUT,
            &format!("{path}/monitors"),
            Some(json!({"monitorIds": [m1, "ghost"]})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "monitorIds.1"
    );

    // Membership from the monitor's side: join Gamma, leave Beta; new joins go last.
    let got = json_of(
        u.call(
            Method::PATCH,
            &format!("/monitors/{m1}"),
            Some(json!({"projectIds": [c_id, a_id]})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(got["projectIds"], json!([c_id, a_id]));
    let beta = json_of(
        u.call(Method::GET, &format!("/projects/{b_id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(beta["monitorIds"], json!([m2]));
    let alpha = json_of(u.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(
        alpha["monitorIds"],
        json!([m3, m1]),
        "kept memberships keep their place"
    );
    let m4 = json_of(
        u.call(
            Method::POST,
            "/monitors",
            Some(json!({"name": "four", "type": "PING", "host": "10.0.0.4", "projectIds": [a_id]})),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(m4["projectIds"], json!([a_id]));
    let alpha = json_of(u.call(Method::GET, &path, None).await, 200).await;
    assert_eq!(alpha["monitorIds"], json!([m3, m1, m4["id"]]));

    // Rename (version-locked), clear the description.
    let version = alpha_version(&u, &path).await;
    let res = u
        .client
        .patch(srv.url(&path))
        .header("If-Match", format!("\"{version}\""))
        .json(&json!({"name": "Alpha 2", "description": null}))
        .send()
        .await
        .unwrap();
    let got = json_of(res, 200).await;
    assert_eq!(got["name"], "Alpha 2");
    assert_eq!(got["description"], Value::Null);
    let res = u
        .client
        .patch(srv.url(&path))
        .header("If-Match", format!("\"{version}\""))
        .json(&json!({"name": "stale"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = u
        .call(Method::PATCH, &path, Some(json!({"name": ""})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "name"
    );

    // Deleting a project leaves its monitors, without the membership.
    assert_eq!(u.call(Method::DELETE, &path, None).await.status(), 204);
    expect_error(
        u.call(Method::GET, &path, None).await,
        404,
        "PROJECT_NOT_FOUND",
    )
    .await;
    assert_eq!(project_ids_of(&u, &m1).await, json!([c_id]));
    assert_eq!(project_ids_of(&u, &m3).await, json!([]));
    // Deleting a monitor drops it from its projects.
    assert_eq!(
        u.call(Method::DELETE, &format!("/monitors/{m2}"), None)
            .await
            .status(),
        204
    );
    let beta = json_of(
        u.call(Method::GET, &format!("/projects/{b_id}"), None)
            .await,
        200,
    )
    .await;
    assert_eq!(beta["monitorIds"], json!([]));

    let log = json_of(
        u.call(
            Method::GET,
            "/audit-log?resourceType=project&limit=200",
            None,
        )
        .await,
        200,
    )
    .await;
    let actions: BTreeSet<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        BTreeSet::from([
            "project.create",
            "project.reorder",
            "project.set_monitors",
            "project.update",
            "project.delete"
        ])
    );
    srv.stop().await;
}

async fn alpha_version(u: &User, path: &str) -> i64 {
    let res = u.call(Method::GET, path, None).await;
    res.headers()["etag"]
        .to_str()
        .unwrap()
        .trim_matches('"')
        .parse()
        .unwrap()
}

#[tokio::test]
async fn projects_are_per_workspace_and_need_capabilities() {
    let srv = TestServer::start().await;
    let a = srv.sign_up("pa@example.com").await;
    let b = srv.sign_up("pb@example.com").await;
    let a_monitor = monitor(&a, "A's").await;
    let p = project(&a, json!({"name": "A's project"})).await;
    let path = format!("/projects/{}", p["id"].as_str().unwrap());
    for (method, p, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"name": "x"}))),
        (Method::DELETE, path.clone(), None),
        (
            Method::PUT,
            format!("{path}/monitors"),
            Some(json!({"monitorIds": []})),
        ),
    ] {
        expect_error(b.call(method, &p, body).await, 404, "PROJECT_NOT_FOUND").await;
    }
    assert_eq!(
        json_of(b.call(Method::GET, "/projects", None).await, 200).await,
        json!([])
    );
    // Another workspace's monitor cannot join, from either side.
    let b_project = project(&b, json!({"name": "B's"})).await;
    let b_path = format!("/projects/{}/monitors", b_project["id"].as_str().unwrap());
    let res = b
        .call(
            Method::PUT,
            &b_path,
            Some(json!({"monitorIds": [a_monitor]})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "monitorIds.0"
    );
    let res = a
        .call(
            Method::PATCH,
            &format!("/monitors/{a_monitor}"),
            Some(json!({"projectIds": [b_project["id"]]})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "projectIds.0"
    );
    let res = b
        .call(
            Method::POST,
            "/projects/order",
            Some(json!({"projectIds": [p["id"]]})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "projectIds.0"
    );

    let reader = Bearer::new(&srv.base, &a.token(&["monitors:read"]).await);
    json_of(reader.call(Method::GET, "/projects", None).await, 200).await;
    json_of(reader.call(Method::GET, &path, None).await, 200).await;
    for (method, p, body) in [
        (
            Method::POST,
            "/projects".to_string(),
            Some(json!({"name": "x"})),
        ),
        (Method::PATCH, path.clone(), Some(json!({"name": "x"}))),
        (Method::DELETE, path.clone(), None),
        (
            Method::POST,
            "/projects/order".to_string(),
            Some(json!({"projectIds": []})),
        ),
        (
            Method::PUT,
            format!("{path}/monitors"),
            Some(json!({"monitorIds": []})),
        ),
    ] {
        expect_error(
            reader.call(method, &p, body).await,
            403,
            "INSUFFICIENT_CAPABILITY",
        )
        .await;
    }
    let writer = Bearer::new(&srv.base, &a.token(&["monitors:write"]).await);
    json_of(
        writer
            .call(Method::POST, "/projects", Some(json!({"name": "ok"})))
            .await,
        201,
    )
    .await;
    srv.stop().await;
}
