//! Who may read a private status page: the rule every public answer asks before it serves a
//! page. Anyone reads a public page; a private one admits its valid page cookie
//! ([`Gate::admits_cookie`]), or the session of a person it admits: a member of the page's
//! workspace, or on an `EMAIL_DOMAINS` page someone whose verified email is at an allowed
//! domain ([`Gate::admits_person`]). The HTTP edge only hands over what the request carries.

use super::access::Gate;
use crate::auth::error::AuthError;
use crate::cx::Cx;
use crate::domain::DomainError;

/// Whether a request carrying `page_cookie` (the value of the gate's cookie) and `session`
/// (a session token) may read the page behind `gate` at `now`. An unknown or expired session
/// is nobody; only a failing store is an error.
pub async fn admits(
    cx: &Cx,
    gate: &Gate,
    page_cookie: Option<&str>,
    session: Option<&str>,
    now: i64,
) -> Result<bool, DomainError> {
    if gate.is_public() {
        return Ok(true);
    }
    if page_cookie.is_some_and(|v| gate.admits_cookie(v, now)) {
        return Ok(true);
    }
    let Some(token) = session else {
        return Ok(false);
    };
    let caller = match crate::auth::caller::authenticate_session(cx, token, now, None, None).await {
        Ok(c) => c,
        Err(e @ (AuthError::Database(_) | AuthError::Corrupt(_))) => return Err(e.into()),
        // An unknown or expired session is nobody.
        Err(_) => return Ok(false),
    };
    let member = crate::store::members::get(cx.db().reader(), &gate.workspace_id, &caller.user_id)
        .await?
        .is_some();
    Ok(gate.admits_person(caller.verified_email(), member))
}
