//! Custom domains in tests: a loopback authoritative DNS server for `example.com.` whose TXT
//! records the test sets (the server under test is pointed at it with `dns_resolver`), the
//! domain and challenge name the tests claim, adding and verifying a page's domain through the
//! API, and reading the server as that domain (`Host`).

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::rdata::{NS, SOA, TXT};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::authority::{AuthorityObject, Catalog, ZoneType};
use hickory_server::store::in_memory::InMemoryAuthority;
use hickory_server::ServerFuture;
use reqwest::Method;
use serde_json::json;
use tocsin::clock::ManualClock;
use tokio::net::{TcpListener, UdpSocket};

use super::{no_redirects, Options, TestServer, User};

/// The zone the DNS server is authoritative for.
const ZONE: &str = "example.com.";
/// The custom domain the tests claim.
pub const DOMAIN: &str = "status.example.com";
/// Where the verification TXT record of [`DOMAIN`] goes.
pub const CHALLENGE: &str = "_tocsin-challenge.status.example.com";

fn name(s: &str) -> Name {
    Name::from_str(s).unwrap()
}

/// An authoritative server for `example.com.` on 127.0.0.1 (UDP and TCP, one port), whose
/// TXT records the test sets.
pub struct TestDns {
    /// Where it answers (UDP and TCP).
    pub addr: SocketAddr,
    zone: Arc<InMemoryAuthority>,
    serial: std::sync::atomic::AtomicU32,
}

impl TestDns {
    /// Starts the server on a free loopback port (UDP and TCP alike).
    pub async fn start() -> TestDns {
        let zone = Arc::new(InMemoryAuthority::empty(
            name(ZONE),
            ZoneType::Primary,
            false,
        ));
        let soa = SOA::new(
            name("ns1.example.com."),
            name("hostmaster.example.com."),
            1,
            3600,
            600,
            86400,
            // Negative answers may be cached no longer than this: none are, here.
            0,
        );
        assert!(
            zone.upsert(Record::from_rdata(name(ZONE), 0, RData::SOA(soa)), 1)
                .await
        );
        assert!(
            zone.upsert(
                Record::from_rdata(name(ZONE), 0, RData::NS(NS(name("ns1.example.com.")))),
                1
            )
            .await
        );
        let mut catalog = Catalog::new();
        catalog.upsert(
            LowerName::from(name(ZONE)),
            vec![zone.clone() as Arc<dyn AuthorityObject>],
        );
        let mut server = ServerFuture::new(catalog);
        let addr = loop {
            let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let addr = udp.local_addr().unwrap();
            let Ok(tcp) = TcpListener::bind(addr).await else {
                continue;
            };
            server.register_socket(udp);
            server.register_listener(tcp, Duration::from_secs(5));
            break addr;
        };
        tokio::spawn(async move {
            let _ = server.block_until_done().await;
        });
        TestDns {
            addr,
            zone,
            serial: 2.into(),
        }
    }

    /// Replaces the TXT records at `owner` with `values` (none: removes them).
    pub async fn set_txt(&self, owner: &str, values: &[&str]) {
        let owner = format!("{owner}.");
        let key = RrKey::new(LowerName::from(name(&owner)), RecordType::TXT);
        self.zone.records_mut().await.remove(&key);
        for v in values {
            let serial = self
                .serial
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let txt = RData::TXT(TXT::new(vec![v.to_string()]));
            assert!(
                self.zone
                    .upsert(Record::from_rdata(name(&owner), 0, txt), serial)
                    .await
            );
        }
    }
}

/// A server resolving names through `dns` (on `clock`, when given).
pub async fn start(dns: &TestDns, clock: Option<Arc<ManualClock>>) -> TestServer {
    let resolver = dns.addr;
    TestServer::start_with(Options {
        clock: clock.map(|c| c as tocsin::clock::SharedClock),
        tweak: Some(Box::new(move |c| c.dns_resolver = Some(resolver))),
    })
    .await
}

/// `POST /status-pages/{page}/domains` claiming `domain`; the answer.
pub async fn add(u: &User, page: &str, domain: &str) -> reqwest::Response {
    u.call(
        Method::POST,
        &format!("/status-pages/{page}/domains"),
        Some(json!({ "domain": domain })),
    )
    .await
}

/// `POST /status-pages/{page}/domains/{domain}/verify`; the answer.
pub async fn verify(u: &User, page: &str, domain: &str) -> reqwest::Response {
    u.call(
        Method::POST,
        &format!("/status-pages/{page}/domains/{domain}/verify"),
        None,
    )
    .await
}

/// `GET path` on the server with `Host: host`: status, content type, body.
pub async fn by_host(srv: &TestServer, host: &str, path: &str) -> (u16, String, String) {
    let res = no_redirects()
        .get(srv.url(path))
        .header(reqwest::header::HOST, host)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, ct, res.text().await.unwrap())
}
