//! The one HTTP client every provider's request goes through (reqwest over rustls): a 10 s
//! budget per attempt (5 s to connect), no proxy from the environment, redirects followed only
//! on the same host (at most 5; a redirect elsewhere is refused and the attempt fails), at most
//! 64 KiB of a response read, and, when the operator turns it on
//! (`--notify-deny-private-addresses`), no loopback, private, link-local, shared or
//! unspecified destination — judged on the resolved addresses (a DNS name pointing at
//! 127.0.0.1 is refused like the literal), so a workspace on a hosted server cannot reach the
//! server's own network. Error texts never carry the URL: some providers put credentials in
//! it (Slack, Discord, Telegram).

use std::error::Error as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;

use super::{HttpMethod, HttpRequest};

/// The whole attempt: connect, send, and read the answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// What is read of a response, at most (kept for the error text).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
const MAX_REDIRECTS: usize = 5;

/// The provider's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// At most [`MAX_RESPONSE_BYTES`].
    pub body: Vec<u8>,
}

/// Why no answer came.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SendError {
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Transport(String),
}

#[derive(Clone)]
pub struct Outbound {
    client: reqwest::Client,
    deny_private: bool,
}

/// Whether `ip` is an address a hosted server must not be made to call: the same
/// classification the checks' address policy uses.
pub use tocsin_checks::address_policy::is_private;

fn denied_message(ip: IpAddr) -> String {
    format!(
        "the destination address {ip} is loopback, private or link-local, which this server does not call (--notify-deny-private-addresses)"
    )
}

/// A resolver that drops private addresses, and fails when nothing else is left.
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| !is_private(a.ip()))
                .collect();
            if public.is_empty() {
                let msg = match all.first() {
                    Some(a) => denied_message(a.ip()),
                    None => format!("{host} has no address"),
                };
                return Err(msg.into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The address that would make a request to `url` refused under
/// `--notify-deny-private-addresses`: a private literal, or a name whose every address is
/// private. A name that does not resolve now is not judged (DNS may be down for a moment;
/// the attempt would say so).
pub async fn private_destination(url: &str) -> Option<IpAddr> {
    let url = url::Url::parse(url).ok()?;
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)).filter(|ip| is_private(*ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)).filter(|ip| is_private(*ip)),
        url::Host::Domain(name) => {
            let lookup = tokio::net::lookup_host((name, 0));
            let all: Vec<SocketAddr> = tokio::time::timeout(CONNECT_TIMEOUT, lookup)
                .await
                .ok()?
                .ok()?
                .collect();
            let first = all.first()?.ip();
            all.iter().all(|a| is_private(a.ip())).then_some(first)
        }
    }
}

fn same_host(a: &url::Url, b: &url::Url) -> bool {
    a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

impl Outbound {
    pub fn new(deny_private: bool) -> Outbound {
        let policy = Policy::custom(|attempt| {
            let first = attempt.previous().first().cloned();
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if first.is_some_and(|f| same_host(&f, attempt.url())) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let mut builder = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(policy)
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(concat!("Tocsin/", env!("CARGO_PKG_VERSION")));
        if deny_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let client = builder.build().unwrap_or_else(|e| {
            // Building fails only when the TLS backend cannot start; a default client still
            // sends, with the same redirect refusal applied per answer below.
            tracing::error!(error = %e, "could not build the notification HTTP client");
            reqwest::Client::new()
        });
        Outbound {
            client,
            deny_private,
        }
    }

    /// Sends one request; any HTTP answer is an [`Answer`], whatever its status.
    pub async fn send(&self, req: &HttpRequest) -> Result<Answer, SendError> {
        let url = url::Url::parse(&req.url)
            .map_err(|_| SendError::Denied("the channel's URL is not valid".into()))?;
        if self.deny_private {
            // Literal addresses never reach the resolver.
            let literal = match url.host() {
                Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
                _ => None,
            };
            if let Some(ip) = literal.filter(|ip| is_private(*ip)) {
                return Err(SendError::Denied(denied_message(ip)));
            }
        }
        let method = match req.method {
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
        };
        let mut builder = self.client.request(method, url).body(req.body.clone());
        for (name, value) in &req.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let mut response = builder.send().await.map_err(describe)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while body.len() < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_RESPONSE_BYTES - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                // The status is what counts; a body cut short does not undo the answer.
                Err(_) => break,
            }
        }
        Ok(Answer { status, body })
    }
}

/// A transport error in words, without the URL (it may hold credentials).
fn describe(e: reqwest::Error) -> SendError {
    let e = e.without_url();
    let mut causes = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    if let Some(denied) = causes.iter().find(|c| c.contains("--notify-deny-private")) {
        return SendError::Denied(denied.clone());
    }
    let what = if e.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs())
    } else if e.is_connect() {
        "could not connect".to_string()
    } else if e.is_redirect() {
        "too many redirects".to_string()
    } else {
        "the request failed".to_string()
    };
    let detail = causes.last().cloned().unwrap_or_else(|| e.to_string());
    SendError::Transport(format!("{what}: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(
                is_private(ip.parse().unwrap_or(IpAddr::from([1, 1, 1, 1]))),
                "{ip}"
            );
        }
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "100.128.0.1"] {
            assert!(
                !is_private(ip.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{ip}"
            );
        }
    }
}
