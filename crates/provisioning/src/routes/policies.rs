//! `/policies`: Verified Permissions policy metadata: create, list by name
//! prefix, get by name or id, delete.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::input::CreatePolicy;
use authz_core::values::{PolicyId, PolicyName, PolicyNamePrefix};
use authz_core::Store;

use crate::error::ApiError;
use crate::extract::{Actor, JsonBody, QueryParams};
use crate::views::{resource, ListView, PolicyView};

type ApiResult = Result<Response, ApiError>;

pub async fn create(
    State(store): State<Store>,
    actor: Actor,
    JsonBody(request): JsonBody<CreatePolicy>,
) -> ApiResult {
    let new = request.validate()?;
    let policy = store.create_policy(&new, actor.as_deref()).await?;
    Ok(resource(
        StatusCode::CREATED,
        None,
        PolicyView::from(policy),
    ))
}

/// `?prefix=` (default: every policy), `?limit=`, `?cursor=`.
pub async fn list(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["prefix", "limit", "cursor"])?;
    let prefix = PolicyNamePrefix::parse(params.get("prefix").unwrap_or_default())?;
    let page = store.policies_by_prefix(&prefix, &params.page()?).await?;
    Ok(Json(ListView::<PolicyView>::from_page(page)).into_response())
}

pub async fn by_name(State(store): State<Store>, Path(name): Path<String>) -> ApiResult {
    let name = PolicyName::parse(&name)?;
    let policy = store
        .policy_by_name(&name)
        .await?
        .ok_or(ApiError::not_found("policy"))?;
    Ok(resource(StatusCode::OK, None, PolicyView::from(policy)))
}

pub async fn get(State(store): State<Store>, Path(id): Path<String>) -> ApiResult {
    let id = PolicyId::parse(&id)?;
    let policy = store
        .policy_by_id(&id)
        .await?
        .ok_or(ApiError::not_found("policy"))?;
    Ok(resource(StatusCode::OK, None, PolicyView::from(policy)))
}

pub async fn delete(State(store): State<Store>, Path(id): Path<String>) -> ApiResult {
    let id = PolicyId::parse(&id)?;
    store.delete_policy(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
