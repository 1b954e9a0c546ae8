//! Cedar policies as stored: read by name, id and name prefix, all of
//! them, a tenant's; created (name and id unique, the id through its
//! PolicyRef), updated and deleted by id. A global policy is its own item
//! and each write of one moves the global set's counts; a policy confined
//! to a tenant lives in that tenant's set (`tenant_policies`), or, stored
//! by an earlier version, as its own item like a global one.

use super::write::actor_string;
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::input::{NewPolicy, PolicyChanges};
use crate::model::items::{Entity, Policy, PolicyCounts, PolicyRef, Stamp};
use crate::model::keys::{self, Index};
use crate::model::values::{NamePrefix, PolicyId, PolicyName, TenantId};
use crate::policy::cedar::POLICIES_MAX;
use crate::store::history::HistoryOf;
use crate::store::page::{ListScope, Page, PageRequest};
use crate::store::txn::Transaction;
use crate::store::Store;

/// What a policy write does to the set's counts: `policies` and
/// `statements` each move by -1, 0 or 1.
fn count(txn: &mut Transaction, policies: i64, statements: i64) -> Result<()> {
    txn.count(
        &keys::policy_counts(),
        &[("policies", policies), ("statements", statements)],
        (
            "statements",
            POLICIES_MAX as u64,
            Error::state_conflict(
                "policies",
                format!("at most {POLICIES_MAX} policies with a statement; delete one first"),
            ),
        ),
        Resource::PolicyCounts,
    )?;
    Ok(())
}

/// The policy `new` creates, at `at`, by `actor`.
pub(super) fn created(new: &NewPolicy, at: &str, actor: Option<&str>) -> Policy {
    Policy {
        policy_id: new.policy_id.clone(),
        name: new.name.clone(),
        description: new.description.clone(),
        statement: new.statement.clone(),
        tenant_id: new.tenant_id,
        platform: new.platform && new.in_tenant_set,
        stamp: Stamp::new(at),
        updated_by: actor_string(actor),
    }
}

fn has_statement(policy: &Policy) -> i64 {
    i64::from(policy.statement.is_some())
}

/// A policy found by its id, and its id's PolicyRef as read: none for a
/// policy written before refs (until `make audit REPAIR=1` writes it),
/// found through GSI1 as is one whose ref names another name (code from
/// before refs deleted the policy it named).
struct Found {
    policy: Policy,
    policy_ref: Option<PolicyRef>,
}

/// A policy found by its id, and where it lives: the tenant whose own set
/// holds it, or `None` for a policy stored as its own item.
#[derive(Debug, Clone)]
pub struct Located {
    pub policy: Policy,
    pub home: Option<TenantId>,
}

impl Store {
    /// Policy metadata by exact name (GetItem).
    pub async fn policy_by_name(&self, name: &PolicyName) -> Result<Option<Policy>> {
        self.get(&keys::policy(name), false).await
    }

    /// Policy metadata whose name starts with `prefix`, in name order.
    pub async fn policies_by_prefix(
        &self,
        prefix: &NamePrefix,
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
        let every = NamePrefix::parse("")?;
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

    /// The policies confined to `tenant`: its own set, then those an
    /// earlier version stored as their own items (read from the global
    /// partition, which `cedar::POLICIES_MAX` bounds).
    pub async fn tenant_policies(&self, tenant: &TenantId) -> Result<Vec<Policy>> {
        let (own, all) =
            tokio::try_join!(self.tenant_policy_set(tenant, false), self.all_policies())?;
        let mut found = own.map(|set| set.policies).unwrap_or_default();
        found.extend(
            all.into_iter()
                .filter(|p| p.tenant_id.as_ref() == Some(tenant)),
        );
        Ok(found)
    }

    /// A policy by id through GSI1 (the layout's lookup; eventually
    /// consistent). Writes find theirs with `policy_by_id_consistent`.
    pub async fn policy_by_id(&self, id: &PolicyId) -> Result<Option<Policy>> {
        self.query_one(Index::Gsi1, &keys::policy_by_id(id).pk)
            .await
    }
}

impl Store {
    /// Creates policy metadata and its PolicyRef. `Conflict { field: "name" }`
    /// if the name is taken, `Conflict { field: "policyId" }` if the id is.
    pub async fn create_policy(&self, new: &NewPolicy, actor: Option<&str>) -> Result<Policy> {
        if let Some(tenant) = new.tenant_id.filter(|_| new.in_tenant_set) {
            return self.create_tenant_policy(tenant, new, actor).await;
        }
        let at = now();
        let policy = created(new, &at, actor);
        let mut txn = self.transaction();
        txn.create(&policy, "name")?
            .create(&PolicyRef::of(&policy, &at), "policyId")?
            .record_change(
                HistoryOf::Policy(policy.policy_id.clone()),
                None,
                Some(&policy),
                Some(1),
            )?;
        count(&mut txn, 1, has_statement(&policy))?;
        self.execute_counted(&txn).await?;
        Ok(policy)
    }

