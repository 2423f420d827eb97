//! Email verification of password accounts. Sign-up does not prove that the person receives
//! mail at the address they typed, so nothing that depends on the address (admission to an
//! `EMAIL_DOMAINS` status page, accepting an invitation addressed to it) is granted until they
//! follow a link emailed to it. Meanwhile the account works in its own workspace.
//!
//! A link carries a random token whose SHA-256 is stored with the user and address it is for
//! (`email_verifications`), so any node can check it; it expires after 24 hours and works once.
//! Its page asks for a button press whose POST verifies: mail scanners follow GETs. A
//! signed-in person may ask for the link again a few times an hour. Users the operator makes
//! with `tocsin user create`, or verifies with `tocsin user verify`, need no link.

use crate::auth::{caps, secrets, Caller};
use crate::cx::Cx;
use crate::domain::DomainError;
use crate::mail::Mailer;
use crate::store::{self, email_verifications::VerificationRow, users::UserRow};

/// A link is valid for 24 hours.
pub const LINK_TTL_MS: i64 = 24 * 3_600_000;
/// At most this many links resent per user in any hour.
pub const RESENDS_PER_HOUR: usize = 3;
const HOUR_MS: i64 = 3_600_000;
/// Where the emailed link points (its page and the POST that verifies).
pub const VERIFY_PATH: &str = "/auth/verify-email";

/// What a verification link did or would do.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkOutcome {
    /// Valid: the page offers to verify this address.
    Pending {
        email: String,
    },
    /// The address is verified now.
    Verified {
        email: String,
    },
    /// The link was used already (or its address is verified by another link).
    Used,
    Expired,
    Invalid,
}

/// Stores a new link for `user`'s address and emails it. `Ok(false)`: the server has no SMTP
/// relay, so nothing was stored or sent.
async fn send_link(
    core: &Cx,
    mailer: Option<&Mailer>,
    user: &UserRow,
    resend: bool,
) -> Result<bool, DomainError> {
    let Some(mailer) = mailer else {
        return Ok(false);
    };
    let token = secrets::generate("");
    let now = core.clock().now_ms();
    store::email_verifications::insert(
        core.db().writer(),
        &VerificationRow {
            token_hash: secrets::hash(&token),
            user_id: user.id.clone(),
            email: user.email.clone(),
            resend: i64::from(resend),
            expires_at: now + LINK_TTL_MS,
            used_at: None,
            created_at: now,
        },
    )
    .await?;
    let mut link = core.config().public_url.clone();
    link.set_path(VERIFY_PATH);
    link.set_query(Some(&format!("token={token}")));
    let text = format!(
        "Confirm that this is your email address for Tocsin: open this link and press the \
         button (valid for 24 hours, once):\n{link}\n\nIf you did not sign up for Tocsin, \
         ignore this email: the address stays unconfirmed.\n"
    );
    mailer
        .send(&user.email, "Confirm your email address for Tocsin", text)
        .await
        .map_err(DomainError::Internal)?;
    Ok(true)
}

/// Emails the first link to a user who just signed up, in the background: sign-up answers
/// without waiting for the relay, and a relay failure leaves the resend.
pub fn send_first_link(core: &Cx, mailer: Option<&Mailer>, user: &UserRow) {
    let Some(mailer) = mailer else {
        return;
    };
    let (core, mailer, user) = (core.clone(), mailer.clone(), user.clone());
    tokio::spawn(async move {
        if let Err(e) = send_link(&core, Some(&mailer), &user, false).await {
            tracing::warn!(error = %e, user = %user.id, "could not email the verification link");
        }
    });
}

/// `POST /auth/verify-email/resend`: emails the signed-in person a new link, at most
/// [`RESENDS_PER_HOUR`] an hour.
pub async fn resend(
    core: &Cx,
    mailer: Option<&Mailer>,
    caller: &Caller,
) -> Result<(), DomainError> {
    caller.require::<caps::SignedIn>()?;
    let user = store::users::get(core.db().reader(), &caller.user_id)
        .await?
        .ok_or(DomainError::Unauthorized)?;
    if user.email_verified_at.is_some() {
        return Err(DomainError::Conflict(
            "EMAIL_ALREADY_VERIFIED",
            "Your email address is already verified: there is nothing to confirm.".into(),
        ));
    }
    if mailer.is_none() {
        return Err(DomainError::Conflict(
            "SMTP_NOT_CONFIGURED",
            "This server sends no email (it has no --smtp-url): ask its operator to verify your \
             address with `tocsin user verify`."
                .into(),
        ));
    }
    let now = core.clock().now_ms();
    let recent =
        store::email_verifications::resent_since(core.db().reader(), &user.id, now - HOUR_MS)
            .await?;
    if recent.len() >= RESENDS_PER_HOUR {
        // The oldest resend in the window leaves it first.
        let frees_at = recent.first().copied().unwrap_or(now) + HOUR_MS;
        let retry_after = u64::try_from((frees_at - now + 999) / 1000)
            .unwrap_or(1)
            .max(1);
        return Err(DomainError::RateLimited { retry_after });
    }
    send_link(core, mailer, &user, true).await?;
    Ok(())
}

/// What following `token` would do, without doing it (the link's GET page).
pub async fn check(cx: &Cx, token: &str) -> Result<LinkOutcome, DomainError> {
    let now = cx.clock().now_ms();
    let Some(row) = find(cx, token).await? else {
        return Ok(LinkOutcome::Invalid);
    };
    Ok(if row.used_at.is_some() {
        LinkOutcome::Used
    } else if row.expires_at <= now {
        LinkOutcome::Expired
    } else {
        LinkOutcome::Pending { email: row.email }
    })
}

/// Spends `token` and marks its address verified (the button's POST). A link works once,
/// before it expires, and only while its address is still its user's.
pub async fn confirm(cx: &Cx, token: &str) -> Result<LinkOutcome, DomainError> {
    let now = cx.clock().now_ms();
    let Some(row) = find(cx, token).await? else {
        return Ok(LinkOutcome::Invalid);
    };
    let mut tx = cx.db().begin().await?;
    if store::email_verifications::spend(&mut *tx, &row.token_hash, now).await? != 1 {
        drop(tx);
        return check(cx, token).await;
    }
    let changed = store::users::mark_verified(&mut *tx, &row.user_id, &row.email, now).await?;
    tx.commit().await?;
    Ok(if changed == 1 {
        LinkOutcome::Verified { email: row.email }
    } else {
        // Verified already by another link (or the address changed since): nothing to do.
        LinkOutcome::Used
    })
}

async fn find(cx: &Cx, token: &str) -> Result<Option<VerificationRow>, DomainError> {
    if token.is_empty() || token.len() > 256 {
        return Ok(None);
    }
    let hash = secrets::hash(token);
    let row = store::email_verifications::find(cx.db().reader(), &hash).await?;
    // Found by the index; compared again in constant time all the same.
    Ok(row.filter(|r| secrets::hashes_equal(&r.token_hash, &hash)))
}

/// Marks a user's address verified on the operator's word (`tocsin user verify`): `None` when
/// no user has this email, else whether it was unverified until now.
pub async fn verify_by_operator(cx: &Cx, email: &str) -> Result<Option<bool>, DomainError> {
    let email = email.trim().to_lowercase();
    let Some(user) = store::users::find_by_email(cx.db().reader(), &email).await? else {
        return Ok(None);
    };
    let now = cx.clock().now_ms();
    let changed = store::users::mark_verified(cx.db().writer(), &user.id, &user.email, now).await?;
    Ok(Some(changed == 1))
}
