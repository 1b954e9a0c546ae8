//! `/policies` and a tenant's own `/tenants/{t}/policies`: Cedar
//! policies: create and update (the statement checked against the schema,
//! the answer cache and the caller's ceiling before anything is stored),
//! list by name prefix or by tenant, get by name or id, delete.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{CreatePolicy, CreateTenantPolicy, UpdatePolicy};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{expected_version, Actor, Id, Ids, JsonBody, PageQuery, QueryParams};
use crate::statement_rules::StatementRules;
use crate::views::{resource, ListView, PolicyView};
use authz_core::model::values::{NamePrefix, PolicyId, PolicyName, TenantId};
use authz_core::policy::cedar::Checked;
use authz_core::Resource;
use authz_core::Store;

type ApiResult = Result<Response, ApiError>;

fn policy_response(status: StatusCode, policy: authz_core::model::items::Policy) -> Response {
    let version = policy.stamp.version;
    resource(status, Some(version), PolicyView::from(policy))
}

#[utoipa::path(
    post,
    path = "/policies",
    operation_id = "createPolicy",
    tag = "policies",
    request_body = CreatePolicy,
    responses(
        (status = 201, description = "The policy", body = PolicyView),
        (status = 409, description = "The name or id is taken, or a statement would exceed the bound on the set", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    actor: Actor,
    JsonBody(request): JsonBody<CreatePolicy>,
) -> ApiResult {
    create_in(&store, &rules, &actor, &request, None).await
}

/// A tenant's own policy: its statement must be confined to the tenant.
#[utoipa::path(
    post,
    path = "/tenants/{tenantId}/policies",
    operation_id = "createTenantPolicy",
    tag = "policies",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
    ),
    request_body = CreateTenantPolicy,
    responses(
        (status = 201, description = "The policy, in the tenant's own set", body = PolicyView),
        (status = 400, description = "A statement not confined to this tenant, or a permit that matches on roles held", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody),
        (status = 409, description = "The name is taken in the tenant or the id anywhere, or the tenant's set is full (100 statements)", body = ErrorBody),
    ),
)]
pub async fn create_for_tenant(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    Id(tenant): Id<TenantId>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateTenantPolicy>,
) -> ApiResult {
    create_in(&store, &rules, &actor, &request.into(), Some(tenant)).await
}

/// Creates a policy from `POST /policies` (`tenant` none) or a tenant's
/// route. One confined to a tenant is kept in that tenant's own set,
/// unless it is a permit that matches on roles held (kept in the global
/// set, which a tenant's route cannot write to).
async fn create_in(
    store: &Store,
    rules: &StatementRules,
    actor: &Actor,
    request: &CreatePolicy,
    tenant: Option<TenantId>,
) -> ApiResult {
    let mut new = request.validate()?;
    // A tenant's route always has a statement (its body requires one).
    if let Some(statement) = &new.statement {
        let checked = rules.admit(&new.policy_id, statement, actor)?;
        if let Some(tenant) = tenant {
            tenant_own(&checked, tenant)?;
        }
        new.tenant_id = checked.tenant;
        new.in_tenant_set = checked.tenant.is_some() && !checked.role_keyed;
        new.platform = tenant.is_none();
    }
    let policy = store.create_policy(&new, actor.as_deref()).await?;
    Ok(policy_response(StatusCode::CREATED, policy))
}

/// What a statement in `tenant`'s own set must be: confined to it, and no
/// permit that matches on roles held (every write that gives a role would
/// have to read every tenant's set to see it).
fn tenant_own(checked: &Checked, tenant: TenantId) -> Result<(), ApiError> {
    if checked.tenant != Some(tenant) {
        return Err(ApiError::invalid(
            "statement",
            format!(
                "must be confined to tenant {tenant}, whose policy this is: write `resource in \
                 Tenant::\"{tenant}\"` in its scope"
            ),
        ));
    }
    if checked.role_keyed {
        return Err(ApiError::invalid(
            "statement",
            "a tenant's own permit cannot match on the roles or permissions held, nor name a user \
             (what giving a role, linking an identity or reactivating a user gives would then \
             depend on every tenant's policies): give the permission through a role, or ask a \
             platform administrator for a policy in the global set",
        ));
    }
    Ok(())
}

