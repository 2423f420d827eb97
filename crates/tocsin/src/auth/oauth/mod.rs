//! The OAuth 2.1 authorization server's rules for MCP clients, with no HTTP in them: the
//! secrets it hands out and their lifetimes, scope parsing (the scopes are the seventeen token
//! capabilities), PKCE S256, redirect URI rules (RFC 8252 for native apps), the addresses the
//! server names itself by, and ([`cache`]) resolving an access token to a [`Caller`] on `/mcp`.
//! The operations (registration, authorize, consent, token, revoke, grants) are in
//! `domain::oauth`; the endpoints in `http::oauth`.

pub mod cache;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

pub use cache::{authenticate_access_token, TokenCache};

use super::capability::{CapSet, Capability, TOKEN_CAPABILITIES};
use super::secrets;
use crate::config::Config;

/// Prefix of access tokens: told apart from personal access tokens (`svc_`) at a glance.
pub const ACCESS_TOKEN_PREFIX: &str = "mcp_at_";
/// Prefix of refresh tokens.
pub const REFRESH_TOKEN_PREFIX: &str = "mcp_rt_";
/// Prefix of confidential clients' secrets.
pub const CLIENT_SECRET_PREFIX: &str = "mcp_cs_";
/// Prefix of client ids.
pub const CLIENT_ID_PREFIX: &str = "mcp_client_";

/// Access tokens are short-lived: an hour, then the client refreshes.
pub const ACCESS_TTL_MS: i64 = 3600 * 1000;
/// A refresh token unused for 30 days lapses (each use issues a new one).
pub const REFRESH_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
/// Authorization codes live 60 seconds.
pub const CODE_TTL_MS: i64 = 60 * 1000;
/// The person has ten minutes to answer the consent page.
pub const CONSENT_TTL_MS: i64 = 10 * 60 * 1000;

/// The server's root URL without a trailing slash (`{base_url}`).
pub fn base_url(config: &Config) -> String {
    config.public_url.as_str().trim_end_matches('/').to_string()
}

/// The authorization server's issuer, `{base_url}/auth`.
pub fn issuer(config: &Config) -> String {
    format!("{}/auth", base_url(config))
}

/// The one protected resource access tokens are for, `{base_url}/mcp` (RFC 8707).
pub fn resource(config: &Config) -> String {
    format!("{}/mcp", base_url(config))
}

/// A fresh secret with `prefix` (32 random bytes).
pub fn new_secret(prefix: &str) -> String {
    secrets::generate(prefix)
}

/// Parses a space-separated scope string into token capabilities, in the spec's order and
/// without repeats. `Err` names the first scope that is not one of the seventeen (the four
/// session-only capabilities included: no client may ever hold them).
pub fn parse_scopes(scope: &str) -> Result<Vec<Capability>, String> {
    let mut set = CapSet::EMPTY;
    for s in scope.split_ascii_whitespace() {
        match Capability::parse(s) {
            Some(c) if !c.is_session_only() => set = set.union(CapSet::of(&[c])),
            _ => return Err(s.to_string()),
        }
    }
    Ok(ordered(set))
}

/// The token capabilities of `set`, in the spec's order.
pub fn ordered(set: CapSet) -> Vec<Capability> {
    TOKEN_CAPABILITIES
        .iter()
        .copied()
        .filter(|c| set.contains(*c))
        .collect()
}

/// Scopes as OAuth writes them: space-separated.
pub fn scope_string(caps: &[Capability]) -> String {
    caps.iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A PKCE S256 code challenge: 43 characters of unpadded base64url (a SHA-256).
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// RFC 7636: `BASE64URL(SHA256(verifier)) == challenge`, the verifier being 43 to 128
/// unreserved characters; compared in constant time.
pub fn verify_pkce(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !well_formed {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    secrets::hashes_equal(&computed, challenge)
}

/// Why a redirect URI cannot be registered.
pub fn check_redirect_uri(uri: &str) -> Result<(), String> {
    let parsed = url::Url::parse(uri).map_err(|e| format!("{uri} is not an absolute URL ({e})"))?;
    if parsed.fragment().is_some() || uri.contains('#') {
        return Err(format!("{uri} has a fragment; redirect URIs may not"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!("{uri} carries credentials"));
    }
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        "http" => Err(format!(
            "{uri} uses http on a host that is not loopback: use https, or http on 127.0.0.1, [::1] or localhost"
        )),
        other => Err(format!(
            "{uri} uses the scheme {other}: use https, or http on a loopback address"
        )),
    }
}

fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether `asked` names the registered `registered` redirect URI: exactly, or, for an http
/// loopback URI, with any port (RFC 8252 section 7.3: a native app takes whatever port is free
/// when it starts).
pub fn redirect_matches(registered: &str, asked: &str) -> bool {
    if registered == asked {
        return true;
    }
    let (Ok(r), Ok(a)) = (url::Url::parse(registered), url::Url::parse(asked)) else {
        return false;
    };
    if r.scheme() != "http" || !is_loopback(&r) || a.fragment().is_some() {
        return false;
    }
    a.scheme() == "http"
        && a.host() == r.host()
        && a.path() == r.path()
        && a.query() == r.query()
        && a.username().is_empty()
        && a.password().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_challenge(challenge));
        assert!(verify_pkce(verifier, challenge));
        assert!(!verify_pkce(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx",
            challenge
        ));
        assert!(!verify_pkce("short", challenge));
    }

    #[test]
    fn redirect_uris_follow_rfc_8252() {
        assert!(check_redirect_uri("https://app.example.com/cb").is_ok());
        assert!(check_redirect_uri("http://127.0.0.1:3000/cb").is_ok());
        assert!(check_redirect_uri("http://localhost/cb").is_ok());
        assert!(check_redirect_uri("http://[::1]:9/cb").is_ok());
        assert!(check_redirect_uri("http://example.com/cb").is_err());
        assert!(check_redirect_uri("https://app.example.com/cb#x").is_err());
        assert!(check_redirect_uri("javascript:alert(1)").is_err());
        assert!(check_redirect_uri("/relative").is_err());
        assert!(redirect_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:53100/cb"
        ));
        assert!(!redirect_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:53100/other"
        ));
        assert!(!redirect_matches(
            "https://app.example.com/cb",
            "https://app.example.com:8443/cb"
        ));
    }

    #[test]
    fn scopes_are_the_seventeen_capabilities() {
        let caps = parse_scopes("identity:read monitors:read monitors:read").unwrap_or_default();
        assert_eq!(scope_string(&caps), "monitors:read identity:read");
        assert_eq!(
            parse_scopes("monitors:read audit:read"),
            Err("audit:read".into())
        );
        assert_eq!(parse_scopes("nope"), Err("nope".into()));
    }
}