    /// Replaces the statement and/or description of `current` (the policy
    /// as the caller read it, and decided on), conditioned on that
    /// incarnation at `expected_version` (`PreconditionFailed` when it is
    /// not, or moved on).
    pub async fn update_policy(
        &self,
        located: &Located,
        changes: &PolicyChanges,
        expected_version: u64,
        actor: Option<&str>,
    ) -> Result<Policy> {
        let current = &located.policy;
        let id = &current.policy_id;
        if let Some(tenant) = located.home {
            return self
                .update_tenant_policy(tenant, id, changes, expected_version, actor)
                .await;
        }
        if current.stamp.version != expected_version {
            return Err(Error::PreconditionFailed {
                resource: Resource::Policy,
            });
        }
        let mut next = Policy {
            stamp: current.stamp.next(&now()),
            updated_by: actor_string(actor),
            ..current.clone()
        };
        if let Some(statement) = &changes.statement {
            next.statement = Some(statement.clone());
            next.tenant_id = changes.tenant_id;
        }
        if let Some(description) = &changes.description {
            next.description = description.clone();
        }
        let mut txn = self.transaction();
        // Conditioned on the statement being there (or not) as read: the
        // counts move by what this write changes, never by a stale read.
        txn.replace_shaped(
            &next,
            expected_version,
            Resource::Policy,
            ("statement", current.statement.is_some()),
        )?
        .record_change(
            HistoryOf::Policy(id.clone()),
            Some(current),
            Some(&next),
            Some(next.stamp.version),
        )?;
        count(&mut txn, 0, has_statement(&next) - has_statement(current))?;
        self.execute_counted(&txn).await?;
        Ok(next)
    }

