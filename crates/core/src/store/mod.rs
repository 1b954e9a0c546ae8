//! The store: the table reached through one `aws_sdk_dynamodb::Client`.
//! Every read is a GetItem, a BatchGetItem or a paged Query (never a Scan,
//! but the audit's); every write one `TransactWriteItems` built by `txn`.
//! Each entity's operations are in the file named for it; what every
//! write shares is in `write`. Uses `model`, `policy` (the ceiling and the
//! Cedar policy set) and `runtime`; nothing here reads the environment on
//! a request path.

pub mod history;
pub mod idempotency;
pub mod integrity;
pub mod names;
pub mod page;
pub mod policy_set;
pub mod txn;

mod deletes;
pub mod details;
pub mod directory;
pub mod directory_groups;
mod emails;
mod grants;
mod identities;
mod invitations;
mod platform_admins;
mod policies;
mod recompute;
mod revocations;
mod roles;
pub mod search;
mod standing;
mod tenant_admins;
mod tenant_policies;
mod tenants;
mod users;
mod write;

pub use deletes::{Deletion, INLINE_DELETE_BUDGET};
pub use emails::{Proof, VerificationCode, EMAILS_PER_USER_MAX, VERIFICATION_CODE_TTL};
pub use grants::{GrantPrecondition, GrantWrite, PermissionSource, PermissionSources};
pub use invitations::{NewInvitation, INVITATION_DEFAULT_DAYS, INVITATION_MAX_DAYS};
pub use policies::Located;
pub use policy_set::{OwnPolicies, PolicyCache, TenantSets, TENANT_SETS_BYTES};
pub use recompute::{Expected, HolderState, Recomputed};
pub use revocations::{
    FlushClaim, REVOKING_WINDOW, REVOKING_WRITES_PER_WINDOW, TENANT_REVOKING_WRITES_PER_WINDOW,
};
pub use standing::StandingRead;
pub use write::RACE_RETRIES;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;

use crate::error::{from_sdk, Error, Result};
use crate::model::items::{AnyItem, Entity, Item};
use crate::model::keys::{attr, Index, PrimaryKey};
use crate::runtime::aws;
use crate::runtime::config::{self, ConfigError};
use page::{ListScope, Page, PageRequest};

/// DynamoDB's limit on keys in one BatchGetItem.
pub const BATCH_GET_KEYS: usize = 100;

/// The authorization table, reached through one SDK client.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) client: Client,
    pub(crate) table: Arc<str>,
}

impl Store {
    /// Builds the store from the process environment: `TABLE_NAME` plus the
    /// SDK's standard configuration chain and the process's trust roots; sets how long change history is
    /// kept from `HISTORY_RETENTION_DAYS`.
    pub async fn from_env() -> std::result::Result<Self, ConfigError> {
        let lookup = |k: &str| std::env::var(k).ok();
        let table = config::required(lookup, config::TABLE_NAME)?;
        crate::store::history::set_retention_days(config::days(
            lookup,
            config::HISTORY_RETENTION_DAYS,
        )?);
        crate::runtime::tls::check(lookup)?;
        let sdk = aws::sdk_config().await;
        Ok(Self::new(aws::dynamodb_client(&sdk), table))
    }

    pub fn new(client: Client, table: impl Into<Arc<str>>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// GetItem of one item by its full key.
    pub async fn get<E: Entity>(&self, key: &PrimaryKey, consistent: bool) -> Result<Option<E>> {
        self.get_item(key, consistent)
            .await?
            .map(E::from_item)
            .transpose()
    }

    /// GetItem of one item by its full key, as stored.
    pub async fn get_item(&self, key: &PrimaryKey, consistent: bool) -> Result<Option<Item>> {
        let out = self
            .client
            .get_item()
            .table_name(&*self.table)
            .key(attr::PK, AttributeValue::S(key.pk.clone()))
            .key(attr::SK, AttributeValue::S(key.sk.clone()))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| from_sdk("GetItem", e))?;
        Ok(out.item)
    }

