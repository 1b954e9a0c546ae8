//! The route table: every endpoint of the admin API, its handler and its
//! OpenAPI operation, and the layers around them.

pub(crate) mod authorize;
mod directory;
mod emails;
mod grants;
pub(crate) mod history;
mod identities;
mod invitations;
mod me;
mod policies;
mod roles;
pub(crate) mod scim;
mod scim_groups;
mod scim_patch;
mod tenants;
mod users;

use axum::extract::MatchedPath;
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::Router;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_axum::PathItemExt;

use authz_core::runtime::metrics::{dimension, name, status_class};

use authz_core::store::PolicyCache;
use authz_core::Store;

use crate::error::ApiError;
use crate::StatementRules;

/// What the handlers share: `State<Store>`, `State<StatementRules>` and
/// `State<PolicyCache>` are extracted from it.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Store,
    pub statement_rules: StatementRules,
    /// The policy set the check API decides with, held across requests and
    /// read again only when the set's counts say it changed
    /// (`PolicyCache::as_of`).
    pub policies: PolicyCache,
}

impl axum::extract::FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Self {
        state.store.clone()
    }
}

impl axum::extract::FromRef<AppState> for StatementRules {
    fn from_ref(state: &AppState) -> Self {
        state.statement_rules.clone()
    }
}

impl axum::extract::FromRef<AppState> for PolicyCache {
    fn from_ref(state: &AppState) -> Self {
        state.policies.clone()
    }
}

/// Calls `$then!` with every handler of the API: the one list the router
/// (`router`) and the document (`api`) are built from. Each handler's
/// `#[utoipa::path]` names its method and path.
macro_rules! with_handlers {
    ($then:ident) => {
        $then!(
            tenants::create,
            tenants::list,
            tenants::by_name,
            tenants::get,
            tenants::rename,
            tenants::delete,
            grants::list,
            grants::put,
            grants::get,
            grants::delete,
            grants::permissions,
            grants::by_id,
            invitations::create,
            invitations::list,
            invitations::revoke,
            invitations::accept,
            invitations::decline,
            invitations::for_user,
            me::me,
            me::sign_up,
            me::details,
            users::create,
            users::list,
            users::search,
            users::by_email,
            users::get,
            users::update,
            users::delete,
            users::tenants,
            emails::list,
            emails::add,
            emails::delete,
            emails::verify,
            emails::code,
            emails::set_primary,
            identities::list,
            identities::link,
            identities::unlink,
            identities::by_identity,
            roles::create,
            roles::list,
            roles::by_name,
            roles::get,
            roles::update,
            roles::delete,
            roles::members,
            roles::permissions,
            roles::for_tenant,
            policies::create,
            policies::list,
            policies::by_name,
            policies::get,
            policies::update,
            policies::delete,
            policies::for_tenant,
            policies::create_for_tenant,
            policies::get_for_tenant,
            policies::update_for_tenant,
            policies::delete_for_tenant,
            authorize::one,
            authorize::batch,
            history::user,
            history::tenant,
            history::role,
            history::grant,
            history::policy,
            history::platform,
            history::tenant_feed,
            directory::create,
            directory::list,
            directory::revoke,
            scim::service_provider_config,
            scim::resource_types,
            scim::resource_type,
            scim::schemas,
            scim::schema,
            scim::create_user,
            scim::list_users,
            scim::get_user,
            scim::replace_user,
            scim::patch_user,
            scim::delete_user,
            scim_groups::create_group,
            scim_groups::list_groups,
            scim_groups::get_group,
            scim_groups::replace_group,
            scim_groups::patch_group,
            scim_groups::delete_group,
            directory::groups,
            directory::map_group,
        )
    };
}

/// Registers each handler at its annotation's path and methods, building
/// nothing else: the router a cold start needs.
macro_rules! plain_router {
    ($($module:ident :: $handler:ident),* $(,)?) => {{
        let router = Router::new();
        $(
            let router = utoipa_axum::paste! {
                register::<$module::[<__path_ $handler>], _, _>(router, $module::$handler)
            };
        )*
        router
    }};
}

/// The routes with their OpenAPI operations and schemas (`crate::openapi`).
macro_rules! documented_router {
    ($($module:ident :: $handler:ident),* $(,)?) => {{
        OpenApiRouter::new()$(.routes(routes!($module::$handler)))*
    }};
}

/// `handler` at the path and methods its annotation (`P`) names; a path
/// registered again gains the new methods.
fn register<P, H, T>(router: Router<AppState>, handler: H) -> Router<AppState>
where
    P: utoipa::Path,
    H: axum::handler::Handler<T, AppState>,
    T: 'static,
{
    let methods = P::methods()
        .iter()
        .fold(MethodRouter::new(), |methods, method| {
            methods.on(method.to_method_filter(), handler.clone())
        });
    router.route(&P::path(), methods)
}

/// Every route of the API with its OpenAPI operation.
pub fn api() -> OpenApiRouter<AppState> {
    with_handlers!(documented_router)
}

/// The API's routes, with JSON 404/405 answers for the rest. Built from
/// the annotations' paths and methods only: the OpenAPI operations (a few
/// milliseconds to build) are left to `api`.
pub fn router(state: AppState) -> Router {
    let routes: Router<AppState> = with_handlers!(plain_router);
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
        .fallback(
            |method: axum::http::Method, uri: axum::http::Uri| async move {
                scim::unrouted(&method, &uri)
            },
        )
        .method_not_allowed_fallback(|uri: axum::http::Uri| async move {
            scim::or_scim(&uri, ApiError::MethodNotAllowed)
        })
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
