//! The provisioning API: an axum router over the core store, served by
//! `lambda_http` behind API Gateway (REST proxy integration).
//!
//! Handlers validate their `bodies` into the core crate's input types, write through the
//! store's transactions and answer with the views in `views`; `error` is the
//! one place an outcome becomes a status code.

pub mod bodies;
pub mod bootstrap;
pub mod change;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod idempotency;
mod objects;
pub mod openapi;
pub mod statement_rules;
pub mod views;

use axum::Router;
use lambda_http::Request;
use lambda_http::RequestExt;
use tower::ServiceExt;

use authz_core::store::PolicyCache;
use authz_core::Store;

pub use handlers::AppState;
pub use statement_rules::StatementRules;

/// The API as a service for `lambda_http::run` (or a test's `oneshot`).
///
/// Routes match the path API Gateway received without the stage prefix
/// (`/prod/tenants` is `/tenants`), whatever
/// `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` says.
pub fn app(store: Store, statement_rules: StatementRules) -> App {
    // Wrapped around the router (not `Router::layer`, which runs after
    // routing) so the rewritten path is the one routed.
    // Never refreshed on a timer: each check reads the counts (`as_of`).
    let policies = PolicyCache::new(std::time::Duration::ZERO, statement_rules.caching());
    handlers::router(AppState {
        store,
        statement_rules,
        policies,
    })
    .map_request(without_stage as fn(Request) -> Request)
}

/// The service `app` returns.
pub type App = tower::util::MapRequest<Router, fn(Request) -> Request>;

fn without_stage(mut request: Request) -> Request {
    let raw = request.raw_http_path();
    if raw.is_empty() || raw == request.uri().path() {
        return request;
    }
    let target = match request.uri().query() {
        Some(q) => format!("{raw}?{q}"),
        None => raw.to_string(),
    };
    if let Ok(uri) = target.parse() {
        *request.uri_mut() = uri;
    }
    request
}
