//! Configuration as code on the real binary (`tocsin config ...`) against a server under test:
//! export, apply to an empty workspace and export again gives the same file, with every
//! resource kind; plan and apply of changes of each kind, `--prune`, drift made through the
//! API, an apply stopped half-way by the server and run again, a version conflict after a
//! saved plan, and every file error with its `FILE:LINE`; dependencies by name. Importers on
//! real inputs (a `kuma.db` made by Uptime Kuma, Gatus and Healthchecks configurations in their
//! documented formats), applied, and their monitors UP against loopback.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::binary::BIN;
use common::clock::{tick, T0};
use common::monitors::{array, get};
use common::{json_of, Bearer, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

/// What one run of `tocsin config ...` did.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `tocsin config ARGS` in `dir` against `srv` with `token`, plus `env`.
async fn config(
    dir: &Path,
    srv: &TestServer,
    token: &str,
    args: &[&str],
    env: &BTreeMap<String, String>,
) -> Out {
    let out = tokio::process::Command::new(BIN)
        .current_dir(dir)
        .arg("config")
        .args(args)
        .env("TOCSIN_SERVER", &srv.base)
        .env("TOCSIN_TOKEN", token)
        .envs(env)
        .output()
        .await
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A token of a new person's workspace on `srv`.
async fn workspace(srv: &TestServer, email: &str) -> (Bearer, String) {
    let u = srv.sign_up(email).await;
    let token = u
        .token(&[
            "monitors:read",
            "monitors:write",
            "monitors:delete",
            "status_pages:read",
            "status_pages:write",
            "status_pages:delete",
            "notifications:read",
            "notifications:write",
            "notifications:delete",
            "maintenance:write",
        ])
        .await;
    (Bearer::new(&srv.base, &token), token)
}

/// A value for each `${VAR}` in `text` that the server accepts where it stands.
fn secrets_for(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for part in text.split("${").skip(1) {
        let var = part.split('}').next().unwrap().to_string();
        let value = if var.ends_with("_SECRET") {
            "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0".to_string()
        } else if var.ends_with("URL") {
            "http://127.0.0.1:9/hook".to_string()
        } else if var.ends_with("PASSWORD") {
            "a page password".to_string()
        } else {
            "s3cr3t-value".to_string()
        };
        out.insert(var, value);
    }
    out
}

async fn post(b: &Bearer, path: &str, body: Value) -> Value {
    json_of(b.call(Method::POST, path, Some(body)).await, 201).await
}

/// A workspace with every resource kind, built through the API.
async fn build_everything(b: &Bearer) {
    let hook = post(
        b,
        "/notification-channels",
        json!({"name": "hook", "type": "WEBHOOK", "events": ["alert.opened", "alert.resolved"],
               "config": {"url": "http://127.0.0.1:9/hook", "headers": {"X-Api-Key": "k"}}}),
    )
    .await;
    let slack = post(
        b,
        "/notification-channels",
        json!({"name": "chat", "type": "SLACK", "events": null, "isDefault": true,
               "config": {"webhookUrl": "http://127.0.0.1:9/slack"}}),
    )
    .await;
    let policy = post(
        b,
        "/escalation-policies",
        json!({"name": "night", "steps": [
            {"delayMinutes": 0, "notificationChannelIds": [hook["id"]]},
            {"delayMinutes": 15, "notificationChannelIds": [hook["id"], slack["id"]]}]}),
    )
    .await;
    let project = post(
        b,
        "/projects",
        json!({"name": "api", "description": "The API"}),
    )
    .await;
    let web = post(
        b,
        "/monitors",
        json!({"name": "web", "type": "HTTP", "url": "http://127.0.0.1:9/health", "interval": 30,
               "timeout": 5, "retries": 1, "tags": ["prod"], "description": "front door",
               "config": {"method": "POST", "body": "{}", "headers": {"Accept": "application/json"},
                          "expect": {"statusCodes": [200, "3xx"]},
                          "assertions": [{"target": "latency", "operator": "lt", "value": 2000}]},
               "notificationChannelIds": [hook["id"]], "projectIds": [project["id"]],
               "flapDetection": null}),
    )
    .await;
    post(
        b,
        "/monitors",
        json!({"name": "db", "type": "TCP", "host": "127.0.0.1", "port": 5432, "config": {},
               "escalationPolicyId": policy["id"], "projectIds": [project["id"]]}),
    )
    .await;
    post(
        b,
        "/monitors",
        json!({"name": "backup", "type": "PUSH", "interval": 3600, "gracePeriod": 300,
               "config": {"schedule": "0 3 * * *", "timezone": "Europe/Berlin"}, "active": false}),
    )
    .await;
    post(
        b,
        "/monitors",
        json!({"name": "ping", "type": "PING", "host": "127.0.0.1", "config": {"count": 2}}),
    )
    .await;
    post(
        b,
        "/maintenance-windows",
        json!({"title": "patch tuesday", "monitorId": web["id"], "startsAt": "2030-01-01T02:00:00Z",
               "endsAt": "2030-01-01T03:00:00Z", "timezone": "Europe/Berlin",
               "recurring": {"frequency": "weekly", "dayOfWeek": 2}, "excludeFromUptime": true}),
    )
    .await;
    let page = post(
        b,
        "/status-pages",
        json!({"name": "Status", "slug": "acme-status", "published": true, "historyDays": 30,
               "branding": {"primaryColor": "#336699", "footerLinks": [{"label": "Home", "url": "https://example.com"}]},
               "access": {"visibility": "PASSWORD", "password": "a page password"}}),
    )
    .await;
    let res = b
        .call(
            Method::PUT,
            &format!("/status-pages/{}/components", page["id"].as_str().unwrap()),
            Some(
                json!([{"name": "Website", "group": "Public", "monitorId": web["id"]},
                        {"name": "Support"}]),
            ),
        )
        .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
}

#[tokio::test]
async fn export_apply_to_an_empty_workspace_and_export_again_gives_the_same_file() {
    let srv = TestServer::start().await;
    let other = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let none = BTreeMap::new();
    let (b, token) = workspace(&srv, "source@example.com").await;
    build_everything(&b).await;

    let first = config(dir.path(), &srv, &token, &["export"], &none).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let text = first.stdout;
    for kind in [
        "notificationChannels:",
        "escalationPolicies:",
        "projects:",
        "monitors:",
        "maintenanceWindows:",
        "statusPages:",
        "components:",
    ] {
        assert!(text.contains(kind), "{kind} in\n{text}");
    }
    // Names, never ids; secrets as placeholders, never values.
    assert!(text.contains("escalationPolicy: night"), "{text}");
    assert!(text.contains("monitor: web"), "{text}");
    assert!(text.contains("${TOCSIN_CHAT_WEBHOOKURL}"), "{text}");
    assert!(
        text.contains("${TOCSIN_PAGE_ACME_STATUS_PASSWORD}"),
        "{text}"
    );
    assert!(!text.contains("127.0.0.1:9/slack"), "{text}");
    assert!(!text.contains("********"), "{text}");
    write(dir.path(), "tocsin.yaml", &text);

    // The slug is unique on a server: the empty workspace is on another one.
    let (_, empty) = workspace(&other, "target@example.com").await;
    let env = secrets_for(&text);
    let plan = config(
        dir.path(),
        &other,
        &empty,
        &["plan", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("+ monitor \"web\""), "{}", plan.stdout);
    let applied = config(
        dir.path(),
        &other,
        &empty,
        &["apply", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);

    let again = config(dir.path(), &other, &empty, &["export"], &none).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, text, "the round trip changes nothing");
    let plan = config(
        dir.path(),
        &other,
        &empty,
        &["plan", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("Nothing to do"), "{}", plan.stdout);
    // Applying twice changes nothing either.
    let twice = config(
        dir.path(),
        &other,
        &empty,
        &["apply", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(twice.stdout.contains("Nothing to do"), "{}", twice.stdout);
    srv.stop().await;
    other.stop().await;
}

const BASE: &str = "version: 1
notificationChannels:
  - name: ops
    type: WEBHOOK
    config:
      url: http://127.0.0.1:9/ops
    events: [alert.opened]
escalationPolicies:
  - name: day
    steps:
      - delayMinutes: 0
        notificationChannels: [ops]
projects:
  - name: shop
monitors:
  - name: api
    type: HTTP
    url: http://127.0.0.1:9/api
    interval: 60
    notificationChannels: [ops]
    projects: [shop]
  - name: cache
    type: TCP
    host: 127.0.0.1
    port: 6379
    escalationPolicy: day
maintenanceWindows:
  - title: upgrade
    monitor: api
    startsAt: 2030-05-01T01:00:00Z
    endsAt: 2030-05-01T02:00:00Z
statusPages:
  - slug: shop-status
    name: Shop
    components:
      - name: API
        monitor: api
";

#[tokio::test]
async fn plan_and_apply_changes_of_each_kind_prune_and_drift() {
    let srv = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::new();
    let (b, token) = workspace(&srv, "ops@example.com").await;
    write(dir.path(), "t.yaml", BASE);
    let first = config(dir.path(), &srv, &token, &["apply", "-f", "t.yaml"], &env).await;
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(
        first.stdout.contains("Applied 7 changes."),
        "{}",
        first.stdout
    );
    let plan = config(dir.path(), &srv, &token, &["plan", "-f", "t.yaml"], &env).await;
    assert_eq!(
        (plan.code, plan.stdout.trim()),
        (0, "Nothing to do: the workspace matches the file.")
    );

    // A change of each kind.
    let changed = BASE
        .replace("events: [alert.opened]", "events: [alert.opened, alert.resolved]")
        .replace("delayMinutes: 0", "delayMinutes: 5")
        .replace("  - name: shop\n", "  - name: shop\n    description: The shop\n")
        .replace("interval: 60", "interval: 40")
        .replace("endsAt: 2030-05-01T02:00:00Z", "endsAt: 2030-05-01T03:00:00Z")
        .replace("name: Shop", "name: Shop status")
        .replace("      - name: API\n        monitor: api\n", "      - name: API\n        monitor: api\n      - name: Cache\n        monitor: cache\n");
    write(dir.path(), "t.yaml", &changed);
    let plan = config(dir.path(), &srv, &token, &["plan", "-f", "t.yaml"], &env).await;
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    for line in [
        "~ notification channel \"ops\"",
        "    events: [\"alert.opened\"] -> [\"alert.opened\",\"alert.resolved\"]",
        "~ escalation policy \"day\"",
        "~ project \"shop\"",
        "    description: null -> \"The shop\"",
        "~ monitor \"api\"",
        "    interval: 60 -> 40",
        "~ maintenance window \"upgrade\"",
        "~ status page \"shop-status\"",
        "    name: \"Shop\" -> \"Shop status\"",
        "Plan: 0 to create, 6 to update, 0 to delete.",
    ] {
        assert!(plan.stdout.contains(line), "{line:?} in\n{}", plan.stdout);
    }
    let applied = config(dir.path(), &srv, &token, &["apply", "-f", "t.yaml"], &env).await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let plan = config(dir.path(), &srv, &token, &["plan", "-f", "t.yaml"], &env).await;
    assert_eq!(plan.code, 0, "{}", plan.stdout);
    let pages = array(&b, "/status-pages").await;
    let comps = array(
        &b,
        &format!(
            "/status-pages/{}/components",
            pages[0]["id"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(comps.len(), 2);

    // Drift: an edit through the API shows in the plan, and apply puts it back.
    let monitors = get(&b, "/monitors/page").await["monitors"].clone();
    let api = monitors
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "api")
        .unwrap();
    let res = b
        .call(
            Method::PATCH,
            &format!("/monitors/{}", api["id"].as_str().unwrap()),
            Some(json!({"interval": 45, "tags": ["manual"]})),
        )
        .await;
    assert_eq!(res.status(), 200);
    let plan = config(dir.path(), &srv, &token, &["plan", "-f", "t.yaml"], &env).await;
    assert_eq!(plan.code, 2);
    assert!(
        plan.stdout.contains("    interval: 45 -> 40"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("    tags: [\"manual\"] -> []"),
        "{}",
        plan.stdout
    );
    let applied = config(dir.path(), &srv, &token, &["apply", "-f", "t.yaml"], &env).await;
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let api = get(&b, &format!("/monitors/{}", api["id"].as_str().unwrap())).await;
    assert_eq!(
        (api["interval"].as_i64(), api["tags"].clone()),
        (Some(40), json!([]))
    );

    // What the file stops naming is left alone, and deleted only with --prune.
    let fewer = changed
        .replace("maintenanceWindows:\n  - title: upgrade\n    monitor: api\n    startsAt: 2030-05-01T01:00:00Z\n    endsAt: 2030-05-01T03:00:00Z\n", "")
        .replace("      - name: Cache\n        monitor: cache\n", "")
        .replace("  - name: cache\n    type: TCP\n    host: 127.0.0.1\n    port: 6379\n    escalationPolicy: day\n", "");
    write(dir.path(), "t.yaml", &fewer);
    let plan = config(dir.path(), &srv, &token, &["plan", "-f", "t.yaml"], &env).await;
    assert_eq!(plan.code, 2, "the components still change: {}", plan.stdout);
    assert!(plan.stdout.contains("Not in the file, left alone (--prune deletes them):\n  monitor \"cache\"\n  maintenance window \"upgrade\""), "{}", plan.stdout);
    let applied = config(dir.path(), &srv, &token, &["apply", "-f", "t.yaml"], &env).await;
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    assert_eq!(
        array(&b, "/maintenance-windows").await.len(),
        1,
        "left alone"
    );
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "t.yaml", "--prune"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 2);
    assert!(plan.stdout.contains("- maintenance window \"upgrade\"\n- monitor \"cache\"\nPlan: 0 to create, 0 to update, 2 to delete."), "{}", plan.stdout);
    let pruned = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "t.yaml", "--prune"],
        &env,
    )
    .await;
    assert_eq!(pruned.code, 0, "{}", pruned.stderr);
    assert!(array(&b, "/maintenance-windows").await.is_empty());
    assert_eq!(
        get(&b, "/monitors/page").await["monitors"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "t.yaml", "--prune"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 0, "{}", plan.stdout);
    srv.stop().await;
}

#[tokio::test]
async fn an_apply_stopped_by_the_server_says_what_is_done_and_a_rerun_finishes() {
    let srv = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::new();
    let (b, token) = workspace(&srv, "ops@example.com").await;
    let text = "version: 1
monitors:
  - name: one
    type: TCP
    host: 127.0.0.1
    port: 1
  - name: two
    type: TCP
    host: 127.0.0.1
    port: 2
    interval: 3
  - name: three
    type: TCP
    host: 127.0.0.1
    port: 3
";
    write(dir.path(), "m.yaml", text);
    let out = config(dir.path(), &srv, &token, &["apply", "-f", "m.yaml"], &env).await;
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stdout.trim(), "+ monitor \"one\"");
    assert!(
        out.stderr.contains("m.yaml:11: monitors[1].interval: "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("(VALIDATION_ERROR)"), "{}", out.stderr);
    assert!(
        out.stderr.contains("Stopped: 1 changes done, 2 not done (run apply again to finish):\n  + monitor \"two\"\n  + monitor \"three\""),
        "{}",
        out.stderr
    );
    assert_eq!(
        get(&b, "/monitors/page").await["monitors"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    write(
        dir.path(),
        "m.yaml",
        &text.replace("interval: 3", "interval: 30"),
    );
    let out = config(dir.path(), &srv, &token, &["apply", "-f", "m.yaml"], &env).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "+ monitor \"two\"\n+ monitor \"three\"\nApplied 2 changes.\n"
    );
    srv.stop().await;
}

#[tokio::test]
async fn a_change_made_after_a_saved_plan_stops_the_apply() {
    let srv = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::new();
    let (b, token) = workspace(&srv, "ops@example.com").await;
    let text = "version: 1\nprojects:\n  - name: shop\n    description: one\n";
    write(dir.path(), "p.yaml", text);
    assert_eq!(
        config(dir.path(), &srv, &token, &["apply", "-f", "p.yaml"], &env)
            .await
            .code,
        0
    );
    write(dir.path(), "p.yaml", &text.replace("one", "two"));
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "p.yaml", "--out", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 2, "{}", plan.stderr);

    // Someone edits the project in the UI after the plan was reviewed.
    let project = &array(&b, "/projects").await[0];
    let res = b
        .call(
            Method::PATCH,
            &format!("/projects/{}", project["id"].as_str().unwrap()),
            Some(json!({"name": "shop", "description": "edited"})),
        )
        .await;
    assert_eq!(res.status(), 200);
    let out = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "p.yaml", "--plan", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("project \"shop\" changed since the plan was computed: plan again"),
        "{}",
        out.stderr
    );
    assert_eq!(
        array(&b, "/projects").await[0]["description"],
        "edited",
        "not overwritten"
    );

    // An edit that does not change the plan's diff is caught by the version lock.
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "p.yaml", "--out", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 2);
    let res = b
        .call(
            Method::PATCH,
            &format!("/projects/{}", project["id"].as_str().unwrap()),
            Some(json!({"name": "shop", "description": "edited"})),
        )
        .await;
    assert_eq!(res.status(), 200);
    let out = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "p.yaml", "--plan", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("changed since the plan was computed: plan again"),
        "{}",
        out.stderr
    );
    // Planned again, it applies.
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "p.yaml", "--out", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 2);
    let out = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "p.yaml", "--plan", "plan.json"],
        &env,
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(array(&b, "/projects").await[0]["description"], "two");
    srv.stop().await;
}

#[tokio::test]
async fn file_errors_name_the_file_line_and_field() {
    let srv = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = BTreeMap::new();
    let (_, token) = workspace(&srv, "ops@example.com").await;
    let cases = [
        ("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n   url: x\n", "bad.yaml:5: "),
        ("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n    intervall: 30\n", "bad.yaml:5: monitors[0].intervall: unknown field `intervall`"),
        ("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n  - name: b\n    type: HTTP\n    interval: soon\n", "bad.yaml:7: monitors[1].interval: wrong type: string \"soon\", expected an integer"),
        ("version: 1\nmonitors:\n  - name: a\n    type: HTTP\n    escalationPolicy: night\n", "bad.yaml:5: monitors[0].escalationPolicy: no escalation policy named \"night\" in this file"),
        ("version: 1\nstatusPages:\n  - slug: s-one\n    name: S\n    components:\n      - name: c\n        monitor: nope\n", "bad.yaml:7: statusPages[0].components[0].monitor: no monitor named \"nope\" in this file"),
        ("version: 1\nmonitors:\n  - name: a\n    type: PUSH\n  - name: a\n    type: PUSH\n", "bad.yaml:5: monitors[1].name: duplicate name \"a\": already used by monitors[0] (line 3)"),
        ("version: 2\n", "bad.yaml:1: version: must be 1"),
        ("version: 1\nnotificationChannels:\n  - name: c\n    type: SLACK\n    config:\n      webhookUrl: ${UNSET_HOOK}\n", "bad.yaml:6: notificationChannels[0].config.webhookUrl: environment variable UNSET_HOOK is not set"),
    ];
    for (text, expected) in cases {
        write(dir.path(), "bad.yaml", text);
        let out = config(dir.path(), &srv, &token, &["plan", "-f", "bad.yaml"], &env).await;
        assert_eq!(out.code, 1, "{text}: {}", out.stdout);
        assert!(
            out.stderr.starts_with(expected),
            "{text}\nwanted {expected:?}\ngot {:?}",
            out.stderr
        );
    }
    // JSON reads too, and its errors have lines as well.
    write(
        dir.path(),
        "bad.json",
        "{\"version\": 1,\n \"monitors\": [\n  {\"name\": \"a\", \"type\": \"HTTPS\"}]}\n",
    );
    let out = config(dir.path(), &srv, &token, &["plan", "-f", "bad.json"], &env).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("bad.json:3: monitors[0].type: unknown variant `HTTPS`"),
        "{}",
        out.stderr
    );
    srv.stop().await;
}

#[tokio::test]
async fn the_schema_describes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(BIN)
        .current_dir(dir.path())
        .args(["config", "schema"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["title"], "Tocsin configuration");
    for list in [
        "monitors",
        "notificationChannels",
        "escalationPolicies",
        "maintenanceWindows",
        "projects",
        "statusPages",
    ] {
        assert!(schema["properties"][list].is_object(), "{list}");
    }
    assert_eq!(schema["properties"]["version"]["type"], "integer");
}

/// A loopback service answering `{"status": "UP"}` on every path.
async fn json_target() -> String {
    let app = axum::Router::new().fallback(|| async { axum::Json(json!({"status": "UP"})) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr.to_string()
}

/// Gatus's documented example configuration (README "Configuration", "Alerting" with Slack,
/// "Monitoring a TCP endpoint", "External Endpoints"), pointed at a loopback target.
const GATUS: &str = r#"alerting:
  slack:
    webhook-url: "https://hooks.slack.com/services/**********/**********/**********"
  custom:
    url: "https://hooks.example.com/alert"
    method: "POST"
    body: |
      {"text": "[ALERT_TRIGGERED_OR_RESOLVED]: [ENDPOINT_NAME] - [ALERT_DESCRIPTION]"}

endpoints:
  - name: website                 # Name of your endpoint, can be anything
    url: "http://TARGET/health"
    interval: 5m                  # Duration to wait between every status check (default: 60s)
    conditions:
      - "[STATUS] == 200"         # Status must be 200
      - "[BODY].status == UP"     # The json path "$.status" must be equal to UP
      - "[RESPONSE_TIME] < 300"   # Response time must be under 300ms
    alerts:
      - type: slack
        description: "healthcheck failed"
        send-on-resolved: true

  - name: make-sure-header-is-rendered
    url: "http://TARGET/"
    conditions:
      - "[STATUS] == 200"
      - "len([BODY]) > 0"

  - name: redis
    group: core
    url: "tcp://TARGET"
    interval: 30s
    conditions:
      - "[CONNECTED] == true"

  - name: check-ssh
    url: "ssh://example.com:22"
    conditions:
      - "[CONNECTED] == true"

external-endpoints:
  - name: ext-ep-test
    group: core
    token: "potato"
    heartbeat:
      interval: 30m
"#;

/// Healthchecks' `GET /api/v3/checks/` answer as its API documentation shows it.
const HEALTHCHECKS: &str = r#"{
  "checks": [
    {
      "name": "Filesystem Backup",
      "slug": "filesystem-backup",
      "tags": "backup fs",
      "desc": "Runs incremental backup every hour",
      "grace": 600,
      "n_pings": 1,
      "status": "up",
      "started": false,
      "last_ping": "2020-03-24T14:02:03+00:00",
      "next_ping": "2020-03-24T15:02:03+00:00",
      "manual_resume": false,
      "methods": "",
      "subject": "",
      "subject_fail": "",
      "start_kw": "",
      "success_kw": "",
      "failure_kw": "",
      "filter_subject": false,
      "filter_body": false,
      "ping_url": "https://hc-ping.com/31365bce-8da9-4729-8ff3-aaa71d56b712",
      "update_url": "https://healthchecks.io/api/v3/checks/31365bce-8da9-4729-8ff3-aaa71d56b712",
      "pause_url": "https://healthchecks.io/api/v3/checks/31365bce-8da9-4729-8ff3-aaa71d56b712/pause",
      "resume_url": "https://healthchecks.io/api/v3/checks/31365bce-8da9-4729-8ff3-aaa71d56b712/resume",
      "channels": "1bdea674-6ebf-4a9b-b31f-f5ad2beeda7f",
      "timeout": 3600
    },
    {
      "name": "Database Backup",
      "slug": "database-backup",
      "tags": "production db",
      "desc": "Runs ~/db-backup.sh",
      "grace": 1200,
      "n_pings": 7,
      "status": "down",
      "started": false,
      "last_ping": "2020-03-23T10:19:32+00:00",
      "next_ping": null,
      "manual_resume": false,
      "methods": "",
      "subject": "",
      "subject_fail": "",
      "start_kw": "",
      "success_kw": "",
      "failure_kw": "",
      "filter_subject": false,
      "filter_body": false,
      "ping_url": "https://hc-ping.com/803f680d-e89b-492b-82ef-2be7b774a92d",
      "update_url": "https://healthchecks.io/api/v3/checks/803f680d-e89b-492b-82ef-2be7b774a92d",
      "pause_url": "https://healthchecks.io/api/v3/checks/803f680d-e89b-492b-82ef-2be7b774a92d/pause",
      "resume_url": "https://healthchecks.io/api/v3/checks/803f680d-e89b-492b-82ef-2be7b774a92d/resume",
      "channels": "1bdea674-6ebf-4a9b-b31f-f5ad2beeda7f",
      "schedule": "15 5 * * *",
      "tz": "UTC"
    }
  ]
}"#;

async fn import(dir: &Path, args: &[&str]) -> Out {
    let out = tokio::process::Command::new(BIN)
        .current_dir(dir)
        .arg("config")
        .arg("import")
        .args(args)
        .output()
        .await
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every monitor of the workspace, by name.
async fn monitors_by_name(b: &Bearer) -> BTreeMap<String, Value> {
    get(b, "/monitors/page").await["monitors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_string(), m.clone()))
        .collect()
}

/// Pushes once to a PUSH monitor (with a fresh token) and returns its status afterwards.
async fn push_once(srv: &TestServer, b: &Bearer, id: &str) -> String {
    let token = json_of(
        b.call(
            Method::POST,
            &format!("/monitors/{id}/regenerate-push-token"),
            None,
        )
        .await,
        200,
    )
    .await["pushToken"]
        .as_str()
        .unwrap()
        .to_string();
    let res = reqwest::Client::new()
        .post(srv.url(&format!("/push/{token}")))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    get(b, &format!("/monitors/{id}")).await["status"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_gatus_configuration_imports_applies_and_runs_up() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let dir = tempfile::tempdir().unwrap();
    let target = json_target().await;
    write(dir.path(), "config.yaml", &GATUS.replace("TARGET", &target));
    let out = import(dir.path(), &["gatus", "config.yaml"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    for note in [
        "alerting.slack.webhook-url: a secret: set TOCSIN_SLACK_WEBHOOKURL to its value (not written into the file)",
        "alerting.custom: method and body templates are not carried: a webhook channel posts Standard Webhooks JSON",
        "endpoints[1] (make-sure-header-is-rendered).conditions[1]: \"len([BODY]) > 0\" not carried",
        "endpoints[3] (check-ssh): url \"ssh://example.com:22\": no Tocsin monitor type for this scheme; endpoint not carried",
        "external-endpoints[0] (ext-ep-test): token not carried",
    ] {
        assert!(out.stderr.contains(note), "{note:?} in\n{}", out.stderr);
    }
    assert!(out.stderr.lines().all(|l| !l.is_empty()), "one line each");
    write(dir.path(), "tocsin.yaml", &out.stdout);

    let (b, token) = workspace(&srv, "gatus@example.com").await;
    let env = BTreeMap::from([(
        "TOCSIN_SLACK_WEBHOOKURL".to_string(),
        "http://127.0.0.1:9/slack".to_string(),
    )]);
    let applied = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(
        applied.code, 0,
        "{}\n{}\n{}",
        out.stdout, applied.stdout, applied.stderr
    );
    let ms = monitors_by_name(&b).await;
    assert_eq!(
        ms.keys().collect::<Vec<_>>(),
        [
            "ext-ep-test",
            "make-sure-header-is-rendered",
            "redis",
            "website"
        ]
    );
    assert_eq!(ms["website"]["interval"].as_i64(), Some(300));
    assert_eq!(
        ms["website"]["config"]["assertions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        ms["website"]["notificationChannelIds"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(ms["redis"]["type"], "TCP");
    assert_eq!(ms["ext-ep-test"]["type"], "PUSH");
    assert_eq!(array(&b, "/projects").await[0]["name"], "core");

    for _ in 0..3 {
        clock.advance_ms(300_000);
        tick(&srv, &clock).await;
    }
    let ms = monitors_by_name(&b).await;
    for name in ["website", "make-sure-header-is-rendered", "redis"] {
        assert_eq!(ms[name]["status"], "UP", "{name}: {}", ms[name]);
    }
    let ext = ms["ext-ep-test"]["id"].as_str().unwrap().to_string();
    assert_eq!(push_once(&srv, &b, &ext).await, "UP");
    srv.stop().await;
}

#[tokio::test]
async fn a_healthchecks_list_imports_applies_and_runs_up() {
    let srv = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "checks.json", HEALTHCHECKS);
    let out = import(dir.path(), &["healthchecks", "checks.json"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "checks[0] (Filesystem Backup): integrations (channels) are not in the checks API"
        ),
        "{}",
        out.stderr
    );
    write(dir.path(), "tocsin.yaml", &out.stdout);
    let (b, token) = workspace(&srv, "hc@example.com").await;
    let applied = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "tocsin.yaml"],
        &BTreeMap::new(),
    )
    .await;
    assert_eq!(applied.code, 0, "{}\n{}", out.stdout, applied.stderr);
    let ms = monitors_by_name(&b).await;
    let fs = &ms["Filesystem Backup"];
    assert_eq!(
        (
            fs["type"].as_str(),
            fs["interval"].as_i64(),
            fs["gracePeriod"].as_i64()
        ),
        (Some("PUSH"), Some(3600), Some(600))
    );
    assert_eq!(fs["tags"], json!(["backup", "fs"]));
    let db = &ms["Database Backup"];
    assert_eq!(
        db["config"],
        json!({"schedule": "15 5 * * *", "timezone": "UTC"})
    );
    assert_eq!(db["gracePeriod"].as_i64(), Some(1200));
    for m in ms.values() {
        assert_eq!(
            push_once(&srv, &b, m["id"].as_str().unwrap()).await,
            "UP",
            "{}",
            m["name"]
        );
    }
    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "tocsin.yaml"],
        &BTreeMap::new(),
    )
    .await;
    assert_eq!(plan.code, 0, "{}", plan.stdout);
    srv.stop().await;
}

/// A loopback WebSocket server accepting every handshake and holding the connection open.
async fn ws_target() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await {
                    use futures::StreamExt;
                    while let Some(Ok(_)) = ws.next().await {}
                }
            });
        }
    });
    port
}

