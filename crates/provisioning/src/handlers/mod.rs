//! The route table: every endpoint of the admin API, its handler and its
//! OpenAPI operation, and the layers around them.

mod authorize;
mod emails;
mod grants;
mod history;
mod invitations;
mod policies;
mod roles;
mod tenants;
mod users;

use axum::extract::MatchedPath;
use axum::response::Response;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use authz_core::metrics::{dimension, name, status_class};

use crate::error::ApiError;
use crate::AppState;

/// Every route of the API with its OpenAPI operation: the one list the
/// router and the document (`crate::openapi`) are built from.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(tenants::create, tenants::list))
        .routes(routes!(tenants::by_name))
        .routes(routes!(tenants::get, tenants::rename, tenants::delete))
        .routes(routes!(grants::list))
        .routes(routes!(grants::put, grants::get, grants::delete))
        .routes(routes!(grants::permissions))
        .routes(routes!(invitations::create, invitations::list))
        .routes(routes!(invitations::revoke))
        .routes(routes!(invitations::accept))
        .routes(routes!(invitations::decline))
        .routes(routes!(invitations::for_user))
        .routes(routes!(invitations::details))
        .routes(routes!(grants::by_id))
        .routes(routes!(users::create, users::list))
        .routes(routes!(users::by_email))
        .routes(routes!(users::get, users::update, users::delete))
        .routes(routes!(users::tenants))
        .routes(routes!(emails::list, emails::add))
        .routes(routes!(emails::delete))
        .routes(routes!(emails::verify))
        .routes(routes!(emails::code))
        .routes(routes!(emails::set_primary))
        .routes(routes!(roles::create, roles::list))
        .routes(routes!(roles::by_name))
        .routes(routes!(roles::get, roles::update, roles::delete))
        .routes(routes!(roles::members))
        .routes(routes!(policies::create, policies::list))
        .routes(routes!(policies::by_name))
        .routes(routes!(policies::get, policies::update, policies::delete))
        .routes(routes!(policies::for_tenant))
        .routes(routes!(authorize::one))
        .routes(routes!(authorize::batch))
        .routes(routes!(history::user))
        .routes(routes!(history::tenant))
        .routes(routes!(history::role))
        .routes(routes!(history::grant))
        .routes(routes!(history::policy))
}

/// The API's routes (`api`), with JSON 404/405 answers for the rest.
pub fn router(state: AppState) -> Router {
    let (routes, _) = api().split_for_parts();
    routes
        .route_layer(axum::middleware::from_fn_with_state(
            state.store.clone(),
            crate::idempotency::layer,
        ))
        // Who and why, for every change the request makes.
        .route_layer(axum::middleware::from_fn(crate::change::layer))
        // Outermost: no request reaches a handler, or the idempotency
        // records, without the authorizer's context.
        .route_layer(axum::middleware::from_fn(crate::extract::require_caller))
        .fallback(|| async { ApiError::RouteNotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        // Around everything, refusals and unknown routes included.
        .layer(axum::middleware::from_fn(measured))
        .with_state(state)
}

/// Counts each request by route template and status class (one EMF line a
/// request when the invocation ends), and its conflicts and retryable
/// failures. An unknown route counts as `unmatched`: the path itself would
/// be a dimension with as many values as callers care to send.
async fn measured(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) => format!("{} {}", request.method(), path.as_str()),
        None => "unmatched".to_string(),
    };
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let labels = [
        (dimension::ROUTE, route),
        (dimension::STATUS_CLASS, status_class(status).to_string()),
    ];
    let counted = |name: &'static str, yes: bool| {
        metrics::counter!(name, &labels).increment(u64::from(yes));
    };
    counted(name::REQUESTS, true);
    counted(name::CONFLICTS, status == 409 || status == 412);
    counted(name::RETRYABLE_FAILURES, status == 503);
    response
}
