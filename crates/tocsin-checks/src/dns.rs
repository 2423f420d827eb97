//! DNS and DNS_DIFF checks: query one name for one record type, normalize the answers into a
//! canonical, sorted, de-duplicated text set, compare it with `expected` (DNS) or with the
//! accepted baseline (DNS_DIFF), then evaluate assertions.
//!
//! The queried name is the monitor's `host` (for `PTR`, an IP address there is turned into its
//! reverse name). The name is always queried as fully qualified: no search domains, no hosts
//! file. Config shape (inside the monitor's `config`):
//! ```json
//! {"recordType": "MX", "resolver": "127.0.0.1:5353", "protocol": "udp",
//!  "expected": ["10 mail.example.com."],
//!  "assertions": [{"target": "dnsRecords", "operator": "contains", "value": "10 mail.example.com."}]}
//! ```
//! * `recordType` (required): A, AAAA, CNAME, MX, NS, TXT, SOA, SRV, CAA or PTR.
//! * `resolver`: `"ip"` or `"ip:port"` (`"[v6]:port"`); absent means the system resolver. A
//!   resolver the run's address policy refuses fails the check without a query.
//! * `protocol`: `udp` (default) or `tcp`.
//! * `expected`: records that must all be in the answer set; written in the canonical form
//!   below, but names may omit the trailing dot and use any case.
//!
//! Canonical record text: A/AAAA the address; CNAME/NS/PTR the lowercase name with a trailing
//! dot; MX `preference exchange`; SRV `priority weight port target`; SOA
//! `mname rname serial refresh retry expire minimum`; TXT the character strings concatenated;
//! CAA `flags tag "value"`.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_resolver::config::{
    NameServerConfig, NameServerConfigGroup, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use hickory_resolver::proto::xfer::Protocol;
use hickory_resolver::proto::ProtoErrorKind;
use hickory_resolver::{ResolveError, Resolver};

use crate::assertions::{Assertion, Observation, Target};
use crate::config::{field_names, DnsDiffConfig};
use crate::spec::{FieldError, RunOptions, SpecInput};
use crate::tcp::{apply_assertions, deadline_for, ms, ConfigReader};
use crate::{Outcome, Timings, Verdict};

/// The record types a DNS check can query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsRecordType {
    A,
    Aaaa,
    Cname,
    Mx,
    Ns,
    Txt,
    Soa,
    Srv,
    Caa,
    Ptr,
}

impl DnsRecordType {
    const ALL: [(&'static str, DnsRecordType); 10] = [
        ("A", DnsRecordType::A),
        ("AAAA", DnsRecordType::Aaaa),
        ("CNAME", DnsRecordType::Cname),
        ("MX", DnsRecordType::Mx),
        ("NS", DnsRecordType::Ns),
        ("TXT", DnsRecordType::Txt),
        ("SOA", DnsRecordType::Soa),
        ("SRV", DnsRecordType::Srv),
        ("CAA", DnsRecordType::Caa),
        ("PTR", DnsRecordType::Ptr),
    ];

    /// Every wire spelling, in table order.
    pub fn names() -> Vec<&'static str> {
        DnsRecordType::ALL.iter().map(|(n, _)| *n).collect()
    }