    /// Deletes policy metadata and its PolicyRef by id. `NotFound {
    /// Policy }` if there is none. Conditioned on the policy as read (its
    /// id, and whether it has a statement, which the counts move by) and on
    /// its ref as read (this policy's, or none for a policy from before
    /// refs); read again if either changed meanwhile.
    pub async fn delete_policy(&self, id: &PolicyId) -> Result<Policy> {
        let mut attempts = 0;
        loop {
            let Found { policy, policy_ref } = self
                .find_policy(id)
                .await?
                .ok_or_else(|| Error::not_found(Resource::Policy))?;
            if let Some(tenant) = policy_ref.as_ref().and_then(|r| r.tenant_id) {
                return self.delete_tenant_policy(tenant, id, false).await;
            }
            let mut txn = self.transaction();
            match &policy_ref {
                Some(policy_ref) => txn.delete_current(policy_ref, Resource::Policy)?,
                None => txn.require_absent(&keys::policy_ref(id), Resource::Policy)?,
            };
            txn.delete_shaped(
                &policy.key(),
                &policy.incarnation(),
                Resource::Policy,
                ("statement", policy.statement.is_some()),
            )?
            .record_change(
                HistoryOf::Policy(id.clone()),
                Some(&policy),
                None,
                Some(1),
            )?;
            count(&mut txn, -1, -has_statement(&policy))?;
            match self.execute_counted(&txn).await {
                Ok(()) => return Ok(policy),
                Err(Error::PreconditionFailed {
                    resource: Resource::Policy,
                }) if attempts < 3 => attempts += 1,
                Err(Error::PreconditionFailed {
                    resource: Resource::Policy,
                }) => {
                    return Err(Error::retryable(
                        "the policy kept changing while it was being deleted",
                    ))
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A policy by id as the table holds it now: its PolicyRef, then the
    /// policy under the ref's name, both read consistently; `None` if that
    /// name holds no policy with this id.
    pub async fn policy_by_id_consistent(&self, id: &PolicyId) -> Result<Option<Policy>> {
        Ok(self.locate_policy(id).await?.map(|found| found.policy))
    }

    /// [`Store::policy_by_id_consistent`], with where it lives (what an
    /// update or a tenant's route needs).
    pub async fn locate_policy(&self, id: &PolicyId) -> Result<Option<Located>> {
        Ok(self.find_policy(id).await?.map(|found| Located {
            home: found.policy_ref.as_ref().and_then(|r| r.tenant_id),
            policy: found.policy,
        }))
    }

    async fn find_policy(&self, id: &PolicyId) -> Result<Option<Found>> {
        let policy_ref = self.get::<PolicyRef>(&keys::policy_ref(id), true).await?;
        if let Some(tenant) = policy_ref.as_ref().and_then(|r| r.tenant_id) {
            let set = self.tenant_policy_set(&tenant, true).await?;
            let policy = set.and_then(|s| s.by_id(id).cloned());
            return Ok(policy.map(|policy| Found { policy, policy_ref }));
        }
        // The policy under `name`, if it still has this id (not deleted and
        // re-created under the same name since).
        let named = |name: PolicyName| async move {
            let policy = self.get::<Policy>(&keys::policy(&name), true).await?;
            Ok::<_, Error>(policy.filter(|p| p.policy_id == *id))
        };
        let mut policy = match &policy_ref {
            Some(policy_ref) => named(policy_ref.name.clone()).await?,
            None => None,
        };
        if policy.is_none() {
            // GSI1 is eventually consistent: what it finds is read again.
            if let Some(indexed) = self.policy_by_id(id).await? {
                policy = named(indexed.name).await?;
            }
        }
        Ok(policy.map(|policy| Found { policy, policy_ref }))
    }

    /// The policy set's counts (read consistently, they are what the next
    /// policy write conditions on), or `None` in a table written before
    /// them.
    pub async fn policy_counts(&self, consistent: bool) -> Result<Option<PolicyCounts>> {
        self.get(&keys::policy_counts(), consistent).await
    }

    /// Sends a policy write; if the set's counts are missing (a table
    /// written before them), writes them and sends it again.
    async fn execute_counted(&self, txn: &Transaction) -> Result<()> {
        match txn.execute(self).await {
            Err(Error::PreconditionFailed {
                resource: Resource::PolicyCounts,
            }) => {
                self.count_policies().await?;
                match txn.execute(self).await {
                    // Counted, and gone again (an operator deleting them).
                    Err(Error::PreconditionFailed {
                        resource: Resource::PolicyCounts,
                    }) => Err(Error::retryable("the policy set's counts are missing")),
                    other => other,
                }
            }
            other => other,
        }
    }

    /// Writes the policy set's counts where there are none (one consistent
    /// read when they are there), from a consistent count of the policies.
    /// While they are missing no policy write commits (each requires them),
    /// so the count is exact; of two callers racing here one writes them
    /// and the other finds them written.
    pub async fn count_policies(&self) -> Result<()> {
        if self.policy_counts(true).await?.is_some() {
            return Ok(());
        }
        let all = self.all_policies().await?;
        let mut txn = self.transaction();
        txn.create(&PolicyCounts::of(&all, &now()), "policyCounts")?;
        match txn.execute_before_answer(self).await {
            Ok(()) | Err(Error::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
