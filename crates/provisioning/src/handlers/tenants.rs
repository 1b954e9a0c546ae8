//! `/tenants`: create, list (by name prefix), get by id or name, rename,
//! delete.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{CreateTenant, UpdateTenant};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{expected_version, Actor, Id, JsonBody, PageQuery, QueryParams};
use crate::views::{resource, ListView, TenantView};
use authz_core::model::values::{TenantId, TenantName, TenantNamePrefix};
use authz_core::Resource;
use authz_core::{Deletion, Store, INLINE_DELETE_BUDGET};

type ApiResult = Result<Response, ApiError>;

fn tenant_response(status: StatusCode, tenant: authz_core::model::items::Tenant) -> Response {
    resource(status, Some(tenant.stamp.version), TenantView::from(tenant))
}

#[utoipa::path(
    post,
    path = "/tenants",
    operation_id = "createTenant",
    tag = "tenants",
    request_body = CreateTenant,
    responses(
        (status = 201, description = "The tenant", body = TenantView),
        (status = 409, description = "The name is taken", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateTenant>,
) -> ApiResult {
    let new = request.validate()?;
    let tenant = store.create_tenant(&new, actor.as_deref()).await?;
    Ok(tenant_response(StatusCode::CREATED, tenant))
}

/// In name order; `?namePrefix=` narrows to names starting with it.
#[utoipa::path(
    get,
    path = "/tenants",
    operation_id = "listTenants",
    tag = "tenants",
    params(
        ("namePrefix" = Option<String>, Query, description = "Only names starting with it"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of tenants, in name order", body = ListView<TenantView>),
    ),
)]
pub async fn list(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["namePrefix", "limit", "cursor"])?;
    let prefix = TenantNamePrefix::parse(params.get("namePrefix").unwrap_or_default())?;
    let page = store.list_tenants(&prefix, &params.page()?).await?;
    Ok(Json(ListView::<TenantView>::from_page(page)).into_response())
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}",
    operation_id = "getTenant",
    tag = "tenants",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
    ),
    responses(
        (status = 200, description = "The tenant", body = TenantView),
        (status = 404, description = "No such tenant", body = ErrorBody),
    ),
)]
pub async fn get(State(store): State<Store>, Id(id): Id<TenantId>) -> ApiResult {
    let tenant = store
        .tenant(&id)
        .await?
        .ok_or(ApiError::not_found(Resource::Tenant))?;
    Ok(tenant_response(StatusCode::OK, tenant))
}

#[utoipa::path(
    get,
    path = "/tenants/by-name/{name}",
    operation_id = "getTenantByName",
    tag = "tenants",
    params(
        ("name" = String, Path, description = "The name"),
    ),
    responses(
        (status = 200, description = "The tenant", body = TenantView),
        (status = 404, description = "No such tenant", body = ErrorBody),
    ),
)]
pub async fn by_name(State(store): State<Store>, Id(name): Id<TenantName>) -> ApiResult {
    let tenant = store
        .tenant_by_name(&name)
        .await?
        .ok_or(ApiError::not_found(Resource::Tenant))?;
    Ok(tenant_response(StatusCode::OK, tenant))
}

#[utoipa::path(
    patch,
    path = "/tenants/{tenantId}",
    operation_id = "renameTenant",
    tag = "tenants",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag; this or `version` in the body is required (400 `version` without either, 412 when stale)"),
    ),
    request_body = UpdateTenant,
    responses(
        (status = 200, description = "The renamed tenant", body = TenantView),
        (status = 404, description = "No such tenant", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 412, description = "The tenant changed since the version sent", body = ErrorBody),
    ),
)]
pub async fn rename(
    State(store): State<Store>,
    Id(id): Id<TenantId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdateTenant>,
) -> ApiResult {
    let name = request.validate()?;
    let version = expected_version(&headers, request.version)?;
    let tenant = store
        .rename_tenant(&id, &name, version, actor.as_deref())
        .await?;
    Ok(tenant_response(StatusCode::OK, tenant))
}

/// 204 when nothing of the tenant is left (also when there was no such
/// tenant); 202 with the tenant, `status: deleting`, when its grants are
/// still being removed in the background. Its members are denied from the
/// moment this returns either way.
#[utoipa::path(
    delete,
    path = "/tenants/{tenantId}",
    operation_id = "deleteTenant",
    tag = "tenants",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
    ),
    responses(
        (status = 204, description = "Nothing of the tenant is left"),
        (status = 202, description = "The tenant, status deleting: its grants are being removed", body = TenantView),
    ),
)]
pub async fn delete(State(store): State<Store>, actor: Actor, Id(id): Id<TenantId>) -> ApiResult {
    crate::change::require_reason()?;
    match store
        .delete_tenant(&id, INLINE_DELETE_BUDGET, actor.as_deref())
        .await?
    {
        Deletion::Done => Ok(StatusCode::NO_CONTENT.into_response()),
        Deletion::Running(tenant) => Ok(tenant_response(StatusCode::ACCEPTED, tenant)),
    }
}
