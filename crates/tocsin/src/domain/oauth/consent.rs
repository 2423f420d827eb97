//! The person's answer to a pending authorization request (`POST /auth/oauth2/consent`, a
//! REST-style call with the session cookie): declining sends the client `access_denied`;
//! accepting makes a grant of the scopes chosen (never beyond the person's role) and a
//! single-use authorization code.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::with_query;
use crate::audit::{self, Entry};
use crate::auth::capability::{CapSet, Capability};
use crate::auth::oauth::{self as rules, CODE_TTL_MS};
use crate::auth::{caps, secrets, Caller};
use crate::cx::Cx;
use crate::domain::input::Validate;
use crate::domain::{DomainError, FieldError};
use crate::ids::new_id;
use crate::store::{self, oauth as st};

/// The consent page's answer, `POST /auth/oauth2/consent`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Consent {
    /// The `consent_code` the authorize endpoint put in the consent page's URL.
    pub consent_code: String,
    /// True to grant access, false to refuse it.
    pub accept: bool,
    /// The scopes granted, space-separated: those asked for, or fewer. Absent: all asked for.
    pub scope: Option<String>,
}

impl Validate for Consent {
    fn validate(&self) -> Vec<FieldError> {
        if self.consent_code.is_empty() || self.consent_code.len() > 200 {
            vec![FieldError::new(
                "consent_code",
                "must be the consent code of the page",
            )]
        } else {
            Vec::new()
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ConsentAnswer {
    /// Where the browser goes next: the client's redirect URI with `code` and `state` (or
    /// `error=access_denied`).
    #[serde(rename = "redirectURI")]
    pub redirect_uri: String,
}

/// Records the signed-in person's answer to a pending authorization request. Accepting makes
/// a grant (scopes: those asked for, narrowed by the person, never beyond their role) and a
/// single-use authorization code valid 60 s.
pub async fn consent(
    cx: &Cx,
    caller: &Caller,
    input: Consent,
) -> Result<ConsentAnswer, DomainError> {
    caller.require::<caps::SignedIn>()?;
    Validate::check(&input)?;
    let now = cx.clock().now_ms();
    let unknown = || {
        DomainError::field(
            "consent_code",
            "no pending authorization request has this code (it was answered, expired after 10 minutes, or belongs to someone else): start again from the application",
        )
    };
    let hash = secrets::hash(&input.consent_code);
    let mut tx = cx.db().begin().await?;
    let req = st::take_request(&mut *tx, &hash)
        .await?
        .ok_or_else(unknown)?;
    if !secrets::hashes_equal(&req.consent_hash, &hash)
        || req.user_id != caller.user_id
        || req.workspace_id != caller.workspace_id
        || req.expires_at <= now
    {
        // The request stays consumed only if it was the caller's own.
        if req.user_id == caller.user_id {
            tx.commit().await?;
        }
        return Err(unknown());
    }
    let issuer = rules::issuer(cx.config());
    if !input.accept {
        tx.commit().await?;
        return Ok(declined(&req, &issuer));
    }
    let granted = granted_scopes(input.scope.as_deref(), &req, caller)?;
    let code = record_grant(&mut tx, caller, &req, &granted, now).await?;
    tx.commit().await?;
    Ok(accepted(&req, &code, &issuer))
}

/// The answer to a declined request: the client hears `access_denied`.
fn declined(req: &st::RequestRow, issuer: &str) -> ConsentAnswer {
    ConsentAnswer {
        redirect_uri: with_query(
            &req.redirect_uri,
            &[
                ("error", Some("access_denied")),
                (
                    "error_description",
                    Some("The person declined the request."),
                ),
                ("state", req.state.as_deref()),
                ("iss", Some(issuer)),
            ],
        ),
    }
}

/// The scopes granted: those asked for, narrowed by the person (`scope`), within their role.
fn granted_scopes(
    scope: Option<&str>,
    req: &st::RequestRow,
    caller: &Caller,
) -> Result<Vec<Capability>, DomainError> {
    let asked: Vec<Capability> = store::split_list(&req.scopes)
        .iter()
        .filter_map(|s| Capability::parse(s))
        .collect();
    let chosen = match scope {
        Some(s) => {
            let narrowed = rules::parse_scopes(s).map_err(|bad| {
                DomainError::field("scope", format!("{bad} is not a scope this server grants"))
            })?;
            if let Some(extra) = narrowed.iter().find(|c| !asked.contains(c)) {
                return Err(DomainError::field(
                    "scope",
                    format!(
                        "{} was not asked for: you may only narrow the scopes",
                        extra.as_str()
                    ),
                ));
            }
            narrowed
        }
        None => asked,
    };
    // The role's ceiling: a grant never carries what its person does not hold.
    let granted = rules::ordered(CapSet::of(&chosen).intersect(caller.caps));
    if granted.is_empty() {
        return Err(DomainError::field(
            "scope",
            "grants nothing: keep at least one scope your role holds",
        ));
    }
    Ok(granted)
}

/// Stores the grant, its authorization code and the audit entry in `tx`; the code.
async fn record_grant(
    tx: &mut sqlx::AnyConnection,
    caller: &Caller,
    req: &st::RequestRow,
    granted: &[Capability],
    now: i64,
) -> Result<String, sqlx::Error> {
    let grant = st::GrantRow {
        id: new_id(),
        workspace_id: req.workspace_id.clone(),
        user_id: req.user_id.clone(),
        client_id: req.client_id.clone(),
        scopes: store::join_list(granted.iter().map(|c| c.as_str())),
        resource: req.resource.clone(),
        status: "ACTIVE".into(),
        last_used_at: None,
        created_at: now,
        updated_at: now,
    };
    let code = secrets::generate("");
    st::insert_grant(&mut *tx, &grant).await?;
    st::insert_code(
        &mut *tx,
        &st::CodeRow {
            code_hash: secrets::hash(&code),
            grant_id: grant.id.clone(),
            redirect_uri: req.redirect_uri.clone(),
            code_challenge: req.code_challenge.clone(),
            expires_at: now + CODE_TTL_MS,
            used_at: None,
        },
    )
    .await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "mcp_grant.create",
            resource_type: "mcp_grant",
            resource_id: &grant.id,
            metadata: json!({"clientId": grant.client_id, "scopes": rules::scope_string(granted)}),
        },
        now,
    )
    .await?;
    Ok(code)
}

/// The answer to an accepted request: the client gets the code.
fn accepted(req: &st::RequestRow, code: &str, issuer: &str) -> ConsentAnswer {
    ConsentAnswer {
        redirect_uri: with_query(
            &req.redirect_uri,
            &[
                ("code", Some(code)),
                ("state", req.state.as_deref()),
                ("iss", Some(issuer)),
            ],
        ),
    }
}
