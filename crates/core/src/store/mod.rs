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
pub mod page;
pub mod policy_set;
pub mod txn;

mod deletes;
mod emails;
mod grants;
mod invitations;
mod platform_admins;
mod policies;
mod recompute;
mod roles;
mod tenants;
mod users;
mod write;

pub use deletes::{Deletion, INLINE_DELETE_BUDGET};
pub use emails::{Proof, VerificationCode, EMAILS_PER_USER_MAX, VERIFICATION_CODE_TTL};
pub use grants::{GrantWrite, PermissionSource, PermissionSources};
pub use invitations::{NewInvitation, INVITATION_DEFAULT_DAYS, INVITATION_MAX_DAYS};
pub use policy_set::PolicyCache;
pub use recompute::{Expected, HolderState, Recomputed};
pub use write::RACE_RETRIES;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;

use crate::error::{from_sdk, Error, Result};
use crate::model::items::{
    AnyItem, Entity, Item, Policy, Role, RoleMember, RoleRef, Tenant, TenantGrant, User,
    UserEmailGuard, UserLookup,
};
use crate::model::keys::{self, attr, Index, PrimaryKey};
use crate::model::values::{
    any_grants, Email, EmailPrefix, Permission, PolicyId, PolicyName, PolicyNamePrefix, RoleId,
    RoleName, RoleScope, TenantGrantId, TenantId, TenantName, TenantNamePrefix, UserId, UserStatus,
};
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
    /// (the ADR's "Query with equality, limit 1" lookups).
    async fn query_one<E: Entity>(&self, index: Index, partition: &str) -> Result<Option<E>> {
        let scope = ListScope {
            index: Some(index),
            partition,
            sort_prefix: None,
        };
        let page = self.query::<E>(scope, &PageRequest::with_limit(1)).await?;
        Ok(page.items.into_iter().next())
    }

    // ---- Tenants ---------------------------------------------------------------

    /// Tenant by id (GetItem).
    pub async fn tenant(&self, id: &TenantId) -> Result<Option<Tenant>> {
        self.get(&keys::tenant(id), false).await
    }

    /// Tenant by name (GSI1, eventually consistent).
    pub async fn tenant_by_name(&self, name: &TenantName) -> Result<Option<Tenant>> {
        self.query_one(Index::Gsi1, &keys::tenant_by_name(name).pk)
            .await
    }

    /// Tenants whose name starts with `prefix` (empty: all), in name order
    /// (GSI2 lookup list).
    pub async fn list_tenants(
        &self,
        prefix: &TenantNamePrefix,
        page: &PageRequest,
    ) -> Result<Page<Tenant>> {
        let partition = keys::tenant_list_partition();
        let scope = ListScope {
            index: Some(Index::Gsi2),
            partition: &partition,
            sort_prefix: Some(keys::tenant_list_prefix(prefix)).filter(|p| !p.is_empty()),
        };
        self.query(scope, page).await
    }

    /// The grants of a tenant (`begins_with(SK, "USER#")` in its partition).
    pub async fn tenant_members(
        &self,
        tenant_id: &TenantId,
        page: &PageRequest,
    ) -> Result<Page<TenantGrant>> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::tenant_members_prefix()),
        };
        self.query(scope, page).await
    }

    // ---- Users -----------------------------------------------------------------

    /// User by id (GetItem).
    pub async fn user(&self, id: &UserId) -> Result<Option<User>> {
        self.get(&keys::user(id), false).await
    }

    /// User by email for admins: the UserEmail guard with a consistent read,
    /// then the user it points at.
    pub async fn user_by_email(&self, email: &Email) -> Result<Option<User>> {
        let Some(guard) = self
            .get::<UserEmailGuard>(&keys::user_email_guard(email), true)
            .await?
        else {
            return Ok(None);
        };
        self.get(&keys::user(&guard.held.user_id), true).await
    }

    /// Users with a status whose email starts with `prefix` (empty: all),
    /// in email order: a page of their LOOKUP entries (GSI2), then the users
    /// in one BatchGetItem. An entry whose user is gone or no longer has
    /// that status (the index lags the table) is left out of the page.
    pub async fn list_users(
        &self,
        status: UserStatus,
        prefix: &EmailPrefix,
        page: &PageRequest,
    ) -> Result<Page<User>> {
        let partition = keys::user_list_partition(status);
        let scope = ListScope {
            index: Some(Index::Gsi2),
            partition: &partition,
            sort_prefix: Some(keys::user_list_prefix(prefix)).filter(|p| !p.is_empty()),
        };
        let entries: Page<UserLookup> = self.query(scope, page).await?;
        let keys: Vec<PrimaryKey> = entries
            .items
            .iter()
            .map(|e| keys::user(&e.user_id))
            .collect();
        let mut found = self.batch_get(&keys, false).await?;
        let items = keys
            .iter()
            .filter_map(|k| found.remove(k))
            .map(User::from_item)
            .filter(|u| u.as_ref().map_or(true, |u| u.status == status))
            .collect::<Result<Vec<User>>>()?;
        Ok(Page {
            items,
            next_cursor: entries.next_cursor,
        })
    }

    /// A user's tenant grants (GSI1), paged.
    pub async fn user_grants(
        &self,
        user_id: &UserId,
        page: &PageRequest,
    ) -> Result<Page<TenantGrant>> {
        let partition = keys::user_grants_partition(user_id);
        let scope = ListScope {
            index: Some(Index::Gsi1),
            partition: &partition,
            sort_prefix: None,
        };
        self.query(scope, page).await
    }

    // ---- Roles -----------------------------------------------------------------

    /// Role by scope and name (GetItem).
    pub async fn role(&self, scope: RoleScope, name: &RoleName) -> Result<Option<Role>> {
        self.get(&keys::role(scope, name), false).await
    }

    /// Role by id through GSI1 (the ADR's lookup; eventually consistent).
    pub async fn role_by_id(&self, id: &RoleId) -> Result<Option<Role>> {
        self.query_one(Index::Gsi1, &keys::role_by_id(id).pk).await
    }

    /// Role by id with consistent reads: the RoleRef, then the Role by its
    /// base-table key. Used wherever a stale role would be wrong (grants, the
    /// stream consumer).
    pub async fn role_by_id_consistent(&self, id: &RoleId) -> Result<Option<Role>> {
        let Some(role_ref) = self.get::<RoleRef>(&keys::role_ref(id), true).await? else {
            return Ok(None);
        };
        let role = self
            .get::<Role>(&keys::role(role_ref.scope, &role_ref.name), true)
            .await?;
        // A role deleted and re-created under the same name between the two
        // reads is a different role.
        Ok(role.filter(|r| r.role_id == *id))
    }

    /// Roles of a scope in name order (`PK = ROLE_SCOPE#{scope}`).
    pub async fn list_roles(&self, scope: RoleScope, page: &PageRequest) -> Result<Page<Role>> {
        let partition = keys::role_scope_partition(scope);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::role_name_prefix()),
        };
        self.query(scope, page).await
    }

    /// The roles whose permissions grant `permission` (exactly or by a
    /// wildcard), of one scope or both, in scope and name order. Reads every
    /// role of the scopes asked (consistent Query pages of up to 1 MB):
    /// built for the few hundred to few thousand roles a deployment has,
    /// not for unbounded role counts.
    pub async fn roles_granting(
        &self,
        permission: &Permission,
        scope: Option<RoleScope>,
    ) -> Result<Vec<Role>> {
        let scopes = match scope {
            Some(s) => vec![s],
            None => vec![RoleScope::Global, RoleScope::Tenant],
        };
        let mut found = Vec::new();
        for scope in scopes {
            let mut page = PageRequest::with_limit(crate::store::page::MAX_LIMIT);
            loop {
                let roles = self.list_roles(scope, &page).await?;
                found.extend(
                    roles
                        .items
                        .into_iter()
                        .filter(|r| any_grants(&r.permissions, permission.as_str())),
                );
                match page.next(roles.next_cursor) {
                    Some(next) => page = next,
                    None => break,
                }
            }
        }
        Ok(found)
    }

    /// Who holds a role (its RoleMember links), paged.
    pub async fn role_members(
        &self,
        role_id: &RoleId,
        page: &PageRequest,
    ) -> Result<Page<RoleMember>> {
        let partition = keys::role_members_partition(role_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::role_members_prefix()),
        };
        self.query(scope, page).await
    }

    // ---- Tenant grants -------------------------------------------------------------

    /// A user's grant in one tenant (GetItem): the membership check.
    pub async fn tenant_grant(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
    ) -> Result<Option<TenantGrant>> {
        self.get(&keys::tenant_grant(tenant_id, user_id), false)
            .await
    }

    /// Grant by id (GSI2).
    pub async fn tenant_grant_by_id(&self, id: &TenantGrantId) -> Result<Option<TenantGrant>> {
        self.query_one(Index::Gsi2, &keys::tenant_grant_by_id(id).pk)
            .await
    }

    // ---- Policies -----------------------------------------------------------------

    /// Policy metadata by exact name (GetItem).
    pub async fn policy_by_name(&self, name: &PolicyName) -> Result<Option<Policy>> {
        self.get(&keys::policy(name), false).await
    }

    /// Policy metadata whose name starts with `prefix`, in name order.
    pub async fn policies_by_prefix(
        &self,
        prefix: &PolicyNamePrefix,
        page: &PageRequest,
    ) -> Result<Page<Policy>> {
        let partition = keys::policies_partition();
        let sort_prefix = keys::policy_name_prefix(prefix);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(&sort_prefix),
        };
        self.query(scope, page).await
    }

    /// Every policy, in pages of 100: the set decisions are made with.
    pub async fn all_policies(&self) -> Result<Vec<Policy>> {
        let every = PolicyNamePrefix::parse("")?;
        let mut page = PageRequest {
            limit: crate::store::page::MAX_LIMIT,
            cursor: None,
        };
        let mut all = Vec::new();
        loop {
            let found = self.policies_by_prefix(&every, &page).await?;
            all.extend(found.items);
            match found.next_cursor {
                Some(cursor) => page.cursor = Some(cursor),
                None => return Ok(all),
            }
        }
    }

    /// The policies confined to `tenant` (read from the whole set, which
    /// is bounded by `cedar::POLICIES_MAX`).
    pub async fn tenant_policies(&self, tenant: &TenantId) -> Result<Vec<Policy>> {
        let mut all = self.all_policies().await?;
        all.retain(|p| p.tenant_id.as_ref() == Some(tenant));
        Ok(all)
    }

    /// A policy by id through GSI1 (the ADR's lookup; eventually
    /// consistent). Writes find theirs with `policy_by_id_consistent`.
    pub async fn policy_by_id(&self, id: &PolicyId) -> Result<Option<Policy>> {
        self.query_one(Index::Gsi1, &keys::policy_by_id(id).pk)
            .await
    }
}
