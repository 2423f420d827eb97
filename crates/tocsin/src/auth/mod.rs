//! Who is calling and what they may do: passwords, sessions, API keys, capabilities, the
//! capability requirements operations declare, rate limits and signed links. The HTTP
//! extractor that enforces them is `http::auth`.

pub mod caller;
pub mod capability;
pub mod caps;
pub mod error;
pub mod key_cache;
pub mod needs;
pub mod oauth;
pub mod password;
pub mod rate_limit;
pub mod secrets;
pub mod sign_in_guard;
pub mod signed;
pub mod sso;

pub use caller::{Caller, Requirement, TokenCaches, Via};
pub use capability::{CapSet, Capability, Role};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "svc.session_token";
/// Sessions live 30 days from their last use (sliding).
pub const SESSION_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