    /// BatchGetItem of up to [`BATCH_GET_KEYS`] items by key, as stored,
    /// keyed by their keys (missing items are absent). Unprocessed keys
    /// (throttling) are asked again with backoff for up to 5 s, then
    /// `Retryable`.
    pub async fn batch_get(
        &self,
        keys: &[PrimaryKey],
        consistent: bool,
    ) -> Result<HashMap<PrimaryKey, Item>> {
        if keys.len() > BATCH_GET_KEYS {
            return Err(Error::internal(format!(
                "{} keys in one batch read; at most {BATCH_GET_KEYS}",
                keys.len()
            )));
        }
        let mut found = HashMap::with_capacity(keys.len());
        if keys.is_empty() {
            return Ok(found);
        }
        let mut request = KeysAndAttributes::builder().consistent_read(consistent);
        for k in keys {
            request = request.keys(HashMap::from([
                (attr::PK.to_string(), AttributeValue::S(k.pk.clone())),
                (attr::SK.to_string(), AttributeValue::S(k.sk.clone())),
            ]));
        }
        let mut pending = Some(
            request
                .build()
                .map_err(|e| Error::internal(e.to_string()))?,
        );
        let started = Instant::now();
        let mut pause = Duration::from_millis(20);
        while let Some(request) = pending.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(self.table(), request)
                .send()
                .await
                .map_err(|e| from_sdk("BatchGetItem", e))?;
            for item in out.responses.unwrap_or_default().into_values().flatten() {
                let key_part = |name: &str| {
                    item.get(name)
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .ok_or_else(|| Error::internal(format!("an item without {name}")))
                };
                let key = PrimaryKey {
                    pk: key_part(attr::PK)?,
                    sk: key_part(attr::SK)?,
                };
                found.insert(key, item);
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(self.table()))
                .filter(|k| !k.keys().is_empty());
            if pending.is_some() {
                if started.elapsed() > Duration::from_secs(5) {
                    return Err(Error::retryable(
                        "BatchGetItem kept returning unprocessed keys",
                    ));
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
        Ok(found)
    }

    /// One page of a Query over a partition of the table or an index,
    /// optionally narrowed to sort keys starting with a prefix.
    pub(crate) async fn query<E: Entity>(
        &self,
        scope: ListScope<'_>,
        page: &PageRequest,
    ) -> Result<Page<E>> {
        self.query_in_order(scope, page, true).await
    }

    /// Every item of a Query, a page of 100 at a time: for lists a write
    /// or an answer needs whole (a tenant's directory, its tokens).
    pub(crate) async fn query_all<E: Entity>(&self, scope: ListScope<'_>) -> Result<Vec<E>> {
        let mut page = PageRequest::with_limit(100);
        let mut all = Vec::new();
        loop {
            let found: Page<E> = self.query(scope.clone(), &page).await?;
            all.extend(found.items);
            match page.next(found.next_cursor) {
                Some(next) => page = next,
                None => return Ok(all),
            }
        }
    }

    /// The items of `scope` from the `skip`-th on (sort-key order), at most
    /// `take`, and how many the scope holds: it reads the items only up to
    /// the window's end, and counts the rest (`Select: COUNT`, whose pages
    /// send no items), so a late page of a large list costs what its
    /// window does plus a count, not every item sent to the function.
    pub(crate) async fn query_window<E: Entity>(
        &self,
        scope: ListScope<'_>,
        skip: usize,
        take: usize,
    ) -> Result<(Vec<E>, usize)> {
        let mut items: Vec<E> = Vec::new();
        let mut seen = 0usize;
        let mut page = PageRequest::with_limit(crate::store::page::MAX_LIMIT);
        let rest = loop {
            let found: Page<E> = self.query(scope.clone(), &page).await?;
            for item in found.items {
                if seen >= skip && items.len() < take {
                    items.push(item);
                }
                seen += 1;
            }
            match page.next(found.next_cursor) {
                Some(next) if items.len() < take => page = next,
                next => break next,
            }
        };
        let Some(rest) = rest else {
            return Ok((items, seen));
        };
        Ok((items, seen + self.count(scope, rest).await?))
    }

    /// How many items `scope` holds from `page`'s cursor on.
    async fn count(&self, scope: ListScope<'_>, page: PageRequest) -> Result<usize> {
        let (pk_attr, sk_attr) = match scope.index {
            Some(index) => index.attrs(),
            None => (attr::PK, attr::SK),
        };
        let mut start = match &page.cursor {
            Some(c) => Some(page::decode(c, &scope)?),
            None => None,
        };
        let mut total = 0usize;
        loop {
            let mut request = self
                .client
                .query()
                .table_name(&*self.table)
                .set_index_name(scope.index.map(|i| i.name().to_string()))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .expression_attribute_names("#pk", pk_attr)
                .expression_attribute_values(":pk", AttributeValue::S(scope.partition.to_string()))
                .consistent_read(scope.index.is_none())
                .set_exclusive_start_key(start);
            request = match scope.sort_prefix {
                Some(prefix) => request
                    .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                    .expression_attribute_names("#sk", sk_attr)
                    .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_string())),
                None => request.key_condition_expression("#pk = :pk"),
            };
            let out = request.send().await.map_err(|e| from_sdk("Query", e))?;
            total += out.count as usize;
            match out.last_evaluated_key {
                Some(key) => start = Some(key),
                None => return Ok(total),
            }
        }
    }