    /// The wire spelling (`AAAA`).
    pub fn as_str(self) -> &'static str {
        DnsRecordType::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }

    fn parse(s: &str) -> Option<Self> {
        DnsRecordType::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, t)| *t)
    }

    fn record_type(self) -> RecordType {
        match self {
            DnsRecordType::A => RecordType::A,
            DnsRecordType::Aaaa => RecordType::AAAA,
            DnsRecordType::Cname => RecordType::CNAME,
            DnsRecordType::Mx => RecordType::MX,
            DnsRecordType::Ns => RecordType::NS,
            DnsRecordType::Txt => RecordType::TXT,
            DnsRecordType::Soa => RecordType::SOA,
            DnsRecordType::Srv => RecordType::SRV,
            DnsRecordType::Caa => RecordType::CAA,
            DnsRecordType::Ptr => RecordType::PTR,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsProtocol {
    Udp,
    Tcp,
}

/// A validated DNS or DNS_DIFF check.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsSpec {
    /// The fully qualified name queried, e.g. `example.com.`.
    pub name: String,
    pub record_type: DnsRecordType,
    /// `None` uses the system resolver.
    pub resolver: Option<SocketAddr>,
    pub protocol: DnsProtocol,
    /// Canonical records that must all be present.
    pub expected: Vec<String>,
    pub assertions: Vec<Assertion>,
}

const DNS_TARGETS: &[Target] = &[Target::DnsRecords, Target::Latency];

impl DnsSpec {
    pub fn parse(input: &SpecInput<'_>) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        // DNS_DIFF's keys are DNS's (its type wraps DNS's), so one list serves both.
        let mut cfg = ConfigReader::new(input.config, "config", field_names::<DnsDiffConfig>());
        let record_type = match cfg.string("recordType") {
            None if cfg.raw("recordType").is_none() => {
                cfg.errors
                    .push(FieldError::new("config.recordType", "is required"));
                None
            }
            None => None,
            Some(s) => {
                let parsed = DnsRecordType::parse(s);
                if parsed.is_none() {
                    let names: Vec<&str> = DnsRecordType::ALL.iter().map(|(n, _)| *n).collect();
                    cfg.errors.push(FieldError::new(
                        "config.recordType",
                        format!("must be one of: {}", names.join(", ")),
                    ));
                }
                parsed
            }
        };
        let name = parse_query_name(input.host, record_type, &mut errors);
        let resolver = cfg.string("resolver").and_then(|s| {
            let parsed = parse_resolver(s);
            if parsed.is_none() {
                cfg.errors.push(FieldError::new(
                    "config.resolver",
                    "must be an IP address with an optional port, e.g. \"9.9.9.9\" or \"127.0.0.1:5353\"",
                ));
            }
            parsed
        });
        let protocol = match cfg.string("protocol") {
            None | Some("udp") => DnsProtocol::Udp,
            Some("tcp") => DnsProtocol::Tcp,
            Some(_) => {
                cfg.errors.push(FieldError::new(
                    "config.protocol",
                    "must be \"udp\" or \"tcp\"",
                ));
                DnsProtocol::Udp
            }
        };
        let mut expected = Vec::new();
        if let Some(items) = cfg.string_array("expected") {
            for (i, item) in items.iter().enumerate() {
                let Some(rt) = record_type else { break };
                match canonical_expected(rt, item) {
                    Ok(c) => expected.push(c),
                    Err(message) => cfg
                        .errors
                        .push(FieldError::new(format!("config.expected.{i}"), message)),
                }
            }
        }
        let assertions = cfg.assertions(DNS_TARGETS, "DNS");
        errors.append(&mut cfg.errors);

        match (name, record_type) {
            (Some(name), Some(record_type)) if errors.is_empty() => Ok(DnsSpec {
                name,
                record_type,
                resolver,
                protocol,
                expected,
                assertions,
            }),
            _ => Err(errors),
        }
    }
}

/// The queried name from `host`: a domain name, or for PTR also an IP address.
fn parse_query_name(
    host: Option<&str>,
    record_type: Option<DnsRecordType>,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    let Some(host) = host.map(str::trim) else {
        errors.push(FieldError::new("host", "is required: the name to query"));
        return None;
    };
    if record_type == Some(DnsRecordType::Ptr) {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Some(Name::from(ip).to_lowercase().to_string());
        }
    }
    if host.is_empty() || !crate::tcp::is_hostname(host) {
        errors.push(FieldError::new(
            "host",
            "must be a domain name, e.g. example.com",
        ));
        return None;
    }
    match Name::from_ascii(host) {
        Ok(mut name) => {
            name.set_fqdn(true);
            Some(name.to_lowercase().to_string())
        }
        Err(e) => {
            errors.push(FieldError::new(
                "host",
                format!("is not a valid domain name: {e}"),
            ));
            None
        }
    }
}

