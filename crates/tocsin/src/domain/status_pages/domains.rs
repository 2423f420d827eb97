//! Custom domains of status pages: a page is also served at `/` of a host name its workspace
//! proves to control. Reads need `status_pages:read`; add, verify and delete need
//! `status_pages:write`.
//!
//! Adding a domain records it unverified with a random token and answers the DNS record that
//! proves control: `TXT _tocsin-challenge.<domain>` holding `tocsin-verification=<token>`.
//! Verifying looks that record up (hickory, through `--dns-resolver` when set, else the
//! system's resolvers) and, on a match, stamps `verifiedAt`; from then on a request whose
//! `Host` is the domain gets the page while it is published (`http::custom_domains`). A domain
//! is unique across the server (409 `DOMAIN_TAKEN`), except that a claim left unverified for
//! [`STALE_CLAIM_DAYS`] days may be taken over, so nobody can hold a name they do not control
//! by adding it first. Every write is audited and announced ([`Notice::StatusPageChanged`]):
//! it changes where the page is served, and every node's host cache drops what it knew.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{NameServerConfigGroup, ResolveHosts, ResolverConfig};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::ProtoErrorKind;
use hickory_resolver::{ResolveError, Resolver};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{announce, load};
use crate::audit::{self, Entry};
use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::error::on_constraint;
use crate::domain::input::Validate;
use crate::domain::{check_write, DomainError, FieldError, Resource};
use crate::schema::Timestamp;
use crate::store::{self, status_page_domains::DomainRow};

/// The label the TXT record lives under, before the domain.
pub const CHALLENGE_LABEL: &str = "_tocsin-challenge";
/// What the TXT record's value starts with, before the token.
pub const VALUE_PREFIX: &str = "tocsin-verification=";
/// A claim left unverified this long no longer blocks another workspace (or page) from
/// adding the same domain.
pub const STALE_CLAIM_DAYS: i64 = 7;
/// Domains one page may have (verified or not).
pub const MAX_DOMAINS_PER_PAGE: usize = 10;
/// The longest a verification's DNS lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_DOMAIN_CHARS: usize = 253;

/// The DNS record type of a verification record (always `TXT`).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[schemars(rename = "DomainVerificationRecordType")]
pub enum RecordType {
    #[serde(rename = "TXT")]
    Txt,
}

/// The DNS record that proves control of a domain.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
#[schemars(rename = "DomainVerificationRecord")]
pub struct VerificationRecord {
    /// Always `TXT`.
    #[serde(rename = "type")]
    pub record_type: RecordType,
    /// The record's owner name: `_tocsin-challenge.<domain>`.
    pub name: String,
    /// The value it must hold: `tocsin-verification=<token>`.
    pub value: String,
}

/// A custom domain of a status page.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
#[schemars(rename = "StatusPageDomain")]
pub struct StatusPageDomain {
    /// The lowercase host name.
    pub domain: String,
    pub status_page_id: String,
    /// Whether the TXT record was found: only a verified domain serves the page.
    pub verified: bool,
    #[schemars(with = "Option<Timestamp>")]
    pub verified_at: Option<String>,
    /// The record to publish in DNS before verifying.
    pub verification_record: VerificationRecord,
    #[schemars(with = "Timestamp")]
    pub created_at: String,
}

fn record_name(domain: &str) -> String {
    format!("{CHALLENGE_LABEL}.{domain}")
}

fn record_value(token: &str) -> String {
    format!("{VALUE_PREFIX}{token}")
}

fn view(row: &DomainRow) -> StatusPageDomain {
    StatusPageDomain {
        domain: row.domain.clone(),
        status_page_id: row.status_page_id.clone(),
        verified: row.verified_at.is_some(),
        verified_at: row.verified_at.map(rfc3339),
        verification_record: VerificationRecord {
            record_type: RecordType::Txt,
            name: record_name(&row.domain),
            value: record_value(&row.verification_token),
        },
        created_at: rfc3339(row.created_at),
    }
}

