//! `/users`: create, list by status, get by id or email, update, hard
//! delete, and a user's tenant grants.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{CreateUser, UpdateUser};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{optional_version, Actor, Id, JsonBody, PageQuery, QueryParams};
use crate::views::{resource, GrantView, ListView, UserView};
use authz_core::model::items::User;
use authz_core::model::values::{Email, EmailPrefix, UserId, UserStatus};
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::{Deletion, Store, INLINE_DELETE_BUDGET};

type ApiResult = Result<Response, ApiError>;

fn user_response(status: StatusCode, user: User) -> Response {
    resource(status, Some(user.stamp.version), UserView::from(user))
}

#[utoipa::path(
    post,
    path = "/users",
    operation_id = "createUser",
    tag = "users",
    request_body = CreateUser,
    responses(
        (status = 201, description = "The user", body = UserView),
        (status = 404, description = "No such role", body = ErrorBody),
        (status = 409, description = "The email, phone or username is taken", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateUser>,
) -> ApiResult {
    let new = request.validate()?;
    let caller = actor.global().giving(&new, &store, &policies).await?;
    let user = store.create_user(&new, &caller).await?;
    Ok(user_response(StatusCode::CREATED, user))
}

/// `?status=` (default `active`), `?emailPrefix=`, `?limit=`, `?cursor=`:
/// in email order.
#[utoipa::path(
    get,
    path = "/users",
    operation_id = "listUsers",
    tag = "users",
    params(
        ("status" = Option<String>, Query, description = "active (default) or suspended"),
        ("emailPrefix" = Option<String>, Query, description = "Only emails starting with it"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of users, in email order", body = ListView<UserView>),
    ),
)]
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
    let view = ListView::<UserView>::from_page(page)
        .named(&store, crate::views::user_names)
        .await?;
    Ok(Json(view).into_response())
}

/// What a person types into a picker to find a user, answered from the
/// table's indexes, never a scan: a user id; an issuer and a subject
/// separated by a space (`https://issuer subject`, the linked identity);
/// an email prefix (`ana@`, anything with an `@`); or otherwise a name
/// prefix and an email prefix at once (`ana` finds Ana López and
/// ana.b@corp.example), merged. Users of `status` (default `active`), a
/// page at a time (`limit` from each list, `cursor` of both).
#[utoipa::path(
    get,
    path = "/users/search",
    operation_id = "searchUsers",
    tag = "users",
    params(
        ("q" = String, Query, description = "A user id, `issuer subject`, an email prefix, or a name prefix"),
        ("status" = Option<String>, Query, description = "active (default), suspended or deleted"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the users it finds", body = ListView<UserView>),
    ),
)]
pub async fn search(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["q", "status", "limit", "cursor"])?;
    let status = match params.get("status") {
        Some(s) => UserStatus::parse(s)?,
        None => UserStatus::Active,
    };
    let among = authz_core::store::search::Among::Users(status);
    let ids = store
        .search(among, params.get("q"), &params.page()?)
        .await?;
    let found = authz_core::Page {
        items: store.users_with_status(&ids.items, status).await?,
        next_cursor: ids.next_cursor,
    };
    let view = ListView::<UserView>::from_page(found)
        .named(&store, crate::views::user_names)
        .await?;
    Ok(Json(view).into_response())
}

#[utoipa::path(
    get,
    path = "/users/{userId}",
    operation_id = "getUser",
    tag = "users",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The user, with the names of their global roles", body = UserView),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn get(State(store): State<Store>, Id(id): Id<UserId>) -> ApiResult {
    let user = store
        .user(&id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    let version = user.stamp.version;
    let mut view = UserView::from(user);
    view.names = Some(store.names(crate::views::user_names(&view)).await?);
    Ok(resource(StatusCode::OK, Some(version), view))
}

#[utoipa::path(
    get,
    path = "/users/by-email/{email}",
    operation_id = "getUserByEmail",
    tag = "users",
    params(
        ("email" = String, Path, description = "The address"),
    ),
    responses(
        (status = 200, description = "The user with this address (any of theirs)", body = UserView),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn by_email(State(store): State<Store>, Id(email): Id<Email>) -> ApiResult {
    let user = store
        .user_by_email(&email)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    Ok(user_response(StatusCode::OK, user))
}

#[utoipa::path(
    patch,
    path = "/users/{userId}",
    operation_id = "updateUser",
    tag = "users",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag (or `version` in the body); optional for a change that only takes access away (a status other than active, global roles removed, their end sooner), which then applies to the user as it stands"),
    ),
    request_body = UpdateUser,
    responses(
        (status = 200, description = "The updated user", body = UserView),
        (status = 403, description = "The change would give a permission the caller does not hold, or not for as long (named, with `heldUntil`): roles, a later `rolesExpireAt`, reactivating; or it sets the caller's own email on their own word", body = ErrorBody),
        (status = 404, description = "No such user or role", body = ErrorBody),
        (status = 409, description = "The email, phone or username is taken; or the user is the last platform administrator and the change (status, roles, `rolesExpireAt`) would leave the platform without one", body = ErrorBody),
        (status = 412, description = "The user changed since the version sent", body = ErrorBody),
    ),
)]
pub async fn update(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Id(id): Id<UserId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdateUser>,
) -> ApiResult {
    let changes = request.validate()?;
    let version = optional_version(&headers, request.version)?;
    let caller = actor.global().giving(&changes, &store, &policies).await?;
    let user = store.update_user(&id, &changes, version, &caller).await?;
    Ok(user_response(StatusCode::OK, user))
}

/// Hard delete: 204 when nothing of the user is left (also when there was
/// no such user); 202 with the user, `status: deleting`, when its tenant
/// grants are still being removed in the background. Its email, phone and
/// username are free, and it is denied everywhere, either way.
#[utoipa::path(
    delete,
    path = "/users/{userId}",
    operation_id = "deleteUser",
    tag = "users",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 204, description = "Nothing of the user is left"),
        (status = 202, description = "The user, status deleting: their grants are being removed", body = UserView),
        (status = 409, description = "The user is the last platform administrator: deleting them would leave the platform without one", body = ErrorBody),
    ),
)]
pub async fn delete(State(store): State<Store>, actor: Actor, Id(id): Id<UserId>) -> ApiResult {
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
#[utoipa::path(
    get,
    path = "/users/{userId}/tenants",
    operation_id = "listUserTenants",
    tag = "users",
    params(
        ("userId" = String, Path, description = "The user id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the user's tenant grants", body = ListView<GrantView>),
    ),
)]
pub async fn tenants(
    State(store): State<Store>,
    Id(id): Id<UserId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let asked = QueryParams::page_only(query.as_deref())?;
    let page = store.user_grants(&id, &asked).await?;
    let view = ListView::<GrantView>::from_page(page)
        .named(&store, crate::views::grant_names)
        .await?;
    Ok(Json(view).into_response())
}
