//! Sending a transaction: its limits checked first, the idempotency claim
//! of the request it answers added, a cancellation read back through its
//! `CancellationReasons` to the action whose condition failed, and
//! `TransactionConflict` retried with jittered backoff (a lost uniqueness
//! race ends at once, as a consistent read of the item shows).

use std::collections::HashSet;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use super::{Condition, OnConditionFailed, Op, Transaction, CONFLICT_RETRIES, MAX_ACTIONS};
use crate::error::{from_sdk, is_retryable_code, Error, Result};
use crate::model::items::ItemType;
use crate::model::size::MAX_TRANSACTION_BYTES;
use crate::store::revocations::{revoking_counts, settling_batch};
use crate::store::{idempotency, Store};

const BACKOFF_BASE: Duration = Duration::from_millis(10);
const BACKOFF_CAP: Duration = Duration::from_millis(1000);

impl Transaction {
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
        if self.payload() > MAX_TRANSACTION_BYTES {
            return Err(Error::internal(format!(
                "transaction sends {} bytes; DynamoDB allows at most {MAX_TRANSACTION_BYTES}",
                self.payload()
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
    /// up to [`CONFLICT_RETRIES`] times with full-jitter backoff, unless a
    /// consistent read of an item in conflict shows its condition failing
    /// already; every other outcome is returned as it is.
    ///
    /// A revoking transaction (`Transaction::revokes`) is first counted
    /// against its caller's rate (`RateLimited`, nothing sent, past it), and
    /// once committed records whom it took something from.
    pub async fn execute(&self, store: &Store) -> Result<()> {
        // A request with an idempotency key records its answer with the
        // first transaction that commits.
        match (self.counted()?, idempotency::pending()) {
            (None, None) => self.send(store).await?,
            (counted, Some(claim)) => {
                let mut with_record = counted.unwrap_or_else(|| self.clone());
                with_record.record(&claim)?;
                with_record.send(store).await?;
                idempotency::used();
            }
            (Some(counted), None) => counted.send(store).await?,
        }
        store.record_revocations(&self.revokes).await;
        Ok(())
    }

    /// Sends the transaction without the request's idempotency record: a
    /// write the request makes before its own, which records the answer.
    pub(crate) async fn execute_before_answer(&self, store: &Store) -> Result<()> {
        match self.counted()? {
            Some(counted) => counted.send(store).await?,
            None => self.send(store).await?,
        }
        store.record_revocations(&self.revokes).await;
        Ok(())
    }

    /// A revoking transaction made for a caller, with the count of the
    /// caller's revoking writes in its scope added (`None`: not one).
    fn counted(&self) -> Result<Option<Self>> {
        if (self.revokes.is_empty() && !self.counts) || settling_batch() {
            return Ok(None);
        }
        let counts = revoking_counts(self.revoking_in.as_ref());
        if counts.is_empty() {
            return Ok(None);
        }
        let mut counted = self.clone();
        for count in counts {
            counted.count_against(
                &count.key,
                ItemType::RevokingWrites.as_str(),
                count.max,
                count.expires_at,
                count.on_full,
            )?;
        }
        Ok(Some(counted))
    }

    /// Adds the idempotency record for `claim`, answering with the first
    /// entity this transaction puts.
    fn record(&mut self, claim: &idempotency::Claim) -> Result<&mut Self> {
        let item = idempotency::record_item(
            claim,
            self.actions.iter().filter_map(|a| {
                let put = a.item.put()?;
                let creates = matches!(
                    a.condition,
                    Condition::Absent | Condition::AbsentOrExpired { .. }
                );
                Some((put.item(), creates))
            }),
        );
        self.push(
            claim.key.clone(),
            Op::Put(item),
            Condition::AbsentOrExpired {
                now: crate::clock::now_seconds(),
            },
            OnConditionFailed::Fixed(Error::conflict(idempotency::KEY_FIELD)),
        )
    }

    async fn send(&self, store: &Store) -> Result<()> {
        self.check()?;
        let items: Vec<TransactWriteItem> = self.actions.iter().map(|a| a.item.clone()).collect();
        let mut attempt = 0;
        loop {
            let sent = store
                .client
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
                Outcome::Contended(positions) => {
                    if let Some(e) = self.failing_already(store, &positions).await? {
                        return Err(e);
                    }
                    if attempt >= CONFLICT_RETRIES {
                        return Err(Error::retryable(format!(
                            "transaction conflict persisted after {CONFLICT_RETRIES} retries"
                        )));
                    }
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
        }
    }

    /// When an item in conflict already fails its action's condition (a
    /// consistent read shows it), the transaction cannot succeed however
    /// often it is retried: the answer is then the first failing condition
    /// in the transaction's order, as DynamoDB would report it. `None`:
    /// worth retrying.
    async fn failing_already(&self, store: &Store, positions: &[usize]) -> Result<Option<Error>> {
        let mut doomed = false;
        for action in positions.iter().filter_map(|&i| self.actions.get(i)) {
            if action.condition != Condition::Unconditional {
                let item = store.get_item(&action.key, true).await?;
                if action.condition.fails_on(item.as_ref()) {
                    doomed = true;
                    break;
                }
            }
        }
        if !doomed {
            return Ok(None);
        }
        for action in &self.actions {
            if action.condition == Condition::Unconditional {
                continue;
            }
            let item = store.get_item(&action.key, true).await?;
            if action.condition.fails_on(item.as_ref()) {
                return Ok(Some(action.on_failed.error(item.as_ref())));
            }
        }
        Ok(None)
    }

    fn interpret(&self, err: SdkError<TransactWriteItemsError, HttpResponse>) -> Outcome {
        let reasons = match &err {
            SdkError::ServiceError(service) => match service.err() {
                TransactWriteItemsError::TransactionCanceledException(cancelled) => {
                    cancelled.cancellation_reasons().to_vec()
                }
                _ => return Outcome::Failed(from_sdk("TransactWriteItems", err)),
            },
            _ => return Outcome::Failed(from_sdk("TransactWriteItems", err)),
        };
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("None")).collect();
        // A failed condition is a definite answer about committed state, so it
        // wins over transient reasons on other items.
        for (reason, action) in reasons.iter().zip(&self.actions) {
            if reason.code() == Some("ConditionalCheckFailed") {
                return Outcome::Failed(action.on_failed.error(reason.item()));
            }
        }
        if let Some(code) = codes.iter().find(|c| is_retryable_code(c)) {
            return Outcome::Failed(Error::retryable(format!(
                "TransactWriteItems cancelled: {code}"
            )));
        }
        let contended: Vec<usize> = codes
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == "TransactionConflict")
            .map(|(i, _)| i)
            .collect();
        if !contended.is_empty() {
            return Outcome::Contended(contended);
        }
        Outcome::Failed(Error::internal(format!(
            "TransactWriteItems cancelled: {}",
            codes.join(", ")
        )))
    }
}

enum Outcome {
    Failed(Error),
    /// Cancelled by `TransactionConflict` at these positions.
    Contended(Vec<usize>),
}

/// Full jitter: a random delay up to min(cap, base * 2^attempt).
pub(crate) fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << attempt.min(16))
        .min(BACKOFF_CAP);
    Duration::from_micros(rand::random_range(0..=ceiling.as_micros() as u64))
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
