//! `provisioning`: the admin HTTP API for tenants, users, roles, tenant
//! grants and policy metadata, behind API Gateway's REST proxy integration.

use lambda_http::Error;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::logging::init();
    let store = authz_core::config::store_from_env().await?;
    let policy_rules = provisioning::PolicyRules::from_lookup(|v| std::env::var(v).ok())?;
    lambda_http::run(provisioning::app(store, policy_rules)).await
}
