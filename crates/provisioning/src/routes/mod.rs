//! The route table: every endpoint of the admin API and its handler.

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
use axum::routing::{delete, get, post, put};
use axum::Router;

use authz_core::metrics::{dimension, name, status_class};

use crate::error::ApiError;
use crate::AppState;

/// Every route of the API, with JSON 404/405 answers for the rest.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/tenants", post(tenants::create).get(tenants::list))
        .route("/tenants/by-name/{name}", get(tenants::by_name))
        .route(
            "/tenants/{tenantId}",
            get(tenants::get)
                .patch(tenants::rename)
                .delete(tenants::delete),
        )
        .route("/tenants/{tenantId}/members", get(grants::list))
        .route(
            "/tenants/{tenantId}/members/{userId}",
            put(grants::put).get(grants::get).delete(grants::delete),
        )
        .route(
            "/tenants/{tenantId}/members/{userId}/permissions",
            get(grants::permissions),
        )
        .route(
            "/tenants/{tenantId}/invitations",
            post(invitations::create).get(invitations::list),
        )
        .route(
            "/tenants/{tenantId}/invitations/{invitationId}",
            delete(invitations::revoke),
        )
        .route(
            "/invitations/{invitationId}/accept",
            post(invitations::accept),
        )
        .route(
            "/invitations/{invitationId}/decline",
            post(invitations::decline),
        )
        .route("/users/{userId}/invitations", get(invitations::for_user))
        .route("/users/{userId}/details", get(invitations::details))
        .route("/grants/{tenantGrantId}", get(grants::by_id))
        .route("/users", post(users::create).get(users::list))
        .route("/users/by-email/{email}", get(users::by_email))
        .route(
            "/users/{userId}",
            get(users::get).patch(users::update).delete(users::delete),
        )
        .route("/users/{userId}/tenants", get(users::tenants))
        .route(
            "/users/{userId}/emails",
            get(emails::list).post(emails::add),
        )
        .route("/users/{userId}/emails/{emailId}", delete(emails::delete))
        .route(
            "/users/{userId}/emails/{emailId}/verify",
            post(emails::verify),
        )
        .route("/users/{userId}/emails/{emailId}/code", post(emails::code))
        .route("/users/{userId}/primary-email", put(emails::set_primary))
        .route("/roles", post(roles::create).get(roles::list))
        .route("/roles/by-name/{scope}/{name}", get(roles::by_name))
        .route(
            "/roles/{roleId}",
            get(roles::get).patch(roles::update).delete(roles::delete),
        )
        .route("/roles/{roleId}/members", get(roles::members))
        .route("/policies", post(policies::create).get(policies::list))
        .route("/policies/by-name/{name}", get(policies::by_name))
        .route(
            "/policies/{policyId}",
            get(policies::get)
                .patch(policies::update)
                .delete(policies::delete),
        )
        .route("/tenants/{tenantId}/policies", get(policies::for_tenant))
        .route("/authorize", post(authorize::one))
        .route("/authorize/batch", post(authorize::batch))
        .route("/users/{userId}/history", get(history::user))
        .route("/tenants/{tenantId}/history", get(history::tenant))
        .route("/roles/{roleId}/history", get(history::role))
        .route(
            "/tenants/{tenantId}/members/{userId}/history",
            get(history::grant),
        )
        .route("/policies/{policyId}/history", get(history::policy))
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
