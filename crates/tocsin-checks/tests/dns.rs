//! DNS and DNS_DIFF checks against an authoritative hickory server on 127.0.0.1 (UDP and TCP)
//! whose in-memory zone the tests change between checks.

#![allow(clippy::unwrap_used)] // tests fail loudly on setup errors

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::rdata::{A, AAAA, CAA, CNAME, MX, NS, PTR, SOA, SRV, TXT};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::authority::{AuthorityObject, Catalog, ZoneType};
use hickory_server::store::in_memory::InMemoryAuthority;
use hickory_server::ServerFuture;
use serde_json::{json, Value};
use tocsin_checks::dns::{self, DnsSpec};
use tocsin_checks::spec::SpecInput;
use tocsin_checks::{CheckSpec, MonitorKind, RunOptions, Verdict};
use tokio::net::{TcpListener, UdpSocket};

const ZONE: &str = "example.test.";

fn name(s: &str) -> Name {
    Name::from_str(s).unwrap()
}

fn record(owner: &str, data: RData) -> Record {
    Record::from_rdata(name(owner), 300, data)
}

fn soa() -> Record {
    record(
        ZONE,
        RData::SOA(SOA::new(
            name("ns1.example.test."),
            name("hostmaster.example.test."),
            7,
            3600,
            600,
            86400,
            300,
        )),
    )
}

fn zone_records() -> Vec<Record> {
    vec![
        soa(),
        record(ZONE, RData::NS(NS(name("ns1.example.test.")))),
        record(ZONE, RData::NS(NS(name("NS2.Example.Test.")))),
        record(
            "ns1.example.test.",
            RData::A(A(Ipv4Addr::new(127, 0, 0, 1))),
        ),
        record("www.example.test.", RData::A(A(Ipv4Addr::new(10, 0, 0, 1)))),
        record("www.example.test.", RData::A(A(Ipv4Addr::new(10, 0, 0, 2)))),
        record(
            "www.example.test.",
            RData::AAAA(AAAA("2001:db8:0:0::1".parse::<Ipv6Addr>().unwrap())),
        ),
        record(
            "alias.example.test.",
            RData::CNAME(CNAME(name("www.example.test."))),
        ),
        record(ZONE, RData::MX(MX::new(20, name("backup.example.test.")))),
        record(ZONE, RData::MX(MX::new(10, name("Mail.Example.Test.")))),
        record(
            ZONE,
            RData::TXT(TXT::new(vec!["v=spf1".to_string(), " -all".to_string()])),
        ),
        record(ZONE, RData::TXT(TXT::new(vec!["hello world".to_string()]))),
        record(
            "_sip._tcp.example.test.",
            RData::SRV(SRV::new(10, 5, 5060, name("sip.example.test."))),
        ),
        record(
            ZONE,
            RData::CAA(CAA::new_issue(false, Some(name("ca.example.net")), vec![])),
        ),
    ]
}

fn authority(origin: &str, records: Vec<Record>) -> Arc<InMemoryAuthority> {
    let auth = InMemoryAuthority::empty(name(origin), ZoneType::Primary, false);
    let auth = Arc::new(auth);
    let rt = tokio::runtime::Handle::current();
    let a = auth.clone();
    // `upsert` is async only because of its lock; the authority is not shared yet.
    tokio::task::block_in_place(|| {
        rt.block_on(async {
            for r in records {
                assert!(a.upsert(r, 7).await);
            }
        })
    });
    auth
}

struct TestDns {
    addr: SocketAddr,
    zone: Arc<InMemoryAuthority>,
}

impl TestDns {
    /// Replaces the whole record set of `owner`/`rtype`.
    async fn replace(&self, owner: &str, rtype: RecordType, data: Vec<RData>) {
        let key = RrKey::new(LowerName::from(name(owner)), rtype);
        self.zone.records_mut().await.remove(&key);
        for d in data {
            assert!(self.zone.upsert(record(owner, d), 8).await);
        }
    }
}

