//! Which addresses a check may connect to. A server shared by workspaces that do not trust each
//! other turns on [`AddressPolicy::deny_private`]: then no check connects to a loopback, private,
//! link-local, shared (100.64.0.0/10), unspecified, broadcast or multicast address, so a
//! workspace cannot use monitors to read the server's own network. The address is judged where
//! the connection is made — after resolution, on every redirect hop, and it is the very address
//! connected to — so a name that resolves (or rebinds between two lookups) to such an address is
//! refused like the literal. A refused target is a failed check (DOWN), not a fault of the probe.
//!
//! [`is_private`] is the one classification of "internal" addresses: the server's notification
//! client (`--notify-deny-private-addresses`) uses it too.

use std::net::IpAddr;

use url::Host;

use crate::spec::{CheckSpec, FieldError};

/// Whether `ip` is an address a shared server must not be made to connect to.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                // 100.64.0.0/10, carrier-grade NAT: someone's internal network.
                || (o[0] == 100 && (o[1] & 0xC0) == 64)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7 unique local, fe80::/10 link-local.
                || (s[0] & 0xFE00) == 0xFC00
                || (s[0] & 0xFFC0) == 0xFE80
        }
    }
}

/// The text of a check refused by the policy.
pub fn refused_message(ip: IpAddr) -> String {
    format!(
        "address {ip} is not allowed on this server (loopback, private and link-local addresses are refused)"
    )
}

/// The addresses checks may connect to. The default allows every address (a self-hosted
/// server monitors its own network).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Refuse the addresses [`is_private`] names.
    pub deny_private: bool,
    /// Addresses allowed despite `deny_private`. The server sets none; an embedder (or a test
    /// standing in for a public target on loopback) may.
    pub exceptions: Vec<IpAddr>,
}

impl AddressPolicy {
    /// The policy of `--checks-deny-private-addresses` (or none when `deny` is false).
    pub fn deny_private(deny: bool) -> AddressPolicy {
        AddressPolicy {
            deny_private: deny,
            exceptions: Vec::new(),
        }
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        !self.deny_private || !is_private(ip) || self.exceptions.contains(&ip)
    }

    /// Keeps the allowed addresses of a resolution, in order; when none is left, the refusal
    /// message names the first address refused.
    pub fn keep_allowed<T>(
        &self,
        addrs: Vec<T>,
        ip_of: impl Fn(&T) -> IpAddr,
    ) -> Result<Vec<T>, String> {
        let first = match addrs.first() {
            Some(a) => ip_of(a),
            None => return Ok(addrs),
        };
        let kept: Vec<T> = addrs
            .into_iter()
            .filter(|a| self.allows(ip_of(a)))
            .collect();
        if kept.is_empty() {
            Err(refused_message(first))
        } else {
            Ok(kept)
        }
    }

    /// The refusal of a check whose target is an address literal the policy refuses, on the
    /// field that names it (`url`, `host`, `config.resolver`): such a monitor could never run.
    /// Names are not judged here; they are judged when the check connects.
    pub fn literal_refusal(&self, spec: &CheckSpec) -> Option<FieldError> {
        let url_literal = |url: &url::Url| match url.host() {
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        let (field, ip) = match spec {
            CheckSpec::Http(s) => ("url", url_literal(&s.url)),
            CheckSpec::WebSocket(s) => ("url", url_literal(&s.url)),
            CheckSpec::Tcp(s) => ("host", s.host.parse().ok()),
            CheckSpec::Ping(s) => ("host", s.host.parse().ok()),
            CheckSpec::Dns(s) | CheckSpec::DnsDiff(s) => {
                ("config.resolver", s.resolver.map(|r| r.ip()))
            }
        };
        let ip = ip.filter(|ip| !self.allows(*ip))?;
        Some(FieldError::new(field, refused_message(ip)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn private_ranges_are_recognised() {
        for s in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_private(ip(s)), "{s}");
        }
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1111",
            "100.128.0.1",
            "172.32.0.1",
        ] {
            assert!(!is_private(ip(s)), "{s}");
        }
    }

    #[test]
    fn the_policy_filters_and_names_what_it_refused() {
        let open = AddressPolicy::default();
        assert!(open.allows(ip("127.0.0.1")));
        let shared = AddressPolicy::deny_private(true);
        assert!(!shared.allows(ip("127.0.0.1")));
        assert!(shared.allows(ip("1.1.1.1")));
        assert_eq!(
            shared.keep_allowed(vec![ip("10.0.0.1"), ip("1.1.1.1")], |a| *a),
            Ok(vec![ip("1.1.1.1")])
        );
        assert_eq!(
            shared.keep_allowed(vec![ip("10.0.0.1"), ip("::1")], |a| *a),
            Err(refused_message(ip("10.0.0.1")))
        );
        let excepted = AddressPolicy {
            deny_private: true,
            exceptions: vec![ip("127.0.0.1")],
        };
        assert!(excepted.allows(ip("127.0.0.1")));
        assert!(!excepted.allows(ip("127.0.0.2")));
    }
}
