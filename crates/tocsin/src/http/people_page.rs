//! The one layout of the small HTML pages people reach from a link or a form rather than
//! through the dashboard: the acknowledge pages, the email verification pages, the subscription
//! confirm/unsubscribe/"check your inbox" pages, and the error pages that stand in for a status
//! page or a refused link. Every builder hands this module a title and a body; the look
//! (product or status page branding, light and dark schemes by `prefers-color-scheme`, the
//! favicon), the language attribute and the headers (a CSP allowing only this page's style
//! block by hash and the inline icon, no script, forms to this origin; no referrer, since
//! tokens ride in these addresses; no caching; no sniffing) are decided here once.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use sha2::{Digest, Sha256};

use crate::domain::status_pages::branding::is_hex_colour;
use crate::public::html::ICON;

const CSS: &str = include_str!("people_page.css");

/// Whose look a page wears.
#[derive(Debug, Clone, Copy, Default)]
pub enum Brand<'a> {
    /// The product's own (pages about an account, an alert, a broken link).
    #[default]
    Product,
    /// A status page's: its name in the header (a link home when `url` is given) and its
    /// primary colour.
    Page {
        name: &'a str,
        url: Option<&'a str>,
        colour: Option<&'a str>,
    },
}

/// One page: its words, the language they are written in, and whose look it wears.
pub struct PeoplePage<'a> {
    pub title: &'a str,
    pub body: Markup,
    /// The `<html lang>` of `title` and `body`.
    pub lang: &'a str,
    pub brand: Brand<'a>,
}

impl<'a> PeoplePage<'a> {
    /// An English page in the product's look.
    pub fn new(title: &'a str, body: Markup) -> PeoplePage<'a> {
        PeoplePage {
            title,
            body,
            lang: "en",
            brand: Brand::Product,
        }
    }

    /// An English page of one paragraph in the product's look.
    pub fn text(title: &'a str, text: &str) -> PeoplePage<'a> {
        PeoplePage::new(title, html! { p { (text) } })
    }

    pub fn branded(mut self, brand: Brand<'a>) -> PeoplePage<'a> {
        self.brand = brand;
        self
    }

    /// The page as an answer with `status` and the people pages' headers.
    pub fn respond(self, status: StatusCode) -> Response {
        let (body, csp) = self.render();
        let mut r = (status, body).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // The token of a link is in the address: it must not leave in a Referer.
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        if let Ok(v) = HeaderValue::from_str(&csp) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        r
    }

    /// The document and the Content-Security-Policy that lets exactly its style block in.
    pub fn render(self) -> (String, String) {
        let style = style(&self.brand);
        let (site, home, product) = match self.brand {
            Brand::Product => ("Tocsin", Some("/app/"), true),
            Brand::Page { name, url, .. } => (name, url, false),
        };
        let doc = html! {
            (DOCTYPE)
            html lang=(self.lang) {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    meta name="color-scheme" content="light dark";
                    meta name="robots" content="noindex";
                    title { (self.title) " · " (site) }
                    link rel="icon" href=(ICON);
                    style { (PreEscaped(&style)) }
                }
                body {
                    header {
                        p {
                            @if let Some(href) = home {
                                a href=(href) { (site) }
                            } @else {
                                (site)
                            }
                        }
                    }
                    main {
                        h1 { (self.title) }
                        (self.body)
                    }
                    @if !product {
                        footer { "Powered by Tocsin" }
                    }
                }
            }
        };
        (doc.into_string(), csp_for(&style))
    }
}

/// The shared styles, then the page's colour with a text colour readable on it.
fn style(brand: &Brand<'_>) -> String {
    let mut css = String::from(CSS);
    if let Brand::Page {
        colour: Some(c), ..
    } = brand
    {
        if is_hex_colour(c) {
            css.push_str(&format!(":root{{--brand:{c};--on-brand:{}}}", on(c)));
        }
    }
    css
}

fn csp_for(style: &str) -> String {
    use base64::Engine as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(style.as_bytes()));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src data:; form-action 'self'; \
         base-uri 'none'; frame-ancestors 'none'"
    )
}

/// Black or white, whichever contrasts more with `#rgb`/`#rrggbb` (WCAG relative luminance:
/// above about 0.18 dark text reads better than white).
fn on(hex: &str) -> &'static str {
    let h = hex.trim_start_matches('#');
    let full: String = if h.len() == 3 {
        h.chars().flat_map(|c| [c, c]).collect()
    } else {
        h.to_string()
    };
    let channel = |i: usize| {
        let v = f64::from(u8::from_str_radix(full.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0))
            / 255.0;
        if v <= 0.040_45 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
    if l > 0.179 {
        "#111"
    } else {
        "#fff"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_on_the_brand_colour_stays_readable() {
        assert_eq!(on("#0b5cad"), "#fff");
        assert_eq!(on("#ffcc00"), "#111");
        assert_eq!(on("#fff"), "#111");
        assert_eq!(on("#000"), "#fff");
    }

    #[test]
    fn the_csp_lets_in_exactly_the_style_block() {
        let (body, csp) = PeoplePage::text("Hi <there>", "a & b")
            .branded(Brand::Page {
                name: "Acme",
                url: Some("/s/acme"),
                colour: Some("#ffcc00"),
            })
            .render();
        assert!(body.contains("Hi &lt;there&gt;") && body.contains("a &amp; b"));
        assert!(body.contains("--on-brand:#111") && body.contains("Acme"));
        let style = style(&Brand::Page {
            name: "Acme",
            url: None,
            colour: Some("#ffcc00"),
        });
        assert_eq!(csp, csp_for(&style));
        assert!(!csp.contains("script"));
    }
}
