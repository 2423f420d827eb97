//! Billing through Stripe: the four session-only operations, the Stripe requests they make
//! (against a Stripe-speaking server on loopback that records them), and the webhook, signed
//! as Stripe signs it (the signer is checked against Stripe's own library by
//! `scripts/stripe_signature_check.py`): plans applied, changed and dropped, payment failures
//! emailed, forged, stale, unsigned, repeated, late and unknown events changing nothing, and
//! one application of an event that two nodes receive at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method as AxMethod, Uri};
use axum::Json;
use reqwest::Method;
use serde_json::{json, Value};
use tocsin::config::{Config, PlanQuota, Plans, Stripe};

use crate::common::monitors::{http_body, merged};
use crate::common::smtp::{self, Sink};
use crate::common::{expect_error, field_error, json_of, keys, Bearer, Options, TestServer, User};

const SECRET: &str = "whsec_test_billing_secret";
const OLD_SECRET: &str = "whsec_test_rotated_out";
const TEAM: &str = "price_team_monthly";
const BUSINESS: &str = "price_business_monthly";

/// One request the fake Stripe received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: HeaderMap,
    form: Vec<(String, String)>,
}

impl Seen {
    fn field(&self, key: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct FakeState {
    seen: Vec<Seen>,
    subscriptions: HashMap<String, Value>,
    customers: usize,
}

/// A Stripe-speaking server on loopback: customers, Checkout Sessions, billing portal sessions
/// and subscription reads, answered with the objects' shapes from Stripe's API reference.
#[derive(Clone)]
struct FakeStripe {
    base: String,
    state: Arc<Mutex<FakeState>>,
}

impl FakeStripe {
    async fn start() -> FakeStripe {
        let state = Arc::new(Mutex::new(FakeState::default()));
        let app = axum::Router::new()
            .route("/v1/customers", axum::routing::post(customer))
            .route("/v1/checkout/sessions", axum::routing::post(checkout))
            .route("/v1/billing_portal/sessions", axum::routing::post(portal))
            .route("/v1/subscriptions/{id}", axum::routing::get(subscription))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeStripe {
            base: format!("http://{addr}"),
            state,
        }
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        let s = self.state.lock().unwrap();
        s.seen.iter().filter(|r| r.path == path).cloned().collect()
    }

    fn all_seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Sets what `GET /v1/subscriptions/{id}` answers.
    fn put_subscription(&self, sub: Value) {
        let id = sub["id"].as_str().unwrap().to_string();
        self.state.lock().unwrap().subscriptions.insert(id, sub);
    }
}

fn record(
    state: &Mutex<FakeState>,
    method: &AxMethod,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) {
    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(body).unwrap_or_default();
    state.lock().unwrap().seen.push(Seen {
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers.clone(),
        form,
    });
}

async fn customer(
    State(s): State<Arc<Mutex<FakeState>>>,
    method: AxMethod,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Json<Value> {
    record(&s, &method, &uri, &headers, &body);
    let n = {
        let mut st = s.lock().unwrap();
        st.customers += 1;
        st.customers
    };
    let form: BTreeMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap();
    Json(json!({
        "id": format!("cus_test{n}"),
        "object": "customer",
        "created": 1_700_000_000,
        "livemode": false,
        "metadata": {"workspace_id": form.get("metadata[workspace_id]")},
    }))
}

async fn checkout(
    State(s): State<Arc<Mutex<FakeState>>>,
    method: AxMethod,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Json<Value> {
    record(&s, &method, &uri, &headers, &body);
    let n = s.lock().unwrap().seen.len();
    let id = format!("cs_test_{n}");
    Json(json!({
        "id": id,
        "object": "checkout.session",
        "mode": "subscription",
        "status": "open",
        "url": format!("https://checkout.stripe.com/c/pay/{id}"),
    }))
}

async fn portal(
    State(s): State<Arc<Mutex<FakeState>>>,
    method: AxMethod,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Json<Value> {
    record(&s, &method, &uri, &headers, &body);
    let form: BTreeMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap();
    Json(json!({
        "id": "bps_test_1",
        "object": "billing_portal.session",
        "customer": form.get("customer"),
        "return_url": form.get("return_url"),
        "url": "https://billing.stripe.com/p/session/test_1",
    }))
}

async fn subscription(
    State(s): State<Arc<Mutex<FakeState>>>,
    Path(id): Path<String>,
    method: AxMethod,
    uri: Uri,
    headers: HeaderMap,
) -> (axum::http::StatusCode, Json<Value>) {
    record(&s, &method, &uri, &headers, b"");
    match s.lock().unwrap().subscriptions.get(&id) {
        Some(sub) => (axum::http::StatusCode::OK, Json(sub.clone())),
        None => (
            axum::http::StatusCode::NOT_FOUND,
            Json(
                json!({"error": {"type": "invalid_request_error", "code": "resource_missing", "message": format!("No such subscription: '{id}'")}}),
            ),
        ),
    }
}

/// A subscription object as Stripe's API reference shows it (API version 2024-06-20).
fn sub_object(id: &str, customer: &str, status: &str, price: &str) -> Value {
    json!({
        "id": id,
        "object": "subscription",
        "customer": customer,
        "status": status,
        "cancel_at_period_end": false,
        "current_period_start": 1_790_000_000,
        "current_period_end": 1_792_592_000,
        "metadata": {},
        "items": {"object": "list", "data": [{
            "id": "si_1",
            "object": "subscription_item",
            "price": {"id": price, "object": "price", "currency": "usd", "unit_amount": 2900},
            "quantity": 1
        }]}
    })
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// An event as Stripe sends it.
fn event(id: &str, kind: &str, created: i64, object: Value) -> Value {
    json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": created,
        "livemode": false,
        "pending_webhooks": 1,
        "type": kind,
        "data": {"object": object}
    })
}

/// Plans: `free` by default (one monitor), `team` and `business` sold through Stripe.
fn plans() -> Plans {
    let mut quotas = BTreeMap::new();
    quotas.insert(
        "free".to_string(),
        PlanQuota {
            monitors: Some(1),
            ..PlanQuota::default()
        },
    );
    quotas.insert(
        "team".to_string(),
        PlanQuota {
            monitors: Some(10),
            stripe_price: Some(TEAM.into()),
            ..PlanQuota::default()
        },
    );
    quotas.insert(
        "business".to_string(),
        PlanQuota {
            monitors: Some(100),
            stripe_price: Some(BUSINESS.into()),
            ..PlanQuota::default()
        },
    );
    Plans {
        default: "free".into(),
        quotas,
    }
}

fn with_stripe(stripe: &FakeStripe) -> impl FnOnce(&mut Config) + Send + 'static {
    let base = stripe.base.clone();
    move |c: &mut Config| {
        c.plans = plans();
        c.stripe = Some(Stripe {
            secret_key: "sk_test_tocsin".into(),
            webhook_secrets: vec![OLD_SECRET.into(), SECRET.into()],
            api_url: url::Url::parse(&base).unwrap(),
        });
    }
}

async fn server(stripe: &FakeStripe) -> (TestServer, Sink) {
    smtp::server_with(None, with_stripe(stripe)).await
}

/// Posts `body` to the webhook with `signature` (none: unsigned).
async fn deliver_raw(srv: &TestServer, body: &str, signature: Option<String>) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(srv.url("/billing/stripe/webhook"))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = signature {
        req = req.header("Stripe-Signature", s);
    }
    req.send().await.unwrap()
}

/// Posts `ev`, signed now with the current secret; asserts 200.
async fn deliver(srv: &TestServer, ev: &Value) -> Value {
    let body = ev.to_string();
    let sig = tocsin::billing::signature::sign(SECRET, now_secs(), body.as_bytes());
    json_of(deliver_raw(srv, &body, Some(sig)).await, 200).await
}

async fn sub_of(u: &User) -> Value {
    json_of(
        u.call(Method::GET, "/billing/subscription", None).await,
        200,
    )
    .await
}

async fn audit_changes(u: &User) -> Vec<Value> {
    let page = json_of(
        u.call(
            Method::GET,
            "/audit-log?action=billing.subscription_changed",
            None,
        )
        .await,
        200,
    )
    .await;
    page["entries"].as_array().unwrap().clone()
}

fn usage_item<'a>(usage: &'a Value, metric: &str) -> &'a Value {
    usage["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {usage}"))
}

