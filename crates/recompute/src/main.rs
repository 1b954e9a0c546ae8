//! `recompute`: the DynamoDB Streams consumer behind the table's stream
//! (`ReportBatchItemFailures`). Start-up reads `TABLE_NAME` and
//! `RECOMPUTE_CONCURRENCY` (pages in flight, default 8), builds one client, and hands each
//! batch to the library with the invocation's deadline.

use std::time::SystemTime;

use aws_lambda_events::dynamodb::Event;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::logging::init();
    let store = authz_core::config::store_from_env().await?;
    let concurrency = match std::env::var("RECOMPUTE_CONCURRENCY") {
        Err(_) => recompute::DEFAULT_CONCURRENCY,
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=256).contains(n))
            .ok_or("configuration: RECOMPUTE_CONCURRENCY: must be a whole number from 1 to 256")?,
    };
    let settings = recompute::Settings { concurrency };
    lambda_runtime::run(service_fn(|event: LambdaEvent<Event>| {
        let store = &store;
        async move {
            let deadline = recompute::deadline_from(event.context.deadline, SystemTime::now());
            Ok::<_, Error>(recompute::handle(store, event.payload, settings, deadline).await)
        }
    }))
    .await
}
