//! The revocations item as the store writes and reads it. A write that
//! takes something away (a user suspended or deleted, a grant or a global
//! role narrowed or ended, an identity unlinked, a tenant being deleted; a
//! role deleted or narrowed once its holders are rewritten) appends whom
//! it concerns once it has committed: the transaction that records the
//! change does it (`Transaction::execute`, from `TakesAway`), never its
//! caller. One `UpdateItem` adds to the count and the list together (so an
//! entry's number is its place from the end), outside the write's
//! transaction on purpose, so that whoever reads an entry can trust a
//! consistent read of its subject made after it, and so that concurrent
//! revoking writes never conflict on the one item. The list is trimmed to
//! [`REVOCATIONS_KEPT`] afterwards. An append that fails is retried, then
//! logged and counted: the change itself stands, and the caches then let
//! go of it within their TTLs.
//!
//! Each revocation empties API Gateway's result cache for everyone (a
//! flush is stage-wide), so revoking writes are rate-limited per caller
//! and scope (a tenant, or the platform): [`REVOKING_WRITES_PER_WINDOW`]
//! per [`REVOKING_WINDOW`], a 429 past that which says when to retry.
//! The writes one counted write entails (a directory group's members'
//! grants) are settled as a batch ([`Store::settling`]): not counted
//! again, and recorded together when the batch ends.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use sha2::{Digest, Sha256};

use crate::clock::now_millis;
use crate::clock::now_seconds;
use crate::error::{from_sdk, Error, Result};
use crate::model::items::{
    Entity, ItemType, Revocations, Revoked, Revokee, BATCH_ENTRIES, REVOCATIONS_KEPT,
};
use crate::model::keys::{self, attr, PrimaryKey};
use crate::model::values::TenantId;
use crate::runtime::metrics::name;
use crate::store::txn::backoff;
use crate::store::Store;

tokio::task_local! {
    /// Whom the batch being settled took something from, recorded when
    /// it ends.
    static BATCH: std::cell::RefCell<Vec<Revokee>>;
}

/// Whether the task is settling a batch, whose revoking writes the write
/// that entails them was counted for already.
pub(crate) fn settling_batch() -> bool {
    BATCH.try_with(|_| ()).is_ok()
}

/// Tries of one append before it is given up (logged and counted).
const APPEND_TRIES: u32 = 3;

/// Revoking writes one caller may make in one scope (a tenant, or the
/// platform) per [`REVOKING_WINDOW`]: enough for an administrator's bulk
/// removals, few enough that no caller can keep API Gateway's cache empty
/// on their own.
pub const REVOKING_WRITES_PER_WINDOW: u64 = 20;

/// Revoking writes in one tenant per [`REVOKING_WINDOW`], whoever makes
/// them, counted in two sets of windows half a window apart, so that no
/// half-window span holds more (a burst across one window's end falls in
/// one window of the other set): however many administrators a tenant
/// has, its churn between two of an instance's checks (at most half a
/// window apart, `RevocationCheckSeconds` ≤ 5) fills at most this many of
/// the [`REVOCATIONS_KEPT`] entries, so no one tenant makes every
/// instance drop its caches.
pub const TENANT_REVOKING_WRITES_PER_WINDOW: u64 = 40;

/// The window the limits above count in.
pub const REVOKING_WINDOW: std::time::Duration = std::time::Duration::from_secs(10);

/// One count a revoking write moves in its transaction: its key, its
/// limit, when the table's TTL may remove it, and the error once the
/// window's writes are used up.
pub(crate) struct RevokingCount {
    pub key: PrimaryKey,
    pub max: u64,
    pub expires_at: u64,
    pub on_full: Error,
}

