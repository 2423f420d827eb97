//! Cursor pages at the HTTP edge: the parameters and their rules live in
//! [`crate::domain::page`]; this adds the extractor validation.

pub use crate::domain::page::*;

use super::extract::Validate;
use crate::http::error::FieldError;

impl Validate for PageParams {
    fn validate(&self) -> Vec<FieldError> {
        self.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_cursor_asks_for_the_first_page() {
        let p = PageParams {
            cursor: Some(String::new()),
            limit: None,
        };
        assert!(p.validate().is_empty());
        assert_eq!(p.after(), "");
    }

    #[test]
    fn a_foreign_cursor_and_an_out_of_range_limit_are_refused() {
        let p = PageParams {
            cursor: Some("not-ours".into()),
            limit: Some(0),
        };
        let fields: Vec<String> = p.validate().into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["limit", "cursor"]);
    }
}
