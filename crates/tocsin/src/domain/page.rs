//! Cursor pages, shared by every paged list operation: `cursor` and `limit` (default 50, at
//! most 200) in, the items and `nextCursor` (null on the last page) out. A cursor is the opaque, URL-safe encoding of the sort
//! key of the last item returned; because keys are creation-ordered identifiers, pages stay
//! stable when rows are inserted.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::domain::FieldError;

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 200;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct PageParams {
    /// `nextCursor` of the previous page; absent or empty for the first page.
    pub cursor: Option<String>,
    /// Items per page, 1 to 200 (default 50).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

impl PageParams {
    /// The problems with `limit` and `cursor`, with their field names.
    pub fn check(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(l) = self.limit {
            if !(1..=MAX_LIMIT).contains(&l) {
                errors.push(FieldError::new(
                    "limit",
                    format!("must be between 1 and {MAX_LIMIT}"),
                ));
            }
        }
        // `?cursor=` is how a form or a template asks for the first page.
        if let Some(c) = self.cursor.as_deref().filter(|c| !c.is_empty()) {
            if decode(c).is_none() {
                errors.push(FieldError::new(
                    "cursor",
                    "is not a cursor this server issued",
                ));
            }
        }
        errors
    }
}

impl PageParams {
    pub fn limit(&self) -> u32 {
        self.limit.unwrap_or(DEFAULT_LIMIT)
    }

    /// The sort key to continue after ("" for the first page).
    pub fn after(&self) -> String {
        self.cursor.as_deref().and_then(decode).unwrap_or_default()
    }
}

pub fn encode(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("v1:{key}"))
}

pub fn decode(cursor: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.strip_prefix("v1:").map(str::to_string)
}

/// Splits a fetched `limit + 1` rows into the page and the next cursor.
pub fn finish<T>(
    mut rows: Vec<T>,
    limit: u32,
    key: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    let limit = limit as usize;
    if rows.len() > limit {
        rows.truncate(limit);
        let next = rows.last().map(|r| encode(&key(r)));
        (rows, next)
    } else {
        (rows, None)
    }
}
