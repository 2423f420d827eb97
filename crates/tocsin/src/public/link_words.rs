//! The words of the pages a status page's subscribers reach (the subscribe form's "check your
//! inbox" answer, the confirm and unsubscribe links' pages) in the page's language, for the
//! languages `lang` writes dates in (en, de, fr, es, pt, it, nl); any other is English. A
//! sentence naming the page is split around the name (`*_before`, `*_after`), which the page
//! shows emphasised.

use super::lang::base;

pub struct LinkWords {
    pub inbox_title: &'static str,
    pub inbox_text: &'static str,
    pub back: &'static str,
    pub confirm_title: &'static str,
    pub confirm_before: &'static str,
    pub confirm_after: &'static str,
    pub confirm_button: &'static str,
    pub confirmed_title: &'static str,
    pub confirmed_before: &'static str,
    pub confirmed_after: &'static str,
    pub confirmed_fine: &'static str,
    pub leave_title: &'static str,
    pub leave_before: &'static str,
    pub leave_after: &'static str,
    pub leave_button: &'static str,
    pub left_title: &'static str,
    pub left_before: &'static str,
    pub left_after: &'static str,
    pub ended_title: &'static str,
    pub ended_text: &'static str,
}

/// The words in `language`, and the `<html lang>` they are in: the page's own tag for a
/// language written here, `en` for any other.
pub fn link_words(language: &str) -> (&'static LinkWords, &str) {
    let words = match base(language).as_str() {
        "en" => &EN,
        "de" => &DE,
        "fr" => &FR,
        "es" => &ES,
        "pt" => &PT,
        "it" => &IT,
        "nl" => &NL,
        _ => return (&EN, "en"),
    };
    (words, language)
}

static EN: LinkWords = LinkWords {
    inbox_title: "Check your inbox",
    inbox_text: "If this address can receive updates, an email with a link to confirm is on its way. Updates start once you follow it.",
    back: "Back to the status page",
    confirm_title: "Confirm your subscription?",
    confirm_before: "Receive email about incidents on ",
    confirm_after: "?",
    confirm_button: "Confirm the subscription",
    confirmed_title: "Subscription confirmed",
    confirmed_before: "You will receive email about incidents on ",
    confirmed_after: ".",
    confirmed_fine: "Every email has a link to unsubscribe.",
    leave_title: "Unsubscribe?",
    leave_before: "Stop receiving email about incidents on ",
    leave_after: "?",
    leave_button: "Unsubscribe",
    left_title: "Unsubscribed",
    left_before: "You will receive no more email about ",
    left_after: ".",
    ended_title: "Subscription ended",
    ended_text: "This subscription was ended since this link was sent: subscribe again on the status page to receive updates.",
};

static DE: LinkWords = LinkWords {
    inbox_title: "Bitte prüfen Sie Ihren Posteingang",
    inbox_text: "Wenn diese Adresse Neuigkeiten erhalten kann, ist eine E-Mail mit einem Bestätigungslink unterwegs. Die Neuigkeiten beginnen, sobald Sie ihm folgen.",
    back: "Zurück zur Statusseite",
    confirm_title: "Abonnement bestätigen?",
    confirm_before: "E-Mails zu Störungen auf ",
    confirm_after: " erhalten?",
    confirm_button: "Abonnement bestätigen",
    confirmed_title: "Abonnement bestätigt",
    confirmed_before: "Sie erhalten E-Mails zu Störungen auf ",
    confirmed_after: ".",
    confirmed_fine: "Jede E-Mail enthält einen Link zum Abbestellen.",
    leave_title: "Abbestellen?",
    leave_before: "Keine E-Mails mehr zu Störungen auf ",
    leave_after: " erhalten?",
    leave_button: "Abbestellen",
    left_title: "Abbestellt",
    left_before: "Sie erhalten keine E-Mails mehr zu ",
    left_after: ".",
    ended_title: "Abonnement beendet",
    ended_text: "Dieses Abonnement wurde beendet, nachdem dieser Link verschickt wurde: Abonnieren Sie auf der Statusseite erneut, um Neuigkeiten zu erhalten.",
};

static FR: LinkWords = LinkWords {
    inbox_title: "Consultez votre boîte de réception",
    inbox_text: "Si cette adresse peut recevoir des nouvelles, un e-mail avec un lien de confirmation est en route. Les nouvelles commencent dès que vous le suivez.",
    back: "Retour à la page d'état",
    confirm_title: "Confirmer l'abonnement ?",
    confirm_before: "Recevoir par e-mail les incidents de ",
    confirm_after: " ?",
    confirm_button: "Confirmer l'abonnement",
    confirmed_title: "Abonnement confirmé",
    confirmed_before: "Vous recevrez par e-mail les incidents de ",
    confirmed_after: ".",
    confirmed_fine: "Chaque e-mail contient un lien de désabonnement.",
    leave_title: "Se désabonner ?",
    leave_before: "Ne plus recevoir par e-mail les incidents de ",
    leave_after: " ?",
    leave_button: "Se désabonner",
    left_title: "Désabonnement effectué",
    left_before: "Vous ne recevrez plus d'e-mail concernant ",
    left_after: ".",
    ended_title: "Abonnement terminé",
    ended_text: "Cet abonnement a pris fin depuis l'envoi de ce lien : abonnez-vous de nouveau sur la page d'état pour recevoir les nouvelles.",
};

