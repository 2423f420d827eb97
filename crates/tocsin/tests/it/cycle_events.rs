//! What a check cycle records beyond the status itself, driven through the real scheduler step
//! (`scheduler::run_due` with a manual clock) against real loopback targets and read back
//! through the REST API: the `certificate_expiring` event that follows a status change while
//! an HTTPS target's certificate is inside `tls.certExpiryWarnDays` (a rustls server with an
//! rcgen certificate), and a DNS_DIFF monitor's baseline — stored by the first cycle, compared
//! by later ones, cleared by `accept-baseline` — against an authoritative hickory server whose
//! zone the test edits.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use chrono::Datelike;
use common::clock::{rfc, tick, INTERVAL_MS, T0};
use common::monitors::{create, events, heartbeats, http_monitor, monitor};
use common::{json_of, TestServer, User};
use hickory_proto::rr::rdata::{A, NS, SOA};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::authority::{AuthorityObject, Catalog, ZoneType};
use hickory_server::store::in_memory::InMemoryAuthority;
use hickory_server::ServerFuture;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use reqwest::Method;
use serde_json::{json, Value};
use tokio::net::{TcpListener, UdpSocket};

// ---------------------------------------------------------------------------------------------
// API helpers
// ---------------------------------------------------------------------------------------------

/// (seq, kind, from, to, alert) of each event, newest first.
fn summary(evs: &[Value]) -> Vec<(i64, String, String, String, bool)> {
    evs.iter()
        .map(|e| {
            (
                e["seq"].as_i64().unwrap(),
                e["kind"].as_str().unwrap().to_string(),
                e["from"].as_str().unwrap().to_string(),
                e["to"].as_str().unwrap().to_string(),
                e["alert"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn ev(
    seq: i64,
    kind: &str,
    from: &str,
    to: &str,
    alert: bool,
) -> (i64, String, String, String, bool) {
    (seq, kind.into(), from.into(), to.into(), alert)
}

/// A DNS_DIFF monitor's stored baseline (the API does not show it).
async fn stored_baseline(srv: &TestServer, id: &str) -> Option<Vec<String>> {
    let (text,): (Option<String>,) =
        sqlx::query_as("SELECT dns_baseline FROM monitors WHERE id = $1")
            .bind(id)
            .fetch_one(srv.state.db().reader())
            .await
            .unwrap();
    text.map(|t| serde_json::from_str(&t).unwrap())
}

// ---------------------------------------------------------------------------------------------
// HTTPS target
// ---------------------------------------------------------------------------------------------

/// A self-signed certificate for 127.0.0.1 expiring at the UTC midnight `days` from now (wall
/// clock: the check engine judges certificates by the real time), or rcgen's far-future
/// default.
fn certificate(expires_in_days: Option<i64>) -> rcgen::CertifiedKey {
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    if let Some(days) = expires_in_days {
        // Relative to the server's (manual) clock: days left count from the run's time.
        let at = tocsin::clock::from_ms(T0) + chrono::Duration::days(days);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(at.year(), at.month() as u8, at.day() as u8);
    }
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    rcgen::CertifiedKey { cert, key_pair }
}

/// A loopback HTTPS server presenting `cert` and answering `200 ok` on every path.
struct HttpsTarget {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpsTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn spawn_https(cert: &rcgen::CertifiedKey) -> HttpsTarget {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let svc = service_fn(|_req| async {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    HttpsTarget {
        url: format!("https://{addr}/"),
        task,
    }
}

/// An HTTP monitor `tls` of `target` (certificate unverified, warning 14 days before it
/// expires); its id.
async fn https_monitor(u: &User, target: &HttpsTarget) -> String {
    let tls =
        json!({"name": "tls", "config": {"tls": {"verify": false, "certExpiryWarnDays": 14}}});
    http_monitor(u, &target.url, tls).await
}

/// The `N` in a heartbeat message "certificate expires in N days (...)".
fn days_in(message: &str) -> i64 {
    let rest = message
        .split("certificate expires in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no days in {message:?}"));
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn near_expiry_certificate_records_one_certificate_expiring_event_per_change() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = spawn_https(&certificate(Some(5))).await;
    let u = srv.sign_up("ops@example.com").await;
    let id = https_monitor(&u, &target).await;

    // First cycle: PENDING -> DEGRADED, then the certificate event, in that order.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("DEGRADED"));
    let hbs = heartbeats(&u, &id, "").await;
    assert_eq!(hbs.len(), 1);
    assert_eq!(hbs[0]["status"], json!("DEGRADED"));
    assert_eq!(hbs[0]["statusCode"], json!(200));
    let hb_message = hbs[0]["message"].as_str().unwrap();
    let days = days_in(hb_message);
    assert!((4..=5).contains(&days), "{hb_message}");

    let evs = events(&u, &id).await;
    assert_eq!(
        summary(&evs),
        vec![
            ev(2, "certificate_expiring", "PENDING", "DEGRADED", true),
            ev(1, "degraded", "PENDING", "DEGRADED", true),
        ]
    );
    assert_eq!(
        evs[0]["message"],
        json!(format!("the certificate expires in {days} days"))
    );
    assert_eq!(evs[1]["message"].as_str(), Some(hb_message));
    let at = json!(rfc(T0 + INTERVAL_MS));
    assert_eq!(evs[0]["createdAt"], at);
    assert_eq!(evs[1]["createdAt"], at);

    // Still DEGRADED for the same reason: a heartbeat, no further event.
    assert_eq!(tick(&srv, &clock).await, 1);
    let m = monitor(&u, &id).await;
    assert_eq!(m["status"], json!("DEGRADED"));
    assert_eq!(m["consecutiveSuccesses"], json!(2));
    assert_eq!(heartbeats(&u, &id, "").await.len(), 2);
    assert_eq!(events(&u, &id).await.len(), 2);

    // The durable rows say the same, in seq order.
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, kind FROM monitor_events WHERE monitor_id = $1 ORDER BY seq")
            .bind(&id)
            .fetch_all(srv.state.db().reader())
            .await
            .unwrap();
    assert_eq!(
        rows,
        vec![(1, "degraded".into()), (2, "certificate_expiring".into())]
    );
    srv.stop().await;
}

#[tokio::test]
async fn certificate_far_from_expiry_is_up_without_certificate_event() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = spawn_https(&certificate(None)).await;
    let u = srv.sign_up("ops@example.com").await;
    let id = https_monitor(&u, &target).await;

    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    let hbs = heartbeats(&u, &id, "").await;
    assert_eq!(hbs.len(), 2);
    assert!(hbs.iter().all(|h| h["status"] == json!("UP")), "{hbs:?}");
    assert_eq!(
        summary(&events(&u, &id).await),
        vec![ev(1, "up", "PENDING", "UP", false)]
    );
    srv.stop().await;
}

// ---------------------------------------------------------------------------------------------
// DNS target
// ---------------------------------------------------------------------------------------------

const ZONE: &str = "example.test.";
const HOST: &str = "www.example.test.";

fn name(s: &str) -> Name {
    Name::from_str(s).unwrap()
}

fn record(owner: &str, data: RData) -> Record {
    Record::from_rdata(name(owner), 300, data)
}

fn a(last: u8) -> RData {
    RData::A(A(Ipv4Addr::new(10, 0, 0, last)))
}

/// An authoritative server for `example.test.` on a loopback UDP port; the test edits its zone.
struct TestDns {
    addr: SocketAddr,
    zone: Arc<InMemoryAuthority>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestDns {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestDns {
    async fn start(www: Vec<RData>) -> TestDns {
        let zone = Arc::new(InMemoryAuthority::empty(
            name(ZONE),
            ZoneType::Primary,
            false,
        ));
        let soa = SOA::new(
            name("ns1.example.test."),
            name("hostmaster.example.test."),
            1,
            3600,
            600,
            86400,
            300,
        );
        let base = vec![
            record(ZONE, RData::SOA(soa)),
            record(ZONE, RData::NS(NS(name("ns1.example.test.")))),
        ];
        for r in base
            .into_iter()
            .chain(www.into_iter().map(|d| record(HOST, d)))
        {
            assert!(zone.upsert(r, 1).await);
        }
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::from(name(ZONE)),
            vec![zone.clone() as Arc<dyn AuthorityObject>],
        );
        let mut server = ServerFuture::new(catalog);
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        server.register_socket(socket);
        let task = tokio::spawn(async move {
            let _ = server.block_until_done().await;
        });
        TestDns { addr, zone, task }
    }

    /// Replaces the whole A record set of the monitored name.
    async fn set_www(&self, data: Vec<RData>) {
        let key = RrKey::new(LowerName::from(name(HOST)), RecordType::A);
        self.zone.records_mut().await.remove(&key);
        for d in data {
            assert!(self.zone.upsert(record(HOST, d), 2).await);
        }
    }
}

#[tokio::test]
async fn dns_diff_baseline_change_and_accept() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let dns = TestDns::start(vec![a(1), a(2)]).await;
    let u = srv.sign_up("ops@example.com").await;
    let m = create(
        &u,
        json!({"name": "www records", "type": "DNS_DIFF", "host": "www.example.test",
               "interval": 10, "timeout": 5,
               "config": {"recordType": "A", "resolver": dns.addr.to_string()}}),
    )
    .await;
    let id = m["id"].as_str().unwrap().to_string();
    assert_eq!(m["status"], json!("PENDING"));
    assert_eq!(stored_baseline(&srv, &id).await, None);

    // First cycle: UP, and its answers become the baseline.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    assert_eq!(
        stored_baseline(&srv, &id).await,
        Some(vec!["10.0.0.1".to_string(), "10.0.0.2".to_string()])
    );
    assert_eq!(
        summary(&events(&u, &id).await),
        vec![ev(1, "up", "PENDING", "UP", false)]
    );

    // Same answers: still UP, nothing recorded but the heartbeat.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    assert_eq!(events(&u, &id).await.len(), 1);

    // The zone changes: CHANGED, with what was added and removed.
    dns.set_www(vec![a(2), a(3)]).await;
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("CHANGED"));
    let hbs = heartbeats(&u, &id, "").await;
    assert_eq!(hbs.len(), 3);
    assert_eq!(hbs[0]["status"], json!("CHANGED"));
    let changed = "added: 10.0.0.3; removed: 10.0.0.1";
    assert_eq!(hbs[0]["message"], json!(changed));
    let evs = events(&u, &id).await;
    assert_eq!(
        summary(&evs)[0],
        ev(2, "changed", "UP", "CHANGED", true),
        "{evs:?}"
    );
    assert_eq!(evs[0]["message"], json!(changed));
    // The baseline is not moved by a change: it waits for a person.
    assert_eq!(
        stored_baseline(&srv, &id).await,
        Some(vec!["10.0.0.1".to_string(), "10.0.0.2".to_string()])
    );

    // CHANGED is sticky: another cycle with the new answers records no event.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("CHANGED"));
    assert_eq!(events(&u, &id).await.len(), 2);

    // Accepting clears the baseline and returns the monitor to PENDING.
    let accepted = json_of(
        u.call(
            Method::POST,
            &format!("/monitors/{id}/accept-baseline"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(accepted["status"], json!("PENDING"));
    assert_eq!(stored_baseline(&srv, &id).await, None);
    let evs = events(&u, &id).await;
    assert_eq!(
        summary(&evs)[0],
        ev(3, "pending", "CHANGED", "PENDING", false)
    );

    // The next cycle is UP against the new answers, which become the baseline.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    assert_eq!(
        stored_baseline(&srv, &id).await,
        Some(vec!["10.0.0.2".to_string(), "10.0.0.3".to_string()])
    );
    let evs = events(&u, &id).await;
    assert_eq!(summary(&evs)[0], ev(4, "up", "PENDING", "UP", false));
    assert_eq!(heartbeats(&u, &id, "").await[0]["status"], json!("UP"));

    // And stays UP while the answers hold.
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    assert_eq!(events(&u, &id).await.len(), 4);

    // Accepting while UP leaves the status alone (no event) and re-takes the baseline from
    // the next answer.
    let again = json_of(
        u.call(
            Method::POST,
            &format!("/monitors/{id}/accept-baseline"),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(again["status"], json!("UP"));
    assert_eq!(stored_baseline(&srv, &id).await, None);
    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("UP"));
    assert_eq!(
        stored_baseline(&srv, &id).await,
        Some(vec!["10.0.0.2".to_string(), "10.0.0.3".to_string()])
    );
    assert_eq!(events(&u, &id).await.len(), 4);
    srv.stop().await;
}

#[tokio::test]
async fn expired_certificate_is_down_without_certificate_expiring_event() {
    let (srv, clock) = TestServer::with_clock(T0).await;
    let target = spawn_https(&certificate(Some(-3))).await;
    let u = srv.sign_up("ops@example.com").await;
    let id = https_monitor(&u, &target).await;

    assert_eq!(tick(&srv, &clock).await, 1);
    assert_eq!(monitor(&u, &id).await["status"], json!("DOWN"));
    let hbs = heartbeats(&u, &id, "").await;
    let hb_message = hbs[0]["message"].as_str().unwrap();
    assert!(
        hb_message.starts_with("certificate expired"),
        "{hb_message}"
    );
    // The down event names the expiry; "expiring" would be wrong (and its day count negative).
    let evs = events(&u, &id).await;
    assert_eq!(summary(&evs), vec![ev(1, "down", "PENDING", "DOWN", true)]);
    assert_eq!(evs[0]["message"].as_str(), Some(hb_message));
    srv.stop().await;
}