    /// [`Store::query`] in descending sort-key order.
    pub(crate) async fn query_newest_first<E: Entity>(
        &self,
        scope: ListScope<'_>,
        page: &PageRequest,
    ) -> Result<Page<E>> {
        self.query_in_order(scope, page, false).await
    }

    async fn query_in_order<E: Entity>(
        &self,
        scope: ListScope<'_>,
        page: &PageRequest,
        ascending: bool,
    ) -> Result<Page<E>> {
        let (pk_attr, sk_attr) = match scope.index {
            Some(index) => index.attrs(),
            None => (attr::PK, attr::SK),
        };
        let start = match &page.cursor {
            Some(c) => Some(page::decode(c, &scope)?),
            None => None,
        };
        let mut request = self
            .client
            .query()
            .table_name(&*self.table)
            .set_index_name(scope.index.map(|i| i.name().to_string()))
            .expression_attribute_names("#pk", pk_attr)
            .expression_attribute_values(":pk", AttributeValue::S(scope.partition.to_string()))
            .limit(page.limit)
            // Base-table lists (tenant members, role members, roles, policies)
            // read consistently: cleanup and recompute page through them right
            // after writes. Index reads cannot be consistent.
            .consistent_read(scope.index.is_none())
            .scan_index_forward(ascending)
            .set_exclusive_start_key(start);
        request = match scope.sort_prefix {
            Some(prefix) => request
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", sk_attr)
                .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_string())),
            None => request.key_condition_expression("#pk = :pk"),
        };
        let out = request.send().await.map_err(|e| from_sdk("Query", e))?;
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(E::from_item)
            .collect::<Result<Vec<_>>>()?;
        let next_cursor = match out.last_evaluated_key {
            Some(key) => Some(
                page::encode(&key)
                    .ok_or_else(|| Error::internal("LastEvaluatedKey with a non-string key"))?,
            ),
            None => None,
        };
        Ok(Page { items, next_cursor })
    }

    /// Every item of one segment of a parallel, consistent Scan of the
    /// table (`segment` of `total`), every page read: the audit's whole-table
    /// read. Items are decoded by their `Type`.
    pub async fn scan_segment(&self, segment: i32, total: i32) -> Result<Vec<AnyItem>> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(self.table())
                .consistent_read(true)
                .segment(segment)
                .total_segments(total)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| from_sdk("Scan", e))?;
            for item in out.items.unwrap_or_default() {
                items.push(AnyItem::decode(item)?);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// The single item of an index partition that is keyed by an exact value
    /// (the layout's "Query with equality, limit 1" lookups).
    async fn query_one<E: Entity>(&self, index: Index, partition: &str) -> Result<Option<E>> {
        let scope = ListScope {
            index: Some(index),
            partition,
            sort_prefix: None,
        };
        let page = self.query::<E>(scope, &PageRequest::with_limit(1)).await?;
        Ok(page.items.into_iter().next())
    }
}