/// `{"statement": ..., "description": ...}` with the expected version in
/// `If-Match` or `version`.
#[utoipa::path(
    patch,
    path = "/policies/{policyId}",
    operation_id = "updatePolicy",
    tag = "policies",
    params(
        ("policyId" = String, Path, description = "The policy id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag; this or `version` in the body is required (400 `version` without either, 412 when stale)"),
    ),
    request_body = UpdatePolicy,
    responses(
        (status = 200, description = "The updated policy", body = PolicyView),
        (status = 404, description = "No such policy", body = ErrorBody),
        (status = 409, description = "A statement given to a policy without one would exceed the bound on the set", body = ErrorBody),
        (status = 412, description = "The policy changed since the version sent", body = ErrorBody),
    ),
)]
pub async fn update(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    Id(id): Id<PolicyId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdatePolicy>,
) -> ApiResult {
    update_in(&store, &rules, &actor, &headers, &request, id, None).await
}

/// `{"statement": ..., "description": ...}` of one of a tenant's own
/// policies, with the expected version in `If-Match` or `version`.
#[utoipa::path(
    patch,
    path = "/tenants/{tenantId}/policies/{policyId}",
    operation_id = "updateTenantPolicy",
    tag = "policies",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("policyId" = String, Path, description = "The policy id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag; this or `version` in the body is required (400 `version` without either, 412 when stale)"),
    ),
    request_body = UpdatePolicy,
    responses(
        (status = 200, description = "The updated policy", body = PolicyView),
        (status = 400, description = "A statement not confined to this tenant, or a permit that matches on roles held", body = ErrorBody),
        (status = 404, description = "No such policy in this tenant's own set", body = ErrorBody),
        (status = 409, description = "The tenant's set would be past its bounds, or (`policyId`) a platform administrator wrote the policy for this tenant: only the platform's route changes it", body = ErrorBody),
        (status = 412, description = "The policy changed since the version sent", body = ErrorBody),
    ),
)]
pub async fn update_for_tenant(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    Ids(tenant, id): Ids<TenantId, PolicyId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<UpdatePolicy>,
) -> ApiResult {
    update_in(&store, &rules, &actor, &headers, &request, id, Some(tenant)).await
}

/// Updates a policy from `PATCH /policies/{id}` (`tenant` none) or a
/// tenant's route (only that tenant's own policies). A policy in a
/// tenant's own set stays there, and its statement confined to it.
async fn update_in(
    store: &Store,
    rules: &StatementRules,
    actor: &Actor,
    headers: &HeaderMap,
    request: &UpdatePolicy,
    id: PolicyId,
    tenant: Option<TenantId>,
) -> ApiResult {
    let mut changes = request.validate()?;
    let version = expected_version(headers, request.version)?;
    let checked = match &changes.statement {
        Some(statement) => Some(rules.admit(&id, statement, actor)?),
        None => None,
    };
    let current = store
        .locate_policy(&id)
        .await?
        .filter(|found| tenant.is_none() || found.home == tenant)
        .ok_or_else(|| authz_core::Error::not_found(Resource::Policy))?;
    if let Some(checked) = &checked {
        if let Some(home) = current.home {
            tenant_own(checked, home)?;
        }
        changes.tenant_id = checked.tenant;
    }
    changes.by_tenant = tenant.is_some();
    // A statement given to a global policy that had none adds to the set,
    // whose bound the write's transaction enforces; it is conditioned on
    // the policy as read here (its id, version and whether it has a
    // statement), so the set's counts move by what it changes. A tenant's
    // own policy is written in its set, conditioned on the set's version.
    let policy = store
        .update_policy(&current, &changes, version, actor.as_deref())
        .await?;
    Ok(policy_response(StatusCode::OK, policy))
}

/// `?prefix=` (default: every policy), `?limit=`, `?cursor=`.
#[utoipa::path(
    get,
    path = "/policies",
    operation_id = "listPolicies",
    tag = "policies",
    params(
        ("prefix" = Option<String>, Query, description = "Only names starting with it"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of policies, in name order, with the names of the tenants they are confined to", body = ListView<PolicyView>),
    ),
)]
pub async fn list(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["prefix", "limit", "cursor"])?;
    let prefix = NamePrefix::parse(params.get("prefix").unwrap_or_default())?;
    let page = store.policies_by_prefix(&prefix, &params.page()?).await?;
    let view = ListView::<PolicyView>::from_page(page)
        .named(&store, crate::views::policy_names)
        .await?;
    Ok(Json(view).into_response())
}