/// Imports a `kuma.db` made by a real Uptime Kuma (`tests/it/fixtures/README.md` says how),
/// applies it to a fresh workspace and checks what was carried runs UP against loopback
/// targets: the fixture's monitors point at 127.0.0.1 ports 39901 (HTTP and TCP), 39902
/// (WebSocket) and 39903 (DNS), which the test swaps for its own servers.
async fn a_kuma_database_imports_applies_and_runs_up(fixture: &str, websocket: bool) {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let dir = tempfile::tempdir().unwrap();
    // A copy: SQLite may leave its -shm file beside a WAL database it opened.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(fixture);
    std::fs::copy(&source, dir.path().join("kuma.db")).unwrap();
    let out = import(dir.path(), &["uptime-kuma", "kuma.db"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let notes = &out.stderr;
    for note in [
        "monitor[1] (Core services): a group monitor: carried as the project \"Core services\"",
        "(Item count): the JSON query \"$count(items)\" is a JSONata expression with no JSONPath equivalent; monitor not carried",
        "(Cache): type \"redis\" has no Tocsin monitor type; not carried",
        "(Nightly backup): the push token is not carried",
        "notification[4] (Signal group): no Tocsin channel type for provider \"signal\"; not carried",
        "notification[1] (Team Slack): a secret: set TOCSIN_TEAM_SLACK_WEBHOOKURL to its value",
        "notification[3] (On-call Telegram): a secret: set TOCSIN_ON_CALL_TELEGRAM_BOTTOKEN to its value",
        "(API POST): a secret: set TOCSIN_API_POST_PASSWORD to the basic-auth password",
        "maintenance[3] (Hands-on work): strategy \"manual\" (started and stopped by hand) is not carried",
        "status_page[1] (acme): the description is not carried",
        "in group \"Backend\" was not carried; left off the page",
    ] {
        assert!(notes.contains(note), "{note:?} in\n{notes}");
    }
    assert!(notes.lines().all(|l| !l.is_empty()), "one line each");
    let text = out.stdout;
    for secret in ["hooks.slack.com", "probe-pass", "123456:ABCDEF"] {
        assert!(!text.contains(secret), "{secret} in\n{text}");
    }

    let http = json_target().await;
    let http_port = http.rsplit(':').next().unwrap().to_string();
    let ws_port = ws_target().await;
    let dns = common::domains::TestDns::start().await;
    dns.set_txt("status.example.com", &["v=ok"]).await;
    let text = text
        .replace("39901", &http_port)
        .replace("39902", &ws_port.to_string())
        .replace("39903", &dns.addr.port().to_string());
    write(dir.path(), "tocsin.yaml", &text);

    let (b, token) = workspace(&srv, "kuma@example.com").await;
    let env = secrets_for(&text);
    let applied = config(
        dir.path(),
        &srv,
        &token,
        &["apply", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(
        applied.code, 0,
        "{text}\n{}\n{}",
        applied.stdout, applied.stderr
    );

    let ms = monitors_by_name(&b).await;
    let mut expected = vec![
        "API POST",
        "Database port",
        "Homepage keyword",
        "Internal DNS",
        "Loopback ping",
        "Nightly backup",
        "Status JSON",
        "Website",
    ];
    if websocket {
        expected.push("Live socket");
        expected.sort();
    }
    assert_eq!(ms.keys().collect::<Vec<_>>(), expected, "{text}");
    let web = &ms["Website"];
    assert_eq!(
        (
            web["type"].as_str(),
            web["interval"].as_i64(),
            web["timeout"].as_i64(),
            web["confirmationsRequired"].as_i64(),
        ),
        (Some("HTTP"), Some(30), Some(29), Some(3))
    );
    assert_eq!(web["tags"], json!(["prod", "env:eu"]));
    assert_eq!(
        web["config"]["headers"],
        json!({"Accept": "application/json"})
    );
    assert_eq!(web["notificationChannelIds"].as_array().unwrap().len(), 2);
    let post = &ms["API POST"];
    assert_eq!(post["config"]["method"], "POST");
    assert_eq!(post["config"]["body"], "{\"ping\":true}");
    assert_eq!(post["config"]["expect"]["statusCodes"], json!([200, 201]));
    assert_eq!(post["config"]["followRedirects"], false);
    assert_eq!(post["config"]["auth"]["username"], "probe");
    assert_eq!(
        ms["Homepage keyword"]["config"]["assertions"],
        json!([{"target": "body", "operator": "contains", "value": "UP"}])
    );
    assert_eq!(
        ms["Status JSON"]["config"]["assertions"][0],
        json!({"target": "jsonPath", "property": "$.status", "operator": "eq", "value": "UP"})
    );
    assert_eq!(ms["Database port"]["type"], "TCP");
    assert_eq!(ms["Internal DNS"]["config"]["recordType"], "TXT");
    assert_eq!(ms["Nightly backup"]["type"], "PUSH");
    let projects = array(&b, "/projects").await;
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0]["name"], "Core services");
    for name in ["Database port", "Internal DNS"] {
        assert_eq!(ms[name]["projectIds"], json!([projects[0]["id"]]), "{name}");
    }
    let channels = get(&b, "/notification-channels").await["notificationChannels"].clone();
    let mut kinds: Vec<&str> = channels
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["SLACK", "TELEGRAM", "WEBHOOK"]);
    let windows = array(&b, "/maintenance-windows").await;
    let mut titles: Vec<&str> = windows
        .iter()
        .map(|w| w["title"].as_str().unwrap())
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        [
            "Database upgrade",
            "Weekly patching (Homepage keyword)",
            "Weekly patching (Website)"
        ]
    );
    let weekly = windows
        .iter()
        .find(|w| w["title"] == "Weekly patching (Website)")
        .unwrap();
    assert_eq!(
        (
            weekly["recurring"]["expression"].as_str(),
            weekly["timezone"].as_str()
        ),
        (Some("0 1 * * 2,4"), Some("Europe/Berlin"))
    );
    let page = array(&b, "/status-pages").await;
    assert_eq!(
        (page[0]["slug"].as_str(), page[0]["name"].as_str()),
        (Some("acme"), Some("Acme Status"))
    );
    let comps = array(
        &b,
        &format!(
            "/status-pages/{}/components",
            page[0]["id"].as_str().unwrap()
        ),
    )
    .await;
    let groups: Vec<(&str, &str)> = comps
        .iter()
        .map(|c| {
            (
                c["group"].as_str().unwrap_or(""),
                c["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("Public", "Website"),
            ("Public", "Homepage keyword"),
            ("Public", "Status JSON"),
            ("Backend", "Database port"),
            ("Backend", "Internal DNS")
        ]
    );

    for _ in 0..4 {
        clock.advance_ms(60_000);
        tick(&srv, &clock).await;
    }
    let ms = monitors_by_name(&b).await;
    // Ping is left out: ICMP from an unprivileged test process is not everywhere allowed.
    let mut up = vec![
        "Website",
        "API POST",
        "Homepage keyword",
        "Status JSON",
        "Database port",
        "Internal DNS",
    ];
    if websocket {
        up.push("Live socket");
    }
    for name in up {
        assert_eq!(ms[name]["status"], "UP", "{name}: {}", ms[name]);
    }
    let backup = ms["Nightly backup"]["id"].as_str().unwrap().to_string();
    assert_eq!(push_once(&srv, &b, &backup).await, "UP");

    let plan = config(
        dir.path(),
        &srv,
        &token,
        &["plan", "-f", "tocsin.yaml"],
        &env,
    )
    .await;
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    srv.stop().await;
}

#[tokio::test]
async fn an_uptime_kuma_2_database_imports_applies_and_runs_up() {
    a_kuma_database_imports_applies_and_runs_up("uptime-kuma-2.5.3.db", true).await;
}

/// Sets what monitor `m` depends on through the API.
async fn depend(b: &Bearer, m: &Value, ids: Value) {
    let path = format!("/monitors/{}", m["id"].as_str().unwrap());
    let res = b
        .call(Method::PATCH, &path, Some(json!({"dependsOn": ids})))
        .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
}

#[tokio::test]
async fn dependencies_round_trip_by_name_in_dependency_order() {
    let srv = TestServer::start().await;
    let other = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let none = BTreeMap::new();
    let (b, token) = workspace(&srv, "deps@example.com").await;
    // Created in an order where each monitor depends on one made after it: the file lists
    // them so, and apply must still resolve every name.
    let web = post(
        &b,
        "/monitors",
        json!({"name": "a-web", "type": "TCP", "host": "127.0.0.1", "port": 9}),
    )
    .await;
    let api = post(
        &b,
        "/monitors",
        json!({"name": "b-api", "type": "TCP", "host": "127.0.0.1", "port": 9}),
    )
    .await;
    let db = post(
        &b,
        "/monitors",
        json!({"name": "c-db", "type": "TCP", "host": "127.0.0.1", "port": 9}),
    )
    .await;
    depend(&b, &web, json!([api["id"], db["id"]])).await;
    depend(&b, &api, json!([db["id"]])).await;

    let first = config(dir.path(), &srv, &token, &["export"], &none).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let text = first.stdout;
    assert!(text.contains("dependsOn:"), "{text}");
    for id in [&api["id"], &db["id"]] {
        assert!(
            !text.contains(id.as_str().unwrap()),
            "ids, not names, in\n{text}"
        );
    }
    write(dir.path(), "tocsin.yaml", &text);

    let (ob, empty) = workspace(&other, "deps-target@example.com").await;
    let applied = config(
        dir.path(),
        &other,
        &empty,
        &["apply", "-f", "tocsin.yaml"],
        &none,
    )
    .await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let ms = monitors_by_name(&ob).await;
    let id = |n: &str| ms[n]["id"].clone();
    let deps = |n: &str| {
        let mut d: Vec<String> = ms[n]["dependsOn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        d.sort();
        d
    };
    let mut want = vec![
        id("b-api").as_str().unwrap().to_string(),
        id("c-db").as_str().unwrap().to_string(),
    ];
    want.sort();
    assert_eq!(deps("a-web"), want);
    assert_eq!(deps("b-api"), [id("c-db").as_str().unwrap()]);
    assert!(deps("c-db").is_empty());

    let again = config(dir.path(), &other, &empty, &["export"], &none).await;
    assert_eq!(again.stdout, text, "the round trip changes nothing");
    let plan = config(
        dir.path(),
        &other,
        &empty,
        &["plan", "-f", "tocsin.yaml"],
        &none,
    )
    .await;
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("Nothing to do"), "{}", plan.stdout);

    // A changed dependency is planned as such and applied by name.
    let changed = text.replacen("  - b-api\n  - c-db\n", "  - b-api\n", 1);
    assert_ne!(changed, text, "{text}");
    write(dir.path(), "tocsin.yaml", &changed);
    let plan = config(
        dir.path(),
        &other,
        &empty,
        &["plan", "-f", "tocsin.yaml"],
        &none,
    )
    .await;
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("dependsOn"), "{}", plan.stdout);
    let applied = config(
        dir.path(),
        &other,
        &empty,
        &["apply", "-f", "tocsin.yaml"],
        &none,
    )
    .await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let after = config(dir.path(), &other, &empty, &["export"], &none).await;
    assert_eq!(after.stdout, changed);
    srv.stop().await;
    other.stop().await;
}

#[tokio::test]
async fn an_uptime_kuma_1_23_database_imports_applies_and_runs_up() {
    a_kuma_database_imports_applies_and_runs_up("uptime-kuma-1.23.17.db", false).await;
}
