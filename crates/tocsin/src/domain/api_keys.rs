//! Personal access tokens: mint, list, read, update, rotate, revoke. Managed by the signed-in
//! person (a token cannot mint tokens). The secret is shown once, in `IssuedApiKey`; only its
//! hash is stored. A key never carries more than its creator holds, and never a session-only
//! capability. Writes that change what a key may do forget it from the key cache at once.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::input::{check_name, double_option, Validate};
use super::plans::{ensure_room, Quota};
use super::{check_write, DomainError, FieldError, Resource};
use crate::audit::{self, Entry};
use crate::auth::capability::TOKEN_CAPABILITIES;
use crate::auth::{caps, secrets, Caller, Capability, Role, Via};
use crate::clock::rfc3339;
use crate::cluster::feed::Notice;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::corrupt::{self, stored_text, CorruptRow};
use crate::store::{self, api_keys::ApiKeyRow};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Surface {
    Rest,
    Mcp,
}

impl Surface {
    pub const ALL: [Surface; 2] = [Surface::Rest, Surface::Mcp];

    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Rest => "rest",
            Surface::Mcp => "mcp",
        }
    }
}

stored_text!(Surface, "surface");

/// The seventeen capabilities a token may carry. Schema only: values are parsed as
/// [`Capability`], and the four session-only capabilities are refused with a field error.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub enum TokenCapability {
    #[schemars(rename = "monitors:read")]
    MonitorsRead,
    #[schemars(rename = "monitors:write")]
    MonitorsWrite,
    #[schemars(rename = "monitors:delete")]
    MonitorsDelete,
    #[schemars(rename = "status_pages:read")]
    StatusPagesRead,
    #[schemars(rename = "status_pages:write")]
    StatusPagesWrite,
    #[schemars(rename = "status_pages:delete")]
    StatusPagesDelete,
    #[schemars(rename = "incidents:read")]
    IncidentsRead,
    #[schemars(rename = "incidents:write")]
    IncidentsWrite,
    #[schemars(rename = "incidents:delete")]
    IncidentsDelete,
    #[schemars(rename = "postmortems:read")]
    PostmortemsRead,
    #[schemars(rename = "postmortems:write")]
    PostmortemsWrite,
    #[schemars(rename = "postmortems:delete")]
    PostmortemsDelete,
    #[schemars(rename = "notifications:read")]
    NotificationsRead,
    #[schemars(rename = "notifications:write")]
    NotificationsWrite,
    #[schemars(rename = "notifications:delete")]
    NotificationsDelete,
    #[schemars(rename = "maintenance:write")]
    MaintenanceWrite,
    #[schemars(rename = "identity:read")]
    IdentityRead,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum ApiKeyStatus {
    Active,
    Revoked,
}

impl ApiKeyStatus {
    pub const ALL: [ApiKeyStatus; 2] = [ApiKeyStatus::Active, ApiKeyStatus::Revoked];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiKeyStatus::Active => "ACTIVE",
            ApiKeyStatus::Revoked => "REVOKED",
        }
    }
}

stored_text!(ApiKeyStatus, "API key status");

/// A personal access token record.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub token_hint: String,
    pub surfaces: Vec<Surface>,
    #[schemars(with = "Vec<TokenCapability>")]
    pub permissions: Vec<Capability>,
    pub status: ApiKeyStatus,
    #[schemars(with = "Option<crate::schema::Timestamp>")]
    pub expires_at: Option<String>,
    #[schemars(with = "Option<crate::schema::Timestamp>")]
    pub last_used_at: Option<String>,
    pub created_by: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub created_at: String,
    #[schemars(with = "crate::schema::Timestamp")]
    pub updated_at: String,
}

/// A key as issued: every `ApiKey` field plus the secret, shown this once.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::exact_object)]
pub struct IssuedApiKey {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The full secret (`svc_...`). It cannot be read again.
    pub token: String,
}

