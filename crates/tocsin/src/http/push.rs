//! `POST /push/{token}` (and `GET`/`HEAD`, for `curl URL` clients): a cron job, backup or
//! pipeline checks in. The token in the path is the
//! only credential. The answer (`202 {"ok": true}`) goes out only once the heartbeat is
//! committed; the rules live in [`crate::push`].

use aide::axum::routing::post_with;
use aide::axum::ApiRouter;
use aide::generate::GenContext;
use aide::openapi::Operation;
use aide::transform::TransformOperation;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_core::{PushStatus, Status};

use super::extract::Accepted;
use crate::auth::secrets;
use crate::domain::DomainError;
use crate::http::auth::client_ip;
use crate::http::error::{ApiError, ApiResult, ErrorBody, Resource};
use crate::http::AppState;
use crate::monitoring::heartbeats::{NewHeartbeat, WriteError};
use crate::monitoring::push_record::PushEffect;
use crate::monitoring::LOCAL_REGION;
use crate::push::idempotency_key;

pub fn router() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/push/{token}",
        post_with(push, |op| {
            described(op.id("pushHeartbeat").summary(
                "Check in from a cron job or pipeline: the token in the path is the only credential",
            ))
        })
        // Healthchecks.io-style clients check in with `curl -fsS URL`, a GET; HEAD answers the
        // same without the body.
        .get_with(push, |op| {
            described(op.id("pushHeartbeatGet").summary(
                "The same check-in as POST, for clients that send GET (or HEAD)",
            ))
        }),
    )
}

/// What POST and GET share in the document.
fn described(op: TransformOperation<'_>) -> TransformOperation<'_> {
    op.tag("Push")
        .description(
            "Records a heartbeat for the push monitor the token belongs to and answers \
             202 once it is durably stored. `status=down` (case-insensitive) marks the \
             monitor DOWN at once; `up` (the default) is a successful check-in. \
             `message` (alias `msg`; `message` wins) is stored on the heartbeat, cut to \
             4 KiB. Unknown query parameters and any request body are ignored. \
             `Idempotency-Key` (printable ASCII, at most 200 characters) collapses \
             retries into one heartbeat for 24 hours; a malformed key is ignored. \
             A push to a paused monitor is recorded but changes nothing. 60 requests \
             per minute per token. `POST`, `GET` and `HEAD` behave the same (`HEAD` \
             answers without a body), so `curl -fsS URL` works as a check-in.",
        )
        .response_with::<404, Json<ErrorBody>, _>(|r| {
            r.description("Unknown, old or regenerated token (`PUSH_TOKEN_NOT_FOUND`)")
        })
        .response_with::<413, Json<ErrorBody>, _>(|r| {
            r.description("Body over the size limit (`PAYLOAD_TOO_LARGE`)")
        })
        .response_with::<429, Json<ErrorBody>, _>(|r| {
            r.description(
                "Over 60 requests a minute for this token (`RATE_LIMITED`, with `Retry-After`)",
            )
        })
        .response_with::<503, Json<ErrorBody>, _>(|r| {
            r.description(
                "The database cannot take the push now; nothing was stored: retry after \
                 `Retry-After` seconds (`SERVICE_UNAVAILABLE`)",
            )
        })
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PushPath {
    /// The push monitor's secret token.
    pub token: String,
}

/// The query parameters a push reads; anything else in the query is ignored.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PushQuery {
    /// `up` (default) or `down`, case-insensitive.
    pub status: Option<String>,
    /// Shown on the heartbeat; cut to 4 KiB.
    pub message: Option<String>,
    /// Alias of `message`; `message` wins when both are sent.
    pub msg: Option<String>,
}

/// The query, read leniently: the first value of each known parameter, unknown ones and
/// repeats ignored (cron one-liners should not fail over a stray `&`).
pub struct PushParams(PushQuery);

impl FromRequestParts<AppState> for PushParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let mut q = PushQuery::default();
        let query = parts.uri.query().unwrap_or("");
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match k.as_ref() {
                "status" => &mut q.status,
                "message" => &mut q.message,
                "msg" => &mut q.msg,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v.into_owned());
            }
        }
        Ok(PushParams(q))
    }
}

impl aide::OperationInput for PushParams {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <axum::extract::Query<PushQuery> as aide::OperationInput>::operation_input(ctx, operation);
    }
}

/// The body of a successful push.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = crate::schema::exact_object)]
pub struct PushAccepted {
    /// Always `true`.
    pub ok: bool,
}

