//! What DynamoDB says a client's requests cost: an SDK interceptor that asks
//! every request for `ReturnConsumedCapacity: TOTAL` and adds up the
//! requests and the capacity units the answers report. The code under
//! measurement is unchanged; only its client carries the interceptor.

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::operation::{
    batch_get_item::{BatchGetItemInput, BatchGetItemOutput},
    batch_write_item::{BatchWriteItemInput, BatchWriteItemOutput},
    delete_item::{DeleteItemInput, DeleteItemOutput},
    get_item::{GetItemInput, GetItemOutput},
    put_item::{PutItemInput, PutItemOutput},
    query::{QueryInput, QueryOutput},
    transact_write_items::{TransactWriteItemsInput, TransactWriteItemsOutput},
    update_item::{UpdateItemInput, UpdateItemOutput},
};
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextMut, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Requests and capacity so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub requests: usize,
    pub read_units: f64,
    pub write_units: f64,
}

/// The interceptor; clone it into a client's config and read it back.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    usage: Arc<Mutex<Usage>>,
}

impl Meter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn usage(&self) -> Usage {
        *self.usage.lock().expect("meter lock")
    }

    pub fn reset(&self) {
        *self.usage.lock().expect("meter lock") = Usage::default();
    }

    /// A client for `config` whose requests this meter measures.
    pub fn client(&self, config: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
        let conf = aws_sdk_dynamodb::config::Builder::from(config)
            .interceptor(self.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    /// Adds what one answer reports. DynamoDB Local reports the total in
    /// `CapacityUnits` only; the operation says whether those are reads or
    /// writes.
    fn add(&self, capacity: &[ConsumedCapacity], write: bool) {
        let mut usage = self.usage.lock().expect("meter lock");
        for c in capacity {
            match (c.read_capacity_units, c.write_capacity_units) {
                (None, None) if write => usage.write_units += c.capacity_units.unwrap_or(0.0),
                (None, None) => usage.read_units += c.capacity_units.unwrap_or(0.0),
                (r, w) => {
                    usage.read_units += r.unwrap_or(0.0);
                    usage.write_units += w.unwrap_or(0.0);
                }
            }
        }
    }
}

macro_rules! ask_for_capacity {
    ($input:expr, $($t:ty),*) => {
        $(if let Some(i) = $input.downcast_mut::<$t>() {
            i.return_consumed_capacity = Some(ReturnConsumedCapacity::Total);
        })*
    };
}

impl Intercept for Meter {
    fn name(&self) -> &'static str {
        "Meter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input_mut();
        ask_for_capacity!(
            input,
            GetItemInput,
            BatchGetItemInput,
            QueryInput,
            PutItemInput,
            UpdateItemInput,
            DeleteItemInput,
            BatchWriteItemInput,
            TransactWriteItemsInput
        );
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.usage.lock().expect("meter lock").requests += 1;
        let Some(Ok(output)) = context.output_or_error() else {
            return Ok(());
        };
        if let Some(o) = output.downcast_ref::<GetItemOutput>() {
            self.add(o.consumed_capacity.as_slice(), false);
        } else if let Some(o) = output.downcast_ref::<BatchGetItemOutput>() {
            self.add(o.consumed_capacity(), false);
        } else if let Some(o) = output.downcast_ref::<QueryOutput>() {
            self.add(o.consumed_capacity.as_slice(), false);
        } else if let Some(o) = output.downcast_ref::<PutItemOutput>() {
            self.add(o.consumed_capacity.as_slice(), true);
        } else if let Some(o) = output.downcast_ref::<UpdateItemOutput>() {
            self.add(o.consumed_capacity.as_slice(), true);
        } else if let Some(o) = output.downcast_ref::<DeleteItemOutput>() {
            self.add(o.consumed_capacity.as_slice(), true);
        } else if let Some(o) = output.downcast_ref::<BatchWriteItemOutput>() {
            self.add(o.consumed_capacity(), true);
        } else if let Some(o) = output.downcast_ref::<TransactWriteItemsOutput>() {
            self.add(o.consumed_capacity(), true);
        }
        Ok(())
    }
}
