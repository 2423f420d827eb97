//! What every operation's typed input shares: the [`Validate`] step that runs after
//! deserialization (on every surface, so the REST body, a CLI flag and an MCP argument get the
//! same field errors), the "absent vs null" deserializer for partial updates, and the field
//! checks several resources use (names, slugs, email addresses).

use serde::Deserialize;

use super::FieldError;

/// Domain validation after deserialization: every failure, with its dotted path.
pub trait Validate {
    fn validate(&self) -> Vec<FieldError> {
        Vec::new()
    }

    /// The failures as one error, or `Ok` when there are none.
    fn check(&self) -> Result<(), super::DomainError> {
        let errors = self.validate();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.into())
        }
    }
}

/// Tells "absent" (outer None) from "null" (Some(None)).
pub fn double_option<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// 3 to 48 characters: lowercase letters, digits and single hyphens.
pub fn check_slug(field: &str, slug: &str, errors: &mut Vec<FieldError>) {
    let ok = (3..=48).contains(&slug.len())
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--");
    if !ok {
        errors.push(FieldError::new(
            field,
            "must be 3 to 48 characters of a-z, 0-9 and single hyphens",
        ));
    }
}

pub use crate::text::{printable, NOT_PRINTABLE};

/// 1 to `max` [`printable`] characters once trimmed.
pub fn check_name(field: &str, name: &str, max: usize, errors: &mut Vec<FieldError>) {
    let n = name.trim().chars().count();
    if n == 0 || n > max {
        errors.push(FieldError::new(
            field,
            format!("must be 1 to {max} printable characters"),
        ));
    } else if !name.chars().all(printable) {
        errors.push(FieldError::new(
            field,
            format!("must be 1 to {max} printable characters: {NOT_PRINTABLE}"),
        ));
    }
}

/// A syntactically plausible address: one `@`, something before it, a dot after it.
pub fn check_email(field: &str, email: &str, errors: &mut Vec<FieldError>) {
    let ok = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        errors.push(FieldError::new(field, "must be an email address"));
    }
}
