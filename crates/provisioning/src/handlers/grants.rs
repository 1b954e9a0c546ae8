//! Tenant grants: `/tenants/{tenantId}/members[/{userId}[/permissions]]` and
//! `/grants/{tenantGrantId}`.

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::PutGrant;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{optional_version, Actor, Id, Ids, JsonBody, PageQuery, QueryParams};
use crate::views::{grant_names, resource, GrantView, ListView, PermissionsView};
use authz_core::model::items::TenantGrant;
use authz_core::model::values::{TenantGrantId, TenantId, UserId};
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::{GrantPrecondition, GrantWrite, Store};

type ApiResult = Result<Response, ApiError>;

/// 201 when the grant is new, 200 when it replaced the user's grant.
#[utoipa::path(
    put,
    path = "/tenants/{tenantId}/members/{userId}",
    operation_id = "putMember",
    tag = "members",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
        ("If-Match" = Option<String>, Header, description = "Replace the grant only at this version (its ETag): 412 when it changed or is gone"),
        ("If-None-Match" = Option<String>, Header, description = "`*`: only make a new member, never replace a grant unseen (412 `userId` when the user is a member already)"),
    ),
    request_body = PutGrant,
    responses(
        (status = 201, description = "The new grant", body = GrantView),
        (status = 200, description = "The replaced grant", body = GrantView),
        (status = 400, description = "A body or precondition header that breaks a rule (named)", body = ErrorBody),
        (status = 404, description = "No such tenant, user or role", body = ErrorBody),
        (status = 409, description = "The caller is one of the tenant's own administrators and the write would take `member:write` from its last (`roles`) or end it sooner (`expiresAt`)", body = ErrorBody),
        (status = 412, description = "A role or the grant changed meanwhile, the grant is not at the `If-Match` version, (`userId`) the user is a member already and the write sent `If-None-Match: *`, or (`If-None-Match`) both headers were sent", body = ErrorBody),
    ),
)]
pub async fn put(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Ids(tenant_id, user_id): Ids<TenantId, UserId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<PutGrant>,
) -> ApiResult {
    let spec = request.validate()?;
    let expected = grant_precondition(&headers)?;
    let caller = actor
        .in_tenant(&tenant_id)
        .giving(&spec, &store, &policies)
        .await?;
    let written = store
        .put_grant(&tenant_id, &user_id, &spec, expected, &caller)
        .await?;
    Ok(written_grant(written))
}

/// What a grant's `PUT` expects of the grant it replaces: its version
/// (`If-Match`), none (`If-None-Match: *`), or anything.
fn grant_precondition(headers: &HeaderMap) -> Result<GrantPrecondition, ApiError> {
    let version = optional_version(headers, None)?;
    // An empty header asks nothing.
    let none_match = headers
        .get(header::IF_NONE_MATCH)
        .filter(|v| !v.as_bytes().trim_ascii().is_empty());
    match (none_match, version) {
        (None, None) => Ok(GrantPrecondition::Any),
        (None, Some(v)) => Ok(GrantPrecondition::Version(v)),
        // No grant both exists at a version and does not exist.
        (Some(_), Some(_)) => Err(ApiError::PreconditionsContradict),
        (Some(value), None) if value.as_bytes().trim_ascii() == b"*" => {
            Ok(GrantPrecondition::Absent)
        }
        (Some(_), None) => Err(ApiError::invalid(
            "If-None-Match",
            "must be * (make a new member only)",
        )),
    }
}