/// Starts the server; `udp`/`tcp` choose which transports it listens on (same port).
async fn start_server(udp: bool, tcp: bool) -> TestDns {
    let zone = authority(ZONE, zone_records());
    let reverse = authority(
        "10.in-addr.arpa.",
        vec![
            record(
                "10.in-addr.arpa.",
                RData::SOA(SOA::new(
                    name("ns1.example.test."),
                    name("hostmaster.example.test."),
                    1,
                    3600,
                    600,
                    86400,
                    300,
                )),
            ),
            record(
                "1.0.0.10.in-addr.arpa.",
                RData::PTR(PTR(name("www.example.test."))),
            ),
        ],
    );
    let mut catalog = Catalog::new();
    catalog.upsert(
        LowerName::from(name(ZONE)),
        vec![zone.clone() as Arc<dyn AuthorityObject>],
    );
    catalog.upsert(
        LowerName::from(name("10.in-addr.arpa.")),
        vec![reverse as Arc<dyn AuthorityObject>],
    );

    let mut server = ServerFuture::new(catalog);
    // Find a port free for both transports.
    let addr = loop {
        let udp_sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp_sock.local_addr().unwrap();
        let Ok(listener) = TcpListener::bind(addr).await else {
            continue;
        };
        if udp {
            server.register_socket(udp_sock);
        }
        if tcp {
            server.register_listener(listener, Duration::from_secs(5));
        }
        break addr;
    };
    tokio::spawn(async move {
        let _ = server.block_until_done().await;
    });
    TestDns { addr, zone }
}

fn input_config(config: Value) -> serde_json::Map<String, Value> {
    config.as_object().cloned().unwrap_or_default()
}

fn parse(host: Option<&str>, config: Value) -> Result<DnsSpec, Vec<(String, String)>> {
    let config = input_config(config);
    let input = SpecInput {
        url: None,
        host,
        port: None,
        config: &config,
    };
    DnsSpec::parse(&input).map_err(|errs| errs.into_iter().map(|e| (e.path, e.message)).collect())
}

fn spec(server: &TestDns, host: &str, record_type: &str, extra: Value) -> DnsSpec {
    let mut config = json!({"recordType": record_type, "resolver": server.addr.to_string()});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        config[k] = v;
    }
    parse(Some(host), config).unwrap()
}

fn opts() -> RunOptions {
    RunOptions {
        timeout: Duration::from_secs(3),
        ..RunOptions::default()
    }
}

async fn answers(server: &TestDns, host: &str, record_type: &str) -> Vec<String> {
    let out = dns::check(&spec(server, host, record_type, json!({})), &opts(), None).await;
    assert_eq!(
        out.verdict,
        Verdict::Up,
        "{host} {record_type}: {:?}",
        out.message
    );
    assert!(out.message.is_none());
    assert!(out.timings.unwrap().dns > 0.0);
    out.dns_answers.unwrap()
}

// ----------------------------------------------------------------------------------------------
// Parsing
// ----------------------------------------------------------------------------------------------

#[test]
fn parses_full_config() {
    let s = parse(
        Some("Example.COM"),
        json!({"recordType": "mx", "resolver": "127.0.0.1:5353", "protocol": "tcp",
               "expected": ["10 Mail.Example.com"],
               "assertions": [{"target": "dnsRecords", "operator": "contains", "value": "x"}]}),
    )
    .unwrap();
    assert_eq!(s.name, "example.com.");
    assert_eq!(s.record_type, dns::DnsRecordType::Mx);
    assert_eq!(s.resolver, Some("127.0.0.1:5353".parse().unwrap()));
    assert_eq!(s.protocol, dns::DnsProtocol::Tcp);
    assert_eq!(s.expected, ["10 mail.example.com."]);
    assert_eq!(s.assertions.len(), 1);

    let s = parse(
        Some("example.com."),
        json!({"recordType": "A", "resolver": "::1"}),
    )
    .unwrap();
    assert_eq!(s.resolver, Some("[::1]:53".parse().unwrap()));
    assert_eq!(s.protocol, dns::DnsProtocol::Udp);
    assert_eq!(s.name, "example.com.");
    let s = parse(Some("example.com"), json!({"recordType": "A"})).unwrap();
    assert_eq!(s.resolver, None);

    // PTR takes an address and queries its reverse name.
    let s = parse(Some("10.0.0.1"), json!({"recordType": "PTR"})).unwrap();
    assert_eq!(s.name, "1.0.0.10.in-addr.arpa.");

    let config = input_config(json!({"recordType": "A"}));
    let input = SpecInput {
        url: None,
        host: Some("example.com"),
        port: None,
        config: &config,
    };
    assert!(matches!(
        CheckSpec::parse(MonitorKind::Dns, &input),
        Ok(CheckSpec::Dns(_))
    ));
    assert!(matches!(
        CheckSpec::parse(MonitorKind::DnsDiff, &input),
        Ok(CheckSpec::DnsDiff(_))
    ));
}