#[tokio::test]
async fn checkout_for_each_paid_plan_and_the_portal_make_the_stripe_requests_the_reference_shows() {
    let stripe = FakeStripe::start().await;
    let (srv, _sink) = server(&stripe).await;
    let ada = srv.sign_up("ada@example.com").await;

    let sub = sub_of(&ada).await;
    assert_eq!(
        keys(&sub),
        [
            "cancelAtPeriodEnd",
            "currentPeriodEnd",
            "plan",
            "provider",
            "status",
            "updatedAt"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    );
    assert_eq!(sub["plan"], "free");
    assert_eq!(sub["status"], "none");
    assert_eq!(sub["provider"], "stripe");
    assert_eq!(sub["currentPeriodEnd"], Value::Null);

    // Without a customer there is no portal.
    expect_error(
        ada.call(Method::POST, "/billing/portal", None).await,
        409,
        "NO_BILLING_ACCOUNT",
    )
    .await;

    for (plan, price) in [("team", TEAM), ("business", BUSINESS)] {
        let link = json_of(
            ada.call(
                Method::POST,
                "/billing/checkout",
                Some(json!({"plan": plan})),
            )
            .await,
            200,
        )
        .await;
        assert!(link["url"]
            .as_str()
            .unwrap()
            .starts_with("https://checkout.stripe.com/c/pay/cs_test_"));
        let s = stripe.seen("/v1/checkout/sessions").pop().unwrap();
        assert_eq!(s.field("mode"), Some("subscription"));
        assert_eq!(s.field("line_items[0][price]"), Some(price));
        assert_eq!(s.field("line_items[0][quantity]"), Some("1"));
        assert_eq!(
            s.field("client_reference_id"),
            Some(ada.workspace_id.as_str())
        );
        assert_eq!(
            s.field("customer"),
            Some("cus_test1"),
            "the customer is reused"
        );
        let back = format!("{}/app/billing", srv.base);
        assert!(s.field("success_url").unwrap().starts_with(&back));
        assert!(s.field("cancel_url").unwrap().starts_with(&back));
    }
    // The customer was created once, with the workspace in its metadata.
    let customers = stripe.seen("/v1/customers");
    assert_eq!(customers.len(), 1);
    assert_eq!(
        customers[0].field("metadata[workspace_id]"),
        Some(ada.workspace_id.as_str())
    );

    // A plan that does not exist, or is not sold, is the caller's mistake.
    field_error(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "gold"})),
        )
        .await,
        "plan",
    )
    .await;
    field_error(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "free"})),
        )
        .await,
        "plan",
    )
    .await;

    let link = json_of(ada.call(Method::POST, "/billing/portal", None).await, 200).await;
    assert_eq!(link["url"], "https://billing.stripe.com/p/session/test_1");
    let p = stripe.seen("/v1/billing_portal/sessions").pop().unwrap();
    assert_eq!(p.field("customer"), Some("cus_test1"));
    assert_eq!(
        p.field("return_url"),
        Some(format!("{}/app/billing", srv.base).as_str())
    );

    // Every request: form-encoded, the secret key, a pinned version, and every create an
    // idempotency key (distinct per session).
    let all = stripe.all_seen();
    assert_eq!(all.len(), 4);
    let mut idem = Vec::new();
    for r in &all {
        assert_eq!(r.method, "POST");
        assert_eq!(r.header("authorization"), Some("Bearer sk_test_tocsin"));
        assert_eq!(r.header("stripe-version"), Some("2024-06-20"));
        assert_eq!(
            r.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        idem.push(
            r.header("idempotency-key")
                .expect("Idempotency-Key")
                .to_string(),
        );
    }
    idem.sort();
    idem.dedup();
    assert_eq!(idem.len(), 4);
    srv.stop().await;
}

