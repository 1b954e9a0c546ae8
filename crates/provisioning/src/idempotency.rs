//! `Idempotency-Key` on POST, PUT, PATCH and DELETE: a repeat of a request
//! (same caller, key, method, path, `If-Match`, `If-None-Match`,
//! `Content-Type`, change reason and body) within the window gets the first answer again instead
//! of running again; the same key with another request is a 422. The record of the answer is written in the write's own
//! transaction (`authz_core::store::idempotency`), so a write whose answer was lost
//! (a timeout after DynamoDB committed) is answered on retry, never redone
//! into a 409 or 412.

use axum::body::{to_bytes, Body};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::items::AnyItem;
use authz_core::model::keys;
use authz_core::model::values::{TenantStatus, UserStatus};
use authz_core::store::idempotency::{with_claim, Claim, Record, KEY_FIELD};
use authz_core::Store;

use crate::error::ApiError;
use crate::extract::{Actor, MAX_BODY_BYTES};
use crate::views::{
    resource, GrantView, InvitationView, PolicyView, RoleView, TenantView, UserView,
};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// Set on an answer that is a replay of the first one.
pub const REPLAYED: &str = "idempotent-replayed";
/// Writes whose first answer the record cannot rebuild: an email address
/// (which the record does not keep) and, for two of them, its one-time
/// verification code (stored only hashed). A repeat is told the write was
/// applied instead of getting a wrong answer.
const UNREPEATABLE: [&str; 3] = [
    "/users/{userId}/emails",
    "/users/{userId}/emails/{emailId}/code",
    "/users/{userId}/emails/{emailId}/verify",
];
/// Longest key accepted.
pub const MAX_KEY: usize = 255;

/// The middleware (`axum::middleware::from_fn_with_state`).
pub async fn layer(
    State(store): State<Store>,
    actor: Actor,
    request: Request,
    next: Next,
) -> Response {
    let uri = request.uri().clone();
    match guarded(&store, actor, request, next).await {
        Ok(response) => response,
        Err(e) => crate::handlers::scim::or_scim(&uri, e),
    }
}

async fn guarded(
    store: &Store,
    actor: Actor,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let writes = matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    let Some(raw) = request.headers().get(HEADER).filter(|_| writes) else {
        return Ok(next.run(request).await);
    };
    let key = raw
        .to_str()
        .ok()
        .filter(|k| valid_key(k))
        .ok_or_else(|| {
            ApiError::invalid(
                KEY_FIELD,
                format!("must be 1-{MAX_KEY} characters of A-Z a-z 0-9 - _ . :"),
            )
        })?
        .to_string();
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::PayloadTooLarge {
            limit: MAX_BODY_BYTES,
        })?;
    let hash = request_hash(
        &parts,
        authz_core::store::history::reason().as_deref(),
        &bytes,
    );
    // Keys are the caller's own: "-" is a caller without an identity (the
    // local tooling).
    let record_key = keys::idempotency(actor.as_deref().unwrap_or("-"), &key);
    let rebuild = |parts: &axum::http::request::Parts| {
        Request::from_parts(parts.clone(), Body::from(bytes.clone()))
    };

    if let Some(record) = store.idempotency_record(&record_key).await? {
        return replay(record, &hash, rebuild(&parts), next).await;
    }
    let claim = Claim::new(record_key.clone(), hash.clone());
    let (response, _) = with_claim(claim, next.clone().run(rebuild(&parts))).await;
    // Another request with this key committed first: answer as it did.
    if response.status() == StatusCode::CONFLICT {
        if let Some(record) = store.idempotency_record(&record_key).await? {
            return replay(record, &hash, rebuild(&parts), next).await;
        }
    }
    Ok(response)
}

fn valid_key(key: &str) -> bool {
    (1..=MAX_KEY).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// The request headers a handler reads that change what a write does:
/// the version it is conditioned on, and whether the body is JSON. (The
/// reason a change is recorded with is digested as the change layer
/// found it, from `X-Change-Reason` or the body.)
const DIGESTED_HEADERS: [axum::http::HeaderName; 2] = [
    axum::http::header::IF_MATCH,
    axum::http::header::CONTENT_TYPE,
];

/// SHA-256 of everything that decides what a write does: the method, the
/// path with its query, the headers a handler reads, the reason, and the
/// body. Each part is length-prefixed (an absent one has its own prefix),
/// so no two requests that differ share a digest.
fn request_hash(parts: &axum::http::request::Parts, reason: Option<&str>, body: &[u8]) -> String {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    let mut add = |part: Option<&[u8]>| match part {
        Some(bytes) => {
            ctx.update(&(bytes.len() as u64).to_le_bytes());
            ctx.update(bytes);
        }
        None => ctx.update(&u64::MAX.to_le_bytes()),
    };
    add(Some(parts.method.as_str().as_bytes()));
    add(Some(
        parts
            .uri
            .path_and_query()
            .map_or("", |p| p.as_str())
            .as_bytes(),
    ));
    for name in &DIGESTED_HEADERS {
        add(parts.headers.get(name).map(|v| v.as_bytes()));
    }
    add(reason.map(str::as_bytes));
    add(Some(body));
    // Read by a grant's PUT alone, and digested only when sent: the
    // digests of requests without it stay what they were.
    if let Some(value) = parts.headers.get(axum::http::header::IF_NONE_MATCH) {
        add(Some(value.as_bytes()));
    }
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The first answer again, rebuilt from the entity the write stored (the
/// same view, status and ETag). A delete of a tenant or user that was still
/// running is asked again instead (a delete is idempotent, and its answer,
/// 202 or 204, says how far the cleanup is now).
async fn replay(
    record: Record,
    hash: &str,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if record.request_hash != hash {
        return Err(ApiError::IdempotencyKeyReused);
    }
    let status = if record.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let unrepeatable = request
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|route| UNREPEATABLE.contains(&route.as_str()));
    let mut response = match record.entity {
        None if unrepeatable => return Err(ApiError::AnswerNotRepeatable),
        None => StatusCode::NO_CONTENT.into_response(),
        Some(item) => match AnyItem::decode(item)? {
            AnyItem::Tenant(t) => {
                if t.status == TenantStatus::Deleting {
                    return Ok(next.run(request).await);
                }
                resource(status, Some(t.stamp.version), TenantView::from(t))
            }
            AnyItem::User(u) => {
                if u.status == UserStatus::Deleting {
                    return Ok(next.run(request).await);
                }
                resource(status, Some(u.stamp.version), UserView::from(u))
            }
            AnyItem::Role(r) => resource(status, Some(r.stamp.version), RoleView::from(r)),
            AnyItem::TenantGrant(g) => resource(status, Some(g.stamp.version), GrantView::from(g)),
            AnyItem::Policy(p) => resource(status, None, PolicyView::from(p)),
            AnyItem::Invitation(i) => (status, Json(InvitationView::from(i))).into_response(),
            AnyItem::Other(t) => {
                return Err(ApiError::Core(authz_core::Error::internal(format!(
                    "an idempotency record answering with an item of Type {t:?}"
                ))))
            }
            other => {
                return Err(ApiError::Core(authz_core::Error::internal(format!(
                    "an idempotency record answering with a {}",
                    other.type_name()
                ))))
            }
        },
    };
    response.headers_mut().insert(
        HeaderName::from_static(REPLAYED),
        HeaderValue::from_static("true"),
    );
    Ok(response)
}