#[test]
fn normalizes_expected_per_type() {
    let cases = [
        ("AAAA", "2001:DB8:0::1", "2001:db8::1"),
        ("CNAME", "WWW.Example.test", "www.example.test."),
        (
            "SRV",
            "10 5 5060 SIP.example.test",
            "10 5 5060 sip.example.test.",
        ),
        (
            "SOA",
            "NS1.example.test. h.example.test 1 2 3 4 5",
            "ns1.example.test. h.example.test. 1 2 3 4 5",
        ),
        ("TXT", "Keep Case", "Keep Case"),
    ];
    for (rt, given, want) in cases {
        let s = parse(
            Some("example.test"),
            json!({"recordType": rt, "expected": [given]}),
        )
        .unwrap();
        assert_eq!(s.expected, [want], "{rt}");
    }
}

#[test]
fn reports_errors_with_paths() {
    let errs = parse(None, json!({})).unwrap_err();
    let paths: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(paths, ["host", "config.recordType"]);

    let errs = parse(
        Some("example.com"),
        json!({"recordType": "A", "resolver": "dns.google", "protocol": "doh",
               "expected": ["10.0.0.1", "not-an-ip", 5], "retries": 1,
               "assertions": [{"target": "reply", "operator": "contains", "value": "x"}]}),
    )
    .unwrap_err();
    let mut paths: Vec<&str> = errs.iter().map(|e| e.0.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "config.assertions.0.target",
            "config.expected.2",
            "config.protocol",
            "config.resolver",
            "config.retries"
        ]
    );

    let errs = parse(
        Some("example.com"),
        json!({"recordType": "A", "expected": ["10.0.0.1", "nope"]}),
    )
    .unwrap_err();
    assert_eq!(
        errs,
        [(
            "config.expected.1".to_string(),
            "must be an IPv4 address for A records".to_string()
        )]
    );

    let errs = parse(Some("example.com"), json!({"recordType": "ANY"})).unwrap_err();
    assert_eq!(errs[0].0, "config.recordType");
    assert!(errs[0]
        .1
        .contains("A, AAAA, CNAME, MX, NS, TXT, SOA, SRV, CAA, PTR"));

    let errs = parse(Some("exa mple.com"), json!({"recordType": "A"})).unwrap_err();
    assert_eq!(errs[0].0, "host");

    let errs = parse(
        Some("example.com"),
        json!({"recordType": "MX", "expected": ["mail.example.com"]}),
    )
    .unwrap_err();
    assert_eq!(errs[0].0, "config.expected.0");

    let errs = parse(
        Some("example.com"),
        json!({"recordType": "A", "resolver": "127.0.0.1:0"}),
    )
    .unwrap_err();
    assert_eq!(errs[0].0, "config.resolver");
}

