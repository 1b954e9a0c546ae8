//! `/roles`: create, list by scope or by a permission they grant, get by id
//! or by scope and name, who holds one, update permissions/description,
//! delete.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{CreateRole, UpdateRole};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{expected_version, Actor, Id, Ids, JsonBody, PageQuery, QueryParams};
use crate::views::{resource, KnownPermissionView, ListView, RoleHolderView, RoleView};
use crate::StatementRules;
use authz_core::model::items::Role;
use authz_core::model::values::{NamePrefix, Permission, RoleId, RoleName, RoleScope};
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::Store;

type ApiResult = Result<Response, ApiError>;

fn role_response(status: StatusCode, role: Role) -> Response {
    resource(status, Some(role.stamp.version), RoleView::from(role))
}

#[utoipa::path(
    post,
    path = "/roles",
    operation_id = "createRole",
    tag = "roles",
    request_body = CreateRole,
    responses(
        (status = 201, description = "The role", body = RoleView),
        (status = 400, description = "A field breaks a rule, or a permission gives nothing this deployment knows (`permissions[i]`, with the nearest known one)", body = ErrorBody),
        (status = 409, description = "The name is taken in this scope", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateRole>,
) -> ApiResult {
    let new = request.validate()?;
    rules.known_to_roles(&new.permissions, &[])?;
    let role = store.create_role(&new, &actor.global()).await?;
    Ok(role_response(StatusCode::CREATED, role))
}

/// `?scope=` lists one scope a page at a time (`limit`, `cursor`);
/// `?permission=` (with an optional `scope`) answers, in one page, every
/// role whose permissions give it, exactly or by a wildcard.
#[utoipa::path(
    get,
    path = "/roles",
    operation_id = "listRoles",
    tag = "roles",
    params(
        ("scope" = Option<String>, Query, description = "tenant or global: required unless `permission` is given"),
        ("permission" = Option<String>, Query, description = "Every role giving it, in one page: `limit` and `cursor` are refused beside it"),
        ("namePrefix" = Option<String>, Query, description = "With `scope`: only the roles whose name starts with it (lower-cased as names are), read from the scope's item collection"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of one scope, or every role giving a permission", body = ListView<RoleView>),
    ),
)]
pub async fn list(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(
        query.as_deref(),
        &["scope", "permission", "namePrefix", "limit", "cursor"],
    )?;
    let scope = params.get("scope").map(RoleScope::parse).transpose()?;
    if let Some(permission) = params.get("permission") {
        let permission = Permission::parse_field("permission", permission)?;
        if let Some(name) = ["namePrefix", "limit", "cursor"]
            .into_iter()
            .find(|n| params.get(n).is_some())
        {
            return Err(ApiError::invalid(
                name,
                "is not accepted with permission: the roles giving a permission are one page",
            ));
        }
        let roles = store.roles_giving(&permission, scope).await?;
        return Ok(Json(ListView::<RoleView>::all(roles)).into_response());
    }
    let scope = scope.ok_or_else(|| {
        ApiError::invalid(
            "scope",
            "is required: 'tenant' or 'global' (or give permission)",
        )
    })?;
    let prefix = role_name_prefix(&params)?;
    let page = store.list_roles(scope, &prefix, &params.page()?).await?;
    Ok(Json(ListView::<RoleView>::from_page(page)).into_response())
}

/// `?namePrefix=`, lower-cased as role names are.
fn role_name_prefix(params: &QueryParams) -> Result<NamePrefix, ApiError> {
    let raw = params.get("namePrefix").unwrap_or_default();
    Ok(NamePrefix::parse_field(
        "namePrefix",
        &raw.to_ascii_lowercase(),
    )?)
}

/// Who holds the role: its tenant grants and global holders, from its
/// RoleMember links, paged. 404 for a role that does not exist.
#[utoipa::path(
    get,
    path = "/roles/{roleId}/members",
    operation_id = "listRoleMembers",
    tag = "roles",
    params(
        ("roleId" = String, Path, description = "The role id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of who holds the role", body = ListView<RoleHolderView>),
        (status = 404, description = "No such role", body = ErrorBody),
    ),
)]
pub async fn members(
    State(store): State<Store>,
    Id(id): Id<RoleId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let page = QueryParams::page_only(query.as_deref())?;
    store
        .role_by_id_consistent(&id)
        .await?
        .ok_or(ApiError::not_found(Resource::Role))?;
    let links = store.role_members(&id, &page).await?;
    let view = ListView::<RoleHolderView>::from_page(links)
        .named(&store, |h| {
            use authz_core::store::names::Named;
            [Some(Named::User(h.user_id)), h.tenant_id.map(Named::Tenant)]
                .into_iter()
                .flatten()
        })
        .await?;
    Ok(Json(view).into_response())
}

