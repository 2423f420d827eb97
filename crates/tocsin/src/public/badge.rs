//! SVG badges in the shields.io style: a grey label and a coloured value (a page's or a
//! component's status, or an uptime percentage over 24 hours, 7, 30 or 90 days), in the
//! `flat`, `flat-square` or `for-the-badge` style. Text widths come from a table of Verdana
//! advance widths at 11 px (what shields.io measures with), so badges line up with theirs
//! without a font library. Every text is XML-escaped.

use super::snapshot::{PageStatus, Snapshot};

/// How a badge is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Style {
    Flat,
    FlatSquare,
    ForTheBadge,
}

impl Style {
    pub fn parse(s: Option<&str>) -> Option<Style> {
        match s.unwrap_or("flat") {
            "flat" => Some(Style::Flat),
            "flat-square" => Some(Style::FlatSquare),
            "for-the-badge" => Some(Style::ForTheBadge),
            _ => None,
        }
    }
}

/// What a badge shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Status,
    /// Uptime over the window: 0 = 24h, 1 = 7d, 2 = 30d, 3 = 90d.
    Uptime(usize),
}

impl Metric {
    pub fn parse(uptime: Option<&str>) -> Option<Metric> {
        match uptime {
            None => Some(Metric::Status),
            Some("24h") => Some(Metric::Uptime(0)),
            Some("7d") => Some(Metric::Uptime(1)),
            Some("30d") => Some(Metric::Uptime(2)),
            Some("90d") => Some(Metric::Uptime(3)),
            Some(_) => None,
        }
    }
}

fn colour(status: PageStatus) -> &'static str {
    match status {
        PageStatus::Operational => "#2e8540",
        PageStatus::Maintenance => "#0969da",
        PageStatus::Degraded => "#b08800",
        PageStatus::PartialOutage => "#d4570b",
        PageStatus::MajorOutage => "#cf222e",
    }
}

fn uptime_colour(u: f64) -> &'static str {
    match u {
        u if u >= 99.9 => "#2e8540",
        u if u >= 99.0 => "#4c9a2a",
        u if u >= 95.0 => "#b08800",
        _ => "#cf222e",
    }
}

/// Why a badge cannot be drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadgeError {
    UnknownComponent,
}

/// The label, value and colour of a badge.
pub fn parts(
    s: &Snapshot,
    component: Option<&str>,
    metric: Metric,
) -> Result<(String, String, &'static str), BadgeError> {
    let (label, status, uptime) = match component {
        Some(id) => {
            let c = s
                .summary
                .components
                .iter()
                .find(|c| c.id == id)
                .ok_or(BadgeError::UnknownComponent)?;
            (c.name.clone(), c.status, Some(&c.uptime))
        }
        None => (s.summary.page.name.clone(), s.summary.status, None),
    };
    Ok(match metric {
        Metric::Status => (label, status.label().to_lowercase(), colour(status)),
        Metric::Uptime(w) => {
            let value = match uptime {
                Some(u) => [u.h24, u.d7, u.d30, u.d90][w],
                // The page's uptime: the mean of its components that have figures.
                None => {
                    let figures: Vec<f64> = s
                        .summary
                        .components
                        .iter()
                        .filter_map(|c| [c.uptime.h24, c.uptime.d7, c.uptime.d30, c.uptime.d90][w])
                        .collect();
                    (!figures.is_empty())
                        .then(|| figures.iter().sum::<f64>() / figures.len() as f64)
                }
            };
            let window = ["24h", "7d", "30d", "90d"][w];
            match value {
                Some(u) => (
                    format!("uptime {window}"),
                    format!("{:.2}%", (u * 100.0).floor() / 100.0),
                    uptime_colour(u),
                ),
                None => (format!("uptime {window}"), "no data".into(), "#9f9f9f"),
            }
        }
    })
}

/// Verdana 11 px advance widths of printable ASCII (from 0x20), in tenths of a pixel.
const WIDTHS: [u16; 95] = [
    39, 43, 51, 92, 70, 121, 80, 30, 50, 50, 70, 92, 40, 50, 40, 50, 70, 70, 70, 70, 70, 70, 70,
    70, 70, 70, 50, 50, 92, 92, 92, 60, 110, 75, 76, 77, 85, 70, 63, 85, 84, 47, 50, 76, 61, 94,
    83, 87, 66, 87, 77, 75, 68, 81, 75, 109, 75, 68, 75, 50, 50, 50, 92, 70, 70, 66, 69, 57, 69,
    66, 39, 69, 70, 30, 38, 65, 30, 107, 70, 67, 69, 69, 47, 57, 43, 70, 65, 90, 65, 65, 58, 70,
    50, 70, 92,
];

