//! `hello`: a bare `lambda_runtime` function that echoes its event, built
//! with the same release profile as the functions: the cold-start baseline
//! `make bench` measures the authorizer against.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<_, Error>(event.payload)
    }))
    .await
}