fn parse_resolver(s: &str) -> Option<SocketAddr> {
    let s = s.trim();
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return (addr.port() != 0).then_some(addr);
    }
    let ip = s
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(s);
    ip.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 53))
}

/// A domain name in canonical form: lowercase, fully qualified.
fn canonical_name(s: &str) -> Option<String> {
    let s = s.trim();
    if s == "." {
        return Some(".".to_string());
    }
    if !crate::tcp::is_hostname(s) {
        return None;
    }
    Some(if s.ends_with('.') {
        s.to_ascii_lowercase()
    } else {
        format!("{}.", s.to_ascii_lowercase())
    })
}

/// Brings an `expected` entry into the canonical form the answers use, so that the comparison
/// does not depend on case, trailing dots or address spelling.
fn canonical_expected(rt: DnsRecordType, s: &str) -> Result<String, String> {
    let fields: Vec<&str> = s.split_whitespace().collect();
    let numbers = |parts: &[&str]| parts.iter().all(|p| p.parse::<u32>().is_ok());
    match rt {
        DnsRecordType::A => s
            .trim()
            .parse::<Ipv4Addr>()
            .map(|ip| ip.to_string())
            .map_err(|_| "must be an IPv4 address for A records".to_string()),
        DnsRecordType::Aaaa => s
            .trim()
            .parse::<Ipv6Addr>()
            .map(|ip| ip.to_string())
            .map_err(|_| "must be an IPv6 address for AAAA records".to_string()),
        DnsRecordType::Cname | DnsRecordType::Ns | DnsRecordType::Ptr => canonical_name(s)
            .ok_or_else(|| format!("must be a domain name for {} records", rt.as_str())),
        DnsRecordType::Mx => match fields.as_slice() {
            [pref, name] if pref.parse::<u16>().is_ok() => canonical_name(name)
                .map(|n| format!("{pref} {n}"))
                .ok_or_else(|| "must be \"<preference> <exchange>\", e.g. \"10 mail.example.com.\"".into()),
            _ => Err("must be \"<preference> <exchange>\", e.g. \"10 mail.example.com.\"".into()),
        },
        DnsRecordType::Srv => match fields.as_slice() {
            [p, w, port, target]
                if [p, w, port].iter().all(|n| n.parse::<u16>().is_ok()) =>
            {
                canonical_name(target).map(|t| format!("{p} {w} {port} {t}")).ok_or_else(|| {
                    "must be \"<priority> <weight> <port> <target>\", e.g. \"10 5 5060 sip.example.com.\""
                        .into()
                })
            }
            _ => Err(
                "must be \"<priority> <weight> <port> <target>\", e.g. \"10 5 5060 sip.example.com.\""
                    .into(),
            ),
        },
        DnsRecordType::Soa => match fields.as_slice() {
            [mname, rname, rest @ ..] if rest.len() == 5 && numbers(rest) => {
                match (canonical_name(mname), canonical_name(rname)) {
                    (Some(m), Some(r)) => Ok(format!("{m} {r} {}", rest.join(" "))),
                    _ => Err("must be \"<mname> <rname> <serial> <refresh> <retry> <expire> <minimum>\"".into()),
                }
            }
            _ => Err("must be \"<mname> <rname> <serial> <refresh> <retry> <expire> <minimum>\"".into()),
        },
        DnsRecordType::Txt | DnsRecordType::Caa => {
            if s.is_empty() && rt == DnsRecordType::Caa {
                Err("must not be empty".into())
            } else {
                Ok(s.to_string())
            }
        }
    }
}

