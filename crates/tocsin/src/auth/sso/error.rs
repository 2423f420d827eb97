//! Why a single sign-on did not happen, in terms a person can act on (the HTTP edge turns each
//! into a page, never a session).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SsoError {
    #[error("no sign-in provider is called {0}")]
    UnknownProvider(String),
    #[error("the provider could not be reached: {0}")]
    Unreachable(String),
    #[error("the sign-in was not started in this browser, or took longer than ten minutes")]
    NoFlow,
    #[error("the sign-in's state does not match the one this browser started")]
    StateMismatch,
    #[error("this sign-in was already completed")]
    FlowUsed,
    #[error("the provider answered {error}: {description}")]
    Refused { error: String, description: String },
    #[error("the provider did not accept the sign-in code: {0}")]
    Exchange(String),
    #[error("the provider's ID token was refused: {0}")]
    IdToken(String),
    #[error("the ID token has expired or was issued in the future: {0}")]
    Clock(String),
    #[error("storage: {0}")]
    Database(#[from] sqlx::Error),
}
