//! `authorizer`: the API Gateway REQUEST authorizer.
//!
//! Start-up reads `TABLE_NAME` and builds the DynamoDB client from the SDK's
//! standard configuration, failing fast with the variable named. The handler
//! is filled in by issue #4; until then every invocation fails loudly rather
//! than answering anything.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::logging::init();
    let store = authz_core::config::store_from_env().await?;
    tracing::info!(table = store.table(), "authorizer starting");
    lambda_runtime::run(service_fn(|_event: LambdaEvent<Value>| async {
        Err::<Value, Error>("authorizer: not implemented yet (issue #4)".into())
    }))
    .await
}