static ES: LinkWords = LinkWords {
    inbox_title: "Revise su bandeja de entrada",
    inbox_text: "Si esta dirección puede recibir novedades, va en camino un correo con un enlace de confirmación. Las novedades empiezan cuando lo siga.",
    back: "Volver a la página de estado",
    confirm_title: "¿Confirmar la suscripción?",
    confirm_before: "¿Recibir correos sobre incidentes en ",
    confirm_after: "?",
    confirm_button: "Confirmar la suscripción",
    confirmed_title: "Suscripción confirmada",
    confirmed_before: "Recibirá correos sobre incidentes en ",
    confirmed_after: ".",
    confirmed_fine: "Cada correo incluye un enlace para darse de baja.",
    leave_title: "¿Darse de baja?",
    leave_before: "¿Dejar de recibir correos sobre incidentes en ",
    leave_after: "?",
    leave_button: "Darse de baja",
    left_title: "Baja confirmada",
    left_before: "No recibirá más correos sobre ",
    left_after: ".",
    ended_title: "Suscripción finalizada",
    ended_text: "Esta suscripción terminó después de enviarse este enlace: suscríbase de nuevo en la página de estado para recibir novedades.",
};

static PT: LinkWords = LinkWords {
    inbox_title: "Verifique a sua caixa de entrada",
    inbox_text: "Se este endereço puder receber novidades, um e-mail com um link de confirmação está a caminho. As novidades começam quando o seguir.",
    back: "Voltar à página de status",
    confirm_title: "Confirmar a inscrição?",
    confirm_before: "Receber e-mails sobre incidentes em ",
    confirm_after: "?",
    confirm_button: "Confirmar a inscrição",
    confirmed_title: "Inscrição confirmada",
    confirmed_before: "Você receberá e-mails sobre incidentes em ",
    confirmed_after: ".",
    confirmed_fine: "Cada e-mail tem um link para cancelar a inscrição.",
    leave_title: "Cancelar a inscrição?",
    leave_before: "Deixar de receber e-mails sobre incidentes em ",
    leave_after: "?",
    leave_button: "Cancelar a inscrição",
    left_title: "Inscrição cancelada",
    left_before: "Você não receberá mais e-mails sobre ",
    left_after: ".",
    ended_title: "Inscrição encerrada",
    ended_text: "Esta inscrição foi encerrada depois do envio deste link: inscreva-se de novo na página de status para receber novidades.",
};

static IT: LinkWords = LinkWords {
    inbox_title: "Controlla la tua casella di posta",
    inbox_text: "Se questo indirizzo può ricevere aggiornamenti, è in arrivo un'e-mail con un link di conferma. Gli aggiornamenti iniziano quando lo segui.",
    back: "Torna alla pagina di stato",
    confirm_title: "Confermare l'iscrizione?",
    confirm_before: "Ricevere e-mail sugli incidenti di ",
    confirm_after: "?",
    confirm_button: "Conferma l'iscrizione",
    confirmed_title: "Iscrizione confermata",
    confirmed_before: "Riceverai e-mail sugli incidenti di ",
    confirmed_after: ".",
    confirmed_fine: "Ogni e-mail contiene un link per annullare l'iscrizione.",
    leave_title: "Annullare l'iscrizione?",
    leave_before: "Non ricevere più e-mail sugli incidenti di ",
    leave_after: "?",
    leave_button: "Annulla l'iscrizione",
    left_title: "Iscrizione annullata",
    left_before: "Non riceverai più e-mail su ",
    left_after: ".",
    ended_title: "Iscrizione terminata",
    ended_text: "Questa iscrizione è terminata dopo l'invio di questo link: iscriviti di nuovo dalla pagina di stato per ricevere aggiornamenti.",
};

static NL: LinkWords = LinkWords {
    inbox_title: "Kijk in je inbox",
    inbox_text: "Als dit adres berichten kan ontvangen, is er een e-mail met een bevestigingslink onderweg. De berichten beginnen zodra je die volgt.",
    back: "Terug naar de statuspagina",
    confirm_title: "Abonnement bevestigen?",
    confirm_before: "E-mail ontvangen over storingen op ",
    confirm_after: "?",
    confirm_button: "Abonnement bevestigen",
    confirmed_title: "Abonnement bevestigd",
    confirmed_before: "Je ontvangt e-mail over storingen op ",
    confirmed_after: ".",
    confirmed_fine: "Elke e-mail bevat een link om je af te melden.",
    leave_title: "Afmelden?",
    leave_before: "Geen e-mail meer ontvangen over storingen op ",
    leave_after: "?",
    leave_button: "Afmelden",
    left_title: "Afgemeld",
    left_before: "Je ontvangt geen e-mail meer over ",
    left_after: ".",
    ended_title: "Abonnement beëindigd",
    ended_text: "Dit abonnement is beëindigd nadat deze link werd verstuurd: abonneer je opnieuw op de statuspagina om berichten te ontvangen.",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_language_picks_its_words_and_others_fall_back_to_english() {
        assert_eq!(link_words("de").0.leave_button, "Abbestellen");
        assert_eq!(link_words("pt-BR").1, "pt-BR");
        let (w, lang) = link_words("ja");
        assert_eq!((w.inbox_title, lang), ("Check your inbox", "en"));
    }
}
