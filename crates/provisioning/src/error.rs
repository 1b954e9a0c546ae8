//! The API's error responses, and the one place where an error becomes an
//! HTTP status: `{"error": {"code", "message", "field"?}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use authz_core::model::values::Invalid;
use authz_core::{Error, Resource};

/// Seconds a client should wait before retrying a 503 (a 429 says its own).
const RETRY_AFTER_SECONDS: &str = "1";

/// An error the API answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// A domain or storage outcome from the core crate.
    Core(Error),
    /// The request body is larger than the API accepts.
    PayloadTooLarge { limit: usize },
    /// The request has a body that is not `application/json`.
    UnsupportedMediaType,
    /// No route matches the path.
    RouteNotFound,
    /// The path exists but not with this method.
    MethodNotAllowed,
    /// An `Idempotency-Key` already answered a different request.
    IdempotencyKeyReused,
    /// An `Idempotency-Key` answered a write whose answer cannot be given
    /// again (an address and its one-time code, which is never stored).
    AnswerNotRepeatable,
    /// The request carries no authorizer context: it did not come through
    /// API Gateway's authorizer.
    Unauthenticated,
    /// The authorizer's answer stopped being right (`accessUntil` passed:
    /// a grant or global roles ended) and API Gateway reused it anyway.
    AccessEnded,
    /// The caller answers an invitation addressed to none of their verified
    /// addresses.
    NotInvitee,
    /// `If-Match` and the body's `version` name two versions: they cannot
    /// both be the current one, so the preconditions fail (412).
    VersionsDisagree,
    /// `If-Match` (the grant at a version) and `If-None-Match: *` (no
    /// grant) cannot both hold.
    PreconditionsContradict,
    /// `POST /users/me` from someone the authorizer did not decide is
    /// signing up (a user already, or a token from an issuer closed to it).
    NotSigningUp,
}

/// Every error's body: `{"error": {...}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

/// What went wrong: a stable `code` (`invalid`, `not_found`, `conflict`,
/// `precondition_failed`, `forbidden`, `unavailable`, ...), a message for
/// people, and the field or the missing permission when there is one.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail<'a> {
    code: &'a str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    /// For a 403: the permission the caller lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    permission: Option<&'a str>,
    /// For a 403: when what the caller holds of it ends, if they hold it
    /// for less time than the write would give it (seconds since the
    /// epoch).
    #[serde(rename = "heldUntil", skip_serializing_if = "Option::is_none")]
    held_until: Option<u64>,
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self::Core(e)
    }
}

impl From<Invalid> for ApiError {
    fn from(e: Invalid) -> Self {
        Self::Core(e.into())
    }
}

impl ApiError {
    /// 400 for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Core(Error::Invalid {
            field: field.into(),
            reason: reason.into(),
        })
    }

    pub fn not_found(resource: authz_core::Resource) -> Self {
        Self::Core(Error::not_found(resource))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (permission, held_until) = match &self {
            ApiError::Core(Error::Forbidden {
                permission,
                held_until,
            }) => (Some(permission.as_str()), *held_until),
            _ => (None, None),
        };
        let (status, code, message, field) = self.described();
        let body = ErrorBody {
            error: ErrorDetail {
                code,
                message,
                field,
                permission,
                held_until,
            },
        };
        let mut response = (status, Json(body)).into_response();
        let retry_after = match &self {
            ApiError::Core(Error::RateLimited { retry_after, .. }) => {
                HeaderValue::from(retry_after.max(&1).to_owned())
            }
            _ => HeaderValue::from_static(RETRY_AFTER_SECONDS),
        };
        if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, retry_after);
        }
        response
    }
}

