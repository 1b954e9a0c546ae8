//! Idempotent writes: the answer to a request made with an idempotency key
//! is recorded in the same transaction as the write it answers. A retried
//! request finds either no record (the write did not happen; it runs now) or
//! the record (the write happened; its answer is given again), never a write
//! without its record.
//!
//! The API layer runs a request inside [`with_claim`]; the first transaction
//! that commits inside it (`Transaction::execute`) also puts the record,
//! conditioned on there being none that is still live, so two identical
//! requests at once cannot both write.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use crate::clock::epoch_seconds;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::clock::{now, now_seconds};
use crate::error::{Error, Result};
use crate::model::items::{Item, ItemType};
use crate::model::keys::{attr, PrimaryKey};
use crate::store::Store;

/// How long a key answers with its first answer (and the record lives; the
/// table's TTL on `expiresAt` removes it some time after).
pub const IDEMPOTENCY_WINDOW: Duration = Duration::from_secs(600);

/// The field a request's idempotency key is named by in errors (the
/// header): a `Conflict` on it means another request with the key
/// committed first.
pub const KEY_FIELD: &str = "Idempotency-Key";

/// The record's TTL attribute (the template's `TimeToLiveSpecification`).
pub const EXPIRES_AT: &str = "expiresAt";

/// Item types a write answers with: the first Put of one of these in the
/// transaction is the entity the answer shows.
const ANSWER_TYPES: [ItemType; 6] = [
    ItemType::Tenant,
    ItemType::User,
    ItemType::Role,
    ItemType::TenantGrant,
    ItemType::Policy,
    ItemType::Invitation,
];

/// A request's claim on its key, carried to the transaction that writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub key: PrimaryKey,
    /// A digest of the request (method, path, body): a repeat must match.
    pub request_hash: String,
    /// Epoch seconds.
    pub expires_at: u64,
}

impl Claim {
    pub fn new(key: PrimaryKey, request_hash: String) -> Self {
        Self {
            key,
            request_hash,
            expires_at: epoch_seconds(crate::clock::system_now() + IDEMPOTENCY_WINDOW),
        }
    }
}

/// What a committed request wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub request_hash: String,
    /// The entity the write put, as stored (None for a delete).
    pub entity: Option<Item>,
    /// Whether the write created the entity.
    pub created: bool,
}

tokio::task_local! {
    /// Some until a transaction commits with it.
    static CLAIM: RefCell<Option<Claim>>;
}

/// Runs `work` holding `claim`; says whether a transaction committed the
/// record (false: nothing was written, or the write failed).
pub async fn with_claim<F: Future>(claim: Claim, work: F) -> (F::Output, bool) {
    CLAIM
        .scope(RefCell::new(Some(claim)), async move {
            let out = work.await;
            let recorded = CLAIM.with(|c| c.borrow().is_none());
            (out, recorded)
        })
        .await
}

/// The claim the current request holds and has not yet used.
pub(crate) fn pending() -> Option<Claim> {
    CLAIM.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// The claim was committed with a write.
pub(crate) fn used() {
    let _ = CLAIM.try_with(|c| c.borrow_mut().take());
}

/// The record item for `claim`, answering with the first answer-type item
/// among `puts` (each with whether its Put required it to be absent).
pub(crate) fn record_item<'a>(
    claim: &Claim,
    puts: impl IntoIterator<Item = (&'a Item, bool)>,
) -> Item {
    let answer = puts.into_iter().find(|(item, _)| {
        item.get(attr::TYPE)
            .and_then(|t| t.as_s().ok())
            .is_some_and(|t| ANSWER_TYPES.iter().any(|a| a.as_str() == t))
    });
    let mut item: Item = HashMap::from([
        (
            attr::PK.to_string(),
            AttributeValue::S(claim.key.pk.clone()),
        ),
        (
            attr::SK.to_string(),
            AttributeValue::S(claim.key.sk.clone()),
        ),
        (
            attr::TYPE.to_string(),
            AttributeValue::S(ItemType::IdempotencyRecord.as_str().to_string()),
        ),
        (
            "requestHash".to_string(),
            AttributeValue::S(claim.request_hash.clone()),
        ),
        (
            EXPIRES_AT.to_string(),
            AttributeValue::N(claim.expires_at.to_string()),
        ),
        ("createdAt".to_string(), AttributeValue::S(now())),
    ]);
    if let Some((entity, created)) = answer {
        item.insert("entity".to_string(), AttributeValue::M(entity.clone()));
        item.insert("created".to_string(), AttributeValue::Bool(created));
    }
    item
}

impl Store {
    /// The live record under `key`, if any (an expired one that TTL has not
    /// yet removed is none).
    pub async fn idempotency_record(&self, key: &PrimaryKey) -> Result<Option<Record>> {
        let Some(item) = self.get_item(key, true).await? else {
            return Ok(None);
        };
        let expires_at = item
            .get(EXPIRES_AT)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| Error::internal("an idempotency record without expiresAt"))?;
        if expires_at < now_seconds() {
            return Ok(None);
        }
        let request_hash = item
            .get("requestHash")
            .and_then(|v| v.as_s().ok())
            .cloned()
            .ok_or_else(|| Error::internal("an idempotency record without requestHash"))?;
        Ok(Some(Record {
            request_hash,
            entity: item.get("entity").and_then(|v| v.as_m().ok()).cloned(),
            created: item
                .get("created")
                .and_then(|v| v.as_bool().ok())
                .copied()
                .unwrap_or(false),
        }))
    }
}
