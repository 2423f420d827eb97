//! Dates written in a status page's language (`branding.language`): one small table per
//! language (month names and where day, month and year go), for English, German, French,
//! Spanish, Portuguese, Italian and Dutch. Any other language, or a regional tag of none of
//! these, falls back to English; `pt-BR` and `de-AT` take their base language's table. The
//! time zone is the caller's (the page's IANA zone): this module only writes.

use chrono::{DateTime, Datelike, NaiveDate};
use chrono_tz::Tz;

/// How one language writes a date.
struct Table {
    months: [&'static str; 12],
    /// `{d}` the day, `{m}` the month's name, `{y}` the year.
    date: &'static str,
    /// The same without the year (the first day of a range).
    day_month: &'static str,
    /// Between a date and its time.
    at: &'static str,
    /// The first of the month written as such (French `1er`).
    first: Option<&'static str>,
}

const EN: Table = Table {
    months: [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ],
    date: "{m} {d}, {y}",
    day_month: "{m} {d}",
    at: " ",
    first: None,
};

const DE: Table = Table {
    months: [
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ],
    date: "{d}. {m} {y}",
    day_month: "{d}. {m}",
    at: ", ",
    first: None,
};

const FR: Table = Table {
    months: [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ],
    date: "{d} {m} {y}",
    day_month: "{d} {m}",
    at: " à ",
    first: Some("1er"),
};

const ES: Table = Table {
    months: [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ],
    date: "{d} de {m} de {y}",
    day_month: "{d} de {m}",
    at: ", ",
    first: None,
};

const PT: Table = Table {
    months: [
        "janeiro",
        "fevereiro",
        "março",
        "abril",
        "maio",
        "junho",
        "julho",
        "agosto",
        "setembro",
        "outubro",
        "novembro",
        "dezembro",
    ],
    date: "{d} de {m} de {y}",
    day_month: "{d} de {m}",
    at: ", ",
    first: None,
};

const IT: Table = Table {
    months: [
        "gennaio",
        "febbraio",
        "marzo",
        "aprile",
        "maggio",
        "giugno",
        "luglio",
        "agosto",
        "settembre",
        "ottobre",
        "novembre",
        "dicembre",
    ],
    date: "{d} {m} {y}",
    day_month: "{d} {m}",
    at: ", ",
    first: None,
};

const NL: Table = Table {
    months: [
        "januari",
        "februari",
        "maart",
        "april",
        "mei",
        "juni",
        "juli",
        "augustus",
        "september",
        "oktober",
        "november",
        "december",
    ],
    date: "{d} {m} {y}",
    day_month: "{d} {m}",
    at: ", ",
    first: None,
};

fn table(language: &str) -> &'static Table {
    let base = language
        .split(['-', '_'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    match base.as_str() {
        "de" => &DE,
        "fr" => &FR,
        "es" => &ES,
        "pt" => &PT,
        "it" => &IT,
        "nl" => &NL,
        _ => &EN,
    }
}

fn fill(t: &Table, pattern: &str, d: NaiveDate) -> String {
    let day = match t.first {
        Some(first) if d.day() == 1 => first.to_string(),
        _ => d.day().to_string(),
    };
    let month = t.months[d.month0() as usize];
    pattern
        .replace("{d}", &day)
        .replace("{m}", month)
        .replace("{y}", &d.year().to_string())
}

/// A calendar date: `Nov 25, 2026`, `25. November 2026`, `25 de noviembre de 2026`.
pub fn date(language: &str, d: NaiveDate) -> String {
    let t = table(language);
    fill(t, t.date, d)
}

/// A date without its year (the start of a range that [`date`] ends).
pub fn day_month(language: &str, d: NaiveDate) -> String {
    let t = table(language);
    fill(t, t.day_month, d)
}

/// A moment in a zone, to the minute with the zone's abbreviation:
/// `Nov 25, 2026 14:05 CET`, `25. November 2026, 14:05 CET`.
pub fn date_time(language: &str, at: DateTime<Tz>) -> String {
    let t = table(language);
    format!(
        "{}{}{}",
        fill(t, t.date, at.date_naive()),
        t.at,
        at.format("%H:%M %Z")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap_or_default()
    }

    #[test]
    fn dates_in_each_language() {
        let d = day(2026, 3, 5);
        for (lang, want) in [
            ("en", "Mar 5, 2026"),
            ("de", "5. März 2026"),
            ("fr", "5 mars 2026"),
            ("es", "5 de marzo de 2026"),
            ("pt-BR", "5 de março de 2026"),
            ("it", "5 marzo 2026"),
            ("nl", "5 maart 2026"),
            ("ja", "Mar 5, 2026"),
        ] {
            assert_eq!(date(lang, d), want, "{lang}");
        }
        assert_eq!(date("fr", day(2026, 8, 1)), "1er août 2026");
        assert_eq!(day_month("de-AT", d), "5. März");
        assert_eq!(day_month("en", d), "Mar 5");
    }

    #[test]
    fn moments_are_written_in_the_pages_zone() {
        let tz: Tz = "Europe/Berlin".parse().unwrap_or(chrono_tz::UTC);
        // 23:30 UTC on Dec 31 is already the new year in Berlin.
        let at =
            tz.from_utc_datetime(&day(2025, 12, 31).and_hms_opt(23, 30, 0).unwrap_or_default());
        assert_eq!(date_time("de", at), "1. Januar 2026, 00:30 CET");
        assert_eq!(date_time("en", at), "Jan 1, 2026 00:30 CET");
        assert_eq!(date_time("fr", at), "1er janvier 2026 à 00:30 CET");
    }
}
