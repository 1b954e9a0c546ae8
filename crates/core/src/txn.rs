//! A builder for `TransactWriteItems` with uniqueness guards, existence and
//! version checks, and the mapping of a cancelled transaction back to the
//! action (and so the field) whose condition failed.
//!
//! Every action carries the error it means when its condition fails. A
//! cancellation is read through `CancellationReasons` by position:
//! `ConditionalCheckFailed` on a guard is `Conflict { field }`, on a version
//! check `PreconditionFailed` (or `NotFound` when the item is gone);
//! throttling reasons are `Retryable`; `TransactionConflict` (another
//! transaction touched the same item) is retried here with jittered backoff a
//! bounded number of times, so a uniqueness race ends in one success and
//! conflicts, not in 503s.

use std::collections::HashMap;
use std::collections::HashSet;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::error::{classify, is_retryable_code, Error, Result};
use crate::items::{now, Entity, Item};
use crate::keys::{attr, PrimaryKey};

/// DynamoDB's limit on actions in one transaction.
pub const MAX_ACTIONS: usize = 100;

/// How often a transaction cancelled only by `TransactionConflict` is sent
/// again before the caller sees `Retryable`.
pub const CONFLICT_RETRIES: u32 = 8;

const BACKOFF_BASE: Duration = Duration::from_millis(15);
const BACKOFF_CAP: Duration = Duration::from_millis(500);

/// What a failed condition on one action means.
#[derive(Debug, Clone)]
enum OnConditionFailed {
    /// Always this error.
    Fixed(Error),
    /// A version check: `NotFound` if the item is gone, else
    /// `PreconditionFailed`. Needs `ALL_OLD` on condition failure to tell.
    Versioned { resource: String },
}

#[derive(Debug, Clone)]
struct Action {
    item: TransactWriteItem,
    key: PrimaryKey,
    on_failed: OnConditionFailed,
}

/// A set of writes that succeed or fail together.
#[derive(Debug, Clone)]
pub struct Transaction {
    table: String,
    actions: Vec<Action>,
}

fn key_map(key: &PrimaryKey) -> Item {
    HashMap::from([
        (attr::PK.to_string(), AttributeValue::S(key.pk.clone())),
        (attr::SK.to_string(), AttributeValue::S(key.sk.clone())),
    ])
}

