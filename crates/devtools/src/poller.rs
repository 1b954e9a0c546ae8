//! The local stand-in for Lambda's DynamoDB Streams event source mappings:
//! each reads the table's stream, keeps the records its filter passes, and
//! invokes the `recompute` function through the
//! Invoke API with batches in Lambda's event shape, honouring
//! `ReportBatchItemFailures` (a batch is retried from its first reported
//! failure) with bounded retries, like the template's mapping.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::dynamodb::EventRecord;
use aws_lambda_events::streams::DynamoDbEventResponse;

use crate::lambda::{Functions, Invoked};
use crate::stream::{event, StreamReader};

/// Records per invocation (the template's default `StreamBatchSize`).
pub const BATCH_SIZE: usize = 100;
/// Retries of a failing batch before it is given up (logged, as the
/// mapping would send it to the on-failure queue).
pub const MAX_RETRIES: usize = 10;
const POLL_INTERVAL: Duration = Duration::from_millis(250);
const INVOKE_TIMEOUT: Duration = Duration::from_secs(300);

/// What the poller has done so far.
#[derive(Debug, Default)]
pub struct PollerStats {
    pub records: AtomicUsize,
    pub invocations: AtomicUsize,
    pub retries: AtomicUsize,
    pub given_up: AtomicUsize,
    /// Polls in a row that found nothing new.
    pub idle_polls: AtomicUsize,
}

impl PollerStats {
    pub fn records(&self) -> usize {
        self.records.load(Ordering::Relaxed)
    }

    pub fn retries(&self) -> usize {
        self.retries.load(Ordering::Relaxed)
    }

    pub fn given_up(&self) -> usize {
        self.given_up.load(Ordering::Relaxed)
    }

    /// Waits until the stream has been drained (two empty polls in a row
    /// after everything before was delivered), at most `limit`.
    pub async fn drained(&self, limit: Duration) -> bool {
        let started = std::time::Instant::now();
        self.idle_polls.store(0, Ordering::Relaxed);
        while started.elapsed() < limit {
            if self.idle_polls.load(Ordering::Relaxed) >= 2 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }
}

/// Which records a mapping delivers (its filter criteria).
pub type Filter = fn(&EventRecord) -> bool;

/// The template's `RevocationStream` mapping: the revocations item
/// written, after which API Gateway's caches are flushed.
pub fn revocations(record: &EventRecord) -> bool {
    let revocations = authz_core::model::items::ItemType::Revocations.as_str();
    record.change.new_image.get("Type")
        == Some(&serde_dynamo::AttributeValue::S(revocations.to_string()))
}

/// The template's `TableStream` mapping, as far as the local stack needs:
/// everything but the revocations item (the function ignores the rest).
pub fn all_but_revocations(record: &EventRecord) -> bool {
    !revocations(record)
}

/// Polls forever, delivering the records `only` passes; run it as a task
/// and abort it to stop. Each mapping reads the stream with a reader of
/// its own, as Lambda's mappings keep their own places in each shard.
pub async fn run(
    mut reader: StreamReader,
    functions: Functions,
    function: String,
    stats: Arc<PollerStats>,
    only: Filter,
) {
    loop {
        match reader.poll().await {
            Ok(mut records) => {
                records.retain(only);
                if records.is_empty() {
                    stats.idle_polls.fetch_add(1, Ordering::Relaxed);
                } else {
                    stats.idle_polls.store(0, Ordering::Relaxed);
                }
                for batch in records.chunks(BATCH_SIZE) {
                    deliver(&functions, &function, batch.to_vec(), &stats).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "stream poll failed; retrying"),
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Invokes `function` with `batch` until every record is processed or the
/// retries run out.
async fn deliver(
    functions: &Functions,
    function: &str,
    mut batch: Vec<aws_lambda_events::dynamodb::EventRecord>,
    stats: &PollerStats,
) {
    for attempt in 0..=MAX_RETRIES {
        if attempt > 0 {
            stats.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        stats.invocations.fetch_add(1, Ordering::Relaxed);
        let payload =
            serde_json::to_value(event(batch.clone())).expect("a stream event serializes");
        let failed_from = match functions.invoke(function, &payload, INVOKE_TIMEOUT).await {
            Ok(Invoked::Response(value)) => {
                match serde_json::from_value::<DynamoDbEventResponse>(value) {
                    Ok(response) => match response
                        .batch_item_failures
                        .first()
                        .and_then(|f| f.item_identifier.clone())
                    {
                        None => {
                            stats.records.fetch_add(batch.len(), Ordering::Relaxed);
                            return;
                        }
                        Some(sequence) => batch
                            .iter()
                            .position(|r| r.change.sequence_number.as_deref() == Some(&sequence))
                            .unwrap_or(0),
                    },
                    Err(e) => {
                        tracing::warn!(error = %e, "recompute answered something else than a batch response");
                        0
                    }
                }
            }
            Ok(Invoked::FunctionError { message, .. }) => {
                tracing::warn!(%message, "recompute failed the whole batch");
                0
            }
            Err(e) => {
                tracing::warn!(error = %e, "recompute could not be invoked");
                0
            }
        };
        stats.records.fetch_add(failed_from, Ordering::Relaxed);
        batch = batch.split_off(failed_from);
    }
    stats.given_up.fetch_add(batch.len(), Ordering::Relaxed);
    tracing::error!(
        records = batch.len(),
        "giving up on stream records after {MAX_RETRIES} retries (run `make audit REPAIR=1`)"
    );
}
