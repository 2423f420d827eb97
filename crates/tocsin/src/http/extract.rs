//! Request extractors and response wrappers every resource uses, so that malformed input gets
//! the same precise envelope everywhere: JSON bodies (content type, size, syntax, types, then
//! domain validation, with the dotted path of each failure), query strings, `If-Match`, and
//! `ETag` / `201 Created` responses.

use aide::generate::GenContext;
use aide::openapi::{
    Header, Operation, Parameter, ParameterData, ParameterSchemaOrContent, ReferenceOr,
    Response as OaResponse, SchemaObject,
};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::http::error::{error_response, ApiError};
use crate::http::input_errors::{self, Failure};
use crate::http::AppState;

/// The largest request body accepted anywhere.
pub const BODY_LIMIT: usize = 1024 * 1024;

/// Domain validation after deserialization (the trait lives with the typed inputs).
pub use crate::domain::input::Validate;

/// Converts serde_path_to_error's `a.b[0].c` into the envelope's `a.b.0.c`.
pub fn dotted(path: &serde_path_to_error::Path) -> Option<String> {
    let text = path.to_string();
    if text == "." || text.is_empty() {
        return None;
    }
    Some(
        text.replace('[', ".")
            .replace(']', "")
            .trim_start_matches('.')
            .to_string(),
    )
}

/// A JSON body, validated.
pub struct ApiJson<T>(pub T);

impl<T> FromRequest<AppState> for ApiJson<T>
where
    T: DeserializeOwned + Validate + Send,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| {
                let mime = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json"
                    || (mime.starts_with("application/") && mime.ends_with("+json"))
            })
            .unwrap_or(false);
        if !is_json {
            return Err(ApiError::UnsupportedMediaType);
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| body_error(&e))?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Why a body could not be read: it stopped arriving within the body timeout
/// ([`crate::http::serve`]), or it was over the limit.
pub fn body_error(e: &(dyn std::error::Error + 'static)) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<crate::http::serve::BodyTimedOut>() {
            return ApiError::RequestTimeout;
        }
        cause = c.source();
    }
    ApiError::PayloadTooLarge
}

/// Deserializes and validates a JSON document: exactly one JSON value (whitespace around it
/// allowed, nothing else), with no NUL character in any string or key.
pub fn parse_json<T: DeserializeOwned + Validate>(bytes: &[u8]) -> Result<T, ApiError> {
    if let Some(field) = nul_in_json(bytes) {
        return Err(nul_refused(field));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let syntax = |inner: serde_json::Error, path: Option<String>| {
        let message = inner.to_string();
        match inner.classify() {
            serde_json::error::Category::Data => translated(&message, path.as_deref()),
            _ => ApiError::form(input_errors::document(&message)),
        }
    };
    let value: T = match serde_path_to_error::deserialize(&mut *de) {
        Ok(v) => v,
        Err(err) => {
            let path = dotted(err.path());
            return Err(syntax(err.into_inner(), path));
        }
    };
    // `{...} garbage` and `{...}{...}` are not one document.
    de.end().map_err(|e| syntax(e, None))?;
    let errors = value.validate();
    if errors.is_empty() {
        Ok(value)
    } else {
        Err(errors.into())
    }
}

/// What a NUL character in a string is told. PostgreSQL cannot store one in text, and no
/// field of this API has a use for it, so it is refused on both backends before any parsing.
const NUL_REFUSED: &str = "may not contain the NUL character (U+0000)";

/// The validation error for a NUL in `field` (`None`: the document or query as a whole).
pub fn nul_refused(field: Option<String>) -> ApiError {
    match field {
        Some(f) => ApiError::field(f, NUL_REFUSED),
        None => ApiError::form(format!("The request {NUL_REFUSED}.")),
    }
}

/// The dotted path of the first string (or key) holding U+0000 in a JSON document, if any:
/// `Some(None)` when it is the document itself. In JSON a NUL can only be written as the
/// escape `\u0000`, so documents without that text are not parsed twice.
fn nul_in_json(bytes: &[u8]) -> Option<Option<String>> {
    if !bytes.windows(6).any(|w| w == b"\\u0000") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    fn walk(v: &serde_json::Value, path: &mut Vec<String>) -> Option<Option<String>> {
        let here = |path: &[String]| (!path.is_empty()).then(|| path.join("."));
        match v {
            serde_json::Value::String(s) if s.contains('\0') => Some(here(path)),
            serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                path.push(i.to_string());
                let found = walk(item, path);
                path.pop();
                found
            }),
            serde_json::Value::Object(map) => map.iter().find_map(|(k, item)| {
                path.push(k.replace('\0', ""));
                let found = if k.contains('\0') {
                    Some(here(path))
                } else {
                    walk(item, path)
                };
                path.pop();
                found
            }),
            _ => None,
        }
    }
    walk(&value, &mut Vec::new())
}

