//! `provisioning`: the admin HTTP API for tenants, users, roles, grants and policies.
//!
//! Start-up reads `TABLE_NAME` and builds the DynamoDB client from the SDK's
//! standard configuration, failing fast with the variable named. The handler
//! is filled in by issue #3; until then every invocation fails loudly rather
//! than answering anything.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::logging::init();
    let store = authz_core::config::store_from_env().await?;
    tracing::info!(table = store.table(), "provisioning starting");
    lambda_runtime::run(service_fn(|_event: LambdaEvent<Value>| async {
        Err::<Value, Error>("provisioning: not implemented yet (issue #3)".into())
    }))
    .await
}
