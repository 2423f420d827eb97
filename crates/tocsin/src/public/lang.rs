//! Dates written in a status page's language (`branding.language`): one small table per
//! language (month names and where day, month and year go), for English, German, French,
//! Spanish, Portuguese, Italian and Dutch. Any other language, or a regional tag of none of
//! these, falls back to English; `pt-BR` and `de-AT` take their base language's table. The
//! time zone is the caller's (the page's IANA zone): this module only writes.
//!
//! The sign-in page of a private page ([`sign_in`]) is written in the same languages: every
//! string a visitor reads there, and the refusal when too many passwords were tried.

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
    match base(language).as_str() {
        "de" => &DE,
        "fr" => &FR,
        "es" => &ES,
        "pt" => &PT,
        "it" => &IT,
        "nl" => &NL,
        _ => &EN,
    }
}

/// Every string of a private page's sign-in page, in one language.
#[derive(Debug, PartialEq, Eq)]
pub struct SignInText {
    /// The page's title and heading.
    pub title: &'static str,
    /// Above the password form.
    pub password_intro: &'static str,
    /// After a refused password.
    pub wrong_password: &'static str,
    pub password_label: &'static str,
    pub submit: &'static str,
    /// A page for people of allowed email domains.
    pub domains_intro: &'static str,
    /// Before and after the page's address on this server's own host.
    pub domains_before_link: &'static str,
    pub domains_after_link: &'static str,
    /// The refusal when too many passwords were tried from one address.
    pub too_many_title: &'static str,
    pub too_many_text: &'static str,
}

const SIGN_IN_EN: SignInText = SignInText {
    title: "Private status page",
    password_intro: "This status page is private. Enter its password to see it.",
    wrong_password: "That password is not right. Please try again.",
    password_label: "Password",
    submit: "View the page",
    domains_intro:
        "This status page is private: only people of the organisation that runs it can see it.",
    domains_before_link:
        "Sign in to this service with your work email address, then open the page at ",
    domains_after_link: ". If you cannot, ask the organisation for access.",
    too_many_title: "Too many attempts",
    too_many_text:
        "Too many passwords were tried from your address. Please wait a minute and try again.",
};

const SIGN_IN_DE: SignInText = SignInText {
    title: "Private Statusseite",
    password_intro: "Diese Statusseite ist privat. Geben Sie ihr Passwort ein, um sie zu sehen.",
    wrong_password: "Dieses Passwort ist nicht richtig. Bitte versuchen Sie es erneut.",
    password_label: "Passwort",
    submit: "Seite anzeigen",
    domains_intro: "Diese Statusseite ist privat: Nur Personen der Organisation, die sie betreibt, können sie sehen.",
    domains_before_link: "Melden Sie sich mit Ihrer beruflichen E-Mail-Adresse bei diesem Dienst an und öffnen Sie dann die Seite unter ",
    domains_after_link: ". Falls das nicht möglich ist, bitten Sie die Organisation um Zugang.",
    too_many_title: "Zu viele Versuche",
    too_many_text: "Von Ihrer Adresse wurden zu viele Passwörter ausprobiert. Bitte warten Sie eine Minute und versuchen Sie es erneut.",
};

const SIGN_IN_FR: SignInText = SignInText {
    title: "Page de statut privée",
    password_intro: "Cette page de statut est privée. Saisissez son mot de passe pour la voir.",
    wrong_password: "Ce mot de passe n’est pas correct. Veuillez réessayer.",
    password_label: "Mot de passe",
    submit: "Voir la page",
    domains_intro: "Cette page de statut est privée : seules les personnes de l’organisation qui la gère peuvent la voir.",
    domains_before_link: "Connectez-vous à ce service avec votre adresse e-mail professionnelle, puis ouvrez la page à l’adresse ",
    domains_after_link: ". Si vous ne le pouvez pas, demandez l’accès à l’organisation.",
    too_many_title: "Trop de tentatives",
    too_many_text: "Trop de mots de passe ont été essayés depuis votre adresse. Veuillez patienter une minute et réessayer.",
};