async fn push(
    State(state): State<AppState>,
    Path(p): Path<PushPath>,
    PushParams(q): PushParams,
    parts: PushHeaders,
) -> ApiResult<Accepted<PushAccepted>> {
    let hash = secrets::hash(&p.token);
    let resolved = state.push_tokens().resolve(state.db(), &hash).await;
    let Some(target) = resolved.map_err(|e| {
        if unreachable_store(&e) {
            store_unavailable(&e)
        } else {
            ApiError::from(e)
        }
    })?
    else {
        if let Some(ip) = parts.ip.as_deref() {
            state
                .limits()
                .push_unknown_ip
                .check(ip)
                .map_err(|retry_after| DomainError::RateLimited { retry_after })?;
        }
        return Err(DomainError::NotFound(Resource::PushToken).into());
    };
    state
        .limits()
        .push
        .check_key(&target.monitor_seq)
        .map_err(|retry_after| DomainError::RateLimited { retry_after })?;
    let status = match q.status.as_deref() {
        None => PushStatus::Up,
        Some(s) => PushStatus::parse(s).ok_or_else(|| {
            ApiError::field("status", "must be `up` or `down` (case-insensitive)")
        })?,
    };
    let mut hb = NewHeartbeat::new(
        &target.monitor_id,
        target.monitor_seq,
        state.clock().now_ms(),
        LOCAL_REGION,
        match status {
            PushStatus::Up => Status::Up,
            PushStatus::Down => Status::Down,
        },
        0.0,
    );
    hb.message = q.message.or(q.msg).filter(|m| !m.is_empty());
    hb.push = Some(PushEffect::Push {
        status,
        idempotency_key: parts.idempotency_key,
    });
    match state.heartbeats().submit(hb).await {
        Ok(_) | Err(WriteError::Repeated) => Ok(Accepted(PushAccepted { ok: true })),
        Err(WriteError::MonitorGone) => {
            state.push_tokens().forget(&target.monitor_id);
            Err(DomainError::NotFound(Resource::PushToken).into())
        }
        // The writer could not commit (the database is down or gone read-only) or is
        // stopping: nothing was stored, and the same push later may succeed.
        Err(e @ (WriteError::Database(_) | WriteError::Closed)) => Err(store_unavailable(&e)),
        Err(e) => Err(DomainError::Internal(anyhow::anyhow!("push not recorded: {e}")).into()),
    }
}

/// The answer to a push the database could not take: 503 `SERVICE_UNAVAILABLE` with
/// `Retry-After`, as `/readyz` answers meanwhile, so that a client retries instead of
/// treating the check-in as refused.
fn store_unavailable(e: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(error = %e, "push not recorded: the database is unavailable");
    DomainError::Unavailable.into()
}

/// Whether `e` says the database cannot be reached or cannot write now (connection lost or
/// refused, pool exhausted, server shutting down, file locked, unreadable or read-only),
/// as opposed to a fault in the request or the code.
fn unreachable_store(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return matches!(
            e,
            sqlx::Error::Io(_)
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::WorkerCrashed
        );
    };
    let code = db.code().unwrap_or_default();
    // PostgreSQL: connection exceptions (08), operator intervention such as a shutdown
    // (57P), insufficient resources (53).
    if ["08", "57P", "53"].iter().any(|p| code.starts_with(p)) {
        return true;
    }
    // SQLite (extended codes keep the primary code in the low byte): BUSY, LOCKED,
    // READONLY, IOERR, FULL, CANTOPEN.
    code.parse::<i64>()
        .is_ok_and(|n| matches!(n & 0xff, 5 | 6 | 8 | 10 | 13 | 14))
}

/// The headers a push reads.
pub struct PushHeaders {
    idempotency_key: Option<String>,
    ip: Option<String>,
}

impl FromRequestParts<AppState> for PushHeaders {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        Ok(PushHeaders {
            idempotency_key: idempotency_key(
                parts.headers.get("idempotency-key").map(|v| v.as_bytes()),
            ),
            ip: client_ip(parts, state.config().trust_forwarded_for),
        })
    }
}

impl aide::OperationInput for PushHeaders {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        super::extract::optional_header(
            ctx,
            operation,
            "Idempotency-Key",
            "Retries with the same key collapse into one heartbeat for 24 hours. Printable \
             ASCII, at most 200 characters; a malformed key is ignored.",
        );
    }
}
