//! Outgoing email over SMTP (lettre). Used for invitations now and notifications later.

use lettre::message::Mailbox;
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
}
