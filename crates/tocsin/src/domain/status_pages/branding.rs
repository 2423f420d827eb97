//! A status page's branding: what it looks like (logo, favicon, colours, custom CSS, footer
//! links) and how it writes dates (time zone, language), with the checks that keep it safe to
//! put into a public page.
//!
//! Custom CSS is refused, not rewritten, when it could escape its `<style>` element, run
//! script or load anything from another origin: a user sees exactly which construct is not
//! allowed instead of finding it silently dropped. It is judged token by token as a browser
//! reads it (`cssparser`), against allow-lists of at-rules and functions. The public page's Content-Security-Policy
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
    /// Extra CSS for the page, at most 20,000 bytes, read as a browser reads it (comments,
    /// strings and escapes resolved): no `<`; at-rules `@media`, `@supports`, `@keyframes`,
    /// `@container` and `@layer` only; `url()` only with `data:image/...`; only known
    /// functions (colours, maths, gradients, transforms, filters, selectors: no
    /// `expression()`, `image-set()`, ...); no `behavior`, `-moz-binding` or `javascript`.
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
///
/// The CSS is read by a real tokenizer (`cssparser`, the one Servo and Firefox use), so what is
/// checked is what a browser sees: comments, strings and escapes (`u\72l(` is `url(`) are
/// resolved before anything is judged, and a `/*` inside a string hides nothing. What remains
/// must be on the allow-lists: known at-rules, known functions, `url()` of `data:image/` only.
pub fn check_css(css: &str) -> Result<(), String> {
    if css.len() > MAX_CSS_BYTES {
        return Err(format!("at most {MAX_CSS_BYTES} bytes"));
    }
    // The raw text goes into a `<style>` element, which the HTML parser ends at `</style`
    // whatever the CSS tokenizer thinks (inside a string or a comment included).
    if css.contains('<') {
        return Err("may not contain `<` (it could close the style element)".into());
    }
    if css
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err("may not contain control characters".into());
    }
    let mut parser = cssparser::Parser::new(css);
    check_tokens(&mut parser, 0)
}

/// Deeper nesting than any stylesheet needs; bounds the recursion.
const MAX_CSS_DEPTH: usize = 32;

/// At-rules custom CSS may use (none of them loads anything).
const AT_RULES: &[&str] = &[
    "media",
    "supports",
    "keyframes",
    "-webkit-keyframes",
    "container",
    "layer",
];

/// Functions custom CSS may call: colours, maths, gradients, transforms, filters, timing,
/// grid, shapes and selectors. `url()` is judged apart; anything else (`expression()`,
/// `image-set()`, `element()`, `paint()`, ...) is refused.
const FUNCTIONS: &[&str] = &[
    "rgb",
    "rgba",
    "hsl",
    "hsla",
    "hwb",
    "lab",
    "lch",
    "oklab",
    "oklch",
    "color",
    "color-mix",
    "light-dark",
    "var",
    "calc",
    "min",
    "max",
    "clamp",
    "round",
    "mod",
    "rem",
    "abs",
    "sign",
    "env",
    "attr",
    "counter",
    "counters",
    "linear-gradient",
    "radial-gradient",
    "conic-gradient",
    "repeating-linear-gradient",
    "repeating-radial-gradient",
    "repeating-conic-gradient",
    "translate",
    "translatex",
    "translatey",
    "translatez",
    "translate3d",
    "rotate",
    "rotatex",
    "rotatey",
    "rotatez",
    "rotate3d",
    "scale",
    "scalex",
    "scaley",
    "scalez",
    "scale3d",
    "skew",
    "skewx",
    "skewy",
    "matrix",
    "matrix3d",
    "perspective",
    "blur",
    "brightness",
    "contrast",
    "drop-shadow",
    "grayscale",
    "hue-rotate",
    "invert",
    "opacity",
    "saturate",
    "sepia",
    "cubic-bezier",
    "steps",
    "linear",
    "minmax",
    "repeat",
    "fit-content",
    "rect",
    "inset",
    "circle",
    "ellipse",
    "polygon",
    "not",
    "is",
    "where",
    "has",
    "nth-child",
    "nth-last-child",
    "nth-of-type",
    "nth-last-of-type",
    "lang",
    "dir",
    "selector",
];

/// Identifiers refused wherever they appear (properties that run code or bind behaviour).
const IDENTS: &[&str] = &["behavior", "-moz-binding", "javascript", "vbscript"];

fn is_data_image(url: &str) -> bool {
    url.trim().to_ascii_lowercase().starts_with("data:image/")
}

const URL_ONLY_DATA: &str =
    "may use `url()` only with `data:image/...` (nothing loads from other addresses)";

