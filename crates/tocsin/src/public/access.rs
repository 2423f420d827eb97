//! The gate of a private status page: what a request must show to read it. Built with the
//! page's snapshot (so it changes when the page does, on every node, by the same digest and
//! notices as the rendered copy), it holds no per-node memory of who signed in.
//!
//! A `PASSWORD` page admits a request carrying its page cookie: `tocsin_page_<page id>`, a
//! signed, expiring token (`auth::signed`) under a key derived from the server's link secret,
//! the page id and the page's current password hash. A new password is a new salted hash and
//! so a new key: every cookie issued before it stops verifying, on every node, without a list
//! of revoked cookies. An `EMAIL_DOMAINS` page admits a signed-in person of this server whose
//! verified email's domain is allowed (an unverified address proves nothing); members of the
//! page's workspace are admitted to either kind (`super::admission` resolves the session and
//! asks [`Gate::admits_person`]).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::auth::signed;
use crate::domain::status_pages::access::{stored_domains, visibility_of, Visibility};
use crate::store::corrupt::CorruptRow;
use crate::store::status_pages::PageRow;

/// How long a page cookie lets its holder in.
pub const COOKIE_TTL_MS: i64 = 7 * 24 * 3_600_000;

/// What a request must show to read one page.
#[derive(Clone)]
pub struct Gate {
    pub visibility: Visibility,
    pub page_id: String,
    pub workspace_id: String,
    allowed_domains: Vec<String>,
    /// The argon2 hash the sign-in form checks against (never leaves the process).
    password_hash: Option<String>,
    /// The key page cookies are signed with (empty on pages without a password).
    cookie_key: Vec<u8>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the hash nor the key reaches a log line.
        f.debug_struct("Gate")
            .field("visibility", &self.visibility)
            .field("page_id", &self.page_id)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// The gate of `page`, whose cookies are signed under a key derived from `secret`. A
    /// visibility this build cannot read is a (reported) corrupt row: the page is not served
    /// rather than guarded by a guessed rule.
    pub fn of(page: &PageRow, secret: &[u8]) -> Result<Gate, CorruptRow> {
        let visibility = visibility_of(page)?;
        let cookie_key = match &page.password_hash {
            Some(hash) => cookie_key(secret, &page.id, hash),
            None => Vec::new(),
        };
        Ok(Gate {
            visibility,
            page_id: page.id.clone(),
            workspace_id: page.workspace_id.clone(),
            allowed_domains: stored_domains(page),
            password_hash: page.password_hash.clone(),
            cookie_key,
        })
    }

    /// Whether anyone may read the page.
    pub fn is_public(&self) -> bool {
        self.visibility == Visibility::Public
    }

    /// The name of the page's cookie (one per page, so pages on one host do not share it).
    pub fn cookie_name(&self) -> String {
        format!("tocsin_page_{}", self.page_id)
    }

    /// The stored hash the sign-in form checks, on a `PASSWORD` page with a password.
    pub fn password_hash(&self) -> Option<&str> {
        match self.visibility {
            Visibility::Password => self.password_hash.as_deref(),
            _ => None,
        }
    }

    /// A new cookie value, valid until `now_ms` + [`COOKIE_TTL_MS`].
    pub fn issue(&self, now_ms: i64) -> Option<String> {
        self.password_hash()?;
        Some(signed::sign(
            &self.cookie_key,
            &self.page_id,
            now_ms + COOKIE_TTL_MS,
        ))
    }

    /// Whether a cookie value admits its holder now (signature under the current password's
    /// key, this page, not expired).
    pub fn admits_cookie(&self, value: &str, now_ms: i64) -> bool {
        if self.password_hash().is_none() || self.cookie_key.is_empty() {
            return false;
        }
        matches!(
            signed::verify(&self.cookie_key, value, now_ms),
            signed::Verify::Valid(id) if id == self.page_id
        )
    }

    /// Whether a signed-in person is admitted: by `verified_email` (their email when verified,
    /// else `None`), or as a `member` of the page's workspace, which admits to any private page.
    pub fn admits_person(&self, verified_email: Option<&str>, member: bool) -> bool {
        if member || self.is_public() {
            return true;
        }
        if self.visibility != Visibility::EmailDomains {
            return false;
        }
        let Some((_, domain)) = verified_email.and_then(|e| e.rsplit_once('@')) else {
            return false;
        };
        let domain = domain.to_ascii_lowercase();
        self.allowed_domains.contains(&domain)
    }
}

/// HMAC(secret, page id, password hash): the key of one page's cookies under one password.
fn cookie_key(secret: &[u8], page_id: &str, hash: &str) -> Vec<u8> {
    match <Hmac<Sha256> as Mac>::new_from_slice(secret) {
        Ok(mut m) => {
            m.update(b"status-page-access\0");
            m.update(page_id.as_bytes());
            m.update(b"\0");
            m.update(hash.as_bytes());
            m.finalize().into_bytes().to_vec()
        }
        // HMAC takes keys of any length, so this does not happen; an empty key admits nobody
        // (`admits_cookie` refuses it rather than verify under a key anyone knows).
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(visibility: &str, hash: Option<&str>) -> PageRow {
        PageRow {
            id: "p1".into(),
            workspace_id: "w1".into(),
            name: "n".into(),
            slug: "s".into(),
            published: 1,
            branding: "{}".into(),
            history_days: 90,
            auto_incidents: "OFF".into(),
            visibility: visibility.into(),
            password_hash: hash.map(str::to_string),
            allowed_email_domains: r#"["example.com"]"#.into(),
            version: 1,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn a_cookie_admits_until_it_expires_or_the_password_changes() {
        let gate = Gate::of(&page("PASSWORD", Some("hash-1")), b"secret").unwrap();
        let cookie = gate.issue(1_000).unwrap();
        assert!(gate.admits_cookie(&cookie, 2_000));
        assert!(!gate.admits_cookie(&cookie, 1_000 + COOKIE_TTL_MS));
        assert!(!gate.admits_cookie(&format!("{cookie}x"), 2_000));
        let changed = Gate::of(&page("PASSWORD", Some("hash-2")), b"secret").unwrap();
        assert!(!changed.admits_cookie(&cookie, 2_000));
        let other_server = Gate::of(&page("PASSWORD", Some("hash-1")), b"other").unwrap();
        assert!(!other_server.admits_cookie(&cookie, 2_000));
        // A page that is no longer a password page takes no cookie.
        let domains = Gate::of(&page("EMAIL_DOMAINS", Some("hash-1")), b"secret").unwrap();
        assert!(!domains.admits_cookie(&cookie, 2_000));
    }

    #[test]
    fn people_are_admitted_by_domain_or_membership() {
        let gate = Gate::of(&page("EMAIL_DOMAINS", None), b"k").unwrap();
        assert!(gate.admits_person(Some("ann@Example.com"), false));
        assert!(!gate.admits_person(Some("ann@example.com.evil.io"), false));
        assert!(!gate.admits_person(Some("ann@sub.example.com"), false));
        assert!(gate.admits_person(Some("x@elsewhere.io"), true));
        // An address nobody verified admits nobody by its domain.
        assert!(!gate.admits_person(None, false));
        assert!(gate.admits_person(None, true));
        let pw = Gate::of(&page("PASSWORD", Some("h")), b"k").unwrap();
        assert!(!pw.admits_person(Some("ann@example.com"), false));
        assert!(pw.admits_person(Some("ann@example.com"), true));
    }
}