#[tokio::test]
async fn a_subscription_applies_changes_and_ends_without_losing_anything() {
    let stripe = FakeStripe::start().await;
    let (srv, sink) = server(&stripe).await;
    let ada = srv.sign_up("ada@example.com").await;
    let ws = ada.workspace_id.clone();
    json_of(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "team"})),
        )
        .await,
        200,
    )
    .await;
    let t0 = now_secs() - 100;

    // Checkout completes: the subscription is read back and its plan applied.
    stripe.put_subscription(sub_object("sub_1", "cus_test1", "active", TEAM));
    deliver(
        &srv,
        &event(
            "evt_checkout",
            "checkout.session.completed",
            t0,
            json!({"id": "cs_test_1", "object": "checkout.session", "mode": "subscription",
                   "client_reference_id": ws, "customer": "cus_test1", "subscription": "sub_1"}),
        ),
    )
    .await;
    let sub = sub_of(&ada).await;
    assert_eq!(sub["plan"], "team");
    assert_eq!(sub["status"], "active");
    assert_eq!(sub["currentPeriodEnd"], "2026-10-21T14:13:20.000Z");
    let usage = json_of(ada.call(Method::GET, "/billing/usage", None).await, 200).await;
    assert_eq!(usage["plan"], "team");
    assert_eq!(usage["periodStart"], "2026-09-21T14:13:20.000Z");
    assert_eq!(usage_item(&usage, "monitors")["limit"], 10);

    // On team: three monitors (the free plan allows one).
    for i in 0..3 {
        json_of(
            ada.call(
                Method::POST,
                "/monitors",
                Some(merged(
                    http_body(&format!("http://127.0.0.1:9/{i}")),
                    json!({"name": format!("api {i}")}),
                )),
            )
            .await,
            201,
        )
        .await;
    }

    // An update to another price moves the plan.
    deliver(
        &srv,
        &event(
            "evt_upgrade",
            "customer.subscription.updated",
            t0 + 10,
            sub_object("sub_1", "cus_test1", "active", BUSINESS),
        ),
    )
    .await;
    assert_eq!(sub_of(&ada).await["plan"], "business");

    // A failed payment: past due, the plan stays, the owner is emailed.
    stripe.put_subscription(sub_object("sub_1", "cus_test1", "past_due", BUSINESS));
    deliver(
        &srv,
        &event(
            "evt_failed",
            "invoice.payment_failed",
            t0 + 20,
            json!({"id": "in_1", "object": "invoice", "customer": "cus_test1", "subscription": "sub_1"}),
        ),
    )
    .await;
    let sub = sub_of(&ada).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("business"), Some("past_due"))
    );
    // Ada's inbox also holds the confirmation of her address, sent at sign-up.
    let mut due = None;
    for n in 1..=3 {
        let mails = smtp::wait_mails(&sink, "ada@example.com", n).await;
        due = mails.into_iter().find(|m| m.contains("Payment past due"));
        if due.is_some() {
            break;
        }
    }
    let due = due.expect("the owner is told of the failed payment");
    assert!(due.contains("/app/billing"), "{due}");

    // Paid again, then cancelled: back to the default plan.
    stripe.put_subscription(sub_object("sub_1", "cus_test1", "active", BUSINESS));
    deliver(
        &srv,
        &event(
            "evt_paid",
            "invoice.paid",
            t0 + 30,
            json!({"id": "in_2", "object": "invoice", "customer": "cus_test1", "subscription": "sub_1"}),
        ),
    )
    .await;
    assert_eq!(sub_of(&ada).await["status"], "active");
    deliver(
        &srv,
        &event(
            "evt_deleted",
            "customer.subscription.deleted",
            t0 + 40,
            sub_object("sub_1", "cus_test1", "canceled", BUSINESS),
        ),
    )
    .await;
    let sub = sub_of(&ada).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("free"), Some("canceled"))
    );

    // Nothing was deleted or paused: the three monitors are there and active; a fourth is 402.
    let monitors = crate::common::monitors::array(&ada, "/monitors").await;
    assert_eq!(monitors.len(), 3, "{monitors:?}");
    assert!(monitors.iter().all(|m| m["active"] == true), "{monitors:?}");
    expect_error(
        ada.call(
            Method::POST,
            "/monitors",
            Some(http_body("http://127.0.0.1:9/4")),
        )
        .await,
        402,
        "PLAN_LIMIT_EXCEEDED",
    )
    .await;

    // Every change is audited with where it came from and went.
    let changes = audit_changes(&ada).await;
    assert_eq!(changes.len(), 5, "{changes:?}");
    let last = &changes[0];
    assert_eq!(
        last["metadata"]["from"],
        json!({"plan": "business", "status": "active"})
    );
    assert_eq!(
        last["metadata"]["to"],
        json!({"plan": "free", "status": "canceled"})
    );
    srv.stop().await;
}

