//! A status page's branding: what it looks like (logo, favicon, colours, custom CSS, footer
//! links) and how it writes dates (time zone, language), with the checks that keep it safe to
//! put into a public page.
//!
//! Custom CSS is refused, not rewritten, when it could escape its `<style>` element, run
//! script or load anything from another origin: a user sees exactly which construct is not
//! allowed instead of finding it silently dropped. The public page's Content-Security-Policy
//! (only this style block by hash, no script, images from https and data URLs) is the second
//! wall should a construct slip through.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::input::double_option;
use crate::domain::FieldError;

/// Longest custom CSS accepted, in bytes.
pub const MAX_CSS_BYTES: usize = 20_000;
const MAX_URL_CHARS: usize = 2_048;
const MAX_FOOTER_LINKS: usize = 10;
const MAX_LINK_LABEL_CHARS: usize = 60;

/// How a page looks and writes dates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "StatusPageBranding")]
pub struct Branding {
    /// Shown in the page header instead of the name (https or http URL).
    pub logo_url: Option<String>,
    pub favicon_url: Option<String>,
    /// Header and link colour, `#rgb` or `#rrggbb`.
    pub primary_color: Option<String>,
    /// Page background in the light scheme (the dark scheme keeps its own), `#rgb` or `#rrggbb`.
    pub background_color: Option<String>,
    /// Extra CSS for the page, at most 20,000 bytes: no `<`, no backslash escapes, no
    /// `@import`, no `url()` except `data:image/...`, no `expression()`, `javascript:`,
    /// `behavior` or `-moz-binding`.
    pub custom_css: Option<String>,
    /// Up to 10 links in the page footer.
    #[serde(default)]
    pub footer_links: Vec<FooterLink>,
    /// IANA time zone dates are written in; default `UTC`.
    pub timezone: String,
    /// Language of the page (`lang` attribute and date words), such as `en` or `de`; default `en`.
    pub language: String,
}

/// A footer link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FooterLink {
    /// 1 to 60 characters.
    pub label: String,
    /// An https or http URL.
    pub url: String,
}

/// Branding as sent: every key optional. On update a key present replaces that key, `null`
/// clears it, and an absent key stays.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "StatusPageBrandingInput")]
pub struct BrandingInput {
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub logo_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub favicon_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub primary_color: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>")]
    pub background_color: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<String>", length(max = 20000))]
    pub custom_css: Option<Option<String>>,
    pub footer_links: Option<Vec<FooterLink>>,
    pub timezone: Option<String>,
    pub language: Option<String>,
}

impl Branding {
    pub fn defaults() -> Branding {
        Branding {
            timezone: "UTC".into(),
            language: "en".into(),
            ..Branding::default()
        }
    }

    /// Applies the keys `input` carries.
    pub fn merge(&mut self, input: BrandingInput) {
        if let Some(v) = input.logo_url {
            self.logo_url = v;
        }
        if let Some(v) = input.favicon_url {
            self.favicon_url = v;
        }
        if let Some(v) = input.primary_color {
            self.primary_color = v;
        }
        if let Some(v) = input.background_color {
            self.background_color = v;
        }
        if let Some(v) = input.custom_css {
            self.custom_css = v.filter(|c| !c.trim().is_empty());
        }
        if let Some(v) = input.footer_links {
            self.footer_links = v;
        }
        if let Some(v) = input.timezone {
            self.timezone = v;
        }
        if let Some(v) = input.language {
            self.language = v;
        }
    }

    /// Every failure, with `branding.`-prefixed paths.
    pub fn validate(&self, errors: &mut Vec<FieldError>) {
        for (key, url) in [
            ("logoUrl", &self.logo_url),
            ("faviconUrl", &self.favicon_url),
        ] {
            if let Some(u) = url {
                check_url(&format!("branding.{key}"), u, errors);
            }
        }
        for (key, colour) in [
            ("primaryColor", &self.primary_color),
            ("backgroundColor", &self.background_color),
        ] {
            if colour.as_deref().is_some_and(|c| !is_hex_colour(c)) {
                errors.push(FieldError::new(
                    format!("branding.{key}"),
                    "must be a hex colour: #rgb or #rrggbb",
                ));
            }
        }
        if let Some(css) = &self.custom_css {
            if let Err(why) = check_css(css) {
                errors.push(FieldError::new("branding.customCss", why));
            }
        }
        if self.footer_links.len() > MAX_FOOTER_LINKS {
            errors.push(FieldError::new(
                "branding.footerLinks",
                format!("at most {MAX_FOOTER_LINKS} links"),
            ));
        }
        for (i, link) in self.footer_links.iter().enumerate() {
            let n = link.label.trim().chars().count();
            if n == 0
                || n > MAX_LINK_LABEL_CHARS
                || link.label.chars().any(|c| !crate::text::printable(c))
            {
                errors.push(FieldError::new(
                    format!("branding.footerLinks.{i}.label"),
                    format!("must be 1 to {MAX_LINK_LABEL_CHARS} printable characters"),
                ));
            }
            check_url(&format!("branding.footerLinks.{i}.url"), &link.url, errors);
        }
        if self.timezone.parse::<chrono_tz::Tz>().is_err() {
            errors.push(FieldError::new(
                "branding.timezone",
                "must be an IANA time zone name, such as Europe/Berlin or UTC",
            ));
        }
        if !is_language_tag(&self.language) {
            errors.push(FieldError::new(
                "branding.language",
                "must be a language tag such as en, de or pt-BR",
            ));
        }
    }
}

