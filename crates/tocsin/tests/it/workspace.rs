//! Workspaces, members and invitations end to end: the current workspace, version-locked
//! settings, switching, roles, the last-owner rule, and invitations by link and by a real SMTP
//! sink.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::smtp;
use common::{expect_error, json_of, Bearer, Options, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

#[tokio::test]
async fn current_workspace_has_exactly_the_spec_fields() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let token = ada.token(&["identity:read"]).await;
    let ws = json_of(
        Bearer::new(&srv.base, &token)
            .call(Method::GET, "/workspace", None)
            .await,
        200,
    )
    .await;
    let mut keys: Vec<&String> = ws.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["id", "memberCount", "name", "ownerId", "slug"]);
    assert_eq!(ws["id"], ada.workspace_id.as_str());
    srv.stop().await;
}

#[tokio::test]
async fn settings_are_version_locked_and_validated() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let res = ada.call(Method::GET, "/workspace/settings", None).await;
    let etag = res
        .headers()
        .get("etag")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let res = ada
        .client
        .patch(srv.url("/workspace/settings"))
        .header("if-match", &etag)
        .json(&json!({"name": "Ops", "slug": "ops-team", "timezone": "Europe/Berlin"}))
        .send()
        .await
        .unwrap();
    let s = json_of(res, 200).await;
    assert_eq!(
        (
            s["name"].as_str(),
            s["slug"].as_str(),
            s["timezone"].as_str()
        ),
        (Some("Ops"), Some("ops-team"), Some("Europe/Berlin"))
    );
    let res = ada
        .client
        .patch(srv.url("/workspace/settings"))
        .header("if-match", &etag)
        .json(&json!({"name": "Stale"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = ada
        .call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"slug": "Bad Slug!", "timezone": "Mars/Olympus"})),
        )
        .await;
    let body = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(body["field"], "slug");
    assert!(body["flattened"]["fieldErrors"]["timezone"].is_array());
    let res = ada
        .call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"colour": "red"})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "colour"
    );
    // The current workspace reflects the change at once (cache invalidated).
    assert_eq!(
        json_of(ada.call(Method::GET, "/workspace", None).await, 200).await["name"],
        "Ops"
    );
    // Slugs are unique across workspaces.
    let bob = srv.sign_up("bob@example.com").await;
    let res = bob
        .call(
            Method::PATCH,
            "/workspace/settings",
            Some(json!({"slug": "ops-team"})),
        )
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "slug"
    );
    srv.stop().await;
}

/// Invites `email` into `inviter`'s workspace and returns the accept token from the link.
async fn invite(inviter: &common::User, email: &str, role: &str) -> (Value, String) {
    let inv = json_of(
        inviter
            .call(
                Method::POST,
                "/workspace/invitations",
                Some(json!({"email": email, "role": role})),
            )
            .await,
        201,
    )
    .await;
    let url = inv["acceptUrl"]
        .as_str()
        .expect("acceptUrl when no SMTP")
        .to_string();
    let token = url.split("token=").nth(1).unwrap().to_string();
    (inv, token)
}