#[tokio::test]
async fn forged_stale_unsigned_repeated_late_and_unknown_events_change_nothing() {
    let stripe = FakeStripe::start().await;
    let (srv, _sink) = server(&stripe).await;
    let ada = srv.sign_up("ada@example.com").await;
    json_of(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "team"})),
        )
        .await,
        200,
    )
    .await;
    let t0 = now_secs() - 100;
    let active = event(
        "evt_new",
        "customer.subscription.updated",
        t0 + 50,
        sub_object("sub_1", "cus_test1", "active", TEAM),
    );
    let body = active.to_string();

    // Forged (another secret), stale (older than 300 s) and unsigned: 400, nothing applied.
    let forged = tocsin::billing::signature::sign("whsec_forged", now_secs(), body.as_bytes());
    let stale = tocsin::billing::signature::sign(SECRET, now_secs() - 301, body.as_bytes());
    for sig in [
        Some(forged),
        Some(stale),
        None,
        Some("t=1,v1=zz".to_string()),
    ] {
        let res = deliver_raw(&srv, &body, sig).await;
        field_error(res, "Stripe-Signature").await;
    }
    // A body changed after signing does not pass either.
    let sig = tocsin::billing::signature::sign(SECRET, now_secs(), body.as_bytes());
    field_error(
        deliver_raw(&srv, &body.replace(TEAM, BUSINESS), Some(sig)).await,
        "Stripe-Signature",
    )
    .await;
    assert_eq!(sub_of(&ada).await["status"], "none");
    assert!(audit_changes(&ada).await.is_empty());

    // Signed with the secret being rotated out: still accepted.
    let old = tocsin::billing::signature::sign(OLD_SECRET, now_secs(), body.as_bytes());
    json_of(deliver_raw(&srv, &body, Some(old)).await, 200).await;
    assert_eq!(sub_of(&ada).await["plan"], "team");

    // The same event again: 200, one change.
    let again = deliver(&srv, &active).await;
    assert_eq!(again["outcome"], "duplicate");
    assert_eq!(audit_changes(&ada).await.len(), 1);

    // An older event arriving after the newer one: no change.
    let late = deliver(
        &srv,
        &event(
            "evt_old",
            "customer.subscription.updated",
            t0,
            sub_object("sub_1", "cus_test1", "past_due", BUSINESS),
        ),
    )
    .await;
    assert_eq!(late["outcome"], "unchanged");
    let sub = sub_of(&ada).await;
    assert_eq!(
        (sub["plan"].as_str(), sub["status"].as_str()),
        (Some("team"), Some("active"))
    );

    // Unknown types and unknown prices: 200, no change.
    let other = deliver(
        &srv,
        &event(
            "evt_cust",
            "customer.updated",
            t0 + 60,
            json!({"id": "cus_test1", "object": "customer"}),
        ),
    )
    .await;
    assert_eq!(other["outcome"], "ignored");
    let unknown_price = deliver(
        &srv,
        &event(
            "evt_price",
            "customer.subscription.updated",
            t0 + 70,
            sub_object("sub_1", "cus_test1", "active", "price_nobody_sells"),
        ),
    )
    .await;
    assert_eq!(unknown_price["outcome"], "unchanged");
    assert_eq!(sub_of(&ada).await["plan"], "team");
    assert_eq!(audit_changes(&ada).await.len(), 1);
    srv.stop().await;
}