/// A grant write's answer: 201 with the grant when it is new, 200 when an
/// existing grant changed.
pub(super) fn written_grant(written: GrantWrite) -> Response {
    let status = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    resource(
        status,
        Some(written.grant.stamp.version),
        GrantView::from(written.grant),
    )
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/members",
    operation_id = "listMembers",
    tag = "members",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("q" = Option<String>, Query, description = "Only the members it finds, whatever their status: an id, `issuer subject`, an email prefix (with an `@`), or else those whose name starts with it and then those whose email does (as `GET /users/search`, from the tenant's own member lists: a member joins them with their grant, and a rename reaches them within seconds)"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant's grants, with the names of their users, tenant and roles", body = ListView<GrantView>),
    ),
)]
pub async fn list(
    State(store): State<Store>,
    Id(tenant_id): Id<TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["q", "limit", "cursor"])?;
    let asked = params.page()?;
    let page = match params.get("q") {
        None => store.tenant_members(&tenant_id, &asked).await?,
        // The tenant's own member lists: its members only, paged.
        Some(q) => {
            let among = authz_core::store::search::Among::Members(tenant_id);
            let ids = store.search(among, Some(q), &asked).await?;
            authz_core::Page {
                items: store.tenant_grants_of(&tenant_id, &ids.items).await?,
                next_cursor: ids.next_cursor,
            }
        }
    };
    let view = ListView::<GrantView>::from_page(page)
        .named(&store, grant_names)
        .await?;
    Ok(Json(view).into_response())
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/members/{userId}",
    operation_id = "getMember",
    tag = "members",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The grant, with the names of its user, tenant and roles (whatever the user's status)", body = GrantView),
        (status = 404, description = "No such grant", body = ErrorBody),
    ),
)]
pub async fn get(
    State(store): State<Store>,
    Ids(tenant_id, user_id): Ids<TenantId, UserId>,
) -> ApiResult {
    let grant = store
        .tenant_grant(&tenant_id, &user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::TenantGrant))?;
    let version = grant.stamp.version;
    let mut view = GrantView::from(grant);
    view.names = Some(store.names(grant_names(&view)).await?);
    Ok(resource(StatusCode::OK, Some(version), view))
}

/// 200 with the grant and its ETag, or 404.
fn found(grant: Option<TenantGrant>) -> ApiResult {
    let grant = grant.ok_or(ApiError::not_found(Resource::TenantGrant))?;
    Ok(resource(
        StatusCode::OK,
        Some(grant.stamp.version),
        GrantView::from(grant),
    ))
}

#[utoipa::path(
    delete,
    path = "/tenants/{tenantId}/members/{userId}",
    operation_id = "removeMember",
    tag = "members",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 204, description = "The member is removed (or was not one)"),
        (status = 409, description = "The caller is one of the tenant's own administrators and the member is its last, or the only one for as long (`userId`): the tenant would be left without one", body = ErrorBody),
    ),
)]
pub async fn delete(
    State(store): State<Store>,
    Ids(tenant_id, user_id): Ids<TenantId, UserId>,
    actor: Actor,
) -> ApiResult {
    store
        .remove_member(&tenant_id, &user_id, &actor.in_tenant(&tenant_id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    get,
    path = "/grants/{tenantGrantId}",
    operation_id = "getGrant",
    tag = "members",
    params(
        ("tenantGrantId" = String, Path, description = "The tenant grant id"),
    ),
    responses(
        (status = 200, description = "The grant", body = GrantView),
        (status = 404, description = "No such grant", body = ErrorBody),
    ),
)]
pub async fn by_id(State(store): State<Store>, Id(id): Id<TenantGrantId>) -> ApiResult {
    found(store.tenant_grant_by_id(&id).await?)
}

/// The member's permissions and the roles that give them; with
/// `?action=&sourceIp=`, also the decision for that action from that
/// address now, with the policies that determined it (as `POST
/// /authorize` answers).
#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/members/{userId}/permissions",
    operation_id = "getMemberPermissions",
    tag = "members",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
        ("action" = Option<String>, Query, description = "A permission to decide now"),
        ("sourceIp" = Option<String>, Query, description = "The address to decide it from"),
    ),
    responses(
        (status = 200, description = "The member's permissions and the roles that give them", body = PermissionsView),
        (status = 404, description = "No such grant", body = ErrorBody),
    ),
)]
pub async fn permissions(
    State(store): State<Store>,
    State(rules): State<crate::statement_rules::StatementRules>,
    State(policies): State<PolicyCache>,
    Ids(tenant_id, user_id): Ids<TenantId, UserId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["action", "sourceIp"])?;
    let decision = match params.get("action") {
        None => None,
        Some(action) => Some(
            super::authorize::explain(
                &store,
                &rules,
                &policies,
                &user_id,
                &tenant_id,
                action,
                params.get("sourceIp"),
            )
            .await?,
        ),
    };
    let sources = store.permission_sources(&tenant_id, &user_id).await?;
    let view = PermissionsView {
        decision,
        ..PermissionsView::from(sources)
    };
    Ok(Json(view).into_response())
}