#[utoipa::path(
    get,
    path = "/roles/{roleId}",
    operation_id = "getRole",
    tag = "roles",
    params(
        ("roleId" = String, Path, description = "The role id"),
    ),
    responses(
        (status = 200, description = "The role", body = RoleView),
        (status = 404, description = "No such role", body = ErrorBody),
    ),
)]
pub async fn get(State(store): State<Store>, Id(id): Id<RoleId>) -> ApiResult {
    let role = store
        .role_by_id(&id)
        .await?
        .ok_or(ApiError::not_found(Resource::Role))?;
    Ok(role_response(StatusCode::OK, role))
}

#[utoipa::path(
    get,
    path = "/roles/by-name/{scope}/{name}",
    operation_id = "getRoleByName",
    tag = "roles",
    params(
        ("scope" = String, Path, description = "tenant or global"),
        ("name" = String, Path, description = "The name"),
    ),
    responses(
        (status = 200, description = "The role", body = RoleView),
        (status = 404, description = "No such role", body = ErrorBody),
    ),
)]
pub async fn by_name(
    State(store): State<Store>,
    Ids(scope, name): Ids<RoleScope, RoleName>,
) -> ApiResult {
    let role = store
        .role(scope, &name)
        .await?
        .ok_or(ApiError::not_found(Resource::Role))?;
    Ok(role_response(StatusCode::OK, role))
}

#[utoipa::path(
    patch,
    path = "/roles/{roleId}",
    operation_id = "updateRole",
    tag = "roles",
    params(
        ("roleId" = String, Path, description = "The role id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag; this or `version` in the body is required (400 `version` without either, 412 when stale)"),
    ),
    request_body = UpdateRole,
    responses(
        (status = 200, description = "The updated role", body = RoleView),
        (status = 404, description = "No such role", body = ErrorBody),
        (status = 409, description = "Narrowing a role that makes the last platform administrator one: it would leave the platform without an administrator (`conflict`, naming the field)", body = ErrorBody),
        (status = 412, description = "The role changed since the version sent", body = ErrorBody),
    ),
)]
pub async fn update(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    State(rules): State<StatementRules>,
    Id(id): Id<RoleId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdateRole>,
) -> ApiResult {
    let changes = request.validate()?;
    let version = expected_version(&headers, request.version)?;
    if let Some(permissions) = &changes.permissions {
        // What the role holds already may stay, known or not.
        let held = store
            .role_by_id_consistent(&id)
            .await?
            .map(|r| r.permissions)
            .unwrap_or_default();
        rules.known_to_roles(permissions, &held)?;
    }
    let caller = actor.global().giving(&changes, &store, &policies).await?;
    let role = store.update_role(&id, &changes, version, &caller).await?;
    Ok(role_response(StatusCode::OK, role))
}

/// 204 even while the role is held; the stream consumer updates holders.
#[utoipa::path(
    delete,
    path = "/roles/{roleId}",
    operation_id = "deleteRole",
    tag = "roles",
    params(
        ("roleId" = String, Path, description = "The role id"),
    ),
    responses(
        (status = 204, description = "The role is deleted; its holders lose it"),
        (status = 404, description = "No such role (a delete of what is gone is a 404, unlike a tenant's or a user's)", body = ErrorBody),
        (status = 409, description = "The role makes the last platform administrator one: deleting it would leave the platform without an administrator (`conflict`, naming the field)", body = ErrorBody),
    ),
)]
pub async fn delete(State(store): State<Store>, Id(id): Id<RoleId>) -> ApiResult {
    store.delete_role(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The permissions a role may hold: every action of this deployment's
/// route rules (so of its Cedar policies and of `POST /authorize`), each
/// with the routes that need it, in order. A role may also hold `*`, or a
/// wildcard (`ticket:*`) some of them fall under. Open to every active
/// user.
#[utoipa::path(
    get,
    path = "/permissions",
    operation_id = "listPermissions",
    tag = "roles",
    responses(
        (status = 200, description = "Every permission this deployment knows", body = ListView<KnownPermissionView>),
    ),
)]
pub async fn permissions(State(rules): State<StatementRules>) -> ApiResult {
    let known: Vec<KnownPermissionView> = rules
        .known_permissions()
        .map(KnownPermissionView::from)
        .collect();
    Ok(Json(ListView::<KnownPermissionView>::all(known)).into_response())
}

/// The tenant roles a tenant's administrators may give there: the tenant
/// scope's roles in name order, a page at a time, for whoever holds
/// `member:write` in that tenant (who may not read the whole catalogue).
/// Giving one still needs its permissions (the delegation ceiling).
#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/roles",
    operation_id = "listTenantRoles",
    tag = "roles",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("namePrefix" = Option<String>, Query, description = "Only the roles whose name starts with it (lower-cased as names are)"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant roles, in name order", body = ListView<RoleView>),
    ),
)]
pub async fn for_tenant(
    State(store): State<Store>,
    // Parsed only to refuse what is no tenant id: the rule checked the
    // caller's member:write there.
    Id(_tenant): Id<authz_core::model::values::TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["namePrefix", "limit", "cursor"])?;
    let prefix = role_name_prefix(&params)?;
    let page = store
        .list_roles(RoleScope::Tenant, &prefix, &params.page()?)
        .await?;
    Ok(Json(ListView::<RoleView>::from_page(page)).into_response())
}
