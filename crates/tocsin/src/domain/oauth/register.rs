//! Dynamic client registration (RFC 7591): the metadata a client registers with, checked
//! field by field, and the client stored (a confidential one's secret shown once, stored
//! hashed).

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::OAuthError;
use crate::auth::oauth as rules;
use crate::auth::secrets;
use crate::cx::Cx;
use crate::ids::new_id;
use crate::store::oauth as st;

/// Client metadata a client registers with. Fields this server does not use are ignored, as
/// RFC 7591 asks.
#[derive(Debug, Deserialize)]
pub struct ClientMetadata {
    #[serde(default)]
    pub redirect_uris: Option<Vec<String>>,
    #[serde(default)]
    pub token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    pub grant_types: Option<Vec<String>>,
    #[serde(default)]
    pub response_types: Option<Vec<String>>,
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_uri: Option<String>,
    #[serde(default)]
    pub logo_uri: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub software_id: Option<String>,
    #[serde(default)]
    pub software_version: Option<String>,
}

/// The registration answer (RFC 7591 section 3.2.1).
#[derive(Debug, Serialize)]
pub struct RegisteredClient {
    pub client_id: String,
    pub client_id_issued_at: i64,
    /// Confidential clients only; shown this once, stored hashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
    #[serde(flatten)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

const AUTH_METHODS: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];

fn text_field(v: &Option<String>, name: &str, max: usize) -> Result<(), OAuthError> {
    match v {
        Some(s) if s.chars().count() > max => Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("{name} is longer than {max} characters"),
        )),
        _ => Ok(()),
    }
}

/// Registers a client: public (`token_endpoint_auth_method: none`) or confidential (a secret
/// is generated, returned once and stored hashed).
pub async fn register(cx: &Cx, meta: ClientMetadata) -> Result<RegisteredClient, OAuthError> {
    let uris = redirect_uris(&meta)?;
    let method = auth_method(&meta)?;
    let grant_types = grant_types(&meta)?;
    let response_types = response_types(&meta)?;
    let scope = scope(&meta)?;
    text_fields(&meta)?;

    let now = cx.clock().now_ms();
    let id = format!("{}{}", rules::CLIENT_ID_PREFIX, new_id().replace('-', ""));
    let secret = (method != "none").then(|| rules::new_secret(rules::CLIENT_SECRET_PREFIX));
    let name = meta
        .client_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "Unnamed MCP client".into());
    let out = registered_metadata(
        &meta,
        &uris,
        &method,
        &grant_types,
        &response_types,
        &name,
        &scope,
    );
    let row = st::ClientRow {
        id: id.clone(),
        name,
        redirect_uris: uris.join("\n"),
        token_endpoint_auth_method: method,
        secret_hash: secret.as_deref().map(secrets::hash),
        scope,
        metadata: serde_json::Value::Object(out.clone()).to_string(),
        created_at: now,
    };
    st::insert_client(cx.db().writer(), &row).await?;
    Ok(RegisteredClient {
        client_id: id,
        client_id_issued_at: now / 1000,
        client_secret_expires_at: secret.as_ref().map(|_| 0),
        client_secret: secret,
        metadata: out,
    })
}

/// The redirect URIs: 1 to 10, each at most 2000 characters and one the rules accept.
fn redirect_uris(meta: &ClientMetadata) -> Result<Vec<String>, OAuthError> {
    let uris = meta.redirect_uris.clone().unwrap_or_default();
    if uris.is_empty() {
        return Err(OAuthError::bad(
            "invalid_redirect_uri",
            "redirect_uris must name at least one redirect URI",
        ));
    }
    if uris.len() > 10 {
        return Err(OAuthError::bad(
            "invalid_redirect_uri",
            "at most 10 redirect URIs may be registered",
        ));
    }
    for u in &uris {
        if u.len() > 2000 {
            return Err(OAuthError::bad(
                "invalid_redirect_uri",
                "a redirect URI is longer than 2000 characters",
            ));
        }
        rules::check_redirect_uri(u).map_err(|m| OAuthError::bad("invalid_redirect_uri", m))?;
    }
    Ok(uris)
}

/// `token_endpoint_auth_method`, `client_secret_basic` unless given.
fn auth_method(meta: &ClientMetadata) -> Result<String, OAuthError> {
    let method = meta
        .token_endpoint_auth_method
        .clone()
        .unwrap_or_else(|| "client_secret_basic".into());
    if !AUTH_METHODS.contains(&method.as_str()) {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("token_endpoint_auth_method {method} is not supported: use none, client_secret_basic or client_secret_post"),
        ));
    }
    Ok(method)
}

/// The grant types: authorization code and refresh token unless given, nothing else.
fn grant_types(meta: &ClientMetadata) -> Result<Vec<String>, OAuthError> {
    let grant_types = meta
        .grant_types
        .clone()
        .unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
    if let Some(g) = grant_types
        .iter()
        .find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token"))
    {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            format!("grant type {g} is not supported: use authorization_code and refresh_token"),
        ));
    }
    Ok(grant_types)
}

/// The response types: `code` only.
fn response_types(meta: &ClientMetadata) -> Result<Vec<String>, OAuthError> {
    let response_types = meta
        .response_types
        .clone()
        .unwrap_or_else(|| vec!["code".into()]);
    if response_types.iter().any(|r| r != "code") {
        return Err(OAuthError::bad(
            "invalid_client_metadata",
            "only the response type code is supported",
        ));
    }
    Ok(response_types)
}

/// The scopes the client asks for by default, in the server's order (empty when none).
fn scope(meta: &ClientMetadata) -> Result<String, OAuthError> {
    let scope = match &meta.scope {
        Some(s) => {
            let caps = rules::parse_scopes(s).map_err(|bad| {
                OAuthError::bad(
                    "invalid_client_metadata",
                    format!("scope {bad} is not one of the server's scopes"),
                )
            })?;
            rules::scope_string(&caps)
        }
        None => String::new(),
    };
    Ok(scope)
}

/// The free-text fields' lengths.
fn text_fields(meta: &ClientMetadata) -> Result<(), OAuthError> {
    text_field(&meta.client_name, "client_name", 200)?;
    text_field(&meta.client_uri, "client_uri", 2000)?;
    text_field(&meta.logo_uri, "logo_uri", 2000)?;
    text_field(&meta.software_id, "software_id", 200)?;
    text_field(&meta.software_version, "software_version", 100)?;
    Ok(())
}

/// The metadata the registration answer and the stored client carry.
fn registered_metadata(
    meta: &ClientMetadata,
    uris: &[String],
    method: &str,
    grant_types: &[String],
    response_types: &[String],
    name: &str,
    scope: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    out.insert("redirect_uris".into(), json!(uris));
    out.insert("token_endpoint_auth_method".into(), json!(method));
    out.insert("grant_types".into(), json!(grant_types));
    out.insert("response_types".into(), json!(response_types));
    out.insert("client_name".into(), json!(name));
    if !scope.is_empty() {
        out.insert("scope".into(), json!(scope));
    }
    for (k, v) in [
        ("client_uri", &meta.client_uri),
        ("logo_uri", &meta.logo_uri),
        ("software_id", &meta.software_id),
        ("software_version", &meta.software_version),
    ] {
        if let Some(v) = v {
            out.insert(k.into(), json!(v));
        }
    }
    out
}