/// A deserializer's failure in the API's words, on the field it concerns.
fn translated(message: &str, path: Option<&str>) -> ApiError {
    match input_errors::translate(message, path) {
        Failure::Field(f) => ApiError::from(vec![f]),
        Failure::Document(d) => ApiError::form(d),
    }
}

impl<T: JsonSchema> aide::OperationInput for ApiJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <axum::Json<T> as aide::OperationInput>::operation_input(ctx, operation);
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![
            (
                Some(400),
                error_response(
                    ctx,
                    "Validation failed (`VALIDATION_ERROR`, with `field` and `flattened`)",
                ),
            ),
            (
                Some(413),
                error_response(ctx, "Body larger than 1 MiB (`PAYLOAD_TOO_LARGE`)"),
            ),
            (
                Some(415),
                error_response(ctx, "Body is not JSON (`UNSUPPORTED_MEDIA_TYPE`)"),
            ),
        ]
    }
}

/// Documents an optional string request header of an operation.
pub fn optional_header(
    ctx: &mut GenContext,
    operation: &mut Operation,
    name: &str,
    description: &str,
) {
    let schema = ctx.schema.subschema_for::<String>();
    operation
        .parameters
        .push(ReferenceOr::Item(Parameter::Header {
            parameter_data: ParameterData {
                name: name.into(),
                description: Some(description.into()),
                required: false,
                deprecated: None,
                format: ParameterSchemaOrContent::Schema(SchemaObject {
                    json_schema: schema,
                    example: None,
                    external_docs: None,
                }),
                example: None,
                examples: Default::default(),
                explode: None,
                extensions: Default::default(),
            },
            style: Default::default(),
        }));
}

/// A query string, validated.
pub struct ApiQuery<T>(pub T);

impl<T> FromRequestParts<AppState> for ApiQuery<T>
where
    T: DeserializeOwned + Validate + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &AppState) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        let value: T = serde_path_to_error::deserialize(de).map_err(|err| {
            let path = dotted(err.path());
            translated(&err.into_inner().to_string(), path.as_deref())
        })?;
        let errors = value.validate();
        if errors.is_empty() {
            Ok(ApiQuery(value))
        } else {
            Err(errors.into())
        }
    }
}

impl<T: JsonSchema> aide::OperationInput for ApiQuery<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <axum::extract::Query<T> as aide::OperationInput>::operation_input(ctx, operation);
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![(
            Some(400),
            error_response(ctx, "Invalid query parameter (`VALIDATION_ERROR`)"),
        )]
    }
}

/// What a malformed `If-Match` is told.
const IF_MATCH_SYNTAX: &str =
    "must be an entity tag as the ETag header gave it, such as \"3\" (quotes included), or *";

/// The opaque part of an RFC 9110 entity tag (`"3"` or `W/"3"`), or `None` when `tag` is not
/// one. Written out because the grammar is two lines and the `http` crate has no parser for it.
fn entity_tag(tag: &str) -> Option<&str> {
    let quoted = tag.strip_prefix("W/").unwrap_or(tag);
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    inner
        .bytes()
        .all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
        .then_some(inner)
}

/// A version no resource ever has (versions start at 1).
const NEVER_ISSUED: i64 = -1;

