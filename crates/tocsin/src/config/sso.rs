//! The single sign-on providers of the TOML file (`[[sso.oidc]]`): their shape, and the
//! checks made once at start so that a typo stops the server with the provider and key named
//! instead of failing a person's sign-in later.

use serde::Deserialize;
use url::Url;

use super::{invalid, ConfigError};

/// `[sso]` in the file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsoFile {
    #[serde(default)]
    pub oidc: Vec<OidcFile>,
}

/// One `[[sso.oidc]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcFile {
    pub id: String,
    pub name: String,
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    pub scopes: Option<Vec<String>>,
    pub workspace: Option<String>,
    pub default_role: Option<String>,
}

/// An OpenID provider people may sign in with, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcProvider {
    /// Lowercase letters, digits and `-`: the provider's part of `/auth/sso/{id}/...`.
    pub id: String,
    /// The sign-in button's label.
    pub name: String,
    /// The issuer identifier, exactly as the provider's ID tokens carry it in `iss`.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Always holds `openid`.
    pub scopes: Vec<String>,
    /// The slug of the workspace the provider's new users join, if any.
    pub workspace: Option<String>,
    /// The role they join it with: `admin`, `member` or `viewer`.
    pub default_role: String,
}

impl std::fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client secret stays out of logs.
        f.debug_struct("OidcProvider")
            .field("id", &self.id)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish()
    }
}

/// The roles a provider may give; owners are made by people, never by a provider.
pub const SSO_ROLES: [&str; 3] = ["admin", "member", "viewer"];

const SETTING: &str = "sso.oidc";

/// Checks every provider: ids well-formed and unique, the issuer an http(s) URL, a client,
/// `openid` among the scopes, a workspace slug and role the server knows.
pub fn providers(file: Option<&SsoFile>) -> Result<Vec<OidcProvider>, ConfigError> {
    let Some(file) = file else {
        return Ok(Vec::new());
    };
    let mut out: Vec<OidcProvider> = Vec::new();
    for (i, p) in file.oidc.iter().enumerate() {
        let at = |key: &str, msg: &str| {
            invalid(
                SETTING,
                format!("provider {} ({}): {key} {msg}", i + 1, p.id),
            )
        };
        let id_ok = (1..=32).contains(&p.id.len())
            && p.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !id_ok {
            return Err(at("id", "must be 1 to 32 characters of a-z, 0-9 and -"));
        }
        if out.iter().any(|o| o.id == p.id) {
            return Err(at("id", "is used by another provider"));
        }
        let name = p.name.trim();
        if name.is_empty() || name.chars().count() > 60 || name.chars().any(char::is_control) {
            return Err(at("name", "must be 1 to 60 printable characters"));
        }
        let issuer_ok = Url::parse(&p.issuer)
            .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .unwrap_or(false);
        if !issuer_ok {
            return Err(at("issuer", "must be an http or https URL"));
        }
        if p.client_id.trim().is_empty() {
            return Err(at("client_id", "is required"));
        }
        if p.client_secret.is_empty() {
            return Err(at("client_secret", "is required"));
        }
        let scopes = p
            .scopes
            .clone()
            .unwrap_or_else(|| ["openid", "email", "profile"].map(String::from).to_vec());
        if !scopes.iter().any(|s| s == "openid") {
            return Err(at("scopes", "must include \"openid\""));
        }
        if scopes
            .iter()
            .any(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(at("scopes", "must be words without spaces"));
        }
        if let Some(ws) = &p.workspace {
            let slug_ok = (3..=48).contains(&ws.len())
                && ws
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !slug_ok {
                return Err(at("workspace", "must be a workspace slug"));
            }
        }
        let default_role = p.default_role.clone().unwrap_or_else(|| "member".into());
        if !SSO_ROLES.contains(&default_role.as_str()) {
            return Err(at("default_role", "must be admin, member or viewer"));
        }
        out.push(OidcProvider {
            id: p.id.clone(),
            name: name.to_string(),
            issuer: p.issuer.clone(),
            client_id: p.client_id.trim().to_string(),
            client_secret: p.client_secret.clone(),
            scopes,
            workspace: p.workspace.clone(),
            default_role,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<OidcProvider>, String> {
        #[derive(Deserialize)]
        struct F {
            sso: SsoFile,
        }
        let f: F = toml::from_str(text).map_err(|e| e.to_string())?;
        providers(Some(&f.sso)).map_err(|e| e.to_string())
    }

    const GOOD: &str = r#"
        [[sso.oidc]]
        id = "acme"
        name = "Acme"
        issuer = "https://login.acme.example"
        client_id = "tocsin"
        client_secret = "s"
    "#;

    #[test]
    fn five_lines_are_a_provider_with_defaults() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p[0].scopes, ["openid", "email", "profile"]);
        assert_eq!(p[0].default_role, "member");
        assert_eq!(p[0].workspace, None);
    }

    #[test]
    fn mistakes_name_the_provider_and_key() {
        for (change, key) in [
            (("id = \"acme\"", "id = \"Acme!\""), "id"),
            (
                (
                    "issuer = \"https://login.acme.example\"",
                    "issuer = \"login\"",
                ),
                "issuer",
            ),
            (
                ("client_secret = \"s\"", "client_secret = \"\""),
                "client_secret",
            ),
            (
                (
                    "client_id = \"tocsin\"",
                    "client_id = \"tocsin\"\nscopes = [\"email\"]",
                ),
                "scopes",
            ),
            (
                (
                    "client_id = \"tocsin\"",
                    "client_id = \"tocsin\"\ndefault_role = \"owner\"",
                ),
                "default_role",
            ),
            (
                (
                    "client_id = \"tocsin\"",
                    "client_id = \"tocsin\"\nworkspace = \"A B\"",
                ),
                "workspace",
            ),
        ] {
            let text = GOOD.replace(change.0, change.1);
            let err = parse(&text).unwrap_err();
            assert!(err.contains("sso.oidc") && err.contains(key), "{err}");
        }
        let twice = format!("{GOOD}{GOOD}");
        assert!(parse(&twice).unwrap_err().contains("another provider"));
        assert!(parse(&GOOD.replace("client_id", "client")).is_err());
    }
}
