//! Sign-up, sign-in, sign-out and the session read under `/auth`. These sit outside the REST
//! contract (and the OpenAPI document) but answer errors with the same envelope.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::extract::{ApiJson, Validate};
use super::workspace::{current_workspace, CurrentWorkspace};
use crate::app::Core;
use crate::auth::{password, secrets, Role, SESSION_COOKIE, SESSION_TTL_MS};
use crate::clock::rfc3339;
use crate::domain::DomainError;
use crate::http::auth::{authenticate, client_ip, session_token};
use crate::http::error::{ApiError, ApiResult, FieldError};
use crate::http::AppState;
use crate::ids::new_id;
use crate::store::{self, sessions::NewSession, users::UserRow, workspaces::WorkspaceRow};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/sign-up/email", post(sign_up))
        .route("/auth/sign-in/email", post(sign_in))
        .route("/auth/sign-out", post(sign_out))
        .route("/auth/get-session", get(get_session))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignUp {
    pub email: String,
    pub password: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// A syntactically plausible address: one `@`, something before it, a dot after it.
pub fn check_email(field: &str, email: &str, errors: &mut Vec<FieldError>) {
    let ok = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        errors.push(FieldError::new(field, "must be an email address"));
    }
}

impl Validate for SignUp {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_email("email", self.email.trim(), &mut errors);
        let n = self.password.chars().count();
        if !(password::MIN_LENGTH..=password::MAX_LENGTH).contains(&n) {
            errors.push(FieldError::new(
                "password",
                format!(
                    "must be {} to {} characters",
                    password::MIN_LENGTH,
                    password::MAX_LENGTH
                ),
            ));
        }
        if let Some(name) = &self.name {
            if name.trim().chars().count() > 100 {
                errors.push(FieldError::new("name", "must be at most 100 characters"));
            }
        }
        errors
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    pub email: String,
    pub password: String,
}

impl Validate for SignIn {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.email.trim().is_empty() {
            errors.push(FieldError::new("email", "is required"));
        }
        if self.password.is_empty() || self.password.len() > 1024 {
            errors.push(FieldError::new("password", "is required"));
        }
        errors
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: String,
    pub email: String,
    pub name: String,
    pub created_at: String,
}

#[derive(Debug, Serialize)]
pub struct SignedIn {
    pub user: UserView,
    pub workspace: CurrentWorkspace,
}

/// The caller's IP and user agent, for rate limits and session records.
pub struct ClientMeta {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

impl FromRequestParts<AppState> for ClientMeta {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(ClientMeta {
            ip: client_ip(parts, state.config().trust_forwarded_for),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(512).collect()),
        })
    }
}

fn limit(r: Result<(), u64>) -> Result<(), DomainError> {
    r.map_err(|retry_after| DomainError::RateLimited { retry_after })
}

/// Creates a user with their own workspace, as owner. Shared by sign-up and `tocsin user create`.
pub async fn create_user(
    state: &Core,
    email: &str,
    password_plain: &str,
    name: Option<&str>,
) -> ApiResult<(UserRow, WorkspaceRow)> {
    let email = email.trim().to_lowercase();
    let db = state.db();
    if store::users::find_by_email(db.reader(), &email)
        .await?
        .is_some()
    {
        return Err(DomainError::Conflict(
            "EMAIL_TAKEN",
            "an account with this email already exists".into(),
        )
        .into());
    }
    let hash = password::hash(password_plain.to_string()).await?;
    let now = state.clock().now_ms();
    let name = name
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| email.split('@').next().unwrap_or("").to_string());
    let user = UserRow {
        id: new_id(),
        email: email.clone(),
        name: name.clone(),
        password_hash: hash,
        created_at: now,
        updated_at: now,
    };
    let ws_name = format!("{name}'s workspace");
    let slug = super::workspace::free_slug(state, &ws_name).await?;
    let ws = WorkspaceRow {
        id: new_id(),
        name: ws_name,
        slug,
        owner_id: user.id.clone(),
        plan: state.config().plans.default.clone(),
        timezone: "UTC".into(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let mut tx = db.begin().await?;
    store::users::insert(&mut *tx, &user).await.map_err(|e| {
        crate::http::error::on_constraint(
            e,
            &[(
                "email",
                DomainError::Conflict(
                    "EMAIL_TAKEN",
                    "an account with this email already exists".into(),
                ),
            )],
        )
    })?;
    store::workspaces::insert(&mut *tx, &ws).await?;
    store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
    tx.commit().await?;
    Ok((user, ws))
}

async fn start_session(
    state: &AppState,
    user_id: &str,
    workspace_id: &str,
    meta: &ClientMeta,
) -> ApiResult<HeaderValue> {
    let token = secrets::generate("");
    let now = state.clock().now_ms();
    store::sessions::insert(
        state.db().writer(),
        &NewSession {
            id: &new_id(),
            token_hash: &secrets::hash(&token),
            user_id,
            workspace_id,
            expires_at: now + SESSION_TTL_MS,
            now,
            ip: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
    )
    .await?;
    cookie(state, &token, SESSION_TTL_MS / 1000)
}

fn cookie(state: &AppState, value: &str, max_age_secs: i64) -> ApiResult<HeaderValue> {
    let secure = if state.config().secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age_secs}{secure}"
    ))
    .map_err(|e| DomainError::Internal(e.into()).into())
}