#[tokio::test]
async fn invitations_roles_and_the_last_owner_rule() {
    let srv = TestServer::start().await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    srv.verify_email("bob@example.com").await;
    let (inv, token) = invite(&ada, "bob@example.com", "member").await;
    assert_eq!(inv["status"], "pending");
    assert!(inv["acceptUrl"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{}/app/invitations/accept?token=", srv.base)));

    // Only the invited address may accept, only once, only with a genuine token.
    let eve = srv.sign_up("eve@example.com").await;
    expect_error(
        eve.call(
            Method::POST,
            "/invitations/accept",
            Some(json!({"token": token})),
        )
        .await,
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    let forged = format!("{token}x");
    assert_eq!(
        expect_error(
            bob.call(
                Method::POST,
                "/invitations/accept",
                Some(json!({"token": forged}))
            )
            .await,
            400,
            "VALIDATION_ERROR"
        )
        .await["field"],
        "token"
    );
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
    assert_eq!(ws["id"], ada.workspace_id.as_str());
    assert_eq!(ws["memberCount"], 2.0);
    expect_error(
        bob.call(
            Method::POST,
            "/invitations/accept",
            Some(json!({"token": token})),
        )
        .await,
        409,
        "INVITATION_NOT_PENDING",
    )
    .await;

    // Bob's session now acts in Ada's workspace, as a member: no member management.
    assert_eq!(
        json_of(bob.call(Method::GET, "/workspace", None).await, 200).await["id"],
        ada.workspace_id.as_str()
    );
    expect_error(
        bob.call(Method::GET, "/workspace/invitations", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    expect_error(
        bob.call(Method::GET, "/audit-log", None).await,
        403,
        "INSUFFICIENT_CAPABILITY",
    )
    .await;
    // He can switch back to his own.
    let mine = json_of(bob.call(Method::GET, "/workspaces", None).await, 200).await;
    assert_eq!(mine.as_array().unwrap().len(), 2);
    assert_eq!(
        json_of(
            bob.call(
                Method::POST,
                &format!("/workspaces/{}/activate", bob.workspace_id),
                None
            )
            .await,
            200
        )
        .await["id"],
        bob.workspace_id.as_str()
    );
    expect_error(
        bob.call(
            Method::POST,
            &format!("/workspaces/{}/activate", eve.workspace_id),
            None,
        )
        .await,
        404,
        "WORKSPACE_NOT_FOUND",
    )
    .await;
    bob.call(
        Method::POST,
        &format!("/workspaces/{}/activate", ada.workspace_id),
        None,
    )
    .await;

    // Roles: promote, version lock, the last owner cannot step down.
    let path = format!("/workspace/members/{}", bob.user_id);
    let res = ada.call(Method::GET, &path, None).await;
    let etag = res
        .headers()
        .get("etag")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let res = ada
        .client
        .patch(srv.url(&path))
        .header("if-match", &etag)
        .json(&json!({"role": "admin"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(res, 200).await["role"], "admin");
    let res = ada
        .client
        .patch(srv.url(&path))
        .header("if-match", &etag)
        .json(&json!({"role": "member"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "VERSION_CONFLICT").await;
    let res = ada
        .call(
            Method::PATCH,
            &format!("/workspace/members/{}", ada.user_id),
            Some(json!({"role": "member"})),
        )
        .await;
    expect_error(res, 409, "LAST_OWNER").await;
    expect_error(
        ada.call(
            Method::DELETE,
            &format!("/workspace/members/{}", ada.user_id),
            None,
        )
        .await,
        409,
        "LAST_OWNER",
    )
    .await;
    // An admin cannot touch an owner.
    expect_error(
        bob.call(
            Method::DELETE,
            &format!("/workspace/members/{}", ada.user_id),
            None,
        )
        .await,
        403,
        "OWNER_REQUIRED",
    )
    .await;
    expect_error(
        ada.call(
            Method::PATCH,
            "/workspace/members/nobody",
            Some(json!({"role": "admin"})),
        )
        .await,
        404,
        "MEMBER_NOT_FOUND",
    )
    .await;
    let res = ada
        .call(Method::PATCH, &path, Some(json!({"role": "emperor"})))
        .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await["field"],
        "role"
    );

    // Bob's key dies with his membership.
    let bob_key = bob.token(&["identity:read"]).await;
    let b = Bearer::new(&srv.base, &bob_key);
    assert_eq!(
        json_of(b.call(Method::GET, "/workspace", None).await, 200).await["id"],
        ada.workspace_id.as_str()
    );
    assert_eq!(ada.call(Method::DELETE, &path, None).await.status(), 204);
    expect_error(
        b.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    // His session falls back to a workspace he still belongs to.
    assert_eq!(
        json_of(bob.call(Method::GET, "/workspace", None).await, 200).await["id"],
        bob.workspace_id.as_str()
    );
    let members = json_of(ada.call(Method::GET, "/workspace/members", None).await, 200).await;
    assert_eq!(members["members"].as_array().unwrap().len(), 1);
    assert!(members["nextCursor"].is_null());
    // Revoked, not suspended: invited and joining again, his old key stays dead.
    let (_, again) = invite(&ada, "bob@example.com", "member").await;
    json_of(
        bob.call(
            Method::POST,
            "/invitations/accept",
            Some(json!({"token": again})),
        )
        .await,
        200,
    )
    .await;
    expect_error(
        b.call(Method::GET, "/workspace", None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    let keys = json_of(bob.call(Method::GET, "/api-keys", None).await, 200).await;
    assert_eq!(keys[0]["status"], "REVOKED", "{keys}");

    // Revoking a pending invitation; revoked tokens cannot be used.
    let (inv, token) = invite(&ada, "carol@example.com", "member").await;
    let revoked = json_of(
        ada.call(
            Method::POST,
            &format!(
                "/workspace/invitations/{}/revoke",
                inv["id"].as_str().unwrap()
            ),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(revoked["status"], "revoked");
    let carol = srv.sign_up("carol@example.com").await;
    srv.verify_email("carol@example.com").await;
    expect_error(
        carol
            .call(
                Method::POST,
                "/invitations/accept",
                Some(json!({"token": token})),
            )
            .await,
        409,
        "INVITATION_NOT_PENDING",
    )
    .await;
    expect_error(
        ada.call(Method::GET, "/workspace/invitations/none", None)
            .await,
        404,
        "INVITATION_NOT_FOUND",
    )
    .await;
    srv.stop().await;
}

#[tokio::test]
async fn invitation_links_expire() {
    let start = 1_800_000_000_000;
    let (srv, clock) = TestServer::with_clock(start).await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    srv.verify_email("bob@example.com").await;
    let (_, token) = invite(&ada, "bob@example.com", "member").await;
    clock.advance_ms(7 * 24 * 3600 * 1000 + 1);
    expect_error(
        bob.call(
            Method::POST,
            "/invitations/accept",
            Some(json!({"token": token})),
        )
        .await,
        409,
        "INVITATION_EXPIRED",
    )
    .await;
    let list = json_of(
        ada.call(Method::GET, "/workspace/invitations", None).await,
        200,
    )
    .await;
    assert_eq!(list["invitations"][0]["status"], "expired");
    srv.stop().await;
}

#[tokio::test]
async fn invitations_are_emailed_when_smtp_is_configured() {
    let (srv, sink) = smtp::server().await;
    let ada = srv.sign_up("ada@example.com").await;
    let inv = json_of(
        ada.call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "bob@example.com"})),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(inv["emailed"], true);
    assert!(inv["acceptUrl"].is_null(), "the link goes by email only");
    // Ada's sign-up emailed her a verification link too; the invitation is Bob's one mail.
    let mut messages = sink.messages.lock().unwrap().clone();
    messages.retain(|(to, _)| to != &["ada@example.com"]);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].0, vec!["bob@example.com".to_string()]);
    let body = messages[0].1.replace("=\r\n", "").replace("=3D", "=");
    let token = body
        .split("token=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();

    let bob = srv.sign_up("bob@example.com").await;
    srv.verify_email("bob@example.com").await;
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
    assert_eq!(ws["id"], ada.workspace_id.as_str());
    srv.stop().await;
}

#[tokio::test]
async fn member_quota_counts_pending_invitations() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.plans.quotas.insert(
                "self-hosted".into(),
                tocsin::config::PlanQuota {
                    members: Some(2),
                    ..Default::default()
                },
            );
        })),
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    invite(&ada, "bob@example.com", "member").await;
    let res = ada
        .call(
            Method::POST,
            "/workspace/invitations",
            Some(json!({"email": "carol@example.com"})),
        )
        .await;
    expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    let plan = json_of(ada.call(Method::GET, "/workspace/plan", None).await, 200).await;
    assert_eq!(plan["quotas"]["members"], 2);
    // Usage counts monitors too, paused ones included.
    assert_eq!(plan["usage"]["monitors"], 0);
    for (i, active) in [true, false].into_iter().enumerate() {
        let body = json!({"name": format!("m{i}"), "type": "TCP", "host": "127.0.0.1",
                          "port": 9, "active": active});
        json_of(ada.call(Method::POST, "/monitors", Some(body)).await, 201).await;
    }
    let plan = json_of(ada.call(Method::GET, "/workspace/plan", None).await, 200).await;
    assert_eq!(plan["usage"]["monitors"], 2);
    srv.stop().await;
}

#[tokio::test]
async fn notification_channel_quota_answers_402_and_usage_counts_channels_and_pages() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c| {
            c.plans.quotas.insert(
                "self-hosted".into(),
                tocsin::config::PlanQuota {
                    notification_channels: Some(1),
                    ..Default::default()
                },
            );
        })),
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    let hook = |name: &str| json!({"name": name, "type": "WEBHOOK", "config": {"url": "http://127.0.0.1:9/hook"}});
    json_of(
        ada.call(Method::POST, "/notification-channels", Some(hook("one")))
            .await,
        201,
    )
    .await;
    let res = ada
        .call(Method::POST, "/notification-channels", Some(hook("two")))
        .await;
    let err = expect_error(res, 402, "PLAN_LIMIT_EXCEEDED").await;
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("notification channels"),
        "{err}"
    );
    json_of(
        ada.call(
            Method::POST,
            "/status-pages",
            Some(json!({"name": "Acme", "slug": "acme-quota"})),
        )
        .await,
        201,
    )
    .await;
    let plan = json_of(ada.call(Method::GET, "/workspace/plan", None).await, 200).await;
    assert_eq!(plan["quotas"]["notificationChannels"], 1);
    assert_eq!(plan["usage"]["notificationChannels"], 1);
    assert_eq!(plan["usage"]["statusPages"], 1);
    srv.stop().await;
}