// ----------------------------------------------------------------------------------------------
// Queries
// ----------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_type_is_normalized() {
    let server = start_server(true, true).await;
    assert_eq!(
        answers(&server, "www.example.test", "A").await,
        ["10.0.0.1", "10.0.0.2"]
    );
    assert_eq!(
        answers(&server, "WWW.example.test.", "AAAA").await,
        ["2001:db8::1"]
    );
    assert_eq!(
        answers(&server, "alias.example.test", "CNAME").await,
        ["www.example.test."]
    );
    assert_eq!(
        answers(&server, "example.test", "MX").await,
        ["10 mail.example.test.", "20 backup.example.test."]
    );
    assert_eq!(
        answers(&server, "example.test", "NS").await,
        ["ns1.example.test.", "ns2.example.test."]
    );
    assert_eq!(
        answers(&server, "example.test", "TXT").await,
        ["hello world", "v=spf1 -all"]
    );
    assert_eq!(
        answers(&server, "example.test", "SOA").await,
        ["ns1.example.test. hostmaster.example.test. 7 3600 600 86400 300"]
    );
    assert_eq!(
        answers(&server, "_sip._tcp.example.test", "SRV").await,
        ["10 5 5060 sip.example.test."]
    );
    assert_eq!(
        answers(&server, "example.test", "CAA").await,
        ["0 issue \"ca.example.net\""]
    );
    assert_eq!(
        answers(&server, "10.0.0.1", "PTR").await,
        ["www.example.test."]
    );
    // An A query for an alias follows the CNAME; only the A records are answers.
    assert_eq!(
        answers(&server, "alias.example.test", "A").await,
        ["10.0.0.1", "10.0.0.2"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expected_match_and_mismatch() {
    let server = start_server(true, true).await;
    let ok = spec(
        &server,
        "www.example.test",
        "A",
        json!({"expected": ["10.0.0.2"]}),
    );
    let out = dns::check(&ok, &opts(), None).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);

    let ok = spec(
        &server,
        "example.test",
        "MX",
        json!({"expected": ["10 MAIL.example.test", "20 backup.example.test."]}),
    );
    assert_eq!(dns::check(&ok, &opts(), None).await.verdict, Verdict::Up);

    let bad = spec(
        &server,
        "www.example.test",
        "A",
        json!({"expected": ["10.0.0.1", "10.0.0.9"]}),
    );
    let out = dns::check(&bad, &opts(), None).await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(
        out.message.as_deref(),
        Some("expected A records missing: 10.0.0.9 (got: 10.0.0.1, 10.0.0.2)")
    );
    assert_eq!(out.dns_answers.unwrap(), ["10.0.0.1", "10.0.0.2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nxdomain_nodata_and_refused_are_down() {
    let server = start_server(true, true).await;
    let out = dns::check(
        &spec(&server, "nope.example.test", "A", json!({})),
        &opts(),
        None,
    )
    .await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(
        out.message.as_deref(),
        Some("NXDOMAIN: nope.example.test. does not exist")
    );

    let out = dns::check(
        &spec(&server, "www.example.test", "TXT", json!({})),
        &opts(),
        None,
    )
    .await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(
        out.message.as_deref(),
        Some("no TXT records for www.example.test.")
    );

    // Not a zone this server serves: it refuses.
    let out = dns::check(
        &spec(&server, "elsewhere.example.org", "A", json!({})),
        &opts(),
        None,
    )
    .await;
    assert_eq!(out.verdict, Verdict::Down);
    assert_eq!(
        out.message.as_deref(),
        Some("elsewhere.example.org. A query failed: server answered REFUSED (Query Refused)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_resolver_times_out() {
    let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let config = json!({"recordType": "A", "resolver": silent.local_addr().unwrap().to_string()});
    let s = parse(Some("www.example.test"), config).unwrap();
    let started = std::time::Instant::now();
    let out = dns::check(
        &s,
        &RunOptions {
            timeout: Duration::from_millis(800),
            ..opts()
        },
        None,
    )
    .await;
    assert!(started.elapsed() < Duration::from_millis(800));
    assert_eq!(out.verdict, Verdict::Down);
    let msg = out.message.unwrap();
    assert!(msg.contains("timed out"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_selects_transport() {
    let tcp_only = start_server(false, true).await;
    let over_tcp = spec(
        &tcp_only,
        "www.example.test",
        "A",
        json!({"protocol": "tcp"}),
    );
    let out = dns::check(&over_tcp, &opts(), None).await;
    assert_eq!(out.verdict, Verdict::Up, "{:?}", out.message);
    assert_eq!(out.dns_answers.unwrap(), ["10.0.0.1", "10.0.0.2"]);

    let over_udp = spec(&tcp_only, "www.example.test", "A", json!({}));
    let out = dns::check(
        &over_udp,
        &RunOptions {
            timeout: Duration::from_millis(600),
            ..opts()
        },
        None,
    )
    .await;
    assert_eq!(
        out.verdict,
        Verdict::Down,
        "UDP must not silently fall back to TCP"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assertions_on_records_and_latency() {
    let server = start_server(true, true).await;
    let s = spec(
        &server,
        "www.example.test",
        "A",
        json!({"assertions": [
            {"target": "dnsRecords", "operator": "contains", "value": "10.0.0.1"},
            {"target": "latency", "operator": "lt", "value": 0, "severity": "warn"}
        ]}),
    );
    let out = dns::check(&s, &opts(), None).await;
    assert_eq!(out.verdict, Verdict::Degraded);
    assert!(out.assertion_results[0].passed);
    assert!(!out.assertion_results[1].passed);
    assert!(out.message.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_follow_zone_changes() {
    let server = start_server(true, true).await;
    assert_eq!(
        answers(&server, "www.example.test", "A").await,
        ["10.0.0.1", "10.0.0.2"]
    );
    server
        .replace(
            "www.example.test.",
            RecordType::A,
            vec![RData::A(A(Ipv4Addr::new(10, 0, 0, 3)))],
        )
        .await;
    assert_eq!(
        answers(&server, "www.example.test", "A").await,
        ["10.0.0.3"]
    );
}

// ----------------------------------------------------------------------------------------------
// DNS_DIFF
// ----------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_baseline_unchanged_and_changed() {
    let server = start_server(true, true).await;
    let s = spec(&server, "www.example.test", "A", json!({}));

    // No baseline yet: UP, and the answers become the baseline.
    let first = dns::check(&s, &opts(), Some(None)).await;
    assert_eq!(first.verdict, Verdict::Up, "{:?}", first.message);
    let baseline = first.dns_answers.unwrap();
    assert_eq!(baseline, ["10.0.0.1", "10.0.0.2"]);

    let same = dns::check(&s, &opts(), Some(Some(&baseline))).await;
    assert_eq!(same.verdict, Verdict::Up);
    assert!(same.message.is_none());

    server
        .replace(
            "www.example.test.",
            RecordType::A,
            vec![
                RData::A(A(Ipv4Addr::new(10, 0, 0, 2))),
                RData::A(A(Ipv4Addr::new(10, 0, 0, 3))),
            ],
        )
        .await;
    let changed = dns::check(&s, &opts(), Some(Some(&baseline))).await;
    assert_eq!(changed.verdict, Verdict::Changed);
    assert_eq!(
        changed.message.as_deref(),
        Some("added: 10.0.0.3; removed: 10.0.0.1")
    );
    assert_eq!(changed.dns_answers.unwrap(), ["10.0.0.2", "10.0.0.3"]);

    // Only removals.
    server
        .replace(
            "www.example.test.",
            RecordType::A,
            vec![RData::A(A(Ipv4Addr::new(10, 0, 0, 2)))],
        )
        .await;
    let shrunk = dns::check(&s, &opts(), Some(Some(&baseline))).await;
    assert_eq!(shrunk.verdict, Verdict::Changed);
    assert_eq!(shrunk.message.as_deref(), Some("removed: 10.0.0.1"));

    // A failed query is DOWN, not a change.
    server
        .replace("www.example.test.", RecordType::A, vec![])
        .await;
    let gone = dns::check(&s, &opts(), Some(Some(&baseline))).await;
    assert_eq!(gone.verdict, Verdict::Down);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_through_run_uses_options_baseline() {
    let server = start_server(true, true).await;
    let config = input_config(json!({"recordType": "MX", "resolver": server.addr.to_string()}));
    let input = SpecInput {
        url: None,
        host: Some("example.test"),
        port: None,
        config: &config,
    };
    let spec = CheckSpec::parse(MonitorKind::DnsDiff, &input).unwrap();

    let first = tocsin_checks::run(&spec, &opts()).await;
    assert_eq!(first.verdict, Verdict::Up);
    let baseline = first.dns_answers.clone();

    server
        .replace(
            "example.test.",
            RecordType::MX,
            vec![RData::MX(MX::new(10, name("mail.example.test.")))],
        )
        .await;
    let changed = tocsin_checks::run(&spec, &RunOptions { baseline, ..opts() }).await;
    assert_eq!(changed.verdict, Verdict::Changed);
    assert_eq!(
        changed.message.as_deref(),
        Some("removed: 20 backup.example.test.")
    );
}