/// The `If-Match` version of a write, if the client sent one. `*` matches any version.
pub struct IfMatch(pub Option<i64>);

impl FromRequestParts<AppState> for IfMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &AppState) -> Result<Self, ApiError> {
        let Some(raw) = parts.headers.get(header::IF_MATCH) else {
            return Ok(IfMatch(None));
        };
        let not_a_tag = || ApiError::field("If-Match", IF_MATCH_SYNTAX);
        let text = raw.to_str().map_err(|_| not_a_tag())?.trim();
        if text == "*" {
            return Ok(IfMatch(None));
        }
        let tags = text
            .split(',')
            .map(|t| entity_tag(t.trim()))
            .collect::<Option<Vec<&str>>>()
            .ok_or_else(not_a_tag)?;
        // Only the first tag matters: this server issues exactly one per representation.
        let first = tags.first().copied().unwrap_or_default();
        match first.parse::<i64>() {
            Ok(v) => Ok(IfMatch(Some(v))),
            // A tag this server never issued matches no version: the write answers 409 if the
            // resource exists and 404 if it does not, like any stale tag.
            Err(_) => Ok(IfMatch(Some(NEVER_ISSUED))),
        }
    }
}

impl aide::OperationInput for IfMatch {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        optional_header(
            ctx,
            operation,
            "If-Match",
            "The `ETag` of the version this write is based on; a stale one gets 409 `VERSION_CONFLICT`.",
        );
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        _op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        vec![(
            Some(409),
            error_response(
                ctx,
                "The resource changed since it was read (`VERSION_CONFLICT`)",
            ),
        )]
    }
}

pub use crate::domain::check_write;

/// A 200 JSON response carrying the resource's version as its `ETag`.
pub struct Tagged<T>(pub T, pub i64);

impl<T: Serialize> IntoResponse for Tagged<T> {
    fn into_response(self) -> Response {
        let mut response = axum::Json(self.0).into_response();
        if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", self.1)) {
            response.headers_mut().insert(header::ETAG, v);
        }
        response
    }
}

fn etag_header(ctx: &mut GenContext) -> Header {
    let schema = ctx.schema.subschema_for::<String>();
    Header {
        description: Some("The resource's version; send it back in `If-Match`.".into()),
        style: Default::default(),
        required: true,
        deprecated: None,
        format: ParameterSchemaOrContent::Schema(SchemaObject {
            json_schema: schema,
            example: None,
            external_docs: None,
        }),
        example: None,
        examples: Default::default(),
        extensions: Default::default(),
    }
}

impl<T: JsonSchema> aide::OperationOutput for Tagged<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        let mut res = <axum::Json<T> as aide::OperationOutput>::operation_response(ctx, op)?;
        res.headers
            .insert("ETag".into(), ReferenceOr::Item(etag_header(ctx)));
        Some(res)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(200), r)])
            .unwrap_or_default()
    }
}

/// A 201 JSON response.
pub struct Created<T>(pub T);

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (StatusCode::CREATED, axum::Json(self.0)).into_response()
    }
}

impl<T: JsonSchema> aide::OperationOutput for Created<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        <axum::Json<T> as aide::OperationOutput>::operation_response(ctx, op)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(201), r)])
            .unwrap_or_default()
    }
}

/// A 202 JSON response: the work was accepted and goes on in the background.
pub struct Accepted<T>(pub T);

impl<T: Serialize> IntoResponse for Accepted<T> {
    fn into_response(self) -> Response {
        (StatusCode::ACCEPTED, axum::Json(self.0)).into_response()
    }
}

impl<T: JsonSchema> aide::OperationOutput for Accepted<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, op: &mut Operation) -> Option<OaResponse> {
        <axum::Json<T> as aide::OperationOutput>::operation_response(ctx, op)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        op: &mut Operation,
    ) -> Vec<(Option<u16>, OaResponse)> {
        Self::operation_response(ctx, op)
            .map(|r| vec![(Some(202), r)])
            .unwrap_or_default()
    }
}

/// 204 with no body.
pub use axum::response::NoContent;
