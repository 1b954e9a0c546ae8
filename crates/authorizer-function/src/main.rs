//! `authorizer`: the API Gateway REQUEST authorizer Lambda.
//!
//! Start-up reads the configuration (failing with the variable named), loads
//! the route rules and hands the authorizer to the runtime at once; the
//! DynamoDB client (whose configuration reads the trust roots, most of a
//! cold start's CPU) is built in a task the first request starts.
//! Errors returned to the runtime are `Unauthorized` (401) or a dependency
//! failure (500, not cached by API Gateway).

// The SDK's configuration future, built in a task, is deep enough for
// rustc's default query depth when dev-dependency features are unified in.
#![recursion_limit = "256"]

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::value::RawValue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::runtime::logging::init();
    authz_core::runtime::metrics::init("authorizer");
    let config = authorizer::config::Config::from_lookup(|k| std::env::var(k).ok())?;
    let table = config.table_name.clone();
    let store = authorizer::deferred::Deferred::on_first_use(move || async move {
        let sdk = authz_core::runtime::aws::sdk_config().await;
        authz_core::Store::new(authz_core::runtime::aws::dynamodb_client(&sdk), table)
    });
    let authorizer = authorizer::build(&config, store)?;
    // The event is kept as the runtime read it (checked to be JSON) and
    // read into its shape's type by the handler.
    lambda_runtime::run(service_fn(|event: LambdaEvent<Box<RawValue>>| {
        let authorizer = &authorizer;
        async move {
            let answer = authorizer::handler::handle(authorizer, event.payload.get()).await;
            authz_core::runtime::metrics::flush();
            answer.map_err(Error::from)
        }
    }))
    .await
}
