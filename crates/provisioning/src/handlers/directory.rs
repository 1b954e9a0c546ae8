//! A tenant's directory, for its administrators: its tokens,
//! `/tenants/{tenantId}/scim-tokens[/{tokenId}]` (a token is shown once,
//! when created, with the SCIM base it is good for; only its digest is
//! stored), and its groups with the roles each gives,
//! `/tenants/{tenantId}/scim-groups[/{groupId}/roles]`.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{CreateScimToken, MapScimGroup};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, Id, Ids, JsonBody, PageQuery, PublicBase, QueryParams};
use crate::views::{
    resource, scim_group_names, CreatedScimToken, ListView, ScimGroupView, ScimTokenList,
    ScimTokenView,
};
use authz_core::model::values::{DirectoryGroupId, DirectoryTokenId, RoleId, TenantId};
use authz_core::store::PolicyCache;
use authz_core::{Resource, Store};

type ApiResult = Result<Response, ApiError>;

/// 201 with the token, shown once, and the SCIM base URL.
#[utoipa::path(
    post,
    path = "/tenants/{tenantId}/scim-tokens",
    operation_id = "createScimToken",
    tag = "directory",
    params(("tenantId" = String, Path, description = "The tenant id")),
    request_body = CreateScimToken,
    responses(
        (status = 201, description = "The token (shown this once, as `token`) and the SCIM base URL", body = CreatedScimToken),
        (status = 409, description = "The tenant's directory holds as many tokens as it may (`tokens`)", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Id(tenant_id): Id<TenantId>,
    actor: Actor,
    base: PublicBase,
    JsonBody(request): JsonBody<CreateScimToken>,
) -> ApiResult {
    let (name, expires_at) = request.validate()?;
    // The token may give every role the groups map: its creator must,
    // with what the permits matching those roles permit.
    let caller = actor
        .in_tenant(&tenant_id)
        .with_permits(policies.role_keyed_permits(&store).await?);
    let (token, secret) = store
        .create_directory_token(&tenant_id, &name, expires_at, &caller)
        .await?;
    let created = CreatedScimToken {
        view: ScimTokenView::from(&token),
        token: secret,
        base_url: base.scim(&tenant_id),
    };
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/scim-tokens",
    operation_id = "listScimTokens",
    tag = "directory",
    params(("tenantId" = String, Path, description = "The tenant id")),
    responses(
        (status = 200, description = "The tenant's directory tokens (never the tokens themselves)", body = ScimTokenList),
    ),
)]
pub async fn list(State(store): State<Store>, Id(tenant_id): Id<TenantId>) -> ApiResult {
    let tokens = store.directory_tokens(&tenant_id).await?;
    let items = tokens.iter().map(ScimTokenView::from).collect();
    Ok(Json(ScimTokenList { items }).into_response())
}

/// 204: the token is refused from now on, within the revocation bound.
#[utoipa::path(
    delete,
    path = "/tenants/{tenantId}/scim-tokens/{tokenId}",
    operation_id = "revokeScimToken",
    tag = "directory",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("tokenId" = String, Path, description = "The token id"),
    ),
    responses(
        (status = 204, description = "The token is revoked"),
        (status = 404, description = "No such token", body = ErrorBody),
    ),
)]
pub async fn revoke(
    State(store): State<Store>,
    Ids(tenant_id, token_id): Ids<TenantId, DirectoryTokenId>,
) -> ApiResult {
    store.revoke_directory_token(&tenant_id, &token_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/scim-groups",
    operation_id = "listScimGroups",
    tag = "directory",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the directory's groups, in creation order, the roles each gives with their names", body = ListView<ScimGroupView>),
    ),
)]
pub async fn groups(
    State(store): State<Store>,
    Id(tenant_id): Id<TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["limit", "cursor"])?;
    let page = store
        .directory_groups_page(&tenant_id, &params.page()?)
        .await?;
    let view = ListView::<ScimGroupView>::from_page(page)
        .named(&store, scim_group_names)
        .await?;
    Ok(Json(view).into_response())
}

/// 200: the group gives these roles to its members from now on (each a
/// grant write); the caller must hold what they give, without end.
#[utoipa::path(
    put,
    path = "/tenants/{tenantId}/scim-groups/{groupId}/roles",
    operation_id = "mapScimGroup",
    tag = "directory",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("groupId" = String, Path, description = "The group's SCIM id"),
    ),
    request_body = MapScimGroup,
    responses(
        (status = 200, description = "The group, with the roles it gives", body = ScimGroupView),
        (status = 404, description = "No such group or role", body = ErrorBody),
        (status = 412, description = "The group changed meanwhile", body = ErrorBody),
    ),
)]
pub async fn map_group(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Ids(tenant_id, group_id): Ids<TenantId, DirectoryGroupId>,
    actor: Actor,
    JsonBody(request): JsonBody<MapScimGroup>,
) -> ApiResult {
    let roles = request
        .roles
        .iter()
        .map(|r| RoleId::parse_field("roles", r))
        .collect::<Result<Vec<_>, _>>()?;
    let group = store
        .directory_group(&tenant_id, &group_id)
        .await?
        .ok_or(ApiError::not_found(Resource::DirectoryGroup))?;
    // With the permits always: each live token is checked with them too.
    let caller = actor
        .in_tenant(&tenant_id)
        .with_permits(policies.role_keyed_permits(&store).await?);
    let mapped = store.map_directory_group(&group, &roles, &caller).await?;
    Ok(resource(
        StatusCode::OK,
        Some(mapped.stamp.version),
        ScimGroupView::from(&mapped),
    ))
}