/// The policies confined to a tenant (global ones apply there too and are
/// listed by `GET /policies`), in one page.
#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/policies",
    operation_id = "listTenantPolicies",
    tag = "policies",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
    ),
    responses(
        (status = 200, description = "The policies confined to the tenant", body = ListView<PolicyView>),
    ),
)]
pub async fn for_tenant(State(store): State<Store>, Id(tenant): Id<TenantId>) -> ApiResult {
    let policies = store.tenant_policies(&tenant).await?;
    Ok(Json(ListView::<PolicyView>::all(policies)).into_response())
}

#[utoipa::path(
    get,
    path = "/policies/by-name/{name}",
    operation_id = "getPolicyByName",
    tag = "policies",
    params(
        ("name" = String, Path, description = "The name"),
    ),
    responses(
        (status = 200, description = "The policy", body = PolicyView),
        (status = 404, description = "No such policy", body = ErrorBody),
    ),
)]
pub async fn by_name(State(store): State<Store>, Id(name): Id<PolicyName>) -> ApiResult {
    let policy = store
        .policy_by_name(&name)
        .await?
        .ok_or(ApiError::not_found(Resource::Policy))?;
    Ok(policy_response(StatusCode::OK, policy))
}

#[utoipa::path(
    get,
    path = "/policies/{policyId}",
    operation_id = "getPolicy",
    tag = "policies",
    params(
        ("policyId" = String, Path, description = "The policy id"),
    ),
    responses(
        (status = 200, description = "The policy", body = PolicyView),
        (status = 404, description = "No such policy", body = ErrorBody),
    ),
)]
pub async fn get(State(store): State<Store>, Id(id): Id<PolicyId>) -> ApiResult {
    let policy = store
        .policy_by_id_consistent(&id)
        .await?
        .ok_or(ApiError::not_found(Resource::Policy))?;
    Ok(policy_response(StatusCode::OK, policy))
}

#[utoipa::path(
    delete,
    path = "/policies/{policyId}",
    operation_id = "deletePolicy",
    tag = "policies",
    params(
        ("policyId" = String, Path, description = "The policy id"),
    ),
    responses(
        (status = 204, description = "The policy is deleted"),
        (status = 404, description = "No such policy (a delete of what is gone is a 404, unlike a tenant's or a user's)", body = ErrorBody),
    ),
)]
pub async fn delete(State(store): State<Store>, Id(id): Id<PolicyId>) -> ApiResult {
    store.delete_policy(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/policies/{policyId}",
    operation_id = "getTenantPolicy",
    tag = "policies",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("policyId" = String, Path, description = "The policy id"),
    ),
    responses(
        (status = 200, description = "The policy", body = PolicyView),
        (status = 404, description = "No policy with this id is confined to this tenant", body = ErrorBody),
    ),
)]
pub async fn get_for_tenant(
    State(store): State<Store>,
    Ids(tenant, id): Ids<TenantId, PolicyId>,
) -> ApiResult {
    let policy = store
        .policy_by_id_consistent(&id)
        .await?
        .filter(|p| p.tenant_id == Some(tenant))
        .ok_or(ApiError::not_found(Resource::Policy))?;
    Ok(policy_response(StatusCode::OK, policy))
}

#[utoipa::path(
    delete,
    path = "/tenants/{tenantId}/policies/{policyId}",
    operation_id = "deleteTenantPolicy",
    tag = "policies",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("policyId" = String, Path, description = "The policy id"),
    ),
    responses(
        (status = 204, description = "The policy is deleted"),
        (status = 404, description = "No such policy in this tenant's own set", body = ErrorBody),
        (status = 409, description = "A platform administrator wrote the policy for this tenant (`policyId`): only the platform's route deletes it", body = ErrorBody),
    ),
)]
pub async fn delete_for_tenant(
    State(store): State<Store>,
    Ids(tenant, id): Ids<TenantId, PolicyId>,
) -> ApiResult {
    store.delete_tenant_policy(tenant, &id, true).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
