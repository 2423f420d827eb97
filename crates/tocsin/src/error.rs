//! The one error type of the API and its mapping to the error envelope. Every response with a
//! status >= 400 is built here (or by [`envelope`] for the few layers that sit outside the
//! handlers), so clients always get `{statusCode, code, message, field?, flattened?}` and never
//! a stack trace or SQL text.

use std::collections::BTreeMap;

use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as OaResponse, SchemaObject};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::capability::Capability;

/// One failed field: `field` is the dotted path from the body root (`config.assertions.0.target`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The resources whose absence has its own code (`<RESOURCE>_NOT_FOUND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Route,
    Workspace,
    Member,
    Invitation,
    ApiKey,
    Monitor,
    Project,
    Heartbeat,
    PushToken,
    Probe,
}

impl Resource {
    fn code(self) -> &'static str {
        match self {
            Resource::Route => "NOT_FOUND",
            Resource::Workspace => "WORKSPACE_NOT_FOUND",
            Resource::Member => "MEMBER_NOT_FOUND",
            Resource::Invitation => "INVITATION_NOT_FOUND",
            Resource::ApiKey => "API_KEY_NOT_FOUND",
            Resource::Monitor => "MONITOR_NOT_FOUND",
            Resource::Project => "PROJECT_NOT_FOUND",
            Resource::Heartbeat => "HEARTBEAT_NOT_FOUND",
            Resource::PushToken => "PUSH_TOKEN_NOT_FOUND",
            Resource::Probe => "PROBE_NOT_FOUND",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Resource::Route => "route",
            Resource::Workspace => "workspace",
            Resource::Member => "member",
            Resource::Invitation => "invitation",
            Resource::ApiKey => "API key",
            Resource::Monitor => "monitor",
            Resource::Project => "project",
            Resource::Heartbeat => "heartbeat",
            Resource::PushToken => "push token",
            Resource::Probe => "probe",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("request validation failed")]
    Validation {
        fields: Vec<FieldError>,
        form: Vec<String>,
    },
    #[error("{} not found", .0.label())]
    NotFound(Resource),
    #[error("authentication required")]
    Unauthorized,
    #[error("invalid email or password")]
    InvalidCredentials,
    #[error("this token may not be used on the {0} surface")]
    SurfaceNotAllowed(&'static str),
    #[error("missing capability")]
    InsufficientCapability(Vec<Capability>),
    #[error("the request's Origin does not match this server")]
    InvalidOrigin,
    #[error("{0}")]
    Forbidden(&'static str, String),
    #[error("the resource changed since it was read; re-read it and apply the change again")]
    VersionConflict,
    #[error("{0}")]
    Conflict(&'static str, String),
    #[error("the plan allows at most {limit} {what}")]
    PlanLimit { what: &'static str, limit: u64 },
    /// A plan rule other than a count, e.g. the shortest check interval; the text says which.
    #[error("{0}")]
    PlanRule(String),
    #[error("too many requests; retry in {retry_after} s")]
    RateLimited { retry_after: u64 },
    #[error("request body larger than the 1 MiB limit")]
    PayloadTooLarge,
    #[error("expected Content-Type: application/json")]
    UnsupportedMediaType,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("the service is not ready")]
    Unavailable,
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// A validation error on a single field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Validation {
            fields: vec![FieldError::new(field, message)],
            form: Vec::new(),
        }
    }

    /// A validation error about the request as a whole (malformed JSON, say).
    pub fn form(message: impl Into<String>) -> Self {
        ApiError::Validation {
            fields: Vec::new(),
            form: vec![message.into()],
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Validation { .. } => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized | ApiError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            ApiError::SurfaceNotAllowed(_)
            | ApiError::InsufficientCapability(_)
            | ApiError::InvalidOrigin
            | ApiError::Forbidden(..) => StatusCode::FORBIDDEN,
            ApiError::VersionConflict | ApiError::Conflict(..) => StatusCode::CONFLICT,
            ApiError::PlanLimit { .. } | ApiError::PlanRule(_) => StatusCode::PAYMENT_REQUIRED,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Database(_) | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation { .. } => "VALIDATION_ERROR",
            ApiError::NotFound(r) => r.code(),
            ApiError::Unauthorized => "UNAUTHORIZED",
            ApiError::InvalidCredentials => "INVALID_CREDENTIALS",
            ApiError::SurfaceNotAllowed(_) => "SURFACE_NOT_ALLOWED",
            ApiError::InsufficientCapability(_) => "INSUFFICIENT_CAPABILITY",
            ApiError::InvalidOrigin => "INVALID_ORIGIN",
            ApiError::Forbidden(code, _) | ApiError::Conflict(code, _) => code,
            ApiError::VersionConflict => "VERSION_CONFLICT",
            ApiError::PlanLimit { .. } | ApiError::PlanRule(_) => "PLAN_LIMIT_EXCEEDED",
            ApiError::RateLimited { .. } => "RATE_LIMITED",
            ApiError::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::Unavailable => "SERVICE_UNAVAILABLE",
            ApiError::Database(_) | ApiError::Internal(_) => "INTERNAL",
        }
    }

    fn body(&self) -> ErrorBody {
        let status = self.status();
        let mut body = ErrorBody {
            status_code: status.as_u16(),
            code: self.code().to_string(),
            message: self.to_string(),
            field: None,
            flattened: None,
        };
        match self {
            ApiError::Validation { fields, form } => {
                body.field = fields.first().map(|f| f.field.clone());
                let mut field_errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for f in fields {
                    field_errors
                        .entry(f.field.clone())
                        .or_default()
                        .push(f.message.clone());
                }
                if let Some(first) = fields.first() {
                    body.message = format!("{}: {}", first.field, first.message);
                } else if let Some(first) = form.first() {
                    body.message = first.clone();
                }
                body.flattened = Some(Flattened {
                    form_errors: form.clone(),
                    field_errors,
                });
            }
            ApiError::InsufficientCapability(missing) => {
                let names: Vec<&str> = missing.iter().map(|c| c.as_str()).collect();
                body.message = format!("missing capability: {}", names.join(", "));
            }
            _ => {}
        }
        body
    }
}

/// A stored status no status spells is a corrupt row: an internal error (logged with its
/// cause by the envelope), never a guessed status.
impl From<crate::store::status::CorruptStatus> for ApiError {
    fn from(e: crate::store::status::CorruptStatus) -> Self {
        ApiError::Internal(anyhow::Error::new(e))
    }
}

impl From<Vec<FieldError>> for ApiError {
    fn from(fields: Vec<FieldError>) -> Self {
        ApiError::Validation {
            fields,
            form: Vec::new(),
        }
    }
}

/// The error envelope as it goes on the wire.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// The HTTP status, repeated.
    pub status_code: u16,
    /// Stable machine-readable code; branch on this, never on `message`.
    pub code: String,
    /// Human-readable text; may change.
    pub message: String,
    /// The request field that failed validation (dotted path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Every validation failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flattened: Option<Flattened>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Flattened {
    pub form_errors: Vec<String>,
    pub field_errors: BTreeMap<String, Vec<String>>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            // Log the cause chain for operators; the client sees only the code.
            match &self {
                ApiError::Database(e) => tracing::error!(error = %e, debug = ?e, "database error"),
                ApiError::Internal(e) => tracing::error!(error = %e, chain = ?e, "internal error"),
                other => tracing::warn!(error = %other, "server error"),
            }
        }
        let retry_after = match &self {
            ApiError::RateLimited { retry_after } => Some(*retry_after),
            _ => None,
        };
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }
}