fn user_view(u: &UserRow) -> UserView {
    UserView {
        id: u.id.clone(),
        email: u.email.clone(),
        name: u.name.clone(),
        created_at: rfc3339(u.created_at),
    }
}

async fn sign_up(
    State(state): State<AppState>,
    meta: ClientMeta,
    ApiJson(body): ApiJson<SignUp>,
) -> ApiResult<Response> {
    limit(
        state
            .limits()
            .sign_up_ip
            .check(meta.ip.as_deref().unwrap_or("unknown")),
    )?;
    let (user, ws) = create_user(&state, &body.email, &body.password, body.name.as_deref()).await?;
    let set_cookie = start_session(&state, &user.id, &ws.id, &meta).await?;
    let workspace = current_workspace(&state, &ws.id).await?;
    let mut res = Json(SignedIn {
        user: user_view(&user),
        workspace,
    })
    .into_response();
    res.headers_mut().insert(header::SET_COOKIE, set_cookie);
    Ok(res)
}

async fn sign_in(
    State(state): State<AppState>,
    meta: ClientMeta,
    ApiJson(body): ApiJson<SignIn>,
) -> ApiResult<Response> {
    let email = body.email.trim().to_lowercase();
    limit(
        state
            .limits()
            .sign_in_ip
            .check(meta.ip.as_deref().unwrap_or("unknown")),
    )?;
    limit(state.limits().sign_in_email.check(&email))?;
    let user = store::users::find_by_email(state.db().reader(), &email).await?;
    let ok = password::verify(
        body.password,
        user.as_ref().map(|u| u.password_hash.clone()),
    )
    .await;
    let Some(user) = user.filter(|_| ok) else {
        return Err(DomainError::InvalidCredentials.into());
    };
    let mine = store::workspaces::list_for_user(state.db().reader(), &user.id).await?;
    let ws_id = match mine.first() {
        Some(w) => w.id.clone(),
        None => {
            // Someone removed from every workspace gets a fresh one rather than a dead end.
            let name = format!("{}'s workspace", user.name);
            let now = state.clock().now_ms();
            let ws = WorkspaceRow {
                id: new_id(),
                slug: super::workspace::free_slug(&state, &name).await?,
                name,
                owner_id: user.id.clone(),
                plan: state.config().plans.default.clone(),
                timezone: "UTC".into(),
                version: 1,
                created_at: now,
                updated_at: now,
            };
            let mut tx = state.db().begin().await?;
            store::workspaces::insert(&mut *tx, &ws).await?;
            store::members::insert(&mut *tx, &ws.id, &user.id, Role::Owner.as_str(), now).await?;
            tx.commit().await?;
            ws.id
        }
    };
    let set_cookie = start_session(&state, &user.id, &ws_id, &meta).await?;
    let workspace = current_workspace(&state, &ws_id).await?;
    let mut res = Json(SignedIn {
        user: user_view(&user),
        workspace,
    })
    .into_response();
    res.headers_mut().insert(header::SET_COOKIE, set_cookie);
    Ok(res)
}

async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let (mut parts, _) = axum::http::Request::new(()).into_parts();
    parts.headers = headers;
    if let Some(token) = session_token(&parts) {
        let hash = secrets::hash(token);
        if let Some(s) = store::sessions::find(state.db().reader(), &hash).await? {
            store::sessions::delete(state.db().writer(), &s.id).await?;
        }
    }
    let mut res = Json(serde_json::json!({ "success": true })).into_response();
    res.headers_mut()
        .insert(header::SET_COOKIE, cookie(&state, "", 0)?);
    Ok(res)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionView {
    id: String,
    active_workspace_id: String,
    expires_at: String,
}

#[derive(Debug, Serialize)]
struct SessionAnswer {
    session: SessionView,
    user: UserView,
    workspace: CurrentWorkspace,
}

async fn get_session(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> ApiResult<Json<SessionAnswer>> {
    let (mut parts, _) = axum::http::Request::new(()).into_parts();
    parts.headers = headers;
    let token = session_token(&parts)
        .ok_or(DomainError::Unauthorized)?
        .to_string();
    // Reuse the one authentication path (expiry, sliding renewal, workspace fallback).
    let caller = authenticate(&parts, &state, true).await?;
    let s = store::sessions::find(state.db().reader(), &secrets::hash(&token))
        .await?
        .ok_or(DomainError::Unauthorized)?;
    let user = store::users::get(state.db().reader(), &caller.user_id)
        .await?
        .ok_or(DomainError::Unauthorized)?;
    let workspace = current_workspace(&state, &caller.workspace_id).await?;
    Ok(Json(SessionAnswer {
        session: SessionView {
            id: s.id,
            active_workspace_id: caller.workspace_id.clone(),
            expires_at: rfc3339(s.expires_at),
        },
        user: user_view(&user),
        workspace,
    }))
}
