//! The domain's error type: what an operation can refuse or fail with, in words every
//! surface shares (REST, the CLI, MCP). It knows nothing of HTTP: the status code and the
//! envelope are chosen in one place at the HTTP edge (`http::error`). The stable
//! machine-readable [`DomainError::code`] lives here because every surface reports it.

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
    pub fn code(self) -> &'static str {
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

    pub fn label(self) -> &'static str {
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
pub enum DomainError {
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
    #[error("the service is not ready")]
    Unavailable,
    #[error("database error")]
    Database(#[from] sqlx::Error),
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl DomainError {
    /// A validation error on a single field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        DomainError::Validation {
            fields: vec![FieldError::new(field, message)],
            form: Vec::new(),
        }
    }

    /// A validation error about the request as a whole (malformed JSON, say).
    pub fn form(message: impl Into<String>) -> Self {
        DomainError::Validation {
            fields: Vec::new(),
            form: vec![message.into()],
        }
    }

    /// The stable machine-readable code (`MONITOR_NOT_FOUND`, `VERSION_CONFLICT` ...).
    pub fn code(&self) -> &'static str {
        match self {
            DomainError::Validation { .. } => "VALIDATION_ERROR",
            DomainError::NotFound(r) => r.code(),
            DomainError::Unauthorized => "UNAUTHORIZED",
            DomainError::InvalidCredentials => "INVALID_CREDENTIALS",
            DomainError::SurfaceNotAllowed(_) => "SURFACE_NOT_ALLOWED",
            DomainError::InsufficientCapability(_) => "INSUFFICIENT_CAPABILITY",
            DomainError::InvalidOrigin => "INVALID_ORIGIN",
            DomainError::Forbidden(code, _) | DomainError::Conflict(code, _) => code,
            DomainError::VersionConflict => "VERSION_CONFLICT",
            DomainError::PlanLimit { .. } | DomainError::PlanRule(_) => "PLAN_LIMIT_EXCEEDED",
            DomainError::RateLimited { .. } => "RATE_LIMITED",
            DomainError::Unavailable => "SERVICE_UNAVAILABLE",
            DomainError::Database(_) | DomainError::Internal(_) => "INTERNAL",
        }
    }
}

impl From<Vec<FieldError>> for DomainError {
    fn from(fields: Vec<FieldError>) -> Self {
        DomainError::Validation {
            fields,
            form: Vec::new(),
        }
    }
}

/// A stored status no status spells is a corrupt row: an internal error (logged with its
/// cause by the envelope), never a guessed status.
impl From<crate::store::status::CorruptStatus> for DomainError {
    fn from(e: crate::store::status::CorruptStatus) -> Self {
        DomainError::Internal(anyhow::Error::new(e))
    }
}

/// Maps a unique-constraint violation to a precise conflict; other database errors pass through.
pub fn on_constraint(err: sqlx::Error, map: &[(&str, DomainError)]) -> DomainError {
    if let sqlx::Error::Database(db) = &err {
        let text = format!("{} {}", db.constraint().unwrap_or_default(), db.message());
        for (needle, mapped) in map {
            if text.contains(needle) {
                return clone_conflict(mapped);
            }
        }
    }
    DomainError::Database(err)
}

fn clone_conflict(e: &DomainError) -> DomainError {
    match e {
        DomainError::Conflict(code, msg) => DomainError::Conflict(code, msg.clone()),
        DomainError::Validation { fields, form } => DomainError::Validation {
            fields: fields.clone(),
            form: form.clone(),
        },
        other => DomainError::Conflict("CONFLICT", other.to_string()),
    }
}

pub type DomainResult<T> = Result<T, DomainError>;

/// A domain refusal as one line: validation failures name their field, as the API does.
pub fn describe(e: DomainError) -> anyhow::Error {
    match &e {
        DomainError::Validation { fields, .. } if !fields.is_empty() => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.field, f.message))
                .collect();
            anyhow::anyhow!("{}", parts.join("; "))
        }
        DomainError::Validation { form, .. } if !form.is_empty() => {
            anyhow::anyhow!("{}", form.join("; "))
        }
        _ => anyhow::anyhow!("{e}"),
    }
}