/// One answer record in canonical text, or `None` for a record of another type (e.g. the CNAME
/// that led to the requested A records).
fn canonical_record(rt: DnsRecordType, data: &RData) -> Option<String> {
    let name = |n: &Name| n.to_lowercase().to_string();
    let text = match (rt, data) {
        (DnsRecordType::A, RData::A(a)) => a.0.to_string(),
        (DnsRecordType::Aaaa, RData::AAAA(a)) => a.0.to_string(),
        (DnsRecordType::Cname, RData::CNAME(c)) => name(&c.0),
        (DnsRecordType::Ns, RData::NS(n)) => name(&n.0),
        (DnsRecordType::Ptr, RData::PTR(p)) => name(&p.0),
        (DnsRecordType::Mx, RData::MX(mx)) => {
            format!("{} {}", mx.preference(), name(mx.exchange()))
        }
        (DnsRecordType::Srv, RData::SRV(srv)) => format!(
            "{} {} {} {}",
            srv.priority(),
            srv.weight(),
            srv.port(),
            name(srv.target())
        ),
        (DnsRecordType::Soa, RData::SOA(soa)) => format!(
            "{} {} {} {} {} {} {}",
            name(soa.mname()),
            name(soa.rname()),
            soa.serial(),
            soa.refresh(),
            soa.retry(),
            soa.expire(),
            soa.minimum()
        ),
        (DnsRecordType::Txt, RData::TXT(txt)) => txt
            .iter()
            .map(|part| String::from_utf8_lossy(part))
            .collect::<String>(),
        (DnsRecordType::Caa, RData::CAA(caa)) => caa.to_string(),
        _ => return None,
    };
    Some(text)
}