#[tokio::test]
async fn the_same_event_at_two_nodes_at_once_applies_once() {
    let stripe = FakeStripe::start().await;
    let (srv, _sink) = server(&stripe).await;
    // On PostgreSQL a second node on the same database; on SQLite the same node twice.
    let beside = srv
        .start_beside(Options {
            clock: None,
            tweak: Some(Box::new(with_stripe(&stripe))),
        })
        .await;
    let ada = srv.sign_up("ada@example.com").await;
    json_of(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "team"})),
        )
        .await,
        200,
    )
    .await;
    for round in 0..5 {
        let ev = event(
            &format!("evt_race_{round}"),
            "customer.subscription.updated",
            now_secs() - 50 + round,
            sub_object(
                "sub_1",
                "cus_test1",
                "active",
                if round % 2 == 0 { TEAM } else { BUSINESS },
            ),
        );
        let other = beside.as_ref().unwrap_or(&srv);
        let (a, b) = tokio::join!(deliver(&srv, &ev), deliver(other, &ev));
        let mut outcomes = [a["outcome"].clone(), b["outcome"].clone()];
        outcomes.sort_by_key(|o| o.to_string());
        assert_eq!(
            outcomes,
            [json!("applied"), json!("duplicate")],
            "round {round}"
        );
    }
    assert_eq!(audit_changes(&ada).await.len(), 5);
    assert_eq!(sub_of(&ada).await["plan"], "team");
    if let Some(b) = beside {
        b.stop().await;
    }
    srv.stop().await;
}

