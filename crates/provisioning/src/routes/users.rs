//! `/users`: create, list by status, get by id or email, update, hard
//! delete, and a user's tenant grants.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::input::{CreateUser, UpdateUser};
use authz_core::items::User;
use authz_core::values::{Email, EmailPrefix, UserId, UserStatus};
use authz_core::{Deletion, Store, INLINE_DELETE_BUDGET};

use crate::error::ApiError;
use crate::extract::{expected_version, Actor, JsonBody, QueryParams};
use crate::views::{resource, GrantView, ListView, UserView};

type ApiResult = Result<Response, ApiError>;

fn user_response(status: StatusCode, user: User) -> Response {
    resource(status, Some(user.stamp.version), UserView::from(user))
}

pub async fn create(
    State(store): State<Store>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateUser>,
) -> ApiResult {
    let new = request.validate()?;
    let user = store.create_user(&new, &actor.global()).await?;
    Ok(user_response(StatusCode::CREATED, user))
}

/// `?status=` (default `active`), `?emailPrefix=`, `?limit=`, `?cursor=`:
/// in email order.
pub async fn list(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(
        query.as_deref(),
        &["status", "emailPrefix", "limit", "cursor"],
    )?;
    let prefix = EmailPrefix::parse(params.get("emailPrefix").unwrap_or_default())?;
    let status = match params.get("status") {
        Some(s) => UserStatus::parse(s)?,
        None => UserStatus::Active,
    };
    let page = store.list_users(status, &prefix, &params.page()?).await?;
    Ok(Json(ListView::<UserView>::from_page(page)).into_response())
}

pub async fn get(State(store): State<Store>, Path(id): Path<String>) -> ApiResult {
    let id = UserId::parse(&id)?;
    let user = store.user(&id).await?.ok_or(ApiError::not_found("user"))?;
    Ok(user_response(StatusCode::OK, user))
}

pub async fn by_email(State(store): State<Store>, Path(email): Path<String>) -> ApiResult {
    let email = Email::parse(&email)?;
    let user = store
        .user_by_email(&email)
        .await?
        .ok_or(ApiError::not_found("user"))?;
    Ok(user_response(StatusCode::OK, user))
}

pub async fn update(
    State(store): State<Store>,
    Path(id): Path<String>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdateUser>,
) -> ApiResult {
    let id = UserId::parse(&id)?;
    let changes = request.validate()?;
    let version = expected_version(&headers, request.version)?;
    let user = store
        .update_user(&id, &changes, version, &actor.global())
        .await?;
    Ok(user_response(StatusCode::OK, user))
}

/// Hard delete: 204 when nothing of the user is left (also when there was
/// no such user); 202 with the user, `status: deleting`, when its tenant
/// grants are still being removed in the background. Its email, phone and
/// username are free, and it is denied everywhere, either way.
pub async fn delete(State(store): State<Store>, actor: Actor, Path(id): Path<String>) -> ApiResult {
    let id = UserId::parse(&id)?;
    crate::change::require_reason()?;
    match store
        .delete_user(&id, INLINE_DELETE_BUDGET, actor.as_deref())
        .await?
    {
        Deletion::Done => Ok(StatusCode::NO_CONTENT.into_response()),
        Deletion::Running(user) => Ok(user_response(StatusCode::ACCEPTED, user)),
    }
}

/// The user's tenant grants (GSI1), paged.
pub async fn tenants(
    State(store): State<Store>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let id = UserId::parse(&id)?;
    let params = QueryParams::parse(query.as_deref(), &["limit", "cursor"])?;
    let page = store.user_grants(&id, &params.page()?).await?;
    Ok(Json(ListView::<GrantView>::from_page(page)).into_response())
}
