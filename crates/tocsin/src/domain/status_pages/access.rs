//! Who may read a status page's public answers: anyone (`PUBLIC`, the default), whoever knows
//! the page password (`PASSWORD`), or signed-in people whose email domain is allowed
//! (`EMAIL_DOMAINS`); members of the page's workspace may always read their own pages.
//!
//! The password is write-only: it is stored as an argon2 hash (`auth::password`) and the API
//! only says whether one is set. Changing it changes the key page cookies are signed with
//! (`public::access`), so every cookie issued for the old password stops working on every
//! node. The checks at request time live in `public::access` and `http::public`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::password;
use crate::domain::{DomainError, FieldError};
use crate::store::corrupt::{self, stored_text, CorruptRow};
use crate::store::status_pages::PageRow;

/// The most allowed email domains a page holds.
const MAX_DOMAINS: usize = 50;

/// Who may read the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(rename = "StatusPageVisibility")]
pub enum Visibility {
    /// Anyone.
    Public,
    /// Whoever enters the page password on the page (a signed cookie then lets them in).
    Password,
    /// People signed in to this server whose email address is at an allowed domain.
    EmailDomains,
}

impl Visibility {
    pub const ALL: [Visibility; 3] = [
        Visibility::Public,
        Visibility::Password,
        Visibility::EmailDomains,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "PUBLIC",
            Visibility::Password => "PASSWORD",
            Visibility::EmailDomains => "EMAIL_DOMAINS",
        }
    }
}

stored_text!(Visibility, "status page visibility");

/// The typed visibility of a stored page. An unknown word is a (reported) corrupt row: it is
/// never read as some kind, least of all as public.
pub fn visibility_of(row: &PageRow) -> Result<Visibility, CorruptRow> {
    corrupt::parse("status_pages", &row.id, "visibility", &row.visibility)
}

/// Who may read a page, as the API shows it (the password itself is never shown).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "StatusPageAccess")]
#[schemars(transform = crate::schema::exact_object)]
pub struct Access {
    pub visibility: Visibility,
    /// Whether a page password is set (it is write-only).
    pub password_set: bool,
    /// Email domains whose signed-in people may read an `EMAIL_DOMAINS` page.
    pub allowed_email_domains: Vec<String>,
}

/// Changes to who may read a page; absent fields stay as they are.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "StatusPageAccessInput")]
pub struct AccessInput {
    pub visibility: Option<Visibility>,
    /// The page password (8 to 256 characters), write-only; required to make a page
    /// `PASSWORD` unless one is set already. A new password signs out everyone who entered
    /// the old one.
    pub password: Option<String>,
    /// Lowercase domain names such as `example.com` (at most 50); at least one for an
    /// `EMAIL_DOMAINS` page.
    pub allowed_email_domains: Option<Vec<String>>,
}

impl AccessInput {
    /// The checks that need no stored row.
    pub fn validate(&self, errors: &mut Vec<FieldError>) {
        if let Some(p) = &self.password {
            let n = p.chars().count();
            if !(password::MIN_LENGTH..=password::MAX_LENGTH).contains(&n) {
                errors.push(FieldError::new(
                    "access.password",
                    format!(
                        "must be {} to {} characters",
                        password::MIN_LENGTH,
                        password::MAX_LENGTH
                    ),
                ));
            }
        }
        if let Some(domains) = &self.allowed_email_domains {
            if domains.len() > MAX_DOMAINS {
                errors.push(FieldError::new(
                    "access.allowedEmailDomains",
                    format!("at most {MAX_DOMAINS} domains"),
                ));
            }
            for (i, d) in domains.iter().enumerate() {
                if !is_domain(d) {
                    errors.push(FieldError::new(
                        format!("access.allowedEmailDomains.{i}"),
                        "must be a lowercase domain name such as example.com",
                    ));
                }
            }
        }
    }
}

/// A domain name: dot-separated labels of lowercase letters, digits and inner hyphens, at
/// least two labels, at most 253 characters.
fn is_domain(d: &str) -> bool {
    d.len() <= 253
        && d.contains('.')
        && d.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

/// The allowed domains stored on a row (an unreadable list allows nobody).
pub fn stored_domains(row: &PageRow) -> Vec<String> {
    serde_json::from_str(&row.allowed_email_domains).unwrap_or_default()
}

/// The API view of a row's access.
pub fn view(row: &PageRow) -> Result<Access, CorruptRow> {
    Ok(Access {
        visibility: visibility_of(row)?,
        password_set: row.password_hash.is_some(),
        allowed_email_domains: stored_domains(row),
    })
}

/// Applies `input` to `row` (hashing a new password), then checks the result holds together:
/// a `PASSWORD` page needs a password, an `EMAIL_DOMAINS` page a domain. Answers whether the
/// password changed (for the audit entry).
pub async fn apply(row: &mut PageRow, input: AccessInput) -> Result<bool, DomainError> {
    let mut errors = Vec::new();
    input.validate(&mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    if let Some(v) = input.visibility {
        row.visibility = v.as_str().to_string();
    }
    if let Some(domains) = input.allowed_email_domains {
        let mut domains = domains;
        domains.sort();
        domains.dedup();
        row.allowed_email_domains = serde_json::to_string(&domains).map_err(anyhow::Error::from)?;
    }
    match visibility_of(row)? {
        Visibility::Password if input.password.is_none() && row.password_hash.is_none() => {
            errors.push(FieldError::new(
                "access.password",
                "is required to make the page PASSWORD",
            ));
        }
        Visibility::EmailDomains if stored_domains(row).is_empty() => {
            errors.push(FieldError::new(
                "access.allowedEmailDomains",
                "must name at least one domain for an EMAIL_DOMAINS page",
            ));
        }
        _ => {}
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let changed = match input.password {
        Some(p) => {
            row.password_hash = Some(password::hash(p).await.map_err(DomainError::Internal)?);
            true
        }
        None => false,
    };
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_plain_lowercase_names() {
        for ok in ["example.com", "a-b.example.co.uk", "x1.io"] {
            assert!(is_domain(ok), "{ok}");
        }
        for bad in [
            "",
            "example",
            "Example.com",
            "-a.com",
            "a..com",
            "a.com.",
            "@x.com",
        ] {
            assert!(!is_domain(bad), "{bad}");
        }
    }

    #[test]
    fn an_unknown_stored_visibility_is_never_public() {
        assert_eq!("PUBLIC".parse(), Ok(Visibility::Public));
        // Not the strictest kind either: an error, reported where the row is read.
        assert!("garbage".parse::<Visibility>().is_err());
        crate::store::corrupt::assert_round_trip(&Visibility::ALL, Visibility::as_str);
    }
}