#[tokio::test]
async fn billing_is_for_owners_in_a_session() {
    let stripe = FakeStripe::start().await;
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(with_stripe(&stripe))),
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    let bob = srv.sign_up("bob@example.com").await;
    srv.verify_email("bob@example.com").await;
    crate::common::join(&ada, &bob, "admin").await;
    // An admin (every capability but billing) is refused every billing operation.
    for (method, path) in [
        (Method::GET, "/billing/subscription"),
        (Method::GET, "/billing/usage"),
        (Method::POST, "/billing/checkout"),
        (Method::POST, "/billing/portal"),
    ] {
        let body = (method == Method::POST).then(|| json!({"plan": "team"}));
        let body = if path == "/billing/portal" {
            None
        } else {
            body
        };
        expect_error(
            bob.call(method.clone(), path, body.clone()).await,
            403,
            "INSUFFICIENT_CAPABILITY",
        )
        .await;
        // A token, even the owner's, is refused as every session-only operation refuses it.
        let key = Bearer::new(&srv.base, &ada.token(&["monitors:read"]).await);
        let refused = expect_error(
            key.call(method, path, body).await,
            403,
            "INSUFFICIENT_CAPABILITY",
        )
        .await;
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("billing:manage"),
            "{refused}"
        );
    }
    assert!(stripe.all_seen().is_empty());
    srv.stop().await;
}

#[tokio::test]
async fn without_stripe_the_plan_and_usage_show_and_nothing_is_sold() {
    let srv = TestServer::start_with(Options {
        clock: None,
        tweak: Some(Box::new(|c: &mut Config| c.plans = plans())),
    })
    .await;
    let ada = srv.sign_up("ada@example.com").await;
    let sub = sub_of(&ada).await;
    assert_eq!(sub["plan"], "free");
    assert_eq!(sub["status"], "none");
    assert_eq!(sub["provider"], Value::Null);

    // Usage: what exists against the quotas, and the checks of the month from the rollups.
    let (_, push_token) = crate::common::monitors::push_monitor(&ada, json!({})).await;
    for _ in 0..3 {
        let res = crate::common::monitors::push(&srv, &push_token, "").await;
        assert!(res.status().is_success());
    }
    let usage = json_of(ada.call(Method::GET, "/billing/usage", None).await, 200).await;
    assert_eq!(
        keys(&usage),
        ["items", "periodEnd", "periodStart", "plan"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    assert_eq!(usage["plan"], "free");
    assert!(usage["periodStart"]
        .as_str()
        .unwrap()
        .ends_with("-01T00:00:00.000Z"));
    assert_eq!(usage_item(&usage, "monitors")["used"], 1);
    assert_eq!(usage_item(&usage, "monitors")["limit"], 1);
    assert_eq!(usage_item(&usage, "members")["limit"], Value::Null);
    assert_eq!(usage_item(&usage, "checks")["used"], 3);
    assert_eq!(usage_item(&usage, "notifications")["used"], 0);
    for m in ["status_pages", "api_keys", "notification_channels"] {
        usage_item(&usage, m);
    }

    expect_error(
        ada.call(
            Method::POST,
            "/billing/checkout",
            Some(json!({"plan": "team"})),
        )
        .await,
        409,
        "BILLING_NOT_CONFIGURED",
    )
    .await;
    expect_error(
        ada.call(Method::POST, "/billing/portal", None).await,
        409,
        "BILLING_NOT_CONFIGURED",
    )
    .await;
    let body = "{}";
    let sig = tocsin::billing::signature::sign(SECRET, now_secs(), body.as_bytes());
    expect_error(deliver_raw(&srv, body, Some(sig)).await, 404, "NOT_FOUND").await;
    srv.stop().await;
}