fn names(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn number(n: u64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

impl Transaction {
    pub fn new(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            actions: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    fn push(&mut self, key: PrimaryKey, item: TransactWriteItem, on_failed: OnConditionFailed) {
        self.actions.push(Action {
            item,
            key,
            on_failed,
        });
    }

    /// Puts a new item that must not exist yet. If it does, the transaction
    /// fails with `Conflict { field }`: this is how guards and unique keys
    /// are enforced.
    pub fn create<E: Entity>(&mut self, entity: &E, conflict_field: &str) -> Result<&mut Self> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(entity.to_item()?))
            .condition_expression("attribute_not_exists(#pk)")
            .set_expression_attribute_names(Some(names(&[("#pk", attr::PK)])))
            .build()
            .map_err(build_error)?;
        self.push(
            entity.key(),
            TransactWriteItem::builder().put(put).build(),
            OnConditionFailed::Fixed(Error::conflict(conflict_field)),
        );
        Ok(self)
    }

    /// Puts an item unconditionally (RoleMember links, whose existence is
    /// implied by the holder written in the same transaction).
    pub fn put<E: Entity>(&mut self, entity: &E) -> Result<&mut Self> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(entity.to_item()?))
            .build()
            .map_err(build_error)?;
        self.push(
            entity.key(),
            TransactWriteItem::builder().put(put).build(),
            OnConditionFailed::Fixed(Error::internal("unconditional put failed a condition")),
        );
        Ok(self)
    }

    /// Replaces an existing item whose stored `version` must equal
    /// `expected_version` (the new item carries the next version).
    pub fn replace<E: Entity>(
        &mut self,
        entity: &E,
        expected_version: u64,
        resource: &str,
    ) -> Result<&mut Self> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(entity.to_item()?))
            .condition_expression("#version = :expected")
            .set_expression_attribute_names(Some(names(&[("#version", "version")])))
            .expression_attribute_values(":expected", number(expected_version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        self.push(
            entity.key(),
            TransactWriteItem::builder().put(put).build(),
            OnConditionFailed::Versioned {
                resource: resource.to_string(),
            },
        );
        Ok(self)
    }

    /// Sets attributes of an existing item whose `version` must equal
    /// `expected_version`; bumps `version` and `updatedAt`.
    pub fn update<I>(
        &mut self,
        key: &PrimaryKey,
        set: I,
        expected_version: u64,
        resource: &str,
    ) -> Result<&mut Self>
    where
        I: IntoIterator<Item = (&'static str, AttributeValue)>,
    {
        let mut names = names(&[("#version", "version"), ("#updatedAt", "updatedAt")]);
        let mut values = HashMap::from([
            (":expected".to_string(), number(expected_version)),
            (":next".to_string(), number(expected_version + 1)),
            (":now".to_string(), AttributeValue::S(now())),
        ]);
        let mut clauses = vec![
            "#version = :next".to_string(),
            "#updatedAt = :now".to_string(),
        ];
        for (i, (name, value)) in set.into_iter().enumerate() {
            names.insert(format!("#a{i}"), name.to_string());
            values.insert(format!(":a{i}"), value);
            clauses.push(format!("#a{i} = :a{i}"));
        }
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .update_expression(format!("SET {}", clauses.join(", ")))
            .condition_expression("#version = :expected")
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().update(update).build(),
            OnConditionFailed::Versioned {
                resource: resource.to_string(),
            },
        );
        Ok(self)
    }

    /// Fails the transaction with `NotFound { resource }` unless the item
    /// exists.
    pub fn require_exists(&mut self, key: &PrimaryKey, resource: &str) -> Result<&mut Self> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .condition_expression("attribute_exists(#pk)")
            .set_expression_attribute_names(Some(names(&[("#pk", attr::PK)])))
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().condition_check(check).build(),
            OnConditionFailed::Fixed(Error::not_found(resource)),
        );
        Ok(self)
    }

    /// Fails the transaction unless the item still has `version`:
    /// `PreconditionFailed` if it changed, `NotFound` if it is gone.
    pub fn require_version(
        &mut self,
        key: &PrimaryKey,
        version: u64,
        resource: &str,
    ) -> Result<&mut Self> {
        let check = ConditionCheck::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .condition_expression("#version = :expected")
            .set_expression_attribute_names(Some(names(&[("#version", "version")])))
            .expression_attribute_values(":expected", number(version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().condition_check(check).build(),
            OnConditionFailed::Versioned {
                resource: resource.to_string(),
            },
        );
        Ok(self)
    }

    /// Deletes an item unconditionally (deleting a missing item is not an
    /// error in DynamoDB).
    pub fn delete(&mut self, key: &PrimaryKey) -> Result<&mut Self> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().delete(delete).build(),
            OnConditionFailed::Fixed(Error::internal("unconditional delete failed a condition")),
        );
        Ok(self)
    }

    /// Deletes an item only if it belongs to `owner` (its `owner_attr`
    /// attribute equals `owner`), so a guard swap can never release a value
    /// that someone else holds. A failed condition is `on_failed`.
    pub fn delete_owned(
        &mut self,
        key: &PrimaryKey,
        owner_attr: &str,
        owner: &str,
        on_failed: Error,
    ) -> Result<&mut Self> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .condition_expression("#owner = :owner")
            .set_expression_attribute_names(Some(names(&[("#owner", owner_attr)])))
            .expression_attribute_values(":owner", AttributeValue::S(owner.to_string()))
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().delete(delete).build(),
            OnConditionFailed::Fixed(on_failed),
        );
        Ok(self)
    }

    /// Deletes an item whose `version` must equal `expected_version`.
    pub fn delete_versioned(
        &mut self,
        key: &PrimaryKey,
        expected_version: u64,
        resource: &str,
    ) -> Result<&mut Self> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key_map(key)))
            .condition_expression("#version = :expected")
            .set_expression_attribute_names(Some(names(&[("#version", "version")])))
            .expression_attribute_values(":expected", number(expected_version))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build_error)?;
        self.push(
            key.clone(),
            TransactWriteItem::builder().delete(delete).build(),
            OnConditionFailed::Versioned {
                resource: resource.to_string(),
            },
        );
        Ok(self)
    }

    /// Checks the limits DynamoDB would reject the request for, so that a
    /// too-large or self-contradictory transaction is refused before sending.
    fn check(&self) -> Result<()> {
        if self.actions.is_empty() {
            return Err(Error::internal("empty transaction"));
        }
        if self.actions.len() > MAX_ACTIONS {
            return Err(Error::internal(format!(
                "transaction has {} actions; DynamoDB allows at most {MAX_ACTIONS}",
                self.actions.len()
            )));
        }
        let mut seen = HashSet::new();
        for action in &self.actions {
            if !seen.insert(&action.key) {
                return Err(Error::internal(format!(
                    "transaction touches {} twice",
                    action.key
                )));
            }
        }
        Ok(())
    }

    /// Sends the transaction. `TransactionConflict` cancellations are retried
    /// up to [`CONFLICT_RETRIES`] times with full-jitter backoff; every other
    /// outcome is returned as it is.
    pub async fn execute(&self, client: &Client) -> Result<()> {
        self.check()?;
        let items: Vec<TransactWriteItem> = self.actions.iter().map(|a| a.item.clone()).collect();
        let mut attempt = 0;
        loop {
            let sent = client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let err = match sent {
                Ok(_) => return Ok(()),
                Err(err) => err,
            };
            match self.interpret(err) {
                Outcome::Failed(e) => return Err(e),
                Outcome::Contended if attempt < CONFLICT_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Outcome::Contended => {
                    return Err(Error::retryable(format!(
                        "transaction conflict persisted after {CONFLICT_RETRIES} retries"
                    )))
                }
            }
        }
    }

    fn interpret(&self, err: SdkError<TransactWriteItemsError, HttpResponse>) -> Outcome {
        let reasons = match &err {
            SdkError::ServiceError(service) => match service.err() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    cancelled.cancellation_reasons().to_vec()
                }
                _ => return Outcome::Failed(classify("TransactWriteItems", err)),
            },
            _ => return Outcome::Failed(classify("TransactWriteItems", err)),
        };
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("None")).collect();
        // A failed condition is a definite answer about committed state, so it
        // wins over transient reasons on other items.
        for (reason, action) in reasons.iter().zip(&self.actions) {
            if reason.code() == Some("ConditionalCheckFailed") {
                return Outcome::Failed(match &action.on_failed {
                    OnConditionFailed::Fixed(e) => e.clone(),
                    OnConditionFailed::Versioned { resource } => match reason.item() {
                        Some(old) if !old.is_empty() => Error::PreconditionFailed {
                            resource: resource.clone(),
                        },
                        _ => Error::not_found(resource.clone()),
                    },
                });
            }
        }
        if let Some(code) = codes.iter().find(|c| is_retryable_code(c)) {
            return Outcome::Failed(Error::retryable(format!(
                "TransactWriteItems cancelled: {code}"
            )));
        }
        if codes.contains(&"TransactionConflict") {
            return Outcome::Contended;
        }
        Outcome::Failed(Error::internal(format!(
            "TransactWriteItems cancelled: {}",
            codes.join(", ")
        )))
    }
}

enum Outcome {
    Failed(Error),
    Contended,
}

/// Full jitter: a random delay up to min(cap, base * 2^attempt).
fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << attempt.min(16))
        .min(BACKOFF_CAP);
    Duration::from_micros(rand::random_range(0..=ceiling.as_micros() as u64))
}

fn build_error(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::internal(format!("request does not build: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded() {
        for attempt in 0..40 {
            assert!(backoff(attempt) <= BACKOFF_CAP);
        }
    }
}