/// The envelope for a bare status produced outside a handler (router fallbacks, layers).
pub fn envelope(status: StatusCode) -> Response {
    let (code, message) = match status {
        StatusCode::NOT_FOUND => ("NOT_FOUND", "no such route"),
        StatusCode::METHOD_NOT_ALLOWED => ("METHOD_NOT_ALLOWED", "method not allowed"),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "PAYLOAD_TOO_LARGE",
            "request body larger than the 1 MiB limit",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "UNSUPPORTED_MEDIA_TYPE",
            "expected Content-Type: application/json",
        ),
        StatusCode::REQUEST_TIMEOUT => ("REQUEST_TIMEOUT", "request timed out"),
        StatusCode::UNAUTHORIZED => ("UNAUTHORIZED", "authentication required"),
        StatusCode::BAD_REQUEST => ("VALIDATION_ERROR", "bad request"),
        s if s.is_server_error() => ("INTERNAL", "internal error"),
        _ => ("ERROR", "request failed"),
    };
    let body = ErrorBody {
        status_code: status.as_u16(),
        code: code.to_string(),
        message: message.to_string(),
        field: None,
        flattened: if code == "VALIDATION_ERROR" {
            Some(Flattened {
                form_errors: vec![message.to_string()],
                field_errors: BTreeMap::new(),
            })
        } else {
            None
        },
    };
    (status, axum::Json(body)).into_response()
}

/// An OpenAPI response entry whose body is the error envelope.
pub fn error_response(ctx: &mut GenContext, description: &str) -> OaResponse {
    let schema = ctx.schema.subschema_for::<ErrorBody>();
    OaResponse {
        description: description.to_string(),
        content: [(
            "application/json".to_string(),
            MediaType {
                schema: Some(SchemaObject {
                    json_schema: schema,
                    example: None,
                    external_docs: None,
                }),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect(),
        ..Default::default()
    }
}

impl aide::OperationOutput for ApiError {
    type Inner = ErrorBody;

    fn operation_response(ctx: &mut GenContext, _op: &mut Operation) -> Option<OaResponse> {
        Some(error_response(ctx, "Error"))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![
            (
                Some(400),
                error_response(ctx, "Validation failed (`VALIDATION_ERROR`)"),
            ),
            (
                Some(404),
                error_response(ctx, "Not found (`<RESOURCE>_NOT_FOUND`)"),
            ),
            (
                Some(409),
                error_response(
                    ctx,
                    "Conflict (`VERSION_CONFLICT` or a uniqueness conflict)",
                ),
            ),
            (
                Some(500),
                error_response(ctx, "Internal error (`INTERNAL`)"),
            ),
        ]
    }
}

/// Maps a unique-constraint violation to a precise conflict; other database errors pass through.
pub fn on_constraint(err: sqlx::Error, map: &[(&str, ApiError)]) -> ApiError {
    if let sqlx::Error::Database(db) = &err {
        let text = format!("{} {}", db.constraint().unwrap_or_default(), db.message());
        for (needle, mapped) in map {
            if text.contains(needle) {
                return clone_conflict(mapped);
            }
        }
    }
    ApiError::Database(err)
}

fn clone_conflict(e: &ApiError) -> ApiError {
    match e {
        ApiError::Conflict(code, msg) => ApiError::Conflict(code, msg.clone()),
        ApiError::Validation { fields, form } => ApiError::Validation {
            fields: fields.clone(),
            form: form.clone(),
        },
        other => ApiError::Conflict("CONFLICT", other.to_string()),
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
