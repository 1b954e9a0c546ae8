//! Change history, newest first: `/users/{userId}/history`,
//! `/tenants/{tenantId}/history`, `/roles/{roleId}/history`,
//! `/tenants/{tenantId}/members/{userId}/history`,
//! `/policies/{policyId}/history`. Readable after the resource is deleted.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::values::{PolicyId, RoleId, TenantId, UserId};
use authz_core::store::history::HistoryOf;
use authz_core::Store;

use crate::error::ApiError;
use crate::extract::{PageQuery, QueryParams};
use crate::views::{ChangeView, ListView};

type ApiResult = Result<Response, ApiError>;

async fn list(store: &Store, of: HistoryOf, query: Option<&str>) -> ApiResult {
    let asked = QueryParams::page_only(query)?;
    let page = store.history(of, &asked).await?;
    Ok(Json(ListView::<ChangeView>::from_page(page)).into_response())
}

#[utoipa::path(
    get,
    path = "/users/{userId}/history",
    operation_id = "getUserHistory",
    tag = "history",
    params(
        ("userId" = String, Path, description = "The user id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the user's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn user(
    State(store): State<Store>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(
        &store,
        HistoryOf::User(UserId::parse(&id)?),
        query.as_deref(),
    )
    .await
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/history",
    operation_id = "getTenantHistory",
    tag = "history",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn tenant(
    State(store): State<Store>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(
        &store,
        HistoryOf::Tenant(TenantId::parse(&id)?),
        query.as_deref(),
    )
    .await
}

#[utoipa::path(
    get,
    path = "/roles/{roleId}/history",
    operation_id = "getRoleHistory",
    tag = "history",
    params(
        ("roleId" = String, Path, description = "The role id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the role's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn role(
    State(store): State<Store>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(
        &store,
        HistoryOf::Role(RoleId::parse(&id)?),
        query.as_deref(),
    )
    .await
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/members/{userId}/history",
    operation_id = "getMemberHistory",
    tag = "history",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the grant's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn grant(
    State(store): State<Store>,
    Path((tenant, user)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let of = HistoryOf::Grant(TenantId::parse(&tenant)?, UserId::parse(&user)?);
    list(&store, of, query.as_deref()).await
}

#[utoipa::path(
    get,
    path = "/policies/{policyId}/history",
    operation_id = "getPolicyHistory",
    tag = "history",
    params(
        ("policyId" = String, Path, description = "The policy id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the policy's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn policy(
    State(store): State<Store>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(
        &store,
        HistoryOf::Policy(PolicyId::parse(&id)?),
        query.as_deref(),
    )
    .await
}
