//! Outgoing email over SMTP (lettre): invitations, EMAIL notification channels, and status
//! page subscribers' email (with the RFC 8058 one-click unsubscribe headers).

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::Smtp;

#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    pub fn new(cfg: &Smtp) -> anyhow::Result<Mailer> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(&cfg.url)?.build();
        Ok(Mailer {
            transport,
            from: cfg.from.parse()?,
        })
    }

    pub async fn send(&self, to: &str, subject: &str, body: String) -> anyhow::Result<()> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(to.parse()?)
            .subject(subject)
            .body(body)?;
        self.transport.send(message).await?;
        Ok(())
    }

    /// One message to several recipients, as HTML with a plain-text alternative.
    pub async fn send_alternative(
        &self,
        to: &[String],
        subject: &str,
        text: String,
        html: String,
    ) -> anyhow::Result<()> {
        let mut builder = Message::builder().from(self.from.clone()).subject(subject);
        for address in to {
            builder = builder.to(address.parse()?);
        }
        let message = builder.multipart(MultiPart::alternative_plain_html(text, html))?;
        self.transport.send(message).await?;
        Ok(())
    }

    /// One message to one recipient of a mailing (status page subscribers), as HTML with a
    /// plain-text alternative, with `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058:
    /// the client unsubscribes with one POST to `unsubscribe_url`).
    pub async fn send_with_unsubscribe(
        &self,
        to: &str,
        subject: &str,
        text: String,
        html: String,
        unsubscribe_url: &str,
    ) -> anyhow::Result<()> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(to.parse()?)
            .subject(subject)
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("List-Unsubscribe"),
                format!("<{unsubscribe_url}>"),
            ))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                "List-Unsubscribe=One-Click".to_string(),
            ))
            .multipart(MultiPart::alternative_plain_html(text, html))?;
        self.transport.send(message).await?;
        Ok(())
    }
}
