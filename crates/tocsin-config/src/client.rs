//! The REST client: a bearer token, JSON in and out, the error envelope read back, `ETag` and
//! `If-Match` for version locks, and lists read by cursor pages.

use std::fmt;

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, ETAG, IF_MATCH};
use reqwest::Method;
use serde_json::Value;

/// A failed call: the transport's failure or the server's envelope.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Transport(String),
    #[error("{status} {code}: {message}")]
    Status {
        status: u16,
        code: String,
        message: String,
        field: Option<String>,
    },
}

impl ApiError {
    /// The envelope's code (empty for transport failures).
    pub fn code(&self) -> &str {
        match self {
            ApiError::Transport(_) => "",
            ApiError::Status { code, .. } => code,
        }
    }
}

/// A JSON answer and its `ETag`, if any.
#[derive(Debug, Clone)]
pub struct Answer {
    pub body: Value,
    pub etag: Option<String>,
}

/// A client of one server, acting with one token.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    auth: HeaderValue,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("base", &self.base).finish()
    }
}

impl Client {
    /// A client of the server at `base` (its root URL) sending `token`.
    pub fn new(base: &str, token: &str) -> Result<Client, ApiError> {
        let mut auth = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            ApiError::Transport("the token holds characters a header cannot".into())
        })?;
        auth.set_sensitive(true);
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| ApiError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            auth,
        })
    }

    /// One call; `if_match` sends the version the write is based on.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Answer, ApiError> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{}", self.base, path))
            .header(AUTHORIZATION, self.auth.clone());
        if let Some(b) = body {
            req = req
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(b).unwrap_or_default());
        }
        if let Some(tag) = if_match {
            req = req.header(IF_MATCH, tag);
        }
        let res = req
            .send()
            .await
            .map_err(|e| ApiError::Transport(format!("{method} {path}: {e}")))?;
        let status = res.status().as_u16();
        let etag = res
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = res
            .bytes()
            .await
            .map_err(|e| ApiError::Transport(format!("{method} {path}: {e}")))?;
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        if status >= 400 {
            let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
            return Err(ApiError::Status {
                status,
                code: text("code").unwrap_or_else(|| "HTTP_ERROR".into()),
                message: text("message").unwrap_or_else(|| format!("{method} {path}")),
                field: text("field"),
            });
        }
        Ok(Answer { body, etag })
    }

    pub async fn get(&self, path: &str) -> Result<Answer, ApiError> {
        self.call(Method::GET, path, None, None).await
    }

    /// Every item of a cursor-paged list: `items` names the page's array.
    pub async fn list_pages(&self, path: &str, items: &str) -> Result<Vec<Value>, ApiError> {
        let mut out = vec![];
        let mut cursor: Option<String> = None;
        loop {
            let url = match &cursor {
                None => format!("{path}?limit=200"),
                Some(c) => format!("{path}?limit=200&cursor={}", encode(c)),
            };
            let page = self.get(&url).await?.body;
            if let Some(Value::Array(list)) = page.get(items) {
                out.extend(list.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
                _ => return Ok(out),
            }
        }
    }

    /// A list answered as one array.
    pub async fn list(&self, path: &str) -> Result<Vec<Value>, ApiError> {
        match self.get(path).await?.body {
            Value::Array(v) => Ok(v),
            _ => Err(ApiError::Transport(format!("GET {path}: not a list"))),
        }
    }
}

/// Percent-encodes a query value (cursors are opaque).
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