/// The API shape of a stored key; a surface, capability or status this build cannot read is
/// a (reported) corrupt row, never dropped from the list or read as revoked.
pub fn view(k: &ApiKeyRow) -> Result<ApiKey, CorruptRow> {
    const T: &str = "api_keys";
    Ok(ApiKey {
        id: k.id.clone(),
        name: k.name.clone(),
        token_hint: k.token_hint.clone(),
        surfaces: store::split_list(&k.surfaces)
            .iter()
            .map(|s| corrupt::parse(T, &k.id, "surfaces", s))
            .collect::<Result<_, _>>()?,
        permissions: store::split_list(&k.permissions)
            .iter()
            .map(|p| corrupt::parse(T, &k.id, "permissions", p))
            .collect::<Result<_, _>>()?,
        status: corrupt::parse(T, &k.id, "status", &k.status)?,
        expires_at: k.expires_at.map(rfc3339),
        last_used_at: k.last_used_at.map(rfc3339),
        created_by: k.created_by.clone(),
        created_at: rfc3339(k.created_at),
        updated_at: rfc3339(k.updated_at),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateApiKey {
    /// 1 to 100 characters.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
    /// Capabilities, from the seventeen token capabilities; at most what the creator holds.
    #[schemars(length(min = 1))]
    #[schemars(with = "Vec<TokenCapability>")]
    pub permissions: Vec<Capability>,
    /// Where the key may be used; `["rest"]` by default.
    pub surfaces: Option<Vec<Surface>>,
    /// When the key stops working; must be in the future. Null or absent: never.
    pub expires_at: Option<DateTime<Utc>>,
}

fn check_permissions(perms: &[Capability], errors: &mut Vec<FieldError>) {
    if perms.is_empty() {
        errors.push(FieldError::new(
            "permissions",
            "must name at least one capability",
        ));
    }
    for (i, p) in perms.iter().enumerate() {
        if !TOKEN_CAPABILITIES.contains(p) {
            errors.push(FieldError::new(
                format!("permissions.{i}"),
                format!(
                    "{} is session-only and cannot be put on a token",
                    p.as_str()
                ),
            ));
        }
    }
}

fn check_surfaces(s: &[Surface], errors: &mut Vec<FieldError>) {
    if s.is_empty() {
        errors.push(FieldError::new(
            "surfaces",
            "must name at least one surface",
        ));
    }
}

impl Validate for CreateApiKey {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        check_name("name", &self.name, 100, &mut errors);
        check_permissions(&self.permissions, &mut errors);
        if let Some(s) = &self.surfaces {
            check_surfaces(s, &mut errors);
        }
        errors
    }
}

/// Refuses capabilities the creator does not hold themselves.
fn within_creator(perms: &[Capability], caller: &Caller) -> Result<(), DomainError> {
    let errors: Vec<FieldError> = perms
        .iter()
        .enumerate()
        .filter(|(_, p)| !caller.caps.contains(**p))
        .map(|(i, p)| {
            FieldError::new(
                format!("permissions.{i}"),
                format!("you do not hold {} yourself", p.as_str()),
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.into())
    }
}

fn future(field: &str, at: Option<DateTime<Utc>>, now: i64) -> Result<Option<i64>, DomainError> {
    match at {
        Some(t) if t.timestamp_millis() <= now => {
            Err(DomainError::field(field, "must be in the future"))
        }
        Some(t) => Ok(Some(t.timestamp_millis())),
        None => Ok(None),
    }
}

fn dedup<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(i) {
            out.push(*i);
        }
    }
    out
}

/// Mints a key for the signed-in caller (the API's `createApiKey`, `tocsin token create`).
pub async fn create(
    cx: &Cx,
    caller: &Caller,
    input: CreateApiKey,
) -> Result<IssuedApiKey, DomainError> {
    caller.require::<caps::SignedIn>()?;
    input.check()?;
    within_creator(&input.permissions, caller)?;
    let expires_at = future("expiresAt", input.expires_at, cx.clock().now_ms())?;
    let surfaces = input.surfaces.unwrap_or_else(|| vec![Surface::Rest]);
    let db = cx.db();
    let current = store::api_keys::count_active(db.reader(), &caller.workspace_id).await?;
    ensure_room(cx, &caller.workspace_id, Quota::ApiKeys, current).await?;
    let token = secrets::generate(secrets::API_KEY_PREFIX);
    let now = cx.clock().now_ms();
    let perms = dedup(&input.permissions);
    let surfaces = dedup(&surfaces);
    let row = ApiKeyRow {
        id: new_id(),
        workspace_id: caller.workspace_id.clone(),
        name: input.name.trim().to_string(),
        token_hint: secrets::hint(&token),
        surfaces: store::join_list(surfaces.iter().map(|s| s.as_str())),
        permissions: store::join_list(perms.iter().map(|p| p.as_str())),
        status: "ACTIVE".into(),
        expires_at,
        last_used_at: None,
        created_by: caller.user_id.clone(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    let mut tx = db.begin().await?;
    store::api_keys::insert(&mut *tx, &row, &secrets::hash(&token)).await?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "api_key.create",
            resource_type: "api_key",
            resource_id: &row.id,
            metadata: json!({"name": row.name, "permissions": perms.iter().map(|p| p.as_str()).collect::<Vec<_>>(), "surfaces": surfaces.iter().map(|s| s.as_str()).collect::<Vec<_>>()}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(IssuedApiKey {
        key: view(&row)?,
        token,
    })
}

/// Every key of the workspace (the contract's list is a plain array, not a page).
pub async fn list(cx: &Cx, caller: &Caller) -> Result<Vec<ApiKey>, DomainError> {
    caller.require::<caps::SignedIn>()?;
    let mut out = Vec::new();
    let mut after = String::new();
    // Read in slices so memory stays flat however many keys there are.
    loop {
        let rows =
            store::api_keys::list(cx.db().reader(), &caller.workspace_id, &after, 500).await?;
        let done = rows.len() < 500;
        if let Some(last) = rows.last() {
            after = last.id.clone();
        }
        // A corrupt row is reported and left out of the list (see `store::corrupt`).
        out.extend(corrupt::readable(rows.iter().map(view)));
        if done {
            break;
        }
    }
    Ok(out)
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct KeyPath {
    pub key_id: String,
}

async fn load(cx: &Cx, caller: &Caller, id: &str) -> Result<ApiKeyRow, DomainError> {
    store::api_keys::get(cx.db().reader(), &caller.workspace_id, id)
        .await?
        .ok_or(DomainError::NotFound(Resource::ApiKey))
}

/// One key and its version.
pub async fn get(cx: &Cx, caller: &Caller, id: &str) -> Result<(ApiKey, i64), DomainError> {
    caller.require::<caps::SignedIn>()?;
    let k = load(cx, caller, id).await?;
    Ok((view(&k)?, k.version))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateApiKey {
    /// 1 to 100 characters. Absent: unchanged.
    #[schemars(length(min = 1, max = 100))]
    pub name: Option<String>,
    /// Replaces the capabilities, with the same rules as on creation. Absent: unchanged.
    #[schemars(length(min = 1))]
    #[schemars(with = "Option<Vec<TokenCapability>>")]
    pub permissions: Option<Vec<Capability>>,
    /// A new expiry in the future, or null to never expire. Absent: unchanged.
    #[serde(default, deserialize_with = "double_option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub expires_at: Option<Option<DateTime<Utc>>>,
}

impl Validate for UpdateApiKey {
    fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(n) = &self.name {
            check_name("name", n, 100, &mut errors);
        }
        if let Some(p) = &self.permissions {
            check_permissions(p, &mut errors);
        }
        errors
    }
}

/// Changes name, permissions or expiry if `expected` (when given) is still the version.
pub async fn update(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
    input: UpdateApiKey,
) -> Result<(ApiKey, i64), DomainError> {
    caller.require::<caps::SignedIn>()?;
    input.check()?;
    let mut k = load(cx, caller, id).await?;
    if k.status != "ACTIVE" {
        return Err(DomainError::Conflict(
            "API_KEY_REVOKED",
            "This API key was revoked and cannot be changed: create a new key instead.".into(),
        ));
    }
    let now = cx.clock().now_ms();
    if let Some(perms) = &input.permissions {
        within_creator(perms, caller)?;
        k.permissions = store::join_list(dedup(perms).iter().map(|c| c.as_str()));
    }
    if let Some(n) = &input.name {
        k.name = n.trim().to_string();
    }
    if let Some(exp) = input.expires_at {
        k.expires_at = future("expiresAt", exp, now)?;
    }
    k.updated_at = now;
    let mut tx = cx.db().begin().await?;
    let rows = store::api_keys::update(&mut *tx, &k, None, expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::ApiKey))?;
    audit::record(
        &mut *tx,
        caller,
        Entry { action: "api_key.update", resource_type: "api_key", resource_id: &k.id, metadata: json!({"name": k.name, "permissions": store::split_list(&k.permissions), "expiresAt": k.expires_at.map(rfc3339)}) },
        now,
    )
    .await?;
    tx.commit().await?;
    cx.announce(Notice::ApiKeyChanged {
        key_id: k.id.clone(),
    });
    let k = load(cx, caller, id).await?;
    Ok((view(&k)?, k.version))
}

/// Issues a new secret if `expected` (when given) is still the version; the old one stops.
pub async fn rotate(
    cx: &Cx,
    caller: &Caller,
    id: &str,
    expected: Option<i64>,
) -> Result<IssuedApiKey, DomainError> {
    caller.require::<caps::SignedIn>()?;
    let mut k = load(cx, caller, id).await?;
    if k.status != "ACTIVE" {
        return Err(DomainError::Conflict(
            "API_KEY_REVOKED",
            "This API key was revoked and cannot be rotated: create a new key instead.".into(),
        ));
    }
    let token = secrets::generate(secrets::API_KEY_PREFIX);
    let now = cx.clock().now_ms();
    k.token_hint = secrets::hint(&token);
    k.updated_at = now;
    let mut tx = cx.db().begin().await?;
    let rows =
        store::api_keys::update(&mut *tx, &k, Some(&secrets::hash(&token)), expected).await?;
    check_write(rows, expected, DomainError::NotFound(Resource::ApiKey))?;
    audit::record(
        &mut *tx,
        caller,
        Entry {
            action: "api_key.rotate",
            resource_type: "api_key",
            resource_id: &k.id,
            metadata: json!({"name": k.name}),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    // The old secret dies now on this node (and within the cache lifetime on any other).
    cx.announce(Notice::ApiKeyChanged {
        key_id: k.id.clone(),
    });
    let k = load(cx, caller, id).await?;
    Ok(IssuedApiKey {
        key: view(&k)?,
        token,
    })
}

/// Revokes the key for good (revoking a revoked key changes nothing).
pub async fn revoke(cx: &Cx, caller: &Caller, id: &str) -> Result<ApiKey, DomainError> {
    caller.require::<caps::SignedIn>()?;
    let mut k = load(cx, caller, id).await?;
    let now = cx.clock().now_ms();
    if k.status == "ACTIVE" {
        k.status = "REVOKED".into();
        k.updated_at = now;
        let mut tx = cx.db().begin().await?;
        let rows = store::api_keys::update(&mut *tx, &k, None, None).await?;
        check_write(rows, None, DomainError::NotFound(Resource::ApiKey))?;
        audit::record(
            &mut *tx,
            caller,
            Entry {
                action: "api_key.revoke",
                resource_type: "api_key",
                resource_id: &k.id,
                metadata: json!({"name": k.name}),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        cx.announce(Notice::ApiKeyChanged {
            key_id: k.id.clone(),
        });
    }
    let k = load(cx, caller, id).await?;
    Ok(view(&k)?)
}

/// Every token capability the caller holds (for `--permissions all`).
pub fn all_held(caller: &Caller) -> Vec<Capability> {
    TOKEN_CAPABILITIES
        .iter()
        .copied()
        .filter(|c| caller.caps.contains(*c))
        .collect()
}

/// Mints a token for the user's first workspace, as that user.
pub async fn mint_for_user(
    cx: &Cx,
    email: &str,
    name: &str,
    permissions: &str,
    surfaces: &str,
) -> anyhow::Result<String> {
    let db = cx.db();
    let user = store::users::find_by_email(db.reader(), &email.trim().to_lowercase())
        .await?
        .ok_or_else(|| anyhow::anyhow!("no user with email {email}"))?;
    let ws = store::workspaces::list_for_user(db.reader(), &user.id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("{email} belongs to no workspace"))?;
    let role = Role::parse(&ws.role).ok_or_else(|| anyhow::anyhow!("unknown role {}", ws.role))?;
    let caller = Caller {
        email_verified: user.email_verified_at.is_some(),
        user_id: user.id,
        email: user.email,
        workspace_id: ws.id,
        caps: role.capabilities(),
        via: Via::Session {
            session_id: String::new(),
            role,
        },
        ip: None,
        user_agent: Some("tocsin-cli".into()),
    };
    let perms: Vec<Capability> = if permissions.trim() == "all" {
        all_held(&caller)
    } else {
        permissions
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| match Capability::parse(p) {
                Some(c) if !c.is_session_only() => Ok(c),
                Some(_) => Err(anyhow::anyhow!(
                    "{p} is session-only and cannot be put on a token"
                )),
                None => Err(anyhow::anyhow!("unknown capability {p}")),
            })
            .collect::<anyhow::Result<_>>()?
    };
    if perms.is_empty() {
        anyhow::bail!("no permissions given");
    }
    if let Some(p) = perms.iter().find(|p| !caller.caps.contains(**p)) {
        anyhow::bail!("{email} does not hold {}", p.as_str());
    }
    let surfaces: Vec<Surface> = surfaces
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "rest" => Ok(Surface::Rest),
            "mcp" => Ok(Surface::Mcp),
            other => Err(anyhow::anyhow!(
                "unknown surface {other}: use rest and/or mcp"
            )),
        })
        .collect::<anyhow::Result<_>>()?;
    if surfaces.is_empty() {
        anyhow::bail!("no surfaces given");
    }
    let input = CreateApiKey {
        name: name.to_string(),
        permissions: perms,
        surfaces: Some(surfaces),
        expires_at: None,
    };
    let issued = create(cx, &caller, input)
        .await
        .map_err(super::error::describe)?;
    Ok(issued.token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_surface_and_key_status_round_trips_and_strangers_are_errors() {
        corrupt::assert_round_trip(&Surface::ALL, Surface::as_str);
        corrupt::assert_round_trip(&ApiKeyStatus::ALL, ApiKeyStatus::as_str);
    }
}
