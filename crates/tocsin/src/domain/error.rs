//! The domain's error type: what an operation can refuse or fail with, in words every
//! surface shares (REST, the CLI, MCP). It knows nothing of HTTP: the status code and the
//! envelope are chosen in one place at the HTTP edge (`http::error`). The stable
//! machine-readable [`DomainError::code`] lives here because every surface reports it.

use crate::auth::capability::Capability;
pub use crate::auth::error::{AuthError, CredentialProblem, Holder};

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
    NotificationChannel,
    Alert,
    EscalationPolicy,
    MaintenanceWindow,
    StatusPage,
    Incident,
    Postmortem,
    PublishableKey,
    /// A subscriber of a status page.
    Subscriber,
    /// A custom domain of a status page.
    Domain,
    /// An OAuth grant of an MCP client.
    McpGrant,
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
            Resource::NotificationChannel => "NOTIFICATION_CHANNEL_NOT_FOUND",
            Resource::Alert => "ALERT_NOT_FOUND",
            Resource::EscalationPolicy => "ESCALATION_POLICY_NOT_FOUND",
            Resource::MaintenanceWindow => "MAINTENANCE_WINDOW_NOT_FOUND",
            Resource::StatusPage => "STATUS_PAGE_NOT_FOUND",
            Resource::Incident => "INCIDENT_NOT_FOUND",
            Resource::Postmortem => "POSTMORTEM_NOT_FOUND",
            Resource::PublishableKey => "PUBLISHABLE_KEY_NOT_FOUND",
            Resource::Subscriber => "SUBSCRIBER_NOT_FOUND",
            Resource::Domain => "DOMAIN_NOT_FOUND",
            Resource::McpGrant => "MCP_GRANT_NOT_FOUND",
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
            Resource::NotificationChannel => "notification channel",
            Resource::Alert => "alert",
            Resource::EscalationPolicy => "escalation policy",
            Resource::MaintenanceWindow => "maintenance window",
            Resource::StatusPage => "status page",
            Resource::Incident => "incident",
            Resource::Postmortem => "postmortem",
            Resource::PublishableKey => "publishable key",
            Resource::Subscriber => "subscriber",
            Resource::Domain => "custom domain",
            Resource::McpGrant => "MCP grant",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("The request is not valid: correct the fields named and send it again.")]
    Validation {
        fields: Vec<FieldError>,
        form: Vec<String>,
    },
    #[error("{}", not_found(*.0))]
    NotFound(Resource),
    /// No credential at all.
    #[error("Authentication required: send an API key as `Authorization: Bearer <key>`, or sign in to get a session cookie.")]
    Unauthorized,
    /// A credential was sent and refused; the problem says why.
    #[error("{}", .0.message())]
    BadCredential(CredentialProblem),
    #[error("The email or password is wrong: check both and try again.")]
    InvalidCredentials,
    #[error(
        "This API key may not be used on the {0} surface: create a key whose surfaces include {0}."
    )]
    SurfaceNotAllowed(&'static str),
    #[error("{}", missing_capability(missing, *holder))]
    InsufficientCapability {
        missing: Vec<Capability>,
        holder: Holder,
    },
    /// A token calling what only a signed-in person may; `caps` are the session-only
    /// capabilities the operation needs (empty when it needs a person, not a capability).
    #[error("{}", session_required(.0))]
    SessionRequired(Vec<Capability>),
    #[error("The request's origin is not this server's: send cookie-authenticated writes from pages of {expected} (the server's --public-url), or set --public-url to the address clients use.")]
    InvalidOrigin { expected: String },
    #[error("{1}")]
    Forbidden(&'static str, String),
    #[error("The resource changed since it was read: read it again and apply the change to the new version.")]
    VersionConflict,
    #[error("{1}")]
    Conflict(&'static str, String),
    #[error("The plan allows at most {limit} {what}: delete some or move to a larger plan.")]
    PlanLimit { what: &'static str, limit: u64 },
    /// A plan rule other than a count, e.g. the shortest check interval; the text says which.
    #[error("{0}")]
    PlanRule(String),
    #[error("Too many requests: retry in {retry_after} s.")]
    RateLimited { retry_after: u64 },
    #[error("The service cannot answer now (it is starting, or its database is unreachable): retry in a few seconds.")]
    Unavailable,
    #[error("A database error stopped the request: retry, and tell the server's operator if it keeps happening.")]
    Database(#[from] sqlx::Error),
    #[error("An internal error stopped the request: retry, and tell the server's operator if it keeps happening.")]
    Internal(#[from] anyhow::Error),
}

fn not_found(r: Resource) -> String {
    match r {
        Resource::Route => {
            "No such route: check the method and path against the API document at /openapi.json."
                .into()
        }
        Resource::Workspace => {
            "No such workspace among yours: check the id, or list your workspaces.".into()
        }
        Resource::PushToken => {
            "No push monitor has this token: check it against the push URL on the monitor's page in the dashboard (regenerating the URL there stops the old token at once).".into()
        }
        Resource::Domain => {
            "No such custom domain on this status page: check the spelling, or list the page's domains.".into()
        }
        other => format!(
            "No {} with this id in the current workspace: check the id, or list them to find it.",
            other.label()
        ),
    }
}

fn names(caps: &[Capability]) -> String {
    caps.iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn missing_capability(missing: &[Capability], holder: Holder) -> String {
    let what = if missing.len() == 1 {
        "capability"
    } else {
        "capabilities"
    };
    match holder {
        Holder::ApiKey => format!(
            "This API key lacks the {what} {}: create a key whose permissions include it (a key holds only what its creator's role grants).",
            names(missing)
        ),
        Holder::OAuthGrant => format!(
            "This OAuth grant lacks the {what} {}: authorize the client again and grant it.",
            names(missing)
        ),
        Holder::Session => format!(
            "Your role in this workspace lacks the {what} {}: ask a workspace owner or admin for a role that grants it.",
            names(missing)
        ),
    }
}

fn session_required(caps: &[Capability]) -> String {
    if caps.is_empty() {
        "Only a signed-in person may do this, never an API key: sign in and send the request with the session cookie.".into()
    } else {
        let what = if caps.len() == 1 {
            "capability"
        } else {
            "capabilities"
        };
        format!(
            "The {what} {} can only come from a signed-in session, never from an API key: sign in and send the request with the session cookie.",
            names(caps)
        )
    }
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
            DomainError::Unauthorized | DomainError::BadCredential(_) => "UNAUTHORIZED",
            DomainError::InvalidCredentials => "INVALID_CREDENTIALS",
            DomainError::SurfaceNotAllowed(_) => "SURFACE_NOT_ALLOWED",
            DomainError::InsufficientCapability { .. } | DomainError::SessionRequired(_) => {
                "INSUFFICIENT_CAPABILITY"
            }
            DomainError::InvalidOrigin { .. } => "INVALID_ORIGIN",
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

/// A refused credential or caller, as the domain reports it (same codes, same messages).
impl From<AuthError> for DomainError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::BadCredential(p) => DomainError::BadCredential(p),
            AuthError::SurfaceNotAllowed(s) => DomainError::SurfaceNotAllowed(s),
            AuthError::InsufficientCapability { missing, holder } => {
                DomainError::InsufficientCapability { missing, holder }
            }
            AuthError::SessionRequired(caps) => DomainError::SessionRequired(caps),
            AuthError::Forbidden(code, message) => DomainError::Forbidden(code, message),
            AuthError::Database(e) => DomainError::Database(e),
            AuthError::Corrupt(e) => e.into(),
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

/// A stored value this build cannot read (already logged and counted where it was read): an
/// internal error, never a guessed value. See `store::corrupt` for what each read does.
impl From<crate::store::corrupt::CorruptRow> for DomainError {
    fn from(e: crate::store::corrupt::CorruptRow) -> Self {
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
