//! `authorizer`: the API Gateway REQUEST authorizer Lambda.
//!
//! Start-up reads the configuration (failing with the variable named), loads
//! the route rules, builds one DynamoDB client and hands the authorizer to
//! the runtime. Errors returned to the runtime are `Unauthorized` (401) or a
//! dependency failure (500, not cached by API Gateway).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::logging::init();
    let config = authorizer::config::Config::from_lookup(|k| std::env::var(k).ok())?;
    let sdk = aws_config::load_from_env().await;
    let store = authz_core::Store::new(
        aws_sdk_dynamodb::Client::new(&sdk),
        config.table_name.clone(),
    );
    let authorizer = authorizer::build(&config, store)?;
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| {
        let authorizer = &authorizer;
        async move {
            authorizer::handler::handle(authorizer, event.payload)
                .await
                .map_err(Error::from)
        }
    }))
    .await
}
