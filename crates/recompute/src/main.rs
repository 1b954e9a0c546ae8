//! `recompute`: the DynamoDB Streams consumer behind the table's stream
//! (`ReportBatchItemFailures`). Start-up reads `TABLE_NAME`,
//! `RECOMPUTE_CONCURRENCY` (pages in flight, default 8) and, to flush API
//! Gateway's authorizer cache after revocations, `REST_API_ID`,
//! `STAGE_NAME` and `REVOCATION_CHECK_SECONDS`; builds the clients, and
//! hands each batch to the library with the invocation's deadline.

use aws_lambda_events::dynamodb::Event;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    authz_core::runtime::logging::init();
    authz_core::runtime::metrics::init("recompute");
    let store = authz_core::Store::from_env().await?;
    let lookup = |name: &str| std::env::var(name).ok();
    let sdk = authz_core::runtime::aws::sdk_config().await;
    let settings = recompute::Settings::from_lookup(lookup)?
        .with_flush(recompute::flush::CacheFlush::from_lookup(lookup, &sdk)?);
    lambda_runtime::run(service_fn(|event: LambdaEvent<Event>| {
        let (store, settings) = (&store, settings.clone());
        async move {
            let deadline =
                recompute::deadline_from(event.context.deadline, authz_core::clock::system_now());
            // Boxed: the handler's future (fan-outs, deletes) is deep enough
            // that laying it out inline in this block exceeds rustc's query
            // depth limit; behind a pointer it costs one allocation a batch.
            let handled = Box::pin(recompute::handle(store, event.payload, settings, deadline));
            let response = handled.await;
            authz_core::runtime::metrics::flush();
            Ok::<_, Error>(response)
        }
    }))
    .await
}