const SIGN_IN_ES: SignInText = SignInText {
    title: "Página de estado privada",
    password_intro: "Esta página de estado es privada. Introduce su contraseña para verla.",
    wrong_password: "Esa contraseña no es correcta. Inténtalo de nuevo.",
    password_label: "Contraseña",
    submit: "Ver la página",
    domains_intro: "Esta página de estado es privada: solo las personas de la organización que la gestiona pueden verla.",
    domains_before_link: "Inicia sesión en este servicio con tu correo electrónico del trabajo y abre la página en ",
    domains_after_link: ". Si no puedes, pide acceso a la organización.",
    too_many_title: "Demasiados intentos",
    too_many_text: "Se han probado demasiadas contraseñas desde tu dirección. Espera un minuto y vuelve a intentarlo.",
};

const SIGN_IN_PT: SignInText = SignInText {
    title: "Página de status privada",
    password_intro: "Esta página de status é privada. Digite a senha para vê-la.",
    wrong_password: "Essa senha não está correta. Tente novamente.",
    password_label: "Senha",
    submit: "Ver a página",
    domains_intro: "Esta página de status é privada: somente pessoas da organização que a mantém podem vê-la.",
    domains_before_link: "Entre neste serviço com seu e-mail de trabalho e depois abra a página em ",
    domains_after_link: ". Se não conseguir, peça acesso à organização.",
    too_many_title: "Tentativas demais",
    too_many_text: "Foram tentadas senhas demais a partir do seu endereço. Aguarde um minuto e tente novamente.",
};

const SIGN_IN_IT: SignInText = SignInText {
    title: "Pagina di stato privata",
    password_intro: "Questa pagina di stato è privata. Inserisci la password per vederla.",
    wrong_password: "La password non è corretta. Riprova.",
    password_label: "Password",
    submit: "Visualizza la pagina",
    domains_intro: "Questa pagina di stato è privata: solo le persone dell’organizzazione che la gestisce possono vederla.",
    domains_before_link: "Accedi a questo servizio con il tuo indirizzo email di lavoro, poi apri la pagina all’indirizzo ",
    domains_after_link: ". Se non puoi, chiedi l’accesso all’organizzazione.",
    too_many_title: "Troppi tentativi",
    too_many_text: "Dal tuo indirizzo sono state provate troppe password. Attendi un minuto e riprova.",
};

const SIGN_IN_NL: SignInText = SignInText {
    title: "Privé-statuspagina",
    password_intro: "Deze statuspagina is privé. Voer het wachtwoord in om hem te bekijken.",
    wrong_password: "Dat wachtwoord klopt niet. Probeer het opnieuw.",
    password_label: "Wachtwoord",
    submit: "Pagina bekijken",
    domains_intro: "Deze statuspagina is privé: alleen mensen van de organisatie die hem beheert kunnen hem zien.",
    domains_before_link: "Meld je bij deze dienst aan met je zakelijke e-mailadres en open dan de pagina op ",
    domains_after_link: ". Lukt dat niet, vraag de organisatie dan om toegang.",
    too_many_title: "Te veel pogingen",
    too_many_text: "Er zijn te veel wachtwoorden geprobeerd vanaf je adres. Wacht een minuut en probeer het opnieuw.",
};

/// The base language of a tag (`pt-BR` → `pt`), lowercase.
pub(super) fn base(language: &str) -> String {
    language
        .split(['-', '_'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The sign-in page's strings in `language`, and the `<html lang>` they are in: the page's own
/// tag for a language written here, `en` for any other (the strings are then English).
pub fn sign_in(language: &str) -> (&'static SignInText, &str) {
    let text = match base(language).as_str() {
        "en" => &SIGN_IN_EN,
        "de" => &SIGN_IN_DE,
        "fr" => &SIGN_IN_FR,
        "es" => &SIGN_IN_ES,
        "pt" => &SIGN_IN_PT,
        "it" => &SIGN_IN_IT,
        "nl" => &SIGN_IN_NL,
        _ => return (&SIGN_IN_EN, "en"),
    };
    (text, language)
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
    fn the_sign_in_page_speaks_the_pages_language_or_english() {
        assert_eq!(sign_in("fr").0.submit, "Voir la page");
        assert_eq!(sign_in("pt-BR"), (&SIGN_IN_PT, "pt-BR"));
        assert_eq!(sign_in("DE").0.title, "Private Statusseite");
        assert_eq!(sign_in("ja"), (&SIGN_IN_EN, "en"));
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
