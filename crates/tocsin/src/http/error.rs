//! The HTTP edge's error type and its one mapping to the error envelope. Every response with a
//! status >= 400 is built here (or by [`envelope`] for the few layers that sit outside the
//! handlers), so clients always get `{statusCode, code, message, field?, flattened?}` and never
//! a stack trace or SQL text. A [`DomainError`] from an operation becomes an [`ApiError`] by
//! `?`; the three refusals only HTTP has (body too large, wrong media type, wrong method) are
//! added here.

use std::collections::BTreeMap;

use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as OaResponse, SchemaObject};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

pub use crate::domain::error::on_constraint;
pub use crate::domain::{DomainError, FieldError, Resource};

const ROUTE_NOT_FOUND: &str =
    "No such route: check the method and path against the API document at /openapi.json.";
const METHOD_NOT_ALLOWED: &str =
    "This route does not accept this method: check the method against the API document at /openapi.json.";
const PAYLOAD_TOO_LARGE: &str =
    "The request body is larger than the 1 MiB limit: send a smaller body.";
const NOT_JSON: &str = "The body must be JSON: send it with `Content-Type: application/json`.";
const AUTHENTICATION_REQUIRED: &str = "Authentication required: send an API key as `Authorization: Bearer <key>`, or sign in to get a session cookie.";

/// How long a client is asked to wait (`Retry-After`) when the service cannot answer now
/// (`SERVICE_UNAVAILABLE`: not ready, or the database unreachable).
const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 5;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error("{}", PAYLOAD_TOO_LARGE)]
    PayloadTooLarge,
    #[error("{}", NOT_JSON)]
    UnsupportedMediaType,
    #[error("{}", METHOD_NOT_ALLOWED)]
    MethodNotAllowed,
    #[error("the request body did not arrive in time")]
    RequestTimeout,
}

impl ApiError {
    /// A validation error on a single field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Domain(DomainError::field(field, message))
    }

    /// A validation error about the request as a whole (malformed JSON, say).
    pub fn form(message: impl Into<String>) -> Self {
        ApiError::Domain(DomainError::form(message))
    }

    pub fn status(&self) -> StatusCode {
        let e = match self {
            ApiError::Domain(e) => e,
            ApiError::PayloadTooLarge => return StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => return StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MethodNotAllowed => return StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout => return StatusCode::REQUEST_TIMEOUT,
        };
        match e {
            DomainError::Validation { .. } => StatusCode::BAD_REQUEST,
            DomainError::NotFound(_) => StatusCode::NOT_FOUND,
            DomainError::Unauthorized
            | DomainError::BadCredential(_)
            | DomainError::InvalidCredentials => StatusCode::UNAUTHORIZED,
            DomainError::SurfaceNotAllowed(_)
            | DomainError::InsufficientCapability { .. }
            | DomainError::SessionRequired(_)
            | DomainError::InvalidOrigin { .. }
            | DomainError::Forbidden(..) => StatusCode::FORBIDDEN,
            DomainError::VersionConflict | DomainError::Conflict(..) => StatusCode::CONFLICT,
            DomainError::PlanLimit { .. } | DomainError::PlanRule(_) => {
                StatusCode::PAYMENT_REQUIRED
            }
            DomainError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            DomainError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            DomainError::Database(_) | DomainError::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Domain(e) => e.code(),
            ApiError::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::RequestTimeout => "REQUEST_TIMEOUT",
        }
    }

    /// The error envelope of this error, for surfaces that carry it in their own framing (an
    /// MCP tool error).
    pub fn envelope(&self) -> ErrorBody {
        self.body()
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
        if let ApiError::Domain(DomainError::Validation { fields, form }) = self {
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
        body
    }
}

impl From<crate::auth::error::AuthError> for ApiError {
    fn from(e: crate::auth::error::AuthError) -> Self {
        ApiError::Domain(e.into())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::Domain(e.into())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::Domain(e.into())
    }
}

impl From<crate::store::status::CorruptStatus> for ApiError {
    fn from(e: crate::store::status::CorruptStatus) -> Self {
        ApiError::Domain(e.into())
    }
}

impl From<crate::store::corrupt::CorruptRow> for ApiError {
    fn from(e: crate::store::corrupt::CorruptRow) -> Self {
        ApiError::Domain(e.into())
    }
}

impl From<Vec<FieldError>> for ApiError {
    fn from(fields: Vec<FieldError>) -> Self {
        ApiError::Domain(fields.into())
    }
}

impl IntoResponse for DomainError {
    fn into_response(self) -> Response {
        ApiError::Domain(self).into_response()
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
                ApiError::Domain(DomainError::Database(e)) => {
                    tracing::error!(error = %e, debug = ?e, "database error")
                }
                ApiError::Domain(DomainError::Internal(e)) => {
                    tracing::error!(error = %e, chain = ?e, "internal error")
                }
                other => tracing::warn!(error = %other, "server error"),
            }
        }
        let retry_after = match &self {
            ApiError::Domain(DomainError::RateLimited { retry_after }) => Some(*retry_after),
            ApiError::Domain(DomainError::Unavailable) => Some(UNAVAILABLE_RETRY_AFTER_SECS),
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
        StatusCode::NOT_FOUND => ("NOT_FOUND", ROUTE_NOT_FOUND),
        StatusCode::METHOD_NOT_ALLOWED => ("METHOD_NOT_ALLOWED", METHOD_NOT_ALLOWED),
        StatusCode::PAYLOAD_TOO_LARGE => ("PAYLOAD_TOO_LARGE", PAYLOAD_TOO_LARGE),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("UNSUPPORTED_MEDIA_TYPE", NOT_JSON),
        StatusCode::REQUEST_TIMEOUT => (
            "REQUEST_TIMEOUT",
            "The request took too long to arrive: send it again, all at once.",
        ),
        StatusCode::UNAUTHORIZED => ("UNAUTHORIZED", AUTHENTICATION_REQUIRED),
        StatusCode::BAD_REQUEST => (
            "VALIDATION_ERROR",
            "The request is malformed: check it against the API document at /openapi.json.",
        ),
        s if s.is_server_error() => (
            "INTERNAL",
            "An internal error stopped the request: retry, and tell the server's operator if it keeps happening.",
        ),
        _ => (
            "ERROR",
            "The request failed: check it against the API document at /openapi.json.",
        ),
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

/// An envelope body as bytes, for responses written below the router.
pub fn envelope_bytes(status: StatusCode, code: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&ErrorBody {
        status_code: status.as_u16(),
        code: code.to_string(),
        message: message.to_string(),
        field: None,
        flattened: None,
    })
    .unwrap_or_default()
}

/// The envelope of a refusal hyper writes itself, before any of our code sees a request: 400
/// for a request it cannot parse, 414 for a request target over its limit, 431 for too many
/// or too large headers. `http::serve` puts it on the wire in place of hyper's empty body.
pub fn protocol_error_body(status: u16) -> Option<Vec<u8>> {
    let (code, message) = match status {
        400 => ("BAD_REQUEST", "malformed HTTP request"),
        414 => ("URI_TOO_LONG", "request target too long"),
        431 => ("HEADERS_TOO_LARGE", "request headers too large or too many"),
        _ => return None,
    };
    StatusCode::from_u16(status)
        .ok()
        .map(|s| envelope_bytes(s, code, message))
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

pub type ApiResult<T> = Result<T, ApiError>;