/// The counts a revoking write by the request's caller (none outside a
/// request: the operator's tools, recompute) moves, for `tenant`'s scope
/// (the platform's when `None`): the caller's in that scope and, in a
/// tenant, the tenant's. A platform administrator's writes are counted
/// in the platform's scope wherever they are made (one count, however
/// many tenants they touch) and not against the tenant's, so that no
/// tenant's churn blocks them.
pub(crate) fn revoking_counts(tenant: Option<&TenantId>) -> Vec<RevokingCount> {
    let context = crate::store::history::context();
    let Some(caller) = context.modified_by else {
        return Vec::new();
    };
    let digest: String = Sha256::digest(caller.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let window_secs = REVOKING_WINDOW.as_secs();
    let now = now_seconds();
    let window = now / window_secs;
    // A count in window `w` of a set shifted back by `shift` seconds:
    // that window ends at `(w + 1) * window_secs - shift`.
    let count = |key, max, whose: &str, w: u64, shift: u64| RevokingCount {
        key,
        max,
        expires_at: (w + 2) * window_secs,
        on_full: Error::RateLimited {
            what: format!("{whose} writes that take access away ({max} per {window_secs} s)"),
            retry_after: ((w + 1) * window_secs - shift).saturating_sub(now).max(1),
        },
    };
    let mut counts = vec![count(
        keys::revoking_writes(&digest, tenant.filter(|_| !context.platform), window),
        REVOKING_WRITES_PER_WINDOW,
        "the caller's",
        window,
        0,
    )];
    if let Some(tenant) = tenant.filter(|_| !context.platform) {
        let half = window_secs / 2;
        let shifted = (now + half) / window_secs;
        counts.push(count(
            keys::tenant_revoking_writes(tenant, window, false),
            TENANT_REVOKING_WRITES_PER_WINDOW,
            "the tenant's",
            window,
            0,
        ));
        counts.push(count(
            keys::tenant_revoking_writes(tenant, shifted, true),
            TENANT_REVOKING_WRITES_PER_WINDOW,
            "the tenant's",
            shifted,
            half,
        ));
    }
    counts
}

/// Whether a flush of API Gateway's caches may be sent now
/// ([`Store::claim_flush`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushClaim {
    /// This caller holds it: send the flush.
    Claimed,
    /// Another consumer claimed one at this time (milliseconds since the
    /// epoch), less than the interval ago.
    Taken(u64),
}