fn check_url(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    let ok = value.chars().count() <= MAX_URL_CHARS
        && url::Url::parse(value)
            .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some());
    if !ok {
        errors.push(FieldError::new(
            field,
            format!("must be an absolute https or http URL of at most {MAX_URL_CHARS} characters"),
        ));
    }
}

/// `#rgb` or `#rrggbb`: safe to write into a style declaration as it is.
pub fn is_hex_colour(c: &str) -> bool {
    let hex = c.strip_prefix('#').unwrap_or("");
    matches!(hex.len(), 3 | 6) && hex.chars().all(|ch| ch.is_ascii_hexdigit())
}

/// A simple BCP 47 tag: a 2-3 letter language, then subtags of 2-8 letters or digits.
fn is_language_tag(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let lang_ok = parts
        .next()
        .is_some_and(|l| (2..=3).contains(&l.len()) && l.chars().all(|c| c.is_ascii_lowercase()));
    lang_ok
        && tag.len() <= 35
        && parts.all(|p| (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Whether custom CSS may go into the page; the error says which construct is refused.
pub fn check_css(css: &str) -> Result<(), String> {
    if css.len() > MAX_CSS_BYTES {
        return Err(format!("at most {MAX_CSS_BYTES} bytes"));
    }
    if css.contains('<') {
        return Err("may not contain `<` (it could close the style element)".into());
    }
    if css.contains('\\') {
        return Err("may not contain backslash escapes".into());
    }
    if css
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err("may not contain control characters".into());
    }
    let plain = strip_comments(css).to_ascii_lowercase();
    for (needle, what) in [
        ("@import", "`@import` (it loads from another address)"),
        ("expression(", "`expression()`"),
        ("javascript:", "`javascript:` URLs"),
        ("vbscript:", "`vbscript:` URLs"),
        ("behavior", "`behavior`"),
        ("-moz-binding", "`-moz-binding`"),
        (
            "image-set(",
            "`image-set()` (it loads from another address)",
        ),
        ("@namespace", "`@namespace`"),
    ] {
        if plain.contains(needle) {
            return Err(format!("may not use {what}"));
        }
    }
    let mut rest = plain.as_str();
    while let Some(at) = rest.find("url(") {
        let arg = rest[at + 4..].trim_start().trim_start_matches(['"', '\'']);
        if !arg.starts_with("data:image/") {
            return Err(
                "may use `url()` only with `data:image/...` (nothing loads from other addresses)"
                    .into(),
            );
        }
        rest = &rest[at + 4..];
    }
    Ok(())
}

/// The CSS with its `/* ... */` comments removed (an unclosed comment runs to the end).
fn strip_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find("*/") {
            Some(end) => rest = &rest[start + 2 + end + 2..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_that_styles_is_accepted() {
        let css = "header { background: #123; }\n.component:hover { outline: 1px solid red }\n\
                   .logo { background-image: url(\"data:image/png;base64,AAAA\") }";
        assert_eq!(check_css(css), Ok(()));
    }

    #[test]
    fn css_that_escapes_loads_or_scripts_is_refused() {
        for bad in [
            "</style><script>alert(1)</script>",
            "@import 'https://evil.example/x.css';",
            "@im/**/port url(https://evil.example)",
            "body { background: url(https://evil.example/track.png) }",
            "body { background: URL( 'http://x' ) }",
            "body { width: expression(alert(1)) }",
            "a { behavior: url(x.htc) }",
            "a { -moz-binding: url(x) }",
            "a { background: \\75rl(x) }",
            "a { background: image-set('x.png' 1x) }",
        ] {
            assert!(check_css(bad).is_err(), "{bad} should be refused");
        }
        assert!(check_css(&"a{}".repeat(MAX_CSS_BYTES)).is_err());
    }

    #[test]
    fn colours_and_language_tags() {
        assert!(is_hex_colour("#0af") && is_hex_colour("#00AAFF"));
        assert!(!is_hex_colour("red") && !is_hex_colour("#12345") && !is_hex_colour("#12;}x"));
        assert!(is_language_tag("en") && is_language_tag("pt-BR") && is_language_tag("zh-Hant"));
        assert!(!is_language_tag("EN") && !is_language_tag("e") && !is_language_tag("en_US"));
    }
}
