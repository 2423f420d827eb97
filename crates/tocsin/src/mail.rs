//! Outgoing email over SMTP (lettre): invitations, and EMAIL notification channels.

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
}