impl Store {
    /// Claims the flush of API Gateway's caches at `now` (milliseconds
    /// since the epoch) unless another stream consumer claimed one less
    /// than `interval` before it: one conditional write of the
    /// revocations item's `flushedAt`, so that flushes coalesce across
    /// every process handling the stream, not only within one. With no
    /// revocations item there is nothing to coalesce with: `Claimed`.
    pub async fn claim_flush(&self, now: u64, interval: std::time::Duration) -> Result<FlushClaim> {
        let key = keys::revocations();
        let cut = now.saturating_sub(interval.as_millis() as u64);
        let sent = self
            .client
            .update_item()
            .table_name(&*self.table)
            .key(attr::PK, AttributeValue::S(key.pk))
            .key(attr::SK, AttributeValue::S(key.sk))
            .update_expression("SET #flushed = :now")
            .condition_expression(
                "attribute_exists(#seq) AND (attribute_not_exists(#flushed) OR #flushed <= :cut)",
            )
            .expression_attribute_names("#flushed", "flushedAt")
            .expression_attribute_names("#seq", "seq")
            .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
            .expression_attribute_values(":cut", AttributeValue::N(cut.to_string()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let Err(e) = sent else {
            return Ok(FlushClaim::Claimed);
        };
        match e.as_service_error() {
            Some(s) if s.is_conditional_check_failed_exception() => {
                let old = match s {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => c.item().cloned(),
                    _ => None,
                };
                let flushed = old
                    .map(Revocations::from_item)
                    .transpose()?
                    .and_then(|r| r.flushed_at);
                Ok(flushed.map_or(FlushClaim::Claimed, FlushClaim::Taken))
            }
            _ => Err(from_sdk("UpdateItem", e)),
        }
    }

    /// The latest revocations (`None`: nothing was ever revoked), read
    /// eventually consistent unless `consistent`.
    pub async fn revocations(&self, consistent: bool) -> Result<Option<Revocations>> {
        self.get(&keys::revocations(), consistent).await
    }

    /// Records that each of `who` lost something, after the write that took
    /// it away committed. Never fails: a revocation that cannot be recorded
    /// is logged and counted (`RevocationsUnrecorded`), and reaches the
    /// caches within their TTLs instead of seconds.
    pub async fn record_revocations(&self, who: &[Revokee]) {
        if who.is_empty() {
            return;
        }
        let batched = BATCH.try_with(|batch| {
            let mut batch = batch.borrow_mut();
            for w in who {
                if !batch.contains(w) {
                    batch.push(*w);
                }
            }
        });
        if batched.is_ok() {
            return;
        }
        let mut tries = 0;
        loop {
            tries += 1;
            match self.append_revocations(who).await {
                Ok(()) => return,
                Err(e) if tries < APPEND_TRIES && e.is_retryable() => {
                    tokio::time::sleep(backoff(tries)).await;
                }
                Err(e) => {
                    metrics::counter!(name::REVOCATIONS_UNRECORDED).increment(who.len() as u64);
                    tracing::error!(error = %e, ?who, "a revocation was not recorded; caches let go of it within their TTLs");
                    return;
                }
            }
        }
    }

    /// Runs `work`, the writes one counted write in `tenant` entails, as
    /// a batch: their revoking writes are not counted again, and whom they
    /// took something from is recorded once `work` ends, whether it
    /// succeeded or not (each of them, or, past [`BATCH_ENTRIES`], the
    /// tenant: every instance then lets go of what it holds about the
    /// tenant's callers).
    pub(crate) async fn settling<F: std::future::Future>(
        &self,
        tenant: TenantId,
        work: F,
    ) -> F::Output {
        let (out, taken) = BATCH
            .scope(std::cell::RefCell::new(Vec::new()), async {
                let out = work.await;
                (out, BATCH.with(|batch| batch.take()))
            })
            .await;
        let who = if taken.len() > BATCH_ENTRIES {
            vec![Revokee::Tenant(tenant)]
        } else {
            taken
        };
        self.record_revocations(&who).await;
        out
    }

    async fn append_revocations(&self, who: &[Revokee]) -> Result<()> {
        let at = now_millis();
        let entries: Vec<Revoked> = who.iter().map(|&who| Revoked { who, at }).collect();
        let key = keys::revocations();
        let out = self
            .client
            .update_item()
            .table_name(&*self.table)
            .key(attr::PK, AttributeValue::S(key.pk.clone()))
            .key(attr::SK, AttributeValue::S(key.sk.clone()))
            .update_expression(
                "SET #type = :type, #seq = if_not_exists(#seq, :zero) + :n, \
                 #recent = list_append(if_not_exists(#recent, :empty), :entries)",
            )
            .expression_attribute_names("#type", attr::TYPE)
            .expression_attribute_names("#seq", "seq")
            .expression_attribute_names("#recent", "recent")
            .expression_attribute_values(
                ":type",
                AttributeValue::S(ItemType::Revocations.as_str().into()),
            )
            .expression_attribute_values(":zero", AttributeValue::N("0".into()))
            .expression_attribute_values(":n", AttributeValue::N(entries.len().to_string()))
            .expression_attribute_values(":empty", AttributeValue::L(Vec::new()))
            .expression_attribute_values(":entries", serde_dynamo::to_attribute_value(&entries)?)
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| from_sdk("UpdateItem", e))?;
        let Some(item) = out.attributes else {
            return Ok(());
        };
        let now = Revocations::from_item(item)?;
        if now.recent.len() > REVOCATIONS_KEPT {
            self.trim_revocations(now.recent.len()).await;
        }
        Ok(())
    }

    /// Drops the oldest entries past [`REVOCATIONS_KEPT`] of the `len` this
    /// append saw, if the list still has at least `len` (appends since
    /// only add to its end, so its first `len - KEPT` are still the oldest).
    /// A trim that another one beat (the list is shorter) does nothing: the
    /// one that won kept the list bounded, and the next append trims the
    /// rest; under any contention one of them succeeds.
    async fn trim_revocations(&self, len: usize) {
        let excess = len - REVOCATIONS_KEPT;
        let paths: Vec<String> = (0..excess).map(|i| format!("#recent[{i}]")).collect();
        let key = keys::revocations();
        let trimmed = self
            .client
            .update_item()
            .table_name(&*self.table)
            .key(attr::PK, AttributeValue::S(key.pk))
            .key(attr::SK, AttributeValue::S(key.sk))
            .update_expression(format!("REMOVE {}", paths.join(", ")))
            .condition_expression("size(#recent) >= :len")
            .expression_attribute_names("#recent", "recent")
            .expression_attribute_values(":len", AttributeValue::N(len.to_string()))
            .send()
            .await;
        if let Err(e) = trimmed {
            let e = from_sdk("UpdateItem", e);
            tracing::debug!(error = %e, "the revocations list was not trimmed (another append moved it)");
        }
    }
}
