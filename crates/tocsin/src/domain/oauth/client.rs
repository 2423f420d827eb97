//! Client authentication at the token and revocation endpoints: a public client by its id
//! alone, a confidential one by its secret (HTTP Basic or the form), compared in constant time.

use super::OAuthError;
use crate::auth::secrets;
use crate::cx::Cx;
use crate::store::oauth as st;

/// The client's credentials as the token and revocation endpoints received them.
#[derive(Debug, Default)]
pub struct ClientAuth {
    /// From HTTP Basic (`client_secret_basic`), if sent.
    pub basic: Option<(String, String)>,
    /// `client_id` and `client_secret` of the form body.
    pub form_id: Option<String>,
    pub form_secret: Option<String>,
}

/// Identifies and authenticates the client: a public client by its id alone, a confidential
/// one by its secret, compared in constant time.
pub(super) async fn client_of(cx: &Cx, auth: &ClientAuth) -> Result<st::ClientRow, OAuthError> {
    let (id, secret) = match &auth.basic {
        Some((id, secret)) => (id.clone(), Some(secret.clone())),
        None => (
            auth.form_id.clone().ok_or_else(|| {
                OAuthError::new(
                    401,
                    "invalid_client",
                    "The request names no client (client_id).",
                )
            })?,
            auth.form_secret.clone(),
        ),
    };
    let client = st::find_client(cx.db().reader(), &id)
        .await?
        .ok_or_else(OAuthError::invalid_client)?;
    match (&client.secret_hash, secret) {
        (None, _) => Ok(client),
        (Some(stored), Some(given)) if secrets::hashes_equal(stored, &secrets::hash(&given)) => {
            Ok(client)
        }
        _ => Err(OAuthError::invalid_client()),
    }
}
