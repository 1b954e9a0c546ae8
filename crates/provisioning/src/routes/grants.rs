//! Tenant grants: `/tenants/{tenantId}/members[/{userId}[/permissions]]` and
//! `/grants/{tenantGrantId}`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::input::PutGrant;
use authz_core::values::{TenantGrantId, TenantId, UserId};
use authz_core::{GrantWrite, Store};

use crate::error::ApiError;
use crate::extract::{Actor, JsonBody, QueryParams};
use crate::views::{resource, GrantView, ListView, PermissionsView};

type ApiResult = Result<Response, ApiError>;

fn ids(tenant: &str, user: &str) -> Result<(TenantId, UserId), ApiError> {
    Ok((TenantId::parse(tenant)?, UserId::parse(user)?))
}

/// 201 when the grant is new, 200 when it replaced the user's grant.
pub async fn put(
    State(store): State<Store>,
    Path((tenant, user)): Path<(String, String)>,
    actor: Actor,
    JsonBody(request): JsonBody<PutGrant>,
) -> ApiResult {
    let (tenant_id, user_id) = ids(&tenant, &user)?;
    let spec = request.validate()?;
    let written = store
        .put_grant(&tenant_id, &user_id, &spec, &actor.in_tenant(&tenant_id))
        .await?;
    Ok(written_grant(written))
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

pub async fn list(
    State(store): State<Store>,
    Path(tenant): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let tenant_id = TenantId::parse(&tenant)?;
    let params = QueryParams::parse(query.as_deref(), &["limit", "cursor"])?;
    let page = store.tenant_members(&tenant_id, &params.page()?).await?;
    Ok(Json(ListView::<GrantView>::from_page(page)).into_response())
}

pub async fn get(
    State(store): State<Store>,
    Path((tenant, user)): Path<(String, String)>,
) -> ApiResult {
    let (tenant_id, user_id) = ids(&tenant, &user)?;
    let grant = store
        .tenant_grant(&tenant_id, &user_id)
        .await?
        .ok_or(ApiError::not_found("tenant grant"))?;
    Ok(resource(
        StatusCode::OK,
        Some(grant.stamp.version),
        GrantView::from(grant),
    ))
}

pub async fn delete(
    State(store): State<Store>,
    Path((tenant, user)): Path<(String, String)>,
) -> ApiResult {
    let (tenant_id, user_id) = ids(&tenant, &user)?;
    store.delete_tenant_grant(&tenant_id, &user_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn by_id(State(store): State<Store>, Path(id): Path<String>) -> ApiResult {
    let id = TenantGrantId::parse(&id)?;
    let grant = store
        .tenant_grant_by_id(&id)
        .await?
        .ok_or(ApiError::not_found("tenant grant"))?;
    Ok(resource(
        StatusCode::OK,
        Some(grant.stamp.version),
        GrantView::from(grant),
    ))
}

/// The member's permissions and the roles that give them; with
/// `?action=&sourceIp=`, also the decision for that action from that
/// address now, with the policies that determined it (as `POST
/// /authorize` answers).
pub async fn permissions(
    State(store): State<Store>,
    State(rules): State<crate::policy_rules::PolicyRules>,
    Path((tenant, user)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let (tenant_id, user_id) = ids(&tenant, &user)?;
    let params = QueryParams::parse(query.as_deref(), &["action", "sourceIp"])?;
    let decision = match params.get("action") {
        None => None,
        Some(action) => Some(
            super::authorize::explain(
                &store,
                &rules,
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