/// The host name a domain must be: lowercase letters, digits and hyphens in dot-separated
/// labels of 1 to 63 characters, at least two labels, at most 253 characters, and not an IP
/// address. Upper-case letters are lowered (host names are case-insensitive) and one trailing
/// dot is dropped; anything else is refused with what to send instead.
pub fn normalize_domain(input: &str) -> Result<String, String> {
    let text = input.trim();
    if text.is_empty() {
        return Err("must be a host name such as status.example.com".into());
    }
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    if bare.parse::<IpAddr>().is_ok() || text.parse::<SocketAddr>().is_ok() {
        return Err("must be a host name such as status.example.com, not an IP address".into());
    }
    if text.contains("://") || text.contains('/') {
        return Err(
            "must be a host name only, such as status.example.com: no scheme (https://) and no path"
                .into(),
        );
    }
    if text.contains(':') {
        return Err("must be a host name without a port, such as status.example.com".into());
    }
    let domain = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if domain.len() > MAX_DOMAIN_CHARS {
        return Err(format!("must be at most {MAX_DOMAIN_CHARS} characters"));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2 {
        return Err(
            "must have at least two labels, such as status.example.com (a bare name such as localhost cannot be verified in public DNS)"
                .into(),
        );
    }
    for label in &labels {
        let ok = (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "{label:?} is not a valid label: each dot-separated part must be 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen (write internationalised names in their xn-- form)"
            ));
        }
    }
    // A numeric last label would read as an address (`10.1`), and no top-level domain is one.
    if labels
        .last()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("must be a host name such as status.example.com, not an IP address".into());
    }
    Ok(domain)
}

