//! Who changes things and why: a layer that runs each request inside
//! `authz_core::store::history::with_context`, with the caller and the reason from
//! the `X-Change-Reason` header (percent-encoded UTF-8) or a top-level
//! `reason` in the JSON body
//! (taken out of the body before the handler reads it), or, for a tenant's
//! directory, the request id it sends.

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

use authz_core::store::history::{with_context, ChangeContext};

use crate::error::ApiError;
use crate::extract::{Actor, MAX_BODY_BYTES, SCIM_MAX_BODY_BYTES};

/// The header that says why a change is made.
pub const REASON_HEADER: &str = "X-Change-Reason";
/// Longest reason, in characters.
pub const REASON_MAX: usize = 1024;

fn checked(field: &str, reason: &str) -> Result<String, ApiError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > REASON_MAX {
        return Err(ApiError::invalid(
            field,
            format!("must be 1 to {REASON_MAX} characters"),
        ));
    }
    if reason.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(reason.to_string())
}

/// The reason a header carries: UTF-8, percent-encoded as
/// `encodeURIComponent` writes it (a header value is ASCII as browsers
/// send it), or as raw UTF-8 bytes. A `%` not followed by two hex digits
/// stands for itself. Errors name the field `reason`, as the body's do.
fn from_header(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(REASON_HEADER) else {
        return Ok(None);
    };
    let decoded = percent_encoding::percent_decode(value.as_bytes())
        .decode_utf8()
        .map_err(|_| {
            ApiError::invalid(
                "reason",
                "must be UTF-8 (in the X-Change-Reason header, percent-encoded)",
            )
        })?;
    checked("reason", &decoded).map(Some)
}

/// Takes `reason` out of a JSON object body; the body as it was otherwise.
fn from_body(bytes: &[u8]) -> Result<(Option<String>, Option<Vec<u8>>), ApiError> {
    // Most bodies carry none: they are not parsed twice.
    if !bytes.windows(8).any(|w| w == b"\"reason\"") {
        return Ok((None, None));
    }
    let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(bytes) else {
        return Ok((None, None));
    };
    match object.remove("reason") {
        None => Ok((None, None)),
        Some(Value::String(reason)) => {
            let body = serde_json::to_vec(&object)
                .map_err(|e| ApiError::invalid("body", e.to_string()))?;
            Ok((Some(checked("reason", &reason)?), Some(body)))
        }
        Some(_) => Err(ApiError::invalid("reason", "must be a string")),
    }
}

/// Whether the request is to a tenant's SCIM base.
fn is_scim(uri: &axum::http::Uri) -> bool {
    uri.path().starts_with("/scim/v2/")
}

/// The headers a directory names its request by (Entra ID's
/// `client-request-id`, or the common `X-Request-Id`).
const REQUEST_ID_HEADERS: [&str; 2] = ["client-request-id", "x-request-id"];

/// Why a directory's change is made, when it says nothing else: the
/// request it names, so that history leads back to the directory's log.
fn directory_request(uri: &axum::http::Uri, headers: &HeaderMap) -> Option<String> {
    if !is_scim(uri) {
        return None;
    }
    let id = REQUEST_ID_HEADERS
        .iter()
        .find_map(|h| headers.get(*h)?.to_str().ok())?;
    checked("reason", &format!("directory request {id}")).ok()
}

/// Runs the request with its caller and reason as the change context.
/// A refusal under a SCIM base is a SCIM error body, as every answer there.
pub async fn layer(request: Request, next: Next) -> Response {
    let uri = request.uri().clone();
    match prepare(request).await {
        Ok((context, request)) => with_context(context, next.run(request)).await,
        Err(e) => crate::handlers::scim::or_scim(&uri, e),
    }
}

async fn prepare(request: Request) -> Result<(ChangeContext, Request), ApiError> {
    let header = from_header(request.headers())?;
    let actor = request.extensions().get::<Actor>();
    let modified_by = actor.and_then(|a| a.as_deref().map(str::to_string));
    let platform = actor.is_some_and(|a| a.holds_globally("member:write"));
    let (parts, body) = request.into_parts();
    // The API's bodies are read one byte past its limit, for the JSON
    // extractor to refuse; a SCIM body past its own is refused here.
    let (limit, read) = if is_scim(&parts.uri) {
        (SCIM_MAX_BODY_BYTES, SCIM_MAX_BODY_BYTES)
    } else {
        (MAX_BODY_BYTES, MAX_BODY_BYTES + 1)
    };
    let bytes = to_bytes(body, read)
        .await
        .map_err(|_| ApiError::PayloadTooLarge { limit })?;
    // A SCIM body is the directory's resource: a `reason` in it is an
    // attribute like any other, never the change's reason.
    let (in_body, rewritten) = if is_scim(&parts.uri) {
        (None, None)
    } else {
        from_body(&bytes)?
    };
    let reason = match (header, in_body) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "reason",
                format!("give it once: in {REASON_HEADER} or in the body"),
            ))
        }
        (h, b) => h
            .or(b)
            .or_else(|| directory_request(&parts.uri, &parts.headers)),
    };
    let mut parts = parts;
    let body = match rewritten {
        Some(b) => {
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            Body::from(b)
        }
        None => Body::from(bytes),
    };
    Ok((
        ChangeContext {
            modified_by,
            reason,
            platform,
        },
        Request::from_parts(parts, body),
    ))
}

/// `Invalid { reason }` unless the request said why: deleting a tenant
/// or a user needs a reason.
pub fn require_reason() -> Result<(), ApiError> {
    match authz_core::store::history::reason() {
        Some(_) => Ok(()),
        None => Err(ApiError::invalid(
            "reason",
            format!("is required to delete a tenant or a user: say why in {REASON_HEADER} or the body's \"reason\""),
        )),
    }
}
