//! What text shown to people may hold: [`printable`] decides, for every name-like field of
//! every surface (the API's names and titles, channel settings, probe names in the
//! configuration), which characters are refused.

/// Whether `c` may appear in a name shown to people (monitor, component, page, channel, key,
/// workspace, user ...). Refused: control characters; the bidirectional controls, with which a
/// name can reorder the text around it on a public page (U+061C, U+200E/U+200F,
/// U+202A-U+202E, U+2066-U+2069); line and paragraph separators; private-use code points;
/// unassigned code points, which include the noncharacters (U+FDD0-U+FDEF and every
/// U+xFFFE/U+xFFFF, U+10FFFF among them). Every other letter, mark, number, symbol, space and
/// emoji (with its joiners and variation selectors) is printable.
pub fn printable(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    let bidi_control = matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    );
    let noncharacter = matches!(c, '\u{FDD0}'..='\u{FDEF}') || (c as u32) & 0xFFFE == 0xFFFE;
    !bidi_control
        && !noncharacter
        && !matches!(
            get_general_category(c),
            G::Control
                | G::LineSeparator
                | G::ParagraphSeparator
                | G::PrivateUse
                | G::Surrogate
                | G::Unassigned
        )
}

/// What a name with a character [`printable`] refuses is told.
pub const NOT_PRINTABLE: &str = "control, bidirectional-override, private-use, unassigned and noncharacter code points are not allowed";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_refuse_what_can_spoof_or_vanish() {
        for bad in [
            "a\u{202E}b",
            "a\u{2066}b",
            "a\u{200F}b",
            "a\u{061C}b",
            "a\u{FFFE}b",
            "a\u{FFFF}b",
            "a\u{FDD0}b",
            "a\u{10FFFF}b",
            "a\u{1FFFE}b",
            "a\u{E000}b",
            "a\u{F0000}b",
            "a\u{2028}b",
            "a\u{0007}b",
            "a\u{0085}b",
        ] {
            assert!(!bad.chars().all(printable), "{bad:?}");
        }
        for good in [
            "API",
            "Zürich — 東京",
            "שלום",
            "مرحبا",
            "👩\u{200D}💻 ops",
            "café ✔\u{FE0F}",
        ] {
            assert!(good.chars().all(printable), "{good:?}");
        }
    }
}