/// The server's own host name (from `--public-url`), lowercase.
pub fn own_host(cx: &Cx) -> String {
    cx.config()
        .public_url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn domain_not_found() -> DomainError {
    DomainError::NotFound(Resource::Domain)
}

fn domain_taken() -> DomainError {
    DomainError::Conflict(
        "DOMAIN_TAKEN",
        "This domain is already added to a status page on this server: domains are unique across the server. Delete it there first, or pick another name.".into(),
    )
}

/// A page's domains, oldest first.
pub async fn list(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
) -> Result<Vec<StatusPageDomain>, DomainError> {
    caller.require::<caps::StatusPagesRead>()?;
    let page = load(cx, caller, page_id).await?;
    let rows =
        store::status_page_domains::list(cx.db().reader(), &caller.workspace_id, &page.id).await?;
    Ok(rows.iter().map(view).collect())
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddDomain {
    /// A host name such as `status.example.com`: at least two labels, no scheme, port or
    /// path, not an IP address and not this server's own host; at most 253 characters;
    /// stored lowercase.
    pub domain: String,
}

impl Validate for AddDomain {
    fn validate(&self) -> Vec<FieldError> {
        match normalize_domain(&self.domain) {
            Ok(_) => Vec::new(),
            Err(message) => vec![FieldError::new("domain", message)],
        }
    }
}

/// Adds an unverified domain to a page; the answer names the TXT record to publish.
pub async fn add(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    input: AddDomain,
) -> Result<StatusPageDomain, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    input.check()?;
    let domain = normalize_domain(&input.domain).map_err(|m| DomainError::field("domain", m))?;
    if domain == own_host(cx) {
        return Err(DomainError::field(
            "domain",
            "is this server's own host (its --public-url): add a name of your own",
        ));
    }
    let page = load(cx, caller, page_id).await?;
    let existing =
        store::status_page_domains::list(cx.db().reader(), &caller.workspace_id, &page.id).await?;
    if existing.len() >= MAX_DOMAINS_PER_PAGE {
        return Err(DomainError::field(
            "domain",
            format!("a page has at most {MAX_DOMAINS_PER_PAGE} domains: delete one first"),
        ));
    }
    let now = cx.clock().now_ms();
    let row = DomainRow {
        domain,
        status_page_id: page.id.clone(),
        workspace_id: caller.workspace_id.clone(),
        verification_token: crate::auth::secrets::generate(""),
        verified_at: None,
        created_at: now,
    };
    let mut tx = cx.db().begin().await?;
    let stale_before = now - STALE_CLAIM_DAYS * 86_400_000;
    let released =
        store::status_page_domains::release_stale_claim(&mut *tx, &row.domain, stale_before)
            .await?;
    store::status_page_domains::insert(&mut *tx, &row)
        .await
        .map_err(|e| {
            on_constraint(
                e,
                &[
                    ("status_page_domains_pkey", domain_taken()),
                    ("status_page_domains.domain", domain_taken()),
                ],
            )
        })?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.domain.add",
            resource_type: "status_page",
            resource_id: &page.id,
            metadata: json!({"domain": row.domain, "releasedStaleClaim": released > 0}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &page.id);
    Ok(view(&row))
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DomainPath {
    pub page_id: String,
    /// The domain, as listed.
    pub domain: String,
}

impl Validate for DomainPath {}

async fn load_domain(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    domain: &str,
) -> Result<DomainRow, DomainError> {
    let page = load(cx, caller, page_id).await?;
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    store::status_page_domains::get(cx.db().reader(), &caller.workspace_id, &page.id, &domain)
        .await?
        .ok_or_else(domain_not_found)
}

/// Looks the TXT record up; on a match the domain is verified and starts serving the page
/// (if published). A verified domain answers as it is, without a lookup.
pub async fn verify(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    domain: &str,
) -> Result<StatusPageDomain, DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let mut row = load_domain(cx, caller, page_id, domain).await?;
    if row.verified_at.is_some() {
        return Ok(view(&row));
    }
    let name = record_name(&row.domain);
    let expected = record_value(&row.verification_token);
    let found = lookup_txt(cx.config().dns_resolver, &name).await;
    let values = match found {
        Ok(values) if values.iter().any(|v| v.trim() == expected) => values,
        Ok(values) => return Err(not_verified(&name, &expected, &Found::Values(values))),
        Err(problem) => return Err(not_verified(&name, &expected, &problem)),
    };
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::status_page_domains::mark_verified(
        &mut *tx,
        &caller.workspace_id,
        &row.status_page_id,
        &row.domain,
        now,
    )
    .await?;
    check_write(rows, None, domain_not_found())?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.domain.verify",
            resource_type: "status_page",
            resource_id: &row.status_page_id,
            metadata: json!({"domain": row.domain, "txtRecords": values.len()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.status_page_id);
    row.verified_at = Some(now);
    Ok(view(&row))
}

/// Removes a domain from a page; it stops serving the page at once on every node.
pub async fn delete(
    cx: &Cx,
    caller: &Caller,
    page_id: &str,
    domain: &str,
) -> Result<(), DomainError> {
    caller.require::<caps::StatusPagesWrite>()?;
    let row = load_domain(cx, caller, page_id, domain).await?;
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    let rows = store::status_page_domains::delete(
        &mut *tx,
        &caller.workspace_id,
        &row.status_page_id,
        &row.domain,
    )
    .await?;
    check_write(rows, None, domain_not_found())?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "status_page.domain.delete",
            resource_type: "status_page",
            resource_id: &row.status_page_id,
            metadata: json!({"domain": row.domain, "wasVerified": row.verified_at.is_some()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    announce(cx, &row.status_page_id);
    Ok(())
}

/// What a lookup found other than the expected value.
#[derive(Debug)]
enum Found {
    /// The name has TXT records, none of them the expected one.
    Values(Vec<String>),
    /// The name does not exist, or has no TXT record.
    Nothing,
    /// The lookup itself failed (timeout, server failure, no resolver configured).
    Failed(String),
}

fn not_verified(name: &str, expected: &str, found: &Found) -> DomainError {
    let what = match found {
        Found::Values(values) if !values.is_empty() => {
            let shown: Vec<String> = values
                .iter()
                .take(5)
                .map(|v| format!("{:?}", truncate(v, 100)))
                .collect();
            let more = if values.len() > 5 {
                format!(" and {} more", values.len() - 5)
            } else {
                String::new()
            };
            format!("found TXT {}{more} instead", shown.join(", "))
        }
        Found::Values(_) | Found::Nothing => format!("found no TXT record at {name}"),
        Found::Failed(reason) => format!("the DNS lookup failed: {reason}"),
    };
    DomainError::Conflict(
        "DOMAIN_NOT_VERIFIED",
        format!(
            "The domain is not verified: expected a TXT record at {name} with the value \"{expected}\", but {what}. Publish that record at your DNS provider and verify again; new records can take a few minutes to be visible."
        ),
    )
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The TXT values at `name` (each record's strings joined, as DNS providers show them).
async fn lookup_txt(resolver_addr: Option<SocketAddr>, name: &str) -> Result<Vec<String>, Found> {
    let resolver = build_resolver(resolver_addr).map_err(Found::Failed)?;
    let fqdn = format!("{name}.");
    let answer = tokio::time::timeout(LOOKUP_TIMEOUT, resolver.txt_lookup(fqdn.as_str()))
        .await
        .map_err(|_| Found::Failed(format!("no answer within {} s", LOOKUP_TIMEOUT.as_secs())))?;
    match answer {
        Ok(lookup) => Ok(lookup
            .iter()
            .map(|txt| {
                txt.txt_data()
                    .iter()
                    .map(|part| String::from_utf8_lossy(part).into_owned())
                    .collect::<String>()
            })
            .collect()),
        Err(e) => Err(classify(&e)),
    }
}

fn classify(e: &ResolveError) -> Found {
    match e.proto().map(|p| p.kind()) {
        Some(ProtoErrorKind::NoRecordsFound { response_code, .. })
            if matches!(
                *response_code,
                ResponseCode::NXDomain | ResponseCode::NoError
            ) =>
        {
            Found::Nothing
        }
        Some(ProtoErrorKind::NoRecordsFound { response_code, .. }) => Found::Failed(format!(
            "the DNS server answered {}",
            format!("{response_code:?}").to_ascii_uppercase()
        )),
        Some(ProtoErrorKind::Timeout) => Found::Failed("the DNS query timed out".into()),
        _ => Found::Failed(e.to_string()),
    }
}

/// A fresh resolver per verification, caching nothing: a person who just published the record
/// and verifies again must not get this process's remembered "no such record".
fn build_resolver(addr: Option<SocketAddr>) -> Result<Resolver<TokioConnectionProvider>, String> {
    let (config, mut options) = match addr {
        Some(addr) => (
            ResolverConfig::from_parts(
                None,
                vec![],
                NameServerConfigGroup::from_ips_clear(&[addr.ip()], addr.port(), true),
            ),
            Default::default(),
        ),
        None => hickory_resolver::system_conf::read_system_conf().map_err(|e| {
            format!("cannot read the system resolver configuration ({e}); set --dns-resolver")
        })?,
    };
    options.attempts = 2;
    options.timeout = LOOKUP_TIMEOUT / 2;
    options.use_hosts_file = ResolveHosts::Never;
    options.ndots = 0;
    options.cache_size = 0;
    Ok(
        Resolver::builder_with_config(config, TokioConnectionProvider::default())
            .with_options(options)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::normalize_domain;

    #[test]
    fn host_names_are_lowered_and_everything_else_refused() {
        assert_eq!(
            normalize_domain(" Status.Example.COM. ").as_deref(),
            Ok("status.example.com")
        );
        assert_eq!(normalize_domain("a-b.c1.io").as_deref(), Ok("a-b.c1.io"));
        for bad in [
            "",
            "localhost",
            "status.example.com:8443",
            "https://status.example.com",
            "status.example.com/path",
            "127.0.0.1",
            "[::1]",
            "::1",
            "10.1",
            "-a.example.com",
            "a-.example.com",
            "a..example.com",
            "sta tus.example.com",
            "statüs.example.com",
            "under_score.example.com",
        ] {
            assert!(normalize_domain(bad).is_err(), "{bad:?} passed");
        }
        let long_label = format!("{}.example.com", "a".repeat(64));
        assert!(normalize_domain(&long_label).is_err());
        let long = format!("{}.com", ["abcdefghij"; 23].join("."));
        assert!(long.len() > 253);
        assert!(normalize_domain(&long).is_err());
        let fits = format!("{}.com", ["abcdefghij"; 22].join("."));
        assert!(normalize_domain(&fits).is_ok());
    }
}
