//! A DynamoDB Streams poller: every shard of a table's latest stream from
//! its trim horizon, records converted to `aws_lambda_events` stream records
//! (images as `serde_dynamo::Item`), in sequence order per shard.

use std::collections::HashMap;

use aws_lambda_events::dynamodb::{EventRecord, StreamRecord, StreamViewType};
use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};

/// Reads a table's stream.
pub struct StreamReader {
    client: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    region: String,
    /// Per shard: the next iterator; `None` once a closed shard is
    /// exhausted. Shards whose first iterator could not be had yet are absent.
    iterators: HashMap<String, Option<String>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl StreamReader {
    /// Opens the latest stream of `table` at its trim horizon.
    pub async fn open(config: &aws_config::SdkConfig, table: &str) -> Result<Self, BoxError> {
        let arn = latest_stream_arn(config, table).await?;
        Self::for_stream(config, arn).await
    }

    /// Opens a stream at its trim horizon, reading it with `config` (the
    /// event source mapping reads with its function's role).
    pub async fn for_stream(
        config: &aws_config::SdkConfig,
        stream_arn: String,
    ) -> Result<Self, BoxError> {
        let mut reader = Self {
            client: aws_sdk_dynamodbstreams::Client::new(config),
            stream_arn,
            region: config.region().map(|r| r.to_string()).unwrap_or_default(),
            iterators: HashMap::new(),
        };
        reader.discover_shards().await?;
        Ok(reader)
    }

    pub fn stream_arn(&self) -> &str {
        &self.stream_arn
    }

    async fn discover_shards(&mut self) -> Result<(), BoxError> {
        let mut start: Option<String> = None;
        loop {
            let out = self
                .client
                .describe_stream()
                .stream_arn(&self.stream_arn)
                .set_exclusive_start_shard_id(start.clone())
                .send()
                .await
                .map_err(|e| format!("DescribeStream {}: {e:?}", self.stream_arn))?;
            let description = out.stream_description.ok_or("no stream description")?;
            for shard in description.shards.unwrap_or_default() {
                let Some(id) = shard.shard_id else { continue };
                if self.iterators.contains_key(&id) {
                    continue;
                }
                let iterator = self
                    .client
                    .get_shard_iterator()
                    .stream_arn(&self.stream_arn)
                    .shard_id(&id)
                    .shard_iterator_type(ShardIteratorType::TrimHorizon)
                    .send()
                    .await;
                match iterator {
                    Ok(out) => {
                        self.iterators.insert(id, out.shard_iterator);
                    }
                    // DynamoDB Local answers this for a shard with no
                    // records yet: try again at the next poll.
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|e| e.is_trimmed_data_access_exception()) => {}
                    Err(e) => return Err(format!("GetShardIterator {id}: {e:?}").into()),
                }
            }
            start = description.last_evaluated_shard_id;
            if start.is_none() {
                return Ok(());
            }
        }
    }

    /// Every record that arrived since the last poll, shard by shard.
    pub async fn poll(&mut self) -> Result<Vec<EventRecord>, BoxError> {
        let mut records = Vec::new();
        for _ in 0..3 {
            let (page, retry) = self.poll_once().await?;
            records.extend(page);
            if !retry {
                break;
            }
        }
        Ok(records)
    }

    async fn poll_once(&mut self) -> Result<(Vec<EventRecord>, bool), BoxError> {
        self.discover_shards().await?;
        let mut retry_discovery = false;
        let mut records = Vec::new();
        let shards: Vec<String> = self.iterators.keys().cloned().collect();
        for shard in shards {
            // Drain the shard: GetRecords may return a page at a time.
            while let Some(Some(iterator)) = self.iterators.get(&shard).cloned() {
                let out = match self
                    .client
                    .get_records()
                    .shard_iterator(iterator)
                    .limit(1000)
                    .send()
                    .await
                {
                    Ok(out) => out,
                    // DynamoDB Local: an iterator taken while the shard was
                    // still empty can go stale. Nothing was read through it;
                    // take a fresh one from the trim horizon next time.
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|e| e.is_trimmed_data_access_exception()) =>
                    {
                        self.iterators.remove(&shard);
                        retry_discovery = true;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                };
                let page = out.records.unwrap_or_default();
                let empty = page.is_empty();
                records.extend(page.into_iter().map(|r| self.to_event_record(r)));
                self.iterators
                    .insert(shard.clone(), out.next_shard_iterator);
                if empty {
                    break;
                }
            }
        }
        Ok((records, retry_discovery))
    }

    /// Lambda's shape of a stream record.
    pub fn to_event_record(&self, record: Record) -> EventRecord {
        let mut change = StreamRecord::default();
        if let Some(d) = record.dynamodb {
            change.keys = d.keys.map(serde_dynamo::Item::from).unwrap_or_default();
            change.new_image = d
                .new_image
                .map(serde_dynamo::Item::from)
                .unwrap_or_default();
            change.old_image = d
                .old_image
                .map(serde_dynamo::Item::from)
                .unwrap_or_default();
            change.sequence_number = d.sequence_number;
            change.size_bytes = d.size_bytes.unwrap_or_default();
            change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        }
        let mut event = EventRecord::default();
        event.aws_region = self.region.clone();
        event.event_id = record.event_id.unwrap_or_default();
        event.event_name = record
            .event_name
            .map(|n| n.as_str().to_string())
            .unwrap_or_default();
        event.event_source = Some("aws:dynamodb".into());
        event.event_version = record.event_version;
        event.event_source_arn = Some(self.stream_arn.clone());
        event.change = change;
        event
    }
}

/// The ARN of a table's latest stream (`DescribeTable`).
pub async fn latest_stream_arn(
    config: &aws_config::SdkConfig,
    table: &str,
) -> Result<String, BoxError> {
    let dynamodb = aws_sdk_dynamodb::Client::new(config);
    let described = dynamodb.describe_table().table_name(table).send().await?;
    Ok(described
        .table
        .and_then(|t| t.latest_stream_arn)
        .ok_or("the table has no stream")?)
}

/// Wraps records in the event Lambda's event source mapping sends.
pub fn event(records: Vec<EventRecord>) -> aws_lambda_events::dynamodb::Event {
    let mut event = aws_lambda_events::dynamodb::Event::default();
    event.records = records;
    event
}
