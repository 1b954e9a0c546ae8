//! `authz-stream-poller`: the local stand-in for Lambda's DynamoDB Streams
//! event source mapping. Reads `TABLE_NAME`'s stream at the SDK's endpoint
//! (`AWS_ENDPOINT_URL_DYNAMODB`, which the Streams client also honours via
//! `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` or `AWS_ENDPOINT_URL`), and hands
//! batches of up to 100 records to the recompute handler, retrying a batch
//! from its first reported failure.

use std::time::{Duration, SystemTime};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    authz_core::logging::init();
    let store = authz_core::config::store_from_env().await?;
    let config = aws_config::load_from_env().await;
    let mut reader = devtools::stream::StreamReader::open(&config, store.table()).await?;
    tracing::info!(stream = reader.stream_arn(), "polling");
    loop {
        let records = reader.poll().await?;
        for batch in records.chunks(100) {
            let mut pending = batch.to_vec();
            for _attempt in 0..5 {
                let deadline = SystemTime::now() + Duration::from_secs(300);
                let response = recompute::handle(
                    &store,
                    devtools::stream::event(pending.clone()),
                    recompute::Settings::default(),
                    deadline,
                )
                .await;
                let Some(failed) = response
                    .batch_item_failures
                    .first()
                    .and_then(|f| f.item_identifier.clone())
                else {
                    break;
                };
                let from = pending
                    .iter()
                    .position(|r| r.change.sequence_number.as_deref() == Some(failed.as_str()))
                    .unwrap_or(0);
                pending = pending.split_off(from);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