impl ApiError {
    /// Its status, stable code, message for people and field: the one
    /// mapping from an error to what a client is told (the SCIM routes
    /// dress the same in SCIM's error body, `crate::handlers::scim`).
    pub(crate) fn described(&self) -> (StatusCode, &'static str, String, Option<&str>) {
        match self {
            ApiError::Core(e) => match e {
                Error::Invalid { field, reason } => (
                    StatusCode::BAD_REQUEST,
                    "invalid",
                    format!("{field}: {reason}"),
                    Some(field.as_str()),
                ),
                Error::NotFound { resource } => (
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("{resource} not found"),
                    None,
                ),
                Error::Conflict { field } => (
                    StatusCode::CONFLICT,
                    "conflict",
                    format!("{field} is already in use"),
                    Some(field.as_str()),
                ),
                Error::StateConflict { field, reason } => (
                    StatusCode::CONFLICT,
                    "conflict",
                    format!("{field}: {reason}"),
                    Some(field.as_str()),
                ),
                Error::Gone { resource } => (
                    StatusCode::GONE,
                    "gone",
                    format!("{resource} has expired"),
                    None,
                ),
                Error::AlreadyExists {
                    resource: Resource::TenantGrant,
                } => (
                    StatusCode::PRECONDITION_FAILED,
                    "precondition_failed",
                    "userId: is a member of this tenant already (the write sent If-None-Match: *): change their roles with If-Match and their grant's version".to_string(),
                    Some("userId"),
                ),
                Error::AlreadyExists { resource } => (
                    StatusCode::PRECONDITION_FAILED,
                    "precondition_failed",
                    format!("{resource} exists already (the write sent If-None-Match: *)"),
                    None,
                ),
                Error::PreconditionFailed { resource } => (
                    StatusCode::PRECONDITION_FAILED,
                    "precondition_failed",
                    format!(
                        "{resource} was modified: read it again and retry with its current version"
                    ),
                    None,
                ),
                Error::Forbidden {
                    permission,
                    held_until: None,
                } => (
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!(
                        "{permission} is required and you do not hold it where this write applies"
                    ),
                    None,
                ),
                Error::Forbidden {
                    permission,
                    held_until: Some(until),
                } => (
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!(
                        "{permission} is held where this write applies only until {until} (heldUntil; by the inviter or the accepting caller, for an invitation), and this write would give it for longer or without end"
                    ),
                    None,
                ),
                Error::OwnAddress => (
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "an address on your own record is proven only by its code, delivered to the address: you cannot vouch for it, make it your email by PATCH, or be shown its code".to_string(),
                    None,
                ),
                Error::RateLimited { what, retry_after } => (
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!(
                        "too many {what} by you in this scope: retry after {retry_after} s (Retry-After)"
                    ),
                    None,
                ),
                Error::Retryable { message } => {
                    tracing::warn!(error = %message, "retryable storage fault");
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "unavailable",
                        "temporarily unavailable, retry later".to_string(),
                        None,
                    )
                }
                Error::Internal { message } => {
                    tracing::error!(error = %message, "internal error");
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        "internal error".to_string(),
                        None,
                    )
                }
            },
            ApiError::PayloadTooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!("request body must be at most {limit} bytes"),
                None,
            ),
            ApiError::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "request body must be application/json".to_string(),
                None,
            ),
            ApiError::IdempotencyKeyReused => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                format!(
                    "{}: was used with a different request within the last {} minutes",
                    authz_core::store::idempotency::KEY_FIELD,
                    authz_core::store::idempotency::IDEMPOTENCY_WINDOW.as_secs() / 60
                ),
                Some(authz_core::store::idempotency::KEY_FIELD),
            ),
            ApiError::NotSigningUp => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "only the holder of a token whose identity is linked to no user, from an issuer open to sign-up, signs up"
                    .to_string(),
                None,
            ),
            ApiError::Unauthenticated => (
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "the request carries no authorizer context".to_string(),
                None,
            ),
            // As the authorizer words its own refusal of the same caller.
            ApiError::AccessEnded => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "the caller's access here has ended".to_string(),
                None,
            ),
            ApiError::AnswerNotRepeatable => (
                StatusCode::CONFLICT,
                "idempotency_answer_unavailable",
                format!(
                    "{}: the request was applied, and its answer cannot be given again (it showed a one-time verification code, which is never stored): list the user's emails to see the outcome, and ask for a new code if you need one",
                    authz_core::store::idempotency::KEY_FIELD
                ),
                Some(authz_core::store::idempotency::KEY_FIELD),
            ),
            ApiError::VersionsDisagree => (
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "version: differs from If-Match, so they cannot both be the current version: send one of them".to_string(),
                Some("version"),
            ),
            ApiError::PreconditionsContradict => (
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "If-None-Match: * asks that no grant exist and If-Match for its version: both cannot hold, send one of them".to_string(),
                Some("If-None-Match"),
            ),
            ApiError::NotInvitee => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "this invitation is for an address you have not verified".to_string(),
                None,
            ),
            ApiError::RouteNotFound => (
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route".to_string(),
                None,
            ),
            ApiError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed on this route".to_string(),
                None,
            ),
        }
    }
}
