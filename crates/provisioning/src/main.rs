//! `provisioning`: the admin HTTP API for tenants, users, roles, tenant
//! grants and policy metadata, behind API Gateway's REST proxy integration.

use lambda_http::Error;
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::runtime::logging::init();
    authz_core::runtime::metrics::init("provisioning");
    let store = authz_core::Store::from_env().await?;
    let statement_rules = provisioning::StatementRules::from_lookup(|v| std::env::var(v).ok())?;
    // The request's metrics are written when its response is ready.
    let app = provisioning::app(store, statement_rules).map_response(|response| {
        authz_core::runtime::metrics::flush();
        response
    });
    lambda_http::run(app).await
}