/// The width of a text in pixels.
fn text_width(text: &str, scale: f64) -> f64 {
    let tenths: u32 = text
        .chars()
        .map(|c| {
            let i = c as u32;
            if (0x20..0x7f).contains(&i) {
                u32::from(WIDTHS[(i - 0x20) as usize])
            } else {
                80
            }
        })
        .sum();
    f64::from(tenths) / 10.0 * scale
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The badges drawn from one rendered page, by what was asked (component, metric, style):
/// a README badge is fetched over and over while its page does not change, and the page's
/// render is replaced (with a fresh memo) when it does. Bounded: a page has at most a few
/// hundred components, times five metrics and three styles.
#[derive(Debug, Default)]
pub struct Memo(std::sync::Mutex<std::collections::HashMap<MemoKey, bytes::Bytes>>);

type MemoKey = (Option<String>, Metric, Style);

/// Entries kept at most; past it the memo starts over (only unknown-to-us keys can grow it).
const MEMO_MAX: usize = 4_096;

impl Memo {
    /// The badge for this request, drawn once per rendered page.
    pub fn get(
        &self,
        s: &Snapshot,
        component: Option<&str>,
        metric: Metric,
        style: Style,
    ) -> Result<bytes::Bytes, BadgeError> {
        let key = (component.map(str::to_string), metric, style);
        if let Some(hit) = self.lock().get(&key) {
            return Ok(hit.clone());
        }
        let (label, value, colour) = parts(s, component, metric)?;
        let drawn = bytes::Bytes::from(svg(&label, &value, colour, style));
        let mut map = self.lock();
        if map.len() >= MEMO_MAX {
            map.clear();
        }
        map.insert(key, drawn.clone());
        Ok(drawn)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<MemoKey, bytes::Bytes>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The badge as an SVG document.
pub fn svg(label: &str, value: &str, colour: &str, style: Style) -> String {
    let (label, value) = match style {
        Style::ForTheBadge => (label.to_uppercase(), value.to_uppercase()),
        _ => (label.to_string(), value.to_string()),
    };
    let (height, pad, scale) = match style {
        Style::ForTheBadge => (28.0, 12.0, 1.1),
        _ => (20.0, 6.0, 1.0),
    };
    let lw = (text_width(&label, scale) + 2.0 * pad).round();
    let vw = (text_width(&value, scale) + 2.0 * pad).round();
    let w = lw + vw;
    let radius = if style == Style::Flat { 3 } else { 0 };
    let (label, value) = (escape(&label), escape(&value));
    let text_y = if style == Style::ForTheBadge {
        175
    } else {
        140
    };
    let gradient = if style == Style::Flat {
        "<linearGradient id=\"s\" x2=\"0\" y2=\"100%\"><stop offset=\"0\" stop-color=\"#bbb\" stop-opacity=\".1\"/><stop offset=\"1\" stop-opacity=\".1\"/></linearGradient>"
    } else {
        ""
    };
    let shade = if style == Style::Flat {
        format!("<rect width=\"{w}\" height=\"{height}\" fill=\"url(#s)\"/>")
    } else {
        String::new()
    };
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" role=\"img\" aria-label=\"{label}: {value}\">\
<title>{label}: {value}</title>{gradient}\
<clipPath id=\"r\"><rect width=\"{w}\" height=\"{height}\" rx=\"{radius}\" fill=\"#fff\"/></clipPath>\
<g clip-path=\"url(#r)\"><rect width=\"{lw}\" height=\"{height}\" fill=\"#555\"/><rect x=\"{lw}\" width=\"{vw}\" height=\"{height}\" fill=\"{colour}\"/>{shade}</g>\
<g fill=\"#fff\" text-anchor=\"middle\" font-family=\"Verdana,Geneva,DejaVu Sans,sans-serif\" font-size=\"110\" transform=\"scale(.1)\">\
<text x=\"{lx}\" y=\"{text_y}\">{label}</text><text x=\"{vx}\" y=\"{text_y}\">{value}</text></g></svg>",
        lx = lw * 5.0,
        vx = (lw + vw / 2.0) * 10.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_widths_grow_with_text() {
        let s = svg("<a&b>", "up \"x\"", "#2e8540", Style::Flat);
        assert!(s.contains("&lt;a&amp;b&gt;") && s.contains("&quot;x&quot;"));
        assert!(!s.contains("<a&b>"));
        assert!(text_width("operational", 1.0) > text_width("up", 1.0));
        let square = svg("a", "b", "#fff", Style::FlatSquare);
        assert!(square.contains("rx=\"0\"") && !square.contains("linearGradient"));
        assert!(svg("status", "ok", "#fff", Style::ForTheBadge).contains("STATUS"));
    }

    #[test]
    fn styles_and_metrics_parse() {
        assert_eq!(Style::parse(None), Some(Style::Flat));
        assert_eq!(Style::parse(Some("plastic")), None);
        assert_eq!(Metric::parse(Some("30d")), Some(Metric::Uptime(2)));
        assert_eq!(Metric::parse(Some("1y")), None);
        assert_eq!(Metric::parse(None), Some(Metric::Status));
    }
}