/// `baseline` is `Some(..)` for DNS_DIFF (inner `None` until a baseline is accepted).
pub async fn check(
    spec: &DnsSpec,
    opts: &RunOptions,
    baseline: Option<Option<&[String]>>,
) -> Outcome {
    let started = Instant::now();
    let deadline = deadline_for(opts, started);
    // The resolver a monitor names is a server it makes the probe talk to; the system
    // resolver is the operator's own.
    if let Some(addr) = spec
        .resolver
        .filter(|a| !opts.address_policy.allows(a.ip()))
    {
        return Outcome::down(
            started.elapsed(),
            crate::address_policy::refused_message(addr.ip()),
        );
    }
    let resolver = match build_resolver(spec, deadline.saturating_duration_since(started)) {
        Ok(r) => r,
        Err(message) => return Outcome::down(started.elapsed(), message),
    };
    let rt = spec.record_type;
    let lookup = tokio::time::timeout_at(
        deadline.into(),
        resolver.lookup(spec.name.as_str(), rt.record_type()),
    )
    .await;
    let latency = started.elapsed();
    let timings = Some(Timings {
        dns: ms(latency),
        ..Timings::default()
    });

    let lookup = match lookup {
        Err(_) => {
            let mut o = Outcome::down(
                latency,
                format!("{} {} query timed out", spec.name, rt.as_str()),
            );
            o.timings = timings;
            return o;
        }
        Ok(Err(e)) => {
            if let Some(resource) = local_resolve_fault(&e) {
                return Outcome::probe_fault(latency, resource);
            }
            let mut o = Outcome::down(latency, describe_error(&e, spec));
            o.timings = timings;
            return o;
        }
        Ok(Ok(lookup)) => lookup,
    };
    let answers: Vec<String> = lookup
        .record_iter()
        .filter_map(|r| canonical_record(rt, r.data()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let mut outcome = Outcome {
        verdict: Verdict::Up,
        latency,
        timings,
        ..Outcome::default()
    };
    if answers.is_empty() {
        outcome.verdict = Verdict::Down;
        outcome.message = Some(format!("no {} records for {}", rt.as_str(), spec.name));
        outcome.dns_answers = Some(answers);
        return outcome;
    }

    let missing: Vec<&str> = spec
        .expected
        .iter()
        .filter(|e| !contains_record(&answers, e))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        outcome.verdict = Verdict::Down;
        outcome.message = Some(format!(
            "expected {} records missing: {} (got: {})",
            rt.as_str(),
            missing.join(", "),
            answers.join(", ")
        ));
    } else if let Some(Some(baseline)) = baseline {
        if let Some(diff) = diff_message(baseline, &answers) {
            outcome.verdict = Verdict::Changed;
            outcome.message = Some(diff);
        }
    }

    let obs = Observation {
        latency_ms: ms(latency),
        dns_records: Some(&answers),
        ..Observation::default()
    };
    apply_assertions(&mut outcome, &spec.assertions, &obs);
    outcome.dns_answers = Some(answers);
    outcome
}

/// Record texts compare ASCII-case-insensitively: names are already lowercase, and TXT/CAA
/// values rarely differ only in case in a way anyone monitors.
fn contains_record(answers: &[String], wanted: &str) -> bool {
    answers
        .iter()
        .any(|a| a == wanted || a.eq_ignore_ascii_case(wanted))
}

/// `added: ...; removed: ...` when the answer set differs from the baseline, else `None`.
fn diff_message(baseline: &[String], answers: &[String]) -> Option<String> {
    let before: BTreeSet<&str> = baseline.iter().map(String::as_str).collect();
    let after: BTreeSet<&str> = answers.iter().map(String::as_str).collect();
    let added: Vec<&str> = after.difference(&before).copied().collect();
    let removed: Vec<&str> = before.difference(&after).copied().collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added: {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed: {}", removed.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The resolver could not open its socket because this probe ran out of something.
fn local_resolve_fault(e: &ResolveError) -> Option<&'static str> {
    if let Some(ProtoErrorKind::Io(io)) = e.proto().map(|p| p.kind()) {
        if let Some(resource) = crate::fault::local_io_fault(io) {
            return Some(resource);
        }
    }
    crate::fault::local_fault(e)
}

fn describe_error(e: &ResolveError, spec: &DnsSpec) -> String {
    let rt = spec.record_type.as_str();
    let Some(proto) = e.proto() else {
        return format!("{} {rt} query failed: {e}", spec.name);
    };
    match proto.kind() {
        ProtoErrorKind::NoRecordsFound { response_code, .. } => match *response_code {
            ResponseCode::NXDomain => format!("NXDOMAIN: {} does not exist", spec.name),
            ResponseCode::NoError => format!("no {rt} records for {}", spec.name),
            code => format!(
                "{} {rt} query failed: server answered {} ({code})",
                spec.name,
                format!("{code:?}").to_ascii_uppercase()
            ),
        },
        ProtoErrorKind::Timeout => format!("{} {rt} query timed out", spec.name),
        _ => format!("{} {rt} query failed: {proto}", spec.name),
    }
}

/// A fresh resolver per check: nothing is cached between checks, so every check sees what the
/// servers answer now (DNS_DIFF depends on that).
fn build_resolver(
    spec: &DnsSpec,
    budget: Duration,
) -> Result<Resolver<TokioConnectionProvider>, String> {
    let protocol = match spec.protocol {
        DnsProtocol::Udp => Protocol::Udp,
        DnsProtocol::Tcp => Protocol::Tcp,
    };
    let (config, mut options) = match spec.resolver {
        Some(addr) => {
            let mut server = NameServerConfig::new(addr, protocol);
            server.trust_negative_responses = true;
            let group = NameServerConfigGroup::from(vec![server]);
            (
                ResolverConfig::from_parts(None, vec![], group),
                ResolverOpts::default(),
            )
        }
        None => {
            let (system, options) = hickory_resolver::system_conf::read_system_conf()
                .map_err(|e| format!("cannot read the system resolver configuration: {e}"))?;
            // The system configuration lists each server once per protocol; keep the chosen one.
            let servers: Vec<NameServerConfig> = system
                .name_servers()
                .iter()
                .filter(|s| s.protocol == protocol)
                .cloned()
                .collect();
            if servers.is_empty() {
                return Err("the system resolver configuration lists no name servers".to_string());
            }
            (
                ResolverConfig::from_parts(None, vec![], NameServerConfigGroup::from(servers)),
                options,
            )
        }
    };
    // Two attempts share the budget, so one lost UDP datagram does not fail the check.
    options.attempts = 2;
    options.timeout = (budget / 2).max(Duration::from_millis(1));
    options.use_hosts_file = ResolveHosts::Never;
    options.ndots = 0;
    options.cache_size = 0;
    options.try_tcp_on_error = false;
    Ok(
        Resolver::builder_with_config(config, TokioConnectionProvider::default())
            .with_options(options)
            .build(),
    )
}