fn check_tokens(p: &mut cssparser::Parser<'_>, depth: usize) -> Result<(), String> {
    use cssparser::Token;
    if depth > MAX_CSS_DEPTH {
        return Err(format!("may nest blocks at most {MAX_CSS_DEPTH} deep"));
    }
    loop {
        let token = match p.next_including_whitespace_and_comments() {
            Ok(t) => t.clone(),
            Err(_) => return Ok(()),
        };
        match &token {
            Token::AtKeyword(name) => {
                let name = name.to_ascii_lowercase();
                if !AT_RULES.contains(&name.as_str()) {
                    return Err(match name.as_str() {
                        "import" => "may not use `@import` (it loads from another address)".into(),
                        _ => format!("may not use `@{name}`; allowed: @media, @supports, @keyframes, @container, @layer"),
                    });
                }
            }
            Token::Ident(name) => {
                let lower = name.to_ascii_lowercase();
                if let Some(bad) = IDENTS.iter().find(|b| lower == **b) {
                    return Err(format!("may not use `{bad}`"));
                }
            }
            Token::UnquotedUrl(url) if !is_data_image(url) => return Err(URL_ONLY_DATA.into()),
            Token::BadUrl(_) => return Err(URL_ONLY_DATA.into()),
            Token::BadString(_) => return Err("has a string that is not closed".into()),
            Token::Function(name) => {
                let name = name.to_ascii_lowercase();
                if name == "url" || name == "src" {
                    p.parse_nested_block(|inner| {
                        let mut ok = false;
                        let mut count = 0;
                        while let Ok(t) = inner.next_including_whitespace_and_comments() {
                            if matches!(t, Token::WhiteSpace(_) | Token::Comment(_)) {
                                continue;
                            }
                            count += 1;
                            ok = matches!(t, Token::QuotedString(u) if is_data_image(u));
                        }
                        if ok && count == 1 {
                            Ok(())
                        } else {
                            Err(cssparser::ParseError::custom(URL_ONLY_DATA.to_string()))
                        }
                    })
                    .map_err(|e| match e.kind {
                        cssparser::ParseErrorKind::Custom(why) => why,
                        _ => URL_ONLY_DATA.to_string(),
                    })?;
                    continue;
                }
                if !FUNCTIONS.contains(&name.as_str()) {
                    return Err(match name.as_str() {
                        "expression" => "may not use `expression()`".into(),
                        "image-set" | "-webkit-image-set" => {
                            "may not use `image-set()` (it loads from another address)".into()
                        }
                        _ => format!("may not use the function `{name}()`"),
                    });
                }
                nested(p, depth)?;
            }
            Token::ParenthesisBlock | Token::SquareBracketBlock | Token::CurlyBracketBlock => {
                nested(p, depth)?;
            }
            _ => {}
        }
    }
}

/// Checks the block just opened.
fn nested(p: &mut cssparser::Parser<'_>, depth: usize) -> Result<(), String> {
    p.parse_nested_block(|inner| {
        check_tokens(inner, depth + 1).map_err(cssparser::ParseError::custom)
    })
    .map_err(|e| match e.kind {
        cssparser::ParseErrorKind::Custom(why) => why,
        _ => "could not be read as CSS".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_that_styles_is_accepted() {
        let css = "header { background: #123; }\n.component:hover { outline: 1px solid red }\n\
                   .logo { background-image: url(\"data:image/png;base64,AAAA\") }\n\
                   /* a comment with url(https://x) */ .x::before { content: \"\\2014 url(\" }\n\
                   @media (max-width: 40rem) { .a { color: rgb(0 0 0 / 50%); width: calc(100% - 1rem) } }\n\
                   .b { background: url(data:image/svg+xml;base64,AA) } .c:not(.d) { transform: rotate(3deg) }";
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
            "a{content:\"/*\"}body{background:url(https://x/t.png)}b{content:\"*/\"}",
            "a{content:'/*'}body{background:url('https://x/t.png')}b{content:'*/'}",
            "a { background: u\\72l(https://x/t.png) }",
            "a { background: u\\rl(https://x/t.png) }",
            "@\\69mport 'https://x/a.css';",
            "a { background: -webkit-image-set(url(data:image/png;base64,AA) 1x) }",
            "a { background: url(data:image/png;base64,AA), url(https://x/t.png) }",
            "a { background: url('data:image/png' 'https://x') }",
            "@font-face { font-family: x; src: url(https://x/f.woff) }",
            "a { b\\65havior: url(x.htc) }",
            "a { background: paint(x) }",
            "a { background: url(https://x/t.png",
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
